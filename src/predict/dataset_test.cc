#include "predict/dataset.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "util/paths.h"

namespace gpucast {
namespace {

const char* kHeader = "model,dataset,batchsize,amp,speed,gpu_util,gmem_util,gmem,label\n";

std::string Err(const std::string& body) { return ParseMeasurementsCsv(kHeader + body, "m.csv").message(); }

TEST(DatasetTest, ParsesRows) {
  auto rows = ParseMeasurementsCsv(std::string(kHeader) +
                                       "BERT,SQuAD,32,0,84.872,99.689,62.484,20162.0,2\r\n"
                                       "\n"
                                       "VGG,CIFAR-10,64,1,5112.546,34.0,16.5,3588.0,1\n",
                                   "m.csv");
  ASSERT_TRUE(rows.ok()) << rows.message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].Key(), "BERT/SQuAD");
  EXPECT_EQ((*rows)[0].batch, 32);
  EXPECT_FALSE((*rows)[0].amp);
  EXPECT_DOUBLE_EQ((*rows)[0].gpu_util, 99.689);
  EXPECT_EQ((*rows)[0].line, 2);
  EXPECT_TRUE((*rows)[1].amp);
  EXPECT_EQ((*rows)[1].line, 4);  // blank line 3 skipped but counted
}

TEST(DatasetTest, BadRowsNameTheLine) {
  EXPECT_EQ(Err("BERT,SQuAD,32,0,84.8,99.6,62.4,20162.0,2\nBERT,SQuAD,32,0,84.8,99.6,62.4\n"),
            "m.csv:3: 7 columns, want 9");
  EXPECT_EQ(Err("BERT,SQuAD,32,0,84.8,abc,62.4,20162.0,2\n"), "m.csv:2: column 'gpu_util': 'abc' is not a number");
  EXPECT_EQ(Err("BERT,SQuAD,32,0,84.8,,62.4,20162.0,2\n"), "m.csv:2: column 'gpu_util': '' is not a number");
  EXPECT_EQ(Err("BERT,SQuAD,big,0,84.8,99,62.4,20162.0,2\n"),
            "m.csv:2: column 'batchsize': 'big' is not an integer >= 1");
  EXPECT_EQ(Err("BERT,SQuAD,32,yes,84.8,99,62.4,20162.0,2\n"), "m.csv:2: column 'amp': 'yes' is not 0 or 1");
  EXPECT_EQ(Err("BERT,SQuAD,32,0,84.8,120,62.4,20162.0,2\n"), "m.csv:2: column 'gpu_util': 120 is outside 0-100");
  EXPECT_EQ(Err("BERT,SQuAD,32,0,fast,99,62.4,20162.0,2\n"), "m.csv:2: column 'speed': 'fast' is not a number");
  EXPECT_EQ(ParseMeasurementsCsv("model,dataset,amp,gpu_util\nA,B,0,5\n", "m.csv").message(),
            "m.csv:1: header lacks column 'batchsize'");
  EXPECT_EQ(ParseMeasurementsCsv("", "m.csv").message(), "m.csv: empty file (no header)");
  EXPECT_EQ(ParseMeasurementsCsv(kHeader, "m.csv").message(), "m.csv: no data rows");
}

TEST(DatasetTest, SpeedIsAFinitePositiveRateWithAFiniteStep) {
  // Lucid's speed is samples/s; its step time is batchsize / speed. Non-finite, zero and
  // negative speeds, and speeds so small that the step overflows, name the file, line and column.
  const std::string row2 = "BERT,SQuAD,32,0,84.8,99,62.4,20162.0,2\n";
  auto bad = [&](const std::string& speed) {
    return Err(row2 + "BERT,SQuAD,32,0," + speed + ",99,62.4,20162.0,2\n");
  };
  for (const char* v : {"nan", "NaN", "inf", "-inf", "1e400"})
    EXPECT_EQ(bad(v), std::string("m.csv:3: column 'speed': '") + v + "' is not a number") << v;
  for (const char* v : {"0", "-0", "0.0", "-5", "-1e-300"})
    EXPECT_EQ(bad(v), std::string("m.csv:3: column 'speed': ") + v + " is not > 0 (samples/s)") << v;
  for (const char* v : {"4e-320", "1e-307"})  // 32 / speed > DBL_MAX
    EXPECT_EQ(bad(v), std::string("m.csv:3: column 'speed': ") + v +
                          " is too small: batchsize / speed (the step time) overflows") << v;
  // Positive finite speeds are read as given (the smallest and largest of Lucid's rows, a subnormal
  // one whose step is still finite at batch 1, and 1e308: no upper bound).
  for (const char* v : {"5.156", "29773.989", "1e308"}) {
    auto rows = ParseMeasurementsCsv(std::string(kHeader) + "BERT,SQuAD,32,0," + v + ",99,62.4,20162.0,2\n", "m.csv");
    ASSERT_TRUE(rows.ok()) << v << ": " << rows.message();
    EXPECT_EQ((*rows)[0].speed, std::stod(v));
  }
  auto one = ParseMeasurementsCsv(std::string(kHeader) + "BERT,SQuAD,1,0,1e-308,99,62.4,20162.0,2\n", "m.csv");
  EXPECT_TRUE(one.ok()) << one.message();
  // Without a speed column there is nothing to check.
  auto none = ParseMeasurementsCsv("model,dataset,batchsize,amp,gpu_util\nA,B,32,0,5\n", "m.csv");
  ASSERT_TRUE(none.ok()) << none.message();
  EXPECT_EQ((*none)[0].speed, 0);
}

TEST(DatasetTest, LabelColumnIsNeverRead) {
  // A non-numeric label is accepted: the column is ignored.
  auto rows = ParseMeasurementsCsv(std::string(kHeader) + "A,B,32,0,1,50,1,1,whatever\n", "m.csv");
  EXPECT_TRUE(rows.ok()) << rows.message();
}

// A row without a GPU / MIG entry (a hand-built dataset) reads as "", never past the vector.
TEST(DatasetTest, RowGpuAndMigOfRowsWithoutThem) {
  Dataset d;
  d.rows.resize(3);
  d.row_gpu = {"A100-80GB", "RTX3090"};
  d.row_mig = {"1g.10gb"};
  EXPECT_EQ(d.RowGpu(0), "A100-80GB");
  EXPECT_EQ(d.RowGpu(1), "RTX3090");
  EXPECT_EQ(d.RowGpu(2), "");
  EXPECT_EQ(d.RowMig(0), "1g.10gb");
  EXPECT_EQ(d.RowMig(1), "");
  EXPECT_EQ(d.RowMig(2), "");
}

// --data, --predictor and step logs were read without a bound: /dev/zero grew
// until killed and a FIFO hung. Now each is an error naming the path, at once.
TEST(DatasetTest, ReadFileBytesRefusesWhatIsNotABoundedRegularFile) {
  const std::string dir = (std::filesystem::temp_directory_path() / "gpucast_dataset_read").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_EQ(ReadFileBytes(dir).message(), dir + ": not a regular file (a directory)");
  EXPECT_EQ(ReadFileBytes("/dev/zero").message(), "/dev/zero: not a regular file (a device)");
  const std::string fifo = dir + "/fifo.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadFileBytes(fifo).message(), fifo + ": not a regular file (a FIFO)");  // no writer: did hang
  const std::string csv = dir + "/rows.csv";
  std::ofstream(csv) << "model,dataset\n";
  EXPECT_EQ(ReadFileBytes(csv, 5).message(), csv + ": larger than 5 bytes");
  EXPECT_EQ(ReadFileBytes(csv).value(), "model,dataset\n");
  EXPECT_EQ(ReadFileBytes(dir + "/none.csv").message(), dir + "/none.csv: cannot open: No such file or directory");
  std::filesystem::remove_all(dir);
}

TEST(DatasetTest, DigestIsFnv1a) {
  // A published FNV-1a 64 test vector (isthe.com/chongo/tech/comp/fnv); util/fnv1a_test.cc has more.
  EXPECT_EQ(DigestString("a"), "fnv1a64:af63dc4c8601ec8c");
}

TEST(DatasetTest, UnknownWorkloadNamesTheLine) {
  std::string path = testing::TempDir() + "/unknown_workload.csv";
  {
    std::ofstream out(path);
    out << kHeader << "BERT,SQuAD,32,0,84.872,99.689,62.484,20162.0,2\n"
        << "GPT,Pile,8,0,1.0,90.0,50.0,1000.0,2\n";
  }
  auto cat = ParseCatalog(R"({"version":1,"gpu":"RTX3090","workloads":[
      {"model":"BERT","dataset":"SQuAD","graphs":[{"file":"bert.onnx"}],"dims":{"seq":384}}]})",
                          "catalog.json", HomeDir() + "/models");
  ASSERT_TRUE(cat.ok());
  auto ds = BuildDataset(path, *cat);
  EXPECT_EQ(ds.message(), path + ":3: unknown workload 'GPT/Pile' (not in catalog.json)");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gpucast

namespace gpucast {
namespace {


}  // namespace
}  // namespace gpucast

namespace gpucast {
namespace {

TEST(DatasetTest, ParsesMigProfilerFormat) {
  auto rows = ParseMeasurementsCsv(
      "gpu,mig_profile,model,dataset,batchsize,seq_length,amp,optimizer,loader_workers,step_ms,step_ms_std,"
      "gpu_util,gpu_util_std,gmem_mib\n"
      "A100-80GB,3g.40gb,bert-base,amazon-review,8,64,0,AdamW,6,71.02,1.79,96.7,8.7,4577\n",
      "b.csv");
  ASSERT_TRUE(rows.ok()) << rows.message();
  const Measurement& m = (*rows)[0];
  EXPECT_EQ(m.gpu, "A100-80GB");
  EXPECT_EQ(m.mig_profile, "3g.40gb");
  EXPECT_EQ(m.dims.at("seq"), 64);
  EXPECT_EQ(m.loader_workers, 6);
  EXPECT_DOUBLE_EQ(m.step_ms, 71.02);
  EXPECT_DOUBLE_EQ(m.gpu_util, 96.7);
  EXPECT_DOUBLE_EQ(m.gmem, 4577);
  EXPECT_EQ(m.target, kTargetDcgmGrActive);
  auto lucid = ParseMeasurementsCsv(std::string(kHeader) + "A,B,32,0,1,50,1,1,2\n", "m.csv");
  EXPECT_EQ((*lucid)[0].target, kTargetNvidiaSmi);
  EXPECT_EQ(ParseMeasurementsCsv("model,dataset,batchsize,amp,gpu_util,step_ms\nA,B,8,0,50,0\n", "b.csv").message(),
            "b.csv:2: column 'step_ms': 0 is not > 0");
}

// Both real CSVs in one dataset: every MIGProfiler row gets its own GPU, MIG
// slice, sequence length and step time; the slice's features come from its
// effective spec (a 1g slice has about a seventh of the whole GPU's peak).
TEST(DatasetTest, BuildsFromLucidAndMigProfilerTogether) {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(cat.ok()) << cat.message();
  auto ds = BuildDataset({DataDir() + "/lucid/single_data.csv", DataDir() + "/migprofiler-a100/bert_train.csv"},
                         *cat, DatasetOptions{});
  ASSERT_TRUE(ds.ok()) << ds.message();
  ASSERT_EQ(ds->rows.size(), 52u + 37u);
  EXPECT_EQ(ds->groups.size(), 12u);
  EXPECT_EQ(ds->row_gpu[0], "RTX3090");
  EXPECT_EQ(ds->row_gpu[52], "A100-80GB");
  EXPECT_EQ(ds->row_mig[52], "7g.80gb");
  EXPECT_NEAR(ds->step_s[52], 0.03801, 1e-12);
  size_t compute = std::find(ds->feature_names.begin(), ds->feature_names.end(), "est_compute_ms") -
                   ds->feature_names.begin();
  ASSERT_LT(compute, ds->feature_names.size());
  // Rows 52 (7g.80gb) and 70 (1g.10gb) are both batch 8, seq 64: same graph, other slice.
  ASSERT_EQ(ds->rows[70].mig_profile, "1g.10gb");
  ASSERT_EQ(ds->rows[70].batch, 8);
  double ratio = ds->x[70][compute] / ds->x[52][compute];
  EXPECT_GT(ratio, 5.0);  // 98 SMs vs 14
  EXPECT_LT(ratio, 8.0);
}

}  // namespace
}  // namespace gpucast
