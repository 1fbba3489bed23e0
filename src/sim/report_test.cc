#include "sim/report.h"

#include <gtest/gtest.h>

#include "sim/test_util.h"

namespace gpucast::sim {
namespace {

TEST(Report, BinSeriesIsTimeWeighted) {
  // 100% on [0, 30), 40% on [30, 100): bins of 50 s -> 70% and 40%.
  auto b = BinSeries({{0, 100}, {30, 40}}, 100, 2);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(b[0].util_pct, (100 * 30 + 40 * 20) / 50.0, 1e-12);
  EXPECT_NEAR(b[1].util_pct, 40, 1e-12);
}

TEST(Report, RendersSelfContainedPage) {
  std::string dir = testing::TempDir("report");
  testing::WriteText(dir, "summary.json", R"({"policy":"slot","trace":"t","num_gpus":2,"cluster_utilization":43.5})");
  testing::WriteText(dir, "utilization.csv", "t_s,util_pct\n0,50\n10,0\n");
  testing::WriteText(dir, "jobs.csv", "job_id,submit_s,start_s,end_s\n0,0,0,10\n1,0,,\n");
  auto r = LoadRun(dir);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->label, "slot (t, 2 GPUs)");
  EXPECT_EQ(r->jct_s, std::vector<double>{10});
  std::string html = RenderReport({*r});
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("43.5"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  testing::WriteText(dir, "utilization.csv", "t_s,util_pct\n0,x\n");
  EXPECT_EQ(LoadRun(dir).message(), "utilization.csv: line 2: want t_s,util_pct numbers");
}

}  // namespace
}  // namespace gpucast::sim
