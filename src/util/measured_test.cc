#include "util/measured.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace gpucast {
namespace {

TEST(MeasuredTest, SpeedIsPositiveWithAFiniteStep) {
  EXPECT_EQ(SpeedProblem(84.872, 32), "");   // Lucid's BERT/SQuAD/b32 row
  EXPECT_EQ(SpeedProblem(1e308, 1), "");     // no upper bound
  EXPECT_EQ(SpeedProblem(1e-308, 1), "");    // 1 / 1e-308 = 1e308: still finite
  for (double bad : {0.0, -0.0, -5.0, -1e-300})
    EXPECT_EQ(SpeedProblem(bad, 32), "is not > 0 (samples/s)") << bad;
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()})
    EXPECT_EQ(SpeedProblem(bad, 32), "is not a finite number") << bad;
  // 32 / 4e-320 and 32 / 1e-307 exceed DBL_MAX (1.8e308).
  for (double tiny : {4e-320, 1e-307})
    EXPECT_EQ(SpeedProblem(tiny, 32), "is too small: batchsize / speed (the step time) overflows") << tiny;
}

TEST(MeasuredTest, MemoryIsPositiveAndAtMostTenTiB) {
  EXPECT_EQ(MemMibProblem(20162.0), "");
  EXPECT_EQ(MemMibProblem(kMaxMeasuredMemMib), "");
  for (double bad : {0.0, -1.0, 1.0000001e7, 1e300, std::nan(""), std::numeric_limits<double>::infinity()})
    EXPECT_EQ(MemMibProblem(bad), "is not a memory in MiB (want > 0 and <= 1e7)") << bad;
}

}  // namespace
}  // namespace gpucast
