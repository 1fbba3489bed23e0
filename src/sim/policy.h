// Scheduling policies: each sees a read-only view of the cluster and returns
// typed placement decisions; only the simulator mutates state. The table in
// policy.cc (Policies()) lists them all: adding a policy is adding a row.
#pragma once

#include <functional>
#include <memory>
#include <optional>
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
  // The prediction's interval (percent; NaN: none): the predictor's own
  // statement of how sure it is (wider for unseen graphs, GPUs, unknown job
  // facts), the only unsureness signal a policy may use.
  double predicted_low = NAN, predicted_high = NAN;
  bool profiled = false;       // finished a profiling run
  double profiled_util = 0;    // measured utilization; valid only when profiled
  // Observed while running (predictive-feedback, predictive-hybrid): the
  // utilization counter's reading of the job after it ran a while (while
  // sharing: its rate x its solo utilization, plus noise), its progress rate
  // as its step counts show it, the estimate combined from them and the
  // prediction (CombineObservation), and how often it has been migrated.
  bool observed = false;
  double observed_util = 0;    // the estimate of its solo utilization after the observation (Observe), percent
  double observed_sd = 0;      // that estimate's standard deviation, points
  int migrations = 0;
  double observed_reading = 0; // the counter's reading, valid only when observed
  double observed_rate = 1;    // its progress rate seen from step counts when observed (1 = as fast as alone)
  double gpu_request = 1;      // share of each GPU the job requested (the trace's; slot packs by it)
  bool alone = false;          // ran out of memory once: from then on runs alone (exclusive)
  // profiling (in place): the job's measured window (alone on its GPUs) just
  // ended; in this round, and only in it, the policy may move it to GPUs
  // where it fits by its measurement (the simulator sets it at the window's
  // end, clears it after the round). Jobs measured earlier are never moved.
  bool newly_measured = false;
  // The utilization predictive-feedback decides by: the estimate after an
  // observation once there is one, else the prediction.
  double Estimate() const { return observed ? observed_util : predicted_util; }
  // Its standard deviation (points): the observation's posterior, else the
  // prediction's own (PredictionBelief).
  double EstimateSd() const;
};

// What a scheduler believes of a job's solo utilization: mean and standard
// deviation, percent points.
struct UtilBelief {
  double mean = 0;
  double sd = 0;
};

// The predictor's interval level (predict/predictor.h kDefaultIntervalLevel)
// and its normal quantile (80%: 1.2816).
inline constexpr double kPredictionLevel = 0.8;
inline constexpr double kPredictionIntervalZ = 1.2815515655446004;
// The sd of a belief that knows nothing of the utilization: uniform on
// [0, 100], 100 / sqrt(12).
inline constexpr double kUninformedSd = 28.867513459481287;

// The prediction as a belief: its interval [low, high] (the predictor's 80%
// interval) read as a normal one, sd = (high - low) / (2 x 1.2816); a
// zero-width interval (oracle) has sd 0; no interval (NaN) is no statement
// of confidence: kUninformedSd.
UtilBelief PredictionBelief(double predicted, double low, double high);

// One observation of a running job combined with what was believed before:
// the utilization counter read reading = rate x u + N(0, noise_sd) (percent),
// and the job's progress rate seen from its step counts, rate_obs (1 = as
// fast as alone; relative sd rate_sd). The observation's own estimate is
// reading / rate_obs, its sd by the delta method (a slow, shared job's
// reading says less: the counter of a saturated GPU is not read as a solo
// utilization). The prior is a mixture: the prediction's normal with the
// probability its interval states (kPredictionLevel), else uniform on
// [0, 100] (the prediction is wrong and says nothing). So an observation
// consistent with the prediction is combined with it by inverse-variance
// weights, and one far outside the interval replaces it. A prior of sd 0 is
// kept as it is; the mean is clamped to [0, 100].
UtilBelief CombineObservation(UtilBelief prior, double reading, double noise_sd, double rate_obs, double rate_sd);

// The margin for a job spanning g GPUs: it is slowed if any of its g GPUs is
// over-committed, so each GPU gets the normal quantile 1 - 0.5 / g of the
// GPU's summed uncertainty (0 for one GPU: the point estimate, as before; 0.67
// sd for 2 GPUs, 1.15 for 4, 1.53 for 8): the whole gang then fits with about
// the one-GPU job's chance.
double GangMarginZ(int g);

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
  // A view may then visit the jobs that arrived at this instant and were not
  // reached (arrived_now): a policy stops at its backfill depth
  // (PolicyOptions::max_failures) for the others, never for those.
  virtual void VisitCandidates(const std::function<bool(int)>& visit) const {
    for (int j : candidates())
      if (!visit(j)) return;
  }
  // Whether job j arrived at this instant (a newcomer this round).
  virtual bool arrived_now(int /*j*/) const { return false; }
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
  // The cap's rule. false (the paper's): the sum of utilization per GPU <= cap.
  // true (the capacity cap): <= 100 x the physics' work capacity
  // (InterferenceModel::WorkCapacity: c with the capacity term, 1 without),
  // `cap` unused. The paper's 100 is the time-slicing device's capacity: past a
  // sum of 100 it does no more work, only slows every job. With the capacity
  // term, share(E) = (1 + (E/c)^p)^(-1/p) is a smooth min(1, c/E) and a GPU's
  // work E share(E) a smooth min(E, c), whose corner is at E = c: the same
  // point of the fitted curve that 100 is of time-slicing's (EffectiveCap).
  bool cap_by_capacity = false;
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
  // predictive-hybrid: a job whose prediction's sd (PredictionBelief) is at
  // most this many points is placed at once by its prediction; others are
  // measured first, in place (as profiling). The simulator's default is the
  // instrument's noise (--measure-noise, 5): a prediction at least as precise
  // as the measurement it would replace is used instead of it.
  double confident_sd = 5;
  // profiling-pool: the share of the GPUs (those with the most memory, lowest
  // ids first; at least one) kept for profiling runs; the other GPUs run jobs.
  double profile_pool_fraction = 0.05;
  // The most jobs a policy co-locates on one GPU (0: no limit): a placement
  // or migration never brings a GPU above it (a job running alone counts
  // one). The default is the most jobs the physics was measured on
  // (kMeasuredJobsPerGpu, pairs in every source): the instrument does not
  // credit co-location degrees no measurement supports.
  int max_jobs_per_gpu = kMeasuredJobsPerGpu;
  // predictive, predictive-spread: the margin on the prediction's interval.
  // 0 (the default, the paper's): the point predictions' sum within the cap.
  // z > 0: a job joins an occupied GPU only when Σ predicted + z sqrt(Σ sd²) of
  // the GPU's residents and the newcomer stays within the cap, each sd the one
  // its prediction's interval states (PredictionBelief: the 80% interval read
  // as a normal's; a zero-width interval, oracle's, 0; no interval,
  // kUninformedSd), i.e. a one-sided z bound on the GPU's true sum. A prediction
  // source that states its noise (noisy:SD) is then packed the less densely
  // the noisier it is.
  double interval_z = 0;
  // predictive: admit by the physics instead of a cap (true): a job joins an
  // occupied GPU when the fitted interference model, fed the predictions, keeps
  // every job there at rate >= 1 - max_slowdown (interference-aware's
  // admission), the fullest such GPU first (best fit, as predictive packs),
  // empty GPUs last. false (the default): the cap's rule.
  bool admit_by_physics = false;
};

// The cap a capped policy packs by with physics m: o.cap under the paper's
// rule, 100 x m.WorkCapacity() under the capacity cap
// (PolicyOptions::cap_by_capacity; 120 for the RTX 3090 fit, c = 1.2). The
// policies call it with the view's model (ClusterView::model(), the physics
// interference-aware admits by: the RTX 3090 fit on every GPU type), so on a
// mixed cluster it is one cap for all GPUs, not each type's own fit.
double EffectiveCap(const PolicyOptions& o, const InterferenceModel& m);

// The cap rule's names (`--cap-rule` of simulate and serve): "sum" is
// PolicyOptions::cap_by_capacity false, "capacity" true. ParseCapRule: nullopt
// for any other name.
std::optional<bool> ParseCapRule(const std::string& name);
const char* CapRuleName(bool cap_by_capacity);

// How many GPUs of a `num_gpus` cluster profiling-pool keeps for profiling:
// round(fraction x num_gpus), at least 1, less than num_gpus (0 for a one-GPU
// cluster).
int ProfilePoolSize(int num_gpus, double fraction);


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
