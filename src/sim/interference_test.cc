#include "sim/interference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sim/test_util.h"
#include "util/paths.h"

namespace gpucast::sim {
namespace {

using testing::W;

std::vector<double> RatesOf(const InterferenceModel& m, std::vector<double> u, double* busy) {
  std::vector<double> r(u.size());
  m.Rates(u.data(), static_cast<int>(u.size()), r.data(), busy);
  return r;
}

TEST(Interference, HandComputedCases) {
  double busy;
  // beta 1, no switching cost. 90% + 20%: r0 = 1 / (1 + 0.9 * 0.2) for both;
  // load 1.1 / 1.18 < 1, so no capping.
  InterferenceModel m({1.0, 0.0});
  auto r = RatesOf(m, {90, 20}, &busy);
  EXPECT_NEAR(r[0], 1 / 1.18, 1e-12);
  EXPECT_NEAR(r[1], 1 / 1.18, 1e-12);
  EXPECT_NEAR(busy, 100 * 1.1 / 1.18, 1e-9);
  // Three 100% jobs: r0 = 1/3 each and the device is exactly full.
  r = RatesOf(m, {100, 100, 100}, &busy);
  for (double x : r) EXPECT_NEAR(x, 1.0 / 3, 1e-12);
  EXPECT_NEAR(busy, 100, 1e-9);
  // A weak contention term (beta 0.25): r0 = 1 / 1.5 each, load 3 / 1.5 = 2 > 1,
  // so the capacity cap scales them to 1/3: time slicing.
  r = RatesOf(InterferenceModel({0.25, 0.0}), {100, 100, 100}, &busy);
  for (double x : r) EXPECT_NEAR(x, 1.0 / 3, 1e-12);
  // A switching cost s = 0.1: each job's kernels take 1.1x as long, n saturating
  // jobs get 1 / (n * 1.1).
  r = RatesOf(InterferenceModel({0.25, 0.1}), {100, 100}, &busy);
  for (double x : r) EXPECT_NEAR(x, 1.0 / 2.2, 1e-12);
  EXPECT_NEAR(busy, 100, 1e-9);
  // Alone: rate 1, device busy = its utilization; nobody: busy 0.
  r = RatesOf(m, {37}, &busy);
  EXPECT_EQ(r[0], 1.0);
  EXPECT_EQ(busy, 37);
  m.Rates(nullptr, 0, nullptr, &busy);
  EXPECT_EQ(busy, 0);
  // The default model has no contention: light jobs keep rate 1 exactly.
  r = RatesOf(InterferenceModel(), {10, 20, 30}, &busy);
  for (double x : r) EXPECT_EQ(x, 1.0);
  EXPECT_NEAR(busy, 60, 1e-9);
}

TEST(Interference, SumBoundHoldsForRandomInputs) {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> U(0, 100), B(0, 5), S(0, 0.5);
  std::uniform_int_distribution<int> K(1, 12);
  for (int trial = 0; trial < 20000; ++trial) {
    InterferenceModel m({B(rng), S(rng)});
    int k = K(rng);
    std::vector<double> u(static_cast<size_t>(k));
    for (double& x : u) x = U(rng);
    double busy;
    auto r = RatesOf(m, u, &busy);
    double sum = 0;
    for (int i = 0; i < k; ++i) {
      EXPECT_GT(r[i], 0.0);
      EXPECT_LE(r[i], 1.0);
      sum += r[i] * u[i];
    }
    ASSERT_LE(sum, 100 + 1e-9) << "trial " << trial;
    ASSERT_LE(busy, 100 + 1e-9);
    ASSERT_GE(busy, sum - 1e-9);  // busy includes the switching cost
    // MinRate (the policies' allocation-free admission test) agrees.
    if (k >= 2) {
      ASSERT_NEAR(m.MinRate(u.data(), k - 1, u[k - 1]), *std::min_element(r.begin(), r.end()), 1e-12);
    }
  }
}

TEST(Interference, FitRecoversKnownParameters) {
  InterferenceModel truth({0.7, 0.05});
  std::vector<std::array<double, 4>> s;
  for (double a = 5; a <= 100; a += 5)
    for (double b = 5; b <= 100; b += 5) {
      double r[2], busy, u[2] = {a, b};
      truth.Rates(u, 2, r, &busy);
      s.push_back({a, b, r[0], r[1]});
    }
  InterferenceParams p = InterferenceModel::FitParams(s);
  EXPECT_NEAR(p.beta, 0.7, 0.006);
  EXPECT_NEAR(p.switch_cost, 0.05, 0.003);
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

TEST_F(RealData, FittedModelIsPhysicalAndBeatsBaselinesOnHeldOutPairs) {
  auto m = InterferenceModel::Fit(w_, DataDir() + "/lucid/colocate_info.csv");
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->pairs().size(), 830u);
  double busy;
  // Three saturating jobs: about a third each (less the fitted switching cost).
  auto r = RatesOf(*m, {100, 100, 100}, &busy);
  for (double x : r) EXPECT_NEAR(x, 1.0 / (3 * (1 + m->params().switch_cost)), 1e-9);
  EXPECT_GT(r[0], 0.3);
  // Two light jobs barely slow each other; nine 20% jobs share one device.
  r = RatesOf(*m, {10, 10}, &busy);
  EXPECT_GT(r[0], 0.97);
  r = RatesOf(*m, std::vector<double>(9, 20), &busy);
  EXPECT_LE(9 * 20 * r[0], 100 + 1e-9);
  for (const char* g : {"pair", "model"}) {
    auto cv = CrossValidate(w_, DataDir() + "/lucid/colocate_info.csv", g);
    ASSERT_TRUE(cv.ok()) << cv.message();
    if (std::string(g) == "pair") EXPECT_EQ(cv->samples, 2 * 830);
    else EXPECT_GT(cv->samples, 2 * 830);
    EXPECT_LT(cv->mae, cv->baseline_mae) << g;
    EXPECT_LT(cv->mae, cv->no_slowdown_mae) << g;
    EXPECT_LT(cv->util_mae, 15.0);
  }
}

TEST_F(RealData, GavelCheckRuns) {
  auto m = InterferenceModel::Fit(w_, DataDir() + "/lucid/colocate_info.csv");
  ASSERT_TRUE(m.ok());
  auto g = CheckAgainstGavel(*m, w_, DataDir() + "/gavel/simulation_throughputs.json");
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_GT(g->pairs, 20);
  EXPECT_GT(g->gavel_mean_rate, 0.1);
  EXPECT_LE(g->gavel_mean_rate, 1.0);
  EXPECT_NEAR(g->bias, g->model_mean_rate - g->gavel_mean_rate, 1e-12);
}

TEST_F(RealData, BadInputNamesFileAndLine) {
  std::string dir = testing::TempDir("interference_bad");
  std::string p = testing::WriteText(dir, "c.csv",
                                     ",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,"
                                     "batchsize2,amp2,speed2,gpu_util\n0,BERT,SQuAD,1,32,0,x,BERT,SQuAD,1,32,0,1,50\n");
  auto m = InterferenceModel::Fit(w_, p);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "c.csv: line 2: malformed batch size, amp, speed or gpu_util");
}

}  // namespace
}  // namespace gpucast::sim
