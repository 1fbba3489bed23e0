#include "predict/metrics.h"

#include <cmath>

#include <gtest/gtest.h>

namespace gpucast {
namespace {

// Hand values: ln(1+9)-ln(1+19) = -ln 2 and ln(1+99)-ln(1+49) = ln 2, so RMSLE = ln 2.
TEST(MetricsTest, RmsleHandValue) {
  auto r = Rmsle({9, 99}, {19, 49});
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(*r, 0.6931471805599453, 1e-15);
  EXPECT_DOUBLE_EQ(*Rmsle({5, 5}, {5, 5}), 0.0);
}

TEST(MetricsTest, MaeHandValue) { EXPECT_DOUBLE_EQ(*Mae({9, 99}, {19, 49}), 30.0); }

// actual {19, 49}: mean 34, SS_tot = 15^2 + 15^2 = 450.
TEST(MetricsTest, RSquaredHandValues) {
  EXPECT_NEAR(*RSquared({20, 40}, {19, 49}), 1.0 - 82.0 / 450.0, 1e-15);    // SS_res = 1 + 81
  EXPECT_NEAR(*RSquared({9, 99}, {19, 49}), 1.0 - 2600.0 / 450.0, 1e-15);   // 100 + 2500
  EXPECT_DOUBLE_EQ(*RSquared({34, 34}, {19, 49}), 0.0);  // predicting the mean
}

TEST(MetricsTest, Errors) {
  EXPECT_EQ(Rmsle({}, {}).message(), "RMSLE: no values");
  EXPECT_EQ(Mae({1}, {1, 2}).message(), "MAE: 1 predictions but 2 measurements");
  EXPECT_EQ(RSquared({1, 2}, {3, 3}).message(), "R2: measurements have zero variance");
  EXPECT_EQ(Rmsle({-2}, {3}).message(), "RMSLE: value <= -1 at row 0");
}

TEST(MetricsTest, CoverageAndMeanSd) {
  EXPECT_DOUBLE_EQ(*Coverage({0, 10, 0}, {5, 20, 1}, {5, 9, 0.5}), 2.0 / 3.0);
  MeanSd m = MeanAndSd({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_NEAR(m.sd, std::sqrt(5.0 / 3.0), 1e-15);  // sum sq dev 5, n-1 = 3
}

}  // namespace
}  // namespace gpucast
