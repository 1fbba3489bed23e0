#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <queue>
#include <set>

#include <nlohmann/json.hpp>

#include "sim/report.h"

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

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A standard normal draw determined by (seed, job id, salt): Box-Muller on two
// SplitMix64 uniforms.
double NormalDraw(uint64_t seed, int64_t job_id, uint64_t salt) {
  uint64_t a = Mix(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(job_id) * 0xD1B54A32D192ED03ULL + salt);
  uint64_t b = Mix(a + 0x632BE59BD9B4E019ULL);
  double u1 = (static_cast<double>(a >> 11) + 0.5) / 9007199254740992.0;
  double u2 = static_cast<double>(b >> 11) / 9007199254740992.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

enum class State { kPending, kQueued, kProfiling, kRunning, kDone, kNeverFits };

struct SimJob {
  State state = State::kPending;
  double remaining = 0;    // solo-seconds of work left as of last_update
  double rate = 0;         // current progress rate (solo-seconds per second)
  double last_update = 0;
  double run_alone_until = -1;  // profiling run end, or -1
  uint32_t version = 0;
  int first_row = -1, num_rows = 0;  // open rows of placements (this placement)
};

struct Event {
  double t;
  int64_t order;  // tie-break: insertion order (deterministic)
  int job;
  uint32_t version;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : order > o.order; }
};

class Engine : public ClusterView {
 public:
  Engine(const Trace& trace, const Cluster& cluster, const std::vector<WorkloadProfile>& w,
         const InterferenceModel& m, const SimConfig& c)
      : trace_(trace), w_(w), model_(m), cfg_(c) {
    gpus_.resize(cluster.gpus.size());
    gpu_rates_.resize(cluster.gpus.size());
    gpu_util_.assign(cluster.gpus.size(), 0.0);
    for (size_t g = 0; g < gpus_.size(); ++g) gpus_[g].mem_mib = cluster.gpus[g].mem_mib;
    res_.policy = c.policy;
    res_.trace = trace.name;
    res_.seed = c.seed;
    res_.predictions = c.predictions;
    if (const PolicyRow* row = FindPolicy(c.policy)) res_.uses_predictions = row->needs_predictions;
    res_.num_gpus = static_cast<int>(cluster.gpus.size());
    res_.cluster = cluster.spec;
    res_.trace_bad_lines = trace.bad_lines;
    res_.trace_filtered = trace.filtered;
  }

  double now() const override { return now_; }
  const std::vector<GpuState>& gpus() const override { return gpus_; }
  const JobInfo& job(int j) const override { return info_[j]; }
  void VisitCandidates(const std::function<bool(int)>& visit) const override {
    if (all_queued_) {
      for (int j : queue_)
        if (!visit(j)) return;
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
      double t = std::min({t_arr, t_ev, t_obs});
      if (!std::isfinite(t)) break;
      AdvanceTo(t);
      if (!window_done_ && now_ >= t_window_end_) SnapshotWindow();
      new_jobs_.clear();
      bool freed = false, observed = false;
      while (!obs_.empty() && obs_.top().t <= now_ + kEps) {
        Event e = obs_.top();
        obs_.pop();
        observed |= Observe(e.job);
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
      // Capacity freed: every queued job may fit now. Otherwise only the new
      // arrivals can (the cluster only got fuller since the last round).
      // An observation can show a GPU over-committed (or less loaded than
      // predicted): a full round, migrations included.
      all_queued_ = freed || observed;
      if (observed || (freed ? !queue_.empty() : !new_jobs_.empty()))
        RETURN_IF_ERROR(Apply(policy.Schedule(*this)));
      Refresh();
      if (cfg_.progress && res_.events >= next_progress) {
        cfg_.progress(now_, done_, static_cast<int64_t>(n));
        next_progress = res_.events + 20000;
      }
      if (heap_.empty() && obs_.empty() && next_arrival >= n && !queue_.empty()) {
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
    jobs_.resize(n);
    info_.resize(n);
    res_.jobs.resize(n);
    double mae = 0;
    for (size_t i = 0; i < n; ++i) {
      const TraceJob& tj = trace_.jobs[i];
      int wl = cfg_.workload_of_job.empty() ? AssignWorkload(cfg_.seed, tj.id, nw) : cfg_.workload_of_job[i];
      if (wl < 0 || wl >= nw) return Status::Error("job " + std::to_string(tj.id) + ": bad workload index");
      JobRecord& r = res_.jobs[i];
      r.id = tj.id;
      r.submit_s = tj.submit_s;
      r.duration_s = tj.duration_s;
      r.num_gpus = tj.num_gpus;
      r.workload = wl;
      r.true_util = w_[wl].true_util;
      r.predicted_util = w_[wl].predicted_util;
      info_[i] = {tj.num_gpus, w_[wl].gmem_mib, w_[wl].predicted_util, false, 0.0};
      jobs_[i].remaining = tj.duration_s;
      mae += std::fabs(w_[wl].predicted_util - w_[wl].true_util);
    }
    res_.pred_mae = n ? mae / static_cast<double>(n) : 0;
    smallest_ = {1, INFINITY, INFINITY, true, INFINITY};
    for (const JobInfo& j : info_) {
      smallest_.mem_mib = std::min(smallest_.mem_mib, j.mem_mib);
      smallest_.predicted_util = std::min(smallest_.predicted_util, j.predicted_util);
    }
    for (const JobRecord& r : res_.jobs) smallest_.profiled_util = std::min(smallest_.profiled_util, r.true_util);
    if (!trace_.jobs.empty()) now_ = trace_.jobs.front().submit_s;
    t0_ = now_;
    t_window_end_ = trace_.jobs.empty() ? now_ : trace_.jobs.back().submit_s;
    return Status::Ok();
  }

  void SkipStale() {
    while (!heap_.empty() && heap_.top().version != jobs_[heap_.top().job].version) heap_.pop();
  }

  // One utilization measurement of job j (kind 1: profiling window, 2:
  // observation while running): true + N(0, noise), clamped to [0, 100].
  double Measure(int j, uint64_t kind) {
    const JobRecord& r = res_.jobs[j];
    double m = r.true_util + cfg_.measure_noise_pct * NormalDraw(cfg_.seed, r.id, kind);
    m = std::clamp(m, 0.0, 100.0);
    res_.jobs[j].measured_util = m;
    // Keep smallest_ a lower bound of every utilization a policy may use.
    smallest_.profiled_util = std::min(smallest_.profiled_util, m);
    return m;
  }

  bool Observe(int j) {
    if (jobs_[j].state != State::kRunning || info_[j].observed) return false;
    info_[j].observed = true;
    info_[j].observed_util = Measure(j, 2);
    ++res_.jobs_observed;
    return true;
  }

  // Progress of every job as of the end of the useful-work window (now).
  void SnapshotWindow() {
    window_done_ = true;
    for (size_t j = 0; j < jobs_.size(); ++j) {
      const SimJob& s = jobs_[j];
      JobRecord& r = res_.jobs[j];
      if (s.state == State::kDone) r.work_window_s = r.duration_s;
      else if (s.state == State::kRunning || s.state == State::kProfiling || s.state == State::kQueued) {
        double rem = std::max(0.0, s.remaining - s.rate * (now_ - s.last_update));
        r.work_window_s = std::max(0.0, r.duration_s - rem);
      }
    }
  }

  // Sets a running job's rate, keeping the useful-work rate sum current.
  void SetRate(int j, double rate) {
    const JobRecord& r = res_.jobs[j];
    useful_sum_ += (rate - jobs_[j].rate) * r.true_util / 100.0 * r.num_gpus;
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
    // A job fits some day only if enough GPUs have room for its memory when empty.
    int big_enough = 0;
    for (const GpuState& g : gpus_) big_enough += g.mem_mib >= info_[j].mem_mib;
    if (big_enough < info_[j].num_gpus) {
      NeverFits(j, "needs " + std::to_string(info_[j].num_gpus) + " GPUs with " +
                       std::to_string(static_cast<int64_t>(info_[j].mem_mib)) + " MiB; the cluster has " +
                       std::to_string(big_enough));
      return;
    }
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

  void Leave(int j) {
    SimJob& sj = jobs_[j];
    for (int k = 0; k < sj.num_rows; ++k) res_.placements[static_cast<size_t>(sj.first_row + k)].end_s = now_;
    sj.num_rows = 0;
    for (int g : res_.jobs[j].gpus) {
      GpuState& gs = gpus_[g];
      auto it = std::find(gs.jobs.begin(), gs.jobs.end(), j);
      if (it != gs.jobs.end()) gs.jobs.erase(it);
      gs.mem_used -= info_[j].mem_mib;
      gs.pred_sum -= info_[j].predicted_util;
      gs.known_sum -= info_[j].profiled ? info_[j].profiled_util : 100.0;
      if (gs.jobs.empty()) gs.mem_used = gs.pred_sum = gs.known_sum = 0;  // no drift
      gs.exclusive = false;
      MarkDirty(g);
    }
  }

  void Complete(int j) {
    SimJob& s = jobs_[j];
    Settle(j);
    Leave(j);
    s.version++;
    SetRate(j, 0);
    if (s.run_alone_until >= 0 && s.remaining > kEps) {
      // End of a profiling run: back to the queue, now measured.
      s.run_alone_until = -1;
      s.state = State::kQueued;
      info_[j].profiled = true;
      info_[j].profiled_util = Measure(j, 1);
      queue_.insert(j);
      return;
    }
    s.run_alone_until = -1;
    s.state = State::kDone;
    if (res_.jobs[j].run_start_s < 0) res_.jobs[j].run_start_s = res_.jobs[j].start_s;  // done within profiling
    s.remaining = 0;
    res_.jobs[j].end_s = now_;
    res_.jobs[j].status = "done";
    ++done_;
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
        // Checkpoint now, leave, lose the restart cost; then placed below.
        Settle(p.job);
        Leave(p.job);
        SetRate(p.job, 0);
        jobs_[p.job].version++;
        const double lost = std::min(cfg_.migrate_cost_s, res_.jobs[p.job].duration_s - jobs_[p.job].remaining);
        jobs_[p.job].remaining += lost;
        res_.lost_progress_s += lost * info_[p.job].num_gpus;
        ++res_.migrations;
        ++res_.jobs[p.job].migrations;
        ++info_[p.job].migrations;
        jobs_[p.job].state = State::kQueued;  // validated and placed like a queued job
        queue_.insert(p.job);
      }
      if (jobs_[p.job].state != State::kQueued)
        return Status::Error(who + ": not queued");
      if (static_cast<int>(p.gpus.size()) != info_[p.job].num_gpus)
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
        if (gs.mem_used + info_[p.job].mem_mib > gs.mem_mib + kEps)
          return Status::Error(who + ": memory does not fit on GPU " + std::to_string(g));
      }
      if (p.run_alone_s > 0 && !p.exclusive) return Status::Error(who + ": a profiling run must be exclusive");
      int j = p.job;
      SimJob& s = jobs_[j];
      queue_.erase(j);
      s.state = p.run_alone_s > 0 ? State::kProfiling : State::kRunning;
      s.last_update = now_;
      if (res_.jobs[j].start_s < 0) res_.jobs[j].start_s = now_;
      if (p.run_alone_s <= 0 && res_.jobs[j].run_start_s < 0) {
        res_.jobs[j].run_start_s = now_;
        if (observes_ && !info_[j].observed) obs_.push({now_ + cfg_.observe_after_s, order_++, j, 0});
      }
      s.first_row = static_cast<int>(res_.placements.size());
      s.num_rows = static_cast<int>(p.gpus.size());
      for (int g : p.gpus) res_.placements.push_back({j, g, now_, -1, p.run_alone_s > 0});
      if (p.run_alone_s > 0) {
        double run = std::min(p.run_alone_s, s.remaining);
        s.run_alone_until = now_ + run;
        res_.profiling_gpu_s += run * info_[j].num_gpus;
      }
      res_.jobs[j].gpus = p.gpus;
      for (int g : p.gpus) {
        GpuState& gs = gpus_[g];
        gs.jobs.push_back(j);
        gs.mem_used += info_[j].mem_mib;
        gs.pred_sum += info_[j].predicted_util;
        gs.known_sum += info_[j].profiled ? info_[j].profiled_util : 100.0;
        gs.exclusive = p.exclusive;
        MarkDirty(g);
      }
      touched_.push_back(j);
    }
    return Status::Ok();
  }

  void MarkDirty(int g) {
    if (dirty_flag_.empty()) dirty_flag_.assign(gpus_.size(), 0);
    if (!dirty_flag_[g]) {
      dirty_flag_[g] = 1;
      dirty_.push_back(g);
    }
  }

  // Recomputes the physics of dirty GPUs and the rates (and finish events) of
  // every job on them.
  void Refresh() {
    std::sort(dirty_.begin(), dirty_.end());
    for (int g : dirty_) {
      dirty_flag_[g] = 0;
      const GpuState& gs = gpus_[g];
      int k = static_cast<int>(gs.jobs.size());
      wl_.resize(k);
      gpu_rates_[g].resize(k);
      for (int i = 0; i < k; ++i) wl_[i] = res_.jobs[gs.jobs[i]].workload;
      double util = 0;
      model_.Physics(wl_.data(), k, w_, gpu_rates_[g].data(), &util);
      bool was_shared = gpu_shared_.empty() ? false : gpu_shared_[g];
      if (gpu_shared_.empty()) gpu_shared_.assign(gpus_.size(), 0);
      gpu_shared_[g] = k >= 2;
      shared_gpus_ += static_cast<int>(k >= 2) - static_cast<int>(was_shared);
      busy_sum_ += util - gpu_util_[g];
      gpu_util_[g] = util;
      for (int j : gs.jobs) touched_.push_back(j);
    }
    dirty_.clear();
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    for (int j : touched_) {
      SimJob& s = jobs_[j];
      if (s.state != State::kRunning && s.state != State::kProfiling) continue;
      double rate = 1.0;
      for (int g : res_.jobs[j].gpus) {
        const GpuState& gs = gpus_[g];
        for (size_t i = 0; i < gs.jobs.size(); ++i)
          if (gs.jobs[i] == j) rate = std::min(rate, gpu_rates_[g][i]);
      }
      Settle(j);
      SetRate(j, rate);
      s.version++;
      double finish = now_ + s.remaining / rate;
      if (s.run_alone_until >= 0) finish = std::min(finish, s.run_alone_until);
      heap_.push({finish, order_++, j, s.version});
    }
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
    if (!window_done_) SnapshotWindow();
    double first_submit = t0_, last_end = t0_;
    std::vector<double> jct;
    double queue = 0, slow = 0, run_slow = 0, work = 0, useful = 0, demand = 0;
    for (JobRecord& r : res_.jobs) {
      useful += r.true_util / 100.0 * r.num_gpus * r.work_window_s;
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
    if (res_.window_s > 0) {
      const double cap = static_cast<double>(res_.num_gpus) * res_.window_s;
      res_.useful_work_utilization = 100.0 * useful / cap;
      res_.load_factor = demand / cap;
      res_.ideal_work_utilization = IdealWorkUtilization(res_.jobs, res_.num_gpus, t0_, t_window_end_);
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
  std::vector<std::vector<double>> gpu_rates_;  // per GPU, parallel to GpuState::jobs
  std::vector<double> gpu_util_;
  std::vector<char> gpu_shared_, dirty_flag_;
  std::vector<int> dirty_, touched_, wl_;
  std::vector<SimJob> jobs_;
  std::vector<JobInfo> info_;
  std::set<int> queue_;  // job indices = submit order
  std::vector<int> new_jobs_;
  bool all_queued_ = false;
  JobInfo smallest_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap_;
  int64_t order_ = 0, done_ = 0, refreshes_ = 0;
  int shared_gpus_ = 0;
  double now_ = 0, t0_ = 0, busy_sum_ = 0, useful_sum_ = 0, t_window_end_ = 0;
  bool observes_ = false, window_done_ = false;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> obs_;  // observation times
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
  if (row->needs_predictions)
    for (const WorkloadProfile& w : workloads)
      if (!w.HasPrediction())
        return Status::Error("policy '" + config.policy + "' needs predicted utilization, and workload " +
                             w.Name() + " has none");
  auto policy = row->make(config.options);
  Engine e(trace, cluster, workloads, model, config);
  return e.Run(*policy, row->observes_running);
}

double IdealWorkUtilization(const std::vector<JobRecord>& jobs, int num_gpus, double t0, double t_end) {
  const double W = t_end - t0, G = num_gpus;
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
  return 100.0 * best / (G * W);
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
  j["load_factor"] = r.load_factor;
  j["window_s"] = r.window_s;
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
  j["jobs_observed"] = r.jobs_observed;
  j["jobs_total"] = r.jobs_total;
  j["jobs_done"] = r.jobs_done;
  j["jobs_never_fit"] = r.jobs_never_fit;
  j["trace_bad_lines"] = r.trace_bad_lines;
  j["trace_filtered"] = r.trace_filtered;
  j["prediction_mae"] = std::isnan(r.pred_mae) || !r.uses_predictions ? nlohmann::ordered_json()
                                                                     : nlohmann::ordered_json(r.pred_mae);
  j["events"] = r.events;
  return j.dump(2) + "\n";
}

namespace {
std::string Num(double v) {
  if (std::isnan(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::string Fixed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
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
         "run_start_s,work_in_window_s,measured_util,migrations\n";
    for (const JobRecord& j : r.jobs) {
      f << j.id << ',' << Fixed(j.submit_s) << ',' << (j.start_s >= 0 ? Fixed(j.start_s) : "") << ','
        << (j.end_s >= 0 ? Fixed(j.end_s) : "") << ',' << Fixed(j.duration_s) << ',' << j.num_gpus << ','
        << workloads[j.workload].Name() << ',' << Num(j.true_util) << ',' << Num(j.predicted_util) << ',';
      for (size_t i = 0; i < j.gpus.size(); ++i) f << (i ? ";" : "") << j.gpus[i];
      f << ',' << j.status << ',' << (j.run_start_s >= 0 ? Fixed(j.run_start_s) : "") << ','
        << Fixed(j.work_window_s) << ',' << Num(j.measured_util) << ',' << j.migrations << '\n';
    }
  }
  {
    std::ofstream f(dir + "/placements.csv");
    if (!f) return Status::Error(dir + "/placements.csv: cannot write");
    f << "job_id,gpu,start_s,end_s,kind\n";
    for (const PlacementRecord& p : r.placements)
      f << r.jobs[static_cast<size_t>(p.job)].id << ',' << p.gpu << ',' << Fixed(p.start_s) << ','
        << (p.end_s >= 0 ? Fixed(p.end_s) : "") << ',' << (p.profile ? "profile" : "run") << '\n';
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
