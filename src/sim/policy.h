// Scheduling policies: each sees a read-only view of the cluster and returns
// typed placement decisions; only the simulator mutates state. The table in
// policy.cc (Policies()) lists them all: adding a policy is adding a row.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/interference.h"

namespace gpucast::sim {

// One GPU as the scheduler sees it. Utilizations in percent, memory in MiB.
struct GpuState {
  double mem_mib = 0;     // capacity
  double mem_used = 0;    // sum of resident jobs' memory as the scheduler knows it (JobInfo::mem_mib)
  double pred_sum = 0;    // sum of resident jobs' predicted utilization
  double known_sum = 0;   // sum of resident jobs' profiled utilization (100 for unprofiled ones)
  bool exclusive = false; // held by a job that must run alone (slot or profiling run)
  std::vector<int> jobs;  // resident job indices
};

// What a scheduler may know about a job (never its true utilization unless profiled).
struct JobInfo {
  int num_gpus = 1;
  // Memory per GPU as the scheduler knows it, MiB: the predicted high end
  // (the true peak under oracle predictions), at most the largest GPU's memory.
  double mem_mib = 0;
  double predicted_util = 0;   // percent; NaN when no predictions were loaded
  bool profiled = false;       // finished a profiling run
  double profiled_util = 0;    // measured utilization; valid only when profiled
  // Observed while running (predictive-feedback): the utilization counter's
  // reading of the job after it ran a while (while sharing: its rate x its
  // solo utilization, plus noise), the solo utilization the policy inferred
  // from it (InferSoloUtil), and how often it has been migrated.
  bool observed = false;
  double observed_util = 0;    // inferred solo utilization, valid only when observed
  int migrations = 0;
  double observed_reading = 0; // the counter's reading, valid only when observed
  double gpu_request = 1;      // share of each GPU the job requested (the trace's; slot packs by it)
  bool alone = false;          // ran out of memory once: from then on runs alone (exclusive)
  // profiling (in place): the job's measured window (alone on its GPUs) just
  // ended; in this round, and only in it, the policy may move it to GPUs
  // where it fits by its measurement (the simulator sets it at the window's
  // end, clears it after the round). Jobs measured earlier are never moved.
  bool newly_measured = false;
  // The utilization predictive-feedback decides by: the observation once there
  // is one, else the prediction.
  double Estimate() const { return observed ? observed_util : predicted_util; }
};

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual double now() const = 0;
  virtual const std::vector<GpuState>& gpus() const = 0;
  virtual const JobInfo& job(int j) const = 0;
  // Queued jobs to consider this round, in submit order (used by the default
  // VisitCandidates; a view may override VisitCandidates instead).
  virtual const std::vector<int>& candidates() const {
    static const std::vector<int> kNone;
    return kNone;
  }
  // Calls visit(job) for the candidates in order until visit returns false.
  virtual void VisitCandidates(const std::function<bool(int)>& visit) const {
    for (int j : candidates())
      if (!visit(j)) return;
  }
  // Lower bounds over every job of the run (the least memory, predicted and
  // profiled utilization): lets a policy skip GPUs that could not take even
  // the smallest job. The default (all zero) skips nothing that could fit.
  virtual const JobInfo& smallest_job() const {
    static const JobInfo kZero = [] {
      JobInfo j{1, 0, 0, true, 0};
      j.gpu_request = 0;
      return j;
    }();
    return kZero;
  }
  virtual const InterferenceModel& model() const = 0;
};

// Start `job` on `gpus` (exactly its num_gpus distinct GPUs). exclusive: no
// other job may join those GPUs while it runs there. run_alone_s > 0 (needs
// exclusive): a profiling run; after run_alone_s the job leaves the GPUs and
// returns to the queue, profiled (its progress is kept).
// migrate: `job` is running; it leaves its GPUs and restarts on `gpus` from
// its last checkpoint (the progress since is lost; SimConfig::checkpoint_s).
// profile_in_place (with run_alone_s): after the profiling window the job
// stays on its GPUs, profiled, and the GPUs are no longer exclusive.
// profile_discard (with run_alone_s): a profiling run on a dedicated pool:
// the run's progress is discarded (the job restarts from where it was) and it
// may use fewer GPUs than num_gpus (one sample of its per-GPU utilization).
struct Placement {
  int job = -1;
  std::vector<int> gpus;
  bool exclusive = false;
  double run_alone_s = 0;
  bool migrate = false;
  bool profile_in_place = false;
  bool profile_discard = false;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::vector<Placement> Schedule(const ClusterView& view) = 0;
};

struct PolicyOptions {
  double cap = 100;            // predictive/profiling: max sum of utilization per GPU, percent
  double max_slowdown = 0.25;  // interference-aware: every job's predicted rate >= 1 - this
  double profile_s = 60;       // profiling: the measured window of the solo profiling run
  double profile_warmup_s = 10;  // profiling: solo warm-up before the window (not measured)
  int max_failures = 256;      // jobs a round may fail to place before it stops (backfill depth)
  int max_migrations = 1;      // predictive-feedback, profiling (in place): migrations per job at most
  // The hysteresis of predictive-feedback and of profiling (in place): a GPU
  // is migrated from only when its residents' estimates sum above cap +
  // migrate_z * observe_noise_pct * sqrt(measured residents), i.e. when the
  // excess is unlikely (z sd) to be the measurements' noise. observe_noise_pct
  // is the sd the policy assumes for one measurement, percent points (the
  // simulator passes its --measure-noise); 0 = migrate at any excess.
  double observe_noise_pct = 0;
  double migrate_z = 2;
  // profiling-pool: the share of the GPUs (those with the most memory, lowest
  // ids first; at least one) kept for profiling runs; the other GPUs run jobs.
  double profile_pool_fraction = 0.05;
};

// How many GPUs of a `num_gpus` cluster profiling-pool keeps for profiling:
// round(fraction x num_gpus), at least 1, less than num_gpus (0 for a one-GPU
// cluster).
int ProfilePoolSize(int num_gpus, double fraction);

// The solo utilization behind a counter reading taken while the job shared
// its GPUs: the least u in [reading, 100] with reading = u x rate(u), rate
// being the model's rate of the job (the least over its GPUs) among the other
// residents of each GPU (`others[g]`: their utilizations as the scheduler
// estimates them). Alone (no others) that is the reading itself. When the
// device is saturated the reading cannot tell u apart and the answer is the
// least consistent u (or 100). Percent.
double InferSoloUtil(const InterferenceModel& m, double reading, const std::vector<std::vector<double>>& others);

struct PolicyRow {
  const char* name;
  const char* description;
  bool needs_predictions;
  std::unique_ptr<Policy> (*make)(const PolicyOptions&);
  bool observes_running;  // decides by observations of running jobs (the simulator makes them)
};

// The table of policies, in the order reports list them.
const std::vector<PolicyRow>& Policies();
const PolicyRow* FindPolicy(const std::string& name);

}  // namespace gpucast::sim
