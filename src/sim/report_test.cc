#include "sim/report.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "sim/test_util.h"

namespace gpucast::sim {
namespace {

TEST(Report, BinSeriesIsTimeWeighted) {
  // 100% on [0, 30), 40% on [30, 100): bins of 50 s -> 70% and 40%.
  auto b = BinSeries({{0, 100, 50, 4}, {30, 40, 20, 0}}, 100, 2);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(b[0].util_pct, (100 * 30 + 40 * 20) / 50.0, 1e-12);
  EXPECT_NEAR(b[0].useful_pct, (50 * 30 + 20 * 20) / 50.0, 1e-12);
  EXPECT_NEAR(b[0].queued, 4 * 30 / 50.0, 1e-12);
  EXPECT_NEAR(b[1].util_pct, 40, 1e-12);
}

// extra: more summary.json fields, e.g. R"(,"load_scale":2)".
std::string WriteRun(const std::string& dir, const std::string& policy, int seed, double useful, double busy,
                     const std::string& predictions, const std::string& extra = "",
                     const std::string& jct_s = "7200") {
  std::string d = dir + "/" + policy + "-" + predictions + "-" + std::to_string(seed) + "-" +
                  std::to_string(std::hash<std::string>{}(extra));
  std::filesystem::create_directories(d);
  testing::WriteText(d, "summary.json",
                     R"({"policy":")" + policy + R"(","trace":"t","seed":)" + std::to_string(seed) +
                         R"(,"predictions":")" + predictions + R"(","num_gpus":2,"useful_work_utilization":)" +
                         std::to_string(useful) + R"(,"ideal_work_utilization":80,"cluster_utilization":)" +
                         std::to_string(busy) + R"(,"jct_mean_s":)" + jct_s + R"(,"load_factor":1.5,"window_s":3600)" + extra + "}");
  testing::WriteText(d, "utilization.csv", "t_s,util_pct,useful_pct,queued\n0,50,40,2\n10,0,0,0\n");
  testing::WriteText(d, "jobs.csv",
                     "job_id,submit_s,start_s,end_s,workload,true_util,predicted_util\n0,0,0,10,W/a,40,55\n1,0,,,W/a,40,55\n");
  return d;
}

TEST(Report, HeadlineOrdersPoliciesAndComputesPairedGains) {
  std::string dir = testing::TempDir("report");
  std::vector<RunData> runs;
  // Seeds 1, 2: slot useful 40, 50; predictive 60, 60 -> gains +50%, +20%: mean +35.0 +- 21.2.
  for (auto [p, s, u, pred] : std::vector<std::tuple<std::string, int, double, std::string>>{
           {"predictive", 1, 60, "lowo:forest"}, {"predictive", 2, 60, "lowo:forest"}, {"slot", 1, 40, "unused"},
           {"slot", 2, 50, "unused"}, {"predictive", 1, 70, "oracle"}}) {
    auto r = LoadRun(WriteRun(dir, p, s, u, 90, pred));
    ASSERT_TRUE(r.ok()) << r.message();
    runs.push_back(*r);
  }
  EXPECT_EQ(runs[0].label, "predictive (t, 2 GPUs)");
  EXPECT_EQ(runs[4].label, "predictive (oracle) (t, 2 GPUs)");
  EXPECT_EQ(runs[0].jct_s, std::vector<double>{10});
  EXPECT_EQ(runs[0].workloads.at("W/a"), std::make_pair(40.0, 55.0));
  std::string html = RenderReport(runs);
  size_t slot = html.find("</span>slot</td>"), pred = html.find("</span>predictive</td>"),
         oracle = html.find("</span>predictive (oracle)</td>");
  ASSERT_NE(slot, std::string::npos);
  ASSERT_NE(pred, std::string::npos);
  ASSERT_NE(oracle, std::string::npos);
  EXPECT_LT(slot, pred);
  EXPECT_LT(pred, oracle);
  EXPECT_NE(html.find("+35.0% &plusmn; 21.2"), std::string::npos);
  EXPECT_NE(html.find("45.0 &plusmn; 7.1"), std::string::npos);  // slot's useful work over seeds
  EXPECT_NE(html.find("2.0 &plusmn; 0.0"), std::string::npos);    // mean JCT in hours
  EXPECT_NE(html.find("+15.0"), std::string::npos);               // predicted - true for W/a
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  testing::WriteText(runs[0].dir, "utilization.csv", "t_s,util_pct\n0,x\n");
  EXPECT_EQ(LoadRun(runs[0].dir).message(), "utilization.csv: line 2: want t_s,util_pct[,useful_pct,queued] numbers");
}

TEST(Report, LoadSweepAndValueOfAccuracyWithBandsOverSeeds) {
  std::string dir = testing::TempDir("report-sweep");
  std::vector<RunData> runs;
  auto add = [&](const std::string& p, int seed, double useful, const std::string& pred, double load_scale,
                 double load_factor, double jct_h, const std::string& mae) {
    std::string extra = R"(,"load_scale":)" + std::to_string(load_scale) + R"(,"load_factor":)" +
                        std::to_string(load_factor) + R"(,"bound_kind":")" +
                        (load_scale > 1 ? "capacity" : "demand") + R"(","prediction_mae":)" + mae;
    auto r = LoadRun(WriteRun(dir, p, seed, useful, 90, pred, extra, std::to_string(jct_h * 3600)));
    ASSERT_TRUE(r.ok()) << r.message();
    runs.push_back(*r);
  };
  // Load x1 (load factor 0.5) and x2 (1.0), seeds 1 and 2, slot and predictive;
  // at x2 also oracle, noisy:10 and constant:50 predictions (accuracy controls).
  add("slot", 1, 40, "unused", 1, 0.5, 2, "null");
  add("slot", 2, 42, "unused", 1, 0.5, 4, "null");
  add("predictive", 1, 45, "lowo:forest", 1, 0.5, 3, "20");
  add("predictive", 2, 47, "lowo:forest", 1, 0.5, 5, "20");
  add("slot", 1, 50, "unused", 2, 1.0, 20, "null");
  add("slot", 2, 54, "unused", 2, 1.0, 30, "null");
  add("predictive", 1, 60, "lowo:forest", 2, 1.0, 10, "22");
  add("predictive", 2, 62, "lowo:forest", 2, 1.0, 14, "24");
  add("predictive", 1, 70, "oracle", 2, 1.0, 6, "0");
  add("predictive", 2, 72, "oracle", 2, 1.0, 8, "0");
  add("predictive", 1, 64, "noisy:10", 2, 1.0, 9, "7");
  add("predictive", 2, 66, "noisy:10", 2, 1.0, 11, "9");
  add("predictive", 1, 30, "constant:50", 2, 1.0, 50, "30");
  add("predictive", 2, 32, "constant:50", 2, 1.0, 60, "30");
  EXPECT_TRUE(runs[10].control());
  EXPECT_FALSE(runs[6].control());
  EXPECT_EQ(runs[10].label, "predictive (noisy:10) (t, 2 GPUs)");
  std::string html = RenderReport(runs);
  // Headline: the load point with the most runs that are not controls (x2: six), arrivals x2.
  EXPECT_NE(html.find("arrivals compressed &times;2.00"), std::string::npos);
  size_t acc = html.find("<h2 id='accuracy-2-2.00'>Value of accuracy (t, 2 GPUs, --load-factor 2.00)</h2>");
  ASSERT_NE(acc, std::string::npos);
  EXPECT_EQ(html.substr(0, acc).find("noisy:10"), std::string::npos);  // no control before its section
  // Load sweep table: x1 row = load factor 0.50, 0 / 2 capacity-bound seeds; predictive 46.0 +- 1.4 useful, 4.0 +- 1.4 h.
  size_t sweep = html.find("<h2 id='load-sweep'>Load sweep (t)</h2>");
  ASSERT_NE(sweep, std::string::npos);
  EXPECT_NE(html.find("<tr><td>1.00</td><td>2</td><td>0.50</td><td>0 / 2</td>", sweep), std::string::npos);
  EXPECT_NE(html.find("<tr><td>2.00</td><td>2</td><td>1.00</td><td>2 / 2</td>", sweep), std::string::npos);
  EXPECT_NE(html.find("46.0 &plusmn; 1.4 / 4.0 &plusmn; 1.4", sweep), std::string::npos);
  EXPECT_NE(html.find("Mean JCT vs load", sweep), std::string::npos);
  EXPECT_NE(html.find("fill-opacity='0.15'", sweep), std::string::npos);  // bands over seeds
  // Accuracy table, sources in order oracle < noisy < constant < the default; MAE mean over seeds.
  size_t o = html.find("<tr><td>oracle</td><td>0.0</td><td>71.0 &plusmn; 1.4 / 7.0 &plusmn; 1.4</td>", acc),
         n = html.find("<tr><td>noisy:10</td><td>8.0</td><td>65.0 &plusmn; 1.4 / 10.0 &plusmn; 1.4</td>", acc),
         c = html.find("<tr><td>constant:50</td><td>30.0</td>", acc),
         d = html.find("<tr><td>lowo:forest</td><td>23.0</td>", acc);
  ASSERT_NE(o, std::string::npos);
  ASSERT_NE(n, std::string::npos);
  ASSERT_NE(c, std::string::npos);
  ASSERT_NE(d, std::string::npos);
  EXPECT_LT(o, n);
  EXPECT_LT(n, c);
  EXPECT_LT(c, d);
  EXPECT_NE(html.find("Useful work vs prediction error", acc), std::string::npos);
}

}  // namespace
}  // namespace gpucast::sim
