// A fitted utilization model and the Predictor that the CLI and the HTTP
// service use: features -> regressor -> utilization percent with an interval.
//
// The regressor is fit on log1p(gpu_util%) (squared error there is what
// RMSLE measures); predictions are mapped back with expm1 and clamped to
// [0, 100]. The interval is the regressor's member spread mapped the same way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/cost.h"
#include "features/features.h"
#include "predict/dataset.h"
#include "predict/regressor.h"
#include "util/status.h"

namespace gpucast {

struct UtilPrediction {
  double util = 0;  // percent, 0-100
  double low = 0;   // interval, percent: low <= util <= high always (docs/predictor.md)
  double high = 0;
};

// Defaults chosen by the leave-one-workload-out evaluation (docs/predictor.md).
// kDefaultFeatureSet is DefaultFeatureSet(kDefaultAlgo) (regressor.cc's table).
inline constexpr const char* kDefaultAlgo = "forest";
inline constexpr const char* kDefaultFeatureSet = "paper";

// Feature subsets for the ablation. "all" = every schema feature; the others
// are named groups of the schema (see FeatureSetNames / docs/predictor.md).
std::vector<std::string> FeatureSetNames();
// Indices into `names` of the set; error for an unknown set or an empty selection.
Result<std::vector<size_t>> SelectFeatures(const std::vector<std::string>& names, const std::string& set);

// A regressor plus the columns of the schema it reads.
class UtilModel {
 public:
  // Fits on the rows of x (full schema width, `names`) with utilization labels in percent.
  static Result<UtilModel> Fit(const Matrix& x, const std::vector<double>& util,
                               const std::vector<std::string>& names, const std::vector<size_t>& columns, const std::string& algo,
                               const nlohmann::json& params, uint64_t seed);
  // Rows of full schema width.
  Result<std::vector<UtilPrediction>> Predict(const Matrix& x) const;

  const std::string& algo() const { return algo_; }
  const std::vector<size_t>& columns() const { return columns_; }
  const Regressor& regressor() const { return *regressor_; }

  // Build from parts (model file loading).
  UtilModel(std::string algo, std::vector<size_t> columns, std::shared_ptr<Regressor> r)
      : algo_(std::move(algo)), columns_(std::move(columns)), regressor_(std::move(r)) {}

 private:
  std::string algo_;
  std::vector<size_t> columns_;
  std::shared_ptr<Regressor> regressor_;  // shared: a UtilModel is cheap to copy, immutable after Fit
};

struct PredictorInfo {
  std::string schema_name;
  int schema_version = 0;
  std::vector<std::string> feature_names;  // full schema
  std::string feature_set = "all";
  std::string training_digest;             // "fnv1a64:<hex>" of the training CSV bytes
  std::string training_csv;
  size_t training_rows = 0;
  std::string gpu;                         // GPU type of the labels
  uint64_t seed = 0;
};

struct PredictResult {
  UtilPrediction prediction;
  std::vector<double> features;  // full schema, the values used
};

// A trained predictor. Thread-safe for concurrent Predict calls.
class Predictor {
 public:
  // Fits `algo` (default parameters) on the whole dataset.
  static Result<Predictor> Train(const Dataset& data, const std::string& algo, uint64_t seed,
                                 const std::string& feature_set = "all");
  // Reads a model file; a feature schema other than CurrentFeatureSchema() is an error.
  static Result<Predictor> Load(const std::string& path);
  Status Save(const std::string& path) const;

  // Features of the job's graph(s) and configuration -> utilization.
  Result<PredictResult> Predict(const std::vector<CostReport>& reports, const JobConfig& job) const;
  // Rows of features in the schema order.
  Result<std::vector<UtilPrediction>> PredictFeatures(const Matrix& x) const { return model_.Predict(x); }

  const PredictorInfo& info() const { return info_; }
  const UtilModel& model() const { return model_; }

  Predictor(PredictorInfo info, UtilModel model) : info_(std::move(info)), model_(std::move(model)) {}

 private:
  PredictorInfo info_;
  UtilModel model_;
};

}  // namespace gpucast
