#include "predict/step_eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "cost/job_cost.h"
#include "features/features.h"
#include "features/gpu_specs.h"
#include "predict/dataset.h"
#include "predict/regressor.h"
#include "predict/catalog.h"
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
// The network fit recovers the rate that made the runs, job by job, with the
// single-GPU physics scaled to the measured one-GPU step. By hand: 8 T4 on 2
// nodes over tcp, two 40 MB buckets ready at 1/2 and at the end of the backward
// window; measured one-GPU step 0.3 s (predicted 0.2 s), backward 2/3 of it:
// window 0.2 s. Each all-reduce sends 2 x 7/8 x 4e7 = 7e7 bytes, latency
// (8.4 + 12 x 5.7 + 2 x 9.6) us x 1.9 = 182.4 us. At 4.5 Gb/s (562.5 MB/s)
// 124.444 ms each: the first ends at 0.1 + 0.124627, the second at
// 0.224627 + 0.124627 = 0.349253, so 0.149253 s exposed: step 0.449253 s.
// At 9 Gb/s 62.222 ms each: the first ends at 0.162404, the second starts at
// 0.2 and ends at 0.262404: step 0.362404 s.
TEST(StepEval, NetworkFitRecoversTheRateOfTheOtherJobs) {
  Result<Interconnect> ic = ResolveInterconnect(*FindGpuSpec("T4"), 8, 2, "tcp");
  ASSERT_TRUE(ic.ok()) << ic.message();
  DataParallelInput in;
  in.util = 90;
  in.step_s = in.core_s = 0.2;  // predicted: the fit uses its shape, scaled to the measured 0.3 s
  in.backward_fraction = 2.0 / 3;
  const std::vector<GradientBucket> buckets = {{4e7, 0.5}, {4e7, 1.0}};
  const double lat = (8.4e-6 + 12 * 5.7e-6 + 2 * 9.6e-6) * 1.9;
  const double a_step = 0.3 + (0.1 + 2 * (7e7 / 562.5e6 + lat) - 0.2);
  const double b_step = 0.3 + (0.2 + 7e7 / 1125e6 + lat - 0.2);
  EXPECT_NEAR(a_step, 0.449253, 1e-6);
  EXPECT_NEAR(b_step, 0.362404, 1e-6);
  std::vector<NetworkFitRun> runs = {{"A", in, buckets, *ic, 0.3, a_step}, {"B", in, buckets, *ic, 0.3, b_step}};
  EXPECT_NEAR(FitSocketGbps(runs, "B"), 4.5, 4.5 * 0.005);  // the grid's 0.5% step
  EXPECT_NEAR(FitSocketGbps(runs, "A"), 9.0, 9.0 * 0.005);
  EXPECT_TRUE(std::isnan(FitSocketGbps({runs[0]}, "A")));  // nothing left to fit on
}

// The shipped `tcp` rate is what `gpucast evaluate --data lucid --data migprofiler --steps
// pollux-t4 --algo physics` fits on all five rebuilt jobs (its network_fit.all_jobs_gbps),
// rounded to 0.01 Gb/s; and no one job decides it (each fold without a job within 10%).
TEST(StepEval, TheShippedSocketRateIsTheFitOnEveryPolluxJob) {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(cat.ok()) << cat.message();
  auto data = BuildDataset({DataDir() + "/lucid/single_data.csv", DataDir() + "/migprofiler-a100/bert_train.csv"}, *cat);
  ASSERT_TRUE(data.ok()) << data.message();
  auto p = Predictor::Train(*data, "physics", 0, DefaultFeatureSet("physics"));
  ASSERT_TRUE(p.ok()) << p.message();
  auto runs = ReadStepRuns(DataDir() + "/pollux-t4", nullptr);
  ASSERT_TRUE(runs.ok()) << runs.message();
  StepEvalOptions so;
  so.models_dir = fs::path(cat->path).parent_path().string();
  auto r = EvaluateSteps(*p, *runs, so);
  ASSERT_TRUE(r.ok()) << r.message();
  const nlohmann::json& fit = r->at("network_fit");
  ASSERT_TRUE(fit.is_object());
  EXPECT_EQ(fit.at("runs").get<size_t>(), 2113u);  // every even multi-node run with a one-GPU run of its batch
  const double all = fit.at("all_jobs_gbps").get<double>();
  EXPECT_NEAR(kNcclSocketGbps, all, 0.005 + 1e-9);
  EXPECT_EQ(fit.at("without_job_gbps").size(), 5u);
  for (const auto& [job, g] : fit.at("without_job_gbps").items()) EXPECT_NEAR(g.get<double>(), all, 0.1 * all) << job;
}

TEST(StepEval, ReadsTheSharedPolluxRuns) {
  std::map<std::string, size_t> skipped;
  auto runs = ReadStepRuns(DataDir() + "/pollux-t4", &skipped);
  ASSERT_TRUE(runs.ok()) << runs.message();
  EXPECT_EQ(runs->size() + skipped["DeepSpeech2/VoxForge"], 7103u);
  EXPECT_EQ(skipped["DeepSpeech2/VoxForge"], 952u);
}

// The datasheet peaks bound what a GPU can do: the roofline time of a step at 100% of peak
// FLOP/s and bandwidth (compute_s + memory_s, no per-kernel term) cannot exceed the GPU-busy
// time measured on a GPU that was busy all along. Before the fused-export rule (NodeCost::fused_op)
// BERT's decomposed LayerNorm and GELU counted 9 and 5 kernels' traffic each and the bound
// failed: 420 ms at peak against the RTX 3090's measured 376 ms.
TEST(StepEval, TheRooflineAtPeakIsNoSlowerThanMeasured) {
  struct Row {
    const char* model;
    int64_t batch, seq;
    const char* gpu;
    const char* mig;
    double busy_ms;  // step x utilization
    const char* where;
  };
  const Row rows[] = {
      // lucid/single_data.csv BERT,SQuAD,32,0: 84.872 samples/s, 99.689 %.
      {"bert.onnx", 32, 384, "RTX3090", "", 32 / 84.872 * 0.99689 * 1e3, "Lucid BERT b32 fp32"},
      // lucid/single_data.csv ResNet50,ImageNet,128,0: 465.651 samples/s, 100 %.
      {"resnet50.onnx", 128, 0, "RTX3090", "", 128 / 465.651 * 1e3, "Lucid ResNet-50 b128 fp32"},
      // migprofiler-a100/bert_train.csv 7g.80gb, batch 256, seq 64: 596.49 ms, 97.6 %.
      {"bert-base.onnx", 256, 64, "A100-80GB", "7g.80gb", 596.49 * 0.976, "MIGProfiler BERT-base b256 s64"},
  };
  for (const Row& r : rows) {
    LoadOptions lo;
    lo.batch = r.batch;
    if (r.seq > 0) lo.dims["seq"] = r.seq;
    auto reports = JobStepReports({HomeDir() + "/models/" + r.model}, lo, CostOptions{});
    ASSERT_TRUE(reports.ok()) << reports.message();
    Result<GpuSpec> gpu = ResolveGpu(r.gpu, r.mig);
    ASSERT_TRUE(gpu.ok()) << gpu.message();
    const StepEstimate e = EstimateStep(*reports, *gpu, false);
    EXPECT_LE((e.compute_s + e.memory_s) * 1e3, r.busy_ms) << r.where;
    EXPECT_GT((e.compute_s + e.memory_s) * 1e3, 0.3 * r.busy_ms) << r.where;  // and not far below it
  }
}

}  // namespace
}  // namespace gpucast
