#include "predict/step_eval.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "util/paths.h"

namespace gpucast {
namespace {

namespace fs = std::filesystem;

// A pollux-t4 layout in a fresh folder: every job's two files, with `rows` in cifar10's placements.
std::string PolluxDir(const std::string& name, const std::string& cifar_rows) {
  fs::path d = fs::temp_directory_path() / ("gpucast_step_eval_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  for (const StepJob& j : StepJobs()) {
    if (j.source != "pollux-t4") continue;
    fs::create_directories(d / j.key);
    std::ofstream(d / j.key / "placements.csv")
        << "placement,local_bsz,step_time,sync_time\n" << (j.key == "cifar10" ? cifar_rows : "");
    std::ofstream(d / j.key / "scalability.csv") << "num_nodes,num_replicas,local_bsz,step_time,sync_time\n";
  }
  return d.string();
}

TEST(StepEval, PlacementDigitsAreGpusPerNode) {
  std::string dir = PolluxDir("digits", "1,32,0.04,0.0005\n1234,64,0.2,0.1\n");
  auto runs = ReadStepRuns(dir, nullptr);
  ASSERT_TRUE(runs.ok()) << runs.message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].gpus, 1);
  EXPECT_EQ((*runs)[0].nodes, 1);
  EXPECT_EQ((*runs)[1].gpus, 10);
  EXPECT_EQ((*runs)[1].nodes, 4);
  EXPECT_EQ((*runs)[1].batch, 64);
  EXPECT_DOUBLE_EQ((*runs)[1].sync_s, 0.1);
  EXPECT_EQ((*runs)[1].gpu, "T4");
  EXPECT_EQ((*runs)[1].job->name, "ResNet-18/CIFAR-10");
  fs::remove_all(dir);
}

TEST(StepEval, BadRowsNameFileAndLine) {
  std::string dir = PolluxDir("bad", "1,32,0.04,0.0005\n12a,64,0.2,0.1\n");
  auto runs = ReadStepRuns(dir, nullptr);
  EXPECT_EQ(runs.message(), dir + "/cifar10/placements.csv:3: placement '12a' is not digits 1-9");
  fs::remove_all(dir);
  dir = PolluxDir("badnum", "1,32,fast,0.0005\n");
  EXPECT_EQ(ReadStepRuns(dir, nullptr).message(),
            dir + "/cifar10/placements.csv:2: column 'step_time': 'fast' is not a number");
  fs::remove_all(dir);
  EXPECT_EQ(ReadStepRuns("/nonexistent", nullptr).message(),
            "/nonexistent: neither a pollux-t4 folder (cifar10/placements.csv) nor a zeus one (summary_power_*.csv)");
}

// Zeus: each job and batch once per GPU, the run at the highest power limit (the uncapped card).
TEST(StepEval, ZeusTakesTheUncappedRun) {
  fs::path d = fs::temp_directory_path() / ("gpucast_step_eval_zeus_" + std::to_string(::getpid()));
  fs::create_directories(d);
  std::ofstream(d / "summary_power_a40.csv")
      << "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
      << "movielens-1m,ncf,1024,adam,100,30.0,90\n"
      << "movielens-1m,ncf,1024,adam,300,20.0,200\n"
      << "movielens-1m,ncf,1024,adam,200,22.0,150\n"
      << "cifar100,shufflenetv2,1024,adam,300,9.0,150\n";
  std::map<std::string, size_t> skipped;
  auto runs = ReadStepRuns(d.string(), &skipped);
  ASSERT_TRUE(runs.ok()) << runs.message();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].gpu, "A40");
  EXPECT_DOUBLE_EQ((*runs)[0].step_s, 20.0);
  EXPECT_EQ(skipped["ShuffleNet-V2/CIFAR-100"], 1u);  // no graph: counted, not predicted
  fs::remove_all(d);
}

// The shared data: 7,103 Pollux runs (data README), of which DeepSpeech2's 952 (753 placements + 198
// scalability rows, by the files' line counts) have no graph.
TEST(StepEval, ReadsTheSharedPolluxRuns) {
  std::map<std::string, size_t> skipped;
  auto runs = ReadStepRuns(DataDir() + "/pollux-t4", &skipped);
  ASSERT_TRUE(runs.ok()) << runs.message();
  EXPECT_EQ(runs->size() + skipped["DeepSpeech2/VoxForge"], 7103u);
  EXPECT_EQ(skipped["DeepSpeech2/VoxForge"], 952u);
}

}  // namespace
}  // namespace gpucast
