// The live cluster the service schedules onto: its GPUs, what runs where,
// and the placement policy. The service serialises all calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "service/job.h"
#include "sim/interference.h"
#include "util/status.h"

namespace gpucast::service {

struct Placement {
  int64_t job_id = 0;
  std::vector<int> gpus;  // GPU indices, size == job's gpus
  bool exclusive = false; // no other job may join these GPUs while it runs
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string PolicyName() const = 0;
  // GPUs in the cluster (constant).
  virtual int TotalGpus() const = 0;
  // Error naming the field if the job could not run even on an empty cluster
  // (more GPUs than exist, more memory than enough GPUs have).
  virtual Status CanEverFit(const JobSpec& spec) const = 0;
  // Where queued jobs (in submission order) go now. Changes nothing: the
  // service persists the decisions, then calls Start for each.
  virtual Result<std::vector<Placement>> Plan(const std::vector<Job>& queued, double now) = 0;
  // `job` (state running, placement set) now occupies its GPUs. Also used to
  // restore running jobs after a restart. Error if a GPU index is out of range.
  virtual Status Start(const Job& job) = 0;
  // The job left its GPUs (done or cancelled); no-op if it holds none.
  virtual void Finish(int64_t job_id) = 0;
  // The running job's measured utilization (mean of its observations so far,
  // percent): policies that decide by observations (predictive-feedback) use
  // it instead of the prediction. No-op for a job that holds no GPU.
  virtual void Observe(int64_t /*job_id*/, double /*util*/) {}
  // GET /v1/cluster: GPUs, what runs where, predicted and assumed load.
  virtual nlohmann::json ClusterJson() const = 0;
  // The cluster's GPU type (canonical spec-table name): what the service
  // predicts for when a job names none. "" = not known (test doubles).
  virtual std::string GpuType() const { return ""; }
  // Every GPU type of the cluster, in the spec's order (several on a mixed
  // cluster, where GpuType() is ""; empty: not known).
  virtual std::vector<std::string> GpuTypes() const { return {}; }
  // Why `job` (queued, `ahead` queued jobs before it) was not placed by the
  // last pass, for its submitter.
  virtual std::string WhyWaiting(const Job& job, int64_t ahead) const {
    return "waiting for " + std::to_string(job.spec.gpus) + " GPU(s) the policy '" + PolicyName() +
           "' can place it on (" + std::to_string(ahead) + " queued before it)";
  }
};

// The live service's scheduler: GPUs from a simulator cluster SPEC
// (sim/cluster.h, e.g. "4x RTX3090") and a policy from the simulator's table
// (sim/policy.h), run on a view built from the service's jobs. Policies that
// need a live utilization measurement (profiling) are refused, and so is a
// cluster whose GPU type the spec table does not know (a typo names the
// closest known). A mixed cluster (node groups of several GPU types) places
// each job only on GPUs of its own type (JobSpec::gpu).
// `interference_data_dir`: where lucid/ lives (for interference-aware and the
// capacity cap). `cap_rule`: the capped policies' rule, as `gpucast simulate
// --cap-rule`: "sum" (the paper's: a GPU's summed utilization <= 100) or
// "capacity" (<= 100 x the work capacity fitted on the measured pairs,
// sim::EffectiveCap); anything else is an error naming the choices.
// `max_jobs_per_gpu`: the most jobs placed on one GPU, as `gpucast simulate
// --max-jobs-per-gpu` (default: the most the physics was measured on, pairs;
// 0: no limit; negative is an error).
Result<std::unique_ptr<Scheduler>> NewPolicyScheduler(const std::string& cluster_spec,
                                                      const std::string& policy,
                                                      const std::string& data_dir,
                                                      const std::string& cap_rule = "sum",
                                                      int max_jobs_per_gpu = sim::kMeasuredJobsPerGpu);

}  // namespace gpucast::service
