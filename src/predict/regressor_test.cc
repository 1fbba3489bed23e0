#include "predict/regressor.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/predictor.h"
#include "util/paths.h"

namespace gpucast {
namespace {

// y = 2*x0 + sin(3*x1) + x0*x2 on uniform [0,1]^3 plus a noise column.
void Synthetic(int n, uint64_t seed, Matrix* x, std::vector<double>* y) {
  std::mt19937_64 rng(seed);
  auto u = [&] { return (rng() >> 11) * (1.0 / 9007199254740992.0); };
  for (int i = 0; i < n; ++i) {
    std::vector<double> r = {u(), u(), u(), u()};
    x->push_back(r);
    y->push_back(2 * r[0] + std::sin(3 * r[1]) + r[0] * r[2]);
  }
}

double Mse(const std::vector<Estimate>& p, const std::vector<double>& y) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += (p[i].mean - y[i]) * (p[i].mean - y[i]);
  return s / y.size();
}

class EachAlgo : public ::testing::TestWithParam<std::string> {};

TEST_P(EachAlgo, BeatsTheMeanOnHeldOutRows) {
  Matrix xtr, xte;
  std::vector<double> ytr, yte;
  Synthetic(120, 1, &xtr, &ytr);
  Synthetic(60, 2, &xte, &yte);
  auto r = MakeRegressor(GetParam());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Fit(xtr, ytr, 7).ok());
  auto p = (*r)->Predict(xte);
  ASSERT_TRUE(p.ok()) << p.message();
  double mean = 0;
  for (double v : ytr) mean += v;
  mean /= ytr.size();
  double base = 0;
  for (double v : yte) base += (v - mean) * (v - mean);
  base /= yte.size();
  EXPECT_LT(Mse(*p, yte), 0.5 * base) << GetParam();
  for (const Estimate& e : *p) EXPECT_LE(e.low, e.high);
}

TEST_P(EachAlgo, SaveLoadPredictsBitForBit) {
  Matrix x;
  std::vector<double> y;
  Synthetic(50, 3, &x, &y);
  auto a = MakeRegressor(GetParam());
  ASSERT_TRUE((*a)->Fit(x, y, 11).ok());
  auto state = (*a)->Save();
  ASSERT_TRUE(state.ok());
  // Through text, as in a model file.
  nlohmann::json reparsed = nlohmann::json::parse(state->dump());
  auto b = MakeRegressor(GetParam());
  ASSERT_TRUE((*b)->Configure((*a)->Params()).ok());
  ASSERT_TRUE((*b)->Load(reparsed).ok());
  auto pa = (*a)->Predict(x);
  auto pb = (*b)->Predict(x);
  ASSERT_TRUE(pa.ok() && pb.ok());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(std::memcmp(&(*pa)[i], &(*pb)[i], sizeof(Estimate)), 0) << "row " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Algos, EachAlgo, ::testing::Values("forest", "gbm", "ridge", "knn"));

TEST(RegressorTest, ForestMeanIsMeanOfTreeOutputs) {
  // Checks the per-tree reconstruction (base_score + trees * leaf) against
  // XGBoost's own averaged prediction: the interval rests on it.
  Matrix x;
  std::vector<double> y;
  Synthetic(60, 4, &x, &y);
  auto f = MakeRegressor("forest");
  ASSERT_TRUE((*f)->Configure({{"interval", 1.0}, {"trees", 50}}).ok());
  ASSERT_TRUE((*f)->Fit(x, y, 1).ok());
  auto p = (*f)->Predict(x);
  ASSERT_TRUE(p.ok());
  for (const Estimate& e : *p) {
    EXPECT_LE(e.low, e.mean + 1e-5);  // interval 1.0 = min..max of the trees
    EXPECT_GE(e.high, e.mean - 1e-5);
    EXPECT_LT(e.low, e.high);
  }
  // With every tree on all rows and all columns, depth 1 and no regularisation,
  // every tree is the same stump: the min, max and mean coincide.
  ASSERT_TRUE((*f)->Configure({{"subsample", 1.0}, {"colsample_bynode", 1.0}, {"max_depth", 1},
                               {"reg_lambda", 0.0}}).ok());
  ASSERT_TRUE((*f)->Fit(x, y, 1).ok());
  p = (*f)->Predict(x);
  for (const Estimate& e : *p) {
    EXPECT_NEAR(e.low, e.mean, 1e-5);
    EXPECT_NEAR(e.high, e.mean, 1e-5);
  }
}

TEST(RegressorTest, ParamErrors) {
  auto f = MakeRegressor("forest");
  EXPECT_EQ((*f)->Configure({{"trees", 0}}).message(), "forest: parameter 'trees': 0 outside [1, 5000]");
  EXPECT_EQ((*f)->Configure({{"tress", 10}}).message(), "forest: unknown parameter 'tress'");
  EXPECT_EQ((*f)->Configure({{"trees", 2.5}}).message(), "forest: parameter 'trees': want an integer");
  EXPECT_EQ(MakeRegressor("svm").message(),
            "unknown algorithm 'svm' (known: forest, gbm, ridge, knn, roofline, physics, hybrid, mono)");
}

TEST(RegressorTest, ShapeErrors) {
  auto r = MakeRegressor("ridge");
  EXPECT_EQ((*r)->Fit({{1, 2}}, {1}, 0).message(), "ridge: need at least 2 training rows");
  EXPECT_EQ((*r)->Fit({{1, 2}, {1}}, {1, 2}, 0).message(), "ridge: row 1 has 1 features, want 2");
  ASSERT_TRUE((*r)->Fit({{1, 2}, {2, 3}, {3, 5}}, {1, 2, 3}, 0).ok());
  EXPECT_EQ((*r)->Predict({{1, 2, 3}}).message(), "ridge: row 0 has 3 features, want 2");
  EXPECT_EQ((*r)->Predict({{1, NAN}}).message(), "ridge: row 0 feature 1 is not finite");
}

// A skewed ensemble: 19 members at 1, one at -100. Mean -4.05 lies below the
// 10th percentile (1): the interval must be widened to contain it.
TEST(RegressorTest, IntervalContainsThePoint) {
  std::vector<double> m(19, 1.0);
  m.push_back(-100);
  Estimate e = Summarise(m, 0.8);
  EXPECT_DOUBLE_EQ(e.mean, -4.05);
  EXPECT_DOUBLE_EQ(e.low, -4.05);
  EXPECT_DOUBLE_EQ(e.high, 1.0);
}

// The forest's point is its trees' mean, its interval their central 80 %:
// on the real data the two disagree for some jobs (seen: BERT at batch 8);
// the interval must always contain the point.
TEST(RegressorTest, ForestIntervalContainsThePointOnRealData) {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(cat.ok()) << cat.message();
  auto data = BuildDataset(DataDir() + "/lucid/single_data.csv", *cat);
  ASSERT_TRUE(data.ok()) << data.message();
  auto cols = SelectFeatures(data->feature_names, "paper");
  ASSERT_TRUE(cols.ok());
  std::vector<double> y;
  for (double u : data->Labels()) y.push_back(std::log1p(u));
  Matrix x, probe;
  for (const auto& row : data->x) {
    std::vector<double> r;
    for (size_t c : *cols) r.push_back(row[c]);
    x.push_back(r);
  }
  // Probe rows: every measured job at batch 8..512 (FLOPs scaled with the batch).
  size_t flops = 0, batch = 0;
  for (size_t k = 0; k < cols->size(); ++k) {
    if (data->feature_names[(*cols)[k]] == "total_flops") flops = k;
    if (data->feature_names[(*cols)[k]] == "batch_size") batch = k;
  }
  for (const auto& r : x)
    for (double b : {1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 48.0, 96.0, 256.0, 512.0}) {
      std::vector<double> q = r;
      q[flops] *= b / r[batch];
      q[batch] = b;
      probe.push_back(q);
    }
  size_t widened = 0;
  for (uint64_t seed : {0, 1, 2, 3, 4}) {
    auto f = MakeRegressor("forest");
    ASSERT_TRUE((*f)->Configure({{"trees", 300}}).ok());  // the size that showed the bug
    ASSERT_TRUE((*f)->Fit(x, y, seed).ok());
    auto p = (*f)->Predict(probe);
    ASSERT_TRUE(p.ok());
    for (const Estimate& e : *p) {
      EXPECT_LE(e.low, e.mean);
      EXPECT_GE(e.high, e.mean);
      widened += e.low == e.mean || e.high == e.mean;
    }
  }
  // Whether the widening occurs depends on the data and graphs (it did with
  // the gpucast-features v1 costs and no longer does with v2's); the hand
  // case IntervalContainsThePoint exercises it, this test the contract on
  // the real data.
  std::printf("forest probes whose interval was widened to the point: %zu\n", widened);
}

TEST(RegressorTest, QuantileHandValues) {
  EXPECT_DOUBLE_EQ(Quantile({4, 1, 3, 2}, 0.5), 2.5);  // type 7: h = 1.5
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4, 5}, 0.1), 1.4);  // h = 0.4
}

}  // namespace
}  // namespace gpucast
