#include "sim/simulator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sim/event_queue.h"
#include "sim/report.h"
#include "util/json_text.h"

namespace gpucast::sim {

int AssignWorkload(uint64_t seed, int64_t job_id, int n) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(job_id) + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<int>(z % static_cast<uint64_t>(n));
}

namespace {

constexpr double kEps = 1e-9;

// A uniform draw in [0, 1) determined by (seed, index, salt).
double SeededUniform(uint64_t seed, int64_t index, uint64_t salt) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + salt * 0xD1B54A32D192ED03ULL + static_cast<uint64_t>(index);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

enum class State { kPending, kQueued, kProfiling, kRunning, kDone, kNeverFits };

struct SimJob {
  State state = State::kPending;
  double remaining = 0;    // solo-seconds of work left as of last_update
  double rate = 0;         // current progress rate (solo-seconds per second)
  double last_update = 0;
  double run_alone_until = -1;  // profiling run end, or -1
  uint32_t version = 0;    // finish events: bumped at every rate change
  uint32_t placement = 0;  // observation and out-of-memory events: bumped at every placement
  int first_row = -1, num_rows = 0;  // open rows of placements (this placement)
  bool in_place = false;   // this profiling run stays on its GPUs when it ends
  bool discard = false;    // this profiling run's progress is discarded (profiling-pool)
  double saved_remaining = 0;  // discard: remaining when the run started
  bool restart_pending = false;  // its next start restarts from a checkpoint (SimConfig::restart_s)
};

using EventHeap = std::priority_queue<Event, std::vector<Event>, std::greater<Event>>;

class Engine : public ClusterView {
 public:
  Engine(const Trace& trace, const Cluster& cluster, const std::vector<WorkloadProfile>& w,
         const InterferenceModel& m, const SimConfig& c)
      : trace_(trace), w_(w), model_(m), cfg_(c) {
    gpus_.resize(cluster.gpus.size());
    gpu_rates_.resize(cluster.gpus.size());
    gpu_memo_.resize(cluster.gpus.size());
    gpu_util_.assign(cluster.gpus.size(), 0.0);
    true_mem_.assign(cluster.gpus.size(), 0.0);
    for (size_t g = 0; g < gpus_.size(); ++g) gpus_[g].mem_mib = cluster.gpus[g].mem_mib;
    // The physics of each GPU's type (its own fit where pairs were measured on
    // it, else the RTX 3090 fit: InterferenceModel::ForGpu).
    gpu_model_.resize(cluster.gpus.size());
    std::vector<std::string> types;
    for (size_t g = 0; g < cluster.gpus.size(); ++g) {
      auto it = std::find(types.begin(), types.end(), cluster.gpus[g].type);
      if (it == types.end()) {
        types.push_back(cluster.gpus[g].type);
        type_models_.push_back(m.ForGpu(cluster.gpus[g].type));
        it = types.end() - 1;
      }
      gpu_model_[g] = static_cast<int>(it - types.begin());
      work_capacity_ += type_models_[gpu_model_[g]].WorkCapacity();
    }
    res_.policy = c.policy;
    res_.trace = trace.name;
    res_.seed = c.seed;
    res_.predictions = c.predictions;
    res_.memory_predictions = c.memory_predictions;
    res_.arrivals = c.arrivals;
    res_.load_scale = c.load_scale;
    if (const PolicyRow* row = FindPolicy(c.policy)) res_.uses_predictions = row->needs_predictions;
    res_.num_gpus = static_cast<int>(cluster.gpus.size());
    res_.cluster = cluster.spec;
    res_.trace_bad_lines = trace.bad_lines;
    res_.trace_filtered = trace.filtered;
    if (c.policy == "profiling-pool")
      res_.pool_gpus = ProfilePoolSize(res_.num_gpus, c.options.profile_pool_fraction);
  }

  double now() const override { return now_; }
  const std::vector<GpuState>& gpus() const override { return gpus_; }
  const JobInfo& job(int j) const override { return info_[j]; }
  // A full round visits the queue in submit order until the policy stops it
  // (its backfill depth); then this instant's arrivals that it did not reach,
  // which a round of arrivals alone would have visited: a newcomer is
  // considered on arrival whether or not a completion or an observation
  // coincides with it (such a round used to stop before reaching it, and a
  // policy that observes running jobs, with a full round at every
  // observation, let newcomers wait that others backfilled at once).
  bool arrived_now(int j) const override { return std::binary_search(new_jobs_.begin(), new_jobs_.end(), j); }
  void VisitCandidates(const std::function<bool(int)>& visit) const override {
    if (all_queued_) {
      int stopped = -1;
      for (int j : queue_)
        if (!visit(j)) {
          stopped = j;
          break;
        }
      if (stopped < 0) return;
      for (int j : new_jobs_)
        if (j > stopped && queue_.count(j) && !visit(j)) return;
    } else {
      for (int j : new_jobs_)
        if (!visit(j)) return;
    }
  }
  const JobInfo& smallest_job() const override { return smallest_; }
  const InterferenceModel& model() const override { return model_; }

  Result<SimResult> Run(Policy& policy, bool observes) {
    observes_ = observes;
    RETURN_IF_ERROR(Init());
    size_t next_arrival = 0;
    const size_t n = trace_.jobs.size();
    int64_t next_progress = 0;
    while (true) {
      double t_arr = next_arrival < n ? trace_.jobs[next_arrival].submit_s : INFINITY;
      SkipStale();
      double t_ev = heap_.empty() ? INFINITY : heap_.top().t;
      double t_obs = obs_.empty() ? INFINITY : obs_.top().t;
      double t_oom = oom_.empty() ? INFINITY : oom_.top().t;
      double t = std::min({t_arr, t_ev, t_obs, t_oom});
      if (!std::isfinite(t)) break;
      AdvanceTo(t);
      if (!window_done_ && now_ >= t_window_end_) {
        Snapshot(&JobRecord::work_window_s);
        window_done_ = true;
      }
      if (!trace_window_done_ && now_ >= t_trace_end_) {
        Snapshot(&JobRecord::work_trace_window_s);
        trace_window_done_ = true;
      }
      new_jobs_.clear();
      bool freed = false, observed = false;
      while (!obs_.empty() && obs_.top().t <= now_ + kEps) {
        Event e = obs_.top();
        obs_.pop();
        observed |= Observe(e.job, e.version);
      }
      while (next_arrival < n && trace_.jobs[next_arrival].submit_s <= now_) {
        Arrive(static_cast<int>(next_arrival++));
        ++res_.events;
      }
      while (true) {
        SkipStale();
        if (heap_.empty() || heap_.top().t > now_ + kEps) break;
        Event e = heap_.top();
        heap_.pop();
        Complete(e.job);
        freed = true;
        ++res_.events;
      }
      while (!oom_.empty() && oom_.top().t <= now_ + kEps) {
        Event e = oom_.top();
        oom_.pop();
        freed |= OutOfMemory(e.job, e.version);
      }
      // Capacity freed: every queued job may fit now. Otherwise only the new
      // arrivals can (the cluster only got fuller since the last round).
      // An observation can show a GPU over-committed (or less loaded than
      // predicted), the end of a window measured in place a newcomer that
      // fits next to other jobs: a full round, migrations included.
      observed = observed || !measured_now_.empty();
      all_queued_ = freed || observed;
      if (observed || (freed ? !queue_.empty() : !new_jobs_.empty()))
        RETURN_IF_ERROR(Apply(policy.Schedule(*this)));
      // A newcomer may be moved in the round its window ended, never later.
      for (int j : measured_now_) info_[j].newly_measured = false;
      measured_now_.clear();
      Refresh();
      if (cfg_.progress && res_.events >= next_progress) {
        cfg_.progress(now_, done_, static_cast<int64_t>(n));
        next_progress = res_.events + 20000;
      }
      if (heap_.empty() && obs_.empty() && oom_.empty() && next_arrival >= n && !queue_.empty()) {
        // Idle cluster and the policy placed nothing: these jobs would wait forever.
        for (int j : queue_) NeverFits(j, "the policy placed nothing on an idle cluster");
        queue_.clear();
      }
    }
    return Finish();
  }

 private:
  Status Init() {
    const int nw = static_cast<int>(w_.size());
    const size_t n = trace_.jobs.size();
    if (gpus_.empty()) return Status::Error("cluster has no GPUs");
    if (!cfg_.workload_of_job.empty() && cfg_.workload_of_job.size() != n)
      return Status::Error("workload_of_job has " + std::to_string(cfg_.workload_of_job.size()) +
                           " entries for " + std::to_string(n) + " jobs");
    if (!(cfg_.checkpoint_s > 0)) return Status::Error("checkpoint interval must be positive");
    int64_t unmapped = 0;
    if (cfg_.workload_mix != "size-aware" && cfg_.workload_mix != "uniform")
      return Status::Error("workload mix '" + cfg_.workload_mix + "': want size-aware or uniform");
    if (!(cfg_.restart_s >= 0)) return Status::Error("restart cost must be >= 0 seconds");
    if (!(cfg_.recurring >= 0 && cfg_.recurring <= 1)) return Status::Error("recurring share must be in [0, 1]");
    res_.workload_mix = cfg_.workload_mix;
    res_.restart_s = cfg_.restart_s;
    res_.recurring = cfg_.recurring;
    res_.cap_rule = CapRuleName(cfg_.options.cap_by_capacity);
    res_.cap = EffectiveCap(cfg_.options, model_);
    res_.interval_z = cfg_.options.interval_z;
    res_.admit_by_physics = cfg_.options.admit_by_physics;
    res_.max_jobs_per_gpu = cfg_.options.max_jobs_per_gpu;
    std::vector<int> assigned = cfg_.workload_of_job.empty()
                                    ? AssignWorkloads(trace_, w_, cfg_.seed, &unmapped, cfg_.workload_mix == "size-aware")
                                    : cfg_.workload_of_job;
    res_.trace_unmapped = unmapped;
    double largest_gpu = 0;
    for (const GpuState& g : gpus_) largest_gpu = std::max(largest_gpu, g.mem_mib);
    jobs_.resize(n);
    heap_.Reset(static_cast<int>(n));
    info_.resize(n);
    res_.jobs.resize(n);
    double mae = 0, mem_mae = 0;
    int64_t mem_n = 0;
    smallest_ = {1, INFINITY, INFINITY, true, INFINITY};
    smallest_.gpu_request = INFINITY;
    for (size_t i = 0; i < n; ++i) {
      const TraceJob& tj = trace_.jobs[i];
      const int wl = assigned[i];
      if (wl < 0 || wl >= nw) return Status::Error("job " + std::to_string(tj.id) + ": bad workload index");
      const WorkloadProfile& wp = w_[wl];
      JobRecord& r = res_.jobs[i];
      r.id = tj.id;
      r.source_id = tj.source_id;
      r.submit_s = tj.submit_s;
      r.duration_s = tj.duration_s;
      r.num_gpus = tj.num_gpus;
      r.workload = wl;
      r.true_util = wp.true_util;
      r.predicted_util = wp.predicted_util;
      r.mem_mib = wp.gmem_mib;
      // The scheduler packs by the predicted high end (the truth when there is
      // no memory prediction); no more than the largest GPU holds.
      r.sched_mem_mib = std::min(wp.HasMemPrediction() ? wp.pred_mem_high_mib : wp.gmem_mib, largest_gpu);
      r.predicted_low = wp.pred_util_low;
      r.predicted_high = wp.pred_util_high;
      // A recurring job's graph ran before: the scheduler knows its utilization
      // (and memory) from that observation, within the instrument's noise.
      if (cfg_.recurring > 0 && res_.uses_predictions && wp.HasPrediction() &&
          SeededUniform(cfg_.seed, tj.id, 4) < cfg_.recurring) {
        const double sd = cfg_.measure_noise_pct;
        r.recurring = true;
        ++res_.jobs_recurring;
        r.predicted_util = std::clamp(wp.true_util + sd * SeededNormal(cfg_.seed, tj.id, 3), 0.0, 100.0);
        r.predicted_low = std::max(0.0, r.predicted_util - kPredictionIntervalZ * sd);  // its 80% interval
        r.predicted_high = std::min(100.0, r.predicted_util + kPredictionIntervalZ * sd);
        r.sched_mem_mib = std::min(wp.gmem_mib, largest_gpu);
      }
      JobInfo& info = info_[i];
      info.num_gpus = tj.num_gpus;
      info.mem_mib = r.sched_mem_mib;
      info.predicted_util = r.predicted_util;
      info.predicted_low = r.predicted_low;
      info.predicted_high = r.predicted_high;
      info.gpu_request = tj.gpu_request;
      jobs_[i].remaining = tj.duration_s;
      mae += std::fabs(r.predicted_util - wp.true_util);
      if (wp.HasMemPrediction()) {
        mem_mae += std::fabs((r.recurring ? wp.gmem_mib : wp.pred_mem_mib) - wp.gmem_mib);
        ++mem_n;
      }
      smallest_.mem_mib = std::min({smallest_.mem_mib, r.sched_mem_mib, r.mem_mib});
      smallest_.predicted_util = std::min(smallest_.predicted_util, r.predicted_util);
      smallest_.profiled_util = std::min(smallest_.profiled_util, wp.true_util);
      smallest_.gpu_request = std::min(smallest_.gpu_request, tj.gpu_request);
      // A job runs some day only if enough GPUs can hold its true memory when empty.
      int big_enough = 0;
      for (const GpuState& g : gpus_) big_enough += g.mem_mib >= r.mem_mib;
      if (big_enough < tj.num_gpus)
        NeverFits(static_cast<int>(i), "needs " + std::to_string(tj.num_gpus) + " GPUs with " +
                                           std::to_string(static_cast<int64_t>(r.mem_mib)) +
                                           " MiB; the cluster has " + std::to_string(big_enough));
    }
    res_.pred_mae = n ? mae / static_cast<double>(n) : 0;
    res_.mem_pred_mae = mem_n ? mem_mae / static_cast<double>(mem_n) : NAN;
    if (!trace_.jobs.empty()) now_ = trace_.jobs.front().submit_s;
    t0_ = now_;
    t_trace_end_ = trace_.jobs.empty() ? now_ : trace_.jobs.back().submit_s;
    auto busy_end = CapacityWindowEnd(res_.jobs, res_.num_gpus, t0_, t_trace_end_, work_capacity_);
    t_window_end_ = busy_end ? *busy_end : t_trace_end_;
    res_.bound_kind = busy_end ? "capacity" : "demand";
    return Status::Ok();
  }

  void SkipStale() {
    heap_.SkipStale([this](const Event& e) { return e.version != jobs_[e.job].version; });
  }

  // One reading of job j's utilization counter (kind 1: profiling window, 2:
  // observation while running): rate x true + N(0, noise), clamped to [0, 100].
  double Reading(int j, uint64_t kind, double rate) {
    const JobRecord& r = res_.jobs[j];
    double m = rate * r.true_util + cfg_.measure_noise_pct * SeededNormal(cfg_.seed, r.id, kind);
    return std::clamp(m, 0.0, 100.0);
  }

  void Learned(int j, double util) {
    res_.jobs[j].measured_util = util;
    // Keep smallest_ a lower bound of every utilization a policy may use.
    smallest_.profiled_util = std::min(smallest_.profiled_util, util);
  }

  bool Observe(int j, uint32_t placement) {
    if (jobs_[j].state != State::kRunning || info_[j].observed || jobs_[j].placement != placement) return false;
    const double rate = jobs_[j].rate;
    const double reading = Reading(j, 2, rate);
    // Its progress rate as its step counts show it (relative noise rate_noise).
    const double rate_seen =
        std::clamp(rate * (1.0 + cfg_.rate_noise * SeededNormal(cfg_.seed, res_.jobs[j].id, 5)), 0.01, 1.0);
    JobInfo& info = info_[j];
    const UtilBelief prior = info.profiled ? UtilBelief{info.profiled_util, cfg_.measure_noise_pct}
                                           : PredictionBelief(info.predicted_util, info.predicted_low,
                                                              info.predicted_high);
    const UtilBelief post = CombineObservation(prior, reading, cfg_.measure_noise_pct, rate_seen, cfg_.rate_noise);
    info.observed = true;
    info.observed_reading = reading;
    info.observed_rate = rate_seen;
    info.observed_util = post.mean;
    info.observed_sd = post.sd;
    res_.jobs[j].observed_reading = reading;
    Learned(j, post.mean);
    ++res_.jobs_observed;
    return true;
  }

  // Progress of every job as of now (a window end) into `field`.
  void Snapshot(double JobRecord::*field) {
    for (size_t j = 0; j < jobs_.size(); ++j) {
      const SimJob& s = jobs_[j];
      JobRecord& r = res_.jobs[j];
      if (s.state == State::kDone) {
        r.*field = r.duration_s;
      } else if (s.state == State::kRunning || s.state == State::kProfiling || s.state == State::kQueued) {
        double rem = s.discard ? s.saved_remaining : std::max(0.0, s.remaining - s.rate * (now_ - s.last_update));
        r.*field = std::max(0.0, r.duration_s - rem);
      }
    }
  }

  // Sets a running job's rate, keeping the useful-work rate sum current (a
  // discarded profiling run does no useful work).
  void SetRate(int j, double rate) {
    const JobRecord& r = res_.jobs[j];
    if (!jobs_[j].discard) useful_sum_ += (rate - jobs_[j].rate) * r.true_util / 100.0 * r.num_gpus;
    jobs_[j].rate = rate;
  }

  void AdvanceTo(double t) {
    if (t > now_) {
      res_.busy_gpu_s += busy_sum_ / 100.0 * (t - now_);
      res_.shared_gpu_s += static_cast<double>(shared_gpus_) * (t - now_);
      now_ = t;
    }
  }

  void NeverFits(int j, const std::string& why) {
    jobs_[j].state = State::kNeverFits;
    res_.jobs[j].status = "never_fits";
    res_.jobs[j].note = why;
    ++res_.jobs_never_fit;
  }

  void Arrive(int j) {
    if (jobs_[j].state == State::kNeverFits) return;
    jobs_[j].state = State::kQueued;
    queue_.insert(j);
    new_jobs_.push_back(j);
  }

  // Brings a running job's remaining work up to now at its current rate.
  void Settle(int j) {
    SimJob& s = jobs_[j];
    s.remaining = std::max(0.0, s.remaining - s.rate * (now_ - s.last_update));
    s.last_update = now_;
  }

  // Restart from the last checkpoint (every checkpoint_s of progress): the
  // progress since is lost. Returns the solo-seconds lost.
  double Rollback(int j) {
    SimJob& s = jobs_[j];
    if (s.discard) {  // a pool profiling run: nothing of it is kept anyway
      s.remaining = s.saved_remaining;
      return 0;
    }
    const double done = res_.jobs[j].duration_s - s.remaining;
    const double lost = done - std::floor(done / cfg_.checkpoint_s + 1e-12) * cfg_.checkpoint_s;
    const double l = std::clamp(lost, 0.0, done);
    s.remaining += l;
    return l;
  }

  void Leave(int j) {
    SimJob& sj = jobs_[j];
    for (int k = 0; k < sj.num_rows; ++k) res_.placements[static_cast<size_t>(sj.first_row + k)].end_s = now_;
    sj.num_rows = 0;
    for (int g : res_.jobs[j].gpus) {
      GpuState& gs = gpus_[g];
      auto it = std::find(gs.jobs.begin(), gs.jobs.end(), j);
      if (it != gs.jobs.end()) gs.jobs.erase(it);
      Resum(g);
      gs.exclusive = false;
      MarkDirty(g);
    }
  }

  // Out of the scheduler's hands: a job leaves its GPUs, back to the queue.
  void Requeue(int j) {
    SimJob& s = jobs_[j];
    Leave(j);
    s.version++;
    s.placement++;
    SetRate(j, 0);
    s.run_alone_until = -1;
    s.in_place = false;
    s.discard = false;
    s.state = State::kQueued;
    queue_.insert(j);
  }

  // The end of a profiling run: the job's counter was read over the window
  // (its utilization, and its memory). While sharing (profiling in place) the
  // reading is rate x utilization; the solo utilization is inferred from it
  // through the interference model, as the policy would.
  void Profiled(int j) {
    // Every profiling run is alone on its GPUs (rate 1): the reading is the measurement.
    const double rate = jobs_[j].rate > 0 ? jobs_[j].rate : 1.0;
    const double reading = Reading(j, 1, rate);
    info_[j].profiled = true;
    info_[j].profiled_util = std::min(100.0, reading / rate);
    Learned(j, info_[j].profiled_util);
    info_[j].mem_mib = res_.jobs[j].mem_mib;  // the run shows the job's memory too
  }

  void Complete(int j) {
    SimJob& s = jobs_[j];
    Settle(j);
    if (s.run_alone_until >= 0 && (s.remaining > kEps || s.discard)) {
      if (s.in_place) {
        // Stays on its GPUs, which others may join from now on.
        Profiled(j);
        for (int k = 0; k < s.num_rows; ++k) res_.placements[static_cast<size_t>(s.first_row + k)].end_s = now_;
        s.first_row = static_cast<int>(res_.placements.size());
        // Measured: the policy may move it this round (to join other jobs).
        info_[j].newly_measured = true;
        measured_now_.push_back(j);
        for (int g : res_.jobs[j].gpus) {
          GpuState& gs = gpus_[g];
          gs.exclusive = info_[j].alone;  // a job that crashed out of memory keeps running alone
          Resum(g);
          res_.placements.push_back({j, g, now_, -1, false, false});
          MarkDirty(g);
        }
        s.run_alone_until = -1;
        s.in_place = false;
        s.state = State::kRunning;
        s.version++;
        return;
      }
      // Back to the queue, now measured (profiling-exclusive: it restarts from
      // the checkpoint taken at the window's end; a pool run starts afresh).
      Profiled(j);
      const bool discarded = s.discard;
      if (s.discard) {
        SetRate(j, 0);
        s.remaining = s.saved_remaining;
      }
      Requeue(j);
      s.restart_pending = !discarded;
      return;
    }
    Leave(j);
    s.version++;
    s.placement++;
    SetRate(j, 0);
    s.run_alone_until = -1;
    s.state = State::kDone;
    if (res_.jobs[j].run_start_s < 0) res_.jobs[j].run_start_s = res_.jobs[j].start_s;  // done within profiling
    s.remaining = 0;
    res_.jobs[j].end_s = now_;
    res_.jobs[j].status = "done";
    ++done_;
  }

  // The crash of a job that over-committed a GPU's memory (if it still does).
  bool OutOfMemory(int j, uint32_t placement) {
    SimJob& s = jobs_[j];
    if (s.placement != placement || (s.state != State::kRunning && s.state != State::kProfiling)) return false;
    bool over = false;
    for (int g : res_.jobs[j].gpus) over = over || true_mem_[g] > gpus_[g].mem_mib + kEps;
    if (!over) return false;
    // Crashing alone on a GPU tells the scheduler the job needs more than it holds.
    double bigger = 0;
    for (int g : res_.jobs[j].gpus)
      if (true_mem_[g] > gpus_[g].mem_mib + kEps && gpus_[g].jobs.size() == 1) bigger = std::max(bigger, gpus_[g].mem_mib);
    Settle(j);
    const double lost = Rollback(j);
    SetRate(j, 0);
    s.discard = false;
    ++res_.oom_events;
    res_.oom_lost_gpu_s += lost * res_.jobs[j].num_gpus;
    ++res_.jobs[j].ooms;
    info_[j].alone = true;  // the scheduler no longer shares its GPUs
    Requeue(j);
    s.restart_pending = true;
    if (bigger > 0) info_[j].mem_mib = std::max(info_[j].mem_mib, std::nextafter(bigger, INFINITY));
    return true;
  }

  Status Apply(const std::vector<Placement>& ps) {
    for (const Placement& p : ps) {
      const std::string who = "policy '" + cfg_.policy + "': job " +
                              (p.job >= 0 && p.job < static_cast<int>(jobs_.size())
                                   ? std::to_string(res_.jobs[p.job].id) : std::to_string(p.job));
      if (p.job < 0 || p.job >= static_cast<int>(jobs_.size()))
        return Status::Error(who + ": no such job");
      if (p.migrate) {
        if (jobs_[p.job].state != State::kRunning) return Status::Error(who + ": migrated but not running");
        if (p.exclusive || p.run_alone_s > 0) return Status::Error(who + ": a migration is a shared run");
        // Leave, restart from the last checkpoint; then placed below.
        Settle(p.job);
        const double lost = Rollback(p.job);
        res_.lost_progress_s += lost * info_[p.job].num_gpus;
        ++res_.migrations;
        ++res_.jobs[p.job].migrations;
        ++info_[p.job].migrations;
        Requeue(p.job);  // validated and placed like a queued job
        jobs_[p.job].restart_pending = true;
      }
      if (jobs_[p.job].state != State::kQueued)
        return Status::Error(who + ": not queued");
      if ((p.profile_in_place || p.profile_discard) && p.run_alone_s <= 0)
        return Status::Error(who + ": profile_in_place/profile_discard need a profiling run");
      const int n = static_cast<int>(p.gpus.size());
      if (p.profile_discard ? (n < 1 || n > info_[p.job].num_gpus) : n != info_[p.job].num_gpus)
        return Status::Error(who + ": placed on " + std::to_string(p.gpus.size()) + " GPUs, needs " +
                             std::to_string(info_[p.job].num_gpus));
      std::vector<int> sorted = p.gpus;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
        return Status::Error(who + ": the same GPU twice");
      for (int g : p.gpus) {
        if (g < 0 || g >= static_cast<int>(gpus_.size())) return Status::Error(who + ": no GPU " + std::to_string(g));
        const GpuState& gs = gpus_[g];
        if (gs.exclusive) return Status::Error(who + ": GPU " + std::to_string(g) + " is held exclusively");
        if (p.exclusive && !gs.jobs.empty()) return Status::Error(who + ": exclusive on busy GPU " + std::to_string(g));
        const int limit = cfg_.options.max_jobs_per_gpu;
        if (limit > 0 && static_cast<int>(gs.jobs.size()) >= limit)
          return Status::Error(who + ": GPU " + std::to_string(g) + " already runs " + std::to_string(gs.jobs.size()) +
                               " jobs, the most max_jobs_per_gpu allows");
        if (gs.mem_used + info_[p.job].mem_mib > gs.mem_mib + kEps)
          return Status::Error(who + ": memory does not fit on GPU " + std::to_string(g));
      }
      if (p.run_alone_s > 0 && !p.exclusive && !p.profile_in_place)
        return Status::Error(who + ": a profiling run must be exclusive (or in place)");
      int j = p.job;
      SimJob& s = jobs_[j];
      queue_.erase(j);
      if (s.restart_pending && !p.profile_discard) {
        // Restarting from a checkpoint costs restart_s before it progresses again.
        s.remaining += cfg_.restart_s;
        res_.restart_gpu_s += cfg_.restart_s * info_[j].num_gpus;
        // Within the window (the snapshot at its end was taken before this round).
        if (now_ < t_window_end_)
          res_.restart_work_gpu_s += cfg_.restart_s * res_.jobs[j].true_util / 100.0 * info_[j].num_gpus;
        ++res_.restarts;
        s.restart_pending = false;
      }
      s.state = p.run_alone_s > 0 ? State::kProfiling : State::kRunning;
      s.last_update = now_;
      s.placement++;
      s.in_place = p.profile_in_place;
      // A pool run of a job that would finish within it (on all its GPUs) is its real run.
      s.discard = p.profile_discard && (n < info_[j].num_gpus || s.remaining > p.run_alone_s);
      s.saved_remaining = s.remaining;
      if (res_.jobs[j].start_s < 0) res_.jobs[j].start_s = now_;
      const bool real_run = p.run_alone_s <= 0 || p.profile_in_place;
      if (real_run && res_.jobs[j].run_start_s < 0) res_.jobs[j].run_start_s = now_;
      if (observes_ && !info_[j].observed && p.run_alone_s <= 0)
        obs_.push({now_ + cfg_.observe_after_s, order_++, j, s.placement});
      s.first_row = static_cast<int>(res_.placements.size());
      s.num_rows = n;
      for (int g : p.gpus) res_.placements.push_back({j, g, now_, -1, p.run_alone_s > 0, s.discard});
      if (p.run_alone_s > 0) {
        double run = s.discard ? p.run_alone_s : std::min(p.run_alone_s, s.remaining);
        s.run_alone_until = now_ + run;
        res_.profiling_gpu_s += run * n;
      }
      res_.jobs[j].gpus = p.gpus;
      bool over = false;
      for (int g : p.gpus) {
        GpuState& gs = gpus_[g];
        gs.jobs.push_back(j);
        Resum(g);
        gs.exclusive = p.exclusive;
        over = over || true_mem_[g] > gs.mem_mib + kEps;
        MarkDirty(g);
      }
      // The newest job on an over-committed GPU runs out of memory once its
      // memory has grown (OutOfMemory checks again then).
      if (over) oom_.push({now_ + cfg_.oom_after_s, order_++, j, s.placement});
      Touch(j);
    }
    return Status::Ok();
  }

  // Job j's rate must be recomputed at the next Refresh (each job listed once).
  void Touch(int j) {
    if (static_cast<size_t>(j) >= touched_flag_.size()) touched_flag_.resize(static_cast<size_t>(j) + 1, 0);
    if (!touched_flag_[j]) {
      touched_flag_[j] = 1;
      touched_.push_back(j);
    }
  }

  // A GPU's sums (memory, predicted and profiled utilization, true memory),
  // summed afresh over its residents in their order whenever they change: a
  // running total (+= on arrival, -= on departure) drifts by rounding, and a
  // drifted sum breaks best fit's ties (equal loads, lowest id first) by
  // rounding noise; summed afresh, two policies that see equal loads (the
  // policy's own sum over the same residents) choose the same GPU.
  void Resum(int g) {
    GpuState& gs = gpus_[g];
    gs.mem_used = gs.pred_sum = gs.known_sum = true_mem_[g] = 0;
    for (int r : gs.jobs) {
      gs.mem_used += info_[r].mem_mib;
      gs.pred_sum += info_[r].predicted_util;
      gs.known_sum += info_[r].profiled ? info_[r].profiled_util : 100.0;
      true_mem_[g] += res_.jobs[r].mem_mib;
    }
  }

  void MarkDirty(int g) {
    if (dirty_flag_.empty()) dirty_flag_.assign(gpus_.size(), 0);
    if (!dirty_flag_[g]) {
      dirty_flag_[g] = 1;
      dirty_.push_back(g);
    }
  }

  // The rate job j could get on GPU h (its free rate there: not capped by
  // its other GPUs); 1 when it is not resident there.
  double FreeRateOn(int j, int h) const {
    if (gpu_seen_.empty()) return 1.0;
    const std::vector<int>& seen = gpu_seen_[h];  // parallel to gpu_free_[h]
    for (size_t i = 0; i < seen.size(); ++i)
      if (seen[i] == j) return gpu_free_[h][i];
    return 1.0;
  }

  // The physics of one GPU: every resident's rate, a gang job capped at the
  // least free rate of its other GPUs (it waits for its slowest GPU and yields
  // the rest of its share: InterferenceModel::RatesCapped). Returns whether a
  // gang job's free rate here changed (its other GPUs must be recomputed).
  bool ComputeGpu(int g) {
    const GpuState& gs = gpus_[g];
    const int k = static_cast<int>(gs.jobs.size());
    u_.resize(k);
    caps_.assign(k, 1.0);
    gpu_rates_[g].resize(k);
    bool gang = false;
    for (int i = 0; i < k; ++i) {
      const int j = gs.jobs[i];
      u_[i] = res_.jobs[j].true_util;
      if (res_.jobs[j].num_gpus > 1) {
        gang = true;
        for (int h : res_.jobs[j].gpus)
          if (h != g) caps_[i] = std::min(caps_[i], FreeRateOn(j, h));
      }
    }
    const InterferenceModel& m = type_models_[gpu_model_[g]];
    double util = 0;
    std::vector<double>& free = gpu_free_[g];
    old_free_.assign(free.begin(), free.end());
    free.resize(k);
    if (gang) {
      // Free rates: what each job gets here without its own cap (the share of
      // the uncapped ones: for a capped job an upper bound, so its other GPUs
      // assume it uses at least what it does; the device is never over-committed).
      // Remembered per GPU: the same residents and caps give the same rates.
      gpu_memo_[g].RatesCapped(m, u_.data(), caps_.data(), k, gpu_rates_[g].data(), &util, free.data());
    } else {
      m.Rates(u_.data(), k, gpu_rates_[g].data(), &util);
      for (int i = 0; i < k; ++i) free[i] = gpu_rates_[g][i];
    }
    const bool was_shared = gpu_shared_[g];
    gpu_shared_[g] = k >= 2;
    shared_gpus_ += static_cast<int>(k >= 2) - static_cast<int>(was_shared);
    busy_sum_ += util - gpu_util_[g];
    gpu_util_[g] = util;
    for (int j : gs.jobs) Touch(j);
    // A gang job new here, or whose free rate here changed, caps its other GPUs anew.
    std::vector<int>& seen = gpu_seen_[g];
    bool changed = false;
    for (int i = 0; i < k && !changed; ++i) {
      const int j = gs.jobs[i];
      if (res_.jobs[j].num_gpus <= 1) continue;
      auto it = std::find(seen.begin(), seen.end(), j);
      changed = it == seen.end() || std::fabs(free[i] - old_free_[static_cast<size_t>(it - seen.begin())]) > 1e-9;
    }
    seen = gs.jobs;
    return changed;
  }

  // Recomputes the physics of dirty GPUs and the rates (and finish events) of
  // every job on them. A gang job's rate on one GPU caps it on its others
  // (ComputeGpu), so a change on one GPU of a gang re-evaluates its other GPUs,
  // for at most kGangPasses passes; GPUs left dirty then are recomputed at the
  // next event (every rate used is at most what its GPU's physics allowed, so
  // the device is never over-committed in between).
  void Refresh() {
    constexpr int kGangPasses = 4;
    if (gpu_shared_.empty()) gpu_shared_.assign(gpus_.size(), 0);
    if (gpu_free_.empty()) gpu_free_.resize(gpus_.size()), gpu_seen_.resize(gpus_.size());
    for (int pass = 0; pass < kGangPasses && !dirty_.empty(); ++pass) {
      std::sort(dirty_.begin(), dirty_.end());
      std::vector<int> now;
      now.swap(dirty_);
      for (int g : now) dirty_flag_[g] = 0;
      for (int g : now) {
        if (!ComputeGpu(g)) continue;
        for (int j : gpus_[g].jobs)
          if (res_.jobs[j].num_gpus > 1)
            for (int h : res_.jobs[j].gpus)
              if (h != g) MarkDirty(h);
      }
    }
    std::sort(touched_.begin(), touched_.end());  // distinct already (Touch)
    for (int j : touched_) {
      SimJob& s = jobs_[j];
      if (s.state != State::kRunning && s.state != State::kProfiling) continue;
      // A gang job advances at its slowest GPU's rate.
      per_gpu_.clear();
      for (int g : res_.jobs[j].gpus) {
        const GpuState& gs = gpus_[g];
        for (size_t i = 0; i < gs.jobs.size(); ++i)
          if (gs.jobs[i] == j) per_gpu_.push_back(gpu_rates_[g][i]);
      }
      const double rate = GangRate(per_gpu_);
      Settle(j);
      SetRate(j, rate);
      s.version++;
      double finish = s.discard ? INFINITY : now_ + s.remaining / rate;
      if (s.run_alone_until >= 0) finish = std::min(finish, s.run_alone_until);
      heap_.push({finish, order_++, j, s.version});
    }
    for (int j : touched_) touched_flag_[j] = 0;
    touched_.clear();
    // Busy sum drifts by float error; re-sum occasionally.
    if (++refreshes_ % 4096 == 0) {
      busy_sum_ = 0;
      for (double u : gpu_util_) busy_sum_ += u;
    }
    {
      const double G = static_cast<double>(gpus_.size());
      UtilPoint pt{now_ - t0_, busy_sum_ / G, 100.0 * useful_sum_ / G, static_cast<double>(queue_.size())};
      if (series_.empty() || series_.back().util_pct != pt.util_pct || series_.back().useful_pct != pt.useful_pct ||
          series_.back().queued != pt.queued) {
        if (!series_.empty() && series_.back().t_s == pt.t_s) series_.back() = pt;
        else series_.push_back(pt);
      }
    }
  }

  Result<SimResult> Finish() {
    if (!window_done_) Snapshot(&JobRecord::work_window_s);
    if (!trace_window_done_) Snapshot(&JobRecord::work_trace_window_s);
    double first_submit = t0_, last_end = t0_;
    std::vector<double> jct;
    double queue = 0, slow = 0, run_slow = 0, work = 0, useful = 0, useful_trace = 0, demand = 0;
    for (JobRecord& r : res_.jobs) {
      useful += r.true_util / 100.0 * r.num_gpus * r.work_window_s;
      useful_trace += r.true_util / 100.0 * r.num_gpus * r.work_trace_window_s;
      demand += r.duration_s * r.num_gpus;
      if (r.status != "done") continue;
      last_end = std::max(last_end, r.end_s);
      double c = r.end_s - r.submit_s;
      jct.push_back(c);
      queue += r.run_start_s - r.submit_s;
      slow += c / r.duration_s;
      run_slow += (r.end_s - r.run_start_s) / r.duration_s;
      work += r.true_util / 100.0 * r.duration_s * r.num_gpus;
    }
    res_.window_s = t_window_end_ - t0_;
    res_.trace_window_s = t_trace_end_ - t0_;
    if (res_.window_s > 0) {
      res_.useful_work_utilization = 100.0 * useful / (static_cast<double>(res_.num_gpus) * res_.window_s);
      res_.restart_work_utilization = 100.0 * res_.restart_work_gpu_s / (static_cast<double>(res_.num_gpus) * res_.window_s);
      res_.ideal_work_utilization = IdealWorkUtilization(res_.jobs, res_.num_gpus, t0_, t_window_end_, work_capacity_);
    }
    if (res_.trace_window_s > 0) {
      const double cap = static_cast<double>(res_.num_gpus) * res_.trace_window_s;
      res_.useful_work_trace_window = 100.0 * useful_trace / cap;
      res_.load_factor = demand / cap;
      res_.ideal_work_trace_window = IdealWorkUtilization(res_.jobs, res_.num_gpus, t0_, t_trace_end_, work_capacity_);
    }
    res_.jobs_total = static_cast<int64_t>(res_.jobs.size());
    res_.jobs_done = static_cast<int64_t>(jct.size());
    res_.makespan_s = last_end - first_submit;
    if (res_.makespan_s > 0) {
      res_.cluster_utilization = 100.0 * res_.busy_gpu_s / (res_.num_gpus * res_.makespan_s);
      res_.work_utilization = 100.0 * work / (res_.num_gpus * res_.makespan_s);
    }
    if (!jct.empty()) {
      double n = static_cast<double>(jct.size());
      double sum = 0;
      for (double c : jct) sum += c;
      res_.jct_mean_s = sum / n;
      res_.queue_mean_s = queue / n;
      res_.mean_slowdown = slow / n;
      res_.mean_run_slowdown = run_slow / n;
      std::sort(jct.begin(), jct.end());
      auto pct = [&](double p) {  // nearest rank
        size_t k = static_cast<size_t>(std::ceil(p / 100.0 * n));
        return jct[std::min(jct.size() - 1, k == 0 ? 0 : k - 1)];
      };
      res_.jct_p50_s = pct(50);
      res_.jct_p95_s = pct(95);
      res_.jct_p99_s = pct(99);
    }
    series_.push_back({res_.makespan_s, 0.0, 0.0, 0.0});
    res_.series = std::move(series_);
    return std::move(res_);
  }

  const Trace& trace_;
  const std::vector<WorkloadProfile>& w_;
  const InterferenceModel& model_;
  const SimConfig& cfg_;
  std::vector<GpuState> gpus_;
  std::vector<std::vector<double>> gpu_rates_;  // per GPU, parallel to GpuState::jobs: each job's rate there
  std::vector<std::vector<double>> gpu_free_;   // the same, without the job's cap from its other GPUs
  std::vector<std::vector<int>> gpu_seen_;      // the residents of each GPU's last computation
  std::vector<double> u_, caps_, old_free_;
  std::vector<double> gpu_util_;
  std::vector<double> true_mem_;  // per GPU: sum of its residents' true memory, MiB
  std::vector<InterferenceModel> type_models_;  // the physics of each GPU type of the cluster
  std::vector<int> gpu_model_;                  // per GPU: index into type_models_
  std::vector<RatesMemo> gpu_memo_;             // per GPU: its last capped evaluation (ComputeGpu)
  std::vector<double> per_gpu_;
  std::vector<char> gpu_shared_, dirty_flag_;
  std::vector<int> dirty_, touched_;
  std::vector<char> touched_flag_;  // per job: listed in touched_
  std::vector<SimJob> jobs_;
  std::vector<JobInfo> info_;
  std::set<int> queue_;  // job indices = submit order
  std::vector<int> new_jobs_;
  std::vector<int> measured_now_;  // profiling in place: windows ended at this event time
  bool all_queued_ = false;
  JobInfo smallest_;
  FinishQueue heap_;  // completions and profiling-run ends (one per job, as a lazy heap behaves)
  EventHeap obs_;   // observations (version = placement)
  EventHeap oom_;   // out-of-memory crashes (version = placement)
  int64_t order_ = 0, done_ = 0, refreshes_ = 0;
  int shared_gpus_ = 0;
  double work_capacity_ = 0;  // sum over GPUs of their physics' WorkCapacity
  double now_ = 0, t0_ = 0, busy_sum_ = 0, useful_sum_ = 0, t_window_end_ = 0, t_trace_end_ = 0;
  bool observes_ = false, window_done_ = false, trace_window_done_ = false;
  std::vector<UtilPoint> series_;
  SimResult res_;
};

}  // namespace

Result<SimResult> Simulate(const Trace& trace, const Cluster& cluster,
                           const std::vector<WorkloadProfile>& workloads,
                           const InterferenceModel& model, const SimConfig& config) {
  const PolicyRow* row = FindPolicy(config.policy);
  if (!row) {
    std::string names;
    for (const PolicyRow& r : Policies()) names += std::string(names.empty() ? "" : ", ") + r.name;
    return Status::Error("unknown policy '" + config.policy + "': want one of " + names);
  }
  if (workloads.empty()) return Status::Error("no workloads");
  if (config.policy == "profiling-pool" && cluster.gpus.size() < 2)
    return Status::Error("policy 'profiling-pool' needs at least 2 GPUs (a profiling pool and the rest)");
  if (row->needs_predictions)
    for (const WorkloadProfile& w : workloads)
      if (!w.HasPrediction())
        return Status::Error("policy '" + config.policy + "' needs predicted utilization, and workload " +
                             w.Name() + " has none");
  auto policy = row->make(config.options);
  if (row->needs_predictions) {
    Engine e(trace, cluster, workloads, model, config);
    return e.Run(*policy, row->observes_running);
  }
  // A policy that decides without predictions sees none, whatever the caller
  // loaded for other policies of the same command: no predicted utilization,
  // and the measured memory (the baselines are given the truth there). Its
  // result is then the same alone or in any list of policies.
  std::vector<WorkloadProfile> blind = workloads;
  for (WorkloadProfile& x : blind) {
    x.predicted_util = NAN;
    x.pred_util_low = x.pred_util_high = NAN;
    x.pred_mem_mib = x.pred_mem_high_mib = NAN;
  }
  SimConfig c = config;
  c.memory_predictions = "none (measured memory)";
  Engine e(trace, cluster, blind, model, c);
  return e.Run(*policy, row->observes_running);
}

bool DataParallelWorkload(const WorkloadProfile& w) {
  if (w.dataset == "CIFAR-10") return w.model == "EfficientNet" || w.model == "MobileNetV2" || w.model == "VGG";
  return (w.model == "ResNet50" && w.dataset == "ImageNet") || (w.model == "BERT" && w.dataset == "SQuAD") ||
         (w.model == "NeuMF" && w.dataset == "MovieLens") || (w.model == "LSTM" && w.dataset == "Wikitext2");
}

std::vector<int> AssignWorkloads(const Trace& t, const std::vector<WorkloadProfile>& w, uint64_t seed,
                                 int64_t* unmapped, bool size_aware) {
  const int n = static_cast<int>(w.size());
  std::vector<int> parallel;
  for (int i = 0; i < n; ++i)
    if (DataParallelWorkload(w[static_cast<size_t>(i)])) parallel.push_back(i);
  std::map<std::string, int> cache;  // job type -> row (or -1)
  std::vector<int> out;
  out.reserve(t.jobs.size());
  for (const TraceJob& j : t.jobs) {
    int row = -1;
    if (!j.job_type.empty()) {
      auto it = cache.find(j.job_type);
      if (it == cache.end()) it = cache.emplace(j.job_type, MapGavelJobType(j.job_type, w)).first;
      row = it->second;
      if (row < 0 && unmapped) ++*unmapped;
    }
    if (row < 0)
      row = size_aware && j.num_gpus > 1 && !parallel.empty()
                ? parallel[static_cast<size_t>(AssignWorkload(seed, j.id, static_cast<int>(parallel.size())))]
                : AssignWorkload(seed, j.id, n);
    out.push_back(row);
  }
  return out;
}

std::optional<double> CapacityWindowEnd(const std::vector<JobRecord>& jobs, int num_gpus, double t0, double t_end,
                                        double capacity) {
  const double W = t_end - t0, G = capacity > 0 ? capacity : num_gpus;
  if (W <= 0 || num_gpus <= 0) return std::nullopt;
  // Breakpoints of A: (tau, slope change, is a submit). B(T) = A(T) - G T -
  // min_{tau <= T} (A(tau) - G tau): the minimum of a piecewise linear
  // function is at a breakpoint, so a sweep keeps it.
  struct Bp {
    double tau, dslope;
    bool submit;
  };
  std::vector<Bp> bps;
  for (const JobRecord& j : jobs) {
    const double s = j.submit_s - t0;
    if (s > W) continue;
    bps.push_back({s, 0.0, true});
    if (j.num_gpus > num_gpus || j.status == "never_fits") continue;
    const double w = j.true_util / 100.0 * j.num_gpus;
    if (w <= 0) continue;
    bps.push_back({s, w, false});
    if (s + j.duration_s < W) bps.push_back({s + j.duration_s, -w, false});
  }
  std::sort(bps.begin(), bps.end(), [](const Bp& a, const Bp& b) { return a.tau < b.tau; });
  const double tol = 1e-9 * G * W + 1e-6;
  double a = 0, slope = 0, tau = 0, m = 0;  // m = min (A - G tau) so far (0 at tau = 0)
  std::optional<double> last;
  for (const Bp& b : bps) {
    a += slope * (b.tau - tau);
    tau = b.tau;
    m = std::min(m, a - G * tau);
    if (b.submit && tau > 0 && a - G * tau - m > tol) last = t0 + tau;
    slope += b.dslope;
  }
  return last;
}

double IdealWorkUtilization(const std::vector<JobRecord>& jobs, int num_gpus, double t0, double t_end,
                            double capacity) {
  const double W = t_end - t0, G = capacity > 0 ? capacity : num_gpus;
  if (W <= 0 || num_gpus <= 0) return 0;
  // f(tau) = A(tau) + G (W - tau) is piecewise linear in tau with breakpoints at
  // each job's submit and submit + duration: its minimum over [0, W] is at a
  // breakpoint or an end. Sweep the breakpoints in order.
  std::vector<std::pair<double, double>> slope_changes;  // (tau, d slope of A)
  for (const JobRecord& j : jobs) {
    if (j.num_gpus > num_gpus || j.status == "never_fits") continue;
    double w = j.true_util / 100.0 * j.num_gpus;
    double s = j.submit_s - t0;
    if (s >= W || w <= 0) continue;
    slope_changes.push_back({s, w});
    if (s + j.duration_s < W) slope_changes.push_back({s + j.duration_s, -w});
  }
  std::sort(slope_changes.begin(), slope_changes.end());
  double best = G * W;  // tau = 0
  double a = 0, slope = 0, tau = 0;
  for (size_t i = 0; i <= slope_changes.size(); ++i) {
    double next = i < slope_changes.size() ? slope_changes[i].first : W;
    a += slope * (next - tau);
    tau = next;
    best = std::min(best, a + G * (W - tau));
    if (i < slope_changes.size()) slope += slope_changes[i].second;
  }
  return 100.0 * best / (static_cast<double>(num_gpus) * W);
}

std::string SummaryJson(const SimResult& r) {
  nlohmann::ordered_json j;
  j["policy"] = r.policy;
  j["trace"] = r.trace;
  j["seed"] = r.seed;
  j["predictions"] = r.uses_predictions ? r.predictions : std::string("unused");
  j["cluster"] = r.cluster;
  j["num_gpus"] = r.num_gpus;
  j["useful_work_utilization"] = r.useful_work_utilization;
  j["ideal_work_utilization"] = r.ideal_work_utilization;
  j["bound_kind"] = r.bound_kind;
  j["window_start_s"] = 0.0;
  j["window_end_s"] = r.window_s;
  j["load_scale"] = r.load_scale;
  j["arrivals"] = r.arrivals;
  j["load_factor"] = r.load_factor;
  j["window_s"] = r.window_s;
  j["trace_window_s"] = r.trace_window_s;
  j["useful_work_trace_window"] = r.useful_work_trace_window;
  j["ideal_work_trace_window"] = r.ideal_work_trace_window;
  j["cluster_utilization"] = r.cluster_utilization;
  j["work_utilization"] = r.work_utilization;
  j["jct_mean_s"] = r.jct_mean_s;
  j["jct_p50_s"] = r.jct_p50_s;
  j["jct_p95_s"] = r.jct_p95_s;
  j["jct_p99_s"] = r.jct_p99_s;
  j["queue_mean_s"] = r.queue_mean_s;
  j["makespan_s"] = r.makespan_s;
  j["mean_slowdown"] = r.mean_slowdown;
  j["mean_run_slowdown"] = r.mean_run_slowdown;
  j["profiling_gpu_s"] = r.profiling_gpu_s;
  j["busy_gpu_s"] = r.busy_gpu_s;
  j["shared_gpu_s"] = r.shared_gpu_s;
  j["migrations"] = r.migrations;
  j["lost_progress_s"] = r.lost_progress_s;
  j["oom_events"] = r.oom_events;
  j["oom_lost_gpu_h"] = r.oom_lost_gpu_s / 3600.0;
  j["memory_predictions"] = r.memory_predictions;
  j["memory_prediction_mae_mib"] =
      std::isnan(r.mem_pred_mae) ? nlohmann::ordered_json() : nlohmann::ordered_json(r.mem_pred_mae);
  j["pool_gpus"] = r.pool_gpus;
  j["jobs_observed"] = r.jobs_observed;
  j["jobs_total"] = r.jobs_total;
  j["jobs_done"] = r.jobs_done;
  j["jobs_never_fit"] = r.jobs_never_fit;
  j["trace_bad_lines"] = r.trace_bad_lines;
  j["trace_filtered"] = r.trace_filtered;
  j["trace_unmapped"] = r.trace_unmapped;
  j["prediction_mae"] = std::isnan(r.pred_mae) || !r.uses_predictions ? nlohmann::ordered_json()
                                                                     : nlohmann::ordered_json(r.pred_mae);
  j["events"] = r.events;
  j["workload_mix"] = r.workload_mix;
  j["restart_s"] = r.restart_s;
  j["restarts"] = r.restarts;
  j["restart_gpu_h"] = r.restart_gpu_s / 3600.0;
  j["restart_work_utilization"] = r.restart_work_utilization;
  j["recurring"] = r.recurring;
  j["jobs_recurring"] = r.jobs_recurring;
  j["cap_rule"] = r.cap_rule;
  j["cap"] = r.cap;
  j["max_jobs_per_gpu"] = r.max_jobs_per_gpu;
  if (r.interval_z > 0) j["interval_z"] = r.interval_z;
  if (r.admit_by_physics) j["admit_by_physics"] = true;
  return JsonText(j, 2) + "\n";
}

namespace {
// "%.6g" and "%.3f" as printf writes them: std::to_chars with a precision is
// specified as printf's conversion in the C locale (the same characters), and
// is several times faster than glibc's printf on the outputs' millions of numbers.
std::string Num(double v) {
  if (std::isnan(v)) return "";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  return std::string(buf, r.ptr);
}
std::string Fixed(double v) {
  char buf[400];  // %.3f of the largest double: 309 digits and the decimals
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 3);
  return std::string(buf, r.ptr);
}
}  // namespace

Status WriteResult(const SimResult& r, const std::vector<WorkloadProfile>& workloads,
                   const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error(dir + ": cannot create directory: " + ec.message());
  {
    std::ofstream f(dir + "/summary.json");
    if (!f) return Status::Error(dir + "/summary.json: cannot write");
    f << SummaryJson(r);
  }
  {
    std::ofstream f(dir + "/jobs.csv");
    if (!f) return Status::Error(dir + "/jobs.csv: cannot write");
    // The first eleven columns are the original ones; later ones were appended.
    f << "job_id,submit_s,start_s,end_s,duration_s,num_gpus,workload,true_util,predicted_util,gpus,status,"
         "run_start_s,work_in_window_s,measured_util,migrations,mem_mib,sched_mem_mib,ooms,source_job,"
         "observed_reading,recurring,predicted_low,predicted_high\n";
    for (const JobRecord& j : r.jobs) {
      f << j.id << ',' << Fixed(j.submit_s) << ',' << (j.start_s >= 0 ? Fixed(j.start_s) : "") << ','
        << (j.end_s >= 0 ? Fixed(j.end_s) : "") << ',' << Fixed(j.duration_s) << ',' << j.num_gpus << ','
        << workloads[j.workload].Name() << ',' << Num(j.true_util) << ',' << Num(j.predicted_util) << ',';
      for (size_t i = 0; i < j.gpus.size(); ++i) f << (i ? ";" : "") << j.gpus[i];
      f << ',' << j.status << ',' << (j.run_start_s >= 0 ? Fixed(j.run_start_s) : "") << ','
        << Fixed(j.work_window_s) << ',' << Num(j.measured_util) << ',' << j.migrations << ',' << Num(j.mem_mib)
        << ',' << Num(j.sched_mem_mib) << ',' << j.ooms << ',' << (j.source_id >= 0 ? std::to_string(j.source_id) : "")
        << ',' << Num(j.observed_reading) << ',' << (j.recurring ? 1 : 0) << ',' << Num(j.predicted_low) << ','
        << Num(j.predicted_high) << '\n';
    }
  }
  {
    std::ofstream f(dir + "/placements.csv");
    if (!f) return Status::Error(dir + "/placements.csv: cannot write");
    f << "job_id,gpu,start_s,end_s,kind\n";
    for (const PlacementRecord& p : r.placements)
      f << r.jobs[static_cast<size_t>(p.job)].id << ',' << p.gpu << ',' << Fixed(p.start_s) << ','
        << (p.end_s >= 0 ? Fixed(p.end_s) : "") << ',' << (p.discard ? "pool-profile" : p.profile ? "profile" : "run")
        << '\n';
  }
  {
    std::ofstream f(dir + "/utilization.csv");
    if (!f) return Status::Error(dir + "/utilization.csv: cannot write");
    f << "t_s,util_pct,useful_pct,queued\n";
    // The exact step function when small, else 4000 time-weighted bins.
    const auto& pts = r.series.size() <= 4000 ? r.series : BinSeries(r.series, r.makespan_s, 4000);
    for (const UtilPoint& p : pts)
      f << Fixed(p.t_s) << ',' << Num(p.util_pct) << ',' << Num(p.useful_pct) << ',' << Num(p.queued) << '\n';
  }
  return Status::Ok();
}

}  // namespace gpucast::sim
