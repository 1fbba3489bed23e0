// The held-out GPU memory evaluation (gpucast evaluate --memory-only) on the
// measured rows of ../shared/data: Lucid's RTX 3090 rows and MIGProfiler's
// A100 80 GB rows (docs/predictor.md, "GPU memory").
#include "predict/memory_eval.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "predict/catalog.h"
#include "util/paths.h"

namespace gpucast {
namespace {

Dataset MeasuredRows() {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  EXPECT_TRUE(cat.ok()) << cat.message();
  auto ds = BuildDataset({DataDir() + "/lucid/single_data.csv", DataDir() + "/migprofiler-a100/bert_train.csv"},
                         *cat, DatasetOptions{});
  EXPECT_TRUE(ds.ok()) << ds.message();
  return ds.ok() ? *ds : Dataset{};
}

// The memory evaluation of the measured rows under `split` (at the 80% level).
Result<MemoryEvaluation> EvaluateMeasured(const Dataset& d, const std::string& split) {
  ASSIGN_OR_RETURN(Split s, ParseSplit(split));
  return EvaluateMemory(d, s, 0.8);
}

// Leave one workload out (12 folds, each calibrated on its training rows only):
// the one-sided high end holds for at least 95% of the 89 rows (the issue's
// target), every workload's point is within 30% on average, and the interval
// is narrower than the former one (the high end at the 95% quantile of the
// plain log residuals plus cuDNN's spread on top: median width 0.68 of the point).
TEST(EvaluateMemory, LeaveOneWorkloadOutOnTheMeasuredRows) {
  Dataset d = MeasuredRows();
  ASSERT_EQ(d.mem.size(), 89u);
  Result<MemoryEvaluation> ev = EvaluateMeasured(d, "lowo");
  ASSERT_TRUE(ev.ok()) << ev.message();
  ASSERT_EQ(ev->overall.rows, 89u);
  EXPECT_GE(ev->overall.high_above, 0.95);
  EXPECT_LT(ev->overall.mape, 0.12);
  EXPECT_LT(ev->overall.median_rel_width, 0.45);
  for (const auto& [w, s] : ev->per_workload) EXPECT_LT(s.mape, 0.30) << w;
  // Every row's interval contains its point; the high end never below it.
  for (const MemoryRowPrediction& r : ev->rows) {
    EXPECT_LE(r.prediction.low, r.prediction.mib) << r.workload;
    EXPECT_GE(r.prediction.high, r.prediction.mib) << r.workload;
    // Calibrated inside the fold: the error that set the high end is a training workload's.
    EXPECT_FALSE(r.high_set_by.empty()) << r.workload;
    EXPECT_NE(r.high_set_by, r.workload);
  }
}

// The interval's width follows where the error is: held out, the tiny jobs
// (NeuMF, PPO, TD3: 2,050-2,059 MiB measured, almost all CUDA context, which
// the other workloads' RTX 3090 rows measure) get a narrower interval,
// relative to their point, than bert-base (GBs of activations): each fold
// scales its high end by the graph's part (all but the context) where its own
// calibration rows say so. One quantile of the whole point gave them 0.34 and
// 0.33. The high end still holds on 95% of the rows.
TEST(EvaluateMemory, TinyJobsGetANarrowerIntervalThanLargeGraphs) {
  Dataset d = MeasuredRows();
  Result<MemoryEvaluation> ev = EvaluateMeasured(d, "lowo");
  ASSERT_TRUE(ev.ok()) << ev.message();
  EXPECT_GE(ev->overall.high_above, 0.95);
  std::map<std::string, MemoryEvalScores> by;
  for (const auto& [w, s] : ev->per_workload) by[w] = s;
  ASSERT_TRUE(by.count("bert-base/amazon-review"));
  const double bert = by["bert-base/amazon-review"].median_rel_width;
  for (const char* tiny : {"NeuMF/MovieLens", "PPO/LunarLander", "TD3/BipedalWalker"}) {
    ASSERT_TRUE(by.count(tiny)) << tiny;
    EXPECT_EQ(by[tiny].high_above, 1.0) << tiny;
    EXPECT_LT(by[tiny].median_rel_width, 0.8 * bert) << tiny;
  }
}

// The calibration uses the training rows only: the held-out rows' measured
// memory does not move their intervals (each fold fits and calibrates without them).
TEST(EvaluateMemory, HeldOutMeasurementsDoNotMoveTheirIntervals) {
  Dataset d = MeasuredRows();
  Result<MemoryEvaluation> ev = EvaluateMeasured(d, "gpu:A100-80GB");
  ASSERT_TRUE(ev.ok()) << ev.message();
  Dataset changed = d;
  for (size_t i = 0; i < changed.rows.size(); ++i)
    if (changed.row_gpu[i] == "A100-80GB") changed.rows[i].gmem *= 3;
  Result<MemoryEvaluation> ev2 = EvaluateMeasured(changed, "gpu:A100-80GB");
  ASSERT_TRUE(ev2.ok()) << ev2.message();
  ASSERT_EQ(ev->rows.size(), ev2->rows.size());
  for (size_t k = 0; k < ev->rows.size(); ++k) {
    EXPECT_DOUBLE_EQ(ev->rows[k].prediction.low, ev2->rows[k].prediction.low);
    EXPECT_DOUBLE_EQ(ev->rows[k].prediction.high, ev2->rows[k].prediction.high);
  }
}

// Leave the A100 out: a model fitted on the RTX 3090 rows (11 workloads, Lucid's
// software) predicts MIGProfiler's BERT on four MIG profiles: the high end holds
// on every one of the 37 rows.
TEST(EvaluateMemory, LeaveTheA100OutOnTheMeasuredRows) {
  Dataset d = MeasuredRows();
  Result<MemoryEvaluation> ev = EvaluateMeasured(d, "gpu:A100-80GB");
  ASSERT_TRUE(ev.ok()) << ev.message();
  ASSERT_EQ(ev->overall.rows, 37u);
  EXPECT_EQ(ev->overall.high_above, 1.0);
  EXPECT_LT(ev->overall.mape, 0.12);
}

}  // namespace
}  // namespace gpucast
