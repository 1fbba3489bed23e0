// Measured utilization of submitted jobs (POST /v1/jobs/{id}/observations,
// the DCGM scraper), stored durably beside the jobs, and the closed loop's
// metrics (docs/api.md "Observations", docs/operations.md).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "util/status.h"

struct sqlite3;

namespace gpucast::service {

struct Observation {
  double gpu_util = 0;   // percent, [0, 100]
  std::string source;    // one of kObservationSources (predict/observations.h)
  int64_t samples = 1;   // >= 1
  std::string gpu;       // GPU spec key, "" = not stated
  // The job's share of its GPU in percent (Slurm: shard K/N -> 100 K / N, mps
  // P -> P), nullopt = not stated; with it, gpu_util > share_pct +
  // overuse_margin marks the observation as overuse.
  std::optional<double> share_pct;
  double overuse_margin = kDefaultOveruseMargin;  // percentage points
  std::string idem_key;  // the request's Idempotency-Key (not in the body); "" = none
  bool gpu_filled = false;  // gpu was not in the request: taken from the job's placement

  static constexpr double kDefaultOveruseMargin = 20;
  bool Overuse() const { return share_pct && gpu_util > *share_pct + overuse_margin; }
};

// Caps on what one job's observations may add up to (docs/security.md).
inline constexpr int64_t kMaxSamplesPerObservation = 1000000;  // 11.6 days of 1 Hz samples
inline constexpr int64_t kMaxSamplesPerJob = 100000000;
inline constexpr int64_t kMaxObservationsPerJob = 10000;

// Parses {"gpu_util": 0-100, "source": "nvidia-smi"|"dcgm"|"slurm",
// "samples": N in [1, kMaxSamplesPerObservation] (default 1), "gpu": "TYPE" (optional, a GPU of the spec
// table), "share_pct": 0-100 (optional), "overuse_margin": 0-100 (optional,
// default 20, only with share_pct)}. Errors name the field:
// "field 'gpu_util': want a number in [0, 100], got 140".
Result<Observation> ParseObservationJson(const std::string& body);

// What a job's observations add up to.
struct ObservedSummary {
  double util = 0;           // sample-weighted mean, percent
  int64_t samples = 0;
  int64_t observations = 0;  // records
  std::optional<double> share_pct;  // of the latest observation that stated one
  bool overuse = false;             // some observation was overuse (Observation::Overuse)
};

// One stored observation.
struct StoredObservation {
  int64_t id = 0;
  int64_t job_id = 0;
  Observation o;  // o.gpu as stored (filled in from the placement where the request had none)
  double observed_at = 0;
};

// What ObservationStore::Add did.
struct AddOutcome {
  enum Kind {
    kStored,    // a new row
    kReplayed,  // o.idem_key was stored already with the same job and values: nothing added
    kConflict,  // o.idem_key was stored already with another job or other values: nothing added
    kOverCap,   // the job has kMaxObservationsPerJob observations or would pass kMaxSamplesPerJob: nothing added
    kFull,      // the store holds --max-observations observations: nothing added
  } kind = kStored;
  std::string why;        // kOverCap: which cap, in words for the client
  StoredObservation row;  // the new row, or the one stored earlier under the key
};

// The observations table (predict/observations.h kObservationsSchemaSql) in
// the service's database, through its own connection: WAL journal,
// synchronous=FULL, so Add returns only once the row is on disk. Each job's
// summary (sample-weighted mean, samples, count, share, overuse) is kept in
// the table observation_summary, updated in the same transaction as each
// insert (a running mean: a post never re-reads the job's observations).
// Thread-safe.
class ObservationStore {
 public:
  static Result<std::unique_ptr<ObservationStore>> Open(const std::string& db_path);
  ~ObservationStore();
  ObservationStore(const ObservationStore&) = delete;
  ObservationStore& operator=(const ObservationStore&) = delete;

  // Stores one observation of job `job_id` at unix time `now` (committed when
  // it returns). With o.idem_key set, a key stored before is not stored again
  // (kReplayed when job and values are equal, else kConflict): a retried
  // Slurm epilog adds its samples once.
  Result<AddOutcome> Add(int64_t job_id, const Observation& o, double now);
  // At most `n` observations in all (gpucast serve --max-observations); Add
  // answers kFull beyond it.
  void SetMaxObservations(int64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    max_total_ = n;
  }
  // The uploads (SHA-256 hex) named by jobs that have observations: the
  // graphs DB.observed/ must keep for training.
  Result<std::set<std::string>> ObservedUploads();

  // The observation stored under an Idempotency-Key; nullopt if none.
  Result<std::optional<StoredObservation>> FindByKey(const std::string& idem_key);
  // nullopt when the job has no observation.
  Result<std::optional<ObservedSummary>> Summary(int64_t job_id);
  // Summaries of the jobs among `ids` that have observations.
  Result<std::map<int64_t, ObservedSummary>> Summaries(const std::vector<int64_t>& ids);

 private:
  ObservationStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status SqlError(const std::string& what);
  Result<std::optional<StoredObservation>> FindByKeyLocked(const std::string& idem_key);
  Result<std::optional<ObservedSummary>> SummaryLocked(int64_t job_id);
  std::mutex mu_;
  sqlite3* db_;  // GUARDED_BY(mu_)
  std::string path_;
  int64_t total_ = 0;  // GUARDED_BY(mu_): observations stored
  int64_t max_total_ = INT64_MAX;  // GUARDED_BY(mu_)
};

// Metrics of the closed loop, rendered after the service's own (Prometheus
// text format 0.0.4). Thread-safe.
class LoopMetrics {
 public:
  // Upper bounds of gpucast_prediction_abs_error buckets, percentage points.
  static constexpr std::array<double, 10> kErrorBuckets = {1, 2, 5, 10, 15, 20, 30, 50, 75, 100};

  // One stored observation of `source`; abs_error = |predicted - observed| of its job.
  void ObserveObservation(const std::string& source, double abs_error);
  // One stored observation above its job's share by more than the margin.
  void ObserveOveruse(const std::string& source);
  // One predictor reload: ok, or kept the old predictor.
  void ObserveReload(bool ok);
  // One DCGM scrape: outcome "ok" or "error"; per GPU sample: "attributed",
  // "idle" (no job), "shared" (several jobs, nothing attributed), "multi_gpu".
  void ObserveScrape(bool ok);
  void ObserveDcgmSample(const std::string& outcome);

  std::string Render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> by_source_;
  std::map<std::string, int64_t> overuse_by_source_;
  std::array<int64_t, kErrorBuckets.size()> err_counts_{};  // non-cumulative
  int64_t err_count_ = 0;
  double err_sum_ = 0;
  int64_t reloads_ = 0, reload_failures_ = 0;
  int64_t scrapes_ok_ = 0, scrapes_failed_ = 0;
  std::map<std::string, int64_t> dcgm_samples_;
};

}  // namespace gpucast::service
