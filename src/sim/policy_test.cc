#include "sim/policy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/test_util.h"

namespace gpucast::sim {
namespace {

// A literal cluster view.
class FakeView : public ClusterView {
 public:
  FakeView() : model_(InterferenceParams{1.0, 0.0}) {}
  explicit FakeView(InterferenceModel m) : model_(std::move(m)) {}
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
  // Gives job j the 80% interval of a normal of sd `sd` points around its prediction (0: a sure one).
  void GiveSd(int j, double sd) {
    jobs_[j].predicted_low = jobs_[j].predicted_util - sd * kPredictionIntervalZ;
    jobs_[j].predicted_high = jobs_[j].predicted_util + sd * kPredictionIntervalZ;
  }
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

// The capacity term of the RTX 3090 fit (docs/simulator.md, Physics): c 1.2, p 5.66.
InterferenceModel CapacityModel(double c = 1.2, double p = 5.66) {
  InterferenceParams q;
  q.capacity = c;
  q.sharpness = p;
  return InterferenceModel(q);
}

TEST(CapRule, NamesParseBothWaysAndNothingElse) {
  EXPECT_EQ(ParseCapRule("sum"), std::optional<bool>(false));
  EXPECT_EQ(ParseCapRule("capacity"), std::optional<bool>(true));
  for (const char* bad : {"", "Sum", "cap", "capacity "}) EXPECT_FALSE(ParseCapRule(bad).has_value()) << bad;
  EXPECT_STREQ(CapRuleName(false), "sum");
  EXPECT_STREQ(CapRuleName(true), "capacity");
}

TEST(CapRule, TheCapacityCapIsOneHundredTimesTheFittedWorkCapacity) {
  PolicyOptions paper, by_capacity;
  paper.cap = 90;
  by_capacity.cap = 90;  // unused under the capacity rule
  by_capacity.cap_by_capacity = true;
  EXPECT_DOUBLE_EQ(EffectiveCap(paper, CapacityModel()), 90);
  EXPECT_DOUBLE_EQ(EffectiveCap(by_capacity, CapacityModel()), 120);
  EXPECT_DOUBLE_EQ(EffectiveCap(by_capacity, CapacityModel(1.3, 1.83)), 130);
  // Time-slicing (no capacity term): 100, the paper's own cap.
  EXPECT_DOUBLE_EQ(EffectiveCap(by_capacity, InterferenceModel()), 100);
  // The corner: two jobs summing to 100 c = 120 run at share(c) = 2^(-1/p)
  // = 2^(-1/5.66) = 0.88474 each (python3), doing 1.0617 GPUs' work (< c).
  const double u[] = {60, 60};
  double r[2], busy = 0;
  CapacityModel().Rates(u, 2, r, &busy);
  EXPECT_NEAR(r[0], 0.884738, 1e-5);
  EXPECT_NEAR(r[1], 0.884738, 1e-5);
  EXPECT_NEAR((r[0] * u[0] + r[1] * u[1]) / 100, 1.061685, 1e-5);
}

TEST(CapRule, PredictiveAndFeedbackPackToTheCapacityCapUnderTheCapacityRule) {
  FakeView v(CapacityModel());
  for (int i = 0; i < 2; ++i) v.AddGpu();
  int r = v.AddJob(1, 1000, 70);
  v.Put(r, 0);
  int a = v.AddJob(1, 1000, 45), b = v.AddJob(1, 1000, 55);
  v.cand_ = {a, b};
  PolicyOptions cap_rule;
  cap_rule.cap_by_capacity = true;
  // Capacity rule: a joins GPU 0 (70 + 45 = 115 <= 120); b (70 + 45 + 55, or
  // 55 on the empty GPU 1) takes GPU 1.
  auto p = Decide("predictive", v, cap_rule);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].job, a);
  EXPECT_EQ(p[0].gpus, std::vector<int>{0});
  EXPECT_EQ(p[1].job, b);
  EXPECT_EQ(p[1].gpus, std::vector<int>{1});
  // The paper's rule: 115 > 100, so a takes the empty GPU 1; b (125, 100) joins
  // GPU 1 at exactly 100.
  auto q = Decide("predictive", v);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].gpus, std::vector<int>{1});
  EXPECT_EQ(q[1].job, b);
  EXPECT_EQ(q[1].gpus, std::vector<int>{1});
  // predictive-feedback's correction uses the same cap: observed 70 + 45 = 115
  // on GPU 0 is over the paper's cap (a migration) but within the capacity cap.
  FakeView w(CapacityModel());
  for (int i = 0; i < 2; ++i) w.AddGpu();
  int x = w.AddJob(1, 1000, 70), y = w.AddJob(1, 1000, 45);
  for (int j : {x, y}) {
    w.Job(j).observed = true;
    w.Job(j).observed_util = w.Job(j).predicted_util;
    w.Put(j, 0);
  }
  PolicyOptions fb_paper, fb_capacity;
  fb_paper.migrate_z = fb_capacity.migrate_z = 0;
  fb_capacity.cap_by_capacity = true;
  auto m = Decide("predictive-feedback", w, fb_paper);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(m[0].migrate);
  EXPECT_EQ(m[0].job, y);  // the lightest job that brings GPU 0 within 100
  EXPECT_TRUE(Decide("predictive-feedback", w, fb_capacity).empty());
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

TEST(InterferenceAware, UnderTimeSlicingTheLeastLoadedGpuWhereEveryRateStaysAboveTheFloor) {
  // Time-slicing (rates depend on the summed utilization only):
  // GPU 0 holds 60, GPU 1 holds 40. A 30% newcomer keeps rate 1 on both
  // (90, 70 <= 100): a tie, the lower id, GPU 0. An 80% one: 100 / 140 = 0.71 <
  // 0.75 on GPU 0, 100 / 120 = 0.83 on GPU 1: only GPU 1; 100% fits nowhere
  // (0.71 on GPU 1).
  FakeView v{InterferenceModel()};
  for (int i = 0; i < 2; ++i) v.AddGpu();
  int a = v.AddJob(1, 1000, 60), b = v.AddJob(1, 1000, 40);
  v.Put(a, 0);
  v.Put(b, 1);
  for (auto [u, want] : std::vector<std::pair<double, int>>{{30, 0}, {80, 1}, {100, -1}}) {
    FakeView w = v;
    int j = w.AddJob(1, 1000, u);
    w.cand_ = {j};
    auto p = Decide("interference-aware", w);
    if (want < 0) {
      EXPECT_TRUE(p.empty()) << u;
    } else {
      ASSERT_EQ(p.size(), 1u) << u;
      EXPECT_EQ(p[0].gpus, std::vector<int>{want}) << u;
    }
  }
}

TEST(ProfilingInterferenceAware, MeasuresFirstThenAdmitsByThePhysicsOfTheMeasurements) {
  // Model beta 1. An unmeasured job runs alone first (exclusive, a profiling run).
  FakeView v;
  for (int i = 0; i < 2; ++i) v.AddGpu();
  int r = v.AddJob(1, 1000, NAN, true, 90);
  v.Put(r, 0);
  int fresh = v.AddJob(1, 1000, NAN);
  v.cand_ = {fresh};
  auto p = Decide("profiling-interference-aware", v);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(p[0].exclusive);
  EXPECT_GT(p[0].run_alone_s, 0.0);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  // Measured: 20 joins the 90% job (both at 0.85 >= 0.75) rather than take an
  // empty GPU (best fit: empty GPUs stay free for profiling runs); a measured
  // 90 joins nothing (0.55) and takes the empty GPU.
  FakeView f;
  f.AddGpu();
  f.AddGpu();
  int r0 = f.AddJob(1, 1000, NAN, true, 90);
  f.Put(r0, 0);
  int light = f.AddJob(1, 1000, NAN, true, 20), heavy = f.AddJob(1, 1000, NAN, true, 90);
  f.cand_ = {light, heavy};
  p = Decide("profiling-interference-aware", f);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].job, light);
  EXPECT_EQ(p[0].gpus, std::vector<int>{0});
  EXPECT_FALSE(p[0].exclusive);
  EXPECT_EQ(p[1].job, heavy);
  EXPECT_EQ(p[1].gpus, std::vector<int>{1});
  // interference-aware (spread) would send light to the empty GPU.
  FakeView g;
  g.AddGpu();
  g.AddGpu();
  int q = g.AddJob(1, 1000, 90);
  g.Put(q, 0);
  int lp = g.AddJob(1, 1000, 20);
  g.cand_ = {lp};
  p = Decide("interference-aware", g);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});
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
  // and small is stacked onto the over-committed GPU 0 (tie 60/60, lower id),
  // a third job there when co-location is not limited to the measured pairs.
  PolicyOptions unlimited;
  unlimited.max_jobs_per_gpu = 0;
  auto q = Decide("predictive", v, unlimited);
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

TEST(PredictiveFeedback, HysteresisLeavesExcessWithinTheEstimatesUncertainty) {
  // Two observed jobs on GPU 0; with estimates of sd 5 each and z = 2 the
  // margin is 2 x sqrt(5^2 + 5^2) = 14.14 points above the cap.
  auto run = [](double u2, double sd) {
    FakeView v;
    for (int i = 0; i < 2; ++i) v.AddGpu();
    int a = v.AddJob(1, 1000, 50), b = v.AddJob(1, 1000, 50);
    v.Job(a).observed = true;
    v.Job(a).observed_util = 60;
    v.Job(a).observed_sd = sd;
    v.Job(b).observed = true;
    v.Job(b).observed_util = u2;
    v.Job(b).observed_sd = sd;
    v.Put(a, 0);
    v.Put(b, 0);
    int c = v.AddJob(1, 1000, 10);
    v.cand_ = {c};
    return Decide("predictive-feedback", v);
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
  // Exact estimates (sd 0, as oracle predictions give): any excess moves a job (108 > 100).
  p = run(48, 0);
  ASSERT_GE(p.size(), 1u);
  EXPECT_TRUE(p[0].migrate);
}

TEST(Slot, PacksRequestedSharesUpToOneGpu) {
  FakeView v;
  for (int i = 0; i < 2; ++i) v.AddGpu();
  int r = v.AddJob(1, 1000, 10);
  v.Job(r).gpu_request = 0.3;
  v.Put(r, 0);
  int a = v.AddJob(1, 1000, 10), b = v.AddJob(1, 1000, 10), c = v.AddJob(1, 1000, 10);
  v.Job(a).gpu_request = 0.5;  // 0.3 + 0.5 <= 1: joins GPU 0 (best fit)
  v.Job(b).gpu_request = 0.4;  // 0.8 + 0.4 > 1: the empty GPU 1
  v.Job(c).gpu_request = 1;    // a whole GPU: none is empty any more
  v.small_.gpu_request = 0.3;
  v.cand_ = {a, b, c};
  auto p = Decide("slot", v);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{0});
  EXPECT_FALSE(p[0].exclusive);
  EXPECT_EQ(p[1].gpus, std::vector<int>{1});
  // A whole-GPU request runs alone, exclusively.
  FakeView w;
  w.AddGpu();
  int d = w.AddJob(1, 1000, 10);
  w.cand_ = {d};
  auto q = Decide("slot", w);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_TRUE(q[0].exclusive);
}

TEST(ProfilingInPlace, ANewcomerStartsAloneOnAnEmptyGpuNeverOnAnOccupiedOne) {
  FakeView v;
  for (int i = 0; i < 2; ++i) v.AddGpu();
  // GPU 0: one measured job at 10 (room for 90 more); GPU 1: empty.
  int a = v.AddJob(1, 1000, 0, true, 10);
  v.Put(a, 0);
  int n1 = v.AddJob(1, 1000, 5), n2 = v.AddJob(1, 1000, 5);
  v.cand_ = {n1, n2};
  auto p = Decide("profiling", v);
  // n1 takes the empty GPU alone, for the warm-up and window (10 + 60 s), and
  // keeps it; n2 (unknown, predicted light) does not join GPU 0: it waits.
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].job, n1);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  EXPECT_TRUE(p[0].exclusive);
  EXPECT_TRUE(p[0].profile_in_place);
  EXPECT_FALSE(p[0].migrate);
  EXPECT_EQ(p[0].run_alone_s, 70);
  // A gang newcomer needs all of its GPUs empty.
  FakeView w;
  for (int i = 0; i < 3; ++i) w.AddGpu();
  int b = w.AddJob(1, 1000, 0, true, 10);
  w.Put(b, 0);
  int g = w.AddJob(3, 1000, 5);
  w.cand_ = {g};
  EXPECT_TRUE(Decide("profiling", w).empty());
}

TEST(ProfilingInPlace, AMeasuredNewcomerJoinsTheFullestGpuWhereItFitsElseStays) {
  // GPU 0: measured 50; GPU 1: measured 30; GPU 2: newcomer n, its window just
  // ended alone (measured `u`); GPU 3: empty.
  auto setup = [](FakeView& v, double u, bool newly) {
    for (int i = 0; i < 4; ++i) v.AddGpu();
    int a = v.AddJob(1, 1000, 0, true, 50), b = v.AddJob(1, 1000, 0, true, 30), n = v.AddJob(1, 1000, 0, true, u);
    v.Job(n).newly_measured = newly;
    v.Put(a, 0);
    v.Put(b, 1);
    v.Put(n, 2);
    return n;
  };
  {
    // Light (40): GPU 0 (50 + 40 = 90) is the fullest that fits; GPU 1 would
    // too (70), the empty GPU 3 is no move at all. Its GPU 2 is free for a
    // queued newcomer in the same round.
    FakeView v;
    int n = setup(v, 40, true);
    int c = v.AddJob(1, 1000, 5);
    v.cand_ = {c};
    auto p = Decide("profiling", v);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].job, n);
    EXPECT_TRUE(p[0].migrate);
    EXPECT_EQ(p[0].gpus, std::vector<int>{0});
    EXPECT_EQ(p[1].job, c);
    EXPECT_EQ(p[1].gpus, std::vector<int>{2});  // the lowest free GPU: the one n left
    EXPECT_TRUE(p[1].exclusive);
  }
  {
    // Light (60): only GPU 1 fits (90); GPU 0 would hold 110.
    FakeView v;
    int n = setup(v, 60, true);
    auto p = Decide("profiling", v);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].job, n);
    EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  }
  {
    // Memory decides as well: GPU 1 has no room for it (24576 MiB, 24000 used).
    FakeView v;
    for (int i = 0; i < 3; ++i) v.AddGpu();
    int a = v.AddJob(1, 24000, 0, true, 30), n = v.AddJob(1, 1000, 0, true, 60);
    v.Job(n).newly_measured = true;
    v.Put(a, 1);
    v.Put(n, 2);
    EXPECT_TRUE(Decide("profiling", v).empty());
  }
  {
    // Heavy (80): fits nowhere occupied (130, 110): it stays.
    FakeView v;
    setup(v, 80, true);
    EXPECT_TRUE(Decide("profiling", v).empty());
  }
  {
    // Measured earlier (not newly measured): it never moves, though it would fit.
    FakeView v;
    setup(v, 40, false);
    EXPECT_TRUE(Decide("profiling", v).empty());
  }
  {
    // Two newcomers measured in the same round (40 each), nothing else: the
    // first (submit order) joins the second, which then stays with it.
    FakeView v;
    for (int i = 0; i < 2; ++i) v.AddGpu();
    int a = v.AddJob(1, 1000, 0, true, 40), b = v.AddJob(1, 1000, 0, true, 40);
    v.Job(a).newly_measured = v.Job(b).newly_measured = true;
    v.Put(a, 0);
    v.Put(b, 1);
    auto p = Decide("profiling", v);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].job, a);
    EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  }
}

TEST(ProfilingInPlace, AGangNewcomerMovesWithAllItsGpusOrStays) {
  // GPUs 0, 1, 2: measured 50, 60, 80; GPUs 3 and 4: a 2-GPU newcomer measured 30.
  auto setup = [](FakeView& v, double third) {
    for (int i = 0; i < 5; ++i) v.AddGpu();
    const double loads[] = {50, 60, third};
    for (int g = 0; g < 3; ++g) v.Put(v.AddJob(1, 1000, 0, true, loads[g]), g);
    int n = v.AddJob(2, 1000, 0, true, 30);
    v.Job(n).newly_measured = true;
    v.Put(n, 3);
    v.Put(n, 4);
    return n;
  };
  FakeView v;
  int n = setup(v, 80);
  auto p = Decide("profiling", v);
  // 80 + 30 > 100: the fullest two that fit are GPUs 1 (60) and 0 (50).
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].job, n);
  EXPECT_EQ(p[0].gpus, (std::vector<int>{1, 0}));
  // With GPU 0 at 75 only one occupied GPU fits: the gang stays whole.
  FakeView w;
  for (int i = 0; i < 5; ++i) w.AddGpu();
  const double loads[] = {75, 60, 80};
  for (int g = 0; g < 3; ++g) w.Put(w.AddJob(1, 1000, 0, true, loads[g]), g);
  int m = w.AddJob(2, 1000, 0, true, 30);
  w.Job(m).newly_measured = true;
  w.Put(m, 3);
  w.Put(m, 4);
  EXPECT_TRUE(Decide("profiling", w).empty());
}

TEST(ProfilingPool, ProfilesOnOnePoolGpuThenPacksTheOthers) {
  FakeView v;
  for (int i = 0; i < 20; ++i) v.AddGpu();  // pool: round(0.05 x 20) = GPU 0
  int fresh = v.AddJob(4, 1000, 50), fresh2 = v.AddJob(1, 1000, 50), done = v.AddJob(1, 1000, 0, true, 30);
  v.cand_ = {fresh, fresh2, done};
  auto p = Decide("profiling-pool", v);
  // fresh (a 4-GPU job) samples one pool GPU; fresh2 waits for the pool; the
  // profiled job goes to the first non-pool GPU.
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].job, fresh);
  EXPECT_EQ(p[0].gpus, std::vector<int>{0});
  EXPECT_TRUE(p[0].profile_discard);
  EXPECT_TRUE(p[0].exclusive);
  EXPECT_EQ(p[1].job, done);
  EXPECT_EQ(p[1].gpus, std::vector<int>{1});
  EXPECT_EQ(ProfilePoolSize(256, 0.05), 13);
  EXPECT_EQ(ProfilePoolSize(20, 0.05), 1);
  EXPECT_EQ(ProfilePoolSize(2, 0.5), 1);
  EXPECT_EQ(ProfilePoolSize(1, 0.05), 0);
}

TEST(Policies, AJobThatRanOutOfMemoryRunsAlone) {
  FakeView v;
  for (int i = 0; i < 2; ++i) v.AddGpu();
  int r = v.AddJob(1, 1000, 10);
  v.Put(r, 0);
  int j = v.AddJob(1, 1000, 10);
  v.Job(j).alone = true;
  v.cand_ = {j};
  for (const char* name : {"predictive", "interference-aware", "predictive-feedback"}) {
    auto p = Decide(name, v);
    ASSERT_EQ(p.size(), 1u) << name;
    EXPECT_EQ(p[0].gpus, std::vector<int>{1}) << name;
    EXPECT_TRUE(p[0].exclusive) << name;
  }
}

TEST(PredictiveFeedback, MovesAGangJobWithAllItsGpus) {
  FakeView v;
  for (int i = 0; i < 4; ++i) v.AddGpu();
  int a = v.AddJob(1, 1000, 10), g = v.AddJob(2, 1000, 30);
  v.Job(a).observed = true;
  v.Job(a).observed_util = 80;
  v.Job(g).observed = true;
  v.Job(g).observed_util = 40;  // 120 on GPU 0: the gang job (lightest that fixes it) moves
  v.Put(a, 0);
  v.Put(g, 0);
  v.Put(g, 1);
  auto p = Decide("predictive-feedback", v);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].job, g);
  EXPECT_TRUE(p[0].migrate);
  EXPECT_EQ(p[0].gpus, (std::vector<int>{2, 3}));  // not its own GPUs 0 and 1
}

TEST(Estimator, PredictionBeliefReadsTheIntervalAsANormalOne) {
  // An 80% interval of half-width 12.8155 is sd 10; a zero-width one is sure;
  // none (NaN) is a uniform prior's sd, 100 / sqrt(12).
  EXPECT_NEAR(PredictionBelief(50, 50 - 12.815515655446004, 50 + 12.815515655446004).sd, 10.0, 1e-9);
  EXPECT_DOUBLE_EQ(PredictionBelief(42, 42, 42).sd, 0.0);
  EXPECT_NEAR(PredictionBelief(42, NAN, NAN).sd, 28.8675, 1e-4);
  EXPECT_DOUBLE_EQ(PredictionBelief(42, NAN, NAN).mean, 42.0);
}

// The estimator's mixture by hand: the normal part's posterior (mean m, var v)
// with weight w, the uniform part's (the observation) with 1 - w.
UtilBelief Mixture(double pm, double psd, double u_obs, double var_obs) {
  const double wp = 1 / (psd * psd), wo = 1 / var_obs;
  const double m = (pm * wp + u_obs * wo) / (wp + wo), v = 1 / (wp + wo);
  const double vm = psd * psd + var_obs, d = u_obs - pm;
  const double ln = 0.8 * std::exp(-0.5 * d * d / vm) / std::sqrt(2 * M_PI * vm), lu = 0.2 / 100;
  const double w = ln / (ln + lu);
  const double mean = w * m + (1 - w) * u_obs;
  return {mean, std::sqrt(w * (v + m * m) + (1 - w) * (var_obs + u_obs * u_obs) - mean * mean)};
}

TEST(Estimator, CombinesPredictionAndObservationByTheirVariances) {
  // Alone (rate 1 seen exactly): the observation 60 (sd 5) against a prediction
  // 70 of sd 10: the normal part gives (60 x 4 + 70) / 5 = 62, sd sqrt(20);
  // the observation is 0.89 sd from the prediction (marginal sd sqrt(125)), so
  // the prediction keeps most of its 80% weight.
  UtilBelief b = CombineObservation({70, 10}, 60, 5, 1.0, 0.0);
  UtilBelief want = Mixture(70, 10, 60, 25);
  EXPECT_NEAR(b.mean, want.mean, 1e-9);
  EXPECT_NEAR(b.sd, want.sd, 1e-9);
  EXPECT_GT(b.mean, 61.5);
  EXPECT_LT(b.mean, 62.0);
  // Far outside the interval (a prediction of 90 +- 9, as PointNet's, for a
  // job that reads 8 alone): the prediction is discredited, the observation stays.
  b = CombineObservation({90, 9}, 8, 5, 1.0, 0.0);
  EXPECT_NEAR(b.mean, 8.0, 1e-6);
  EXPECT_NEAR(b.sd, 5.0, 1e-6);
  // A sure prediction (oracle: sd 0) is kept whatever the counter says.
  b = CombineObservation({30, 0}, 80, 5, 1.0, 0.05);
  EXPECT_DOUBLE_EQ(b.mean, 30.0);
  EXPECT_DOUBLE_EQ(b.sd, 0.0);
  // Shared at rate 0.5: the reading 40 stands for 80 and its sd grows to
  // sqrt((5 / 0.5)^2 + (80 x 0.05)^2) = sqrt(116): it weighs less than alone.
  b = CombineObservation({50, 28.8675134594813}, 40, 5, 0.5, 0.05);
  want = Mixture(50, 28.8675134594813, 80, 116);
  EXPECT_NEAR(b.mean, want.mean, 1e-9);
  EXPECT_GT(b.sd, CombineObservation({50, 28.8675134594813}, 80, 5, 1.0, 0.05).sd);
  // The estimate stays a utilization.
  EXPECT_DOUBLE_EQ(CombineObservation({99, 50}, 100, 5, 0.3, 0.0).mean, 100.0);
}

TEST(Estimator, GangMarginIsTheQuantileThatKeepsTheWholeGangsChance) {
  EXPECT_DOUBLE_EQ(GangMarginZ(1), 0.0);
  EXPECT_NEAR(GangMarginZ(2), 0.6744897502, 1e-8);  // Phi^-1(0.75)
  EXPECT_NEAR(GangMarginZ(4), 1.1503493804, 1e-8);  // Phi^-1(0.875)
  EXPECT_NEAR(GangMarginZ(8), 1.5341205443, 1e-8);  // Phi^-1(0.9375)
}

TEST(PredictiveFeedback, AGangJobKeepsAMarginOnEachGpuAOneGpuJobDoesNot) {
  // GPUs 0 and 1 hold a 50% job each (exact); a newcomer predicted 45 with an
  // interval of sd 10 fits by its point (95 <= 100).
  FakeView v;
  for (int i = 0; i < 2; ++i) v.AddGpu();
  int r0 = v.AddJob(1, 1000, 50), r1 = v.AddJob(1, 1000, 50);
  for (int r : {r0, r1}) v.GiveSd(r, 0);
  v.Put(r0, 0);
  v.Put(r1, 1);
  int one = v.AddJob(1, 1000, 45), gang = v.AddJob(2, 1000, 45);
  for (int j : {one, gang}) v.GiveSd(j, 10);
  v.cand_ = {one};
  auto p = Decide("predictive-feedback", v);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{0});
  // The 2-GPU job needs 95 + 0.674 x 10 = 101.7 <= 100 on both: it waits.
  v.cand_ = {gang};
  EXPECT_TRUE(Decide("predictive-feedback", v).empty());
  // predictive (no margins) places it on both.
  p = Decide("predictive", v);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpus, (std::vector<int>{0, 1}));
}

// predictive --interval-z: a job joins an occupied GPU only when the sum of
// predictions plus z x the root of the summed variances (each sd the one its
// interval states) stays within the cap; a zero-width interval (oracle) packs
// as the point, no interval at all (a constant) as the uninformed sd 28.9.
TEST(Predictive, IntervalZPacksByABoundOnTheGpusSum) {
  FakeView v;
  for (int i = 0; i < 2; ++i) v.AddGpu();
  int r0 = v.AddJob(1, 1000, 40);
  v.GiveSd(r0, 10);
  v.Put(r0, 0);
  int n = v.AddJob(1, 1000, 45);
  v.GiveSd(n, 10);
  v.cand_ = {n};
  // The point: 85 <= 100, best fit joins GPU 0 (the default, z 0).
  auto p = Decide("predictive", v);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{0});
  // z 1: 85 + sqrt(200) = 99.1 <= 100 joins; z 1.1: 100.6 > 100: the empty GPU 1.
  PolicyOptions o;
  o.interval_z = 1.0;
  p = Decide("predictive", v, o);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{0});
  o.interval_z = 1.1;
  p = Decide("predictive", v, o);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  // Sure predictions (zero-width intervals) pack by the point whatever z.
  for (int j : {r0, n}) v.GiveSd(j, 0);
  o.interval_z = 3;
  p = Decide("predictive", v, o);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{0});
  // No interval (NaN, a constant predictor): sd 28.87 each; 85 + 1.1 x 40.8 > 100.
  for (int j : {r0, n}) v.Job(j).predicted_low = v.Job(j).predicted_high = NAN;
  o.interval_z = 1.1;
  p = Decide("predictive", v, o);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{1});
  // Two newcomers of sd 10 in one round: the second joins the first's GPU only
  // if the bound of both allows (20 + 20 + 1.1 x 14.1 = 55.6 <= 100: yes).
  FakeView w;
  w.AddGpu();
  int a = w.AddJob(1, 1000, 20), b = w.AddJob(1, 1000, 20);
  for (int j : {a, b}) w.GiveSd(j, 10);
  w.cand_ = {a, b};
  p = Decide("predictive", w, o);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].gpus, std::vector<int>{0});
  o.interval_z = 5;  // 40 + 70.7 > 100: the second waits
  EXPECT_EQ(Decide("predictive", w, o).size(), 1u);
}

// predictive --admit-by-physics: interference-aware's admission (every rate
// on the GPU >= 1 - max_slowdown by the fitted physics, fed predictions), with
// predictive's best fit (the fullest admitting GPU first, empty GPUs last).
TEST(Predictive, AdmitByPhysicsAdmitsByTheRatesAndPacksBestFit) {
  const InterferenceModel m = CapacityModel();
  FakeView v(m);
  for (int i = 0; i < 4; ++i) v.AddGpu();
  int r0 = v.AddJob(1, 1000, 70), r1 = v.AddJob(1, 1000, 45), r2 = v.AddJob(1, 1000, 20);
  v.Put(r0, 0);
  v.Put(r1, 1);
  v.Put(r2, 2);
  int n = v.AddJob(1, 1000, 60);
  v.cand_ = {n};
  // The reference: the model's own rates for each occupied GPU.
  const double floor = 0.75;
  std::vector<double> u0{70}, u1{45}, u2{20};
  const bool ok0 = m.MinRate(u0.data(), 1, 60) >= floor, ok1 = m.MinRate(u1.data(), 1, 60) >= floor,
             ok2 = m.MinRate(u2.data(), 1, 60) >= floor;
  ASSERT_TRUE(ok2);  // 80 in all: well within the capacity
  const int want = ok0 ? 0 : ok1 ? 1 : 2;
  PolicyOptions o;
  o.admit_by_physics = true;
  auto p = Decide("predictive", v, o);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{want});
  // The cap (sum <= 100) admits only GPU 2 (80); 105 on GPU 1 is refused.
  p = Decide("predictive", v);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].gpus, std::vector<int>{2});
  // Under the physics GPU 1 (45 + 60 = 105) admits on this fit: it packs past the cap.
  EXPECT_TRUE(ok1);
  // The flag is predictive's only: interference-aware and predictive-spread decide as without it.
  for (const char* other : {"interference-aware", "predictive-spread"}) {
    auto a = Decide(other, v, o), b = Decide(other, v);
    ASSERT_EQ(a.size(), b.size()) << other;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].gpus, b[i].gpus) << other;
  }
}

TEST(PredictiveHybrid, PlacesAConfidentJobAtOnceAndMeasuresAnUnsureOneInPlace) {
  FakeView v;
  for (int i = 0; i < 3; ++i) v.AddGpu();
  int r = v.AddJob(1, 1000, 40);
  v.GiveSd(r, 0);
  v.Put(r, 0);
  // sure: sd 5 (<= 10); unsure: sd 20; none: no interval at all.
  int sure = v.AddJob(1, 1000, 30), unsure = v.AddJob(1, 1000, 30), none = v.AddJob(1, 1000, 30);
  v.GiveSd(sure, 5);
  v.GiveSd(unsure, 20);
  v.cand_ = {sure, unsure, none};
  auto p = Decide("predictive-hybrid", v);
  ASSERT_EQ(p.size(), 3u);
  // The confident job joins the occupied GPU 0 at once (best fit), a shared run.
  EXPECT_EQ(p[0].job, sure);
  EXPECT_EQ(p[0].gpus, std::vector<int>{0});
  EXPECT_FALSE(p[0].exclusive);
  EXPECT_EQ(p[0].run_alone_s, 0.0);
  // The unsure ones start alone on the empty GPUs, measured in place.
  for (int i : {1, 2}) {
    EXPECT_TRUE(p[i].exclusive);
    EXPECT_TRUE(p[i].profile_in_place);
    EXPECT_GT(p[i].run_alone_s, 0.0);
  }
  EXPECT_EQ(p[1].gpus, std::vector<int>{1});
  EXPECT_EQ(p[2].gpus, std::vector<int>{2});
  // A tighter threshold measures the sure one too.
  PolicyOptions strict;
  strict.confident_sd = 4;
  v.cand_ = {sure};
  p = Decide("predictive-hybrid", v, strict);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(p[0].profile_in_place);
}

// --max-jobs-per-gpu: every policy (every row of the table) co-locates at
// most max_jobs_per_gpu jobs on a GPU. A GPU running two light measured jobs
// (10% each, little memory) takes a third light one only without the limit;
// by default (the measured degree, pairs) it stays queued.
TEST(MaxJobsPerGpu, NoPolicyPutsAThirdLightJobOnAGpuUnderTheMeasuredDegree) {
  EXPECT_EQ(PolicyOptions{}.max_jobs_per_gpu, kMeasuredJobsPerGpu);
  for (const PolicyRow& row : Policies()) {
    for (int limit : {0, 2, 3}) {
      FakeView v;
      v.AddGpu();
      v.small_.gpu_request = 0.1;
      auto light = [&] {
        int j = v.AddJob(1, 1000, 10, true, 10);
        v.Job(j).gpu_request = 0.1;  // slot: a tenth of a GPU requested
        return j;
      };
      int a = light(), b = light(), c = light();
      v.Put(a, 0);
      v.Put(b, 0);
      v.cand_ = {c};
      PolicyOptions o;
      o.max_jobs_per_gpu = limit;
      auto p = Decide(row.name, v, o);
      if (limit == 2) {
        EXPECT_TRUE(p.empty()) << row.name << ": a third job joined under the limit 2";
      } else {
        ASSERT_EQ(p.size(), 1u) << row.name << " limit " << limit;
        EXPECT_EQ(p[0].job, c) << row.name;
        EXPECT_EQ(p[0].gpus, std::vector<int>{0}) << row.name;
      }
    }
  }
}

// The limit counts this round's placements too: three light jobs queued at
// once onto two empty GPUs make two on one GPU and one on the other under the
// limit 2 (packing policies), all three on GPU 0 without it.
TEST(MaxJobsPerGpu, ThreeLightJobsQueuedTogetherNeverShareOneGpu) {
  for (int limit : {0, 2}) {
    FakeView v;
    v.AddGpu();
    v.AddGpu();
    int a = v.AddJob(1, 1000, 10), b = v.AddJob(1, 1000, 10), c = v.AddJob(1, 1000, 10);
    v.cand_ = {a, b, c};
    PolicyOptions o;
    o.max_jobs_per_gpu = limit;
    auto p = Decide("predictive", v, o);
    ASSERT_EQ(p.size(), 3u) << limit;
    std::vector<int> on(2, 0);
    for (const Placement& x : p) ++on[x.gpus.at(0)];
    EXPECT_EQ(on, limit == 2 ? std::vector<int>({2, 1}) : std::vector<int>({3, 0})) << limit;
  }
}

// Migrations respect it too: predictive-feedback moves a job off an
// over-committed GPU only to a GPU below the limit.
TEST(MaxJobsPerGpu, FeedbackNeverMigratesOntoAFullGpu) {
  for (int limit : {0, 2}) {
    FakeView v;
    for (int g = 0; g < 2; ++g) v.AddGpu();
    auto observed = [&](double u) {
      int j = v.AddJob(1, 1000, 40);
      v.Job(j).observed = true;
      v.Job(j).observed_util = u;
      v.Job(j).observed_sd = 0;
      return j;
    };
    int h1 = observed(80), h2 = observed(70), l1 = observed(10), l2 = observed(10);
    v.Put(h1, 0);
    v.Put(h2, 0);  // 150 > 100: over-committed
    v.Put(l1, 1);
    v.Put(l2, 1);  // 20: room by utilization, but two jobs already
    PolicyOptions o;
    o.max_jobs_per_gpu = limit;
    auto p = Decide("predictive-feedback", v, o);
    int moves = 0;
    for (const Placement& x : p) moves += x.migrate;
    EXPECT_EQ(moves, limit == 2 ? 0 : 1) << limit;
    if (limit == 0) {
      ASSERT_FALSE(p.empty());
      EXPECT_EQ(p[0].gpus, std::vector<int>{1});
    }
  }
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
