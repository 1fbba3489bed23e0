#include "sim/workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/test_util.h"
#include "util/paths.h"

namespace gpucast::sim {
namespace {

using testing::TempDir;
using testing::WriteText;

TEST(WorkloadIndex, FindsEachConfigurationWholeNotByItsPrintedName) {
  std::vector<WorkloadProfile> w(3);
  w[0].model = "a/b", w[0].dataset = "c", w[0].batch = 32, w[0].amp = 0;
  w[1].model = "a", w[1].dataset = "b/c", w[1].batch = 32, w[1].amp = 0;  // the same Name(): a/b/c/b32/amp0
  w[2].model = "a", w[2].dataset = "b/c", w[2].batch = 32, w[2].amp = 1;
  ASSERT_EQ(w[0].Name(), w[1].Name());
  const WorkloadIndex index(w);
  EXPECT_EQ(index.Find("a/b", "c", 32, 0), 0);
  EXPECT_EQ(index.Find("a", "b/c", 32, 0), 1);
  EXPECT_EQ(index.Find("a", "b/c", 32, 1), 2);
  EXPECT_EQ(index.Find("a", "b/c", 16, 0), -1);
  // 4294967328 is 32 after a cast to int: it matches nothing.
  EXPECT_EQ(index.Find("a", "b/c", 4294967328LL, 0), -1);
  EXPECT_EQ(index.Find("a", "b/c", 32, 4294967296LL), -1);
  WorkloadIndex grow;
  EXPECT_EQ(grow.Insert(w[0], 0), -1);
  EXPECT_EQ(grow.Insert(w[1], 1), -1);  // another configuration, though its name prints the same
  EXPECT_EQ(grow.Insert(w[0], 2), 0);   // a repeat names the first
  EXPECT_EQ(grow.Find("a/b", "c", 32, 0), 0);
}

TEST(Workloads, RealTableAndPredictionsCsv) {
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok()) << w.message();
  EXPECT_EQ(w->size(), 52u);
  EXPECT_FALSE((*w)[0].HasPrediction());
  auto dir = TempDir("preds");
  auto p = WriteText(dir, "p.csv", "model,dataset,batchsize,amp,predicted_util\nBERT,SQuAD,32,0,90\n");
  EXPECT_EQ(LoadPredictionsCsv(p, &*w).message(), "p.csv: no prediction for workload BERT/SQuAD/b32/amp1");
  auto q = WriteText(dir, "q.csv", "model,dataset,batchsize,amp,predicted_util\nBERT,SQuAD,16,0,90\n");
  EXPECT_EQ(LoadPredictionsCsv(q, &*w).message(), "q.csv: line 2: workload BERT/SQuAD/b16/amp0 is not in single_data.csv");
  // Round trip with memory, and the memory columns' checks.
  auto x = *w;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i].predicted_util = 10 + static_cast<double>(i);
    x[i].pred_mem_mib = 1000 + static_cast<double>(i);
    x[i].pred_mem_high_mib = 2000 + static_cast<double>(i);
  }
  auto rt = WriteText(dir, "rt.csv", PredictionsCsv(x));
  auto y = *w;
  ASSERT_TRUE(LoadPredictionsCsv(rt, &y).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i].predicted_util, x[i].predicted_util);
    EXPECT_EQ(y[i].pred_mem_high_mib, x[i].pred_mem_high_mib);
  }
  // A value with more digits than the CSV keeps comes back as CsvRounded.
  x[0].predicted_util = 12.345678901;
  x[0].pred_mem_high_mib = 21461.5678;
  EXPECT_EQ(CsvRounded(x[0].predicted_util), 12.3457);
  EXPECT_EQ(CsvRounded(x[0].pred_mem_high_mib), 21461.6);
  EXPECT_TRUE(std::isnan(CsvRounded(NAN)));
  auto rt2 = WriteText(dir, "rt2.csv", PredictionsCsv(x));
  ASSERT_TRUE(LoadPredictionsCsv(rt2, &y).ok());
  EXPECT_EQ(y[0].predicted_util, CsvRounded(x[0].predicted_util));
  EXPECT_EQ(y[0].pred_mem_high_mib, CsvRounded(x[0].pred_mem_high_mib));
  auto bad = WriteText(dir, "m.csv", "model,dataset,batchsize,amp,predicted_util,pred_mem_high_mib\nBERT,SQuAD,32,0,90,-5\n");
  EXPECT_EQ(LoadPredictionsCsv(bad, &y).message(),
            "m.csv: line 2: pred_mem_high_mib '-5' is not a memory size in (0, 16 TiB] (MiB)");
}


constexpr const char* kHeader = "model,dataset,batchsize,amp,speed,gpu_util,gmem_util,gmem,label\n";
constexpr const char* kRow = "BERT,SQuAD,32,0,84.872,99.689,62.484,20162.0,2\n";  // Lucid's first row

// LoadWorkloads' message for a table of Lucid's first row and then `row`.
std::string Err(const std::string& name, const std::string& row) {
  auto dir = TempDir("workloads_bad");
  auto w = LoadWorkloads(WriteText(dir, name, std::string(kHeader) + kRow + row));
  return w.ok() ? "ok" : w.message();
}

// The speed obeys train --data's rule (util/measured.h; DatasetTest.
// SpeedIsAFinitePositiveRateWithAFiniteStep): simulate took a subnormal speed,
// whose step time batch / speed is infinite.
TEST(Workloads, SpeedIsAFinitePositiveRateWithAFiniteStep) {
  auto row = [](const std::string& speed) { return "DCGAN,LSUN,32,0," + speed + ",57.7,20.2,2458.0,1\n"; };
  // Text ParseDouble refuses: not finite, out of range, hex, junk, empty.
  for (const char* v : {"nan", "NaN", "inf", "-inf", "1e999", "0x1p3", "fast", ""})
    EXPECT_EQ(Err("w.csv", row(v)), std::string("w.csv: line 3: speed '") + v + "' is not a number") << v;
  for (const char* v : {"0", "-0", "0.0", "-5", "-1e-300"})
    EXPECT_EQ(Err("w.csv", row(v)), std::string("w.csv: line 3: speed '") + v + "' is not > 0 (samples/s)") << v;
  for (const char* v : {"4e-320", "1e-307"})  // 32 / speed > DBL_MAX
    EXPECT_EQ(Err("w.csv", row(v)),
              std::string("w.csv: line 3: speed '") + v + "' is too small: batchsize / speed (the step time) overflows")
        << v;
  // What train --data accepts is read as given: no upper bound, and at batch 1 a
  // speed of 1e-308 still has a finite step.
  auto dir = TempDir("workloads_speed");
  auto ok = LoadWorkloads(WriteText(dir, "ok.csv", std::string(kHeader) + kRow + "A,B,1,0,1e-308,5,1,100,0\n" +
                                                     "C,D,64,1,1e308,5,1,100,0\n"));
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ((*ok)[1].speed, 1e-308);
  EXPECT_EQ((*ok)[2].speed, 1e308);
}

TEST(Workloads, UtilizationMemoryAndBatchAreBounded) {
  for (const char* v : {"nan", "inf", "-1", "100.001", "1e999"})
    EXPECT_EQ(Err("w.csv", std::string("A,B,32,0,10,") + v + ",1,100,0\n"),
              std::string("w.csv: line 3: gpu_util '") + v + "' is not in [0, 100]") << v;
  for (const char* v : {"nan", "inf", "1e999", "x"})
    EXPECT_EQ(Err("w.csv", std::string("A,B,32,0,10,50,1,") + v + ",0\n"),
              std::string("w.csv: line 3: gmem '") + v + "' is not a number") << v;
  // train --data's memory rule (util/measured.h): (0, 1e7] MiB.
  for (const char* v : {"0", "-5", "10000001", "1e300"})
    EXPECT_EQ(Err("w.csv", std::string("A,B,32,0,10,50,1,") + v + ",0\n"),
              std::string("w.csv: line 3: gmem '") + v + "' is not a memory in MiB (want > 0 and <= 1e7)") << v;
  // A batch size beyond int was cast to one (4294967328 became 32).
  for (const char* v : {"0", "-32", "4294967328", "99999999999999999999", "32.5"})
    EXPECT_EQ(Err("w.csv", std::string("A,B,") + v + ",0,10,50,1,100,0\n"),
              std::string("w.csv: line 3: batchsize '") + v + "' is not an integer in [1, 2147483647]") << v;
  EXPECT_EQ(Err("w.csv", "A,B,32,2,10,50,1,100,0\n"), "w.csv: line 3: amp '2' is not 0 or 1");
  EXPECT_EQ(Err("w.csv", ",B,32,0,10,50,1,100,0\n"), "w.csv: line 3: model is empty");
  EXPECT_EQ(Err("w.csv", "A,,32,0,10,50,1,100,0\n"), "w.csv: line 3: dataset is empty");
  EXPECT_EQ(Err("w.csv", "A,B,32\n"), "w.csv: line 3: has 3 fields, want at least 4");
}

// A repeated configuration took the first row's predictions and left the
// second row "without a prediction" (or, from a predictions CSV, the second's).
TEST(Workloads, RepeatedConfigurationsAndTooManyRowsAreErrors) {
  EXPECT_EQ(Err("w.csv", "\nBERT,SQuAD,32,0,90,99,62,20000,2\n"),
            "w.csv: line 4: workload BERT/SQuAD/b32/amp0 repeats line 2");
  EXPECT_EQ(Err("w.csv", "BERT,SQuAD,32,1,90,99,62,20000,2\n"), "ok");  // another amp: another workload
  std::string many = kHeader;
  for (size_t i = 0; i <= kMaxWorkloads; ++i) many += "M" + std::to_string(i) + ",D,32,0,10,50,1,100,0\n";
  auto dir = TempDir("workloads_many");
  EXPECT_EQ(LoadWorkloads(WriteText(dir, "many.csv", many)).message(),
            "many.csv: line " + std::to_string(kMaxWorkloads + 2) + ": more than " + std::to_string(kMaxWorkloads) +
                " workload rows");
}

TEST(Workloads, PredictionsCsvRepeatsAndWrappedBatchSizesAreErrors) {
  auto dir = TempDir("preds_bad");
  auto w = LoadWorkloads(WriteText(dir, "w.csv", std::string(kHeader) + kRow));
  ASSERT_TRUE(w.ok()) << w.message();
  const std::string head = "model,dataset,batchsize,amp,predicted_util\n";
  auto twice = WriteText(dir, "twice.csv", head + "BERT,SQuAD,32,0,90\nBERT,SQuAD,32,0,10\n");
  EXPECT_EQ(LoadPredictionsCsv(twice, &*w).message(),
            "twice.csv: line 3: a second prediction for workload BERT/SQuAD/b32/amp0 (line 2)");
  // 4294967328 = 2^32 + 32 used to wrap onto the b32 workload.
  auto wrap = WriteText(dir, "wrap.csv", head + "BERT,SQuAD,4294967328,0,90\n");
  EXPECT_EQ(LoadPredictionsCsv(wrap, &*w).message(),
            "wrap.csv: line 2: workload BERT/SQuAD/b4294967328/amp0 is not in single_data.csv");
  auto good = WriteText(dir, "good.csv", head + "BERT,SQuAD,32,0,90\n");
  ASSERT_TRUE(LoadPredictionsCsv(good, &*w).ok());
  EXPECT_EQ((*w)[0].predicted_util, 90);
}

}  // namespace
}  // namespace gpucast::sim
