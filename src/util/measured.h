// The rules a measured row's numbers obey wherever a table of measurements is
// read, stated once: `train --data`'s dataset (predict/dataset.cc) and
// `simulate`'s workload table (sim/workload.cc, Lucid's single_data.csv).
// Each returns why a value is refused ("" when it is fine); the reader puts
// the file, line and column in front.
#pragma once

#include <cstdint>
#include <string>

namespace gpucast {

// Largest accepted memory of a measured row (MiB): 10 TiB; beyond it a value
// is a unit mistake.
inline constexpr double kMaxMeasuredMemMib = 1e7;

// A measured speed in samples/s at batch size `batch` (>= 1): positive, and
// the step time it implies (batch / speed, s) finite. A speed of 0 implies no
// step and a subnormal one (4e-320) an infinite one. No upper bound: the code
// base holds no measured least step time.
std::string SpeedProblem(double speed, int64_t batch);

// A measured memory in MiB: > 0 and <= kMaxMeasuredMemMib (NaN fails).
std::string MemMibProblem(double mib);

}  // namespace gpucast
