// `hybrid`: the physics model plus a bounded correction learned by trees
// (docs/predictor.md).
//
//   log1p(util) = physics(x) + clip(forest(z), -bound, +bound), util <= 100
//
// The forest is fit on the physics model's training residuals in log1p
// space, and only on inputs that are ratios or flags, never on sizes (FLOPs,
// batch, bytes), so it never has to extrapolate along the axes users change:
// z = [physics' log1p(util), amp, loader_workers, data_on_gpu, rl_env,
//      log10_est_busy_launch_ratio, arithmetic_intensity] (those present).
// Outside the training range the correction is a bounded constant and the
// physics decides. Interval: the forest's per-tree spread around the point.
#include <algorithm>
#include <cmath>

#include "predict/physics.h"
#include "predict/regressor.h"

namespace gpucast {
namespace {

using nlohmann::json;

constexpr const char* kTreeInputs[] = {"amp", "loader_workers", "data_on_gpu", "rl_env",
                                       "log10_est_busy_launch_ratio", "arithmetic_intensity"};

class Hybrid : public Regressor {
 public:
  explicit Hybrid(const RegressorOptions& options) : physics_(MakePhysicsModel(options)) {}
  std::string Algo() const override { return "hybrid"; }
  Status Configure(const json& p) override { return ApplyParams(Algo(), p, Specs()); }
  json Params() const override { return ParamsJson(const_cast<Hybrid*>(this)->Specs()); }
  std::vector<std::string> RequiredFeatures() const override { return physics_->RequiredFeatures(); }
  void SetStepTimes(const std::vector<double>& step_s) override { physics_->SetStepTimes(step_s); }
  void SetGroups(const std::vector<int>& group) override { physics_->SetGroups(group); }

  Status SetFeatureNames(const std::vector<std::string>& names) override {
    RETURN_IF_ERROR(physics_->SetFeatureNames(names).Prefixed("hybrid"));
    tree_cols_.clear();
    for (const char* n : kTreeInputs)
      if (auto it = std::find(names.begin(), names.end(), n); it != names.end())
        tree_cols_.push_back(static_cast<size_t>(it - names.begin()));
    return Status::Ok();
  }

  Status Fit(const Matrix& x, const std::vector<double>& y, uint64_t seed) override {
    RETURN_IF_ERROR(CheckTrainingSet(Algo(), x, y));
    RETURN_IF_ERROR(physics_->Fit(x, y, seed));
    ASSIGN_OR_RETURN(std::vector<Estimate> p, physics_->Predict(x));
    std::vector<double> resid;
    for (size_t i = 0; i < y.size(); ++i) resid.push_back(y[i] - p[i].mean);
    ASSIGN_OR_RETURN(forest_, MakeRegressor("forest"));
    RETURN_IF_ERROR(forest_->Configure(json{{"interval", interval_}}));
    RETURN_IF_ERROR(forest_->Fit(TreeInputs(x, p), resid, seed));
    fitted_ = true;
    return Status::Ok();
  }

  Result<std::vector<Estimate>> Predict(const Matrix& x) const override {
    if (!fitted_) return Status::Error("hybrid: not fitted");
    ASSIGN_OR_RETURN(std::vector<Estimate> p, physics_->Predict(x));
    ASSIGN_OR_RETURN(std::vector<Estimate> c, forest_->Predict(TreeInputs(x, p)));
    const double top = std::log1p(100.0);
    std::vector<Estimate> out;
    for (size_t i = 0; i < p.size(); ++i) {
      auto clip = [&](double v) { return std::clamp(v, -bound_, bound_); };
      auto cap = [&](double v) { return std::clamp(v, 0.0, top); };
      Estimate e;
      e.mean = cap(p[i].mean + clip(c[i].mean));
      e.low = std::min(e.mean, cap(p[i].mean + clip(c[i].low)));
      e.high = std::max(e.mean, cap(p[i].mean + clip(c[i].high)));
      out.push_back(e);
    }
    return out;
  }

  Result<json> Save() const override {
    if (!fitted_) return Status::Error("hybrid: not fitted");
    ASSIGN_OR_RETURN(json ps, physics_->Save());
    ASSIGN_OR_RETURN(json fs, forest_->Save());
    return json{{"physics", ps}, {"forest", fs}};
  }

  Status Load(const json& j) override {
    if (!j.is_object() || !j.contains("physics") || !j.contains("forest"))
      return Status::Error("hybrid: state lacks physics/forest");
    RETURN_IF_ERROR(physics_->Load(j["physics"]));
    ASSIGN_OR_RETURN(forest_, MakeRegressor("forest"));
    RETURN_IF_ERROR(forest_->Load(j["forest"]));
    fitted_ = true;
    return Status::Ok();
  }

 private:
  std::vector<ParamSpec> Specs() {
    return {{"bound", &bound_, 0, 5, false}, {"interval", &interval_, 0.01, 1, false}};
  }
  Matrix TreeInputs(const Matrix& x, const std::vector<Estimate>& p) const {
    Matrix z;
    for (size_t i = 0; i < x.size(); ++i) {
      std::vector<double> r = {p[i].mean};
      for (size_t c : tree_cols_) r.push_back(x[i][c]);
      z.push_back(std::move(r));
    }
    return z;
  }

  // log1p space: 0.3 is a factor of 1.35 on (1 + util); fixed a priori, not tuned.
  double bound_ = 0.3, interval_ = 0.8;
  std::unique_ptr<PhysicsModel> physics_;
  std::unique_ptr<Regressor> forest_;
  std::vector<size_t> tree_cols_;
  bool fitted_ = false;
};

}  // namespace

std::unique_ptr<Regressor> MakeHybrid(const RegressorOptions& options) { return std::make_unique<Hybrid>(options); }

}  // namespace gpucast
