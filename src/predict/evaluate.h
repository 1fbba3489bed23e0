// Cross-validated evaluation of the utilization predictors, and the
// out-of-sample predictions the cluster simulator uses.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "predict/dataset.h"
#include "predict/metrics.h"
#include "predict/predictor.h"
#include "util/status.h"

namespace gpucast {

struct Split {
  // kLogo: leave one GPU type out (one fold per GPU type of the rows).
  enum Kind { kRandom, kLowo, kKfold, kLargestBatch, kGpu, kConfig, kLogo } kind = kLowo;
  double test_fraction = 0.2;  // kRandom
  int k = 5;                   // kKfold
  std::string gpu;             // kGpu, kConfig
  std::string ToString() const;
};
// "random:0.2" (0 < f < 1), "lowo", "kfold:K" (K >= 2), "largest-batch" (one
// fold: every workload's rows at its largest batch held out), "gpu:NAME" (one
// fold: every row measured on GPU NAME held out, trained on the others),
// "loco:NAME" (leave one configuration out: one fold per MIG profile of the
// rows of GPU NAME, trained on every other row).
Result<Split> ParseSplit(const std::string& text);

struct Fold {
  std::vector<size_t> train;
  std::vector<size_t> test;
};
// Folds over n rows. lowo: one fold per workload (group id), holding out all
// its rows; random: one fold, round(f*n) test rows; kfold: K shuffled folds.
// `seed` shuffles random/kfold; lowo ignores it. Error if a fold is empty.
// (largest-batch, gpu and loco need the dataset: the overload below.)
Result<std::vector<Fold>> MakeFolds(const Split& split, const std::vector<int>& group, uint64_t seed);
Result<std::vector<Fold>> MakeFolds(const Split& split, const Dataset& data, uint64_t seed);

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
  std::string gpu;          // the row's GPU and MIG profile
  std::string mig_profile;
  // GPU memory, MiB: measured (Lucid gmem, MIGProfiler gmem_mib; NaN where the
  // row has no memory column) and predicted by the memory model fit on the
  // same training rows, with its interval (NaN when those rows had no memory).
  // The calibrated interval at each of kTradeoffLevels (same model, same
  // calibration scores): the width/coverage trade-off of one run.
  std::vector<std::pair<double, double>> tradeoff = {};
  // Step time of one training step, ms: measured (NaN: the row has none) and
  // predicted with its interval (NaN: the model predicts none).
  double step_measured_ms = std::nan("");
  double step_predicted_ms = std::nan("");
  double step_low_ms = std::nan("");
  double step_high_ms = std::nan("");
  double mem_measured = std::nan("");
  double mem_predicted = std::nan("");
  double mem_low = std::nan("");
  double mem_high = std::nan("");
};

// Fits `algo` on each fold's training rows (columns of `feature_set`, step
// times as auxiliary target, interval calibrated inside the training rows
// when `calibrate`) and predicts its test rows; one prediction per test row,
// fold order.
Result<std::vector<RowPrediction>> CrossValidatedPredictions(const Dataset& data,
                                                             const std::vector<Fold>& folds,
                                                             const std::string& algo, uint64_t seed,
                                                             const std::string& feature_set = "all",
                                                             bool calibrate = true, double level = 0.8,
                                                             IntervalMethod interval_method = kDefaultIntervalMethod,
                                                             const RegressorOptions& regressor = {});

// Nested cross-validation: in each outer fold, every candidate is scored by
// leave-one-workload-out over the fold's TRAINING rows only; the one with the
// lowest SelectionScore (predictor.h) is fit on the training rows (its inner residuals
// calibrate the interval) and predicts the test rows. `selected` gets the
// winner of each outer fold. Both make every model with `regressor`.
Result<std::vector<RowPrediction>> NestedPredictions(const Dataset& data, const std::vector<Fold>& folds,
                                                     const std::vector<Candidate>& candidates, uint64_t seed,
                                                     double level, std::vector<std::string>* selected,
                                                     bool select_by_pooled_rmsle = false,
                                                     IntervalMethod interval_method = kDefaultIntervalMethod,
                                                     const RegressorOptions& regressor = {});

// For the cluster simulator: each measured row predicted by `algo` trained
// on every other workload (leave one workload out), on the algorithm's default
// feature set (DefaultFeatureSet, regressor.h). The utilization interval is
// the calibrated 80% one of `evaluate --split lowo` (each fold calibrated by a
// leave-one-workload-out pass over its own training rows), which the
// simulator's predictive-hybrid reads as each prediction's sd; before, it was
// the regressor's own uncalibrated spread plus the risk band, whose width did
// not rank the errors (docs/predictor.md, "Does the width rank the errors").
// Memory (mem_*): the memory model fit on the other workloads' rows, with its
// calibrated 80% interval (pack by mem_high).
Result<std::vector<RowPrediction>> LeaveOneWorkloadOutPredictions(const Dataset& data,
                                                                  const std::string& algo,
                                                                  uint64_t seed);

struct Scores {
  double rmsle = 0, mae = 0, r2 = 0, coverage = 0;
};
Result<Scores> Score(const std::vector<RowPrediction>& preds);

// GPU memory of the rows that have both a measured and a predicted value
// (rows = how many; the rest NaN when none).
struct MemoryScores {
  size_t rows = 0;
  double mape = std::nan("");         // mean |predicted - measured| / measured
  double mae_mib = std::nan("");      // mean |predicted - measured|, MiB
  double high_above = std::nan("");   // fraction of rows whose interval high end >= measured
  double coverage = std::nan("");     // fraction inside [low, high]
  double median_width_mib = std::nan("");
};
MemoryScores ScoreMemory(const std::vector<RowPrediction>& preds);

struct WorkloadError {
  std::string workload;  // "model/dataset"
  size_t predictions = 0;
  double rmsle = 0, mae = 0, mean_measured = 0, mean_predicted = 0;
  MemoryScores memory;                   // this workload's rows
  double mem_mean_measured = std::nan(""), mem_mean_predicted = std::nan("");  // MiB
};

struct EvalOptions {
  std::string algo = "forest";
  Split split;
  int repeats = 20;  // seeds 0..repeats-1 (shuffles and model seeds)
  std::string feature_set = "all";
  uint64_t seed = 0;  // first seed
  bool calibrate = true;  // conformal intervals from the training rows (FitOptions)
  double level = 0.8;     // interval level
  IntervalMethod interval_method = kDefaultIntervalMethod;
  // Non-empty: nested selection among these (algo and feature_set unused).
  std::vector<Candidate> nested;
  // Nested selection criterion: false = SelectionScore (median per-workload
  // RMSLE, what `auto` uses), true = the pooled inner RMSLE.
  bool select_by_pooled_rmsle = false;
  RegressorOptions regressor;  // what every model fitted is made with (evaluate --tensor-core-split)
  int bootstrap = 2000;   // workload-bootstrap resamples for the RMSLE intervals
  // Called after each repeat with (repeats done, repeats) when set (progress).
  std::function<void(int, int)> on_repeat;
};

// A 90% interval of a statistic.
struct Interval90 {
  double low = 0, high = 0;
};

// Interval levels whose coverage and median width every evaluation reports.
inline constexpr double kTradeoffLevels[] = {0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95};
struct TradeoffPoint {
  double level = 0, coverage = 0, median_width = 0;  // width in points
};

struct EvalResult {
  EvalOptions options;
  MeanSd rmsle, mae, r2, coverage;  // over repeats (each repeat scores all its test rows)
  std::vector<WorkloadError> per_workload;  // pooled over repeats
  std::vector<RowPrediction> predictions;   // pooled over repeats
  // Predicting the training folds' mean of log1p(util) (the mean in log
  // space, the RMSLE-optimal constant), same folds, mean over repeats.
  double mean_baseline_rmsle = 0;
  // 5th-95th percentiles of the pooled RMSLE when the held-out units
  // (workloads; the MIG configurations when one workload is tested) are
  // resampled with replacement.
  Interval90 rmsle_ci, baseline_ci;
  double median_width = 0;          // median interval width (high - low), points
  // Coverage and median width at each of kTradeoffLevels, pooled over repeats
  // (empty without a conformal calibration).
  std::vector<TradeoffPoint> interval_tradeoff;
  std::vector<std::string> selected;  // nested: the winner of each outer fold, every repeat
  // GPU memory of the pooled predictions (one model, no selection: nested and
  // plain evaluations of a split give the same memory predictions), and the
  // MAPE of predicting the training rows' mean of log(memory), same folds.
  MemoryScores memory;
  double memory_baseline_mape = std::nan("");
  // Step time of the held-out rows that have one (pooled over repeats): per
  // GPU type of the rows, and all together ("" key).
  struct StepScore {
    std::string gpu;  // "" = all
    size_t rows = 0;
    double median_ape = std::nan("");  // median |predicted - measured| / measured
    double coverage = std::nan("");    // measured inside the step interval
    double median_width_ratio = std::nan("");  // median high / low
  };
  std::vector<StepScore> step;
  // Held-out step-only rows (no utilization: Pollux), with their step predictions.
  std::vector<RowPrediction> step_only;
};
Result<EvalResult> Evaluate(const Dataset& data, const EvalOptions& opts);

// RMSLE of rows drawn by resampling their units (`unit[i]` of prediction i)
// with replacement, `resamples` times (seeded): its 5th and 95th percentiles.
Interval90 BootstrapRmsle(const std::vector<double>& pred, const std::vector<double>& actual,
                          const std::vector<std::string>& unit, int resamples, uint64_t seed);

// A predicted-vs-measured scatter plot (SVG text), one colour per workload.
std::string PredictionPlotSvg(const std::vector<RowPrediction>& preds, const std::string& title);

}  // namespace gpucast
