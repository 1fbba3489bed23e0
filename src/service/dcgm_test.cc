// DCGM exporter page parsing and attribution of a GPU's utilization to jobs.
#include "service/dcgm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// The layout dcgm-exporter serves (README of NVIDIA/dcgm-exporter: "gpu" and
// "UUID" labels, a space after the comma; newer versions add device,
// modelName, Hostname and driver labels).
constexpr const char* kPage = R"(# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 139
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 87
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-1",device="nvidia1",modelName="NVIDIA GeForce RTX 3090",Hostname="node1",DCGM_FI_DRIVER_VERSION="535.104.05"} 12.5
DCGM_FI_DEV_GPU_UTIL_EXTRA{gpu="2"} 99
DCGM_FI_DEV_MEMORY_TEMP{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 9223372036854775794
)";

TEST(ParseDcgmUtil, ReadsOnlyTheUtilizationOfEachGpu) {
  Result<std::vector<DcgmSample>> s = ParseDcgmUtil(kPage);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].gpu, 0);
  EXPECT_DOUBLE_EQ((*s)[0].util, 87);
  EXPECT_EQ((*s)[0].hostname, "");
  EXPECT_EQ((*s)[1].gpu, 1);
  EXPECT_DOUBLE_EQ((*s)[1].util, 12.5);
  EXPECT_EQ((*s)[1].hostname, "node1");
}

TEST(ParseDcgmUtil, BadLinesNameTheLine) {
  Result<std::vector<DcgmSample>> s = ParseDcgmUtil("# x\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 140\n");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("line 2: DCGM_FI_DEV_GPU_UTIL: value '140' is not a utilization in [0, 100]"));
  s = ParseDcgmUtil("DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\"} 40\n");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("line 1: DCGM_FI_DEV_GPU_UTIL: no gpu=\"N\" label"));
  s = ParseDcgmUtil("DCGM_FI_DEV_GPU_UTIL{gpu=\"0} 40\n");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("unterminated value of label gpu"));
  EXPECT_TRUE(ParseDcgmUtil("").ok());
}

// Cluster JSON as PolicyScheduler::ClusterJson writes it.
json Cluster(const std::vector<std::pair<int, std::vector<int64_t>>>& node_jobs) {
  json gpus = json::array();
  for (const auto& [node, jobs] : node_jobs) {
    json js = json::array();
    for (int64_t j : jobs) js.push_back({{"id", j}, {"predicted_util", 50}});
    gpus.push_back({{"node", node}, {"type", "RTX3090"}, {"jobs", js}});
  }
  return {{"gpus", gpus}};
}

TEST(AttributeDcgm, OnlyJobsAloneOnEverySampledGpu) {
  // GPU 0: job 1 alone; GPU 1: jobs 2 and 3 share; GPU 2: idle; GPUs 3+4: job 4 (two GPUs) alone.
  json c = Cluster({{0, {1}}, {0, {2, 3}}, {0, {}}, {0, {4}}, {0, {4}}});
  std::map<std::string, int> outcomes;
  auto count = [&](const std::string& o) { ++outcomes[o]; };
  std::vector<DcgmAttribution> a =
      AttributeDcgm(c, {{{0, 80, ""}, {1, 95, ""}, {2, 0, ""}, {3, 40, ""}, {4, 60, ""}}}, count);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].job_id, 1);
  EXPECT_DOUBLE_EQ(a[0].util, 80);
  EXPECT_EQ(a[0].samples, 1);
  EXPECT_EQ(a[0].gpu_type, "RTX3090");
  EXPECT_EQ(a[1].job_id, 4);
  EXPECT_DOUBLE_EQ(a[1].util, 50);  // (40 + 60) / 2
  EXPECT_EQ(a[1].samples, 2);
  EXPECT_EQ(outcomes["attributed"], 3);
  EXPECT_EQ(outcomes["shared"], 1);
  EXPECT_EQ(outcomes["idle"], 1);

  // Job 4's second GPU not sampled: nothing for it.
  outcomes.clear();
  a = AttributeDcgm(c, {{{0, 80, ""}, {3, 40, ""}, {7, 10, ""}}}, count);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].job_id, 1);
  EXPECT_EQ(outcomes["unknown_gpu"], 1);  // gpu="7" on a node with 5 GPUs
}

TEST(AttributeDcgm, TheNthExporterCoversTheNthNode) {
  // Node 0: GPUs 0,1 (jobs 1, 2); node 1: GPUs 0,1 (jobs 3, 4).
  json c = Cluster({{0, {1}}, {0, {2}}, {1, {3}}, {1, {4}}});
  std::vector<DcgmAttribution> a = AttributeDcgm(c, {{{1, 20, ""}}, {{0, 30, ""}}}, [](const std::string&) {});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].job_id, 2);
  EXPECT_DOUBLE_EQ(a[0].util, 20);
  EXPECT_EQ(a[1].job_id, 3);
  EXPECT_DOUBLE_EQ(a[1].util, 30);
}

TEST(SplitHttpUrl, BaseAndPath) {
  auto u = SplitHttpUrl("http://node1:9400/metrics");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->first, "http://node1:9400");
  EXPECT_EQ(u->second, "/metrics");
  EXPECT_EQ(SplitHttpUrl("http://node1:9400")->second, "/metrics");
  EXPECT_FALSE(SplitHttpUrl("https://node1/metrics").ok());
  EXPECT_FALSE(SplitHttpUrl("node1:9400").ok());
}

}  // namespace
}  // namespace gpucast::service
