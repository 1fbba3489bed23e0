#include "predict/predictor.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "predict/model_file.h"

namespace gpucast {
namespace {

// Which ablation group a schema feature belongs to (see docs/predictor.md).
enum class Group { kPaper, kPhysical, kJob };

// The paper's graph features (plus the AMP flag, part of every job's
// configuration) and the job attributes of gpucast-features; every other
// schema feature (per-category FLOPs, bytes, the roofline step estimate, log
// scales) counts as "physical".
constexpr const char* kPaperFeatures[] = {"total_flops", "params", "n_conv_layers", "n_linear_layers",
                                          "n_activation_layers", "n_other_layers", "batch_size", "amp"};
constexpr const char* kJobFeatures[] = {"loader_workers", "loader_workers_known", "data_on_gpu",
                                        "data_on_gpu_known", "rl_env", "rl_env_known"};

Group GroupOf(const std::string& name) {
  for (const char* n : kPaperFeatures)
    if (name == n) return Group::kPaper;
  for (const char* n : kJobFeatures)
    if (name == n) return Group::kJob;
  return Group::kPhysical;
}

struct FeatureSetRow {
  const char* name;
  bool paper, physical, job;
};
constexpr FeatureSetRow kFeatureSets[] = {
    {"paper", true, false, false},
    {"paper+job", true, false, true},  // + job attributes, no physical features
    {"paper+physical", true, true, false},
    {"all", true, true, true},  // + job attributes
};

double ToTarget(double util) { return std::log1p(util); }
double FromTarget(double t) { return std::clamp(std::expm1(t), 0.0, 100.0); }

}  // namespace

std::vector<std::string> FeatureSetNames() {
  std::vector<std::string> out;
  for (const auto& r : kFeatureSets) out.push_back(r.name);
  return out;
}

Result<std::vector<size_t>> SelectFeatures(const std::vector<std::string>& names, const std::string& set) {
  for (const auto& r : kFeatureSets) {
    if (set != r.name) continue;
    std::vector<size_t> cols;
    for (size_t i = 0; i < names.size(); ++i) {
      Group g = GroupOf(names[i]);
      if ((g == Group::kPaper && r.paper) || (g == Group::kPhysical && r.physical) ||
          (g == Group::kJob && r.job))
        cols.push_back(i);
    }
    if (cols.empty()) return Status::Error("feature set '" + set + "' selects no feature of the schema");
    return cols;
  }
  std::string known;
  for (const auto& r : kFeatureSets) known += (known.empty() ? "" : ", ") + std::string(r.name);
  return Status::Error("unknown feature set '" + set + "' (known: " + known + ")");
}

namespace {
Matrix SelectColumns(const Matrix& x, const std::vector<size_t>& cols) {
  Matrix out;
  out.reserve(x.size());
  for (const auto& row : x) {
    std::vector<double> r;
    r.reserve(cols.size());
    for (size_t c : cols) r.push_back(c < row.size() ? row[c] : std::nan(""));
    out.push_back(std::move(r));
  }
  return out;
}
}  // namespace

Result<UtilModel> UtilModel::Fit(const Matrix& x, const std::vector<double>& util,
                                 const std::vector<std::string>& names, const std::vector<size_t>& columns,
                                 const std::string& algo, const nlohmann::json& params, uint64_t seed) {
  ASSIGN_OR_RETURN(std::unique_ptr<Regressor> r, MakeRegressor(algo));
  RETURN_IF_ERROR(r->Configure(params));
  std::vector<std::string> used;
  for (size_t c : columns) {
    if (c >= names.size()) return Status::Error(algo + ": column " + std::to_string(c) + " outside the schema");
    used.push_back(names[c]);
  }
  RETURN_IF_ERROR(r->SetFeatureNames(used));
  std::vector<double> y;
  for (double u : util) {
    if (!(u >= 0 && u <= 100)) return Status::Error(algo + ": label outside 0-100");
    y.push_back(ToTarget(u));
  }
  RETURN_IF_ERROR(r->Fit(SelectColumns(x, columns), y, seed));
  return UtilModel(algo, columns, std::shared_ptr<Regressor>(std::move(r)));
}

Result<std::vector<UtilPrediction>> UtilModel::Predict(const Matrix& x) const {
  ASSIGN_OR_RETURN(std::vector<Estimate> est, regressor_->Predict(SelectColumns(x, columns_)));
  std::vector<UtilPrediction> out;
  for (const Estimate& e : est) {
    // Every regressor keeps low <= mean <= high; enforced here too (the contract of UtilPrediction).
    double u = FromTarget(e.mean);
    out.push_back({u, std::min(u, FromTarget(e.low)), std::max(u, FromTarget(e.high))});
  }
  return out;
}

Result<Predictor> Predictor::Train(const Dataset& data, const std::string& algo, uint64_t seed,
                                   const std::string& feature_set) {
  ASSIGN_OR_RETURN(std::vector<size_t> cols, SelectFeatures(data.feature_names, feature_set));
  ASSIGN_OR_RETURN(UtilModel m, UtilModel::Fit(data.x, data.Labels(), data.feature_names, cols, algo, nullptr, seed));
  PredictorInfo info;
  info.schema_name = data.schema_name;
  info.schema_version = data.schema_version;
  info.feature_names = data.feature_names;
  info.feature_set = feature_set;
  info.training_digest = data.digest;
  info.training_csv = data.csv_path;
  info.training_rows = data.rows.size();
  info.gpu = data.gpu;
  info.seed = seed;
  return Predictor(std::move(info), std::move(m));
}

Result<PredictResult> Predictor::Predict(const std::vector<CostReport>& reports, const JobConfig& job) const {
  if (reports.empty()) return Status::Error("predict: no graph");
  ASSIGN_OR_RETURN(std::vector<double> f, ComputeFeatures(reports, job));
  if (f.size() != info_.feature_names.size())
    return Status::Error("predict: features have " + std::to_string(f.size()) + " values, model wants " +
                         std::to_string(info_.feature_names.size()));
  ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, model_.Predict({f}));
  return PredictResult{p[0], std::move(f)};
}

Result<Predictor> Predictor::Load(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBytes(path));
  return ParseModelFile(text, path, CurrentFeatureSchema());
}

Status Predictor::Save(const std::string& path) const {
  ASSIGN_OR_RETURN(nlohmann::json j, ModelFileJson(*this));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::Error(path + ": cannot write");
  out << j.dump() << "\n";
  out.close();
  if (!out) return Status::Error(path + ": write failed");
  return Status::Ok();
}

}  // namespace gpucast
