// Event-driven cluster simulator. Deterministic for a seed: jobs get their
// workload from a hash of (seed, job id), events at equal times are processed
// in a fixed order, and nothing depends on wall-clock time.
#pragma once

#include <cstdint>
#include <functional>
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
  // Optional: workload index per trace job (same order as trace.jobs); empty =
  // seeded assignment. Tests use it to pin workloads.
  std::vector<int> workload_of_job;
  // Measurement model (profiling windows and feedback observations): the
  // measured utilization is clamp(true + N(0, measure_noise_pct), 0, 100),
  // seeded by (seed, job id, kind of measurement).
  double measure_noise_pct = 5;
  // Observation of running jobs (policies with observes_running): after this
  // many seconds of running (its warm-up plus a measured window).
  double observe_after_s = 70;
  // Migration (checkpoint-restart): solo-seconds of progress a migrated job loses.
  double migrate_cost_s = 60;
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
  double measured_util = NAN; // profiling measurement or feedback observation, percent
  int migrations = 0;
};

// One job on one GPU for one interval: placements.csv.
struct PlacementRecord {
  int job = -1;                // index into SimResult::jobs
  int gpu = -1;
  double start_s = 0, end_s = -1;
  bool profile = false;        // kind: profile (solo profiling run) or run
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
  // solo-seconds of progress within [first submit, last submit] / (GPUs * window).
  double useful_work_utilization = 0;
  // The most any policy could reach on that window (an upper bound).
  double ideal_work_utilization = 0;
  double window_s = 0;              // last submit - first submit
  double load_factor = 0;           // sum duration * num_gpus / (GPUs * window)
  int64_t migrations = 0;
  double lost_progress_s = 0;       // solo-seconds lost to checkpoint-restarts (x num_gpus)
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
  std::vector<JobRecord> jobs;
  std::vector<UtilPoint> series;   // step function of cluster utilization
  std::vector<PlacementRecord> placements;
};

// The upper bound of useful work on the window: for every cut tau in [0, W],
// work done by W <= A(tau) + G (W - tau), A(tau) = sum_j u_j g_j min(d_j, (tau - s_j)+)
// (no job runs faster than alone; a GPU is at most 100% busy). Returns the
// least such bound over tau, percent of G * W. Jobs with num_gpus > G are left out.
double IdealWorkUtilization(const std::vector<JobRecord>& jobs, int num_gpus, double t0, double t_end);

// Runs `trace` on `cluster` under config.policy. Workloads must carry
// predictions when the policy needs them (error otherwise).
Result<SimResult> Simulate(const Trace& trace, const Cluster& cluster,
                           const std::vector<WorkloadProfile>& workloads,
                           const InterferenceModel& model, const SimConfig& config);

// Seeded workload index for a job: a SplitMix64 hash of (seed, job id) mod n.
int AssignWorkload(uint64_t seed, int64_t job_id, int num_workloads);

// Writes DIR/summary.json, DIR/jobs.csv, DIR/placements.csv, DIR/utilization.csv (creates DIR).
Status WriteResult(const SimResult& r, const std::vector<WorkloadProfile>& workloads,
                   const std::string& dir);

// summary.json's object as text (what WriteResult writes).
std::string SummaryJson(const SimResult& r);

}  // namespace gpucast::sim
