#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

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

// Workloads: 0 = A (40%), 1 = B (50%), 2 = C (60%), 3 = H (huge memory),
// 4 = R (100%), 5 = P (predicted 30, true 70). Physics: beta 1, no switching
// cost: A+B run at 1 / (1 + 0.4 * 0.5) = 5/6 each, device 100 (0.4 + 0.5) 5/6 = 75%.
struct Fixture {
  std::vector<WorkloadProfile> w = {W("A", 40, 40), W("B", 50, 50), W("C", 60, 60), W("H", 10, 10, 30000),
                                    W("R", 100, 100), W("P", 70, 30)};
  InterferenceModel m{InterferenceParams{1.0, 0.0}};
  Result<SimResult> Run(const Trace& t, const Cluster& c, const std::string& policy, std::vector<int> wl,
                        SimConfig cfg = {}) {
    cfg.policy = policy;
    cfg.workload_of_job = std::move(wl);
    cfg.measure_noise_pct = 0;
    return Simulate(t, c, w, m, cfg);
  }
};

// A trace file whose name is not UTF-8 (any bytes but '/' and NUL name a
// Linux file): SummaryJson threw nlohmann's type_error 316 and `gpucast
// simulate --json` aborted. The byte is written as U+FFFD.
TEST(Simulator, SummaryJsonOfATraceNameThatIsNotUtf8) {
  SimResult r;
  r.policy = "slot";
  r.trace = "t\xff.csv";
  std::string j;
  ASSERT_NO_THROW(j = SummaryJson(r));
  EXPECT_NE(j.find("\"trace\": \"t\xef\xbf\xbd.csv\""), std::string::npos) << j;
}

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
  // Window [0, 10]: A made 10 s of progress at 40%: useful 40%; load (100 + 50) / 10.
  EXPECT_NEAR(r->useful_work_utilization, 40, 1e-9);
  EXPECT_NEAR(r->load_factor, 15, 1e-12);
}

TEST(Simulator, UsefulWorkAndIdealBoundByHand) {
  Fixture f;
  // A and B from t=0 (100 s each), C (60%) at t=60; predictive on one GPU:
  // A+B share at 5/6 (40 + 50 <= 100), C waits. Window [0, 60]: A and B each
  // made 50 s of progress: useful = (0.4 * 50 + 0.5 * 50) / 60 = 75%.
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}, {0, 60, 10, 1, 1}}), Gpus(1), "predictive", {0, 1, 2});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_NEAR(r->jobs[0].work_window_s, 50, 1e-9);
  EXPECT_NEAR(r->jobs[1].work_window_s, 50, 1e-9);
  EXPECT_EQ(r->jobs[2].work_window_s, 0);
  EXPECT_NEAR(r->useful_work_utilization, 75, 1e-9);
  // Ideal: min over cuts tau of 0.9 min(100, tau) + 1 (60 - tau) = 54 at tau = 60: 90%.
  EXPECT_NEAR(r->ideal_work_utilization, 90, 1e-9);
  // Both end at 120; C runs 120-130. Busy 75% for 120 s then 60% for 10 s.
  EXPECT_NEAR(r->jobs[0].end_s, 120, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, 120, 1e-9);
  EXPECT_NEAR(r->busy_gpu_s, 0.75 * 120 + 0.6 * 10, 1e-9);
  // Slot: A 0-100 alone, B waits; window [0, 60]: useful = 40 * 60 / 60 = 40%.
  auto s = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}, {0, 60, 10, 1, 1}}), Gpus(1), "slot", {0, 1, 2});
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s->useful_work_utilization, 40, 1e-9);
  EXPECT_NEAR(s->ideal_work_utilization, 90, 1e-9);
}

TEST(Simulator, ThreeSaturatingJobsTimeSlice) {
  Fixture f;
  SimConfig cfg;
  cfg.options.cap = 300;
  cfg.options.max_jobs_per_gpu = 0;  // three jobs on one GPU: past the measured pairs
  // Three 100% jobs forced onto one GPU: a third each, all end at 300; the
  // device is exactly 100% busy.
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}}), Gpus(1), "predictive", {4, 4, 4}, cfg);
  ASSERT_TRUE(r.ok()) << r.message();
  for (const JobRecord& j : r->jobs) EXPECT_NEAR(j.end_s, 300, 1e-9);
  EXPECT_NEAR(r->cluster_utilization, 100, 1e-9);
}

// The co-location limit (--max-jobs-per-gpu): by default (the measured
// degree, pairs) three light jobs submitted together on one GPU run two at a
// time, the third starting when one ends; with 0 (no limit) all three share
// at once. The summary records the limit.
TEST(Simulator, ThreeLightJobsNeverShareOneGpuUnderTheMeasuredDegree) {
  Fixture f;
  auto run = [&](int limit) {
    SimConfig cfg;
    cfg.options.max_jobs_per_gpu = limit;
    // Three 10% jobs (workload H's utilization, but little memory: a literal one).
    f.w.push_back(W("L", 10, 10, 1000));
    auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 200, 1, 1}, {0, 0, 300, 1, 1}}), Gpus(1), "predictive",
                   {6, 6, 6}, cfg);
    f.w.pop_back();
    return r;
  };
  SimConfig defaults;
  EXPECT_EQ(defaults.options.max_jobs_per_gpu, 2);
  auto two = run(defaults.options.max_jobs_per_gpu), any = run(0);
  ASSERT_TRUE(two.ok()) << two.message();
  ASSERT_TRUE(any.ok()) << any.message();
  EXPECT_NEAR(two->jobs[0].start_s, 0, 1e-9);
  EXPECT_NEAR(two->jobs[1].start_s, 0, 1e-9);
  EXPECT_GT(two->jobs[2].start_s, 99);  // waits for the first to end
  for (const JobRecord& j : any->jobs) EXPECT_NEAR(j.start_s, 0, 1e-9);
  EXPECT_NE(SummaryJson(*two).find("\"max_jobs_per_gpu\": 2"), std::string::npos);
  EXPECT_NE(SummaryJson(*any).find("\"max_jobs_per_gpu\": 0"), std::string::npos);
}

// A GPU's load is its residents' sum, not a running total: 70.7 + 10.3 -
// 70.7 is 10.299999999999997 in doubles, and a drifted sum broke best fit's
// tie (equal loads: the lowest id) by rounding noise. J0 (70.7) and J1 (10.3)
// share GPU 0 (two jobs a GPU), J2 (10.3) takes GPU 1; J0 ends; J3 sees two
// GPUs at 10.3 and takes GPU 0. predictive-feedback fed the truth with a
// zero-width interval (sure) keeps it through its observations and places
// every job where predictive does.
TEST(Simulator, EqualLoadsTieToTheLowestGpuAfterADeparture) {
  Fixture f;
  f.w = {W("X", 70.7, 70.7), W("Y", 10.3, 10.3), W("Z", 20, 20)};
  for (auto& x : f.w) x.pred_util_low = x.pred_util_high = x.predicted_util;
  SimConfig cfg;
  cfg.observe_after_s = 5;
  const Trace t = Jobs({{0, 0, 50, 1, 1}, {0, 1, 10000, 1, 1}, {0, 2, 10000, 1, 1}, {0, 500, 10, 1, 1}});
  for (const char* policy : {"predictive", "predictive-feedback"}) {
    auto r = f.Run(t, Gpus(2), policy, {0, 1, 1, 2}, cfg);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->jobs[0].gpus, std::vector<int>{0}) << policy;
    EXPECT_EQ(r->jobs[1].gpus, std::vector<int>{0}) << policy;
    EXPECT_EQ(r->jobs[2].gpus, std::vector<int>{1}) << policy;
    EXPECT_EQ(r->jobs[3].gpus, std::vector<int>{0}) << policy;
    EXPECT_DOUBLE_EQ(r->jobs[3].start_s, 500) << policy;
    EXPECT_EQ(r->migrations, 0) << policy;
    if (std::string(policy) == "predictive-feedback") {
      EXPECT_EQ(r->jobs_observed, 4);
      for (const auto& j : r->jobs) EXPECT_EQ(j.measured_util, j.predicted_util);  // the sure prediction kept
    }
  }
}

// A round stops after max_failures failures (its backfill depth), but a job
// arriving at that instant is still considered, as a round of arrivals alone
// considers it: R (100%) runs on each GPU; the 2-GPU R job J2 waits; at 100 J0
// ends and A (40%) arrives. The full round fails J2 (one GPU free), reaching
// its depth (1): A still starts at 100 on the freed GPU (it used to wait for
// the next completion, at 200). The same with a full round caused by an
// observation (predictive-feedback) instead of a completion.
TEST(Simulator, AnArrivalIsConsideredBeyondTheBackfillDepth) {
  Fixture f;
  for (auto& x : f.w) x.pred_util_low = x.pred_util_high = x.predicted_util;
  SimConfig cfg;
  cfg.options.max_failures = 1;
  const Trace t = Jobs({{0, 0, 100, 1, 1}, {0, 0, 200, 1, 1}, {0, 10, 50, 2, 1}, {0, 100, 10, 1, 1}});
  auto r = f.Run(t, Gpus(2), "predictive", {4, 4, 4, 0}, cfg);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_DOUBLE_EQ(r->jobs[3].start_s, 100);
  EXPECT_EQ(r->jobs[3].gpus, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(r->jobs[2].start_s, 200);
  // predictive-feedback: J1 (on GPU 1 from 0) is observed at 100, when A arrives; GPU 0 free since 50.
  cfg.observe_after_s = 100;
  auto o = f.Run(Jobs({{0, 0, 50, 1, 1}, {0, 0, 200, 1, 1}, {0, 10, 50, 2, 1}, {0, 100, 10, 1, 1}}), Gpus(2),
                 "predictive-feedback", {4, 4, 4, 0}, cfg);
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_DOUBLE_EQ(o->jobs[3].start_s, 100);
}

TEST(Simulator, FeedbackMigratesAnOverCommittedJob) {
  Fixture f;
  SimConfig cfg;
  cfg.observe_after_s = 10;
  cfg.rate_noise = 0;  // the progress rate seen exactly (and the counter: measure_noise_pct 0)
  // Two P jobs (predicted 30, no interval: sd 28.9; true 70) packed on GPU 0.
  // Each runs at r = 1 / (1 + 0.7 * 0.7) = 1 / 1.49 until t = 10, when their
  // counters read r x 70 = 46.98 each and their step counts show rate r: the
  // observation says 46.98 / r = 70, exactly (sd 0 here), and outweighs the
  // prediction: both are estimated at 70. The sum exceeds 100: job 0, the
  // lighter one that fixes the GPU alone (a tie: the first), moves to GPU 1 and
  // restarts from its last checkpoint (none yet within 1800 s): all 10 / 1.49 s
  // of progress are lost; it ends at 210. Job 1 runs alone from 10 with
  // 200 - 10/1.49 left.
  auto r = f.Run(Jobs({{0, 0, 200, 1, 1}, {0, 0, 200, 1, 1}}), Gpus(2), "predictive-feedback", {5, 5}, cfg);
  ASSERT_TRUE(r.ok()) << r.message();
  const double reading = 70 / 1.49;
  EXPECT_NEAR(r->jobs[0].observed_reading, reading, 1e-9);
  EXPECT_NEAR(r->jobs[0].measured_util, 70, 1e-4);
  EXPECT_NEAR(r->jobs[1].measured_util, 70, 1e-4);
  EXPECT_EQ(r->migrations, 1);
  EXPECT_EQ(r->jobs[0].migrations, 1);
  EXPECT_NEAR(r->jobs[0].end_s, 210, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, 10 + 200 - 10 / 1.49, 1e-9);
  EXPECT_NEAR(r->lost_progress_s, 10 / 1.49, 1e-9);
  EXPECT_EQ(r->jobs_observed, 2);
  // Checkpoints every 4 s of progress: job 0 keeps the 4 s of its checkpoint
  // and loses 10/1.49 - 4; it ends at 10 + 196.
  cfg.checkpoint_s = 4;
  auto c = f.Run(Jobs({{0, 0, 200, 1, 1}, {0, 0, 200, 1, 1}}), Gpus(2), "predictive-feedback", {5, 5}, cfg);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_NEAR(c->lost_progress_s, 10 / 1.49 - 4, 1e-9);
  EXPECT_NEAR(c->jobs[0].end_s, 206, 1e-9);
  ASSERT_EQ(r->placements.size(), 3u);
  EXPECT_EQ(r->placements[0].gpu, 0);
  EXPECT_NEAR(r->placements[0].end_s, 10, 1e-9);
  EXPECT_EQ(r->placements[2].job, 0);
  EXPECT_EQ(r->placements[2].gpu, 1);
  EXPECT_NEAR(r->placements[2].start_s, 10, 1e-9);
  // Open-loop predictive keeps them together: both at 1/1.49 to 298.
  auto p = f.Run(Jobs({{0, 0, 200, 1, 1}, {0, 0, 200, 1, 1}}), Gpus(2), "predictive", {5, 5});
  EXPECT_NEAR(p->jobs[0].end_s, 298, 1e-9);
}

TEST(Simulator, GangPlacementProgressesAtSlowestGpu) {
  Fixture f;
  // 2 GPUs. A (2 GPUs, 100 s) takes GPUs 0 and 1; B (50 s) joins GPU 0 (best
  // fit, lowest id). On GPU 0 both run at 5/6; on GPU 1 A is alone at 1, so A
  // progresses at 5/6: B ends at 60, when A has made 50 s; A then ends at 110.
  auto r = f.Run(Jobs({{0, 0, 100, 2, 1}, {0, 0, 50, 1, 1}}), Gpus(2), "predictive", {0, 1});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->jobs[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(r->jobs[1].gpus, std::vector<int>{0});
  EXPECT_NEAR(r->jobs[1].end_s, 60, 1e-9);
  EXPECT_NEAR(r->jobs[0].end_s, 110, 1e-9);
  // Slot: a 3-GPU job waits for the 2-GPU job on 4 GPUs while a 1-GPU job backfills.
  auto s = f.Run(Jobs({{0, 0, 100, 2, 1}, {0, 1, 10, 3, 1}, {0, 2, 10, 1, 1}}), Gpus(4), "slot", {0, 0, 0});
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->jobs[1].start_s, 100);
  EXPECT_EQ(s->jobs[1].gpus.size(), 3u);
  EXPECT_DOUBLE_EQ(s->jobs[2].start_s, 2);
}

TEST(Simulator, AGangJobWaitingForItsSlowestGpuYieldsItsShareElsewhere) {
  // Time-slicing physics. A (2 GPUs, 100%) and B (100%) share GPU 0: 0.5
  // each. On GPU 1, A would get 100/150 next to C (50%), but it waits for GPU
  // 0 and runs at 0.5, using 50 of GPU 1: C gets the other 50 and runs at 1
  // (without yielding it would run at 2/3). Memory keeps C off GPU 0.
  Fixture f;
  f.m = InterferenceModel();
  f.w = {W("A", 100, 10), W("B", 100, 10, 12000), W("C", 50, 10, 12000)};
  auto r = f.Run(Jobs({{0, 0, 100, 2, 1}, {0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}}), Gpus(2), "predictive", {0, 1, 2});
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->jobs[1].gpus, std::vector<int>{0});
  ASSERT_EQ(r->jobs[2].gpus, std::vector<int>{1});
  EXPECT_NEAR(r->jobs[2].end_s, 100, 1e-9);  // C at rate 1
  EXPECT_NEAR(r->jobs[0].end_s, 200, 1e-9);  // A and B at 0.5 throughout
  EXPECT_NEAR(r->jobs[1].end_s, 200, 1e-9);
  // Both GPUs fully busy for the first 100 s, then GPU 0 for 100 s more and
  // GPU 1 at A's 50 (A alone there, still held to GPU 0's pace).
  EXPECT_NEAR(r->busy_gpu_s, 100 * 2 + 100 * 1.5, 1e-6);
}

TEST(Simulator, RestartCostIsChargedOnEveryRestart) {
  // profiling-exclusive: a job measured alone for 70 s goes back to the queue
  // and restarts from the window's checkpoint: --restart-s 30 adds 30 s.
  Fixture f;
  SimConfig cfg;
  cfg.restart_s = 30;
  auto r = f.Run(Jobs({{0, 0, 200, 1, 1}}), Gpus(1), "profiling-exclusive", {0}, cfg);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_NEAR(r->jobs[0].end_s, 230, 1e-9);
  EXPECT_EQ(r->restarts, 1);
  EXPECT_NEAR(r->restart_gpu_s, 30, 1e-9);
  cfg.restart_s = 0;
  auto z = f.Run(Jobs({{0, 0, 200, 1, 1}}), Gpus(1), "profiling-exclusive", {0}, cfg);
  EXPECT_NEAR(z->jobs[0].end_s, 200, 1e-9);
  EXPECT_EQ(z->restarts, 1);
  // A migration is a restart too (the feedback case above, with 30 s).
  cfg = {};
  cfg.observe_after_s = 10;
  cfg.rate_noise = 0;
  cfg.restart_s = 30;
  auto m = f.Run(Jobs({{0, 0, 200, 1, 1}, {0, 0, 200, 1, 1}}), Gpus(2), "predictive-feedback", {5, 5}, cfg);
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->migrations, 1);
  EXPECT_NEAR(m->jobs[0].end_s, 240, 1e-9);  // 210 without the restart cost
  // profiling-pool's job starts afresh after its pool run: nothing charged.
  auto p = f.Run(Jobs({{0, 0, 200, 1, 1}}), Gpus(2), "profiling-pool", {0}, cfg);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->restarts, 0);
}

TEST(Simulator, RestartWorkIsTheUsefulWorkTheChargeTakesFromTheWindow) {
  // profiling-exclusive on one GPU. A (40%, 1000 s) is measured alone 0-70 s,
  // re-queued and placed again at once, restarting from the window's
  // checkpoint: --restart-s 30 adds 30 s to its remaining work. B (50%)
  // arrives at 500, the last submit: the window is [0, 500] (never a backlog).
  // At 500 A has done 70 + 430 - 30 = 470 s of useful work (500 without the
  // charge): useful work 37.6% against 40%, and the run itself reports the
  // difference, 30 s x 0.4 / 500 s = 2.4 points. B waits for A (it needs an
  // empty GPU to be measured), is measured 1030-1100 and restarts then: a
  // charge after the window, in restarts and restart_gpu_s but not in the
  // window's restart work.
  Fixture f;
  SimConfig cfg;
  cfg.restart_s = 30;
  const Trace t = Jobs({{0, 0, 1000, 1, 1}, {0, 500, 100, 1, 1}});
  auto r = f.Run(t, Gpus(1), "profiling-exclusive", {0, 1}, cfg);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_NEAR(r->window_s, 500, 1e-9);
  EXPECT_NEAR(r->jobs[0].end_s, 1030, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, 1160, 1e-9);
  EXPECT_EQ(r->restarts, 2);
  EXPECT_NEAR(r->restart_gpu_s, 60, 1e-9);
  EXPECT_NEAR(r->jobs[0].work_window_s, 470, 1e-9);
  EXPECT_NEAR(r->useful_work_utilization, 37.6, 1e-9);
  EXPECT_NEAR(r->restart_work_gpu_s, 30 * 0.4, 1e-9);
  EXPECT_NEAR(r->restart_work_utilization, 2.4, 1e-9);
  cfg.restart_s = 0;
  auto z = f.Run(t, Gpus(1), "profiling-exclusive", {0, 1}, cfg);
  ASSERT_TRUE(z.ok()) << z.message();
  EXPECT_NEAR(z->useful_work_utilization, 40, 1e-9);
  EXPECT_EQ(z->restart_work_utilization, 0);
  // On a schedule the charge does not rearrange, the runs' difference is the charge.
  EXPECT_NEAR(z->useful_work_utilization - r->useful_work_utilization, r->restart_work_utilization, 1e-9);
  // The summary reports it beside useful work.
  EXPECT_NE(SummaryJson(*r).find("\"restart_work_utilization\": 2.4"), std::string::npos) << SummaryJson(*r);
}

TEST(Simulator, EachJobsMeasurementIsItsOwnWhateverTheSchedule) {
  // Each job's measurement noise is drawn from (seed, job id, kind), never
  // from a stream shared with other jobs: a restart cost or another cluster
  // changes when, where and in which order jobs are measured, but every
  // profiled job's reading stays its own. Were the draws shared (the k-th
  // reading of the run gets the k-th draw), a reordering would hand the jobs
  // after it other jobs' noise, and a small perturbation (--restart-s) would
  // change every later measurement.
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok());
  auto m = InterferenceModel::Fit(*w, DataDir() + "/lucid/colocate_info.csv");
  ASSERT_TRUE(m.ok());
  auto t = LoadTrace("philly", DataDir(), {500, false});
  ASSERT_TRUE(t.ok());
  auto c12 = ParseCluster("12x RTX3090", DataDir()), c24 = ParseCluster("24x RTX3090", DataDir());
  ASSERT_TRUE(c12.ok() && c24.ok());
  SimConfig cfg;
  cfg.policy = "profiling-exclusive";
  cfg.seed = 3;
  auto a = Simulate(*t, *c12, *w, *m, cfg);
  cfg.restart_s = 60;
  auto b = Simulate(*t, *c24, *w, *m, cfg);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_GT(b->restarts, 0);
  // The order in which jobs were measured (their profiling runs' ends).
  auto order = [](const SimResult& r) {
    std::vector<std::pair<double, int>> ends;
    for (const PlacementRecord& p : r.placements)
      if (p.profile) ends.push_back({p.end_s, p.job});
    std::sort(ends.begin(), ends.end());
    std::vector<int> o;
    for (const auto& e : ends)
      if (std::find(o.begin(), o.end(), e.second) == o.end()) o.push_back(e.second);
    return o;
  };
  const std::vector<int> oa = order(*a), ob = order(*b);
  int reordered = 0;
  for (size_t i = 0; i < std::min(oa.size(), ob.size()); ++i) reordered += oa[i] != ob[i];
  EXPECT_GT(reordered, 100);  // the two runs measure jobs in different orders
  int measured = 0;
  for (size_t j = 0; j < a->jobs.size(); ++j) {
    const JobRecord &x = a->jobs[j], &y = b->jobs[j];
    if (std::isnan(x.measured_util) || std::isnan(y.measured_util)) continue;
    ++measured;
    EXPECT_EQ(x.measured_util, y.measured_util) << "job " << x.id;
  }
  EXPECT_GT(measured, 400);
}

TEST(Simulator, RecurringJobsAreKnownFromTheirEarlierObservation) {
  // With --recurring 1 every job of a prediction-driven policy is known by an
  // earlier observation: true + noise (0 here), interval +-2 sd, measured memory.
  Fixture f;
  SimConfig cfg;
  cfg.recurring = 1;
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}}), Gpus(1), "predictive", {5, 5}, cfg);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->jobs_recurring, 2);
  EXPECT_DOUBLE_EQ(r->jobs[0].predicted_util, 70);  // P's truth, not its prediction 30
  EXPECT_DOUBLE_EQ(r->pred_mae, 0);
  // 70 + 70 > 100: they no longer share (each runs alone, one after the other).
  EXPECT_NEAR(r->jobs[1].end_s, 200, 1e-9);
  // Baselines never read predictions: nothing recurs for them.
  auto b = f.Run(Jobs({{0, 0, 100, 1, 1}}), Gpus(1), "profiling", {5}, cfg);
  EXPECT_EQ(b->jobs_recurring, 0);
  // A share of 0.5 picks about half of 400 jobs (a seeded draw per job).
  cfg.recurring = 0.5;
  std::vector<TraceJob> many(400, TraceJob{0, 0, 10, 1, 1});
  auto h = f.Run(Jobs(many), Gpus(4), "predictive", std::vector<int>(400, 5), cfg);
  ASSERT_TRUE(h.ok());
  EXPECT_GT(h->jobs_recurring, 160);
  EXPECT_LT(h->jobs_recurring, 240);
}

TEST(Simulator, CapacityWindowEndsWhereTheIdealBacklogDrains) {
  // One GPU, 100% jobs: two of 100 s at t = 0, one of 10 s at 50, one of 10 s
  // at 400. A(tau) = 2 min(tau, 100) + min((tau - 50)+, 10) up to 400.
  // At the submit at 50: A = 100 > 50 GPU-seconds of capacity: backlog 50.
  // By 400 the backlog is gone (A(400) = 210 <= 400): the window is [0, 50].
  std::vector<JobRecord> jobs(4);
  const double sub[] = {0, 0, 50, 400}, dur[] = {100, 100, 10, 10};
  for (int i = 0; i < 4; ++i) {
    jobs[i].submit_s = sub[i];
    jobs[i].duration_s = dur[i];
    jobs[i].true_util = 100;
  }
  auto end = CapacityWindowEnd(jobs, 1, 0, 400);
  ASSERT_TRUE(end.has_value());
  EXPECT_DOUBLE_EQ(*end, 50);
  // On [0, 50] the bound is capacity: min over tau of A(tau) + (50 - tau) = 50 at tau = 0: 100%.
  EXPECT_NEAR(IdealWorkUtilization(jobs, 1, 0, 50), 100, 1e-9);
  // Two GPUs keep up (A(50) = 100 = 2 x 50, no excess): demand-bound, no end.
  EXPECT_FALSE(CapacityWindowEnd(jobs, 2, 0, 400).has_value());
  // Through the simulator: slot's window and bound.
  Fixture f;
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}, {0, 50, 10, 1, 1}, {0, 400, 10, 1, 1}}), Gpus(1),
                 "slot", {4, 4, 4, 4});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->bound_kind, "capacity");
  EXPECT_DOUBLE_EQ(r->window_s, 50);
  EXPECT_DOUBLE_EQ(r->trace_window_s, 400);
  EXPECT_NEAR(r->useful_work_utilization, 100, 1e-9);  // job 0 ran at 100% over [0, 50]
  EXPECT_NEAR(r->ideal_work_utilization, 100, 1e-9);
  // Over [0, 400]: 100 x (200 + 10) / 400 done by slot (the last job is submitted at 400).
  EXPECT_NEAR(r->useful_work_trace_window, 100.0 * 210 / 400, 1e-9);
  auto d = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 400, 10, 1, 1}}), Gpus(1), "slot", {4, 4});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->bound_kind, "demand");
  EXPECT_DOUBLE_EQ(d->window_s, 400);
}

TEST(Simulator, OutOfMemoryCrashesTheNewestJobWhichLosesProgressSinceItsCheckpoint) {
  // A (40%) and B (50%) each need 15000 MiB but are predicted at 10000 (high
  // end): predictive packs both on one 24576 MiB GPU (true 30000 > 24576).
  // They share at 5/6 until B, the newest, crashes at t = 10 (oom_after_s)
  // having made 10 x 5/6 s of progress since its last checkpoint (none yet):
  // all lost. B may no longer share: it waits for A, alone from 10 with
  // 100 - 50/6 left (ends 10 + 100 - 50/6), then runs its full 100 s.
  Fixture f;
  f.w[0].gmem_mib = f.w[1].gmem_mib = 15000;
  f.w[0].pred_mem_mib = f.w[0].pred_mem_high_mib = 10000;
  f.w[1].pred_mem_mib = f.w[1].pred_mem_high_mib = 10000;
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}}), Gpus(1), "predictive", {0, 1});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->oom_events, 1);
  EXPECT_EQ(r->jobs[1].ooms, 1);
  EXPECT_EQ(r->jobs[0].ooms, 0);
  EXPECT_NEAR(r->oom_lost_gpu_s, 50.0 / 6, 1e-9);
  const double a_end = 10 + 100 - 50.0 / 6;
  EXPECT_NEAR(r->jobs[0].end_s, a_end, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, a_end + 100, 1e-9);
  EXPECT_EQ(SummaryJson(*r).find("\"oom_events\": 1") != std::string::npos, true);
  // The oracle's memory is the truth: B waits for A; no crash.
  f.w[0].pred_mem_mib = f.w[0].pred_mem_high_mib = 15000;
  f.w[1].pred_mem_mib = f.w[1].pred_mem_high_mib = 15000;
  auto o = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 0, 100, 1, 1}}), Gpus(1), "predictive", {0, 1});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->oom_events, 0);
  EXPECT_NEAR(o->jobs[1].end_s, 200, 1e-9);
}

TEST(Simulator, GangJobAdvancesAtItsSlowestGpuAndMigratesWithAllItsGpus) {
  // Q (true 90, predicted 10) on GPU 0; then the 2-GPU P job (true 70,
  // predicted 30) best-fits GPUs 0 (10 predicted) and 1 (empty). On GPU 0,
  // e = 0.9 and 0.7: both run at 1 / (1 + 0.63) (the device stays under
  // 100%); on GPU 1 P is alone at 1, so the gang advances at 1/1.63.
  // At t = 10 the counters read 90/1.63 (Q) and 70/1.63 (P). Q, next to P
  // (predicted 30): u = reading (1 + 0.003 u). P, next to Q at that u on GPU 0
  // and alone on GPU 1. The sum is over 100; P (the lighter one that fixes GPU 0
  // alone) moves with both its GPUs to the empty GPUs 2 and 3, restarting from
  // zero (no checkpoint within 1800 s): it ends at 10 + 200. Q runs alone from
  // 10 with 200 - 10/1.63 left.
  Fixture f;
  f.w.push_back(W("Q", 90, 10));
  const int q = static_cast<int>(f.w.size()) - 1;
  SimConfig cfg;
  cfg.observe_after_s = 10;
  cfg.rate_noise = 0;
  auto r = f.Run(Jobs({{0, 0, 200, 1, 1}, {0, 0, 200, 2, 1}}), Gpus(4), "predictive-feedback", {q, 5}, cfg);
  ASSERT_TRUE(r.ok()) << r.message();
  const double rate = 1 / 1.63;
  // Counter over progress rate: 90 and 70 (the gang's rate is its slowest GPU's).
  EXPECT_NEAR(r->jobs[0].measured_util, 90, 1e-4);
  EXPECT_NEAR(r->jobs[1].measured_util, 70, 1e-4);
  EXPECT_EQ(r->migrations, 1);
  EXPECT_EQ(r->jobs[1].migrations, 1);
  EXPECT_EQ(r->jobs[1].gpus, (std::vector<int>{2, 3}));
  EXPECT_NEAR(r->jobs[1].end_s, 210, 1e-9);
  EXPECT_NEAR(r->jobs[0].end_s, 10 + 200 - 10 * rate, 1e-9);
  EXPECT_NEAR(r->lost_progress_s, 2 * 10 * rate, 1e-9);  // x 2 GPUs
}

TEST(Simulator, ProfilingInPlaceStartsAloneAndJoinsAMeasuredJobAfterItsWindow) {
  // Two GPUs, no measurement noise, checkpoints every 1800 s (the default).
  // A (40%, 1000 s) at 0 takes GPU 0 alone and is measured 0-70 (40); GPU 1
  // is exclusive then (B), so A stays. B (50%, 1000 s) at 10 takes the empty
  // GPU 1 and is measured 10-80 (50, alone); at 80 it fits next to A (40 +
  // 50 <= 100) and moves there, restarting from its last checkpoint (none:
  // its 70 s of progress are lost), which frees GPU 1. C (R, 100%, 500 s) at
  // 100 takes GPU 1 alone, measured 100 (130 next to A and B): stays, ends
  // at 600. A and B run at 5/6 from 80: A (920 left) ends 80 + 920 x 6/5 =
  // 1184, when B has made 920 of its 1000; B ends alone 80 s later, at 1264.
  Fixture f;
  const Trace t = Jobs({{0, 0, 1000, 1, 1}, {0, 10, 1000, 1, 1}, {0, 100, 500, 1, 1}});
  auto r = f.Run(t, Gpus(2), "profiling", {0, 1, 4});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_NEAR(r->jobs[0].measured_util, 40, 1e-9);
  EXPECT_NEAR(r->jobs[1].measured_util, 50, 1e-9);
  EXPECT_NEAR(r->jobs[2].measured_util, 100, 1e-9);
  EXPECT_EQ(r->migrations, 1);
  EXPECT_EQ(r->jobs[1].migrations, 1);
  EXPECT_EQ(r->jobs[0].migrations, 0);  // the measured job it joined never moves
  EXPECT_EQ(r->jobs[1].gpus, std::vector<int>{0});
  EXPECT_NEAR(r->lost_progress_s, 70, 1e-9);
  EXPECT_DOUBLE_EQ(r->jobs[1].run_start_s, 10);  // no re-queue: the profile is the run
  EXPECT_DOUBLE_EQ(r->jobs[2].start_s, 100);     // on the GPU B freed
  EXPECT_NEAR(r->jobs[2].end_s, 600, 1e-9);
  EXPECT_NEAR(r->jobs[0].end_s, 1184, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, 1264, 1e-9);
  EXPECT_DOUBLE_EQ(r->profiling_gpu_s, 3 * 70);
  // Exclusive: the same windows, then each job is re-queued and packed by its
  // measurement, keeping its progress: A back on GPU 0 at 70, B joins it at
  // 80 with 930 left (ends 1194), C measured on GPU 1 at 100-170, back there.
  auto e = f.Run(t, Gpus(2), "profiling-exclusive", {0, 1, 4});
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_EQ(e->migrations, 0);
  EXPECT_NEAR(e->jobs[0].end_s, 1184, 1e-9);
  EXPECT_NEAR(e->jobs[1].end_s, 1194, 1e-9);
  EXPECT_NEAR(e->jobs[2].end_s, 600, 1e-9);
}

TEST(Simulator, ProfilingInPlaceAHeavyNewcomerStaysAndNothingJoinsUnmeasured) {
  // Two GPUs. L (A, 40%, 1000 s) at 0 on GPU 0; H (R, 100%, 1000 s) at 10 on
  // GPU 1, measured 100 at 80: 40 + 100 > 100, so it stays (no migration) and
  // ends at 1010. X (A, 40%, 100 s) at 200 is unmeasured: GPU 0 has room for
  // 60 by L's measurement but X starts only on an empty GPU, GPU 0 when L
  // ends at 1000 (alone all along); X ends at 1100.
  Fixture f;
  const Trace t = Jobs({{0, 0, 1000, 1, 1}, {0, 10, 1000, 1, 1}, {0, 200, 100, 1, 1}});
  auto r = f.Run(t, Gpus(2), "profiling", {0, 4, 0});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->migrations, 0);
  EXPECT_EQ(r->jobs[1].gpus, std::vector<int>{1});
  EXPECT_NEAR(r->jobs[0].end_s, 1000, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, 1010, 1e-9);
  EXPECT_DOUBLE_EQ(r->jobs[2].start_s, 1000);
  EXPECT_NEAR(r->jobs[2].end_s, 1100, 1e-9);
  EXPECT_DOUBLE_EQ(r->shared_gpu_s, 0);
}

TEST(Simulator, ProfilingPoolDiscardsThePoolRunsProgress) {
  // Two GPUs: GPU 0 is the pool (round(0.05 x 2) -> at least 1). A (40%) is
  // profiled on it 0-70 (its progress discarded) and starts on GPU 1 at 70
  // with all 1000 s left. B (50%), submitted at 10, waits for the pool,
  // is profiled 70-140 and joins A (40 + 50 <= 100). A has 930 left at 140:
  // ends 140 + 930 x 6/5 = 1256; B ends 70 later, at 1326.
  Fixture f;
  auto r = f.Run(Jobs({{0, 0, 1000, 1, 1}, {0, 10, 1000, 1, 1}}), Gpus(2), "profiling-pool", {0, 1});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->pool_gpus, 1);
  EXPECT_DOUBLE_EQ(r->profiling_gpu_s, 140);
  EXPECT_DOUBLE_EQ(r->jobs[0].run_start_s, 70);
  EXPECT_DOUBLE_EQ(r->jobs[1].run_start_s, 140);
  EXPECT_EQ(r->jobs[1].gpus, std::vector<int>{1});
  EXPECT_NEAR(r->jobs[0].end_s, 1256, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, 1326, 1e-9);
  ASSERT_GE(r->placements.size(), 2u);
  EXPECT_TRUE(r->placements[0].discard);
  EXPECT_EQ(f.Run(Jobs({{0, 0, 10, 1, 1}}), Gpus(1), "profiling-pool", {0}).message(),
            "policy 'profiling-pool' needs at least 2 GPUs (a profiling pool and the rest)");
}

TEST(Simulator, SlotPacksFractionalRequests) {
  // Alibaba-style requests: 0.5 + 0.5 share one GPU; 0.6 then waits (a whole
  // GPU request would too). A and B at 5/6 end at 120; C (60%) runs 120-130.
  Fixture f;
  auto r = f.Run(Jobs({{0, 0, 100, 1, 0.5}, {0, 0, 100, 1, 0.5}, {0, 1, 10, 1, 0.6}}), Gpus(1), "slot", {0, 1, 2});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_NEAR(r->jobs[0].end_s, 120, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, 120, 1e-9);
  EXPECT_NEAR(r->jobs[2].start_s, 120, 1e-9);
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

TEST(Simulator, ProfilingExclusiveRunCountsGpuTime) {
  Fixture f;
  // A (40%) profiles alone 0-70 (10 s warm-up + 60 s window, progress kept);
  // B arrives at 10 and profiles on GPU 1 10-80. At 70 A (measured 40, no
  // noise) is placed on the free GPU 0 and runs alone; at 80 B (50) joins it
  // (40 + 50 <= 100). A has 20 s left at 80, at 5/6: ends at 104. B has 30 s
  // left at 80, makes 20 by 104, then 10 alone: ends at 114.
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}, {0, 10, 100, 1, 1}}), Gpus(2), "profiling-exclusive", {0, 1});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_DOUBLE_EQ(r->profiling_gpu_s, 140);
  EXPECT_DOUBLE_EQ(r->jobs[0].start_s, 0);
  EXPECT_DOUBLE_EQ(r->jobs[0].run_start_s, 70);
  EXPECT_DOUBLE_EQ(r->jobs[1].run_start_s, 80);
  EXPECT_NEAR(r->jobs[0].end_s, 104, 1e-9);
  EXPECT_NEAR(r->jobs[1].end_s, 114, 1e-9);
  // Queue: to the real run, profiling and the wait after it included: (70 + 70) / 2.
  EXPECT_NEAR(r->queue_mean_s, 70, 1e-9);
  EXPECT_EQ(r->jobs[0].measured_util, 40);
  // placements: a profile row and a run row per job.
  ASSERT_EQ(r->placements.size(), 4u);
  EXPECT_TRUE(r->placements[0].profile);
  EXPECT_NEAR(r->placements[0].end_s, 70, 1e-9);
  // With measurement noise the measured utilization differs, seeded.
  auto n1 = Simulate(Jobs({{0, 0, 100, 1, 1}}), Gpus(1), f.w, f.m, [] {
    SimConfig c;
    c.policy = "profiling-exclusive";
    c.workload_of_job = {0};
    c.measure_noise_pct = 5;
    return c;
  }());
  ASSERT_TRUE(n1.ok());
  EXPECT_NE(n1->jobs[0].measured_util, 40);
  EXPECT_NEAR(n1->jobs[0].measured_util, 40, 30);
}

TEST(Simulator, PredictivePoliciesRequirePredictions) {
  Fixture f;
  f.w[2].predicted_util = NAN;
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}}), Gpus(1), "predictive", {0});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "policy 'predictive' needs predicted utilization, and workload C/D/b32/amp0 has none");
  EXPECT_TRUE(f.Run(Jobs({{0, 0, 100, 1, 1}}), Gpus(1), "slot", {0}).ok());
  EXPECT_EQ(f.Run(Jobs({}), Gpus(1), "x", {}).message(),
            "unknown policy 'x': want one of slot, profiling, profiling-pool, profiling-exclusive, "
            "profiling-interference-aware, predictive, "
            "predictive-spread, interference-aware, predictive-feedback, predictive-hybrid");
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

// --cap-rule capacity: the capped policies pack to 100 x the fitted work
// capacity (the Lucid fit: c 1.200, docs/simulator.md), recorded in the
// summary, and it changes what predictive does.
TEST(Simulator, TheCapacityCapIsRecordedAndUsed) {
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok());
  for (auto& x : *w) x.predicted_util = x.true_util;
  auto m = InterferenceModel::Fit(*w, DataDir() + "/lucid/colocate_info.csv");
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->WorkCapacity(), 1.2, 1e-3);
  auto t = LoadTrace("philly", DataDir(), {1500, false});
  ASSERT_TRUE(t.ok());
  auto c = ParseCluster("16x RTX3090", DataDir());
  ASSERT_TRUE(c.ok());
  auto run = [&](bool by_capacity) {
    SimConfig cfg;
    cfg.policy = "predictive";
    cfg.seed = 2;
    cfg.options.cap_by_capacity = by_capacity;
    return Simulate(*t, *c, *w, *m, cfg);
  };
  auto paper = run(false), capacity = run(true);
  ASSERT_TRUE(paper.ok() && capacity.ok());
  EXPECT_EQ(paper->cap_rule, "sum");
  EXPECT_DOUBLE_EQ(paper->cap, 100);
  EXPECT_EQ(capacity->cap_rule, "capacity");
  EXPECT_NEAR(capacity->cap, 120, 0.1);
  EXPECT_NE(SummaryJson(*capacity).find("\"cap_rule\": \"capacity\""), std::string::npos);
  EXPECT_NE(SummaryJson(*paper), SummaryJson(*capacity));
}

// A policy that decides without predictions gives the same summary whether
// the command loaded predictions (for other policies of its list) or not, and
// whether other runs came before it in the process.
TEST(Simulator, BaselineIsTheSameAloneAndAfterOtherPolicies) {
  auto plain = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(plain.ok());
  auto m = InterferenceModel::Fit(*plain, DataDir() + "/lucid/colocate_info.csv");
  ASSERT_TRUE(m.ok());
  auto t = LoadTrace("philly", DataDir(), {1500, false});
  ASSERT_TRUE(t.ok());
  auto c = ParseCluster("16x RTX3090", DataDir());
  ASSERT_TRUE(c.ok());
  // What a list with a predictive policy loads: predictions that differ from
  // the truth, memory included (too low: packing by it would crash jobs).
  std::vector<WorkloadProfile> loaded = *plain;
  for (auto& x : loaded) {
    x.predicted_util = std::clamp(100 - x.true_util, 0.0, 100.0);
    x.pred_mem_mib = x.pred_mem_high_mib = 0.5 * x.gmem_mib;
  }
  auto run = [&](const std::string& policy, const std::vector<WorkloadProfile>& w) {
    SimConfig cfg;
    cfg.policy = policy;
    cfg.seed = 3;
    auto r = Simulate(*t, *c, w, *m, cfg);
    EXPECT_TRUE(r.ok()) << r.message();
    return r.ok() ? SummaryJson(*r) : std::string();
  };
  for (const char* p : {"slot", "profiling", "profiling-pool", "profiling-exclusive"}) {
    const std::string alone = run(p, *plain);
    ASSERT_FALSE(alone.empty());
    EXPECT_NE(alone.find("\"memory_predictions\": \"none (measured memory)\""), std::string::npos) << alone;
    run("predictive-feedback", loaded);  // another policy of the list first
    EXPECT_EQ(alone, run(p, loaded)) << p;
  }
}

// jobs.csv's numbers are written as printf's %.3f (times) and %.6g (the rest)
// write them, the reference here, on values whose rounding is delicate.
TEST(Simulator, WritesNumbersAsPrintfDoes) {
  Fixture f;
  auto r = f.Run(Jobs({{0, 0, 100, 1, 1}}), Gpus(1), "predictive", {0});
  ASSERT_TRUE(r.ok());
  JobRecord& j = r->jobs[0];
  j.submit_s = 0.1 + 0.2;
  j.start_s = 1234567.8915;
  j.end_s = 1e15 + 0.0005;
  j.duration_s = 2.0005;
  j.run_start_s = 1e-4;
  j.work_window_s = 0.0005;
  j.true_util = 12.3456789;
  j.predicted_util = 1e-7;
  j.measured_util = 123456789.0;
  j.mem_mib = -0.0;
  j.sched_mem_mib = 100000;
  j.observed_reading = 1e6;
  j.predicted_low = 0.000123456789;
  j.predicted_high = 99.99995;
  std::string dir = testing::TempDir("printf");
  ASSERT_TRUE(WriteResult(*r, f.w, dir + "/out").ok());
  std::ifstream jobs(dir + "/out/jobs.csv");
  std::string header, row;
  std::getline(jobs, header);
  std::getline(jobs, row);
  auto p = [](const char* fmt, double v) {
    char b[512];
    std::snprintf(b, sizeof b, fmt, v);
    return std::string(b);
  };
  const std::string want = "0," + p("%.3f", j.submit_s) + "," + p("%.3f", j.start_s) + "," + p("%.3f", j.end_s) + "," +
                           p("%.3f", j.duration_s) + ",1,A/D/b32/amp0," + p("%.6g", j.true_util) + "," +
                           p("%.6g", j.predicted_util) + ",0,done," + p("%.3f", j.run_start_s) + "," +
                           p("%.3f", j.work_window_s) + "," + p("%.6g", j.measured_util) + ",0," +
                           p("%.6g", j.mem_mib) + "," + p("%.6g", j.sched_mem_mib) + ",0,," +
                           p("%.6g", j.observed_reading) + ",0," + p("%.6g", j.predicted_low) + "," +
                           p("%.6g", j.predicted_high);
  EXPECT_EQ(row, want);
  // A few by hand, so that the reference itself is checked.
  EXPECT_NE(row.find(",12.3457,1e-07,"), std::string::npos) << row;
  EXPECT_NE(row.find(",1.23457e+08,0,-0,100000,"), std::string::npos) << row;
  const std::string tail = ",0,0.000123457,99.9999";  // 99.99995 is stored a little below it
  EXPECT_EQ(row.substr(row.size() - tail.size()), tail) << row;
  EXPECT_EQ(row.substr(0, 8), "0,0.300,") << row;
}

TEST(Simulator, WritesTheIssuesFiles) {
  Fixture f;
  auto r = f.Run(Jobs({{0, 0, 100, 2, 1}, {0, 0, 50, 1, 1}}), Gpus(2), "predictive", {0, 1});
  ASSERT_TRUE(r.ok());
  std::string dir = testing::TempDir("write");
  ASSERT_TRUE(WriteResult(*r, f.w, dir + "/out").ok());
  std::ifstream jobs(dir + "/out/jobs.csv");
  std::string header, row;
  std::getline(jobs, header);
  std::getline(jobs, row);
  EXPECT_EQ(header, "job_id,submit_s,start_s,end_s,duration_s,num_gpus,workload,true_util,predicted_util,gpus,status,"
                    "run_start_s,work_in_window_s,measured_util,migrations,mem_mib,sched_mem_mib,ooms,source_job,"
                    "observed_reading,recurring,predicted_low,predicted_high");
  EXPECT_EQ(row, "0,0.000,0.000,110.000,100.000,2,A/D/b32/amp0,40,40,0;1,done,0.000,0.000,,0,2000,2000,0,,,0,,");
  std::ifstream pl(dir + "/out/placements.csv");
  std::getline(pl, header);
  EXPECT_EQ(header, "job_id,gpu,start_s,end_s,kind");
  std::vector<std::string> rows;
  while (std::getline(pl, row)) rows.push_back(row);
  EXPECT_EQ(rows, (std::vector<std::string>{"0,0,0.000,110.000,run", "0,1,0.000,110.000,run", "1,0,0.000,60.000,run"}));
  std::ifstream s(dir + "/out/summary.json");
  std::string text((std::istreambuf_iterator<char>(s)), {});
  for (const char* k : {"num_gpus", "useful_work_utilization", "ideal_work_utilization", "bound_kind",
                        "window_start_s", "window_end_s", "load_scale", "oom_events", "oom_lost_gpu_h", "load_factor",
                        "cluster_utilization", "jct_mean_s", "jct_p50_s", "jct_p95_s", "jct_p99_s",
                        "queue_mean_s", "makespan_s", "mean_slowdown", "profiling_gpu_s", "jobs_done"})
    EXPECT_NE(text.find(std::string("\"") + k + "\""), std::string::npos) << k;
}

// Independent of the simulator's own accounting: replays placements (which
// job sat on which GPU when) through the interference model alone and
// recomputes every job's progress, the useful work in the window and the
// device busy time.
struct Replay {
  std::vector<double> progress, window_progress;
  double busy_gpu_s = 0, max_busy = 0, max_mem_frac = 0;
  int profile_shared = 0;
};

Replay ReplayPlacements(const SimResult& r, const std::vector<WorkloadProfile>& w, const InterferenceModel& m,
                        double checkpoint_s, double t_window, double gpu_mem) {
  Replay out;
  out.progress.assign(r.jobs.size(), 0.0);
  out.window_progress.assign(r.jobs.size(), 0.0);
  std::vector<double> ts = {t_window};
  for (const PlacementRecord& p : r.placements) {
    ts.push_back(p.start_s);
    ts.push_back(p.end_s);
  }
  std::sort(ts.begin(), ts.end());
  ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
  // The kind of each job's last ended row: 0 none, 1 run, 2 profile (progress
  // kept), 3 pool-profile (progress discarded).
  std::vector<int> last_kind(r.jobs.size(), 0);
  for (size_t k = 0; k + 1 < ts.size(); ++k) {
    const double t = ts[k], dt = ts[k + 1] - t;
    std::vector<int> ended(r.jobs.size(), 0);
    for (const PlacementRecord& p : r.placements)
      if (p.end_s == t) ended[p.job] = p.discard ? 3 : p.profile ? 2 : 1;
    for (size_t j = 0; j < ended.size(); ++j)
      if (ended[j]) last_kind[j] = ended[j];
    // A restart after a run (migration): from the last checkpoint, every
    // checkpoint_s of progress.
    std::vector<char> restarted(r.jobs.size(), 0);
    for (const PlacementRecord& p : r.placements)
      if (p.start_s == t && !restarted[p.job]) {
        restarted[p.job] = 1;
        if (last_kind[p.job] == 1) out.progress[p.job] -= std::fmod(out.progress[p.job], checkpoint_s);
      }
    if (t >= t_window && k > 0 && ts[k - 1] < t_window) out.window_progress = out.progress;
    std::map<int, std::vector<int>> on_gpu;
    for (const PlacementRecord& p : r.placements)
      if (p.start_s <= t && t < p.end_s) on_gpu[p.gpu].push_back(static_cast<int>(&p - r.placements.data()));
    // Gang jobs yield: on each GPU a job is capped at its least free rate on
    // its other GPUs (RatesCapped), iterated to a fixed point (Jacobi).
    std::map<std::pair<int, int>, double> free_rate, cur_rate;  // (gpu, job)
    std::map<int, std::vector<int>> gpus_of;
    for (auto& [g, rows] : on_gpu)
      for (int i : rows) gpus_of[r.placements[i].job].push_back(g);
    std::map<int, double> busy_of;
    for (int it = 0; it < 200; ++it) {
      double change = 0;
      std::map<std::pair<int, int>, double> next_free;
      for (auto& [g, rows] : on_gpu) {
        const int k = static_cast<int>(rows.size());
        std::vector<double> u, caps(k, 1.0), rates(k);
        for (int i = 0; i < k; ++i) {
          const int job = r.placements[rows[i]].job;
          u.push_back(w[r.jobs[job].workload].true_util);
          for (int h : gpus_of[job])
              if (h != g && free_rate.count({h, job})) caps[i] = std::min(caps[i], free_rate[{h, job}]);
        }
        double busy;
        std::vector<double> fr_all(k);
        m.RatesCapped(u.data(), caps.data(), k, rates.data(), &busy, fr_all.data());
        busy_of[g] = busy;
        for (int i = 0; i < k; ++i) {
          const int job = r.placements[rows[i]].job;
          cur_rate[{g, job}] = rates[i];
          const double fr = fr_all[i];  // the uncapped share here (the simulator's free rate)
          next_free[{g, job}] = fr;
          auto old = free_rate.find({g, job});
          change = std::max(change, old == free_rate.end() ? 1.0 : std::fabs(old->second - fr));
        }
      }
      free_rate = std::move(next_free);
      if (change < 1e-13) break;
    }
    std::map<int, double> rate;
    for (auto& [g, rows] : on_gpu) {
      double mem = 0;
      for (int i : rows) {
        const JobRecord& j = r.jobs[r.placements[i].job];
        mem += w[j.workload].gmem_mib;
        if (r.placements[i].profile && !r.placements[i].discard && rows.size() > 1) ++out.profile_shared;
      }
      out.max_mem_frac = std::max(out.max_mem_frac, mem / gpu_mem);
      out.busy_gpu_s += busy_of[g] / 100.0 * dt;
      out.max_busy = std::max(out.max_busy, busy_of[g]);
      for (size_t i = 0; i < rows.size(); ++i) {
        if (r.placements[rows[i]].discard) continue;  // a pool run's progress is discarded
        int job = r.placements[rows[i]].job;
        const double x = cur_rate[{g, job}];
        auto it = rate.find(job);
        rate[job] = it == rate.end() ? x : std::min(it->second, x);
      }
    }
    for (auto& [job, x] : rate) out.progress[job] += x * dt;
  }
  if (ts.empty() || ts.back() <= t_window) out.window_progress = out.progress;
  return out;
}

TEST(Simulator, PlacementsReplayMatchesAccounting) {
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok());
  // Predictions well off the truth, so that feedback has something to correct.
  for (auto& x : *w) x.predicted_util = 0.6 * x.true_util + 10;
  auto m = InterferenceModel::Fit(*w, DataDir() + "/lucid/colocate_info.csv");
  ASSERT_TRUE(m.ok());
  auto t = LoadTrace("philly", DataDir(), {500, false});
  ASSERT_TRUE(t.ok());
  auto c = ParseCluster("12x RTX3090", DataDir());
  for (const char* policy :
       {"slot", "profiling", "profiling-pool", "profiling-exclusive", "profiling-interference-aware", "predictive",
        "predictive-feedback", "predictive-hybrid"}) {
    SimConfig cfg;
    cfg.policy = policy;
    cfg.seed = 3;
    cfg.checkpoint_s = 600;  // short enough that migrations restart from a checkpoint
    auto r = Simulate(*t, *c, *w, *m, cfg);
    ASSERT_TRUE(r.ok()) << r.message();
    const double t_window = r->window_s;
    Replay rp = ReplayPlacements(*r, *w, *m, cfg.checkpoint_s, t_window, 24576);
    double useful = 0;
    for (size_t j = 0; j < r->jobs.size(); ++j) {
      const JobRecord& job = r->jobs[j];
      if (job.status == "done") {
        EXPECT_NEAR(rp.progress[j], job.duration_s, 1e-6 * job.duration_s + 1e-6) << policy << " job " << job.id;
      }
      useful += job.true_util / 100.0 * job.num_gpus * rp.window_progress[j];
    }
    EXPECT_NEAR(100.0 * useful / (12 * t_window), r->useful_work_utilization, 1e-6) << policy;
    EXPECT_LE(r->useful_work_utilization, r->ideal_work_utilization + 1e-9) << policy;
    EXPECT_NEAR(rp.busy_gpu_s, r->busy_gpu_s, 1e-6 * r->busy_gpu_s) << policy;
    EXPECT_LE(rp.max_busy, 100 + 1e-9) << policy;
    EXPECT_LE(rp.max_mem_frac, 1 + 1e-9) << policy;
    EXPECT_EQ(rp.profile_shared, 0) << policy;  // every profiling run is alone
    EXPECT_EQ(r->oom_events, 0) << policy;  // the scheduler knows the true memory here
    if (std::string(policy) == "predictive-feedback" || std::string(policy) == "profiling") {
      EXPECT_GT(r->migrations, 0) << policy;  // the replay covers restarts from a checkpoint
    }
  }
}

}  // namespace
}  // namespace gpucast::sim
