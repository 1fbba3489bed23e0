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
  // Optional: workload index per trace job (same order as trace.jobs); empty =
  // seeded assignment. Tests use it to pin workloads.
  std::vector<int> workload_of_job;
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
};

struct UtilPoint {
  double t_s;       // time since the first submit
  double util_pct;  // cluster utilization over [t_s, next t_s): mean over GPUs of busy_g
};

struct SimResult {
  std::string policy, trace;
  uint64_t seed = 0;
  int num_gpus = 0;
  std::string cluster;
  double cluster_utilization = 0;  // percent, see docs/simulator.md
  // Solo-equivalent utilization, percent: 100 * sum over done jobs of
  // true_util/100 * duration * num_gpus / (num_gpus_cluster * makespan). Equal to
  // cluster_utilization when nothing shares; unlike it, not inflated by jobs
  // that merely run longer side by side.
  double work_utilization = 0;
  double jct_mean_s = 0, jct_p50_s = 0, jct_p95_s = 0, jct_p99_s = 0;
  double queue_mean_s = 0, makespan_s = 0;
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
};

// Runs `trace` on `cluster` under config.policy. Workloads must carry
// predictions when the policy needs them (error otherwise).
Result<SimResult> Simulate(const Trace& trace, const Cluster& cluster,
                           const std::vector<WorkloadProfile>& workloads,
                           const InterferenceModel& model, const SimConfig& config);

// Seeded workload index for a job: a SplitMix64 hash of (seed, job id) mod n.
int AssignWorkload(uint64_t seed, int64_t job_id, int num_workloads);

// Writes DIR/summary.json, DIR/jobs.csv, DIR/utilization.csv (creates DIR).
Status WriteResult(const SimResult& r, const std::vector<WorkloadProfile>& workloads,
                   const std::string& dir);

// summary.json's object as text (what WriteResult writes).
std::string SummaryJson(const SimResult& r);

}  // namespace gpucast::sim
