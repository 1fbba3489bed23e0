// The live scheduler: the simulator's policies on a view of the service's jobs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "features/gpu_specs.h"
#include "service/request.h"
#include "service/scheduler.h"
#include "sim/cluster.h"
#include "sim/interference.h"
#include "sim/policy.h"
#include "sim/workload.h"

namespace gpucast::service {

namespace {

using nlohmann::json;

struct Resident {
  int64_t id = 0;
  double util = 0;  // predicted, percent
  double mem_mib = 0;
  bool exclusive = false;
  bool observed = false;     // has a measured utilization (Observe)
  double observed_util = 0;  // percent, valid when observed: the counter's mean so far
  double util_lo = NAN, util_hi = NAN;  // the prediction's interval, percent
};

// The counter's noise the service assumes for one observation, points (the
// simulator's --measure-noise default; docs/simulator.md).
constexpr double kObservationNoisePct = 5;
// A job sharing its GPU progresses at an unknown rate (the service sees no
// step counts): its counter reads rate x utilization, with the rate anywhere
// from about 0.5 (two saturating jobs) to 1. The observation is read as
// reading / 0.75 with a relative sd of 0.25, so that it weighs less than a
// reading taken alone (rate 1, known).
constexpr double kSharedRate = 0.75, kSharedRateSd = 0.25;

// The estimate the policies decide by, from the prediction (with its
// interval) and the observation (sim::CombineObservation, the simulator's own
// estimator).
sim::UtilBelief Believe(const Resident& r, bool shared) {
  const sim::UtilBelief prior = sim::PredictionBelief(r.util, r.util_lo, r.util_hi);
  return sim::CombineObservation(prior, r.observed_util, kObservationNoisePct, shared ? kSharedRate : 1.0,
                                 shared ? kSharedRateSd : 0.0);
}

// One scheduling round's read-only view: residents first, then the queue.
class RoundView : public sim::ClusterView {
 public:
  double now() const override { return now_; }
  const std::vector<sim::GpuState>& gpus() const override { return gpus_; }
  const sim::JobInfo& job(int j) const override { return jobs_[static_cast<size_t>(j)]; }
  const std::vector<int>& candidates() const override { return candidates_; }
  const sim::InterferenceModel& model() const override { return *model_; }

  double now_ = 0;
  std::vector<sim::GpuState> gpus_;
  std::vector<sim::JobInfo> jobs_;
  std::vector<int> candidates_;
  const sim::InterferenceModel* model_ = nullptr;
};

// The simulator's options, except that the live service cannot checkpoint
// and move a running job: predictive-feedback packs by observations but
// never migrates here.
sim::PolicyOptions LiveOptions(bool cap_by_capacity, int max_jobs_per_gpu) {
  sim::PolicyOptions o;
  o.max_migrations = 0;
  o.cap_by_capacity = cap_by_capacity;
  o.max_jobs_per_gpu = max_jobs_per_gpu;
  return o;
}

sim::JobInfo InfoOf(int64_t gpus, double util, double mem_mib, double lo = NAN, double hi = NAN) {
  sim::JobInfo info;
  info.num_gpus = static_cast<int>(gpus);
  info.mem_mib = mem_mib;
  info.predicted_util = util;
  info.predicted_low = lo;
  info.predicted_high = hi;
  return info;
}

// The interval of a prediction, NaN when it states none (lo = hi = 0).
std::pair<double, double> IntervalOf(const Prediction& p) {
  if (!(p.util_hi > p.util_lo) && p.util_lo == 0 && p.util_hi == 0) return {NAN, NAN};
  return {std::min(p.util_lo, p.util), std::max(p.util_hi, p.util)};
}

// MIG jobs (JobSpec::mig): a slice is an isolated GPU instance with its own
// SMs, memory and L2 (MIG User Guide), so it neither slows nor is slowed by
// its neighbours. The policies' view is of whole GPUs, so slices are placed
// here, beside them: a GPU runs either whole-GPU jobs (shared as the policy
// decides) or MIG slices, never both (the MIG mode of a GPU is all or
// nothing), and its slices are not load in the policy's sums. A GPU holds
// slices while their compute slices (the profile's "Ng") and memory slices
// (the guide's "Fraction of Memory" in eighths) fit the GPU's (7 and 8 on an
// A100); the hardware's finer placement rules (which start slots a profile
// may use) are not modelled. The profile and slice lookups (FindMigProfile,
// MigSlicesOf, GpuMigSlices) are the GPU table's: features/gpu_specs.h.

// A running MIG job on its GPU.
struct SliceResident {
  int64_t id = 0;
  std::string profile;
  MigSlices slices;
  double util = 0;  // predicted, percent of the slice
};

class PolicyScheduler : public Scheduler {
 public:
  PolicyScheduler(sim::Cluster cluster, const sim::PolicyRow* row, sim::InterferenceModel model,
                  bool cap_by_capacity, int max_jobs_per_gpu)
      : cluster_(std::move(cluster)),
        row_(row),
        policy_(row->make(LiveOptions(cap_by_capacity, max_jobs_per_gpu))),
        model_(std::move(model)),
        on_gpu_(cluster_.gpus.size()),
        slices_on_gpu_(cluster_.gpus.size()),
        types_(sim::GpuTypes(cluster_)) {}

  std::string PolicyName() const override { return row_->name; }
  int TotalGpus() const override { return static_cast<int>(cluster_.gpus.size()); }

  // The one GPU type, or "" on a mixed cluster (node groups of several types).
  std::string GpuType() const override { return types_.size() == 1 ? types_.front() : ""; }
  std::vector<std::string> GpuTypes() const override { return types_; }

  std::string WhyWaiting(const Job& job, int64_t ahead) const override {
    if (!job.spec.mig.empty()) return WhySliceWaits(job, ahead);
    // The facts the policy decided on: each GPU's predicted load and memory.
    std::string loads;
    int free_gpus = 0;
    for (size_t g = 0; g < cluster_.gpus.size() && g < 16; ++g) {
      double pred = 0;
      for (const Resident& r : on_gpu_[g]) pred += r.util;
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.1f", g ? ", " : "", pred);
      loads += buf;
    }
    if (cluster_.gpus.size() > 16) loads += ", ...";
    for (size_t g = 0; g < on_gpu_.size(); ++g) free_gpus += on_gpu_[g].empty() && slices_on_gpu_[g].empty();
    char util[32];
    std::snprintf(util, sizeof util, "%.1f", job.prediction.util);
    return "pending: policy '" + PolicyName() + "' found no place for " + std::to_string(job.spec.gpus) +
           " GPU(s) at predicted " + util + "% this pass; " + std::to_string(ahead) + " job(s) queued before it, " +
           std::to_string(free_gpus) + " of " + std::to_string(TotalGpus()) +
           " GPUs idle, predicted load per GPU: " + loads;
  }

  Status CanEverFit(const JobSpec& spec) const override {
    // Prediction inputs the scheduler cannot honour (POST /v1/predict takes them).
    if (spec.nodes > 1 || !spec.interconnect.empty()) {
      return Status::Error(std::string(spec.nodes > 1 ? "field 'nodes'" : "field 'interconnect'") +
                           ": the service places a job on the GPUs of one node with the GPU table's links; POST "
                           "/v1/predict predicts other layouts");
    }
    // A job runs on GPUs of the type it was predicted for (its node group's).
    int64_t of_type = 0;
    std::string have;
    for (const sim::Gpu& g : cluster_.gpus) of_type += spec.gpu.empty() || g.type == spec.gpu;
    for (const std::string& t : types_) {
      int64_t n = 0;
      for (const sim::Gpu& g : cluster_.gpus) n += g.type == t;
      have += (have.empty() ? "" : ", ") + std::to_string(n) + "x " + t;
    }
    if (of_type == 0) {
      return Status::Error("field 'gpu': the cluster has no " + spec.gpu + " GPUs (it has " + have +
                           "); POST /v1/predict predicts for any GPU type");
    }
    if (!spec.mig.empty()) return SliceCanEverFit(spec);
    if (spec.gpus > of_type) {
      return Status::Error("field 'gpus': " + std::to_string(spec.gpus) + " requested, the cluster has " +
                           (types_.size() == 1 ? std::to_string(TotalGpus()) : std::to_string(of_type) + " " + spec.gpu));
    }
    int64_t roomy = 0;
    double largest = 0;
    for (const sim::Gpu& g : cluster_.gpus) {
      if (!spec.gpu.empty() && g.type != spec.gpu) continue;
      roomy += g.mem_mib + 1e-6 >= spec.mem_mib;
      largest = std::max(largest, g.mem_mib);
    }
    if (roomy < spec.gpus) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.0f", largest);
      return Status::Error("field 'mem_mib': " + std::to_string(spec.gpus) + " GPU(s) with " +
                           std::to_string(static_cast<int64_t>(spec.mem_mib)) +
                           " MiB requested, the cluster's largest GPU has " + buf + " MiB");
    }
    return Status::Ok();
  }

  Result<std::vector<Placement>> Plan(const std::vector<Job>& queued, double now) override {
    // Whole-GPU jobs go to the policy; MIG jobs then take slices of the GPUs
    // that neither the running jobs nor this pass's decisions hold whole.
    // Pointers, not copies: a pass runs on every submission, and copying each
    // queued job (spec, prediction, strings) per pass left a pass's garbage in
    // every worker's malloc arena (5,000 queued: 164 MiB RSS where 55 MiB hold them).
    std::vector<const Job*> whole, sliced;
    for (const Job& j : queued) (j.spec.mig.empty() ? whole : sliced).push_back(&j);
    std::vector<Placement> out;
    if (!whole.empty() && types_.size() == 1) {
      ASSIGN_OR_RETURN(out, PlanOn("", whole, now));
    } else if (!whole.empty()) {
      // A mixed cluster: one pass per GPU type, each job only on GPUs of the
      // type it was predicted for.
      for (const std::string& t : types_) {
        std::vector<const Job*> of_type;
        for (const Job* j : whole)
          if (j->spec.gpu == t) of_type.push_back(j);
        if (of_type.empty()) continue;
        ASSIGN_OR_RETURN(std::vector<Placement> p, PlanOn(t, of_type, now));
        out.insert(out.end(), p.begin(), p.end());
      }
    }
    PlaceSlices(sliced, &out);
    return out;
  }

  // One pass of the policy; with `only_type`, the other types' GPUs are
  // shown to it as held (exclusive, memory full), so it places nothing there.
  Result<std::vector<Placement>> PlanOn(const std::string& only_type, const std::vector<const Job*>& queued, double now) {
    RoundView v;
    v.now_ = now;
    v.model_ = &model_;
    std::map<int64_t, int> index;  // resident job id -> view index
    for (size_t g = 0; g < cluster_.gpus.size(); ++g) {
      sim::GpuState s;
      s.mem_mib = cluster_.gpus[g].mem_mib;
      for (const Resident& r : on_gpu_[g]) {
        auto [it, fresh] = index.emplace(r.id, static_cast<int>(v.jobs_.size()));
        if (fresh) {
          v.jobs_.push_back(InfoOf(0, r.util, r.mem_mib, r.util_lo, r.util_hi));
          if (r.observed) {  // predictive-feedback decides by the estimate
            const sim::UtilBelief b = Believe(r, on_gpu_[g].size() > 1);
            v.jobs_.back().observed = true;
            v.jobs_.back().observed_reading = r.observed_util;
            v.jobs_.back().observed_util = b.mean;
            v.jobs_.back().observed_sd = b.sd;
          }
        }
        ++v.jobs_[static_cast<size_t>(it->second)].num_gpus;
        s.mem_used += r.mem_mib;
        s.pred_sum += r.util;
        s.known_sum += 100;  // nothing is profiled in the live service
        s.exclusive = s.exclusive || r.exclusive;
        s.jobs.push_back(it->second);
      }
      // Another type's GPU, or one in MIG use: shown held, so the policy places nothing there.
      if ((!only_type.empty() && cluster_.gpus[g].type != only_type) || !slices_on_gpu_[g].empty()) {
        s.exclusive = true;
        s.mem_used = s.mem_mib;
      }
      v.gpus_.push_back(std::move(s));
    }
    const int first_queued = static_cast<int>(v.jobs_.size());
    for (const Job* j : queued) {
      v.candidates_.push_back(static_cast<int>(v.jobs_.size()));
      const auto [lo, hi] = IntervalOf(j->prediction);
      v.jobs_.push_back(InfoOf(j->spec.gpus, j->prediction.util, PackingMemMib(j->spec, j->prediction), lo, hi));
    }
    std::vector<sim::Placement> decisions = policy_->Schedule(v);

    // Check each decision as the simulator's Apply does, against the view
    // plus the decisions before it.
    std::vector<Placement> out;
    std::vector<bool> taken(queued.size(), false);
    for (const sim::Placement& p : decisions) {
      const int q = p.job - first_queued;
      const std::string who = "policy '" + PolicyName() + "': job " +
                              (q >= 0 && q < static_cast<int>(queued.size()) ? std::to_string(queued[q]->id)
                                                                            : "#" + std::to_string(p.job));
      if (q < 0 || q >= static_cast<int>(queued.size()) || taken[q]) return Status::Error(who + ": not queued");
      taken[q] = true;
      const sim::JobInfo& info = v.jobs_[static_cast<size_t>(p.job)];
      if (p.run_alone_s > 0) return Status::Error(who + ": profiling runs need a live utilization measurement");
      if (static_cast<int>(p.gpus.size()) != info.num_gpus) {
        return Status::Error(who + ": placed on " + std::to_string(p.gpus.size()) + " GPUs, needs " +
                             std::to_string(info.num_gpus));
      }
      std::vector<int> sorted = p.gpus;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
        return Status::Error(who + ": the same GPU twice");
      }
      for (int g : p.gpus) {
        if (g < 0 || g >= TotalGpus()) return Status::Error(who + ": no GPU " + std::to_string(g));
        sim::GpuState& gs = v.gpus_[static_cast<size_t>(g)];
        if (gs.exclusive) return Status::Error(who + ": GPU " + std::to_string(g) + " is held exclusively");
        if (p.exclusive && !gs.jobs.empty()) {
          return Status::Error(who + ": exclusive on busy GPU " + std::to_string(g));
        }
        if (gs.mem_used + info.mem_mib > gs.mem_mib + 1e-6) {
          return Status::Error(who + ": memory does not fit on GPU " + std::to_string(g));
        }
        gs.mem_used += info.mem_mib;
        gs.pred_sum += info.predicted_util;
        gs.exclusive = p.exclusive;
        gs.jobs.push_back(p.job);
      }
      out.push_back({queued[static_cast<size_t>(q)]->id, p.gpus, p.exclusive});
    }
    return out;
  }

  Status Start(const Job& job) override {
    for (int g : job.placement) {
      if (g < 0 || g >= TotalGpus()) {
        return Status::Error("job " + std::to_string(job.id) + ": no GPU " + std::to_string(g) + " in cluster '" +
                             cluster_.spec + "' (" + std::to_string(TotalGpus()) + " GPUs)");
      }
    }
    if (!job.spec.mig.empty()) {
      for (int g : job.placement) {
        const std::string& type = cluster_.gpus[static_cast<size_t>(g)].type;
        const MigProfile* p = FindMigProfile(type, job.spec.mig);
        if (!p) {
          return Status::Error("job " + std::to_string(job.id) + ": GPU " + std::to_string(g) + " (" + type +
                               ") has no MIG profile '" + job.spec.mig + "'");
        }
        slices_on_gpu_[static_cast<size_t>(g)].push_back({job.id, p->name, MigSlicesOf(*p), job.prediction.util});
      }
      return Status::Ok();
    }
    const auto [lo, hi] = IntervalOf(job.prediction);
    for (int g : job.placement) {
      Resident r{job.id, job.prediction.util, PackingMemMib(job.spec, job.prediction), job.exclusive};
      r.util_lo = lo;
      r.util_hi = hi;
      on_gpu_[static_cast<size_t>(g)].push_back(r);
    }
    return Status::Ok();
  }

  void Observe(int64_t id, double util) override {
    for (auto& residents : on_gpu_) {
      for (Resident& r : residents) {
        if (r.id != id) continue;
        r.observed = true;
        r.observed_util = util;
      }
    }
  }

  void Finish(int64_t id) override {
    for (auto& residents : on_gpu_) {
      residents.erase(std::remove_if(residents.begin(), residents.end(),
                                     [id](const Resident& r) { return r.id == id; }),
                      residents.end());
    }
    for (auto& slices : slices_on_gpu_) {
      std::erase_if(slices, [id](const SliceResident& r) { return r.id == id; });
    }
  }

  json ClusterJson() const override {
    json gpus = json::array();
    for (size_t g = 0; g < cluster_.gpus.size(); ++g) {
      const sim::Gpu& gpu = cluster_.gpus[g];
      json jobs = json::array();
      std::vector<double> utils;
      double pred = 0, mem = 0;
      bool exclusive = false;
      for (const Resident& r : on_gpu_[g]) {
        jobs.push_back({{"id", r.id}, {"predicted_util", r.util}});
        if (r.observed) jobs.back()["observed_util"] = r.observed_util;
        utils.push_back(r.util);
        pred += r.util;
        mem += r.mem_mib;
        exclusive = exclusive || r.exclusive;
      }
      // MIG jobs: isolated slices, not in "jobs" nor in the loads below (the
      // closed loop maps a GPU's counters to its "jobs" only).
      json slices = json::array();
      for (const SliceResident& r : slices_on_gpu_[g]) {
        slices.push_back({{"id", r.id}, {"mig", r.profile}, {"predicted_util", r.util}});
      }
      const MigSlices all = GpuMigSlices(gpu.type), used = SlicesUsed(g);
      // Held against whole-GPU jobs while it holds slices (a reader of this view, such as the
      // Kubernetes extender, then puts no whole-GPU pod there).
      exclusive = exclusive || !slices.empty();
      gpus.push_back({{"id", gpu.id},
                      {"node", gpu.node},
                      {"type", gpu.type},
                      {"mem_mib", gpu.mem_mib},
                      {"mem_used_mib", mem},
                      {"exclusive", exclusive},
                      {"jobs", jobs},
                      {"mig_jobs", slices},
                      {"mig_slices_free", slices.empty() ? json(nullptr)
                                                         : json{{"compute", all.compute - used.compute},
                                                                {"memory", all.memory - used.memory}}},
                      // Sum of predicted utilizations: what predictive policies pack by.
                      {"predicted_load", pred},
                      // What a policy without predictions assumes: 100 per job.
                      {"assumed_load", 100.0 * static_cast<double>(on_gpu_[g].size())},
                      // Expected device utilization, independent-kernels model.
                      {"modelled_util", sim::InterferenceModel::ModelCombinedUtil(
                                            utils.data(), static_cast<int>(utils.size()))}});
    }
    // The spec's node groups (several on a mixed cluster), each with its GPU type.
    json groups = json::array();
    for (const sim::NodeGroup& ng : sim::NodeGroups(cluster_)) {
      groups.push_back({{"type", ng.type},
                        {"nodes", ng.nodes},
                        {"gpus_per_node", ng.gpus_per_node},
                        {"mem_mib", ng.mem_mib},
                        {"first_node", ng.first_node},
                        {"first_gpu", ng.first_gpu}});
    }
    return {{"cluster", cluster_.spec}, {"node_groups", groups}, {"gpus", gpus}};
  }

 private:
  MigSlices SlicesUsed(size_t g) const {
    MigSlices used;
    for (const SliceResident& r : slices_on_gpu_[g]) {
      used.compute += r.slices.compute;
      used.memory += r.slices.memory;
    }
    return used;
  }

  // The GPU type a job runs on: its own, or the cluster's one type.
  std::string TypeOf(const JobSpec& spec) const { return spec.gpu.empty() ? GpuType() : spec.gpu; }

  // CanEverFit for a MIG job (its GPU type is in the cluster). A profile its
  // GPU lacks, or gpus > 1, is left to the prediction, which refuses both
  // (422) in the words POST /v1/predict answers with.
  Status SliceCanEverFit(const JobSpec& spec) const {
    const MigProfile* p = FindMigProfile(TypeOf(spec), spec.mig);
    if (!p) return Status::Ok();
    const double slice_mib = p->memory_gib * 1024;
    if (spec.mem_mib > slice_mib + 1e-6) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.0f", slice_mib);
      return Status::Error("field 'mem_mib': " + std::to_string(static_cast<int64_t>(spec.mem_mib)) +
                           " MiB requested, a MIG " + p->name + " slice of " + TypeOf(spec) + " has " + buf +
                           " MiB");
    }
    return Status::Ok();
  }

  // Slices for the queued MIG jobs, in submission order: each on a GPU of
  // its type that runs no whole-GPU job (nor got one in `out`) and has its
  // compute and memory slices free; among those, the GPU in MIG use with the
  // fewest compute slices left (packing, so that idle GPUs stay whole), else
  // the lowest-numbered idle one.
  void PlaceSlices(const std::vector<const Job*>& sliced, std::vector<Placement>* out) const {
    if (sliced.empty()) return;
    std::vector<bool> whole(cluster_.gpus.size(), false);
    for (size_t g = 0; g < cluster_.gpus.size(); ++g) whole[g] = !on_gpu_[g].empty();
    for (const Placement& p : *out)
      for (int g : p.gpus) whole[static_cast<size_t>(g)] = true;
    std::vector<MigSlices> used(cluster_.gpus.size());
    for (size_t g = 0; g < cluster_.gpus.size(); ++g) used[g] = SlicesUsed(g);
    for (const Job* jp : sliced) {
      const Job& j = *jp;
      const std::string type = TypeOf(j.spec);
      const MigProfile* p = FindMigProfile(type, j.spec.mig);
      if (!p || j.spec.gpus != 1) continue;  // refused by the prediction; never placed
      const MigSlices need = MigSlicesOf(*p), all = GpuMigSlices(type);
      int best = -1;
      for (size_t g = 0; g < cluster_.gpus.size(); ++g) {
        if (cluster_.gpus[g].type != type || whole[g]) continue;
        if (used[g].compute + need.compute > all.compute || used[g].memory + need.memory > all.memory) continue;
        if (best < 0) {
          best = static_cast<int>(g);
          continue;
        }
        const MigSlices& b = used[static_cast<size_t>(best)];
        const bool in_use = used[g].compute > 0, best_in_use = b.compute > 0;
        if ((in_use && !best_in_use) || (in_use && best_in_use && used[g].compute > b.compute)) {
          best = static_cast<int>(g);
        }
      }
      if (best < 0) continue;
      used[static_cast<size_t>(best)].compute += need.compute;
      used[static_cast<size_t>(best)].memory += need.memory;
      out->push_back({j.id, {best}, false});
    }
  }

  std::string WhySliceWaits(const Job& job, int64_t ahead) const {
    const std::string type = TypeOf(job.spec);
    const MigProfile* p = FindMigProfile(type, job.spec.mig);
    if (!p) return "pending: a " + type + " GPU has no MIG profile '" + job.spec.mig + "'";
    const MigSlices need = MigSlicesOf(*p), all = GpuMigSlices(type);
    int of_type = 0, whole = 0, mig = 0;
    for (size_t g = 0; g < cluster_.gpus.size(); ++g) {
      if (cluster_.gpus[g].type != type) continue;
      ++of_type;
      whole += !on_gpu_[g].empty();
      mig += !slices_on_gpu_[g].empty();
    }
    return "pending: no " + type + " GPU has a MIG " + p->name + " slice free this pass (it needs " +
           std::to_string(need.compute) + " of " + std::to_string(all.compute) + " compute and " +
           std::to_string(need.memory) + " of " + std::to_string(all.memory) +
           " memory slices of a GPU that runs no whole-GPU job); " + std::to_string(ahead) +
           " job(s) queued before it; of " + std::to_string(of_type) + " " + type + " GPUs, " +
           std::to_string(whole) + " run whole-GPU jobs and " + std::to_string(mig) + " MIG slices";
  }

  sim::Cluster cluster_;
  const sim::PolicyRow* row_;
  std::unique_ptr<sim::Policy> policy_;
  sim::InterferenceModel model_;
  std::vector<std::vector<Resident>> on_gpu_;  // per GPU
  std::vector<std::vector<SliceResident>> slices_on_gpu_;  // per GPU: its MIG jobs
  const std::vector<std::string> types_;       // GPU types, in the spec's order
};

}  // namespace

Result<std::unique_ptr<Scheduler>> NewPolicyScheduler(const std::string& cluster_spec,
                                                      const std::string& policy,
                                                      const std::string& data_dir,
                                                      const std::string& cap_rule, int max_jobs_per_gpu) {
  const std::optional<bool> by_capacity = sim::ParseCapRule(cap_rule);
  if (!by_capacity) return Status::Error("cap rule '" + cap_rule + "': want sum or capacity");
  if (max_jobs_per_gpu < 0) return Status::Error("max jobs per GPU " + std::to_string(max_jobs_per_gpu) + ": want >= 0 (0: no limit)");
  const sim::PolicyRow* row = sim::FindPolicy(policy);
  if (!row) {
    std::string names;
    for (const sim::PolicyRow& r : sim::Policies()) names += (names.empty() ? "" : ", ") + std::string(r.name);
    return Status::Error("unknown policy '" + policy + "': want one of " + names);
  }
  if (policy.rfind("profiling", 0) == 0 || policy == "predictive-hybrid") {
    // profiling, profiling-pool, profiling-exclusive; predictive-hybrid measures unsure jobs that way
    return Status::Error("policy '" + policy + "' needs " +
                         (policy == "predictive-hybrid" ? std::string("its unsure jobs' ") : std::string("each job's ")) +
                         "measured utilization after a solo profiling "
                         "run, which the service cannot schedule: use slot, predictive, predictive-spread, "
                         "interference-aware or predictive-feedback (observations: docs/operations.md)");
  }
  ASSIGN_OR_RETURN(sim::Cluster cluster, sim::ParseCluster(cluster_spec, data_dir));
  if (cluster.gpus.empty()) return Status::Error("cluster '" + cluster_spec + "' has no GPUs");
  // Known GPU types; on a mixed cluster each job names its own (request.h RequestDefaults::cluster_gpus).
  for (sim::Gpu& g : cluster.gpus) {
    ASSIGN_OR_RETURN(g.type, CheckGpuName("--cluster '" + cluster_spec + "'", g.type));
  }
  // The interference model (interference-aware and the capacity cap read it)
  // is fitted to the measured co-located pairs; other policies get a
  // no-slowdown model (work capacity 1: the capacity cap would be 100).
  sim::InterferenceModel model(0, {1, 0, 0, 0, 0}, {});
  if (policy == "interference-aware" || *by_capacity) {
    ASSIGN_OR_RETURN(std::vector<sim::WorkloadProfile> w, sim::LoadWorkloads(data_dir + "/lucid/single_data.csv"));
    ASSIGN_OR_RETURN(model, sim::InterferenceModel::Fit(w, data_dir + "/lucid/colocate_info.csv"));
  }
  return std::unique_ptr<Scheduler>(
      std::make_unique<PolicyScheduler>(std::move(cluster), row, std::move(model), *by_capacity, max_jobs_per_gpu));
}

}  // namespace gpucast::service
