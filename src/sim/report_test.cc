#include "sim/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <regex>
#include <string>

#include "sim/policy.h"
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
  EXPECT_EQ(LoadRun(runs[0].dir).message(),
            runs[0].dir + "/utilization.csv: line 2: want t_s,util_pct[,useful_pct,queued] numbers");
  testing::WriteText(runs[0].dir, "summary.json", R"({"policy":"slot","trace":7,"num_gpus":2})");
  EXPECT_EQ(LoadRun(runs[0].dir).message(), runs[0].dir + "/summary.json: field 'trace': want a string");
  testing::WriteText(runs[0].dir, "summary.json", R"({"policy":"slot","trace":"t","num_gpus":2.5})");
  EXPECT_EQ(LoadRun(runs[0].dir).message(),
            runs[0].dir + "/summary.json: field 'num_gpus': want an integer in [1, 10000000]");
  testing::WriteText(runs[0].dir, "summary.json", "[1]");
  EXPECT_EQ(LoadRun(runs[0].dir).message(), runs[0].dir + "/summary.json: want a JSON object");
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
  // Capacity-bound runs: every run at the point (x1: slot and predictive, 2 seeds; x2: oracle too).
  EXPECT_NE(html.find("<tr><td>1.00</td><td>2</td><td>0.50</td><td>0 / 4</td>", sweep), std::string::npos);
  EXPECT_NE(html.find("<tr><td>2.00</td><td>2</td><td>1.00</td><td>6 / 6</td>", sweep), std::string::npos);
  EXPECT_NE(html.find("46.0 &plusmn; 1.4 / 4.0 &plusmn; 1.4", sweep), std::string::npos);
  EXPECT_NE(html.find("Mean JCT vs load", sweep), std::string::npos);
  EXPECT_NE(html.find("<polygon class='band'", sweep), std::string::npos);  // bands over seeds
  EXPECT_NE(html.find("band = min-max over n = 2 seeds", sweep), std::string::npos);
  EXPECT_NE(html.find("<svg id='load-sweep-useful'", sweep), std::string::npos);
  EXPECT_NE(html.find("<svg id='load-sweep-jct'", sweep), std::string::npos);
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
  EXPECT_NE(html.find("<svg id='accuracy-useful-2-2.00'", acc), std::string::npos);
  EXPECT_NE(html.find("<svg id='accuracy-jct-2-2.00'", acc), std::string::npos);
  EXPECT_NE(html.find("prediction MAE, points", acc), std::string::npos);
  // constant:50 (triangle) and the default (square) are marked at their own MAE,
  // with tooltips that carry the numbers.
  EXPECT_NE(html.find("<title>predictive, constant:50: MAE 30.0 points, useful work 31.0%</title>", acc),
            std::string::npos);
  EXPECT_NE(html.find("<title>predictive, lowo:forest: MAE 23.0 points, mean JCT 12.0 h</title>", acc),
            std::string::npos);
  // The verdict: at x2, predictive against slot (no profiling ran): 60/50, 62/54
  // -> +20.0%, +14.8%; JCT 10-20, 14-30 h -> -10, -16: 13.0 h lower. At x1:
  // 45/40, 47/42 -> +12.5%, +11.9%; JCT +1, +1 h. Headroom: the ideal bound
  // (80 in every run) over slot's: 80/50, 80/54 -> +60.0, +48.1: 54.1%; 80/40, 80/42 -> 95.2%.
  EXPECT_NE(html.find("<p id='verdict'><b>Verdict:</b> At --load-factor 2 (measured load 1.00), predictive does "
                      "17.4% more useful work than slot (no profiling baseline ran) (2 seeds: +14.8% to +20.0%), "
                      "with a 13.0 h lower mean JCT (headroom: the ideal bound is 54.1% above slot); at "
                      "--load-factor 1 (measured load 0.50), predictive does 12.2% "
                      "more useful work than slot (no profiling baseline ran) (2 seeds: +11.9% to +12.5%), with a "
                      "1.0 h higher mean JCT (headroom: the ideal bound is 95.2% above slot).</p>"),
            std::string::npos)
      << html.substr(html.find("<p id='verdict'>"), 600);
}

RunData MkRun(const std::string& policy, int seed, double useful, double jct_h, double load_scale,
            const std::string& predictions = "unused") {
  RunData r;
  r.policy = policy;
  r.trace = "t";
  r.num_gpus = 8;
  r.seed = seed;
  r.predictions = predictions;
  r.metrics = {{"useful_work_utilization", useful},
               {"jct_mean_s", jct_h * 3600},
               {"load_scale", load_scale},
               {"load_factor", 0.75 * load_scale}};
  return r;
}

std::vector<const RunData*> Ptrs(const std::vector<RunData>& runs) {
  std::vector<const RunData*> p;
  for (const RunData& r : runs) p.push_back(&r);
  return p;
}

TEST(Report, VerdictWinTieAndHonestNegativeAgainstTheBestProfilingBaseline) {
  std::vector<RunData> runs;
  auto add = [&](const std::string& p, double load, std::vector<double> useful, std::vector<double> jct,
                 const std::string& pred = "unused") {
    for (size_t i = 0; i < useful.size(); ++i) runs.push_back(MkRun(p, static_cast<int>(i + 1), useful[i], jct[i], load, pred));
  };
  // x2: predictive-feedback (mean 66.7) beats predictive (60); profiling-pool
  // (mean 61.3) is the best profiling baseline. Paired: 66/60, 63/60, 71/64 ->
  // +10.0, +5.0, +10.9375: mean 8.6%; JCT -5, -2, -5 h: 4.0 h lower.
  add("predictive-feedback", 2, {66, 63, 71}, {10, 12, 11});
  add("predictive", 2, {60, 60, 60}, {9, 9, 9});
  add("profiling-pool", 2, {60, 60, 64}, {15, 14, 16});
  add("profiling", 2, {55, 55, 55}, {5, 5, 5});
  add("profiling-exclusive", 2, {50, 50, 50}, {30, 30, 30});
  add("slot", 2, {40, 40, 40}, {50, 50, 50});
  add("predictive-feedback", 2, {90, 90, 90}, {1, 1, 1}, "oracle");      // never the verdict's
  add("predictive-feedback", 2, {95, 95, 95}, {1, 1, 1}, "noisy:0");     // nor a control's
  // x1: 0, +2.5, -2.5% and -0.5, +0.5, -0.5 h: ties.
  add("predictive-feedback", 1, {40, 41, 39}, {2, 3, 2});
  add("profiling-pool", 1, {40, 40, 40}, {2.5, 2.5, 2.5});
  // x3: 50/55, 50/52, 50/60 -> -9.09, -3.85, -16.67: mean -9.9%; JCT +10, +5, +2: 5.7 h higher.
  add("predictive-feedback", 3, {50, 50, 50}, {30, 30, 30});
  add("profiling-pool", 3, {55, 52, 60}, {20, 25, 28});
  EXPECT_EQ(Verdict(Ptrs(runs), 8, 2),
            "At --load-factor 2 (measured load 1.50), predictive-feedback does 8.6% more useful work than "
            "profiling-pool, the best profiling baseline (3 seeds: +5.0% to +10.9%), with a 4.0 h lower mean JCT; "
            "at --load-factor 1 (measured load 0.75), predictive-feedback and profiling-pool, the best profiling "
            "baseline, tie in useful work within the seeds' spread (3 seeds: -2.5% to +2.5%), with mean JCTs that "
            "tie within the seeds' spread (3 seeds: -0.5 h to +0.5 h); at --load-factor 3 (measured load 2.25), "
            "prediction does not win: the best gpucast policy, predictive-feedback, does 9.9% less useful work "
            "than profiling-pool, the best profiling baseline (3 seeds: -16.7% to -3.8%), with a 5.7 h higher "
            "mean JCT.");
  // The headline point goes first: x3, then the others by --load-factor.
  EXPECT_EQ(Verdict(Ptrs(runs), 8, 3).rfind("At --load-factor 3 (measured load 2.25), prediction does not win", 0), 0u);
  // One seed: the sign decides, and the line says there is no spread.
  std::vector<RunData> one = {MkRun("predictive", 1, 66, 10, 2), MkRun("profiling", 1, 60, 12, 2)};
  EXPECT_EQ(Verdict(Ptrs(one), 8, 2),
            "At --load-factor 2 (measured load 1.50), predictive does 10.0% more useful work than profiling, the "
            "best profiling baseline (1 seed: no spread), with a 2.0 h lower mean JCT.");
  // Seeds not shared are not paired: predictive seed 2 against profiling seed 1 gives nothing.
  std::vector<RunData> unpaired = {MkRun("predictive", 2, 66, 10, 2), MkRun("profiling", 1, 60, 12, 2)};
  EXPECT_EQ(Verdict(Ptrs(unpaired), 8, 2), "");
  // Nothing prediction-driven with the default predictions: no verdict.
  std::vector<RunData> none = {MkRun("slot", 1, 40, 10, 2), MkRun("profiling", 1, 60, 12, 2),
                               MkRun("predictive", 1, 70, 5, 2, "oracle")};
  EXPECT_EQ(Verdict(Ptrs(none), 8, 2), "");
  // Several GPU counts: each point names its GPUs.
  std::vector<RunData> gpus = {MkRun("predictive", 1, 66, 10, 2), MkRun("profiling", 1, 60, 12, 2)};
  gpus[0].num_gpus = gpus[1].num_gpus = 16;
  gpus.push_back(MkRun("predictive", 1, 50, 10, 2));
  gpus.push_back(MkRun("profiling", 1, 50, 10, 2));
  EXPECT_EQ(Verdict(Ptrs(gpus), 16, 2),
            "At 16 GPUs, --load-factor 2 (measured load 1.50), predictive does 10.0% more useful work than "
            "profiling, the best profiling baseline (1 seed: no spread), with a 2.0 h lower mean JCT; at 8 GPUs, "
            "--load-factor 2 (measured load 1.50), predictive and profiling, the best profiling baseline, tie in "
            "useful work within the seeds' spread (1 seed: no spread), with mean JCTs that tie within the seeds' "
            "spread (1 seed: no spread).");
}

TEST(Report, TwoDefaultPredictionSourcesAreAnErrorNamingBoth) {
  std::string dir = testing::TempDir("report-two-defaults");
  std::vector<RunData> runs;
  for (auto [p, pred] : std::vector<std::pair<std::string, std::string>>{
           {"slot", "unused"}, {"predictive", "lowo:physics"}, {"predictive", "oracle"},
           {"predictive", "noisy:15"}, {"predictive", "constant:50"}, {"predictive", "shuffled:lowo:physics"}}) {
    auto r = LoadRun(WriteRun(dir, p, 1, 50, 90, pred));
    ASSERT_TRUE(r.ok()) << r.message();
    runs.push_back(*r);
  }
  EXPECT_TRUE(CheckOneDefaultSource(runs).ok());  // one default source beside oracle and the controls
  auto nested = LoadRun(WriteRun(dir, "predictive", 1, 45, 90, "lowo:auto"));
  ASSERT_TRUE(nested.ok());
  runs.push_back(*nested);
  Status st = CheckOneDefaultSource(runs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("runs of two default prediction sources, lowo:physics ("), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find(") and lowo:auto (" + nested->dir + ")"), std::string::npos) << st.message();
}

TEST(Report, PlusMinusOnlyOverMoreThanOneSeed) {
  EXPECT_EQ(PlusMinus({}, 1, 1), "");
  EXPECT_EQ(PlusMinus({45}, 1, 1), "45.0");
  EXPECT_EQ(PlusMinus({40, 50}, 1, 1), "45.0 &plusmn; 7.1");  // sample sd: sqrt(50)
  EXPECT_EQ(PlusMinus({7200, 14400}, 3600, 2), "3.00 &plusmn; 1.41");
  // A page of one seed per policy has no &plusmn; anywhere and says why.
  std::string dir = testing::TempDir("report-one-seed");
  std::vector<RunData> runs;
  for (auto [p, u, pred] : std::vector<std::tuple<std::string, double, std::string>>{
           {"slot", 40, "unused"}, {"profiling", 50, "unused"}, {"predictive", 60, "lowo:forest"}}) {
    auto r = LoadRun(WriteRun(dir, p, 1, u, 90, pred, R"(,"load_scale":2,"prediction_mae":20)"));
    ASSERT_TRUE(r.ok()) << r.message();
    runs.push_back(*r);
  }
  std::string html = RenderReport(runs);
  EXPECT_FALSE(std::regex_search(html, std::regex("[0-9]%? &plusmn; [0-9]"))) << "a value with a spread";
  EXPECT_NE(html.find("One seed per entry: no &plusmn; (no spread to show)."), std::string::npos);
  EXPECT_NE(html.find("n = 1 seed per policy"), std::string::npos);
  EXPECT_EQ(html.find("class='band'"), std::string::npos);  // no band from one seed
  EXPECT_NE(html.find("(1 seed: no spread)"), std::string::npos);
  // Two seeds: the table says over how many.
  auto r2 = LoadRun(WriteRun(dir, "slot", 2, 44, 90, "unused", R"(,"load_scale":2)"));
  ASSERT_TRUE(r2.ok());
  runs.push_back(*r2);
  html = RenderReport(runs);
  EXPECT_NE(html.find("42.0 &plusmn; 2.8"), std::string::npos);  // slot: 40, 44
  EXPECT_TRUE(std::regex_search(html, std::regex("[0-9]%? &plusmn; [0-9]")));
  EXPECT_NE(html.find("Mean &plusmn; sample sd over n = 1&ndash;2 seeds. Entries of one seed show no &plusmn;."),
            std::string::npos);
}

TEST(Report, OneTimeUnitMaeNamedAndPalettesDisjoint) {
  std::string dir = testing::TempDir("report-units");
  std::vector<RunData> runs;
  for (int seed : {1, 2}) {
    auto r = LoadRun(WriteRun(dir, "predictive", seed, 60, 90, "lowo:forest",
                              R"(,"load_scale":1,"prediction_mae":20,"makespan_s":172800,"jct_p95_s":5400)"));
    ASSERT_TRUE(r.ok()) << r.message();
    runs.push_back(*r);
  }
  std::string html = RenderReport(runs);
  // Hours throughout: a 2-day makespan reads 48 h; p95 JCT of 1.5 h; the window of 3600 s 1.0 h.
  EXPECT_NE(html.find("<td>48 &plusmn; 0</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>1.5 &plusmn; 0.0</td>"), std::string::npos);
  EXPECT_NE(html.find("measurement window of 1.0 h"), std::string::npos);
  EXPECT_EQ(html.find(" d<"), std::string::npos);
  EXPECT_EQ(html.find(" min<"), std::string::npos);
  EXPECT_EQ(html.find("(d)"), std::string::npos);
  EXPECT_NE(html.find("<th>prediction MAE, points</th>"), std::string::npos);
  EXPECT_EQ(html.find("prediction error"), std::string::npos);
  // Every seed in the time plots: a band over both seeds.
  size_t t = html.find("<svg id='over-time-useful'");
  ASSERT_NE(t, std::string::npos);
  EXPECT_NE(html.find("<polygon class='band'", t), std::string::npos);
  EXPECT_NE(html.find("Finished jobs of every seed pooled (n = 2 seeds)"), std::string::npos);
  // A colour means one policy: no measure (workload) colour is a policy's,
  // and the per-workload bars use the measure palette.
  for (const std::string& c : MeasurePalette())
    EXPECT_EQ(std::find(PolicyPalette().begin(), PolicyPalette().end(), c), PolicyPalette().end()) << c;
  EXPECT_GE(PolicyPalette().size(), Policies().size());
  size_t w = html.find("<h2 id='workloads'>");
  ASSERT_NE(w, std::string::npos);
  std::string table = html.substr(w, html.find("</table>", w) - w);
  EXPECT_NE(table.find("fill='" + MeasurePalette()[0] + "'"), std::string::npos);
  EXPECT_NE(table.find("fill='" + MeasurePalette()[1] + "'"), std::string::npos);
  for (const std::string& c : PolicyPalette()) EXPECT_EQ(table.find(c), std::string::npos) << c;
}

}  // namespace
}  // namespace gpucast::sim
