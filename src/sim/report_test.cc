#include "sim/report.h"

#include <gtest/gtest.h>

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

std::string WriteRun(const std::string& dir, const std::string& policy, int seed, double useful, double busy,
                const std::string& predictions) {
  std::string d = dir + "/" + policy + "-" + predictions + "-" + std::to_string(seed);
  std::filesystem::create_directories(d);
  testing::WriteText(d, "summary.json",
                     R"({"policy":")" + policy + R"(","trace":"t","seed":)" + std::to_string(seed) +
                         R"(,"predictions":")" + predictions + R"(","num_gpus":2,"useful_work_utilization":)" +
                         std::to_string(useful) + R"(,"ideal_work_utilization":80,"cluster_utilization":)" +
                         std::to_string(busy) + R"(,"jct_mean_s":7200,"load_factor":1.5,"window_s":3600})");
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

}  // namespace
}  // namespace gpucast::sim
