// `roofline`: a physical step model with six fitted parameters.
//
// Per training step (seconds; feature names from gpucast-features):
//   gpu    = est_gpu_busy_ms/1000 / efficiency + kernel_count * gpu_s_per_kernel
//   host   = kernel_count * host_s_per_kernel * (1 + amp * amp_host_factor)
//   loader = (1 - data_on_gpu) * batch_size * loader_s_per_sample / max(1, loader_workers)
//   rl     = rl_env * rl_s_per_step
//   step   = max(gpu, host, loader if loader_workers > 0) + (loader if loader_workers == 0) + rl
//   util % = min(100, 100 * gpu / step)
// i.e. the GPU is busy for `gpu` of every `step`; the host issues kernels
// asynchronously (overlaps the GPU), worker processes load data in parallel,
// in-process loading and a CPU-simulated environment run in series.
//
// Fit: least squares on log1p(util) (the space RMSLE measures; `robust_scale`
// > 0 switches to a soft-L1 loss with that scale) by Nelder-Mead
// over the parameters in bounded coordinates, from a fixed grid of starts;
// nothing depends on the seed. Interval: the point plus the central `interval`
// quantiles of the training residuals (log1p space), widened to contain the point.
#include <algorithm>
#include <array>
#include <cmath>

#include "predict/bounded_theta.h"
#include "predict/nelder_mead.h"
#include "predict/regressor.h"

namespace gpucast {
namespace {

using nlohmann::json;

constexpr int kNumTheta = 6;
struct ThetaDef {
  const char* name;
  double lo, hi;  // bounds; searched on a log scale
  double start_lo, start_hi;  // two starting values (grid of starts)
};
// Bounds are physical ranges, wide on purpose; starts are order-of-magnitude guesses.
constexpr ThetaDef kTheta[kNumTheta] = {
    {"efficiency", 0.01, 1.0, 0.1, 0.5},             // achieved fraction of the roofline
    {"gpu_s_per_kernel", 1e-7, 1e-4, 2e-6, 1e-5},     // launch latency + tail of a tiny kernel
    {"host_s_per_kernel", 1e-6, 1e-3, 1e-5, 5e-5},    // eager dispatch + autograd + launch
    {"amp_host_factor", 1e-3, 10.0, 0.1, 1.0},        // extra host work per kernel under autocast
    {"loader_s_per_sample", 1e-7, 1e-1, 1e-4, 1e-3},  // CPU input pipeline, per sample per worker
    {"rl_s_per_step", 1e-6, 10.0, 1e-3, 1e-1},        // CPU environment per training step
};

// Columns the model reads, in this order.
constexpr const char* kColumns[] = {"est_gpu_busy_ms", "kernel_count", "amp",        "batch_size",
                                    "loader_workers",  "data_on_gpu",  "rl_env"};
constexpr int kNumColumns = sizeof kColumns / sizeof *kColumns;

using Theta = std::array<double, kNumTheta>;
using Row = std::array<double, kNumColumns>;

double Util(const Theta& t, const Row& r) {
  double busy = r[0] * 1e-3, kernels = r[1], amp = r[2], batch = r[3], workers = r[4], on_gpu = r[5],
         rl = r[6];
  double gpu = busy / t[0] + kernels * t[1];
  double host = kernels * t[2] * (1 + amp * t[3]);
  double loader = (1 - on_gpu) * batch * t[4] / std::max(1.0, workers);
  double step = std::max(gpu, host);
  if (workers > 0)
    step = std::max(step, loader);
  else
    step += loader;
  step += rl * t[5];
  if (!(step > 0)) return 0;
  return std::min(100.0, 100 * gpu / step);
}

class Roofline : public Regressor {
 public:
  std::string Algo() const override { return "roofline"; }
  Status Configure(const json& p) override { return ApplyParams(Algo(), p, Specs()); }
  json Params() const override { return ParamsJson(const_cast<Roofline*>(this)->Specs()); }
  std::vector<std::string> RequiredFeatures() const override {
    return std::vector<std::string>(std::begin(kColumns), std::end(kColumns));
  }

  Status SetFeatureNames(const std::vector<std::string>& names) override {
    for (int c = 0; c < kNumColumns; ++c) {
      auto it = std::find(names.begin(), names.end(), kColumns[c]);
      if (it == names.end())
        return Status::Error(std::string("roofline: needs feature '") + kColumns[c] +
                             "' (use feature set 'paper+physical' or 'all')");
      index_[c] = static_cast<size_t>(it - names.begin());
    }
    cols_ = names.size();
    named_ = true;
    return Status::Ok();
  }

  Status Fit(const Matrix& x, const std::vector<double>& y, uint64_t /*seed*/) override {
    RETURN_IF_ERROR(CheckTrainingSet(Algo(), x, y));
    if (!named_) return Status::Error("roofline: feature names not set");
    RETURN_IF_ERROR(CheckColumns(Algo(), x, cols_));
    std::vector<Row> rows = Rows(x);
    auto loss = [&](const Theta& z) {
      Theta t = ThetaFromZ(kTheta, z);
      double s = 0;
      for (size_t i = 0; i < rows.size(); ++i) {
        double d = std::log1p(Util(t, rows[i])) - y[i];
        s += delta_ > 0 ? 2 * delta_ * delta_ * (std::sqrt(1 + d * d / (delta_ * delta_)) - 1) : d * d;
      }
      return s / rows.size();
    };
    // Grid of starts: every combination of the two starting values (2^6 = 64),
    // a short run each; the best three are refined.
    std::vector<std::pair<double, Theta>> runs;
    for (int mask = 0; mask < (1 << kNumTheta); ++mask) {
      Theta z;
      for (int i = 0; i < kNumTheta; ++i)
        z[i] = ThetaToZ(kTheta[i], (mask >> i) & 1 ? kTheta[i].start_hi : kTheta[i].start_lo);
      Theta zf = NelderMead(loss, z, 1.0, static_cast<int>(evals_ / 8), 1e-12);
      runs.push_back({loss(zf), zf});
    }
    std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Theta best = runs[0].second;
    double best_loss = runs[0].first;
    for (size_t k = 0; k < 3 && k < runs.size(); ++k) {
      Theta z = NelderMead(loss, runs[k].second, 0.5, static_cast<int>(evals_), 1e-12);
      if (double l = loss(z); l < best_loss) best_loss = l, best = z;
    }
    theta_ = ThetaFromZ(kTheta, best);
    std::vector<double> resid;
    for (size_t i = 0; i < rows.size(); ++i) resid.push_back(y[i] - std::log1p(Util(theta_, rows[i])));
    resid_low_ = Quantile(resid, (1 - interval_) / 2);
    resid_high_ = Quantile(resid, (1 + interval_) / 2);
    fitted_ = true;
    return Status::Ok();
  }

  Result<std::vector<Estimate>> Predict(const Matrix& x) const override {
    if (!fitted_) return Status::Error("roofline: not fitted");
    RETURN_IF_ERROR(CheckColumns(Algo(), x, cols_));
    std::vector<Estimate> out;
    for (const Row& r : Rows(x)) {
      Estimate e;
      e.mean = std::log1p(Util(theta_, r));
      e.low = std::min(e.mean, e.mean + resid_low_);
      e.high = std::max(e.mean, e.mean + resid_high_);
      out.push_back(e);
    }
    return out;
  }

  Result<json> Save() const override {
    if (!fitted_) return Status::Error("roofline: not fitted");
    return SaveTheta(kTheta, theta_, resid_low_, resid_high_);
  }

  Status Load(const json& j) override {
    if (!named_) return Status::Error("roofline: feature names not set");
    RETURN_IF_ERROR(LoadTheta(Algo(), j, kTheta, &theta_, &resid_low_, &resid_high_));
    fitted_ = true;
    return Status::Ok();
  }

  const Theta& theta() const { return theta_; }

 private:
  std::vector<ParamSpec> Specs() {
    return {{"max_evals", &evals_, 100, 1e6, true},
            {"robust_scale", &delta_, 0, 10, false},
            {"interval", &interval_, 0.01, 1, false}};
  }
  std::vector<Row> Rows(const Matrix& x) const {
    std::vector<Row> rows;
    for (const auto& xr : x) {
      Row r;
      for (int c = 0; c < kNumColumns; ++c) r[c] = xr[index_[c]];
      rows.push_back(r);
    }
    return rows;
  }

  double evals_ = 4000, delta_ = 0, interval_ = 0.8;
  std::array<size_t, kNumColumns> index_{};
  size_t cols_ = 0;
  bool named_ = false, fitted_ = false;
  Theta theta_{};
  double resid_low_ = 0, resid_high_ = 0;
};

}  // namespace

std::unique_ptr<Regressor> MakeRoofline() { return std::make_unique<Roofline>(); }

}  // namespace gpucast
