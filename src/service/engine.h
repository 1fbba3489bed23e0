// The service's seam to the predictor: JobSpec in, Prediction out. The real
// engine (NewPredictorEngine) loads and costs the job's graph through a cache
// and runs the trained predictor; tests of the HTTP and storage logic may use
// a fake.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "service/job.h"
#include "util/status.h"

namespace gpucast::service {

class PredictionEngine {
 public:
  virtual ~PredictionEngine() = default;
  // Predicts the utilization of `spec`, reading the graph of its i-th
  // network (spec.Parts()[i]) from model_fds[i], an open regular file the
  // caller checked (the part's path names it in messages). Thread-safe.
  // *cache_hit tells whether every analysed graph came from the cache.
  // Errors name the model file and the reason.
  virtual Result<Prediction> Predict(const JobSpec& spec, const std::vector<int>& model_fds, bool* cache_hit) = 0;
  // One line for /healthz, without file paths ("random_forest, 52 training rows, RTX3090").
  virtual std::string Describe() const = 0;
  // Reads the predictor file again and swaps it in (service/reload.h); on
  // error the old predictor keeps serving. Engines that cannot reload say so.
  virtual Status Reload() { return Status::Error("this prediction engine cannot reload its predictor"); }
};

// The real engine: the predictor file written by `gpucast train`, and a cache
// of analysed graphs keyed by (device, inode, mtime, size, batch, amp, dims) holding
// at most `cache_entries` graphs.
Result<std::unique_ptr<PredictionEngine>> NewPredictorEngine(const std::string& predictor_file,
                                                             size_t cache_entries = 256);

}  // namespace gpucast::service
