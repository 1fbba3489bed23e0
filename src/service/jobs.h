// The service's jobs and the cluster they run on: submissions predicted and
// stored durably (committed before the answer), scheduling passes with the
// simulator's policies, cancellation, and what a client sees of each job
// (its placement, or why it is still pending). Logs one line per submission,
// placement, finish and cancellation. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "service/metrics.h"
#include "service/predictions.h"
#include "service/request.h"
#include "service/scheduler.h"
#include "service/store.h"
#include "service/uploads.h"
#include "util/status.h"

namespace gpucast::service {

// Caps on the jobs the service holds (gpucast serve --max-jobs, --max-queued-jobs).
struct JobLimits {
  int64_t max_jobs = 1000000;       // job records stored, in every state (507 over it)
  int64_t max_queued_jobs = 10000;  // jobs waiting at once (503 over it)
};

// The live jobs (queued and running) are kept in memory beside the store, so
// that a scheduling pass, a submission and a job's "pending" reason read no
// rows: their cost does not grow with the queue (issue 31 item 9; the store
// stays the durable copy, written before memory changes).
class Jobs {
 public:
  Jobs(JobStore* store, std::unique_ptr<Scheduler> scheduler, Predictions* predictions, UploadStore* uploads,
       Metrics* metrics, JobLimits limits = {})
      : store_(store),
        scheduler_(std::move(scheduler)),
        predictions_(predictions),
        uploads_(uploads),
        metrics_(metrics),
        limits_(limits) {}

  // At start: jobs that were running hold their GPUs again; the queued and
  // running jobs are read into memory once.
  Status Restore();

  struct Submitted {
    Job job;                // as stored, with its placement if the pass placed it
    bool replayed = false;  // an Idempotency-Key seen before: the job created then
    std::string pending;    // why it still waits ("" once placed)
  };
  // POST /v1/jobs: opens the request's models, refuses a job that could never
  // fit, predicts, stores (an Idempotency-Key repeats its job; with another
  // request it is 422), then runs a scheduling pass. Errors set *http_status.
  Result<Submitted> Submit(const JobRequest& req, std::string_view body, const std::string& idempotency_key,
                           int* http_status);

  // A job and, if queued, why it waits. nullopt: no such job.
  Result<std::optional<std::pair<Job, std::string>>> Get(int64_t id);
  // Jobs in id order (GET /v1/jobs), each with its pending reason if queued.
  Result<std::vector<std::pair<Job, std::string>>> List(std::optional<JobState> state, int64_t after, int64_t limit);
  // DELETE /v1/jobs/{id}: 404 no job, 409 already done or cancelled.
  Result<Job> Cancel(int64_t id, int* http_status);
  // The queued and running jobs (in id order), from memory.
  std::vector<Job> LiveJobs();

  // One scheduling pass at unix time `now`: finished jobs leave, queued ones are placed.
  Status Tick(double now);
  // Runs passes every `period_s` and at once after Wake(), until Stop().
  void Loop(double period_s);
  void Wake();
  void Stop();

  // GET /v1/cluster: the scheduler's view, the policy and the queue.
  Result<nlohmann::json> Cluster();
  // The scheduler's cluster view (the closed loop maps GPUs to jobs with it).
  nlohmann::json ClusterJson();
  // The cluster's GPU type ("" if the scheduler does not know it).
  std::string GpuType();
  // A running job's measured utilization, for the policies that use it.
  void Observe(int64_t id, double util);
  // Rows the store has (the closed loop reads jobs through it).
  JobStore* store() { return store_; }

 private:
  std::string PendingLocked(const Job& job);  // REQUIRES: mu_ held
  // 507 when --max-jobs jobs are stored, 503 when --max-queued-jobs wait. REQUIRES: mu_ held
  Status RoomLocked(int* http_status) const;

  JobStore* store_;
  std::mutex mu_;                         // serialises job state transitions and scheduler_
  std::unique_ptr<Scheduler> scheduler_;  // GUARDED_BY(mu_)
  Predictions* predictions_;
  UploadStore* uploads_;
  Metrics* metrics_;
  const JobLimits limits_;
  std::vector<Job> queued_;         // GUARDED_BY(mu_): as stored, in id (= submission) order
  std::map<int64_t, Job> running_;  // GUARDED_BY(mu_)
  int64_t stored_jobs_ = 0;         // GUARDED_BY(mu_): rows in the store
  std::condition_variable wake_;
  bool work_pending_ = false;  // GUARDED_BY(mu_)
  bool stopping_ = false;      // GUARDED_BY(mu_)
};

}  // namespace gpucast::service
