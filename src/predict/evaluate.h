// Cross-validated evaluation of the utilization predictors, and the
// out-of-sample predictions the cluster simulator uses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "predict/dataset.h"
#include "predict/metrics.h"
#include "util/status.h"

namespace gpucast {

struct Split {
  enum Kind { kRandom, kLowo, kKfold } kind = kLowo;
  double test_fraction = 0.2;  // kRandom
  int k = 5;                   // kKfold
  std::string ToString() const;
};
// "random:0.2" (0 < f < 1), "lowo", "kfold:K" (K >= 2).
Result<Split> ParseSplit(const std::string& text);

struct Fold {
  std::vector<size_t> train;
  std::vector<size_t> test;
};
// Folds over n rows. lowo: one fold per workload (group id), holding out all
// its rows; random: one fold, round(f*n) test rows; kfold: K shuffled folds.
// `seed` shuffles random/kfold; lowo ignores it. Error if a fold is empty.
Result<std::vector<Fold>> MakeFolds(const Split& split, const std::vector<int>& group, uint64_t seed);

// One out-of-sample prediction of a measured row.
struct RowPrediction {
  std::string model;
  std::string dataset;
  int64_t batch = 0;
  bool amp = false;
  double measured = 0;   // gpu_util %, from the CSV
  double predicted = 0;  // %, from a model that never saw this row
  double low = 0;        // interval, %
  double high = 0;
  size_t row = 0;        // index in Dataset::rows
};

// Fits `algo` on each fold's training rows (columns of `feature_set`) and
// predicts its test rows; returns one prediction per test row, fold order.
Result<std::vector<RowPrediction>> CrossValidatedPredictions(const Dataset& data,
                                                             const std::vector<Fold>& folds,
                                                             const std::string& algo, uint64_t seed,
                                                             const std::string& feature_set = "all");

// For the cluster simulator: each measured row predicted by `algo` trained
// on every other workload (leave one workload out), on the algorithm's default
// feature set (DefaultFeatureSet, regressor.h).
Result<std::vector<RowPrediction>> LeaveOneWorkloadOutPredictions(const Dataset& data,
                                                                  const std::string& algo,
                                                                  uint64_t seed);

struct Scores {
  double rmsle = 0, mae = 0, r2 = 0, coverage = 0;
};
Result<Scores> Score(const std::vector<RowPrediction>& preds);

struct WorkloadError {
  std::string workload;  // "model/dataset"
  size_t predictions = 0;
  double rmsle = 0, mae = 0, mean_measured = 0, mean_predicted = 0;
};

struct EvalOptions {
  std::string algo = "forest";
  Split split;
  int repeats = 20;  // seeds 0..repeats-1 (shuffles and model seeds)
  std::string feature_set = "all";
  uint64_t seed = 0;  // first seed
};

struct EvalResult {
  EvalOptions options;
  MeanSd rmsle, mae, r2, coverage;  // over repeats (each repeat scores all its test rows)
  std::vector<WorkloadError> per_workload;  // pooled over repeats
  std::vector<RowPrediction> predictions;   // pooled over repeats
  double mean_baseline_rmsle = 0;  // predicting the training mean, same folds, mean over repeats
};
Result<EvalResult> Evaluate(const Dataset& data, const EvalOptions& opts);

// A predicted-vs-measured scatter plot (SVG text), one colour per workload.
std::string PredictionPlotSvg(const std::vector<RowPrediction>& preds, const std::string& title);

}  // namespace gpucast
