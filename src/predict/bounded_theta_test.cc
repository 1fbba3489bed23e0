#include "predict/bounded_theta.h"

#include <limits>

#include <gtest/gtest.h>

namespace gpucast {
namespace {

struct Def {
  const char* name;
  double lo, hi;
};
constexpr Def kDefs[] = {{"eff", 0.02, 1.0}, {"latency", 1e-7, 1e-4}};

TEST(BoundedTheta, ZMapsIntoTheBoundsAndBack) {
  for (const Def& d : kDefs) {
    for (double z : {-1e3, -5.0, 0.0, 2.5, 1e3}) {
      const double v = ThetaFromZ(d, z);
      EXPECT_GE(v, d.lo * (1 - 1e-12));
      EXPECT_LE(v, d.hi * (1 + 1e-12));
    }
    // z = 0 is the geometric middle of the bounds.
    EXPECT_NEAR(ThetaFromZ(d, 0.0), std::sqrt(d.lo * d.hi), 1e-12 * d.hi);
    const double v = std::sqrt(d.lo * d.hi) * 1.7;
    EXPECT_NEAR(ThetaFromZ(d, ThetaToZ(d, v)), v, 1e-9 * v);
    EXPECT_TRUE(std::isfinite(ThetaToZ(d, d.hi * 10)));  // beyond a bound: clamped, finite
  }
}

TEST(BoundedTheta, SaveLoadRoundTripAndErrors) {
  const std::array<double, 2> theta = {0.5, 2e-6};
  const nlohmann::json j = SaveTheta(kDefs, theta, -0.2, 0.3);
  EXPECT_EQ(j.dump(), R"({"resid_high":0.3,"resid_low":-0.2,"theta":{"eff":0.5,"latency":2e-06}})");
  std::array<double, 2> back{};
  double lo = 0, hi = 0;
  ASSERT_TRUE(LoadTheta("m", j, kDefs, &back, &lo, &hi).ok());
  EXPECT_EQ(back, theta);
  EXPECT_EQ(lo, -0.2);
  EXPECT_EQ(hi, 0.3);
  nlohmann::json out_of_bounds = j;
  out_of_bounds["theta"]["latency"] = 1.0;
  EXPECT_EQ(LoadTheta("m", out_of_bounds, kDefs, &back, &lo, &hi).message(), "m: theta 'latency' outside its bounds");
  nlohmann::json missing = j;
  missing.erase("resid_low");
  EXPECT_EQ(LoadTheta("m", missing, kDefs, &back, &lo, &hi).message().rfind("m: state: ", 0), 0u);
}

}  // namespace
}  // namespace gpucast
