// The service's seam to the predictor: JobSpec in, Prediction out. The real
// engine (NewPredictorEngine) analyses the job's graphs through a
// GraphAnalyzer (analysis.h: limits, pool, content cache) and runs the
// trained predictor; tests of the HTTP and storage logic may use a fake.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "service/analysis.h"
#include "service/job.h"
#include "util/status.h"

namespace gpucast::service {

// How a prediction went, beside its value.
struct PredictInfo {
  // In: caps the analysis time below the analyzer's limit (> 0; the client's
  // deadline), and the cache scope (analysis.h AnalysisInput::cache_scope).
  double max_seconds = 0;
  std::string cache_scope = "";
  // Out:
  bool cache_hit = false;                          // every analysed graph came from the cache
  AnalysisFailure failure = AnalysisFailure::kNone;  // on error: which kind (the HTTP status follows it)
};

class PredictionEngine {
 public:
  virtual ~PredictionEngine() = default;
  // Predicts the utilization of `spec` on spec.gpu, reading the graph of its
  // i-th network (spec.Parts()[i]) from model_fds[i], an open regular file the
  // caller checked (the part's name is used in messages). Thread-safe.
  // Errors name the model as the client named it, and the reason.
  virtual Result<Prediction> Predict(const JobSpec& spec, const std::vector<int>& model_fds, PredictInfo* info) = 0;
  // One line for /healthz, without file paths ("random_forest, 52 training rows, RTX3090").
  virtual std::string Describe() const = 0;
  // Reads the predictor file again and swaps it in (service/reload.h); on
  // error the old predictor keeps serving. Engines that cannot reload say so.
  virtual Status Reload() { return Status::Error("this prediction engine cannot reload its predictor"); }
};

// The real engine: the predictor file written by `gpucast train`, analysing
// through `analyzer` (shared, so that it outlives a reload with its cache).
Result<std::unique_ptr<PredictionEngine>> NewPredictorEngine(const std::string& predictor_file,
                                                             std::shared_ptr<GraphAnalyzer> analyzer);

}  // namespace gpucast::service
