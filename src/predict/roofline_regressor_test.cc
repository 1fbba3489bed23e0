// The roofline regressor: the step model against an independent
// re-statement of its formula, fitting, errors, save/load, real data.
#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/predictor.h"
#include "predict/regressor.h"
#include "util/paths.h"

namespace gpucast {
namespace {

const std::vector<std::string> kNames = {"batch_size", "est_gpu_busy_ms", "kernel_count", "amp",
                                         "loader_workers", "data_on_gpu", "rl_env", "unused"};

// The documented model (docs/predictor.md), written out once more by hand.
double HandUtil(const std::vector<double>& r, double eff, double tg, double th, double amp_f, double ls,
                double rl_s) {
  double batch = r[0], busy = r[1] / 1000, k = r[2], amp = r[3], w = r[4], gpu_data = r[5], rl = r[6];
  double gpu = busy / eff + k * tg;
  double host = k * th * (1 + amp * amp_f);
  double loader = (1 - gpu_data) * batch * ls / (w > 1 ? w : 1);
  double step = w > 0 ? std::max({gpu, host, loader}) : std::max(gpu, host) + loader;
  step += rl * rl_s;
  return std::min(100.0, 100 * gpu / step);
}

void Synthetic(int n, uint64_t seed, Matrix* x, std::vector<double>* y) {
  std::mt19937_64 rng(seed);
  auto u = [&] { return (rng() >> 11) * (1.0 / 9007199254740992.0); };
  for (int i = 0; i < n; ++i) {
    std::vector<double> r = {std::pow(2.0, 4 + static_cast<int>(u() * 4)), std::pow(10.0, -3 + 5 * u()),
                             std::round(std::pow(10.0, 1 + 2.5 * u())), std::floor(u() * 2),
                             std::floor(u() * 3), std::floor(u() * 2), u() < 0.15 ? 1.0 : 0.0, u()};
    x->push_back(r);
    y->push_back(std::log1p(HandUtil(r, 0.4, 4e-6, 3e-5, 0.3, 2e-4, 0.05)));
  }
}

std::unique_ptr<Regressor> Named() {
  auto r = MakeRegressor("roofline");
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE((*r)->SetFeatureNames(kNames).ok());
  return std::move(r).value();
}

TEST(RooflineTest, RecoversItsOwnModelOnHeldOutRows) {
  Matrix xtr, xte;
  std::vector<double> ytr, yte;
  Synthetic(80, 1, &xtr, &ytr);
  Synthetic(40, 2, &xte, &yte);
  auto r = Named();
  ASSERT_TRUE(r->Fit(xtr, ytr, 0).ok());
  auto p = r->Predict(xte);
  ASSERT_TRUE(p.ok()) << p.message();
  double se = 0;
  for (size_t i = 0; i < yte.size(); ++i) {
    se += ((*p)[i].mean - yte[i]) * ((*p)[i].mean - yte[i]);
    EXPECT_LE((*p)[i].low, (*p)[i].mean);
    EXPECT_GE((*p)[i].high, (*p)[i].mean);
  }
  EXPECT_LT(std::sqrt(se / yte.size()), 0.05);  // RMSLE of noise-free data
}

TEST(RooflineTest, SaveLoadBitForBitAndErrors) {
  Matrix x;
  std::vector<double> y;
  Synthetic(40, 3, &x, &y);
  auto a = Named();
  ASSERT_TRUE(a->Fit(x, y, 0).ok());
  auto state = a->Save();
  ASSERT_TRUE(state.ok());
  auto b = Named();
  ASSERT_TRUE(b->Load(nlohmann::json::parse(state->dump())).ok());
  auto pa = a->Predict(x), pb = b->Predict(x);
  ASSERT_TRUE(pa.ok() && pb.ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(std::memcmp(&(*pa)[i], &(*pb)[i], sizeof(Estimate)), 0);

  auto c = MakeRegressor("roofline");
  EXPECT_EQ((*c)->SetFeatureNames({"total_flops", "params"}).message(),
            "roofline: needs feature 'est_gpu_busy_ms' (use feature set 'paper+physical' or 'all')");
  EXPECT_EQ((*c)->Fit(x, y, 0).message(), "roofline: feature names not set");
  nlohmann::json bad = *state;
  bad["theta"]["efficiency"] = 7.0;
  EXPECT_EQ(Named()->Load(bad).message(), "roofline: theta 'efficiency' outside its bounds");
}

// Fit on all 52 measured jobs: the physics must order the clear cases (big
// convolutional / transformer steps keep the GPU busy; tiny RL and
// recommendation steps sit at the kernel-issue floor). The full fit is a
// compromise (PointNet's loader pulls the loader cost up), so only the order is checked.
TEST(RooflineTest, RealDataClearCases) {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(cat.ok()) << cat.message();
  auto data = BuildDataset(DataDir() + "/lucid/single_data.csv", *cat);
  ASSERT_TRUE(data.ok()) << data.message();
  auto p = Predictor::Train(*data, "roofline", 0, "all");
  ASSERT_TRUE(p.ok()) << p.message();
  auto pred = p->PredictFeatures(data->x);
  ASSERT_TRUE(pred.ok());
  double big_min = 100, small_max = 0;
  for (size_t i = 0; i < data->rows.size(); ++i) {
    const std::string& m = data->rows[i].model;
    double u = (*pred)[i].util;
    if (m == "ResNet50" || m == "BERT") big_min = std::min(big_min, u);
    if (m == "PPO" || m == "TD3" || m == "NeuMF") small_max = std::max(small_max, u);
  }
  EXPECT_GT(big_min, 40);
  EXPECT_LT(small_max, 30);
}

}  // namespace
}  // namespace gpucast
