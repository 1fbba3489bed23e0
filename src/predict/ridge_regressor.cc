// `ridge`: ridge regression on z = sign(x) * ln(1 + |x|), standardised.
// Minimises |y - b - Zw|^2 / n + alpha |w|^2 (closed form, Cholesky). The
// point prediction is the fit on all rows; the interval is the central
// `interval` fraction of `bootstrap` refits on resampled rows (parameter
// uncertainty only, not noise).
#include <cmath>
#include <random>

#include "predict/regressor.h"

namespace gpucast {
namespace {

using nlohmann::json;

double LogFeature(double v) { return std::copysign(std::log1p(std::fabs(v)), v); }

// Solves A w = b for symmetric positive definite A (p x p, row-major). False if not SPD.
bool CholeskySolve(std::vector<double> a, std::vector<double> b, size_t p, std::vector<double>* w) {
  for (size_t j = 0; j < p; ++j) {
    double d = a[j * p + j];
    for (size_t k = 0; k < j; ++k) d -= a[j * p + k] * a[j * p + k];
    if (!(d > 0)) return false;
    a[j * p + j] = std::sqrt(d);
    for (size_t i = j + 1; i < p; ++i) {
      double s = a[i * p + j];
      for (size_t k = 0; k < j; ++k) s -= a[i * p + k] * a[j * p + k];
      a[i * p + j] = s / a[j * p + j];
    }
  }
  for (size_t i = 0; i < p; ++i) {  // L y = b
    for (size_t k = 0; k < i; ++k) b[i] -= a[i * p + k] * b[k];
    b[i] /= a[i * p + i];
  }
  for (size_t i = p; i-- > 0;) {  // L^T w = y
    for (size_t k = i + 1; k < p; ++k) b[i] -= a[k * p + i] * b[k];
    b[i] /= a[i * p + i];
  }
  *w = std::move(b);
  return true;
}

class Ridge : public Regressor {
 public:
  std::string Algo() const override { return "ridge"; }
  Status Configure(const json& p) override { return ApplyParams(Algo(), p, Specs()); }
  json Params() const override { return ParamsJson(const_cast<Ridge*>(this)->Specs()); }

  Status Fit(const Matrix& x, const std::vector<double>& y, uint64_t seed) override {
    RETURN_IF_ERROR(CheckTrainingSet(Algo(), x, y));
    size_t n = x.size(), p = x[0].size();
    Matrix z(n, std::vector<double>(p));
    for (size_t i = 0; i < n; ++i)
      for (size_t c = 0; c < p; ++c) z[i][c] = LogFeature(x[i][c]);
    ColumnMoments(z, &mean_, &scale_);
    for (auto& row : z)
      for (size_t c = 0; c < p; ++c) row[c] = (row[c] - mean_[c]) * scale_[c];
    members_.clear();
    std::vector<size_t> idx(n);
    for (size_t i = 0; i < n; ++i) idx[i] = i;
    RETURN_IF_ERROR(FitOne(z, y, idx));
    std::mt19937_64 rng(seed);
    for (int b = 0; b < static_cast<int>(bootstrap_); ++b) {
      for (size_t i = 0; i < n; ++i) idx[i] = rng() % n;
      RETURN_IF_ERROR(FitOne(z, y, idx));
    }
    return Status::Ok();
  }

  Result<std::vector<Estimate>> Predict(const Matrix& x) const override {
    if (members_.empty()) return Status::Error("ridge: not fitted");
    RETURN_IF_ERROR(CheckColumns(Algo(), x, mean_.size()));
    std::vector<Estimate> out;
    std::vector<double> boot(members_.size() - 1);
    for (const auto& row : x) {
      std::vector<double> z(row.size());
      for (size_t c = 0; c < row.size(); ++c) z[c] = (LogFeature(row[c]) - mean_[c]) * scale_[c];
      auto eval = [&](const std::vector<double>& m) {
        double s = m[0];  // intercept first
        for (size_t c = 0; c < z.size(); ++c) s += m[c + 1] * z[c];
        return s;
      };
      for (size_t b = 1; b < members_.size(); ++b) boot[b - 1] = eval(members_[b]);
      Estimate e = boot.empty() ? Estimate{} : Summarise(boot, interval_);
      e.mean = eval(members_[0]);
      e.low = std::min(e.low, e.mean);  // the full-data fit can lie outside the bootstrap quantiles
      e.high = std::max(e.high, e.mean);
      out.push_back(e);
    }
    return out;
  }

  Result<json> Save() const override {
    if (members_.empty()) return Status::Error("ridge: not fitted");
    return json{{"mean", mean_}, {"scale", scale_}, {"members", members_}};
  }

  Status Load(const json& j) override {
    try {
      mean_ = j.at("mean").get<std::vector<double>>();
      scale_ = j.at("scale").get<std::vector<double>>();
      members_ = j.at("members").get<std::vector<std::vector<double>>>();
    } catch (const json::exception& e) {
      return Status::Error(std::string("ridge: bad state: ") + e.what());
    }
    if (mean_.size() != scale_.size() || members_.empty())
      return Status::Error("ridge: bad state: inconsistent sizes");
    for (const auto& m : members_)
      if (m.size() != mean_.size() + 1) return Status::Error("ridge: bad state: inconsistent sizes");
    return Status::Ok();
  }

 private:
  std::vector<ParamSpec> Specs() {
    return {{"alpha", &alpha_, 1e-8, 1e6, false},
            {"bootstrap", &bootstrap_, 0, 1000, true},
            {"interval", &interval_, 0.01, 1, false}};
  }

  // Fits on rows idx of the standardised z; appends [intercept, w...].
  Status FitOne(const Matrix& z, const std::vector<double>& y, const std::vector<size_t>& idx) {
    size_t p = z[0].size(), n = idx.size();
    double ym = 0;
    for (size_t i : idx) ym += y[i];
    ym /= n;
    std::vector<double> zm(p, 0);
    for (size_t i : idx)
      for (size_t c = 0; c < p; ++c) zm[c] += z[i][c] / n;
    std::vector<double> a(p * p, 0), b(p, 0);
    for (size_t i : idx) {
      for (size_t r = 0; r < p; ++r) {
        double zr = z[i][r] - zm[r];
        b[r] += zr * (y[i] - ym) / n;
        for (size_t c = 0; c <= r; ++c) a[r * p + c] += zr * (z[i][c] - zm[c]) / n;
      }
    }
    for (size_t r = 0; r < p; ++r) {
      for (size_t c = 0; c < r; ++c) a[c * p + r] = a[r * p + c];
      a[r * p + r] += alpha_;
    }
    std::vector<double> w;
    if (!CholeskySolve(a, b, p, &w)) return Status::Error("ridge: normal equations not positive definite");
    std::vector<double> m(p + 1);
    m[0] = ym;
    for (size_t c = 0; c < p; ++c) {
      m[c + 1] = w[c];
      m[0] -= w[c] * zm[c];
    }
    members_.push_back(std::move(m));
    return Status::Ok();
  }

  double alpha_ = 0.1, bootstrap_ = 50, interval_ = 0.8;
  std::vector<double> mean_, scale_;          // of the log features
  std::vector<std::vector<double>> members_;  // [0] = all rows, then bootstrap fits
};

}  // namespace

std::unique_ptr<Regressor> MakeRidge() { return std::make_unique<Ridge>(); }

}  // namespace gpucast
