#include "sim/interference.h"

#include <gtest/gtest.h>

#include "sim/test_util.h"
#include "util/paths.h"

namespace gpucast::sim {
namespace {

using testing::W;

TEST(Interference, FitRecoversKnownCoefficients) {
  // Samples generated from rate = 1 - 0.2 y - 0.5 max(0, x + y - 1).
  std::vector<std::array<double, 3>> s;
  for (double x = 0; x <= 100; x += 10)
    for (double y = 0; y <= 100; y += 10)
      s.push_back({x, y, 1 - 0.2 * y / 100 - 0.5 * std::max(0.0, (x + y) / 100 - 1)});
  auto c = InterferenceModel::FitCoef(s);
  EXPECT_NEAR(c[0], 1.0, 1e-4);
  EXPECT_NEAR(c[1], 0.0, 1e-4);
  EXPECT_NEAR(c[2], -0.2, 1e-4);
  EXPECT_NEAR(c[3], 0.0, 1e-4);
  EXPECT_NEAR(c[4], -0.5, 1e-4);
}

TEST(Interference, MeasuredPairElseModel) {
  std::vector<WorkloadProfile> w = {W("A", 40, 40), W("B", 50, 50), W("C", 60, 60)};
  PairMeasurement p{1, 0, 0.5, 0.8, 70, 1};  // B slows to 0.5, A to 0.8
  InterferenceModel m(3, {1, 0, 0, 0, -0.5}, {p});
  double r[3], u;
  int ab[2] = {0, 1};
  m.Physics(ab, 2, w, r, &u);
  EXPECT_DOUBLE_EQ(r[0], 0.8);
  EXPECT_DOUBLE_EQ(r[1], 0.5);
  EXPECT_DOUBLE_EQ(u, 70);
  // Unmeasured pair C+C: rate = 1 - 0.5 (1.2 - 1) = 0.9; util = 100 (1 - 0.4^2) = 84.
  int cc[2] = {2, 2};
  m.Physics(cc, 2, w, r, &u);
  EXPECT_NEAR(r[0], 0.9, 1e-12);
  EXPECT_NEAR(u, 84, 1e-12);
  // Three jobs always use the model: A sees 110 others -> 1 - 0.5 * 0.5 = 0.75.
  int abc[3] = {0, 1, 2};
  m.Physics(abc, 3, w, r, &u);
  EXPECT_NEAR(r[0], 0.75, 1e-12);
  EXPECT_NEAR(u, 100 * (1 - 0.6 * 0.5 * 0.4), 1e-9);
  int a[1] = {0};
  m.Physics(a, 1, w, r, &u);
  EXPECT_EQ(r[0], 1.0);
  EXPECT_EQ(u, 40);
}

TEST(Interference, SpeedsAboveOneAreNoise) {
  std::vector<WorkloadProfile> w = {W("A", 10, 10), W("B", 10, 10)};
  InterferenceModel m(2, {1, 0, 0, 0, 0}, {{0, 1, 1.1, 0.97, 20, 1}});
  double r[2], u;
  int ab[2] = {0, 1};
  m.Physics(ab, 2, w, r, &u);
  EXPECT_EQ(r[0], 1.0);
  EXPECT_EQ(r[1], 0.97);
}

class RealData : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
    ASSERT_TRUE(w.ok()) << w.message();
    w_ = *w;
  }
  std::vector<WorkloadProfile> w_;
};

TEST_F(RealData, FittedModelBeatsBaselinesOnHeldOutPairs) {
  for (const char* g : {"pair", "model"}) {
    auto cv = CrossValidate(w_, DataDir() + "/lucid/colocate_info.csv", g);
    ASSERT_TRUE(cv.ok()) << cv.message();
    // Each row gives two samples; grouping by model holds a mixed pair out twice.
    if (std::string(g) == "pair") EXPECT_EQ(cv->samples, 2 * 830);
    else EXPECT_GT(cv->samples, 2 * 830);
    EXPECT_LT(cv->mae, cv->baseline_mae) << g;
    EXPECT_LT(cv->mae, cv->no_slowdown_mae) << g;
    // The parameter-free combined-utilization model is within 10 points on average.
    EXPECT_LT(cv->util_mae, 10.0);
  }
}

TEST_F(RealData, MeasuredPairsAreSymmetricLookups) {
  auto m = InterferenceModel::Fit(w_, DataDir() + "/lucid/colocate_info.csv");
  ASSERT_TRUE(m.ok()) << m.message();
  // colocate_info.csv row 144: PointNet/ShapeNet/32/amp0 with DCGAN/LSUN/32/amp0: 0.989, 1.11, 75.26.
  int a = FindWorkload(w_, "PointNet", "ShapeNet", 32, 0), b = FindWorkload(w_, "DCGAN", "LSUN", 32, 0);
  const PairMeasurement* p = m->FindPair(b, a);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p, m->FindPair(a, b));
  double sa = p->a == a ? p->speed_a : p->speed_b;
  EXPECT_NEAR(sa, 0.989, 0.05);  // mean over repeats of the pair
  // BERT was never co-located in the measurements.
  int bert = FindWorkload(w_, "BERT", "SQuAD", 32, 0);
  EXPECT_EQ(m->FindPair(bert, a), nullptr);
}

TEST_F(RealData, GavelCheckRuns) {
  auto m = InterferenceModel::Fit(w_, DataDir() + "/lucid/colocate_info.csv");
  ASSERT_TRUE(m.ok());
  auto g = CheckAgainstGavel(*m, w_, DataDir() + "/gavel/simulation_throughputs.json");
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_GT(g->pairs, 20);
  EXPECT_GT(g->gavel_mean_rate, 0.1);
  EXPECT_LE(g->gavel_mean_rate, 1.0);
}

}  // namespace
}  // namespace gpucast::sim
