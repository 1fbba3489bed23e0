// The service's closed loop: observed utilization in (POST
// /v1/jobs/{id}/observations, the DCGM scraper), shown with each job and fed
// to the scheduler, and the predictor file reloaded without a restart
// (SIGHUP, POST /v1/admin/reload) with rate-limited log lines.
// docs/operations.md. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "service/dcgm.h"
#include "service/engine.h"
#include "service/jobs.h"
#include "service/observations.h"
#include "service/uploads.h"
#include "util/status.h"

namespace gpucast::service {

// Caps of the closed loop (gpucast serve --max-observations, --observed-graph-quota-bytes).
struct LoopLimits {
  int64_t max_observations = 10000000;              // observations stored in all (507 over it)
  size_t observed_graph_quota_bytes = 1ull << 30;   // uploaded graphs kept for training (DB.observed/)
};

class ClosedLoop {
 public:
  // Opens the observations table in `db_path`, gives restored running jobs
  // their observed means, drops kept graphs no observed job names, and
  // starts the DCGM scraper if `dcgm_urls` name any.
  static Result<std::unique_ptr<ClosedLoop>> Start(const std::string& db_path, Jobs* jobs, UploadStore* uploads,
                                                   PredictionEngine* engine,
                                                   const std::vector<std::string>& dcgm_urls,
                                                   double dcgm_interval_s, const LoopLimits& limits = {});
  ~ClosedLoop();

  struct Added {
    Observation shown;      // as stored (the stored one for a replayed Idempotency-Key)
    bool replayed = false;
    double predicted = 0;   // the job's prediction
  };
  // POST /v1/jobs/{id}/observations. Errors set *http_status: 404 no job,
  // 409 a cancelled job (it did not run as predicted: its measurement would
  // teach the predictor something false), 422 a reused Idempotency-Key, 429
  // the job's observation cap, 422 its samples cap, 507 --max-observations,
  // 500 storage.
  Result<Added> Add(int64_t job_id, Observation o, int* http_status);
  // observed_util, observed_samples, share_pct, overuse of job `id` into `j`.
  void AddObserved(int64_t id, nlohmann::json* j);

  // Re-reads the predictor file; logs the outcome with `why` (at most one
  // line per outcome per kLogEveryS, with the count of those not logged) and
  // counts it in /metrics; on error the old predictor keeps serving.
  Status Reload(const std::string& why);
  static constexpr double kLogEveryS = 10;

  const LoopMetrics& metrics() const { return metrics_; }
  // Bytes of uploaded graphs kept for training (tests).
  size_t observed_graph_bytes() const { return observed_->bytes(); }

 private:
  ClosedLoop(Jobs* jobs, UploadStore* uploads, PredictionEngine* engine, std::string db_path,
             std::unique_ptr<ObservationStore> store)
      : jobs_(jobs), uploads_(uploads), engine_(engine), db_path_(std::move(db_path)), store_(std::move(store)) {}
  Status Store(const Job& job, Observation o, int* http_status);
  void OnDcgmScrape(const std::vector<std::vector<DcgmSample>>& pages, const std::vector<bool>& ok);

  Jobs* jobs_;
  UploadStore* uploads_;
  PredictionEngine* engine_;
  const std::string db_path_;
  std::unique_ptr<ObservationStore> store_;
  std::unique_ptr<ObservedGraphs> observed_;
  LoopMetrics metrics_;

  struct LogLimit {  // one outcome's log lines
    std::chrono::steady_clock::time_point last{};
    int64_t quiet = 0;  // outcomes not logged since the last line
  };
  std::mutex log_mu_;
  LogLimit reload_ok_, reload_failed_;  // GUARDED_BY(log_mu_)

  std::unique_ptr<DcgmScraper> dcgm_;  // last: stopped first, it calls into the members above
};

}  // namespace gpucast::service
