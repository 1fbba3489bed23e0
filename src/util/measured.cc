#include "util/measured.h"

#include <cmath>

namespace gpucast {

std::string SpeedProblem(double speed, int64_t batch) {
  if (!std::isfinite(speed)) return "is not a finite number";
  if (!(speed > 0)) return "is not > 0 (samples/s)";
  if (!std::isfinite(static_cast<double>(batch) / speed))
    return "is too small: batchsize / speed (the step time) overflows";
  return "";
}

std::string MemMibProblem(double mib) {
  if (!(mib > 0 && mib <= kMaxMeasuredMemMib)) return "is not a memory in MiB (want > 0 and <= 1e7)";
  return "";
}

}  // namespace gpucast
