#include "sim/policy.h"

#include <gtest/gtest.h>

#include "sim/test_util.h"

namespace gpucast::sim {
namespace {

// A literal cluster view.
class FakeView : public ClusterView {
 public:
  FakeView() : model_(InterferenceParams{1.0, 0.0}) {}
  double now() const override { return 0; }
  const std::vector<GpuState>& gpus() const override { return gpus_; }
  const JobInfo& job(int j) const override { return jobs_[j]; }
  void VisitCandidates(const std::function<bool(int)>& visit) const override {
    for (int j : cand_)
      if (!visit(j)) return;
  }
  const JobInfo& smallest_job() const override { return small_; }
  const InterferenceModel& model() const override { return model_; }

  int AddJob(int gpus, double mem, double pred, bool profiled = false, double prof = 0) {
    JobInfo j;
    j.num_gpus = gpus;
    j.mem_mib = mem;
    j.predicted_util = pred;
    j.profiled = profiled;
    j.profiled_util = prof;
    jobs_.push_back(j);
    return static_cast<int>(jobs_.size()) - 1;
  }
  JobInfo& Job(int j) { return jobs_[j]; }
  void AddGpu(double mem = 24576) { gpus_.push_back(GpuState{mem, 0, 0, 0, false, {}}); }
  // Makes job j resident on GPU g (as the simulator would).
  void Put(int j, int g, bool exclusive = false) {
    GpuState& s = gpus_[g];
    s.jobs.push_back(j);
    s.mem_used += jobs_[j].mem_mib;
    s.pred_sum += jobs_[j].predicted_util;
    s.known_sum += jobs_[j].profiled ? jobs_[j].profiled_util : 100;
    s.exclusive = exclusive;
  }
  std::vector<int> cand_;
  JobInfo small_{1, 1000, 1, true, 1};

 private:
  InterferenceModel model_;
  std::vector<GpuState> gpus_;
  std::vector<JobInfo> jobs_;
};

std::vector<Placement> Decide(const std::string& name, const ClusterView& v, PolicyOptions o = {}) {
  const PolicyRow* row = FindPolicy(name);
  EXPECT_NE(row, nullptr) << name;
  return row->make(o)->Schedule(v);
}

TEST(Policies, TableHasUniqueNamesAndPaperPolicies) {
  std::set<std::string> names;
  for (const PolicyRow& r : Policies()) EXPECT_TRUE(names.insert(r.name).second) << r.name;
  for (const char* n : {"slot", "profiling", "predictive", "interference-aware"}) EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(FindPolicy("nope"), nullptr);
}

TEST(Slot, OneJobPerGpuAndGangAllOrNothing) {
  FakeView v;
  for (int i = 0; i < 3; ++i) v.AddGpu();
  int a = v.AddJob(1, 1000, 10), b = v.AddJob(1, 1000, 10), c = v.AddJob(2, 1000, 10), d = v.AddJob(1, 1000, 10);
  v.Put(a, 0, true);
  v.cand_ = {b, c, d};
  auto p = Decide("slot", v);
  // b takes GPU 1; c needs 2 empty GPUs, only GPU 2 is left -> skipped; d backfills GPU 2.
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].job, b);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  EXPECT_TRUE(p[0].exclusive);
  EXPECT_EQ(p[1].job, d);
  EXPECT_EQ(p[1].gpus, std::vector<int>{2});
}

TEST(Predictive, CapAndMemoryAndBestFit) {
  FakeView v;
  for (int i = 0; i < 3; ++i) v.AddGpu();
  int r0 = v.AddJob(1, 20000, 30), r1 = v.AddJob(1, 1000, 60);
  v.Put(r0, 0);  // GPU0: 30% predicted, 20000 MiB
  v.Put(r1, 1);  // GPU1: 60% predicted
  int big_mem = v.AddJob(1, 5000, 10);  // fits GPU1 (60+10) by util; GPU0 has no memory left
  int over_cap = v.AddJob(1, 1000, 45); // GPU1: 70+45 > 100; GPU0: 30+45 = 75 fits
  v.cand_ = {big_mem, over_cap};
  auto p = Decide("predictive", v);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});  // fullest GPU that fits (best fit), not empty GPU2
  EXPECT_EQ(p[1].gpus, std::vector<int>{0});
  EXPECT_FALSE(p[0].exclusive);
  PolicyOptions low;
  low.cap = 50;
  auto q = Decide("predictive", v, low);
  // big_mem: 60+10 > 50 on GPU1, no memory on GPU0 -> GPU2. over_cap: 75, 105, 55 all > 50 -> waits.
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].job, big_mem);
  EXPECT_EQ(q[0].gpus, std::vector<int>{2});
}

TEST(ProfilingExclusive, NewJobsRunAloneFirstThenPackByMeasuredUtil) {
  FakeView v;
  for (int i = 0; i < 2; ++i) v.AddGpu();
  int prof = v.AddJob(1, 1000, 90, true, 40);  // profiled at 40%
  int resident = v.AddJob(1, 1000, 0, true, 50);
  v.Put(resident, 0);
  int fresh = v.AddJob(1, 1000, 5);
  v.cand_ = {prof, fresh};
  auto p = Decide("profiling-exclusive", v);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].job, prof);
  EXPECT_EQ(p[0].gpus, std::vector<int>{0});  // 50 + 40 <= 100: joins the resident job
  EXPECT_EQ(p[0].run_alone_s, 0);
  EXPECT_EQ(p[1].job, fresh);
  EXPECT_EQ(p[1].gpus, std::vector<int>{1});  // alone on the empty GPU
  EXPECT_TRUE(p[1].exclusive);
  EXPECT_EQ(p[1].run_alone_s, 70);  // 10 s warm-up + 60 s measured window
}

TEST(InterferenceAware, BoundsEveryJobsPredictedRate) {
  // Model beta 1: 90 + 20 -> both at 1 / (1 + 0.9 * 0.2) = 0.85 >= 0.75;
  // 90 + 90 -> 1 / (1 + 0.81) = 0.55 < 0.75.
  FakeView v;
  for (int i = 0; i < 2; ++i) v.AddGpu();
  int r = v.AddJob(1, 1000, 90);
  v.Put(r, 0);
  int light = v.AddJob(1, 1000, 20);
  int heavy = v.AddJob(1, 1000, 90);
  v.cand_ = {light, heavy};
  // Empty GPUs first: light goes to GPU1, heavy then must share GPU1 with light (0.85 each) -> ok.
  auto p = Decide("interference-aware", v);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  EXPECT_EQ(p[1].gpus, std::vector<int>{1});
  // With GPU1 busy with a 90% job, heavy fits nowhere (rate 0.55 < 0.75).
  FakeView f;
  f.AddGpu();
  f.AddGpu();
  int r0 = f.AddJob(1, 1000, 90), r1 = f.AddJob(1, 1000, 90), h = f.AddJob(1, 1000, 90);
  f.Put(r0, 0);
  f.Put(r1, 1);
  f.cand_ = {h};
  EXPECT_TRUE(Decide("interference-aware", f).empty());
  PolicyOptions loose;
  loose.max_slowdown = 0.5;
  EXPECT_EQ(Decide("interference-aware", f, loose).size(), 1u);
}

TEST(PredictiveFeedback, MigratesOffOverCommittedGpuThenPacksByObservation) {
  FakeView v;
  for (int i = 0; i < 2; ++i) v.AddGpu();
  // GPU 0: two jobs predicted 30 each, observed 70 and 50: 120 > 100.
  int a = v.AddJob(1, 1000, 30), b = v.AddJob(1, 1000, 30);
  v.Job(a).observed = true;
  v.Job(a).observed_util = 70;
  v.Job(b).observed = true;
  v.Job(b).observed_util = 50;
  v.Put(a, 0);
  v.Put(b, 0);
  int big = v.AddJob(1, 1000, 60), small = v.AddJob(1, 1000, 30);
  v.cand_ = {big, small};
  auto p = Decide("predictive-feedback", v);
  // b (50) is the lightest job whose move brings GPU 0 within the cap: to GPU 1.
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].job, b);
  EXPECT_TRUE(p[0].migrate);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  // Then GPU 0 holds 70 and GPU 1 50: big (60) fits nowhere; small (30) best-fits GPU 0.
  EXPECT_EQ(p[1].job, small);
  EXPECT_FALSE(p[1].migrate);
  EXPECT_EQ(p[1].gpus, std::vector<int>{0});
  // Open loop, predictive sees 30 + 30 on GPU 0: big goes to the empty GPU 1,
  // and small is stacked onto the over-committed GPU 0 (tie 60/60, lower id).
  auto q = Decide("predictive", v);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].gpus, std::vector<int>{1});
  EXPECT_EQ(q[1].job, small);
  EXPECT_EQ(q[1].gpus, std::vector<int>{0});
}

TEST(PredictiveFeedback, UnobservedOrMigratedJobsStayAndTheGpuIsClosed) {
  FakeView v;
  for (int i = 0; i < 2; ++i) v.AddGpu();
  int a = v.AddJob(1, 1000, 30), b = v.AddJob(1, 1000, 80);
  v.Job(a).observed = true;
  v.Job(a).observed_util = 90;  // 90 + 80 (b's prediction: not observed yet) > 100
  v.Job(a).migrations = 1;      // already moved once
  v.Put(a, 0);
  v.Put(b, 0);
  int c = v.AddJob(1, 1000, 5);
  v.cand_ = {c};
  auto p = Decide("predictive-feedback", v);
  // No migration (a has used its one, b is unobserved); GPU 0 is over the cap,
  // so the new job goes to the empty GPU 1.
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].job, c);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  // Two migrations allowed: a (90 >= excess 70) moves to GPU 1.
  PolicyOptions two;
  two.max_migrations = 2;
  p = Decide("predictive-feedback", v, two);
  ASSERT_GE(p.size(), 1u);
  EXPECT_EQ(p[0].job, a);
  EXPECT_TRUE(p[0].migrate);
}

TEST(PredictiveFeedback, HysteresisLeavesExcessWithinTheObservationNoise) {
  // Two observed jobs on GPU 0; with sd 5 per observation and z = 2 the
  // margin is 2 x 5 x sqrt(2) = 14.14 points above the cap.
  auto run = [](double u2, double noise) {
    FakeView v;
    for (int i = 0; i < 2; ++i) v.AddGpu();
    int a = v.AddJob(1, 1000, 50), b = v.AddJob(1, 1000, 50);
    v.Job(a).observed = true;
    v.Job(a).observed_util = 60;
    v.Job(b).observed = true;
    v.Job(b).observed_util = u2;
    v.Put(a, 0);
    v.Put(b, 0);
    int c = v.AddJob(1, 1000, 10);
    v.cand_ = {c};
    PolicyOptions o;
    o.observe_noise_pct = noise;
    return Decide("predictive-feedback", v, o);
  };
  // 108 <= 114.14: no move; GPU 0 (over the cap) still takes no new job.
  auto p = run(48, 5);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_FALSE(p[0].migrate);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  // 116 > 114.14: a real excess; the lighter job that fixes it alone (56) moves.
  p = run(56, 5);
  ASSERT_GE(p.size(), 1u);
  EXPECT_TRUE(p[0].migrate);
  // Without an assumed noise, any excess moves a job (108 > 100).
  p = run(48, 0);
  ASSERT_GE(p.size(), 1u);
  EXPECT_TRUE(p[0].migrate);
}

TEST(Policies, NeverJoinExclusiveGpus) {
  FakeView v;
  v.AddGpu();
  int r = v.AddJob(1, 1000, 1);
  v.Put(r, 0, true);
  int j = v.AddJob(1, 1000, 1);
  v.cand_ = {j};
  for (const PolicyRow& row : Policies()) EXPECT_TRUE(Decide(row.name, v).empty()) << row.name;
}

}  // namespace
}  // namespace gpucast::sim
