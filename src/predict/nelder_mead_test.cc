#include "predict/nelder_mead.h"

#include <cmath>

#include <gtest/gtest.h>

namespace gpucast {
namespace {

// A shifted quadratic bowl: the minimum is at (1, -2, 3), where f = 5.
TEST(NelderMeadTest, FindsTheMinimumOfAQuadratic) {
  auto f = [](const std::array<double, 3>& x) {
    return 5 + (x[0] - 1) * (x[0] - 1) + 2 * (x[1] + 2) * (x[1] + 2) + 0.5 * (x[2] - 3) * (x[2] - 3);
  };
  std::array<double, 3> x = NelderMead(f, std::array<double, 3>{0, 0, 0}, 1.0, 5000, 1e-14);
  EXPECT_NEAR(x[0], 1, 1e-4);
  EXPECT_NEAR(x[1], -2, 1e-4);
  EXPECT_NEAR(x[2], 3, 1e-4);
  EXPECT_NEAR(f(x), 5, 1e-8);
}

// Rosenbrock's valley (minimum 0 at (1, 1)) needs expansion, contraction and shrink steps.
TEST(NelderMeadTest, FollowsRosenbrocksValley) {
  int calls = 0;
  auto f = [&calls](const std::array<double, 2>& x) {
    ++calls;
    return 100 * std::pow(x[1] - x[0] * x[0], 2) + std::pow(1 - x[0], 2);
  };
  std::array<double, 2> x = NelderMead(f, std::array<double, 2>{-1.2, 1}, 0.5, 20000, 1e-16);
  EXPECT_NEAR(x[0], 1, 1e-3);
  EXPECT_NEAR(x[1], 1, 1e-3);
  EXPECT_LE(calls, 20000 + 3);  // the budget holds (the last iteration may add up to n + 2 - 1)
}

TEST(NelderMeadTest, StopsAtTheEvaluationBudget) {
  int calls = 0;
  auto f = [&calls](const std::array<double, 2>& x) { return ++calls, x[0] * x[0] + x[1] * x[1]; };
  NelderMead(f, std::array<double, 2>{10, 10}, 1.0, 10, 0);
  EXPECT_LE(calls, 10 + 2 + 1);  // the last iteration started under budget: reflect, contract, shrink n=2
}

}  // namespace
}  // namespace gpucast
