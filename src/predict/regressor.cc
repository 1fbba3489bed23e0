#include "predict/regressor.h"

#include <algorithm>
#include <cmath>

namespace gpucast {

std::unique_ptr<Regressor> MakeForest();  // xgb_regressor.cc
std::unique_ptr<Regressor> MakeGbm();     // xgb_regressor.cc
std::unique_ptr<Regressor> MakeRidge();   // ridge_regressor.cc
std::unique_ptr<Regressor> MakeKnn();     // knn_regressor.cc
std::unique_ptr<Regressor> MakeRoofline();  // roofline_regressor.cc
std::unique_ptr<Regressor> MakePhysics(const RegressorOptions& options);  // physics_regressor.cc
std::unique_ptr<Regressor> MakeHybrid(const RegressorOptions& options);   // hybrid_regressor.cc
std::unique_ptr<Regressor> MakeMono();      // xgb_regressor.cc

namespace {
// The algorithms that no RegressorOptions field concerns.
template <std::unique_ptr<Regressor> (*Make)()>
std::unique_ptr<Regressor> IgnoringOptions(const RegressorOptions& /*options*/) {
  return Make();
}

constexpr AlgoRow kAlgos[] = {
    {"forest", "XGBoost random forest (one round, num_parallel_tree trees); interval from per-tree outputs",
     "paper", IgnoringOptions<MakeForest>},
    {"gbm", "XGBoost gradient boosting; interval from seeded subsampled sub-models", "paper", IgnoringOptions<MakeGbm>},
    {"ridge", "ridge regression on sign(x)*ln(1+|x|) standardised features; interval from bootstrap refits",
     "all", IgnoringOptions<MakeRidge>},
    {"knn", "k nearest neighbours on standardised features; interval from the neighbours' targets", "all",
     IgnoringOptions<MakeKnn>},
    {"roofline",
     "physical step model (roofline GPU time vs host, loader and environment time), 6 fitted parameters; "
     "interval from training residuals",
     "all", IgnoringOptions<MakeRoofline>},
    {"physics",
     "physical step-time model (GPU kernel time on the GPU's spec + per-kernel floor; asynchronous kernel "
     "launches with AMP overhead; per-step host work in series; input pipeline, its cost fitted per training "
     "workload; RL environment), 7 parameters fitted on utilization, step time and GPU-busy time",
     "all", MakePhysics},
    {"hybrid", "physics plus a forest correction of its log residual, clipped to +-bound, on ratio/flag inputs only",
     "all", MakeHybrid},
    {"mono", "gbm with XGBoost monotone_constraints where physics fixes the sign (batch, FLOPs, GPU time up; "
     "kernels, RL environment down)", "all", IgnoringOptions<MakeMono>},
};
}  // namespace

std::span<const AlgoRow> Algorithms() { return kAlgos; }

Result<std::unique_ptr<Regressor>> MakeRegressor(const std::string& name, const RegressorOptions& options) {
  std::string known;
  for (const AlgoRow& row : kAlgos) {
    if (name == row.name) return row.make(options);
    known += known.empty() ? row.name : std::string(", ") + row.name;
  }
  return Status::Error("unknown algorithm '" + name + "' (known: " + known + ")");
}

std::string DefaultFeatureSet(const std::string& algo) {
  for (const AlgoRow& row : kAlgos)
    if (algo == row.name) return row.feature_set;
  return "all";
}

Status ApplyParams(const std::string& algo, const nlohmann::json& j, std::span<const ParamSpec> specs) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return Status::Error(algo + ": params: want a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const ParamSpec* spec = nullptr;
    for (const ParamSpec& s : specs)
      if (it.key() == s.name) spec = &s;
    if (!spec) return Status::Error(algo + ": unknown parameter '" + it.key() + "'");
    if (!it->is_number()) return Status::Error(algo + ": parameter '" + it.key() + "': want a number");
    double v = it->get<double>();
    if (spec->integer && v != std::floor(v))
      return Status::Error(algo + ": parameter '" + it.key() + "': want an integer");
    if (!(v >= spec->min && v <= spec->max)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s: parameter '%s': %g outside [%g, %g]", algo.c_str(),
                    spec->name, v, spec->min, spec->max);
      return Status::Error(buf);
    }
    *spec->value = v;
  }
  return Status::Ok();
}

nlohmann::json ParamsJson(std::span<const ParamSpec> specs) {
  nlohmann::json j = nlohmann::json::object();
  for (const ParamSpec& s : specs) {
    if (s.integer)
      j[s.name] = static_cast<int64_t>(*s.value);
    else
      j[s.name] = *s.value;
  }
  return j;
}

Status CheckColumns(const std::string& algo, const Matrix& x, size_t cols) {
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].size() != cols)
      return Status::Error(algo + ": row " + std::to_string(i) + " has " + std::to_string(x[i].size()) +
                           " features, want " + std::to_string(cols));
    for (size_t c = 0; c < cols; ++c)
      if (!std::isfinite(x[i][c]))
        return Status::Error(algo + ": row " + std::to_string(i) + " feature " + std::to_string(c) +
                             " is not finite");
  }
  return Status::Ok();
}

Status CheckTrainingSet(const std::string& algo, const Matrix& x, const std::vector<double>& y) {
  if (x.size() < 2) return Status::Error(algo + ": need at least 2 training rows");
  if (x.size() != y.size())
    return Status::Error(algo + ": " + std::to_string(x.size()) + " rows but " + std::to_string(y.size()) +
                         " targets");
  if (x[0].empty()) return Status::Error(algo + ": no features");
  for (size_t i = 0; i < y.size(); ++i)
    if (!std::isfinite(y[i])) return Status::Error(algo + ": target " + std::to_string(i) + " is not finite");
  return CheckColumns(algo, x, x[0].size());
}

void ColumnMoments(const Matrix& x, std::vector<double>* mean, std::vector<double>* inv_sd) {
  size_t n = x.size(), p = x[0].size();
  mean->assign(p, 0);
  inv_sd->assign(p, 0);
  for (size_t c = 0; c < p; ++c) {
    double m = 0, ss = 0;
    for (size_t i = 0; i < n; ++i) m += x[i][c];
    m /= n;
    for (size_t i = 0; i < n; ++i) ss += (x[i][c] - m) * (x[i][c] - m);
    double sd = std::sqrt(ss / n);
    (*mean)[c] = m;
    (*inv_sd)[c] = sd > 1e-12 ? 1 / sd : 0;  // constant column: ignored
  }
}

double Quantile(std::vector<double> xs, double q) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  double h = (xs.size() - 1) * q;
  size_t lo = static_cast<size_t>(std::floor(h));
  size_t hi = std::min(lo + 1, xs.size() - 1);
  return xs[lo] + (h - lo) * (xs[hi] - xs[lo]);
}

Estimate Summarise(const std::vector<double>& members, double level) {
  Estimate e;
  for (double m : members) e.mean += m;
  e.mean /= members.empty() ? 1 : members.size();
  e.low = Quantile(members, (1 - level) / 2);
  e.high = Quantile(members, (1 + level) / 2);
  e.low = std::min(e.low, e.mean);
  e.high = std::max(e.high, e.mean);
  return e;
}

}  // namespace gpucast
