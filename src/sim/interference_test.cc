#include "sim/interference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "sim/test_util.h"
#include "util/paths.h"

namespace gpucast::sim {
namespace {

using testing::W;

std::vector<double> RatesOf(const InterferenceModel& m, std::vector<double> u, double* busy) {
  std::vector<double> r(u.size());
  m.Rates(u.data(), static_cast<int>(u.size()), r.data(), busy);
  return r;
}

TEST(Interference, HandComputedCases) {
  double busy;
  // beta 1, no switching cost. 90% + 20%: r0 = 1 / (1 + 0.9 * 0.2) for both;
  // load 1.1 / 1.18 < 1, so no capping.
  InterferenceModel m({1.0, 0.0});
  auto r = RatesOf(m, {90, 20}, &busy);
  EXPECT_NEAR(r[0], 1 / 1.18, 1e-12);
  EXPECT_NEAR(r[1], 1 / 1.18, 1e-12);
  EXPECT_NEAR(busy, 100 * 1.1 / 1.18, 1e-9);
  // Three 100% jobs: r0 = 1/3 each and the device is exactly full.
  r = RatesOf(m, {100, 100, 100}, &busy);
  for (double x : r) EXPECT_NEAR(x, 1.0 / 3, 1e-12);
  EXPECT_NEAR(busy, 100, 1e-9);
  // A weak contention term (beta 0.25): r0 = 1 / 1.5 each, load 3 / 1.5 = 2 > 1,
  // so the capacity cap scales them to 1/3: time slicing.
  r = RatesOf(InterferenceModel({0.25, 0.0}), {100, 100, 100}, &busy);
  for (double x : r) EXPECT_NEAR(x, 1.0 / 3, 1e-12);
  // A switching cost s = 0.1: each job's kernels take 1.1x as long, n saturating
  // jobs get 1 / (n * 1.1).
  r = RatesOf(InterferenceModel({0.25, 0.1}), {100, 100}, &busy);
  for (double x : r) EXPECT_NEAR(x, 1.0 / 2.2, 1e-12);
  EXPECT_NEAR(busy, 100, 1e-9);
  // Occupancy k = 3: a 50% job occupies 3 * 0.5 / (0.5 + 1.5) = 0.75 of the
  // device; two of them: load 1.5, each 1 / 1.5. A 25% job occupies 0.5: two
  // of them exactly fill the device at rate 1.
  InterferenceModel occ({0.0, 0.0, 3.0});
  r = RatesOf(occ, {50, 50}, &busy);
  EXPECT_NEAR(r[0], 1 / 1.5, 1e-12);
  EXPECT_NEAR(busy, 100, 1e-9);
  r = RatesOf(occ, {25, 25}, &busy);
  EXPECT_NEAR(r[0], 1.0, 1e-12);
  EXPECT_NEAR(busy, 100, 1e-9);
  // Alone: rate 1, device busy = its utilization; nobody: busy 0.
  r = RatesOf(m, {37}, &busy);
  EXPECT_EQ(r[0], 1.0);
  EXPECT_EQ(busy, 37);
  m.Rates(nullptr, 0, nullptr, &busy);
  EXPECT_EQ(busy, 0);
  // The default model is the time-slicing bound min(1, 100 / sum u): light jobs
  // keep rate 1 exactly, 60 + 90 share 100 / 150 each.
  r = RatesOf(InterferenceModel(), {10, 20, 30}, &busy);
  for (double x : r) EXPECT_EQ(x, 1.0);
  EXPECT_NEAR(busy, 60, 1e-9);
  r = RatesOf(InterferenceModel(), {60, 90}, &busy);
  EXPECT_NEAR(r[0], 100.0 / 150, 1e-12);
  EXPECT_NEAR(r[1], 100.0 / 150, 1e-12);
  // A NaN or negative utilization counts as an idle job, never NaN rates.
  r = RatesOf(InterferenceModel(), {std::nan(""), -5, 100}, &busy);
  for (double x : r) EXPECT_EQ(x, 1.0);
  EXPECT_EQ(busy, 100);
}

TEST(Interference, PhysicalForRandomInputs) {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> U(0, 100), B(0, 5), S(0, 0.5), LK(0, 10);
  std::uniform_int_distribution<int> K(1, 12);
  std::uniform_real_distribution<double> C(1, 1.6), LP(0, 6), Cap(0.05, 1);
  for (int trial = 0; trial < 20000; ++trial) {
    InterferenceParams prm{B(rng), S(rng), trial % 2 ? std::exp2(LK(rng)) : 1.0};
    if (trial % 3 == 0) {  // the capacity term
      prm.capacity = C(rng);
      prm.sharpness = std::exp2(LP(rng));
    }
    InterferenceModel m(prm);
    const double cap = m.WorkCapacity();
    int k = K(rng);
    std::vector<double> u(static_cast<size_t>(k));
    for (double& x : u) x = U(rng);
    double busy;
    auto r = RatesOf(m, u, &busy);
    double sum = 0;
    for (int i = 0; i < k; ++i) {
      EXPECT_GT(r[i], 0.0);
      EXPECT_LE(r[i], 1.0);
      sum += r[i] * u[i];
    }
    // Never more than the device's capacity of work (100 without the capacity term).
    ASSERT_LE(sum, 100 * cap + 1e-9) << "trial " << trial;
    if (prm.sharpness == 0) {
      ASSERT_DOUBLE_EQ(cap, 1.0);
    }
    ASSERT_LE(busy, 100 + 1e-9);  // the counter never reads more than 100
    ASSERT_GE(busy, std::min(100.0, sum) - 1e-9);  // busy includes the switching cost and occupancy
    // Capped jobs (gangs held back elsewhere) run at most at their caps, the
    // others no slower than without the caps, and the device within capacity.
    std::vector<double> caps(static_cast<size_t>(k)), rc(static_cast<size_t>(k));
    for (double& c : caps) c = trial % 4 == 0 ? 1.0 : Cap(rng);
    double busy_c;
    m.RatesCapped(u.data(), caps.data(), k, rc.data(), &busy_c);
    double sum_c = 0;
    for (int i = 0; i < k; ++i) {
      ASSERT_GT(rc[i], 0.0);
      ASSERT_LE(rc[i], 1.0 + 1e-12);
      if (rc[i] < caps[i] - 1e-12) {
        ASSERT_GE(rc[i], r[i] - 1e-9) << "trial " << trial << " job " << i;
      }
      ASSERT_TRUE(rc[i] <= caps[i] + 1e-12 || rc[i] >= r[i] - 1e-9);
      sum_c += rc[i] * u[i];
    }
    ASSERT_LE(sum_c, 100 * cap + 1e-9) << "trial " << trial;
    ASSERT_LE(busy_c, 100 + 1e-9);
    // MaxExtra (interference-aware's heaviest newcomer): the edge of MinRate >= floor.
    {
      const double floor = 0.3 + 0.6 * (trial % 7) / 6.0;
      const double x = m.MaxExtra(u.data(), k, floor);
      if (x < 0) {
        ASSERT_LT(m.MinRate(u.data(), k, 0.0), floor);
      } else {
        ASSERT_GE(m.MinRate(u.data(), k, x), floor) << "trial " << trial;
        if (x < 100) {
          ASSERT_LT(m.MinRate(u.data(), k, std::min(100.0, x + 1e-6)), floor) << "trial " << trial;
        }
      }
    }
    // MinRate (the policies' allocation-free admission test) agrees.
    if (k >= 2) {
      ASSERT_NEAR(m.MinRate(u.data(), k - 1, u[k - 1]), *std::min_element(r.begin(), r.end()), 1e-12);
    }
    // Monotone in the others' load: raising job 0's utilization never speeds
    // up any other job.
    if (k >= 2) {
      std::vector<double> v = u;
      v[0] = std::min(100.0, u[0] + 1 + U(rng) / 4);
      double busy2;
      auto r2 = RatesOf(m, v, &busy2);
      for (int i = 1; i < k; ++i) ASSERT_LE(r2[i], r[i] + 1e-12) << "trial " << trial << " job " << i;
    }
  }
}

TEST(Interference, IdenticalJobsAndLightPairs) {
  double busy;
  // beta above 1 acts as 1 (a job cannot wait longer than all the others' kernels).
  auto r5 = RatesOf(InterferenceModel({5.0, 0.0}), {40, 70, 10}, &busy);
  auto r1 = RatesOf(InterferenceModel({1.0, 0.0}), {40, 70, 10}, &busy);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r5[i], r1[i]);
  for (const InterferenceModel& m : {InterferenceModel(), InterferenceModel({0.4, 0.0}), InterferenceModel({1.0, 0.0}),
                                     InterferenceModel({5.0, 0.0, 30.0})}) {
    // n identical saturating jobs get 1/n each (no switching cost).
    for (int n = 2; n <= 8; ++n) {
      auto r = RatesOf(m, std::vector<double>(static_cast<size_t>(n), 100), &busy);
      for (double x : r) EXPECT_NEAR(x, 1.0 / n, 1e-12);
    }
  }
  // Two 10% jobs barely slow: 1 / (1 + beta 0.01).
  auto r = RatesOf(InterferenceModel({0.4, 0.0}), {10, 10}, &busy);
  EXPECT_NEAR(r[0], 1 / 1.004, 1e-12);
}

TEST(Interference, CappedJobsYieldTheirShareAndTheCapacityTermExceedsOneGpu) {
  // Time-slicing: 100% + 50% -> 2/3 each; with the 100% job capped at 0.5 it
  // uses 50 of the device and the 50% job runs at 1: water-filling.
  InterferenceModel ts;
  const double u[2] = {100, 50};
  double caps[2] = {0.5, 1.0}, r[2], busy;
  ts.RatesCapped(u, caps, 2, r, &busy);
  EXPECT_NEAR(r[0], 0.5, 1e-9);
  EXPECT_NEAR(r[1], 1.0, 1e-9);
  EXPECT_NEAR(busy, 100, 1e-9);
  // 100 + 100 + 50 with the first capped at 0.25: the others share 75 of the
  // device over 150 of demand: 0.5 each.
  const double u3[3] = {100, 100, 50};
  double caps3[3] = {0.25, 1, 1}, r3[3];
  ts.RatesCapped(u3, caps3, 3, r3, &busy);
  EXPECT_NEAR(r3[0], 0.25, 1e-9);
  EXPECT_NEAR(r3[1], 0.5, 1e-9);
  EXPECT_NEAR(r3[2], 0.5, 1e-9);
  // A cap above the share changes nothing.
  double loose[2] = {0.9, 1.0};
  ts.RatesCapped(u, loose, 2, r, &busy);
  EXPECT_NEAR(r[0], 2.0 / 3, 1e-9);
  EXPECT_NEAR(r[1], 2.0 / 3, 1e-9);
  // Alone and capped: the counter shows the capped use.
  const double one[1] = {80};
  double c1[1] = {0.5}, r1[1];
  ts.RatesCapped(one, c1, 1, r1, &busy);
  EXPECT_NEAR(r1[0], 0.5, 1e-12);
  EXPECT_NEAR(busy, 40, 1e-9);
  // The capacity term (c 1.25, p 5): two saturating jobs each run at
  // (1 + (2 / 1.25)^5)^(-1/5) = 0.6137, 122.7% of a GPU's work together,
  // while the counter reads 100.
  InterferenceParams p;
  p.capacity = 1.25;
  p.sharpness = 5;
  InterferenceModel cm(p);
  double rr[2];
  const double sat[2] = {100, 100};
  cm.Rates(sat, 2, rr, &busy);
  const double want = std::pow(1 + std::pow(2 / 1.25, 5), -0.2);
  EXPECT_NEAR(rr[0], want, 1e-12);
  EXPECT_NEAR(100 * (rr[0] + rr[1]), 122.74, 0.01);
  EXPECT_NEAR(busy, 100, 1e-12);
  EXPECT_DOUBLE_EQ(cm.WorkCapacity(), 1.25);
  EXPECT_DOUBLE_EQ(ts.WorkCapacity(), 1.0);
  // Light pairs slow a little: 30 + 30 -> (1 + (0.6/1.25)^5)^(-1/5).
  const double light[2] = {30, 30};
  cm.Rates(light, 2, rr, &busy);
  EXPECT_NEAR(rr[0], std::pow(1 + std::pow(0.6 / 1.25, 5), -0.2), 1e-12);
  EXPECT_NEAR(cm.MinRate(light, 1, 30), rr[0], 1e-12);
}

// Bitwise equality of two arrays of doubles (the memo must return exactly
// what a fresh evaluation returns, not something close to it).
bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  // Empty vectors may hold null data(): memcmp must not see them.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

struct Eval {
  std::vector<double> rates, free;
  double busy = -1;
};

Eval Fresh(const InterferenceModel& m, const std::vector<double>& u, const std::vector<double>& caps) {
  const int k = static_cast<int>(u.size());
  Eval e{std::vector<double>(u.size()), std::vector<double>(u.size())};
  m.RatesCapped(u.data(), caps.data(), k, e.rates.data(), &e.busy, e.free.data());
  return e;
}

Eval Memo(RatesMemo* memo, const InterferenceModel& m, const std::vector<double>& u, const std::vector<double>& caps,
          bool* computed) {
  const int k = static_cast<int>(u.size());
  Eval e{std::vector<double>(u.size(), -7), std::vector<double>(u.size(), -7)};
  *computed = memo->RatesCapped(m, u.data(), caps.data(), k, e.rates.data(), &e.busy, e.free.data());
  return e;
}

TEST(Interference, RatesMemoEqualsFreshEvaluationAndForgetsChangedInputs) {
  std::mt19937_64 rng(777);
  std::uniform_real_distribution<double> U(0, 100), Cap(0.05, 1);
  std::uniform_int_distribution<int> K(0, 9);
  InterferenceParams capacity;  // the RTX 3090 fit's form: capacity term only
  capacity.capacity = 1.2;
  capacity.sharpness = 4 * std::sqrt(2.0);
  InterferenceParams occupancy;  // Gavel's P100/V100 form: occupancy, time-slicing share
  occupancy.occupancy = 24.7;
  const std::vector<InterferenceModel> models = {InterferenceModel(), InterferenceModel(capacity),
                                                 InterferenceModel(occupancy), InterferenceModel({0.6, 0.1, 3.0})};
  int reused = 0, recomputed_capped = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const InterferenceModel& m = models[static_cast<size_t>(trial) % models.size()];
    const int k = K(rng);
    std::vector<double> u(static_cast<size_t>(k)), caps(static_cast<size_t>(k));
    for (double& x : u) x = U(rng);
    for (double& c : caps) c = trial % 3 == 0 ? 1.0 : Cap(rng);
    const Eval want = Fresh(m, u, caps);
    RatesMemo memo;
    bool computed = false;
    Eval got = Memo(&memo, m, u, caps, &computed);
    ASSERT_TRUE(computed) << "trial " << trial;
    ASSERT_TRUE(SameBits(got.rates, want.rates) && SameBits(got.free, want.free)) << "trial " << trial;
    ASSERT_EQ(got.busy, want.busy);
    // The same inputs again: remembered, the same bits.
    got = Memo(&memo, m, u, caps, &computed);
    ASSERT_FALSE(computed) << "trial " << trial;
    ASSERT_TRUE(SameBits(got.rates, want.rates) && SameBits(got.free, want.free)) << "trial " << trial;
    ASSERT_EQ(got.busy, want.busy);
    ++reused;
    if (k == 0) continue;
    // One input changed by one ulp (a utilization, then a cap), a job fewer,
    // another model, or Clear: computed afresh and equal to a fresh evaluation.
    const size_t i = static_cast<size_t>(trial) % u.size();
    std::vector<double> u2 = u, caps2 = caps;
    u2[i] = std::nextafter(u2[i], 200.0);
    caps2[i] = std::nextafter(caps2[i], 0.0);
    std::vector<double> u_less(u.begin(), u.end() - 1), caps_less(caps.begin(), caps.end() - 1);
    const InterferenceModel& other = models[static_cast<size_t>(trial + 1) % models.size()];
    struct Case {
      const InterferenceModel* m;
      const std::vector<double>* u;
      const std::vector<double>* caps;
    };
    for (const Case& c : {Case{&m, &u2, &caps}, Case{&m, &u, &caps2}, Case{&m, &u_less, &caps_less},
                          Case{&other, &u, &caps}}) {
      Memo(&memo, m, u, caps, &computed);  // the memo holds the unchanged mix
      got = Memo(&memo, *c.m, *c.u, *c.caps, &computed);
      ASSERT_TRUE(computed) << "trial " << trial;
      const Eval fresh = Fresh(*c.m, *c.u, *c.caps);
      ASSERT_TRUE(SameBits(got.rates, fresh.rates) && SameBits(got.free, fresh.free)) << "trial " << trial;
      ASSERT_EQ(got.busy, fresh.busy);
    }
    Memo(&memo, m, u, caps, &computed);
    memo.Clear();
    got = Memo(&memo, m, u, caps, &computed);
    ASSERT_TRUE(computed);
    ASSERT_TRUE(SameBits(got.rates, want.rates) && SameBits(got.free, want.free)) << "trial " << trial;
    recomputed_capped += k >= 2 && !SameBits(want.rates, Fresh(m, u, std::vector<double>(u.size(), 1.0)).rates);
  }
  EXPECT_EQ(reused, 3000);
  // The mixes exercise the capped solve (caps that bind), not only plain rates.
  EXPECT_GT(recomputed_capped, 1000);
  // A stale memo would be caught: two mixes with different rates, alternated
  // through one memo, each get their own.
  RatesMemo memo;
  const InterferenceModel m(capacity);
  const std::vector<double> a = {90, 80, 40}, b = {90, 80, 41}, caps = {0.3, 1, 1};
  const Eval fa = Fresh(m, a, caps), fb = Fresh(m, b, caps);
  ASSERT_FALSE(SameBits(fa.rates, fb.rates));
  bool computed;
  for (int round = 0; round < 3; ++round) {
    EXPECT_TRUE(SameBits(Memo(&memo, m, a, caps, &computed).rates, fa.rates));
    EXPECT_TRUE(computed);
    EXPECT_TRUE(SameBits(Memo(&memo, m, b, caps, &computed).rates, fb.rates));
    EXPECT_TRUE(computed);
  }
  // Hand check of the capped solve it remembers (time-slicing): 100% capped
  // at 0.5 beside a 50% job, which then runs at 1.
  const InterferenceModel ts;
  Eval e = Memo(&memo, ts, {100, 50}, {0.5, 1.0}, &computed);
  EXPECT_NEAR(e.rates[0], 0.5, 1e-9);
  EXPECT_NEAR(e.rates[1], 1.0, 1e-9);
  EXPECT_NEAR(e.busy, 100, 1e-9);
  e = Memo(&memo, ts, {100, 50}, {0.5, 1.0}, &computed);
  EXPECT_FALSE(computed);
  EXPECT_NEAR(e.rates[0], 0.5, 1e-9);
  EXPECT_NEAR(e.rates[1], 1.0, 1e-9);
}

TEST(Interference, GangRateIsTheSlowestGpu) {
  const double rates[] = {0.9, 0.35, 1.0, 0.5};
  EXPECT_EQ(GangRate(rates), 0.35);
  EXPECT_EQ(GangRate(std::span<const double>(rates, 1)), 0.9);
  EXPECT_EQ(GangRate({}), 0.0);
}

TEST(Interference, FitRecoversKnownParameters) {
  InterferenceModel truth({0.7, 0.05});
  std::vector<std::array<double, 4>> s;
  for (double a = 5; a <= 100; a += 5)
    for (double b = 5; b <= 100; b += 5) {
      double r[2], busy, u[2] = {a, b};
      truth.Rates(u, 2, r, &busy);
      s.push_back({a, b, r[0], r[1]});
    }
  InterferenceParams p = InterferenceModel::FitParams(s);
  EXPECT_NEAR(p.beta, 0.7, 0.006);
  EXPECT_NEAR(p.switch_cost, 0.05, 0.003);
  // All three terms, least absolute error: parameters on the grid come back.
  InterferenceModel truth3({0.6, 0.1, 4.0});
  s.clear();
  for (double a = 2; a <= 100; a += 7)
    for (double b = 2; b <= 100; b += 7) {
      double r[2], busy, u[2] = {a, b};
      truth3.Rates(u, 2, r, &busy);
      s.push_back({a, b, r[0], r[1]});
    }
  p = InterferenceModel::FitForm(s, {true, true, true});
  EXPECT_NEAR(p.beta, 0.6, 1e-9);
  EXPECT_NEAR(p.switch_cost, 0.1, 1e-9);
  EXPECT_NEAR(p.occupancy, 4.0, 1e-9);
  // A form without a term leaves it at its time-slicing value.
  p = InterferenceModel::FitForm(s, {false, true, false});
  EXPECT_EQ(p.occupancy, 1.0);
  EXPECT_EQ(p.switch_cost, 0.0);
  EXPECT_EQ(PhysicsForm{}.Name(), "time-slicing bound");
  EXPECT_EQ((PhysicsForm{true, false, true}.Name()), "+occupancy+switching");
  EXPECT_EQ((PhysicsForm{false, false, false, true}.Name()), "+capacity");
  // The capacity term is recovered from pairs it generated.
  InterferenceParams cp;
  cp.capacity = 1.2;
  cp.sharpness = 4;
  std::vector<std::array<double, 4>> cs;
  InterferenceModel cm(cp);
  for (double a = 5; a <= 100; a += 5)
    for (double b = 5; b <= 100; b += 5) {
      double u[2] = {a, b}, r[2], busy;
      cm.Rates(u, 2, r, &busy);
      cs.push_back({a, b, r[0], r[1]});
    }
  p = InterferenceModel::FitForm(cs, {false, false, false, true});
  EXPECT_NEAR(p.capacity, 1.2, 1e-9);
  EXPECT_NEAR(p.sharpness, 4, 1e-9);
}

class RealData : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
    ASSERT_TRUE(w.ok()) << w.message();
    w_ = *w;
  }
  std::string Lucid() const { return DataDir() + "/lucid/colocate_info.csv"; }
  std::string Gavel() const { return DataDir() + "/gavel/simulation_throughputs.json"; }
  std::vector<WorkloadProfile> w_;
};

// kMeasuredJobsPerGpu (the simulator's and the service's default co-location
// limit) is what the files the physics is fitted on hold: every Lucid row is
// two jobs (model1 ... speed1, model2 ... speed2), and every Gavel entry is
// a job alone ("null": one throughput) or with one other job (two throughputs).
TEST_F(RealData, MeasuredJobsPerGpuIsWhatTheDataHolds) {
  std::ifstream lucid(Lucid());
  std::string header;
  ASSERT_TRUE(std::getline(lucid, header));
  int models = 0, speeds = 0;
  for (size_t at = 0, end; at <= header.size(); at = end + 1) {
    end = header.find(',', at);
    if (end == std::string::npos) end = header.size();
    const std::string col = header.substr(at, end - at);
    models += col.rfind("model", 0) == 0;
    speeds += col.rfind("speed", 0) == 0;
  }
  EXPECT_EQ(models, kMeasuredJobsPerGpu);
  EXPECT_EQ(speeds, kMeasuredJobsPerGpu);
  std::ifstream in(Gavel());
  const nlohmann::json g = nlohmann::json::parse(in);
  int most = 0, entries = 0;
  for (const auto& [gpu, jobs] : g.items())
    for (const auto& [job, with] : jobs.items())
      for (const auto& [other, v] : with.items()) {
        ++entries;
        most = std::max(most, other == "null" ? 1 : (v.is_array() ? static_cast<int>(v.size()) : 0));
        if (other == "null") EXPECT_TRUE(v.is_number()) << gpu << " " << job;
        else EXPECT_EQ(v.size(), 2u) << gpu << " " << job << " " << other;
      }
  EXPECT_GT(entries, 1000);
  EXPECT_EQ(most, kMeasuredJobsPerGpu);
}

TEST_F(RealData, MapsGavelJobTypesToTheirFamily) {
  auto name = [&](const std::string& t) {
    int i = MapGavelJobType(t, w_);
    return i < 0 ? std::string("-") : w_[i].model + "/" + std::to_string(w_[i].batch) + "/" + std::to_string(w_[i].amp);
  };
  EXPECT_EQ(name("ResNet-50 (batch size 32)"), "ResNet50/32/0");
  EXPECT_EQ(name("ResNet-50 (batch size 128)"), "ResNet50/128/0");
  EXPECT_EQ(name("LM (batch size 80)"), "LSTM/64/0");         // |log 80/64| < |log 80/128|
  EXPECT_EQ(name("Recommendation (batch size 8192)"), "NeuMF/128/0");
  EXPECT_EQ(name("A3C"), "PPO/32/0");                         // no batch named: the smallest
  EXPECT_EQ(name("CycleGAN"), "DCGAN/32/0");
  EXPECT_EQ(name("ResNet-18 (batch size 32)"), "-");          // no counterpart
  EXPECT_EQ(name("Transformer (batch size 32)"), "-");
  EXPECT_EQ(name("LM (batch size x)"), "-");
  EXPECT_EQ(name("LM (batch size 5"), "-");
  EXPECT_EQ(name(""), "-");
}

TEST_F(RealData, FittedModelIsPhysicalAndDeterministic) {
  auto m = InterferenceModel::Fit(w_, Lucid(), Gavel());
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(m->pairs().size(), 830u);
  // On Lucid's RTX 3090 pairs the capacity term beats the time-slicing bound
  // on models it was not fitted on, with confidence (docs/simulator.md): heavy
  // pairs do more than one GPU's work, as measured.
  EXPECT_EQ(m->form().Name(), "+capacity");
  const double c = m->params().capacity, p = m->params().sharpness;
  EXPECT_GT(c, 1.0);
  EXPECT_LE(c, 1.6);
  EXPECT_DOUBLE_EQ(m->WorkCapacity(), c);
  double busy;
  auto r = RatesOf(*m, {100, 100, 100}, &busy);
  for (double x : r) EXPECT_NEAR(x, std::pow(1 + std::pow(3 / c, p), -1 / p), 1e-12);
  EXPECT_GT(3 * r[0], 1.0);  // more than one GPU's work
  EXPECT_LE(300 * r[0], 100 * c + 1e-9);
  EXPECT_NEAR(busy, 100, 1e-12);
  r = RatesOf(*m, {10, 10}, &busy);
  EXPECT_GT(r[0], 0.97);
  r = RatesOf(*m, std::vector<double>(9, 20), &busy);
  EXPECT_LE(9 * 20 * r[0], 100 * c + 1e-9);
  // Per GPU type: K80, P100, V100 have their own fits; other types fall back.
  ASSERT_EQ(m->gpu_fits().size(), 3u);
  EXPECT_TRUE(m->HasFit("V100M32"));
  EXPECT_TRUE(m->HasFit("rtx3090"));
  EXPECT_FALSE(m->HasFit("T4"));
  EXPECT_EQ(m->ForGpu("T4").params().occupancy, m->params().occupancy);
  for (const char* g : {"K80", "P100", "V100M16"}) {
    InterferenceModel t = m->ForGpu(g);
    EXPECT_GT(t.params().occupancy, 1.0) << g;  // Gavel's jobs load these GPUs more than their Lucid namesakes
    r = RatesOf(t, {100, 100}, &busy);
    EXPECT_LE(r[0] + r[1], t.WorkCapacity() + 1e-12) << g;
    r = RatesOf(t, {30, 60, 90}, &busy);
    EXPECT_LE(30 * r[0] + 60 * r[1] + 90 * r[2], 100 * t.WorkCapacity() + 1e-9) << g;
  }
  // The fit is deterministic.
  auto m2 = InterferenceModel::Fit(w_, Lucid(), Gavel());
  ASSERT_TRUE(m2.ok());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(m->gpu_fits()[i].params.occupancy, m2->gpu_fits()[i].params.occupancy);
    EXPECT_EQ(m->gpu_fits()[i].params.beta, m2->gpu_fits()[i].params.beta);
    EXPECT_EQ(m->gpu_fits()[i].params.switch_cost, m2->gpu_fits()[i].params.switch_cost);
    EXPECT_EQ(m->gpu_fits()[i].params.capacity, m2->gpu_fits()[i].params.capacity);
    EXPECT_EQ(m->gpu_fits()[i].params.sharpness, m2->gpu_fits()[i].params.sharpness);
  }
}

// The requirement: on models it was not fitted on, the selected physics is no
// worse than min(1, 100 / sum u), on both sources and every GPU type. Counts
// checked against an independent Python reading of the same files.
TEST_F(RealData, HeldOutErrorNoWorseThanTimeSlicing) {
  auto v = Validate(w_, Lucid(), Gavel());
  ASSERT_TRUE(v.ok()) << v.message();
  ASSERT_EQ(v->size(), 4u);
  const auto& l = (*v)[0];
  EXPECT_EQ(l.source, "lucid");
  EXPECT_EQ(l.pairs_used, 830);
  EXPECT_EQ(l.groups, 9);
  EXPECT_EQ(l.selected.samples, 3046);  // each pair held out once per model it involves
  EXPECT_LT(l.device_busy_mae, 15.0);
  EXPECT_LT(l.selected.mae, l.mean_rate.mae);  // on Lucid the physics beats a constant rate
  struct Counts { const char* gpu; int zero, unmapped, used; };
  const Counts want[] = {{"K80", 45, 192, 114}, {"P100", 11, 210, 130}, {"V100", 21, 207, 123}};
  for (int i = 0; i < 3; ++i) {
    const auto& g = (*v)[i + 1];
    EXPECT_EQ(g.gpu, want[i].gpu);
    EXPECT_EQ(g.pairs_total, 351);  // 26 job types: 325 pairs of two types + 26 with itself
    EXPECT_EQ(g.pairs_zero, want[i].zero) << g.gpu;
    EXPECT_EQ(g.pairs_unmapped, want[i].unmapped) << g.gpu;
    EXPECT_EQ(g.pairs_used, want[i].used) << g.gpu;
    EXPECT_EQ(g.groups, 5);
    // The bound with the Lucid namesakes' utilizations is far too optimistic on
    // Gavel's GPUs; the per-type physics, selected inside each fold, is not.
    EXPECT_GT(g.bound.bias, 0.15) << g.gpu;
    EXPECT_LT(std::fabs(g.selected.bias), std::fabs(g.bound.bias)) << g.gpu;
  }
  for (const auto& s : *v) {
    EXPECT_LE(s.selected.mae, s.bound.mae + 1e-12) << s.source << " " << s.gpu;
    EXPECT_LT(s.selected.mae, s.no_slowdown.mae) << s.source << " " << s.gpu;
    EXPECT_EQ(s.selected.samples, s.bound.samples);
    EXPECT_EQ(s.forms.front().form.Name(), "time-slicing bound");
    EXPECT_NEAR(s.forms.front().held_out.mae, s.bound.mae, 1e-12);
    EXPECT_EQ(s.fold_choices.size(), static_cast<size_t>(s.groups));
  }
}

TEST_F(RealData, BadColocateNamesFileAndLine) {
  std::string dir = testing::TempDir("interference_bad");
  std::string p = testing::WriteText(dir, "c.csv",
                                     ",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,"
                                     "batchsize2,amp2,speed2,gpu_util\n0,BERT,SQuAD,1,32,0,x,BERT,SQuAD,1,32,0,1,50\n");
  auto m = InterferenceModel::Fit(w_, p);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "c.csv: line 2: malformed batch size, amp, speed or gpu_util");
  p = testing::WriteText(dir, "h.csv", "model1,dataset1\n");
  m = InterferenceModel::Fit(w_, p);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "h.csv: line 1: missing column 'batchsize1'");
  m = InterferenceModel::Fit(w_, dir + "/none.csv");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), dir + "/none.csv: cannot open");
  // The real pairs repeated past the row bound (well under the byte bound): refused at the first row
  // past it, before any fit (the fit's time grows with the rows).
  std::ifstream in(Lucid());
  std::string header, line, rows;
  std::getline(in, header);
  size_t n = 0;
  std::vector<std::string> real;
  while (std::getline(in, line)) if (!line.empty()) real.push_back(line);
  ASSERT_FALSE(real.empty());
  for (; n <= kMaxWorkloads; ++n) rows += real[n % real.size()] + "\n";
  p = testing::WriteText(dir, "many.csv", header + "\n" + rows);
  m = InterferenceModel::Fit(w_, p);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "many.csv: line " + std::to_string(kMaxWorkloads + 2) + ": more than " +
                             std::to_string(kMaxWorkloads) + " pair rows");
}

TEST_F(RealData, BadGavelNamesFileKeyAndReason) {
  std::string dir = testing::TempDir("interference_gavel");
  auto err = [&](const std::string& text) {
    std::string p = testing::WriteText(dir, "t.json", text);
    auto m = InterferenceModel::Fit(w_, Lucid(), p);
    return m.ok() ? std::string("ok") : m.message();
  };
  // k80 and p100 well formed; v100 as given.
  auto with_v100 = [](const std::string& v100) {
    const std::string ok = R"j({"('A3C', 1)": {"null": 2, "('A3C', 1)": [1, 1]}})j";
    return "{\"k80\": " + ok + ", \"p100\": " + ok + (v100.empty() ? "" : ", \"v100\": " + v100) + "}";
  };
  EXPECT_EQ(err(with_v100(R"j({"('A3C', 1)": {"null": 2, "('A3C', 1)": [1, 1]}})j")), "ok");
  EXPECT_EQ(err("{").rfind("t.json: not JSON: ", 0), 0u) << err("{");
  EXPECT_EQ(err("[]"), "t.json: want an object of GPU types");
  EXPECT_EQ(err(with_v100("")), "t.json: no 'v100' throughputs (want an object of job types)");
  EXPECT_EQ(err(with_v100(R"j({"A3C": {}})j")), "t.json: v100: job key 'A3C' is not ('type', scale)");
  // More unordered pairs of job types than the bound (142 types: 142 * 143 / 2 = 10153 with themselves).
  {
    nlohmann::json v100 = nlohmann::json::object();
    for (int i = 1; i <= 142; ++i) {
      nlohmann::json& e = v100["('A3C (batch size " + std::to_string(i) + ")', 1)"];
      e["null"] = 2;
      for (int j = 1; j <= 142; ++j) e["('A3C (batch size " + std::to_string(j) + ")', 1)"] = {1, 1};
    }
    EXPECT_EQ(err(with_v100(v100.dump())),
              "t.json: v100: more than " + std::to_string(kMaxWorkloads) + " pairs of job types");
  }
  EXPECT_EQ(err(with_v100(R"j({"('A3C', 1)": {"null": -1}})j")),
            "t.json: v100: ('A3C', 1): want an object with the isolated throughput \"null\" (a non-negative number)");
  EXPECT_EQ(err(with_v100(R"j({"('A3C', 1)": {"null": 1, "('A3C', 1)": [1]}})j")),
            "t.json: v100: ('A3C', 1) with ('A3C', 1): want [own, other] throughputs (non-negative numbers)");
  EXPECT_EQ(err(with_v100(R"j({"('A3C', 1)": {"null": 1, "('A3C', 1)": [1, "x"]}})j")),
            "t.json: v100: ('A3C', 1) with ('A3C', 1): want [own, other] throughputs (non-negative numbers)");
  EXPECT_EQ(err(with_v100(R"j({"('A3C', 1)": {"null": 1, "('LM', 1)": [1, 1]}})j")),
            "t.json: v100: ('A3C', 1) with ('LM', 1): the partner has no isolated throughput");
  // Only zeros (not measured) or job types without a Lucid counterpart:
  // nothing to fit on, said so.
  EXPECT_EQ(err(with_v100(R"j({"('A3C', 1)": {"null": 1, "('A3C', 1)": [0, 0]}})j")),
            "t.json: v100: no measured pair of job types that map to Lucid workloads");
  EXPECT_EQ(err(with_v100(R"j({"('ResNet-18', 1)": {"null": 1, "('ResNet-18', 1)": [1, 1]}})j")),
            "t.json: v100: no measured pair of job types that map to Lucid workloads");
  // A file larger than the input limit is refused before it is read.
  std::string big = testing::WriteText(dir, "big.json", "{}");
  std::filesystem::resize_file(big, (64u << 20) + 1);
  auto m = InterferenceModel::Fit(w_, Lucid(), big);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "big.json: 67108865 bytes is more than the limit of 67108864");
}

}  // namespace
}  // namespace gpucast::sim
