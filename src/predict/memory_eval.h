// Held-out evaluation of the GPU memory model alone (`gpucast evaluate
// --memory-only`; docs/predictor.md, "GPU memory"): each fold's model is fit on
// the training rows only (calibration included) and predicts the held-out rows,
// component by component.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "predict/dataset.h"
#include "predict/evaluate.h"
#include "predict/memory_model.h"
#include "util/status.h"

namespace gpucast {

struct MemoryRowPrediction {
  size_t row = 0;  // index in Dataset::rows
  std::string workload, gpu, mig_profile;
  int64_t batch = 0;
  bool amp = false;
  double measured = 0;  // MiB
  MemoryPrediction prediction;
  std::vector<std::pair<std::string, double>> components;  // MemoryModel::Components, MiB
  MemoryEstimate estimate;
  // The training workload whose held-out error set the fold's high end
  // (MemoryModel::high_set_by); "" when the fold's model is uncalibrated.
  std::string high_set_by;
};

// Scores of held-out memory predictions.
struct MemoryEvalScores {
  size_t rows = 0;
  double mape = std::nan("");              // mean |predicted - measured| / measured
  double mae_mib = std::nan("");
  double high_above = std::nan("");        // fraction of rows with high end >= measured
  double coverage = std::nan("");          // fraction inside [low, high]
  double median_width_mib = std::nan("");  // high - low
  double median_rel_width = std::nan("");  // median of (high - low) / point
  double median_high_margin = std::nan("");  // median of (high - point) / point
  double worst_under = std::nan("");       // largest (measured - high) / measured, <= 0 when every row holds
};
MemoryEvalScores ScoreMemoryRows(const std::vector<const MemoryRowPrediction*>& rows);

struct MemoryEvaluation {
  std::string split;
  double level = 0.8;
  std::vector<MemoryRowPrediction> rows;  // held-out rows with a measured memory, fold order
  MemoryEvalScores overall;
  std::vector<std::pair<std::string, MemoryEvalScores>> per_workload, per_gpu;  // sorted by name
};

// REQUIRES: data has one memory estimate per row. Rows without a measured
// memory are not predicted; a fold whose training rows hold fewer than 2 with
// memory is an error.
Result<MemoryEvaluation> EvaluateMemory(const Dataset& data, const Split& split, double level);

nlohmann::json MemoryEvaluationJson(const MemoryEvaluation& e);
nlohmann::json MemoryEstimateJson(const MemoryEstimate& e);

}  // namespace gpucast
