// A fitted utilization model and the Predictor that the CLI and the HTTP
// service use: features -> regressor -> utilization percent with an interval.
//
// The regressor is fit on log1p(gpu_util%) (squared error there is what
// RMSLE measures); predictions are mapped back with expm1 and clamped to
// [0, 100]. The interval is the regressor's member spread mapped the same way.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/cost.h"
#include "features/features.h"
#include "features/interconnect.h"
#include "predict/data_parallel.h"
#include "predict/dataset.h"
#include "predict/memory_model.h"
#include "predict/regressor.h"
#include "util/status.h"

namespace gpucast {

struct UtilPrediction {
  double util = 0;  // percent, 0-100
  double low = 0;   // interval, percent: low <= util <= high always (docs/predictor.md)
  double high = 0;
};

// A candidate of a selection: algorithm and feature set.
struct Candidate {
  std::string algo;
  std::string feature_set;
  std::string ToString() const { return algo + "/" + feature_set; }
};

// "auto": not a regressor but a selection made on the training rows only:
// every AutoCandidates() entry is scored by leave-one-workload-out over the
// training rows (SelectionScore: the median over workloads of each
// workload's RMSLE), the lowest is fit on all of them and its residuals of
// that pass calibrate the interval. Its honest error is the NESTED
// evaluation of that procedure (evaluate --algo auto, docs/predictor.md).
inline constexpr const char* kAutoAlgo = "auto";
// Every algorithm of the table on its own default feature set.
std::vector<Candidate> AutoCandidates();
// Score of a candidate from its leave-one-workload-out log residuals: the
// median over workloads of the workload's RMSLE (one workload that no input
// explains, such as PointNet's CPU-bound parsing, cannot decide the choice;
// docs/predictor.md gives the pooled-RMSLE criterion's result too).
double SelectionScore(const std::vector<double>& residuals, const std::vector<int>& group);

// The default algorithm (see docs/predictor.md for the nested evaluation
// that chose it). kDefaultFeatureSet: the set passed along with it (auto
// ignores it: each candidate has its own).
inline constexpr const char* kDefaultAlgo = "auto";
inline constexpr const char* kDefaultFeatureSet = "all";
// Central probability of the interval when none is asked for.
inline constexpr double kDefaultIntervalLevel = 0.8;

// Feature subsets for the ablation. "all" = every schema feature; the others
// are named groups of the schema (see FeatureSetNames / docs/predictor.md).
std::vector<std::string> FeatureSetNames();
// Indices into `names` of the set; error for an unknown set or an empty selection.
Result<std::vector<size_t>> SelectFeatures(const std::vector<std::string>& names, const std::string& set);

// What UtilModel::Fit needs beyond features and labels.
struct FitOptions {
  std::vector<double> step_s;  // per row measured step time (s), NaN = unknown; empty = none
  // Per row workload id. With >= 3 workloads the interval is calibrated:
  // split-conformal on the log1p residuals of a leave-one-workload-out pass
  // over the training rows (each workload predicted by a model that never saw
  // it). Empty or calibrate = false: the regressor's own member spread.
  std::vector<int> group;
  bool calibrate = true;
};

// A regressor plus the columns of the schema it reads, and its calibration.
class UtilModel {
 public:
  // Fits on the rows of x (full schema width, `names`) with utilization labels in percent.
  static Result<UtilModel> Fit(const Matrix& x, const std::vector<double>& util,
                               const std::vector<std::string>& names, const std::vector<size_t>& columns,
                               const std::string& algo, const nlohmann::json& params, uint64_t seed,
                               const FitOptions& options = {});
  // Rows of full schema width. level in (0, 1): central probability of the
  // interval (calibrated models honour it; uncalibrated ones use their own).
  Result<std::vector<UtilPrediction>> Predict(const Matrix& x, double level = kDefaultIntervalLevel) const;

  const std::string& algo() const { return algo_; }
  const std::vector<size_t>& columns() const { return columns_; }
  const Regressor& regressor() const { return *regressor_; }
  // Sorted log1p(measured) - log1p(predicted) of the calibration pass; empty = uncalibrated.
  const std::vector<double>& calibration() const { return calibration_; }
  void set_calibration(std::vector<double> residuals);
  // Seen-workload correction: for each graph of the training rows (keyed by
  // the `params` feature, the same for every row of one network), the mean
  // in-sample log1p residual shrunk by n/(n+1) (sum / (n + 1)); added to a
  // prediction whose `params` equals a key. Workloads not in the training
  // rows (every lowo test row) get nothing: it only lets measured or
  // observed rows of a workload (or of a GPU) correct that workload.
  const std::vector<std::pair<double, double>>& offsets() const { return offsets_; }
  void set_offsets(std::vector<std::pair<double, double>> offsets, size_t params_column);
  size_t params_column() const { return params_column_; }

  // Build from parts (model file loading).
  UtilModel(std::string algo, std::vector<size_t> columns, std::shared_ptr<Regressor> r)
      : algo_(std::move(algo)), columns_(std::move(columns)), regressor_(std::move(r)) {}

 private:
  std::string algo_;
  std::vector<size_t> columns_;
  std::shared_ptr<Regressor> regressor_;  // shared: a UtilModel is cheap to copy, immutable after Fit
  std::vector<double> calibration_;
  std::vector<std::pair<double, double>> offsets_;  // (params, log1p offset)
  size_t params_column_ = static_cast<size_t>(-1);
};

// Leave-one-group-out log1p residuals (measured - predicted, row order) of
// `algo` on the rows of x, each group predicted by a model fit (uncalibrated)
// on the other groups. REQUIRES >= 2 groups.
Result<std::vector<double>> GroupedResiduals(const Matrix& x, const std::vector<double>& util,
                                             const std::vector<std::string>& names,
                                             const std::vector<size_t>& columns, const std::string& algo,
                                             const nlohmann::json& params, uint64_t seed,
                                             const FitOptions& options);

// The conformal interval offsets (log1p space) of sorted residuals at `level`:
// the floor((n+1)(1-level)/2)-th and ceil((n+1)(1+level)/2)-th order
// statistics, clamped to the sample.
std::pair<double, double> ConformalOffsets(const std::vector<double>& sorted, double level);

struct PredictorInfo {
  std::string schema_name;
  int schema_version = 0;
  std::vector<std::string> feature_names;  // full schema
  std::string feature_set = "all";
  std::string training_digest;             // "fnv1a64:<hex>" of the training CSV bytes
  std::string training_csv;
  size_t training_rows = 0;
  std::string gpu;                         // default GPU of predictions (the labels' default GPU)
  uint64_t seed = 0;
  std::vector<std::string> targets;        // utilization counters of the training rows (kTarget*)
  // auto: each candidate's leave-one-workload-out RMSLE on the training rows (empty otherwise).
  std::vector<std::pair<std::string, double>> selection;
};

struct PredictResult {
  UtilPrediction prediction;     // one rank's counter when job.gpus > 1 (data_parallel below)
  std::vector<double> features;  // full schema, the values used (one rank's)
  MemoryPrediction memory;       // GPU memory of the job (NaN: no memory model)
  // Data-parallel jobs (job.gpus > 1, or nodes / interconnect given): the
  // single-GPU answer the transform started from, the links and the transform's
  // quantities (predict/data_parallel.h). Empty for a single-GPU job.
  std::optional<UtilPrediction> single_gpu;
  std::optional<Interconnect> interconnect;
  std::optional<DataParallelResult> data_parallel;
  MemoryEstimate memory_estimate;  // its physical parts (features/memory.h), MiB
};

// A trained predictor. Thread-safe for concurrent Predict calls.
class Predictor {
 public:
  // Fits `algo` (default parameters; kAutoAlgo: the selection above) on the whole dataset.
  // `on_candidate`, when set, is called with each scored selection candidate and its score.
  static Result<Predictor> Train(const Dataset& data, const std::string& algo, uint64_t seed,
                                 const std::string& feature_set = "all",
                                 const std::function<void(const std::string&, double)>& on_candidate = {});
  // Reads a model file; a feature schema other than CurrentFeatureSchema() is an error.
  static Result<Predictor> Load(const std::string& path);
  Status Save(const std::string& path) const;

  // Features of the job's graph(s) and configuration -> utilization, and its
  // GPU memory (memory model: EstimateMemory of the same reports and job;
  // NaN without a memory model). The job's gpu / mig_profile select the spec
  // the features, the physics and the memory capacity use. With job.gpus > 1
  // the answer is one rank's of a data-parallel job: the single-GPU prediction
  // transformed by the all-reduce model (predict/data_parallel.h) on the step
  // time of the physics step model (StepModel); the whole job in one call.
  Result<PredictResult> Predict(const std::vector<CostReport>& reports, const JobConfig& job,
                                double level = kDefaultIntervalLevel) const;
  // The fitted physics that gives step and busy time (data-parallel jobs): the
  // model itself when it is `physics`, else a physics model fitted beside it on
  // the same rows by Train (stored as `step_model`); nullptr when neither (a file
  // written before data-parallel support).
  const UtilModel* StepModel() const;
  void set_step_model(UtilModel m) { step_model_ = std::move(m); }
  const std::optional<UtilModel>& step_model() const { return step_model_; }
  // Rows of features in the schema order.
  Result<std::vector<UtilPrediction>> PredictFeatures(const Matrix& x,
                                                      double level = kDefaultIntervalLevel) const {
    return model_.Predict(x, level);
  }
  // Which counter a prediction for this GPU/MIG slice stands for (kTarget*):
  // DCGM GR-engine-active on a MIG slice, nvidia-smi utilization.gpu otherwise.
  static std::string TargetFor(const std::string& mig_profile);

  const PredictorInfo& info() const { return info_; }
  const UtilModel& model() const { return model_; }
  // The GPU memory model (memory_model.h); nullptr when the training rows had
  // no memory column (then PredictResult::memory is NaN).
  const MemoryModel* memory() const { return memory_ ? &*memory_ : nullptr; }
  void set_memory(std::optional<MemoryModel> m) { memory_ = std::move(m); }

  Predictor(PredictorInfo info, UtilModel model) : info_(std::move(info)), model_(std::move(model)) {}

 private:
  PredictorInfo info_;
  UtilModel model_;
  std::optional<UtilModel> step_model_;  // physics beside a non-physics model (StepModel)
  std::optional<MemoryModel> memory_;
};

}  // namespace gpucast
