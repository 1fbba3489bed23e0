// Regressors behind one small interface, and the one table of algorithms.
//
// A regressor is fit on a dense matrix (rows x features) and a target in
// whatever space the caller chose (the predictor fits log1p(util%)). Every
// regressor is an ensemble: Predict returns the ensemble mean and a central
// interval of the members' outputs (see docs/predictor.md for what each
// algorithm's members are).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace gpucast {

using Matrix = std::vector<std::vector<double>>;

struct Estimate {
  double mean = 0;  // point prediction
  double low = 0;   // lower end of the central `interval` fraction of member outputs
  double high = 0;
};

class Regressor {
 public:
  virtual ~Regressor() = default;
  virtual std::string Algo() const = 0;
  // Sets parameters from a JSON object; absent keys keep their defaults,
  // unknown keys and out-of-range values are errors naming the key.
  virtual Status Configure(const nlohmann::json& params) = 0;
  // Names of the columns of x (Fit/Predict) and of a loaded state, set before
  // Fit or Load. Regressors that read features by meaning (roofline) check
  // here that they are present; the others ignore them.
  virtual Status SetFeatureNames(const std::vector<std::string>& /*names*/) { return Status::Ok(); }
  // Features the regressor needs among those names (empty: any columns).
  virtual std::vector<std::string> RequiredFeatures() const { return {}; }
  virtual nlohmann::json Params() const = 0;
  // Optional auxiliary target, set before Fit: the measured wall time of one
  // training step of each row in seconds (NaN where unknown). Models that
  // use it (physics, hybrid) also fit step time and GPU-busy time
  // (util/100 * step); the others ignore it.
  virtual void SetStepTimes(const std::vector<double>& /*step_s*/) {}
  // Optional, set before Fit: the workload id of each training row. Models
  // with per-workload nuisance quantities (physics: the unknown input
  // pipeline's time per sample of each measured workload) use it; the
  // others ignore it. Absent: every row of one workload.
  virtual void SetGroups(const std::vector<int>& /*group*/) {}
  // REQUIRES: x rectangular, x.size() == y.size() >= 2, all finite (checked).
  virtual Status Fit(const Matrix& x, const std::vector<double>& y, uint64_t seed) = 0;
  // REQUIRES: fitted (or loaded); rows have the training column count (checked).
  virtual Result<std::vector<Estimate>> Predict(const Matrix& x) const = 0;
  // The fitted state (not the params); Load(Save()) predicts bit-for-bit the same.
  virtual Result<nlohmann::json> Save() const = 0;
  virtual Status Load(const nlohmann::json& state) = 0;
};

// Settings a model is made with (MakeRegressor, AlgoRow::make), passed to each model where it is
// made: two models of one process never share one. A model file records what they change (its
// params), so a loaded model needs none: the defaults, then the file's params and state.
struct RegressorOptions {
  // physics, and hybrid's physics: its tensor_core_split parameter starts at 1 (an experiment,
  // predict/physics.h; `train` / `evaluate --tensor-core-split`). Other algorithms ignore it.
  bool tensor_core_split = false;
};

struct AlgoRow {
  const char* name;
  const char* description;
  const char* feature_set;  // default feature set (chosen by the lowo evaluation, docs/predictor.md)
  std::unique_ptr<Regressor> (*make)(const RegressorOptions& options);
};

// The table of algorithms, in the order the docs list them.
std::span<const AlgoRow> Algorithms();
// A new (unfitted) model of algorithm `name`, made with `options`. Error lists the known names.
Result<std::unique_ptr<Regressor>> MakeRegressor(const std::string& name, const RegressorOptions& options = {});
// The algorithm's default feature set ("all" for an unknown name).
std::string DefaultFeatureSet(const std::string& algo);

// --- helpers shared by the implementations ---------------------------------

// A numeric parameter bound to a field; integers are stored as double.
struct ParamSpec {
  const char* name;
  double* value;
  double min;
  double max;
  bool integer;
};
Status ApplyParams(const std::string& algo, const nlohmann::json& j, std::span<const ParamSpec> specs);
nlohmann::json ParamsJson(std::span<const ParamSpec> specs);

// Validates a training set: "<algo>: ..." errors.
Status CheckTrainingSet(const std::string& algo, const Matrix& x, const std::vector<double>& y);
Status CheckColumns(const std::string& algo, const Matrix& x, size_t cols);

// Per-column mean and inverse population standard deviation of x (REQUIRES:
// non-empty, rectangular); a column with sd <= 1e-12 gets inv_sd 0, so it is
// ignored after standardising (z = (x - mean) * inv_sd).
void ColumnMoments(const Matrix& x, std::vector<double>* mean, std::vector<double>* inv_sd);

// Quantile with linear interpolation (R type 7) of an unsorted sample.
double Quantile(std::vector<double> xs, double q);
// Mean, and the central `level` interval of member outputs, widened where
// needed so that low <= mean <= high (a skewed ensemble's mean can fall
// outside its central quantiles).
Estimate Summarise(const std::vector<double>& members, double level);

}  // namespace gpucast
