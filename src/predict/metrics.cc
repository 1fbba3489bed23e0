#include "predict/metrics.h"

#include <cmath>
#include <string>

namespace gpucast {
namespace {

Status CheckSizes(const char* what, size_t a, size_t b) {
  if (a == 0) return Status::Error(std::string(what) + ": no values");
  if (a != b)
    return Status::Error(std::string(what) + ": " + std::to_string(a) + " predictions but " +
                         std::to_string(b) + " measurements");
  return Status::Ok();
}

}  // namespace

Result<double> Rmsle(const std::vector<double>& pred, const std::vector<double>& actual) {
  RETURN_IF_ERROR(CheckSizes("RMSLE", pred.size(), actual.size()));
  double sum = 0;
  for (size_t i = 0; i < pred.size(); ++i) {
    if (!(pred[i] > -1) || !(actual[i] > -1))
      return Status::Error("RMSLE: value <= -1 at row " + std::to_string(i));
    double d = std::log1p(pred[i]) - std::log1p(actual[i]);
    sum += d * d;
  }
  return std::sqrt(sum / pred.size());
}

Result<double> Mae(const std::vector<double>& pred, const std::vector<double>& actual) {
  RETURN_IF_ERROR(CheckSizes("MAE", pred.size(), actual.size()));
  double sum = 0;
  for (size_t i = 0; i < pred.size(); ++i) sum += std::fabs(pred[i] - actual[i]);
  return sum / pred.size();
}

Result<double> RSquared(const std::vector<double>& pred, const std::vector<double>& actual) {
  RETURN_IF_ERROR(CheckSizes("R2", pred.size(), actual.size()));
  double mean = 0;
  for (double a : actual) mean += a;
  mean /= actual.size();
  double ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < pred.size(); ++i) {
    ss_res += (pred[i] - actual[i]) * (pred[i] - actual[i]);
    ss_tot += (actual[i] - mean) * (actual[i] - mean);
  }
  if (ss_tot == 0) return Status::Error("R2: measurements have zero variance");
  return 1 - ss_res / ss_tot;
}

Result<double> Coverage(const std::vector<double>& low, const std::vector<double>& high,
                        const std::vector<double>& actual) {
  RETURN_IF_ERROR(CheckSizes("coverage", low.size(), actual.size()));
  RETURN_IF_ERROR(CheckSizes("coverage", high.size(), actual.size()));
  size_t in = 0;
  for (size_t i = 0; i < actual.size(); ++i) in += low[i] <= actual[i] && actual[i] <= high[i];
  return static_cast<double>(in) / actual.size();
}

MeanSd MeanAndSd(const std::vector<double>& xs) {
  MeanSd r;
  if (xs.empty()) return r;
  for (double x : xs) r.mean += x;
  r.mean /= xs.size();
  if (xs.size() < 2) return r;
  double ss = 0;
  for (double x : xs) ss += (x - r.mean) * (x - r.mean);
  r.sd = std::sqrt(ss / (xs.size() - 1));
  return r;
}

}  // namespace gpucast
