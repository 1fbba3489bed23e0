#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <fstream>

#include "sim/test_util.h"
#include "util/paths.h"

namespace gpucast::sim {
namespace {

using testing::W;

Trace Jobs(std::vector<TraceJob> jobs) {
  Trace t;
  t.name = "literal";
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].id = static_cast<int64_t>(i);
  t.jobs = std::move(jobs);
  return t;
}

Cluster Gpus(int n, double mem_mib = 24576) {
  Cluster c;
  c.spec = std::to_string(n) + "x test";
  for (int i = 0; i < n; ++i) c.gpus.push_back({i, 0, "test", mem_mib});
  return c;
}

// Workloads: 0 = A (40%), 1 = B (50%), 2 = C (60%), 3 = H (huge memory).
// A+B measured: A at 0.8, B at 0.5, device 70%. Model elsewhere: 1 - 0.5 max(0, x+y-1).
struct Fixture {
  std::vector<WorkloadProfile> w = {W("A", 40, 40), W("B", 50, 50), W("C", 60, 60), W("H", 10, 10, 30000)};
  InterferenceModel m{4, {1, 0, 0, 0, -0.5}, {{0, 1, 0.8, 0.5, 70, 1}}};
  Result<SimResult> Run(const Trace& t, const Cluster& c, const std::string& policy, std::vector<int> wl) {
    SimConfig cfg;
    cfg.policy = policy;
    cfg.workload_of_job = std::move(wl);
    return Simulate(t, c, w, m, cfg);
  }
};

TEST(Simulator, QueueingAndUtilizationIntegral) {
  Fixture f;
  // One GPU, slot: A runs 0-100; B waits 10-100 and runs 100-150.
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 10, 50, 1, 1}}), Gpus(1), "slot", {0, 1});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->jobs_done, 2);
  EXPECT_DOUBLE_EQ(r->jobs[1].start_s, 100);
  EXPECT_DOUBLE_EQ(r->jobs[1].end_s, 150);
  EXPECT_DOUBLE_EQ(r->makespan_s, 150);
  EXPECT_DOUBLE_EQ(r->jct_mean_s, 120);
  EXPECT_DOUBLE_EQ(r->queue_mean_s, 45);
  // (40 * 100 + 50 * 50) / (1 GPU * 150 s) = 43.33%.
  EXPECT_NEAR(r->cluster_utilization, 6500.0 / 150, 1e-9);
  EXPECT_NEAR(r->work_utilization, r->cluster_utilization, 1e-9);  // nothing shared
  EXPECT_NEAR(r->mean_slowdown, (1.0 + 140.0 / 50) / 2, 1e-12);
}

TEST(Simulator, MeasuredPairInterference) {
  Fixture f;
  // Predictive co-locates A+B (40+50 <= 100). Rates 0.8 / 0.5: A ends at 125;
  // B has done 62.5 s of work and runs alone for 37.5 s: ends at 162.5.
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}}), Gpus(1), "predictive", {0, 1});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_NEAR(r->jobs[0].end_s, 125, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, 162.5, 1e-9);
  // Busy: 70% for 125 s, then B alone at 50% for 37.5 s.
  EXPECT_NEAR(r->cluster_utilization, (70 * 125 + 50 * 37.5) / 162.5, 1e-9);
  EXPECT_NEAR(r->shared_gpu_s, 125, 1e-9);
  EXPECT_NEAR(r->mean_run_slowdown, (1.25 + 1.625) / 2, 1e-12);
  // Solo-equivalent: (40 * 100 + 50 * 100) / 162.5.
  EXPECT_NEAR(r->work_utilization, 9000 / 162.5, 1e-9);
  // Slot on the same jobs: 40 * 100 + 50 * 100 over 200 s.
  auto s = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}}), Gpus(1), "slot", {0, 1});
  EXPECT_NEAR(s->cluster_utilization, 45, 1e-9);
}

TEST(Simulator, ModelledInterferenceForUnmeasuredPair) {
  Fixture f;
  // C+A: 60+40 = 100 <= cap. Model: x+y-1 = 0 -> rate 1; util 100 (1 - 0.4 * 0.6) = 76.
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 50, 1, 1}}), Gpus(1), "predictive", {2, 0});
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->jobs[1].end_s, 50, 1e-9);
  EXPECT_NEAR(r->jobs[0].end_s, 100, 1e-9);
  EXPECT_NEAR(r->busy_gpu_s * 100, 76 * 50 + 60 * 50, 1e-6);
  // C+C with cap 120: rate 1 - 0.5 * 0.2 = 0.9 each -> both end at 100 / 0.9.
  SimConfig cfg;
  cfg.policy = "predictive";
  cfg.options.cap = 120;
  cfg.workload_of_job = {2, 2};
  auto q = Simulate(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}}), Gpus(1), f.w, f.m, cfg);
  ASSERT_TRUE(q.ok());
  EXPECT_NEAR(q->jobs[0].end_s, 100 / 0.9, 1e-9);
}

TEST(Simulator, GangPlacementProgressesAtSlowestGpu) {
  Fixture f;
  // 2 GPUs. A (2 GPUs) takes GPUs 0 and 1; B joins GPU 0 (best fit, lowest id).
  // On GPU 0 the measured pair slows A to 0.8 and B to 0.5; on GPU 1 A is alone
  // at 1.0, so A progresses at 0.8: ends at 125. B: 62.5 done by 125, then alone: 162.5.
  auto r = f.Run(Jobs({{0, 0, 100, 2, 1}, {0, 0, 100, 1, 1}}), Gpus(2), "predictive", {0, 1});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->jobs[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(r->jobs[1].gpus, std::vector<int>{0});
  EXPECT_NEAR(r->jobs[0].end_s, 125, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, 162.5, 1e-9);
  // Slot: a 3-GPU job waits for the 2-GPU job on 4 GPUs while a 1-GPU job backfills.
  auto s = f.Run(Jobs({{0, 0, 100, 2, 1}, {0, 1, 10, 3, 1}, {0, 2, 10, 1, 1}}), Gpus(4), "slot", {0, 0, 0});
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->jobs[1].start_s, 100);
  EXPECT_EQ(s->jobs[1].gpus.size(), 3u);
  EXPECT_DOUBLE_EQ(s->jobs[2].start_s, 2);
}

TEST(Simulator, MemoryMustFit) {
  Fixture f;
  // Two 1%-predicted jobs of 15000 MiB cannot share a 24 GiB GPU.
  std::vector<WorkloadProfile> w = {W("M", 10, 1, 15000)};
  SimConfig cfg;
  cfg.policy = "predictive";
  auto r = Simulate(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}}), Gpus(1), w, f.m, cfg);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->jobs[1].start_s, 100);
  auto big = Simulate(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}}), Gpus(1, 40000), w, f.m, cfg);
  EXPECT_DOUBLE_EQ(big->jobs[1].start_s, 0);
}

TEST(Simulator, NeverFittingJobIsReportedNotHung) {
  Fixture f;
  // H needs 30000 MiB on 24 GiB GPUs; a 3-GPU job on 2 GPUs never fits either.
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 1, 10, 1, 1}, {0, 2, 10, 3, 1}}), Gpus(2), "slot", {3, 0, 0});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->jobs_done, 1);
  EXPECT_EQ(r->jobs_never_fit, 2);
  EXPECT_EQ(r->jobs[0].status, "never_fits");
  EXPECT_EQ(r->jobs[0].note, "needs 1 GPUs with 30000 MiB; the cluster has 0");
  EXPECT_EQ(r->jobs[2].note, "needs 3 GPUs with 2000 MiB; the cluster has 2");
}

TEST(Simulator, ProfilingRunCountsGpuTime) {
  Fixture f;
  // A (40%) profiles alone 0-60 (progress kept), then B arrives at 10 and
  // profiles on GPU 1 10-70. At 60 A is re-placed (by measured util) on the
  // free GPU 0 and finishes at 100; B at 70 joins GPU0 (40 + 50 <= 100), pair
  // measured: A at 0.8, B 0.5 until A ends.
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 10, 100, 1, 1}}), Gpus(2), "profiling", {0, 1});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_DOUBLE_EQ(r->profiling_gpu_s, 120);
  EXPECT_DOUBLE_EQ(r->jobs[0].start_s, 0);
  // A: 70 s done by t=70, 30 left at 0.8 -> ends at 107.5.
  EXPECT_NEAR(r->jobs[0].end_s, 107.5, 1e-9);
  // B: 60 done at 70; 37.5 * 0.5 = 18.75 by 107.5; 21.25 alone -> 128.75.
  EXPECT_NEAR(r->jobs[1].end_s, 128.75, 1e-9);
}

TEST(Simulator, PredictivePoliciesRequirePredictions) {
  Fixture f;
  f.w[2].predicted_util = NAN;
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}}), Gpus(1), "predictive", {0});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "policy 'predictive' needs predicted utilization, and workload C/D/b32/amp0 has none");
  EXPECT_TRUE(f.Run(Jobs({{0, 0, 100, 1, 1}}), Gpus(1), "slot", {0}).ok());
  EXPECT_EQ(f.Run(Jobs({}), Gpus(1), "x", {}).message(),
            "unknown policy 'x': want one of slot, profiling, predictive, predictive-spread, interference-aware");
}

TEST(Simulator, DeterministicForASeed) {
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok());
  for (auto& x : *w) x.predicted_util = x.true_util;  // any fixed predictions will do here
  auto m = InterferenceModel::Fit(*w, DataDir() + "/lucid/colocate_info.csv");
  ASSERT_TRUE(m.ok());
  auto t = LoadTrace("philly", DataDir(), {1500, false});
  ASSERT_TRUE(t.ok());
  auto c = ParseCluster("16x RTX3090", DataDir());
  auto run = [&](uint64_t seed) {
    SimConfig cfg;
    cfg.policy = "predictive";
    cfg.seed = seed;
    auto r = Simulate(*t, *c, *w, *m, cfg);
    EXPECT_TRUE(r.ok()) << r.message();
    return SummaryJson(*r);
  };
  std::string a = run(7);
  EXPECT_EQ(a, run(7));
  EXPECT_NE(a, run(8));
}

TEST(Simulator, WritesTheIssuesFiles) {
  Fixture f;
  auto r = f.Run(Jobs({{0, 0, 100, 2, 1}, {0, 0, 100, 1, 1}}), Gpus(2), "predictive", {0, 1});
  ASSERT_TRUE(r.ok());
  std::string dir = testing::TempDir("write");
  ASSERT_TRUE(WriteResult(*r, f.w, dir + "/out").ok());
  std::ifstream jobs(dir + "/out/jobs.csv");
  std::string header, row;
  std::getline(jobs, header);
  std::getline(jobs, row);
  EXPECT_EQ(header, "job_id,submit_s,start_s,end_s,duration_s,num_gpus,workload,true_util,predicted_util,gpus,status");
  EXPECT_EQ(row, "0,0.000,0.000,125.000,100.000,2,A/D/b32/amp0,40,40,0;1,done");
  std::ifstream s(dir + "/out/summary.json");
  std::string text((std::istreambuf_iterator<char>(s)), {});
  for (const char* k : {"num_gpus", "cluster_utilization", "jct_mean_s", "jct_p50_s", "jct_p95_s", "jct_p99_s",
                        "queue_mean_s", "makespan_s", "mean_slowdown", "profiling_gpu_s", "jobs_done"})
    EXPECT_NE(text.find(std::string("\"") + k + "\""), std::string::npos) << k;
}

}  // namespace
}  // namespace gpucast::sim
