// Event-driven cluster simulator. Deterministic for a seed: jobs get their
// workload from a hash of (seed, job id), events at equal times are processed
// in a fixed order, and nothing depends on wall-clock time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/cluster.h"
#include "sim/interference.h"
#include "sim/policy.h"
#include "sim/trace.h"
#include "sim/workload.h"

namespace gpucast::sim {

struct SimConfig {
  std::string policy = "slot";
  PolicyOptions options;
  uint64_t seed = 1;
  std::string predictions = "none";  // where predicted utilization came from (label only)
  std::string memory_predictions = "none";  // where predicted memory came from (label only)
  std::string arrivals = "trace";    // how the trace's arrivals were resampled (label only)
  double load_scale = 1;             // --load-factor the arrivals were compressed by (label only)
  // Optional: workload index per trace job (same order as trace.jobs); empty =
  // AssignWorkloads. Tests use it to pin workloads.
  std::vector<int> workload_of_job;
  // Measurement model (profiling windows and feedback observations): a reading
  // of the utilization counter is clamp(rate x true + N(0, measure_noise_pct),
  // 0, 100), rate the job's progress rate at that moment (1 alone), the normal
  // draw seeded by (seed, job id, kind of measurement).
  double measure_noise_pct = 5;
  // Observation of running jobs (policies with observes_running): after this
  // many seconds of running (its warm-up plus a measured window).
  double observe_after_s = 70;
  // The relative error of a running job's progress rate as the observer sees
  // it (its step count over the window against its solo step time): the rate
  // seen is rate x (1 + N(0, rate_noise)). An assumption (docs/simulator.md).
  double rate_noise = 0.05;
  // Checkpoints: a job checkpoints every checkpoint_s solo-seconds of progress
  // (every so many iterations). A migrated or out-of-memory job restarts from
  // its last checkpoint: the progress since is lost.
  double checkpoint_s = 1800;
  // A job whose GPU's resident jobs need more memory than it has (true peaks)
  // crashes this long after it started there (its memory grows over its first
  // iterations), unless it left before.
  double oom_after_s = 10;
  // Restart cost: a job that restarts from a checkpoint (a migration, a
  // re-queue after profiling-exclusive's window or an out-of-memory crash)
  // spends this many seconds on its GPUs before it progresses again (loading
  // the checkpoint, warming up): solo-seconds of work added to what it has
  // left, counted in restart_gpu_s. 0: free restarts.
  double restart_s = 0;
  // Recurring jobs: this share of jobs (a seeded draw per job) ran before
  // with the same graph, so the scheduler knows their utilization from that
  // earlier observation: their prediction is true + N(0, measure_noise_pct),
  // clamped, with that measurement's 80% interval (+-1.2816 sd: a belief of
  // sd measure_noise_pct, PredictionBelief), and their memory the measured one.
  // Only the prediction-driven policies see it (the baselines never read
  // predictions).
  double recurring = 0;
  // Workload per job: "size-aware" (default: a multi-GPU job draws only
  // workloads whose task is trained data parallel in the measured sources,
  // DataParallelWorkload) or "uniform" (every job draws from every row).
  std::string workload_mix = "size-aware";
  // Called now and then with (simulated time, jobs done, jobs total).
  std::function<void(double, int64_t, int64_t)> progress;
};

struct JobRecord {
  int64_t id = 0;
  double submit_s = 0, start_s = -1, end_s = -1, duration_s = 0;
  int num_gpus = 1;
  int workload = -1;
  double true_util = 0, predicted_util = 0;
  std::vector<int> gpus;      // last placement
  std::string status;         // "done", "never_fits" (with reason in note)
  std::string note;
  double run_start_s = -1;    // first start of a real run (after any profiling run)
  double work_window_s = 0;   // solo-seconds of progress made within [first submit, last submit]
  double measured_util = NAN; // profiling measurement or the solo utilization inferred from an observation, percent
  int migrations = 0;
  double mem_mib = 0;         // true memory need per GPU (the workload's measured), MiB
  double sched_mem_mib = 0;   // memory per GPU the scheduler packed by (JobInfo::mem_mib), MiB
  int ooms = 0;               // out-of-memory crashes
  double work_trace_window_s = 0;  // solo-seconds of progress within [first submit, last submit]
  bool recurring = false;          // its graph ran before (SimConfig::recurring)
  double predicted_low = NAN, predicted_high = NAN;  // the interval the scheduler saw, percent
  int64_t source_id = -1;     // the trace job a resampled job copies (TraceJob::source_id)
  double observed_reading = NAN;  // the counter's reading behind measured_util (feedback), percent
};

// One job on one GPU for one interval: placements.csv.
struct PlacementRecord {
  int job = -1;                // index into SimResult::jobs
  int gpu = -1;
  double start_s = 0, end_s = -1;
  bool profile = false;        // kind: profile (solo profiling run) or run
  bool discard = false;        // a profile run whose progress is discarded (profiling-pool): pool-profile
};

struct UtilPoint {
  double t_s;       // time since the first submit
  double util_pct;  // cluster utilization over [t_s, next t_s): mean over GPUs of busy_g
  double useful_pct = 0;  // useful work rate: 100 sum_jobs rate u/100 num_gpus / GPUs
  double queued = 0;      // jobs waiting in the queue
};

struct SimResult {
  std::string policy, trace;
  uint64_t seed = 0;
  std::string predictions;       // SimConfig::predictions
  bool uses_predictions = false; // the policy decides by predictions
  int num_gpus = 0;
  std::string cluster;
  double cluster_utilization = 0;  // percent, see docs/simulator.md
  // Solo-equivalent utilization, percent: 100 * sum over done jobs of
  // true_util/100 * duration * num_gpus / (num_gpus_cluster * makespan). Equal to
  // cluster_utilization when nothing shares; unlike it, not inflated by jobs
  // that merely run longer side by side.
  double work_utilization = 0;
  double jct_mean_s = 0, jct_p50_s = 0, jct_p95_s = 0, jct_p99_s = 0;
  double queue_mean_s = 0, makespan_s = 0;  // queue: submit -> start of the real run
  // Useful work (docs/simulator.md): 100 * sum_jobs true_util/100 * num_gpus *
  // solo-seconds of progress within the window / (GPUs * window).
  double useful_work_utilization = 0;
  // The most any policy could reach on that window (an upper bound).
  double ideal_work_utilization = 0;
  // The window [first submit, window end]: it ends at the last submit at which
  // an ideal scheduler would still have a backlog (CapacityWindow): "capacity";
  // if it never has one, at the last submit: "demand".
  std::string bound_kind = "demand";
  double window_s = 0;              // window end - first submit
  double trace_window_s = 0;        // last submit - first submit
  // The same two metrics over [first submit, last submit] (the earlier
  // headline; ends in a drained tail when the trace's end is quiet).
  double useful_work_trace_window = 0, ideal_work_trace_window = 0;
  double load_factor = 0;           // sum duration * num_gpus / (GPUs * trace window)
  int64_t migrations = 0;
  double lost_progress_s = 0;       // solo-seconds lost to migrations (restart from a checkpoint, x num_gpus)
  double restart_gpu_s = 0;         // restart cost paid (SimConfig::restart_s x num_gpus per restart)
  int64_t restarts = 0;             // restarts charged
  // The useful work the restart cost took from the window: restart_s x
  // true_util/100 x num_gpus of every restart charged before the window's end
  // (a charge is added to the job's remaining work, so useful work, which
  // credits duration - remaining, loses exactly this), solo GPU-seconds; and
  // as points of useful_work_utilization (/ (GPUs * window) x 100). Measured
  // in the run itself, on its own schedule: the cost of the charge without the
  // run-to-run change a different schedule makes (docs/simulator.md, Restarts).
  double restart_work_gpu_s = 0;
  double restart_work_utilization = 0;
  int64_t jobs_recurring = 0;       // jobs whose graph ran before (SimConfig::recurring)
  std::string workload_mix;         // SimConfig::workload_mix
  double restart_s = 0, recurring = 0;  // SimConfig's
  // The cap the capped policies packed by (PolicyOptions): "sum" (the paper's
  // rule, sum <= options.cap) or "capacity" (<= 100 x the physics' work
  // capacity), and its value on the policies' physics (EffectiveCap).
  std::string cap_rule = "sum";
  double cap = 100;
  double interval_z = 0;  // PolicyOptions::interval_z (summary.json has it only when > 0)
  bool admit_by_physics = false;  // PolicyOptions::admit_by_physics (summary.json has it only when set)
  // The most jobs a policy co-located on one GPU (PolicyOptions::max_jobs_per_gpu; 0: no limit).
  int max_jobs_per_gpu = 0;
  int64_t oom_events = 0;           // out-of-memory crashes
  double oom_lost_gpu_s = 0;        // solo-seconds x GPUs lost to them
  int pool_gpus = 0;                // profiling-pool: GPUs kept for profiling
  int64_t jobs_observed = 0;
  double mean_slowdown = 0;        // mean of (end - submit) / duration over done jobs
  double mean_run_slowdown = 0;    // mean of (end - start) / duration: interference (and profiling) only
  double profiling_gpu_s = 0;
  double busy_gpu_s = 0;           // integral of sum_g busy_g / 100 dt
  double shared_gpu_s = 0;         // GPU-seconds with two or more jobs resident
  int64_t jobs_total = 0, jobs_done = 0, jobs_never_fit = 0;
  int64_t trace_bad_lines = 0, trace_filtered = 0;
  int64_t events = 0;
  double pred_mae = 0;             // mean |predicted - true| utilization over jobs, percent
  double mem_pred_mae = 0;         // mean |predicted - true| memory over jobs, MiB
  std::string memory_predictions, arrivals;
  double load_scale = 1;
  int64_t trace_unmapped = 0;      // jobs of a trace type no measured workload stands for
  std::vector<JobRecord> jobs;
  std::vector<UtilPoint> series;   // step function of cluster utilization
  std::vector<PlacementRecord> placements;
};

// The end of the headline window: the last submit time T (> t0) at which the
// fluid backlog of an ideal scheduler is positive, i.e. some tau < T has
// A(T) - A(tau) > G (T - tau) (A below): demand submitted since tau exceeds
// what G GPUs could do, so the capacity bound binds at T. nullopt: never
// (the window is demand-bound). Jobs with num_gpus > G or never_fits are left out.
// capacity: the most work the cluster's GPUs do together, in GPUs' worth (the
// sum of their physics' InterferenceModel::WorkCapacity; <= 0: num_gpus).
std::optional<double> CapacityWindowEnd(const std::vector<JobRecord>& jobs, int num_gpus, double t0, double t_end,
                                        double capacity = 0);

// The upper bound of useful work on the window: for every cut tau in [0, W],
// work done by W <= A(tau) + G (W - tau), A(tau) = sum_j u_j g_j min(d_j, (tau - s_j)+)
// (no job runs faster than alone; a GPU is at most 100% busy). Returns the
// least such bound over tau, percent of G * W. Jobs with num_gpus > G are left out.
// With the capacity term a GPU does up to WorkCapacity GPUs' worth of work, and
// `capacity` (their sum; <= 0: num_gpus) replaces G in the bound; the percent
// stays of G * W (so it may exceed 100).
double IdealWorkUtilization(const std::vector<JobRecord>& jobs, int num_gpus, double t0, double t_end,
                            double capacity = 0);

// Runs `trace` on `cluster` under config.policy. Workloads must carry
// predictions when the policy needs them (error otherwise).
Result<SimResult> Simulate(const Trace& trace, const Cluster& cluster,
                           const std::vector<WorkloadProfile>& workloads,
                           const InterferenceModel& model, const SimConfig& config);

// Seeded workload index for a job: a SplitMix64 hash of (seed, job id) mod n.
int AssignWorkload(uint64_t seed, int64_t job_id, int num_workloads);

// Whether a workload's task is trained data parallel on several GPUs in the
// measured sources: Pollux's six jobs, each measured on up to 16 GPUs
// (pollux-t4 placements.csv; Qiao et al., OSDI'21, Table 1), matched by task:
// CIFAR-10 classification (EfficientNet, MobileNetV2, VGG on CIFAR-10, for
// cifar10's ResNet-18), ResNet50/ImageNet (imagenet), BERT/SQuAD (bert),
// NeuMF/MovieLens (ncf) and LSTM/Wikitext2 (the recurrent sequence model, for
// deepspeech2). PPO, TD3 (reinforcement learning), PointNet and DCGAN have no
// data-parallel measurement in the sources: one-GPU jobs only.
bool DataParallelWorkload(const WorkloadProfile& w);

// Every job's workload: the one its trace's job type names (TraceJob::job_type
// through MapGavelJobType: the row of that family at the nearest batch size,
// amp 0), else a seeded draw: AssignWorkload over every row, or, size-aware
// (size_aware and the job has several GPUs), over the rows of
// DataParallelWorkload (the same hash, mod their number). *unmapped counts
// jobs whose type maps to no workload row (they get a draw too).
std::vector<int> AssignWorkloads(const Trace& t, const std::vector<WorkloadProfile>& w, uint64_t seed,
                                 int64_t* unmapped, bool size_aware = false);

// Writes DIR/summary.json, DIR/jobs.csv, DIR/placements.csv, DIR/utilization.csv (creates DIR).
Status WriteResult(const SimResult& r, const std::vector<WorkloadProfile>& workloads,
                   const std::string& dir);

// summary.json's object as text (what WriteResult writes).
std::string SummaryJson(const SimResult& r);

}  // namespace gpucast::sim
