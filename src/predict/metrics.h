// Error metrics of utilization predictions. All values are utilization in
// percent (0-100).
#pragma once

#include <vector>

#include "util/status.h"

namespace gpucast {

// sqrt(mean((ln(1+pred) - ln(1+actual))^2)). REQUIRES nothing: errors on empty
// input, size mismatch or a value <= -1.
Result<double> Rmsle(const std::vector<double>& pred, const std::vector<double>& actual);
// mean(|pred - actual|), percentage points.
Result<double> Mae(const std::vector<double>& pred, const std::vector<double>& actual);
// 1 - SS_res/SS_tot; error when actual has zero variance.
Result<double> RSquared(const std::vector<double>& pred, const std::vector<double>& actual);

// Fraction of rows with low <= actual <= high.
Result<double> Coverage(const std::vector<double>& low, const std::vector<double>& high,
                        const std::vector<double>& actual);

struct MeanSd {
  double mean = 0;
  double sd = 0;  // sample standard deviation (n-1); 0 for one value
};
MeanSd MeanAndSd(const std::vector<double>& xs);

}  // namespace gpucast
