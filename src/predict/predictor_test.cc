#include "predict/predictor.h"
#include "predict/regressor.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include <gtest/gtest.h>

namespace gpucast {
namespace {

double Log1pShift(double util, double d) { return std::expm1(std::log1p(util) + d); }

// Window of k = ceil((n+1) level) sorted scores of least span; ties: the lowest.
TEST(IntervalTest, ShortestWindowHandValues) {
  // n = 5, level 0.5: k = 3; spans [0,2] 2, [1,3] 2, [2,10] 8: the first.
  EXPECT_EQ(ShortestWindow({0, 1, 2, 3, 10}, 0.5), (std::pair<double, double>{0, 2}));
  // level 0.8: k = ceil(4.8) = 5 = n: the whole sample.
  EXPECT_EQ(ShortestWindow({0, 1, 2, 3, 10}, 0.8), (std::pair<double, double>{0, 10}));
  // A long tail on the left (n = 6, k = ceil(3.5) = 4): spans 9.1, 8.2, 0.3: the window sits where the mass is.
  EXPECT_EQ(ShortestWindow({-9, -8, 0, 0.1, 0.2, 0.3}, 0.5), (std::pair<double, double>{0, 0.3}));
  EXPECT_EQ(ShortestWindow({}, 0.8), (std::pair<double, double>{0, 0}));
}

// The shortest windows alone do not nest across levels: of {0, 1, 2, 6, 7, 8, 9} (n = 7) the
// shortest 3-window is [0, 2] (level 0.3: k = ceil(2.4) = 3), the shortest 4-window [6, 9] (level
// 0.5: k = 4). The window is one chain of nested windows, through the shortest window of
// ceil(8 * 0.8) = 7 scores (all, [0, 9]) and the shortest of ceil(8 * 0.5) = 4 inside it ([6, 9],
// spans 6, 6, 6, 3): at 0.3 that one peeled by one score, dropping the end whose removal
// shortens it more: 7 - 6 = 1 against 9 - 8 = 1, a tie: the high end, [6, 8]. The former
// construction, the hull of the shortest windows of 1..k scores, was [0, 9] at 0.5 (9 wide, not 3).
TEST(IntervalTest, ShortestWindowNestsAcrossLevels) {
  const std::vector<double> s = {0, 1, 2, 6, 7, 8, 9};
  EXPECT_EQ(ShortestWindow(s, 0.3), (std::pair<double, double>{6, 8}));
  EXPECT_EQ(ShortestWindow(s, 0.5), (std::pair<double, double>{6, 9}));
  EXPECT_EQ(ShortestWindow(s, 0.8), (std::pair<double, double>{0, 9}));
  // At 0.8 the window is the unconstrained shortest one; the hull was wider. Of t (n = 9, k =
  // ceil(10 * 0.8) = 8) the 8-windows are [0, 4.6] (4.6) and [0.5, 5] (4.5): [0.5, 5]. The hull also
  // took the shortest 3-window [0, 0.6] (spans 0.6, 1, 1.9, 1.8, 1.5, 1.3, 1): [0, 5], 5 wide.
  const std::vector<double> t = {0, 0.5, 0.6, 1.5, 2.5, 3.3, 4, 4.6, 5};
  EXPECT_EQ(ShortestWindow(t, 0.8), (std::pair<double, double>{0.5, 5}));
  // At 0.5 (k = 5): the shortest 5-window inside [0.5, 5] (spans 2.8, 3.4, 3.1, 2.5): [2.5, 5];
  // at 0.9 (k = 9) it grows by the one score left, 0.
  EXPECT_EQ(ShortestWindow(t, 0.5), (std::pair<double, double>{2.5, 5}));
  EXPECT_EQ(ShortestWindow(t, 0.9), (std::pair<double, double>{0, 5}));
}

// Random samples (normal, skewed, heavy-tailed, and with ties, as the scores beyond the risk
// band have: many zeros), every level 0.05..0.99: the window holds at least ceil((n + 1) level)
// scores (clamped to n), contains the one of every lower level, and the grouped window over such
// samples nests too. Against independent references: never narrower than the shortest window
// of k scores (brute force), equal to it at 0.8, and at 0.8 never wider than the hull of the
// shortest windows of 1..k scores (the former construction).
TEST(IntervalTest, ShortestWindowPropertiesOnRandomSamples) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0, 1);
  std::lognormal_distribution<double> lognormal(0, 1);
  std::cauchy_distribution<double> cauchy(0, 1);
  auto shortest_span = [](const std::vector<double>& v, size_t m) {
    double best = v[m - 1] - v[0];
    for (size_t i = 1; i + m <= v.size(); ++i) best = std::min(best, v[i + m - 1] - v[i]);
    return best;
  };
  auto hull_span = [&](const std::vector<double>& v, size_t k) {
    double lo = v.back(), hi = v.front();
    for (size_t m = 1; m <= k; ++m)
      for (size_t i = 0; i + m <= v.size(); ++i)
        if (v[i + m - 1] - v[i] == shortest_span(v, m)) {
          lo = std::min(lo, v[i]), hi = std::max(hi, v[i + m - 1]);
          break;
        }
    return hi - lo;
  };
  for (int trial = 0; trial < 80; ++trial) {
    std::vector<std::vector<double>> groups(1 + trial % 5);
    for (auto& g : groups) {
      const int n = 1 + (trial * 7) % 60;
      for (int i = 0; i < n; ++i) {
        switch (trial % 4) {
          case 0: g.push_back(normal(rng)); break;
          case 1: g.push_back(lognormal(rng)); break;
          case 2: g.push_back(cauchy(rng)); break;
          default: g.push_back(i % 3 == 0 ? 0.0 : normal(rng) * (1 + trial % 3));
        }
      }
      std::sort(g.begin(), g.end());
    }
    const std::vector<double>& v = groups[0];
    const size_t n = v.size();
    std::pair<double, double> prev, prev_grouped;
    for (int percent = 5; percent <= 99; ++percent) {
      const double level = 0.01 * percent;
      const std::string where = std::to_string(trial) + " " + std::to_string(level);
      auto w = ShortestWindow(v, level), gw = GroupedWindow(groups, level);
      if (percent > 5) {
        EXPECT_LE(w.first, prev.first) << where;
        EXPECT_GE(w.second, prev.second) << where;
        EXPECT_LE(gw.first, prev_grouped.first) << where;
        EXPECT_GE(gw.second, prev_grouped.second) << where;
      }
      const size_t k = std::min(n, static_cast<size_t>(std::max(1.0, std::ceil((n + 1) * level))));
      EXPECT_GE(static_cast<size_t>(std::count_if(v.begin(), v.end(),
                                                  [&](double x) { return w.first <= x && x <= w.second; })),
                k)
          << where;
      EXPECT_GE(w.second - w.first, shortest_span(v, k)) << where;
      if (percent == 80) {
        EXPECT_EQ(w.second - w.first, shortest_span(v, k)) << where;
        EXPECT_LE(w.second - w.first, hull_span(v, k)) << where;
      }
      prev = w, prev_grouped = gw;
    }
  }
}

// The GPU-transfer window is over GPU types (groups), each group's own ShortestWindow; with K
// groups the ceil((K + 1) level)-th of their ends (clamped to K). Hand values at 0.8.
TEST(IntervalTest, GroupedWindowHandValues) {
  // A: n = 5, k = 5: [-0.1, 0.3]; B: n = 4, k = 4: [-0.5, 0.05]. K = 2: ceil(2.4) = 3 > 2, so the
  // 2nd: the widest group's ends on each side, [-0.5, 0.3].
  const std::vector<double> a = {-0.1, 0, 0.1, 0.2, 0.3}, b = {-0.5, -0.4, 0, 0.05};
  EXPECT_EQ(GroupedWindow({a, b}, 0.8), (std::pair<double, double>{-0.5, 0.3}));
  EXPECT_EQ(GroupedWindow({a}, 0.8), ShortestWindow(a, 0.8));  // one group: its own window
  EXPECT_EQ(GroupedWindow({a, {}}, 0.8), ShortestWindow(a, 0.8));  // an empty group does not count
  EXPECT_EQ(GroupedWindow({}, 0.8), (std::pair<double, double>{0, 0}));
  // Nine one-score groups 1..9: k = ceil(10 * 0.8) = 8: the 8th smallest high end, the 8th largest low end.
  std::vector<std::vector<double>> nine;
  for (int g = 1; g <= 9; ++g) nine.push_back({static_cast<double>(g)});
  EXPECT_EQ(GroupedWindow(nine, 0.8), (std::pair<double, double>{2, 8}));
  // The model's step window groups its transfer scores by their GPU type; without types
  // (a model file from before them) they are one group, the pooled window.
  UtilModel m("physics", {}, nullptr);
  std::vector<double> scores = a;
  scores.insert(scores.end(), b.begin(), b.end());
  std::vector<std::string> gpus(a.size(), "A100-80GB");
  gpus.insert(gpus.end(), b.size(), "T4");
  m.set_transfer_calibration_scores(scores, gpus);
  EXPECT_EQ(m.transfer_calibration().size(), 9u);
  EXPECT_EQ(m.TransferStepWindow(0.8), (std::pair<double, double>{-0.5, 0.3}));
  m.set_transfer_calibration_scores(scores);
  std::vector<double> pooled = scores;
  std::sort(pooled.begin(), pooled.end());
  EXPECT_EQ(m.TransferStepWindow(0.8), ShortestWindow(pooled, 0.8));
  // Utilization scores: each type's own, of the rows predicted at most the row's utilization,
  // the types with kMinGroupScores of them.
  std::vector<std::pair<double, double>> us;
  std::vector<std::string> ug;
  for (int k = 0; k < 10; ++k) us.push_back({90, -0.01 * k}), ug.push_back("A100-80GB");
  for (int k = 0; k < 12; ++k) us.push_back({40, -0.1 * k}), ug.push_back("RTX3090");
  m.set_transfer_util_calibration_scores(us, ug);
  EXPECT_EQ(m.TransferUtilGroupsFor(95).size(), 2u);
  ASSERT_EQ(m.TransferUtilGroupsFor(50).size(), 1u);
  EXPECT_EQ(m.TransferUtilGroupsFor(50)[0].size(), 12u);
  EXPECT_TRUE(m.TransferUtilGroupsFor(30).empty());
  EXPECT_EQ(m.transfer_util_gpus().size(), 22u);
}

// The scale of a prediction: idle fraction plus the floor.
TEST(IntervalTest, DifficultyIsTheIdleFractionPlusAFloor) {
  EXPECT_DOUBLE_EQ(Difficulty(100), kDifficultyFloor);
  EXPECT_DOUBLE_EQ(Difficulty(0), 1 + kDifficultyFloor);
  EXPECT_DOUBLE_EQ(Difficulty(50), 0.5 + kDifficultyFloor);
  EXPECT_DOUBLE_EQ(Difficulty(250), kDifficultyFloor);  // clamped
}

// Normalized: scores are residuals / Difficulty(the pass's prediction); the
// interval scales the window back by Difficulty(point).
TEST(IntervalTest, NormalizedIntervalHandComputed) {
  // A residual of 0.2 on a row measured at 80 was predicted at expm1(log1p(80) - 0.2).
  double pred = Log1pShift(80, -0.2);
  auto s = CalibrationScores({0.2}, {80}, IntervalMethod::kNormalized);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(s[0], 0.2 / (1 - pred / 100 + 0.05), 1e-12);
  EXPECT_EQ(CalibrationScores({0.2}, {80}, IntervalMethod::kCentral)[0], 0.2);
  // Scores {-1, 0, 1} at level 0.5: k = 2, window [-1, 0]; at util 50 the
  // offsets are x0.55: [expm1(log1p(50) - 0.55), 50].
  UtilPrediction p = CalibratedInterval(50, {-1, 0, 1}, 0.5, IntervalMethod::kNormalized);
  EXPECT_DOUBLE_EQ(p.util, 50);
  EXPECT_NEAR(p.low, 51 * std::exp(-0.55) - 1, 1e-9);
  EXPECT_NEAR(p.high, 50, 1e-12);
  // Near saturation the same scores give a much narrower interval.
  UtilPrediction q = CalibratedInterval(95, {-1, 0, 1}, 0.5, IntervalMethod::kNormalized);
  EXPECT_NEAR(q.low, 96 * std::exp(-0.1) - 1, 1e-9);
  // Central: the order statistics of ConformalOffsets, unscaled.
  UtilPrediction c = CalibratedInterval(50, {-1, 0, 1}, 0.5, IntervalMethod::kCentral);
  EXPECT_NEAR(c.low, 51 * std::exp(-1.0) - 1, 1e-9);
  EXPECT_NEAR(c.high, std::min(100.0, 51 * std::exp(1.0) - 1), 1e-9);
}

// With a RowRisk the score is the residual beyond the risk band [-low, +high]
// (0 inside), and the interval is the band widened by the window beyond it.
TEST(IntervalTest, RiskBandHandComputed) {
  std::vector<RowRisk> risks(3);
  risks[0].low = 0.3;
  risks[1].high = 0.2;
  auto s = CalibrationScores({-0.5, 0.1, 0.05}, {40, 80, 90}, IntervalMethod::kCentral, &risks);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_NEAR(s[0], -0.2, 1e-12);  // 0.2 beyond the band's low end
  EXPECT_EQ(s[1], 0.0);            // inside the band
  EXPECT_NEAR(s[2], 0.05, 1e-12);  // no risk: the residual
  // Central, scores {-0.1, 0, 0.1} at level 0.5: offsets -0.1 and +0.1; risk
  // low 0.4, high 0.1: [log1p(50) - 0.5, log1p(50) + 0.2].
  RowRisk r;
  r.low = 0.4;
  r.high = 0.1;
  UtilPrediction p = CalibratedInterval(50, {-0.1, 0, 0.1}, 0.5, IntervalMethod::kCentral, r);
  EXPECT_NEAR(p.low, 51 * std::exp(-0.5) - 1, 1e-9);
  EXPECT_NEAR(p.high, 51 * std::exp(0.2) - 1, 1e-9);
  // A window inside zero still spans the whole band: scores all 0.
  UtilPrediction q = CalibratedInterval(50, {0, 0, 0}, 0.5, IntervalMethod::kNormalized, r);
  EXPECT_NEAR(q.low, 51 * std::exp(-0.4) - 1, 1e-9);
  EXPECT_NEAR(q.high, 51 * std::exp(0.1) - 1, 1e-9);
  // Step: shortest window of {-0.1, 0, 0.1} at 0.5 (k = 2) is [-0.1, 0]; risk
  // shorter 0.2, longer 0.3: [100 e^-0.3, 100 e^0.3] ms.
  RowRisk t;
  t.step_low = 0.2;
  t.step_high = 0.3;
  auto [lo, hi] = StepInterval(100, {-0.1, 0, 0.1}, 0.5, t);
  EXPECT_NEAR(lo, 100 * std::exp(-0.3), 1e-9);
  EXPECT_NEAR(hi, 100 * std::exp(0.3), 1e-9);
  // No calibration scores and no risk: the point.
  auto [l0, h0] = StepInterval(100, {}, 0.8, RowRisk{});
  EXPECT_EQ(l0, 100);
  EXPECT_EQ(h0, 100);
}

// Rows with a risk band and rows without are calibrated by their own group's
// scores (Mondrian) once a group has kMinGroupScores, else by the pooled ones.
TEST(IntervalTest, GroupsCalibrateTheirOwnRows) {
  auto r = MakeRegressor("ridge");
  ASSERT_TRUE(r.ok());
  UtilModel m("ridge", {0}, std::shared_ptr<Regressor>(std::move(*r)));
  std::vector<double> res, util;
  std::vector<RowRisk> risks;
  for (int i = 0; i < 12; ++i) {  // 12 plain rows, residuals 0.01 i; 5 band rows far off beyond their band
    res.push_back(0.01 * i), util.push_back(50), risks.push_back(RowRisk{});
  }
  for (int i = 0; i < 5; ++i) {
    RowRisk k;
    k.low = 0.5;
    res.push_back(-2.0), util.push_back(50), risks.push_back(k);
  }
  m.set_calibration(res, util, IntervalMethod::kCentral, &risks);
  EXPECT_EQ(m.calibration().size(), 17u);
  ASSERT_EQ(m.plain_calibration().size(), 12u);
  ASSERT_EQ(m.band_calibration().size(), 5u);
  EXPECT_NEAR(m.band_calibration()[0], -1.5, 1e-12);  // beyond the band
  EXPECT_EQ(&m.CalibrationFor(RowRisk{}), &m.plain_calibration());  // 12 >= kMinGroupScores
  const std::vector<double>* also = &m.calibration();
  EXPECT_EQ(&m.CalibrationFor(risks.back(), &also), &m.calibration());  // 5 < kMinGroupScores: pooled
  EXPECT_EQ(also, nullptr);
  // With enough band rows: the band group's scores, joined with the no-band group's window.
  m.set_group_calibration_scores(m.plain_calibration(), std::vector<double>(10, 0.0));
  EXPECT_EQ(&m.CalibrationFor(risks.back(), &also), &m.band_calibration());
  EXPECT_EQ(also, &m.plain_calibration());
  // Joined windows (central, level 0.5): band scores all 0, plain {-0.3, 0, 0.3}: the plain window's ends.
  std::vector<double> plain = {-0.3, 0, 0.3}, zeros(3, 0.0);
  UtilPrediction p = CalibratedInterval(50, zeros, 0.5, IntervalMethod::kCentral, risks.back(), &plain);
  EXPECT_NEAR(p.low, 51 * std::exp(-0.5 - 0.3) - 1, 1e-9);
  EXPECT_NEAR(p.high, 51 * std::exp(0.3) - 1, 1e-9);
}

// Logit: scores are logit(measured) - logit(predicted) with a 5-point pad,
// logit(u) = log((u + 5) / (105 - u)); the interval is logit(point) + window.
TEST(IntervalTest, LogitIntervalHandComputed) {
  EXPECT_NEAR(UtilLogit(50), 0, 1e-15);
  EXPECT_NEAR(UtilLogit(95), std::log(100.0 / 10), 1e-12);
  EXPECT_NEAR(UtilLogit(0), std::log(5.0 / 105), 1e-12);
  EXPECT_NEAR(UtilLogit(250), std::log(105.0 / 5), 1e-12);  // clamped to 100
  for (double u : {0.0, 3.0, 50.0, 97.5, 100.0}) EXPECT_NEAR(LogitToUtil(UtilLogit(u)), u, 1e-9);
  EXPECT_EQ(LogitToUtil(1e300), 100);  // bounded, never NaN
  EXPECT_EQ(LogitToUtil(-1e300), 0);
  // A row measured 95 whose pass predicted expm1(log1p(95) - 0.2): score log(100/10) - logit(pred).
  double pred = Log1pShift(95, -0.2);
  auto s = CalibrationScores({0.2}, {95}, IntervalMethod::kLogit);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(s[0], std::log(10.0) - std::log((pred + 5) / (105 - pred)), 1e-12);
  // Scores {-1, 0, 1} at level 0.5: window [-1, 0]. At 50 (logit 0) the low end solves
  // (u + 5) / (105 - u) = e^-1: u = (105 e^-1 - 5) / (1 + e^-1) = 24.58...
  UtilPrediction p = CalibratedInterval(50, {-1, 0, 1}, 0.5, IntervalMethod::kLogit);
  EXPECT_NEAR(p.low, (105 * std::exp(-1.0) - 5) / (1 + std::exp(-1.0)), 1e-9);
  EXPECT_NEAR(p.high, 50, 1e-12);
  // The same window at 95 is narrower in points (logit 2.303 - 1: u = (105 e^1.303 - 5) / (1 + e^1.303)).
  UtilPrediction q = CalibratedInterval(95, {-1, 0, 1}, 0.5, IntervalMethod::kLogit);
  const double e = std::exp(std::log(10.0) - 1);
  EXPECT_NEAR(q.low, (105 * e - 5) / (1 + e), 1e-9);
  EXPECT_LT(q.high - q.low, p.high - p.low);
  EXPECT_EQ(*ParseIntervalMethod("logit"), IntervalMethod::kLogit);
  EXPECT_STREQ(IntervalMethodName(IntervalMethod::kLogit), "logit-shortest");
  EXPECT_NE(ParseIntervalMethod("logistic").status().message().find("known: normalized, central, logit"),
            std::string::npos);
}

// Five workloads of one row each, measured 50; four predicted exactly, one
// 5 log units low (predicted 0 after the clamp).
TEST(IntervalTest, SummariseLowoHandComputed) {
  LowoAccuracy a = SummariseLowo({0, 0, 0, 0, 5}, {50, 50, 50, 50, 50}, {0, 1, 2, 3, 4}, 0.5,
                                 IntervalMethod::kCentral);
  EXPECT_EQ(a.workloads, 5u);
  EXPECT_EQ(a.rows, 5u);
  EXPECT_NEAR(a.rmsle, std::sqrt(25.0 / 5), 1e-12);
  EXPECT_NEAR(a.mae_points, 50.0 / 5, 1e-12);
  EXPECT_NEAR(a.median_abs_error_points, 0, 1e-12);
  // Rows 0-3: the others' scores {0, 0, 0, 5}: order statistics 1 and 4 at
  // level 0.5 (n = 4): [50, 100], covered. Row 4: the others are all 0: [0, 0]
  // around a prediction of 0, not covered. Widths 50, 50, 50, 50, 0.
  EXPECT_NEAR(a.coverage, 0.8, 1e-12);
  EXPECT_NEAR(a.median_width_points, 50, 1e-9);
  EXPECT_EQ(SummariseLowo({}, {}, {}).workloads, 0u);
  EXPECT_EQ(SummariseLowo({0.1}, {50, 60}, {0}).workloads, 0u);  // sizes differ: nothing
}

// The seen-workload correction applies to the same graph with the same job
// facts only; the same graph with other facts is reported, uncorrected.
TEST(SeenWorkloadTest, OffsetsKeyedByGraphAndJobFacts) {
  const std::vector<std::string> names = {"total_flops", "params", "est_gpu_busy_ms", "loader_ms_per_sample"};
  Matrix x;
  std::vector<double> util;
  FitOptions fo;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 30; ++i) {
    int g = i % 3;
    double c = (rng() % 1000) / 1000.0;
    x.push_back({1000.0 * (g + 1), 10.0 * (g + 1), c, 0});
    util.push_back(std::min(100.0, 10 + 20 * g + 50 * c));
    fo.group.push_back(g);
  }
  fo.group_names = {"A/x", "B/x", "C/x"};
  fo.calibrate = false;
  std::vector<size_t> cols = {0, 2, 3};
  auto m = UtilModel::Fit(x, util, names, cols, "ridge", nullptr, 1, fo);
  ASSERT_TRUE(m.ok()) << m.message();
  ASSERT_EQ(m->offsets().size(), 3u);
  EXPECT_EQ(m->fact_names(), std::vector<std::string>{"loader_ms_per_sample"});
  std::vector<double> row = x[4];  // group B
  SeenMatch s = m->Match(row);
  ASSERT_NE(s.seen, nullptr);
  EXPECT_EQ(s.seen->workload, "B/x");
  EXPECT_EQ(s.seen->rows, 10u);
  // A stated loader time: the same graph, not the same job.
  row[3] = 7;
  s = m->Match(row);
  EXPECT_EQ(s.seen, nullptr);
  ASSERT_NE(s.same_graph, nullptr);
  EXPECT_EQ(s.same_graph->workload, "B/x");
  // Its prediction is the regressor's alone (no offset).
  auto p = m->Predict({row});
  auto e = m->regressor().Predict({{row[0], row[2], row[3]}});
  ASSERT_TRUE(p.ok() && e.ok());
  EXPECT_NEAR((*p)[0].util, std::clamp(std::expm1((*e)[0].mean), 0.0, 100.0), 1e-12);
  // Another graph: neither.
  row[1] = 999;
  s = m->Match(row);
  EXPECT_EQ(s.seen, nullptr);
  EXPECT_EQ(s.same_graph, nullptr);
  // An offset whose facts do not match the schema is refused.
  UtilModel copy = *m;
  std::vector<WorkloadOffset> bad = m->offsets();
  bad[0].facts.push_back(1);
  EXPECT_EQ(copy.set_offsets(bad, names).message(), "workload offsets: 2 job facts, the schema has 1");
}

// StoredLowoApplies: three hand-made rows (two workloads on an RTX 3090, one
// on a MIG slice) and a forest predictor whose stored lowo rows match them;
// each case below breaks one thing and checks the reason given.
Dataset StoredLowoData() {
  Dataset d;
  d.digest = "fnv1a64:00000000000000aa";
  d.schema_name = "test-schema";
  d.schema_version = 3;
  d.feature_names = {"total_flops", "params"};
  const struct { const char *model, *dataset; int64_t batch; bool amp; const char *gpu, *mig; } rows[] = {
      {"ResNet18", "cifar10", 32, false, "RTX3090", ""},
      {"ResNet18", "cifar10", 64, true, "RTX3090", ""},
      {"bert-base", "squad", 8, false, "A100-80GB", "1g.10gb"},
  };
  for (const auto& r : rows) {
    Measurement m;
    m.model = r.model;
    m.dataset = r.dataset;
    m.batch = r.batch;
    m.amp = r.amp;
    d.rows.push_back(m);
    d.row_gpu.push_back(r.gpu);
    d.row_mig.push_back(r.mig);
    d.x.push_back({1, 2});
    d.group.push_back(r.model == std::string("ResNet18") ? 0 : 1);
  }
  d.groups = {"ResNet18/cifar10", "bert-base/squad"};
  return d;
}

PredictorInfo StoredLowoInfo(const Dataset& d) {
  PredictorInfo i;
  i.schema_name = d.schema_name;
  i.schema_version = d.schema_version;
  i.feature_names = d.feature_names;
  i.feature_set = DefaultFeatureSet("forest");
  i.training_digest = d.digest;
  i.seed = 0;
  for (size_t r = 0; r < d.rows.size(); ++r) {
    LowoRowPrediction p;
    p.model = d.rows[r].model;
    p.dataset = d.rows[r].dataset;
    p.batch = d.rows[r].batch;
    p.amp = d.rows[r].amp;
    p.gpu = d.row_gpu[r];
    p.mig_profile = d.row_mig[r];
    p.predicted = 50;
    i.lowo_predictions.push_back(p);
  }
  return i;
}

// The reason StoredLowoApplies gives ("" = Ok) for a forest predictor with `info`.
std::string StoredLowoReason(const PredictorInfo& info, const Dataset& d) {
  auto r = MakeRegressor("forest");
  if (!r.ok()) return "MakeRegressor: " + r.message();
  Predictor p(info, UtilModel("forest", {0, 1}, std::shared_ptr<Regressor>(std::move(*r))));
  Status st = p.StoredLowoApplies(d);
  return st.ok() ? "" : st.message();
}

// One row per reason: what is changed in the matching file, and the reason
// given ("" = it still applies). The checks run in this order; a file with
// several faults gets the first.
TEST(StoredLowoTest, EachReasonNamed) {
  using Edit = std::function<void(PredictorInfo*)>;
  const struct {
    const char* what;
    Edit edit;
    std::string want;
  } cases[] = {
      {"matching", [](PredictorInfo*) {}, ""},
      // The stored numbers themselves are not checked: only what they were computed from.
      {"other numbers",
       [](PredictorInfo* i) { i->lowo_predictions[0].predicted = 99, i->lowo_predictions[0].mem_predicted = 1234; },
       ""},
      {"none stored", [](PredictorInfo* i) { i->lowo_predictions.clear(); },
       "it holds no leave-one-workload-out predictions (written by an older gpucast, or trained on fewer than 3 "
       "workloads)"},
      {"schema name", [](PredictorInfo* i) { i->schema_name = "other"; }, "its feature schema is not this build's"},
      {"schema version", [](PredictorInfo* i) { i->schema_version = 2; }, "its feature schema is not this build's"},
      {"feature names", [](PredictorInfo* i) { i->feature_names.pop_back(); },
       "its feature schema is not this build's"},
      {"digest", [](PredictorInfo* i) { i->training_digest = "fnv1a64:0000000000000000"; },
       "it was trained on data fnv1a64:0000000000000000, the simulator's rows are fnv1a64:00000000000000aa"},
      {"row count", [](PredictorInfo* i) { i->lowo_predictions.pop_back(); },
       "it was trained on 2 rows, the simulator's data has 3 (rows added by --observations or --data?)"},
      {"batch", [](PredictorInfo* i) { i->lowo_predictions[1].batch = 128; },
       "its training row 2 is ResNet18/cifar10 batch 128 AMP on RTX3090, the simulator's is ResNet18/cifar10 batch "
       "64 AMP on RTX3090"},
      {"amp", [](PredictorInfo* i) { i->lowo_predictions[0].amp = true; },
       "its training row 1 is ResNet18/cifar10 batch 32 AMP on RTX3090, the simulator's is ResNet18/cifar10 batch "
       "32 on RTX3090"},
      {"mig profile", [](PredictorInfo* i) { i->lowo_predictions[2].mig_profile = "7g.80gb"; },
       "its training row 3 is bert-base/squad batch 8 on A100-80GB 7g.80gb, the simulator's is bert-base/squad "
       "batch 8 on A100-80GB 1g.10gb"},
      {"first differing row",
       [](PredictorInfo* i) { i->lowo_predictions[2].gpu = "A100-40GB", i->lowo_predictions[0].model = "ResNet50"; },
       "its training row 1 is ResNet50/cifar10 batch 32 on RTX3090, the simulator's is ResNet18/cifar10 batch 32 "
       "on RTX3090"},
      {"row order", [](PredictorInfo* i) { std::swap(i->lowo_predictions[0], i->lowo_predictions[1]); },
       "its training row 1 is ResNet18/cifar10 batch 64 AMP on RTX3090, the simulator's is ResNet18/cifar10 batch "
       "32 on RTX3090"},
      {"feature set", [](PredictorInfo* i) { i->feature_set = "all"; },
       "it was trained with --features all; the simulator's forest predictions use paper"},
      {"seed", [](PredictorInfo* i) { i->seed = 7; }, "it was trained with --seed 7; the simulator's use seed 0"},
      {"digest before seed", [](PredictorInfo* i) { i->seed = 7, i->training_digest = "fnv1a64:00000000000000bb"; },
       "it was trained on data fnv1a64:00000000000000bb, the simulator's rows are fnv1a64:00000000000000aa"},
  };
  const Dataset d = StoredLowoData();
  ASSERT_EQ(DefaultFeatureSet("forest"), "paper");  // the feature-set case relies on it
  for (const auto& c : cases) {
    PredictorInfo i = StoredLowoInfo(d);
    c.edit(&i);
    EXPECT_EQ(StoredLowoReason(i, d), c.want) << c.what;
  }
}

}  // namespace
}  // namespace gpucast
