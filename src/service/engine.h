// The service's seam to the predictor: JobSpec in, Prediction out. The real
// engine (NewPredictorEngine) loads and costs the job's graph through a cache
// and runs the trained predictor; tests of the HTTP and storage logic may use
// a fake.
#pragma once

#include <memory>
#include <string>

#include "service/job.h"
#include "util/status.h"

namespace gpucast::service {

class PredictionEngine {
 public:
  virtual ~PredictionEngine() = default;
  // Predicts the utilization of `spec` (reads spec.model). Thread-safe.
  // *cache_hit tells whether the analysed graph came from the cache.
  // Errors name the model file and the reason.
  virtual Result<Prediction> Predict(const JobSpec& spec, bool* cache_hit) = 0;
  // One line for /healthz ("predictor /x/model.json (random_forest, 52 rows)").
  virtual std::string Describe() const = 0;
};

// The real engine: the predictor file written by `gpucast train`, and a cache
// of analysed graphs keyed by (path, mtime, size, batch, amp, dims) holding
// at most `cache_entries` graphs.
Result<std::unique_ptr<PredictionEngine>> NewPredictorEngine(const std::string& predictor_file,
                                                             size_t cache_entries = 256);

}  // namespace gpucast::service
