// `knn`: k nearest neighbours in standardised feature space (Euclidean;
// ties broken by training row order). Prediction: mean of the neighbours'
// targets; interval: central `interval` fraction of those targets.
#include <algorithm>
#include <cmath>

#include "predict/regressor.h"

namespace gpucast {
namespace {

using nlohmann::json;

class Knn : public Regressor {
 public:
  std::string Algo() const override { return "knn"; }
  Status Configure(const json& p) override { return ApplyParams(Algo(), p, Specs()); }
  json Params() const override { return ParamsJson(const_cast<Knn*>(this)->Specs()); }

  Status Fit(const Matrix& x, const std::vector<double>& y, uint64_t /*seed*/) override {
    RETURN_IF_ERROR(CheckTrainingSet(Algo(), x, y));
    ColumnMoments(x, &mean_, &scale_);
    points_.clear();
    for (const auto& row : x) points_.push_back(Standardise(row));
    y_ = y;
    return Status::Ok();
  }

  Result<std::vector<Estimate>> Predict(const Matrix& x) const override {
    if (points_.empty()) return Status::Error("knn: not fitted");
    RETURN_IF_ERROR(CheckColumns(Algo(), x, mean_.size()));
    size_t k = std::min(points_.size(), static_cast<size_t>(k_));
    std::vector<Estimate> out;
    for (const auto& row : x) {
      std::vector<double> z = Standardise(row);
      std::vector<std::pair<double, size_t>> d;
      for (size_t i = 0; i < points_.size(); ++i) {
        double s = 0;
        for (size_t c = 0; c < z.size(); ++c) s += (z[c] - points_[i][c]) * (z[c] - points_[i][c]);
        d.emplace_back(s, i);
      }
      std::partial_sort(d.begin(), d.begin() + k, d.end());
      std::vector<double> ys;
      for (size_t j = 0; j < k; ++j) ys.push_back(y_[d[j].second]);
      out.push_back(Summarise(ys, interval_));
    }
    return out;
  }

  Result<json> Save() const override {
    if (points_.empty()) return Status::Error("knn: not fitted");
    return json{{"mean", mean_}, {"scale", scale_}, {"points", points_}, {"y", y_}};
  }

  Status Load(const json& j) override {
    try {
      mean_ = j.at("mean").get<std::vector<double>>();
      scale_ = j.at("scale").get<std::vector<double>>();
      points_ = j.at("points").get<Matrix>();
      y_ = j.at("y").get<std::vector<double>>();
    } catch (const json::exception& e) {
      return Status::Error(std::string("knn: bad state: ") + e.what());
    }
    if (points_.empty() || points_.size() != y_.size() || mean_.size() != scale_.size())
      return Status::Error("knn: bad state: inconsistent sizes");
    for (const auto& p : points_)
      if (p.size() != mean_.size()) return Status::Error("knn: bad state: inconsistent sizes");
    return Status::Ok();
  }

 private:
  std::vector<ParamSpec> Specs() {
    return {{"k", &k_, 1, 1000, true}, {"interval", &interval_, 0.01, 1, false}};
  }
  std::vector<double> Standardise(const std::vector<double>& row) const {
    std::vector<double> z(row.size());
    for (size_t c = 0; c < row.size(); ++c) z[c] = (row[c] - mean_[c]) * scale_[c];
    return z;
  }

  double k_ = 5, interval_ = 0.8;
  std::vector<double> mean_, scale_;
  Matrix points_;
  std::vector<double> y_;
};

}  // namespace

std::unique_ptr<Regressor> MakeKnn() { return std::make_unique<Knn>(); }

}  // namespace gpucast
