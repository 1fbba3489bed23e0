#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#include <gtest/gtest.h>

#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/evaluate.h"
#include "predict/physics.h"
#include "predict/predictor.h"
#include "util/paths.h"

namespace gpucast {
namespace {

using nlohmann::json;

const std::vector<std::string> kNames = {"est_compute_ms", "est_memory_ms", "kernel_count", "amp",
                                         "batch_size",     "loader_workers", "data_on_gpu",  "rl_env"};

json Theta() {
  return json{{"theta",
               {{"eff_compute", 0.5},
                {"eff_memory", 0.25},
                {"gpu_s_per_kernel", 2e-6},
                {"host_s_per_kernel", 1e-5},
                {"amp_host_factor", 1.0},
                {"rl_s_per_env_step", 0.01},
                {"host_s_per_step", 1e-6}}},
              {"resid_low", -0.1},
              {"resid_high", 0.2},
              {"loader_s_per_sample", 1e-3},
              {"workload_loader_s_per_sample", {1e-3}}};
}

std::unique_ptr<PhysicsModel> Loaded() {
  auto m = MakePhysicsModel();
  EXPECT_TRUE(m->SetFeatureNames(kNames).ok());
  Status st = m->Load(Theta());
  EXPECT_TRUE(st.ok()) << st.message();
  return m;
}

// Hand-computed step: compute 10 ms at 50% = 20 ms, memory 2 ms at 25% = 8 ms,
// 1000 kernels x 2 us = 2 ms: gpu 30 ms. Launches 1000 x 10 us = 10 ms (x2 with
// AMP), overlapping the GPU; 1 us of per-step host work in series.
TEST(PhysicsTest, HandComputedSteps) {
  auto m = Loaded();
  // Data on the GPU, no loader: step = max(30, 10) + 0.001 ms = 30.001 ms.
  auto p = m->PredictSteps({{10, 2, 1000, 0, 32, 0, 1, 0}});
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_NEAR((*p)[0].gpu_s, 0.030, 1e-12);
  EXPECT_NEAR((*p)[0].step_s, 0.030001, 1e-9);
  EXPECT_NEAR((*p)[0].util, 100 * 30 / 30.001, 1e-6);
  // In-process loader (0 workers) of unknown cost: the stored median, 1 ms per
  // sample, in series: 32 ms; step 62.001 ms.
  p = m->PredictSteps({{10, 2, 1000, 0, 32, 0, 0, 0}});
  EXPECT_NEAR((*p)[0].step_s, 0.062001, 1e-9);
  EXPECT_NEAR((*p)[0].util, 100 * 30.0 / 62.001, 1e-6);
  // Two workers overlap the GPU: loader 16 ms < 30 ms, the GPU binds.
  p = m->PredictSteps({{10, 2, 1000, 0, 32, 2, 0, 0}});
  EXPECT_NEAR((*p)[0].step_s, 0.030001, 1e-9);
  // Batch 128 with two workers: loader 64 ms binds; util 100 * 30 / 64 (the
  // est_* times held fixed here to isolate the loader term).
  p = m->PredictSteps({{10, 2, 1000, 0, 128, 2, 0, 0}});
  EXPECT_NEAR((*p)[0].step_s, 0.064, 1e-9);
  // An RL environment adds 10 ms per env step in series (and no input pipeline).
  p = m->PredictSteps({{10, 2, 1000, 0, 32, 0, 0, 1}});
  EXPECT_NEAR((*p)[0].step_s, 0.040001, 1e-9);
  // Host-bound under AMP: 100 kernels of nothing: gpu 0.2 ms, launches 100 x 10 us x 2 = 2 ms,
  // + 1 us: 2.001 ms.
  p = m->PredictSteps({{0, 0, 100, 1, 32, 0, 1, 0}});
  EXPECT_NEAR((*p)[0].step_s, 0.002001, 1e-9);
  EXPECT_NEAR((*p)[0].util, 100 * 0.0002 / 0.002001, 1e-6);
  // Launch-bound without AMP: 4000 kernels: gpu 20 + 8 + 8 = 36 ms, launches 40 ms bind: 40.001 ms.
  p = m->PredictSteps({{10, 2, 4000, 0, 32, 0, 1, 0}});
  EXPECT_NEAR((*p)[0].step_s, 0.040001, 1e-12);
  EXPECT_NEAR((*p)[0].util, 100 * 36 / 40.001, 1e-9);
}

TEST(PhysicsTest, PhysicalOutsideTheData) {
  auto m = Loaded();
  double last = 0;
  for (double batch = 1; batch <= (1 << 20); batch *= 2) {
    // A fixed model, data on the GPU: compute and memory time grow with the
    // batch, kernels and host time do not.
    auto p = m->PredictSteps({{0.05 * batch, 0.01 * batch, 500, 0, batch, 0, 1, 0}});
    ASSERT_TRUE(p.ok());
    double u = (*p)[0].util;
    EXPECT_GE(u, last - 1e-9) << "batch " << batch;  // never falls as the batch grows
    EXPECT_LE(u, 100);
    last = u;
  }
  EXPECT_GT(last, 99.9);  // the GPU binds
  // With 4 loader workers at 1 ms per sample the input pipeline binds first:
  // util tends to gpu / loader = (0.05/0.5 + 0.01/0.25) / (1/4) = 56 %, never 100.
  auto p = m->PredictSteps({{0.05 * 1e6, 0.01 * 1e6, 500, 0, 1e6, 4, 0, 0}});
  EXPECT_NEAR((*p)[0].util, 56, 0.01);
  // Absurd inputs stay in [0, 100].
  p = m->PredictSteps({{1e12, 1e12, 0, 1, 1, 0, 1, 0}, {0, 0, 0, 0, 1, 0, 1, 0}});
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR((*p)[0].util, 100, 1e-9);
  EXPECT_GE((*p)[1].util, 0);
}

TEST(PhysicsTest, FitRecoversAModelItGeneratedItself) {
  auto truth = Loaded();
  Matrix x;
  std::vector<double> y, step;
  for (double batch : {16.0, 64.0, 256.0})
    for (double amp : {0.0, 1.0})
      for (double kernels : {50.0, 800.0})
        for (double workers : {0.0, 2.0})
          for (double on_gpu : {0.0, 1.0}) {
            x.push_back({0.2 * batch, 0.05 * batch, kernels, amp, batch, workers, on_gpu, 0});
            auto p = truth->PredictSteps({x.back()});
            y.push_back(std::log1p((*p)[0].util));
            step.push_back((*p)[0].step_s);
          }
  auto m = MakePhysicsModel();
  ASSERT_TRUE(m->SetFeatureNames(kNames).ok());
  m->SetStepTimes(step);
  ASSERT_TRUE(m->Fit(x, y, 0).ok());
  auto p = m->PredictSteps(x);
  ASSERT_TRUE(p.ok());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(std::log1p((*p)[i].util), y[i], 0.05) << "row " << i;
    EXPECT_NEAR(std::log((*p)[i].step_s), std::log(step[i]), 0.05) << "row " << i;
  }
}

// The tensor-core split (tensor_core_split, an experiment off by default): a mixed-precision row's
// compute term is divided by eff_tensor_core, an FP32 row's by eff_compute. Hand-counted: a weight-free
// 4096³ matmul on the A100, forward + backward 3 * 2 * 4096³ FLOPs, compute-bound at either peak
// (features_test.cc, AmpUsesTheTensorPeakForComputeBoundMatmul): est_compute 3 * 2 * 4096³ / 19.5e12 s
// in FP32, / 312e12 s under AMP. With eff_compute 0.5 and eff_tensor_core 0.2 the GPU-busy times are
// those over 0.5 and over 0.2 (no memory term, one kernel of 2 us here).
TEST(PhysicsTest, TensorCoreSplitDividesAnAmpRowsComputeByItsOwnEfficiency) {
  const double flops = 3 * 2.0 * 4096 * 4096 * 4096;
  const double fp32_ms = flops / 19.5e12 * 1e3, amp_ms = flops / 312e12 * 1e3;
  const Matrix x = {{fp32_ms, 0, 1, 0, 32, 0, 1, 0}, {amp_ms, 0, 1, 1, 32, 0, 1, 0}};
  json split = Theta();
  split["theta"]["eff_tensor_core"] = 0.2;
  auto on = MakePhysicsModel();
  ASSERT_TRUE(on->Configure(json{{"tensor_core_split", 1}}).ok());
  ASSERT_TRUE(on->SetFeatureNames(kNames).ok());
  ASSERT_TRUE(on->Load(split).ok());
  auto p = on->PredictSteps(x);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_NEAR((*p)[0].gpu_s, flops / 19.5e12 / 0.5 + 2e-6, 1e-12);
  EXPECT_NEAR((*p)[1].gpu_s, flops / 312e12 / 0.2 + 2e-6, 1e-12);
  EXPECT_EQ(on->Params().value("tensor_core_split", -1), 1);
  // A file without eff_tensor_core (every file before the setting) reads as one efficiency for both.
  auto off = Loaded();
  EXPECT_FALSE(off->Params().contains("tensor_core_split"));
  p = off->PredictSteps(x);
  EXPECT_NEAR((*p)[0].gpu_s, flops / 19.5e12 / 0.5 + 2e-6, 1e-12);
  EXPECT_NEAR((*p)[1].gpu_s, flops / 312e12 / 0.5 + 2e-6, 1e-12);
  // Saved and loaded again: the same efficiencies.
  auto saved = on->Save();
  ASSERT_TRUE(saved.ok());
  EXPECT_DOUBLE_EQ((*saved)["theta"]["eff_tensor_core"].get<double>(), 0.2);
  auto again = MakePhysicsModel();
  ASSERT_TRUE(again->Configure(on->Params()).ok());
  ASSERT_TRUE(again->SetFeatureNames(kNames).ok());
  ASSERT_TRUE(again->Load(*saved).ok());
  EXPECT_NEAR((*again->PredictSteps(x))[1].gpu_s, flops / 312e12 / 0.2 + 2e-6, 1e-12);
}

// Rows a split model (eff_compute 0.5, eff_tensor_core 0.15) made: batch 16-256, FP32 and AMP,
// few and many kernels; y is log1p(utilization), NaN for the AMP rows unless `amp_util_measured`.
struct SplitRows {
  Matrix x;
  std::vector<double> y, step;
};
SplitRows MakeSplitRows(bool amp_util_measured) {
  json split = Theta();
  split["theta"]["eff_tensor_core"] = 0.15;
  auto truth = MakePhysicsModel();
  EXPECT_TRUE(truth->Configure(json{{"tensor_core_split", 1}}).ok());
  EXPECT_TRUE(truth->SetFeatureNames(kNames).ok());
  EXPECT_TRUE(truth->Load(split).ok());
  SplitRows r;
  for (double batch : {16.0, 64.0, 256.0})
    for (double amp : {0.0, 1.0})
      for (double kernels : {50.0, 800.0}) {
        r.x.push_back({0.2 * batch, 0, kernels, amp, batch, 0, 1, 0});
        auto p = truth->PredictSteps({r.x.back()});
        EXPECT_TRUE(p.ok());
        if (!p.ok()) return r;
        r.y.push_back(amp > 0 && !amp_util_measured ? std::nan("") : std::log1p((*p)[0].util));
        r.step.push_back((*p)[0].step_s);
      }
  return r;
}

// Fitted with the split, on rows a split model made: the steps come back, and the two efficiencies
// apart (0.5 and 0.15). The rows have no memory term (a memory time proportional to the compute time
// would trade eff_memory against both).
TEST(PhysicsTest, TensorCoreSplitFitRecoversBothEfficiencies) {
  const auto [x, y, step] = MakeSplitRows(/*amp_util_measured=*/true);
  auto m = MakePhysicsModel();
  ASSERT_TRUE(m->Configure(json{{"tensor_core_split", 1}}).ok());
  ASSERT_TRUE(m->SetFeatureNames(kNames).ok());
  m->SetStepTimes(step);
  ASSERT_TRUE(m->Fit(x, y, 0).ok());
  double eff_compute = 0, eff_tc = 0;
  for (const auto& [name, value] : m->Parameters()) {
    if (name == "eff_compute") eff_compute = value;
    if (name == "eff_tensor_core") eff_tc = value;
  }
  EXPECT_NEAR(eff_compute, 0.5, 0.05);
  EXPECT_NEAR(eff_tc, 0.15, 0.015);
  auto p = m->PredictSteps(x);
  ASSERT_TRUE(p.ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(std::log((*p)[i].step_s), std::log(step[i]), 0.05) << "row " << i;
}

// The tensor-core split reaches a model where it is made (RegressorOptions, no process-wide default):
// MakeRegressor / MakePhysicsModel with it on start with tensor_core_split 1 (physics, and hybrid's
// physics), and UtilModel::Fit makes its model with FitOptions::regressor. A model made without it in
// the same process, before or after, is the one-efficiency model: the two never meet.
TEST(PhysicsTest, TensorCoreSplitReachesTheModelWhereItIsMade) {
  RegressorOptions on;
  on.tensor_core_split = true;
  auto before = MakeRegressor("physics");
  ASSERT_TRUE(before.ok());
  auto physics = MakeRegressor("physics", on);
  ASSERT_TRUE(physics.ok());
  auto after = MakeRegressor("physics");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*physics)->Params().value("tensor_core_split", -1), 1);
  EXPECT_FALSE((*before)->Params().contains("tensor_core_split"));
  EXPECT_FALSE((*after)->Params().contains("tensor_core_split"));
  EXPECT_EQ(MakePhysicsModel(on)->Params().value("tensor_core_split", -1), 1);
  EXPECT_FALSE(MakePhysicsModel()->Params().contains("tensor_core_split"));
  // Other algorithms ignore it: their params are the default ones.
  auto ridge = MakeRegressor("ridge", on);
  ASSERT_TRUE(ridge.ok());
  EXPECT_EQ((*ridge)->Params(), (*MakeRegressor("ridge"))->Params());

  // Through UtilModel::Fit (what train and evaluate call): the rows a split model made, with the
  // amp rows' utilization measured, fitted with and without the setting in one process.
  const auto [x, y, step] = MakeSplitRows(/*amp_util_measured=*/true);
  std::vector<double> util;
  for (double v : y) util.push_back(std::expm1(v));
  const std::vector<size_t> cols = {0, 1, 2, 3, 4, 5, 6, 7};
  auto fit = [&](const std::string& algo, bool split) {
    FitOptions fo;
    fo.step_s = step;
    fo.calibrate = false;
    fo.regressor.tensor_core_split = split;
    return UtilModel::Fit(x, util, kNames, cols, algo, nullptr, 0, fo);
  };
  auto eff_tc = [](const Regressor& r) {
    for (const auto& [name, value] : dynamic_cast<const PhysicsModel&>(r).Parameters())
      if (name == "eff_tensor_core") return value;
    return -1.0;
  };
  auto with = fit("physics", true), without = fit("physics", false);
  ASSERT_TRUE(with.ok()) << with.status().message();
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_EQ(with->regressor().Params().value("tensor_core_split", -1), 1);
  EXPECT_NEAR(eff_tc(with->regressor()), 0.15, 0.015);  // MakeSplitRows' truth
  EXPECT_FALSE(without->regressor().Params().contains("tensor_core_split"));
  EXPECT_EQ(eff_tc(without->regressor()), -1.0);
  // hybrid: its physics is made with the setting, and its saved state carries eff_tensor_core.
  auto hybrid = fit("hybrid", true), plain = fit("hybrid", false);
  ASSERT_TRUE(hybrid.ok()) << hybrid.status().message();
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  auto hs = hybrid->regressor().Save(), ps = plain->regressor().Save();
  ASSERT_TRUE(hs.ok() && ps.ok());
  EXPECT_TRUE((*hs)["physics"]["theta"].contains("eff_tensor_core"));
  EXPECT_FALSE((*ps)["physics"]["theta"].contains("eff_tensor_core"));
}

// The same rows with the amp rows' utilization unmeasured (step-only, as Pollux'): an amp step alone
// cannot tell slower tensor cores from more host work under autocast, so the split is not fitted:
// eff_tensor_core is eff_compute and every prediction is the one-efficiency fit's, bit for bit; the
// model file says so (eff_tensor_core_identified false) and reads back the same.
TEST(PhysicsTest, TensorCoreSplitIsNotFittedWithoutAnAmpRowsUtilization) {
  const auto [x, y, step] = MakeSplitRows(/*amp_util_measured=*/false);
  auto fit = [&](int on) {
    auto m = MakePhysicsModel();
    EXPECT_TRUE(m->Configure(json{{"tensor_core_split", on}}).ok());
    EXPECT_TRUE(m->SetFeatureNames(kNames).ok());
    m->SetStepTimes(step);
    EXPECT_TRUE(m->Fit(x, y, 0).ok());
    return m;
  };
  auto one = fit(0), m = fit(1);
  double eff_compute = -1, eff_tc = -2;
  for (const auto& [name, value] : m->Parameters()) {
    if (name == "eff_compute") eff_compute = value;
    if (name == "eff_tensor_core") eff_tc = value;
  }
  EXPECT_EQ(eff_tc, eff_compute);
  auto a = one->PredictSteps(x), b = m->PredictSteps(x);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ((*a)[i].step_s, (*b)[i].step_s) << "row " << i;
    EXPECT_EQ((*a)[i].util, (*b)[i].util) << "row " << i;
  }
  auto saved = m->Save();
  ASSERT_TRUE(saved.ok());
  EXPECT_FALSE(saved->at("eff_tensor_core_identified").get<bool>());
  auto back = MakePhysicsModel();
  ASSERT_TRUE(back->SetFeatureNames(kNames).ok());
  ASSERT_TRUE(back->Load(*saved).ok());
  auto c = back->PredictSteps(x);
  ASSERT_TRUE(c.ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ((*c)[i].step_s, (*b)[i].step_s) << "row " << i;
}

// A workload of step-only rows (no utilization: Pollux) has a fitted loader, but with a
// step alone its loader and a GPU slower than the model are the same signature: it neither
// sets the loader an unseen job gets nor is carried to its graph. Rows made by the truth
// model: workload 0 (graph 1000) with utilization and 1 ms per sample, workload 1 (graph
// 1001) step-only with 21.5 ms per sample (a grid value, as if its GPU were slower),
// workload 2 (graph 1002) data on the GPU.
TEST(PhysicsTest, StepOnlyWorkloadsDoNotSetTheUnseenLoader) {
  auto truth = Loaded();
  const double slow = std::pow(10.0, -6.0 + 5.0 * 26 / 30);
  std::vector<std::string> names = kNames;
  names.push_back("params");
  Matrix x;
  std::vector<double> y, step;
  std::vector<int> group;
  for (int w = 0; w < 3; ++w)
    for (double batch : {16.0, 64.0, 256.0})
      for (double kernels : {50.0, 800.0}) {
        std::vector<double> row = {0.2 * batch, 0.05 * batch, kernels, 0, batch, 0, w == 2 ? 1.0 : 0.0, 0};
        StepVariation v;
        if (w == 1) v.unknown_loader_s_per_sample = slow;
        auto p = truth->PredictSteps({row}, v);
        ASSERT_TRUE(p.ok());
        row.push_back(1000 + w);
        x.push_back(row);
        y.push_back(w == 1 ? std::nan("") : std::log1p((*p)[0].util));
        step.push_back((*p)[0].step_s);
        group.push_back(w);
      }
  auto m = MakePhysicsModel();
  ASSERT_TRUE(m->SetFeatureNames(names).ok());
  m->SetStepTimes(step);
  m->SetGroups(group);
  ASSERT_TRUE(m->Fit(x, y, 0).ok());
  double unseen = -1;
  for (const auto& [name, value] : m->Parameters())
    if (name == "loader_s_per_sample") unseen = value;
  EXPECT_NEAR(unseen, 1e-3, 1e-9);  // workload 0's; the median of both would be about 11 ms
  // Workload 1's graph on another GPU (own_loaders): the unseen loader, not its 21.5 ms.
  StepVariation carry;
  carry.own_loaders = true;
  auto p = m->PredictSteps({x[6]}, carry);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ((*p)[0].own_loader_s_per_sample, 0);
  EXPECT_TRUE((*p)[0].unknown_pipeline);
  // Workload 0's graph carries its own identified loader.
  p = m->PredictSteps({x[0]}, carry);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_NEAR((*p)[0].own_loader_s_per_sample, 1e-3, 1e-9);
}

// The per-step host work of a workload whose script is not measured (issue 36,
// the small-MLP runs): a file may carry the training workloads' range of it;
// a what-if replaces the fitted value by hand: step = max(30, 10) + 5 ms.
TEST(PhysicsTest, HostStepRangeLoadsAndVaries) {
  auto m = Loaded();
  auto [lo, hi] = m->HostStepRange();
  EXPECT_TRUE(std::isnan(lo) && std::isnan(hi));  // a file without it: unknown
  json j = Theta();
  j["host_s_per_step_range"] = {1e-4, 5e-3};
  ASSERT_TRUE(m->Load(j).ok());
  std::tie(lo, hi) = m->HostStepRange();
  EXPECT_EQ(lo, 1e-4);
  EXPECT_EQ(hi, 5e-3);
  StepVariation v;
  v.host_s_per_step = 5e-3;
  auto p = m->PredictSteps({{10, 2, 1000, 0, 32, 0, 1, 0}}, v);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_NEAR((*p)[0].step_s, 0.035, 1e-12);
  EXPECT_NEAR((*p)[0].util, 100 * 30 / 35.0, 1e-9);
  j["host_s_per_step_range"] = {5e-3, 1e-4};
  Status st = m->Load(j);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("host_s_per_step_range"), std::string::npos) << st.message();
}

// Workloads whose scripts do different per-step host work in series (0.2, 0.5,
// 1, 2 and 5 ms; made by the truth model with that value), GPU-bound enough that
// the launches hide under the GPU: each workload's implied per-step work is its
// measured idle time, and the range is their 10% and 90% quantiles by linear
// interpolation: 0.2 + 0.4 x 0.3 = 0.32 ms and 2 + 0.6 x 3 = 3.8 ms.
TEST(PhysicsTest, HostStepRangeIsTheWorkloadsSpread) {
  auto truth = Loaded();
  const double host[] = {2e-4, 5e-4, 1e-3, 2e-3, 5e-3};
  Matrix x;
  std::vector<double> y, step;
  std::vector<int> group;
  for (int w = 0; w < 5; ++w)
    for (double batch : {64.0, 256.0})
      for (double amp : {0.0, 1.0}) {
        x.push_back({0.2 * batch, 0.05 * batch, 50, amp, batch, 0, 1, 0});
        StepVariation v;
        v.host_s_per_step = host[w];
        auto p = truth->PredictSteps({x.back()}, v);
        ASSERT_TRUE(p.ok());
        y.push_back(std::log1p((*p)[0].util));
        step.push_back((*p)[0].step_s);
        group.push_back(w);
      }
  auto m = MakePhysicsModel();
  ASSERT_TRUE(m->SetFeatureNames(kNames).ok());
  m->SetStepTimes(step);
  m->SetGroups(group);
  ASSERT_TRUE(m->Fit(x, y, 0).ok());
  auto [lo, hi] = m->HostStepRange();
  EXPECT_NEAR(lo, 3.2e-4, 1e-6);
  EXPECT_NEAR(hi, 3.8e-3, 1e-6);
  // Saved and loaded with the model.
  auto saved = m->Save();
  ASSERT_TRUE(saved.ok());
  auto back = MakePhysicsModel();
  ASSERT_TRUE(back->SetFeatureNames(kNames).ok());
  ASSERT_TRUE(back->Load(*saved).ok());
  EXPECT_EQ(back->HostStepRange(), m->HostStepRange());
}

TEST(PhysicsTest, MissingFeatureIsAClearError) {
  auto m = MakePhysicsModel();
  EXPECT_EQ(m->SetFeatureNames({"total_flops"}).message(),
            "physics: needs feature 'est_compute_ms' (use feature set 'all' or 'paper+physical')");
}

TEST(ConformalTest, OffsetsAreOrderStatistics) {
  std::vector<double> r = {-0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4};  // n = 9
  // level 0.8: floor(10 * 0.1) = 1st, ceil(10 * 0.9) = 9th.
  auto [lo, hi] = ConformalOffsets(r, 0.8);
  EXPECT_DOUBLE_EQ(lo, -0.4);
  EXPECT_DOUBLE_EQ(hi, 0.4);
  // level 0.5: floor(2.5) = 2nd, ceil(7.5) = 8th.
  std::tie(lo, hi) = ConformalOffsets(r, 0.5);
  EXPECT_DOUBLE_EQ(lo, -0.3);
  EXPECT_DOUBLE_EQ(hi, 0.3);
  EXPECT_EQ(ConformalOffsets({}, 0.8), std::make_pair(0.0, 0.0));
}

// The real measurements: the physics model's step-time targets come from the
// speed column, and leave-one-workload-out with conformal intervals
// calibrated on the training workloads only holds the measured value about
// as often as it says (held-out rows), and beats the mean.
TEST(PhysicsTest, RealDataLowo) {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(cat.ok()) << cat.message();
  auto data = BuildDataset(DataDir() + "/lucid/single_data.csv", *cat);
  ASSERT_TRUE(data.ok()) << data.message();
  // BERT batch 32 fp32: 32 / 84.872 samples/s = 377 ms; PPO's speed is not samples/s.
  EXPECT_NEAR(data->step_s[0], 32 / 84.872, 1e-12);
  for (size_t i = 0; i < data->rows.size(); ++i)
    if (data->rows[i].model == "PPO" || data->rows[i].model == "TD3") {
      EXPECT_TRUE(std::isnan(data->step_s[i]));
    }
  EvalOptions o;
  o.algo = "physics";
  o.split = *ParseSplit("lowo");
  o.repeats = 1;
  auto r = Evaluate(*data, o);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->predictions.size(), 52u);
  EXPECT_LT(r->rmsle.mean, r->mean_baseline_rmsle);
  EXPECT_GE(r->coverage.mean, 0.6);
  EXPECT_LE(r->coverage.mean, 0.95);
  EXPECT_LE(r->rmsle_ci.low, r->rmsle.mean);
  EXPECT_GE(r->rmsle_ci.high, r->rmsle.mean);
}

// Issue 19.6: a loader-bound job predicted from its stated per-sample loader
// time. PointNet (Lucid: 2 workers, batch 32 fp32 measured at 11.5%) held out
// of training; its rows given loader_ms_per_sample = 14.5, the CPU time per
// sample its throughput plateau implies (docs/measure.md: 2 x 1000 / 138
// samples/s). Criterion fixed before the run: each row within a factor 2 of
// its measured utilization (before the fix: 0.5% for batch 32).
TEST(PhysicsTest, StatedLoaderTimePredictsPointNet) {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(cat.ok()) << cat.message();
  auto data = BuildDataset(DataDir() + "/lucid/single_data.csv", *cat);
  ASSERT_TRUE(data.ok()) << data.message();
  const auto& names = data->feature_names;
  auto col = [&](const std::string& n) { return static_cast<size_t>(std::find(names.begin(), names.end(), n) - names.begin()); };
  const size_t ms = col("loader_ms_per_sample"), known = col("loader_ms_per_sample_known");
  ASSERT_LT(known, names.size());
  Matrix xtr, xte;
  std::vector<double> ytr, measured;
  FitOptions fo;
  fo.calibrate = false;
  for (size_t i = 0; i < data->rows.size(); ++i) {
    if (data->rows[i].model == "PointNet") {
      std::vector<double> r = data->x[i];
      r[ms] = 14.5;
      r[known] = 1;
      xte.push_back(r);
      measured.push_back(data->rows[i].gpu_util);
    } else {
      xtr.push_back(data->x[i]);
      ytr.push_back(data->rows[i].gpu_util);
      fo.step_s.push_back(data->step_s[i]);
      fo.group.push_back(data->group[i]);
    }
  }
  ASSERT_EQ(xte.size(), 6u);
  auto cols = SelectFeatures(names, "all");
  ASSERT_TRUE(cols.ok());
  auto m = UtilModel::Fit(xtr, ytr, names, *cols, "physics", nullptr, 1, fo);
  ASSERT_TRUE(m.ok()) << m.message();
  auto p = m->Predict(xte);
  ASSERT_TRUE(p.ok()) << p.message();
  for (size_t i = 0; i < xte.size(); ++i) {
    std::printf("PointNet row %zu: measured %.1f%%, predicted %.1f%%\n", i, measured[i], (*p)[i].util);
    EXPECT_LT(std::fabs(std::log((*p)[i].util / measured[i])), std::log(2.0)) << "row " << i;
  }
}

// Issue 36 (small MLPs on an A100 predicted at ~6%: the fitted per-step host
// work, 3.2 ms, is 88% of their predicted step). The Lucid rows show that
// per-step host work is a fact of each script, not one constant: ResNet-50
// fp32 (data on the GPU, 0 workers) measures 100.0% at 74 ms a step (less
// than 1% idle), DCGAN batch 32 fp32 measures 57.8% at 16.1 ms a step (6.8 ms
// idle with its launches hidden under the GPU). Fitted on those rows, the
// range spans both, and a workload held out (NeuMF, 10% measured) gets a band
// whose high scenario takes the range's low end.
TEST(PhysicsTest, HostStepRangeFromTheLucidRows) {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(cat.ok()) << cat.message();
  auto data = BuildDataset(DataDir() + "/lucid/single_data.csv", *cat);
  ASSERT_TRUE(data.ok()) << data.message();
  Matrix xtr, xte;
  std::vector<double> ytr;
  FitOptions fo;
  fo.calibrate = false;
  for (size_t i = 0; i < data->rows.size(); ++i) {
    if (data->rows[i].model == "NeuMF") {
      xte.push_back(data->x[i]);
    } else {
      xtr.push_back(data->x[i]);
      ytr.push_back(data->rows[i].gpu_util);
      fo.step_s.push_back(data->step_s[i]);
      fo.group.push_back(data->group[i]);
    }
  }
  ASSERT_EQ(xte.size(), 4u);
  auto cols = SelectFeatures(data->feature_names, "all");
  ASSERT_TRUE(cols.ok());
  auto m = UtilModel::Fit(xtr, ytr, data->feature_names, *cols, "physics", nullptr, 1, fo);
  ASSERT_TRUE(m.ok()) << m.message();
  const auto* physics = dynamic_cast<const PhysicsModel*>(&m->regressor());
  ASSERT_NE(physics, nullptr);
  auto [lo, hi] = physics->HostStepRange();
  double fitted = 0;
  for (const auto& [name, value] : physics->Parameters())
    if (name == "host_s_per_step") fitted = value;
  std::printf("per-step host work: fitted %.2f ms, range [%.2f, %.2f] ms\n", fitted * 1e3, lo * 1e3, hi * 1e3);
  EXPECT_LT(lo, 0.74e-3);  // ResNet-50's idle bound
  EXPECT_GT(hi, 3e-3);
  EXPECT_LT(hi, 6.8e-3 * 1.5);  // no workload's idle beyond DCGAN's by far (LSTM amp: 10 ms at batch 128)
  EXPECT_LE(lo, fitted);
  EXPECT_GE(hi, fitted);
  auto risks = m->Risks(xte);
  ASSERT_TRUE(risks.ok()) << risks.message();
  for (const RowRisk& r : *risks) {
    EXPECT_NEAR(r.host_step_short_ms, lo * 1e3, 1e-9);
    EXPECT_NEAR(r.host_step_long_ms, hi * 1e3, 1e-9);
    EXPECT_GT(r.high, 0);  // a shorter per-step host time raises a launch-bound job's utilization
  }
}

}  // namespace
}  // namespace gpucast
