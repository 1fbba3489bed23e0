// What the predictor has not seen (docs/predictor.md): a GPU type without
// measured rows, an input pipeline of unknown cost, a measured workload on
// another GPU; and a step time for every prediction. A physics predictor
// trained on the Lucid rows (RTX 3090 only), real graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "cost/job_cost.h"
#include "graph/onnx_loader.h"
#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/model_file.h"
#include "predict/physics.h"
#include "predict/physics_fixture.h"
#include "predict/predict_json.h"
#include "predict/predictor.h"
#include "util/paths.h"

namespace gpucast {
namespace {

const Predictor& Trained() { return test::PhysicsOnLucid(); }

std::vector<CostReport> Job(const std::string& model, int64_t batch, const std::map<std::string, int64_t>& dims = {}) {
  LoadOptions lo;
  lo.batch = batch;
  lo.dims = dims;
  auto r = JobStepReports({HomeDir() + "/models/" + model}, lo, CostOptions{});
  EXPECT_TRUE(r.ok()) << r.message();
  return *r;
}

PredictResult Predict(const std::string& model, int64_t batch, const std::string& gpu, const std::string& mig = "",
                      const std::vector<std::string>& attrs = {}, int gpus = 1,
                      const std::map<std::string, int64_t>& dims = {}) {
  JobConfig job;
  job.batch = batch;
  job.gpu = gpu;
  job.mig_profile = mig;
  job.gpus = gpus;
  for (const std::string& a : attrs) EXPECT_TRUE(ParseJobAttr(a, &job.attrs).ok()) << a;
  Result<PredictResult> r = Trained().Predict(Job(model, batch, dims), job);
  EXPECT_TRUE(r.ok()) << r.message();
  return *r;
}

bool HasWarning(const PredictResult& r, const std::string& part) {
  for (const std::string& w : r.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

// An unstated fact's prediction against the same job with the fact stated: utilization and step
// intervals that hold the stated one's.
void ExpectHolds(const PredictResult& unstated, const PredictResult& stated) {
  EXPECT_LE(unstated.prediction.low, stated.prediction.low);
  EXPECT_GE(unstated.prediction.high, stated.prediction.high);
  EXPECT_LE(unstated.prediction.step_low_ms, stated.prediction.step_low_ms);
  EXPECT_GE(unstated.prediction.step_high_ms, stated.prediction.step_high_ms);
}
// ... and stated at the default: also the same point.
void ExpectSamePointAndHolds(const PredictResult& unstated, const PredictResult& stated) {
  EXPECT_DOUBLE_EQ(unstated.prediction.util, stated.prediction.util);
  EXPECT_DOUBLE_EQ(unstated.prediction.step_ms, stated.prediction.step_ms);
  ExpectHolds(unstated, stated);
}

TEST(Unseen, TheTrainingGpuIsMeasuredAnotherIsNot) {
  EXPECT_EQ(Trained().model().measured_gpus(), std::vector<std::string>{"RTX3090"});
  PredictResult here = Predict("resnet50.onnx", 32, "RTX3090", "", {"data_on_gpu=1"});
  EXPECT_TRUE(here.gpu_measured);
  EXPECT_FALSE(HasWarning(here, "no measured utilization rows"));
  PredictResult there = Predict("resnet50.onnx", 32, "A100-40GB", "", {"data_on_gpu=1"});
  EXPECT_FALSE(there.gpu_measured);
  EXPECT_TRUE(there.unsure);
  EXPECT_TRUE(HasWarning(there, "GPU A100-40GB has no measured utilization rows (measured: RTX3090)")) << there.warnings[0];
  // The unknown host widens the interval: a host 2x slower can only lower
  // utilization, 2x faster raise it (a ResNet-50 step has host work too).
  EXPECT_GT(there.risk.low, 0);
  // On the measured GPU only the per-step host band is left (a script's own per-step work, the
  // training workloads' range, docs/predictor.md): a 74 ms ResNet-50 step moved by a few ms of
  // host work moves by under 5 % (log1p).
  EXPECT_GT(here.risk.low, 0);
  EXPECT_LT(here.risk.low, 0.05);
  EXPECT_LT(here.risk.high, 0.05);
  EXPECT_GT(there.risk.low, here.risk.low);
  EXPECT_GT(there.prediction.high - there.prediction.low, here.prediction.high - here.prediction.low);
}

TEST(Unseen, ASeenWorkloadsCorrectionStaysOnItsGpu) {
  // ResNet50/ImageNet's catalog facts; its rows ran on the RTX 3090.
  PredictResult here = Predict("resnet50.onnx", 32, "RTX3090", "", {"data_on_gpu=1"});
  EXPECT_EQ(here.seen_workload, "ResNet50/ImageNet");
  PredictResult there = Predict("resnet50.onnx", 32, "A100-40GB", "", {"data_on_gpu=1"});
  EXPECT_EQ(there.seen_workload, "");
  EXPECT_EQ(there.same_graph_workload, "ResNet50/ImageNet");
  EXPECT_EQ(there.measured_on, std::vector<std::string>{"RTX3090"});
  EXPECT_TRUE(HasWarning(there, "ResNet50/ImageNet was measured on RTX3090 only"));
}

// PointNet's input pipeline (text parsed per sample on the CPU), fitted as its own loader time on
// its RTX 3090 rows, is a CPU cost of the job: on another GPU its correction is not applied but
// that loader time is (the GPU's host is unknown, so the band stays).
TEST(Unseen, AMeasuredWorkloadsLoaderTimeCarriesToAnotherGpu) {
  PredictResult here = Predict("pointnet.onnx", 32, "RTX3090", "", {"loader_workers=2"});
  EXPECT_EQ(here.seen_workload, "PointNet/ShapeNet");
  EXPECT_EQ(here.carried_loader_ms_per_sample, 0);  // its correction applies: nothing carried
  PredictResult there = Predict("pointnet.onnx", 32, "A100-40GB", "", {"loader_workers=2"});
  EXPECT_EQ(there.seen_workload, "");
  EXPECT_GT(there.carried_loader_ms_per_sample, 1.0);  // fitted: PointNet's rows are loader-bound
  EXPECT_TRUE(HasWarning(there, "(carried: a CPU cost of the job)"));
  EXPECT_LT(there.prediction.util, 30);  // measured on the RTX 3090: 7.8 % on average; not near 90 %
  // Its loader is measured, not unknown: no 0-5 ms band, only the unknown host's.
  EXPECT_FALSE(there.risk.unknown_pipeline);
  EXPECT_FALSE(HasWarning(there, "the input pipeline's cost is not stated"));
  EXPECT_LT(there.prediction.high, 60);
  // A graph no training workload has gets the median loader, not PointNet's.
  PredictResult vgg = Predict("torchvision/resnet18.onnx", 32, "A100-40GB", "", {"loader_workers=2"});
  EXPECT_EQ(vgg.carried_loader_ms_per_sample, 0);
}

// On a GPU type with measured rows of its own (the A100 80GB, in a model trained on train's default
// data), a workload measured elsewhere (PointNet, RTX 3090) carries its loader time, measured on the
// RTX 3090's machine: the A100's measured host is not that one, so the interval spans a host 2x slower
// or faster as on an unmeasured GPU: it holds the same job with the loader stated at half and twice
// the carried time.
TEST(Unseen, ACarriedLoaderOnAnotherMeasuredGpuKeepsTheUnknownHostBand) {
  const Predictor& p = test::PhysicsOnLucidAndMig();
  ASSERT_TRUE(p.model().GpuMeasured("A100-80GB"));
  auto predict = [&](const std::vector<std::string>& attrs) {
    JobConfig job;
    job.batch = 32;
    job.gpu = "A100-80GB";
    for (const std::string& a : attrs) EXPECT_TRUE(ParseJobAttr(a, &job.attrs).ok()) << a;
    Result<PredictResult> r = p.Predict(Job("pointnet.onnx", 32), job);
    EXPECT_TRUE(r.ok()) << r.message();
    return *r;
  };
  const PredictResult carried = predict({"loader_workers=2"});
  EXPECT_TRUE(carried.gpu_measured);
  ASSERT_GT(carried.carried_loader_ms_per_sample, 1.0);
  char half[64], twice[64];
  std::snprintf(half, sizeof half, "loader_ms_per_sample=%.6f", carried.carried_loader_ms_per_sample / 2);
  std::snprintf(twice, sizeof twice, "loader_ms_per_sample=%.6f", carried.carried_loader_ms_per_sample * 2);
  const PredictResult fast = predict({"loader_workers=2", half}), slow = predict({"loader_workers=2", twice});
  EXPECT_EQ(fast.carried_loader_ms_per_sample, 0);  // stated: nothing carried
  EXPECT_LT(slow.prediction.util, carried.prediction.util);
  EXPECT_GT(fast.prediction.util, carried.prediction.util);
  EXPECT_LE(carried.prediction.low, slow.prediction.util);
  EXPECT_GE(carried.prediction.high, fast.prediction.util);
}

TEST(Unseen, AnUnstatedInputPipelineWidensTheLowSide) {
  // ResNet-18 (no training workload has its graph) with 2 workers, loader cost not stated, against
  // the same job with its data on the GPU.
  PredictResult unknown = Predict("torchvision/resnet18.onnx", 64, "RTX3090", "", {"loader_workers=2"});
  PredictResult on_gpu = Predict("torchvision/resnet18.onnx", 64, "RTX3090", "", {"loader_workers=2", "data_on_gpu=1"});
  EXPECT_TRUE(unknown.risk.unknown_pipeline);
  EXPECT_FALSE(on_gpu.risk.unknown_pipeline);
  EXPECT_GT(unknown.risk.low, 0.3);  // 5 ms a sample over 2 workers: 160 ms of loading a batch of 64
  EXPECT_TRUE(HasWarning(unknown, "the input pipeline's cost is not stated"));
  EXPECT_LT(unknown.prediction.low, on_gpu.prediction.low);
  // Its step may be longer by what the loader adds: the step interval's high end grows.
  EXPECT_GT(unknown.prediction.step_high_ms / unknown.prediction.step_ms,
            on_gpu.prediction.step_high_ms / on_gpu.prediction.step_ms);
  // A stated loader time is no unknown.
  PredictResult stated = Predict("torchvision/resnet18.onnx", 64, "RTX3090", "", {"loader_workers=2", "loader_ms_per_sample=0.1"});
  EXPECT_FALSE(stated.risk.unknown_pipeline);
  // No loader band: what is left is the per-step host band of the same job with its data on the
  // GPU (0.1 ms x 64 / 2 workers = 3.2 ms of loading hides under the step).
  EXPECT_NEAR(stated.risk.low, on_gpu.risk.low, 1e-9);
  EXPECT_LT(stated.risk.low, 0.1);
}

// tools/unseen_models.py's masked_lm: the vocabulary head on h[labels != -100], which the loader
// sizes as every position (an upper bound). Unstated, the point is that bound and the intervals
// also hold a selection of none; a stated fraction scales the head and leaves nothing unknown.
TEST(Unseen, AnUnstatedSelectionSpansNoneToAll) {
  const std::string mlm = "unseen/masked_lm-opset17.onnx";
  const std::map<std::string, int64_t> seq = {{"seq", 128}};
  const int64_t bound_nodes = Job(mlm, 32, seq).at(0).SelectionBoundNodes();
  ASSERT_GT(bound_nodes, 0);
  auto predict = [&](const std::vector<std::string>& attrs) { return Predict(mlm, 32, "RTX3090", "", attrs, 1, seq); };
  const PredictResult unstated = predict({"data_on_gpu=1"}), all = predict({"data_on_gpu=1", "selected_fraction=1"}),
                      some = predict({"data_on_gpu=1", "selected_fraction=0.15"});
  EXPECT_EQ(unstated.selection_bound_nodes, bound_nodes);
  EXPECT_TRUE(unstated.unknown_selection);
  EXPECT_FALSE(all.unknown_selection);
  EXPECT_FALSE(some.unknown_selection);
  EXPECT_TRUE(HasWarning(unstated, "costed as if it selected every element"));
  EXPECT_TRUE(HasWarning(unstated, "--attr selected_fraction=F"));
  EXPECT_FALSE(HasWarning(some, "costed as if it selected every element"));
  // The point is the bound's; the intervals hold the stated bound's and reach further down.
  ExpectSamePointAndHolds(unstated, all);
  EXPECT_LT(unstated.prediction.step_low_ms, all.prediction.step_low_ms);
  // 15% selected: less GPU work, so (this small job's step is its host work's) the same step and a
  // lower utilization, inside the unstated interval; less memory than the bound.
  const std::vector<std::string>& names = Trained().info().feature_names;
  const size_t busy = std::find(names.begin(), names.end(), "est_gpu_busy_ms") - names.begin();
  ASSERT_LT(busy, names.size());
  EXPECT_LT(some.features[busy], all.features[busy]);
  EXPECT_LE(some.prediction.step_ms, all.prediction.step_ms);
  EXPECT_LT(some.prediction.util, all.prediction.util);
  EXPECT_GE(some.prediction.util, unstated.prediction.low);
  EXPECT_GE(some.prediction.step_ms, unstated.prediction.step_low_ms);
  EXPECT_LT(some.memory_estimate.activations_mib, all.memory_estimate.activations_mib);
  EXPECT_DOUBLE_EQ(unstated.memory_estimate.activations_mib, all.memory_estimate.activations_mib);
  nlohmann::json j = PredictionFieldsJson(unstated, 0.8);
  EXPECT_EQ(j["uncertainty"]["unknown_selection"], true);
  EXPECT_EQ(PredictionFieldsJson(some, 0.8)["uncertainty"]["unknown_selection"], false);
}

// ResNet-18 under AMP: its convolutions run on tensor cores, where cuDNN transposes PyTorch's
// default NCHW tensors (EstimateStep). Unstated, the point is NCHW's and the intervals also hold
// the channels-last job's; stated either way, nothing is unknown; FP32 (no TF32) has nothing to span.
TEST(Unseen, AnUnstatedMemoryFormatSpansNchwAndChannelsLast) {
  const std::string model = "torchvision/resnet18.onnx";
  auto predict = [&](bool amp, const std::vector<std::string>& attrs, const std::string& gpu = "RTX3090") {
    JobConfig job;
    job.batch = 64;
    job.gpu = gpu;
    job.amp = amp;
    for (const std::string& a : attrs) EXPECT_TRUE(ParseJobAttr(a, &job.attrs).ok()) << a;
    LoadOptions lo;
    lo.batch = job.batch;
    auto reports = JobStepReports({HomeDir() + "/models/" + model}, lo, CostOptions{.amp = amp});
    EXPECT_TRUE(reports.ok()) << reports.message();
    Result<PredictResult> r = Trained().Predict(*reports, job);
    EXPECT_TRUE(r.ok()) << r.message();
    return *r;
  };
  const PredictResult unstated = predict(true, {"data_on_gpu=1"}), nchw = predict(true, {"data_on_gpu=1", "channels_last=0"}),
                      nhwc = predict(true, {"data_on_gpu=1", "channels_last=1"});
  EXPECT_TRUE(unstated.unknown_channels_last);
  EXPECT_FALSE(nchw.unknown_channels_last);
  EXPECT_FALSE(nhwc.unknown_channels_last);
  EXPECT_TRUE(HasWarning(unstated, "the memory format is not stated"));
  EXPECT_TRUE(HasWarning(unstated, "--attr channels_last=1 or 0"));
  EXPECT_FALSE(HasWarning(nchw, "the memory format is not stated"));
  // The transposes make the NCHW step longer than the channels-last one.
  EXPECT_GT(nchw.prediction.step_ms, nhwc.prediction.step_ms);
  // The point is NCHW's; the intervals are the union of both stated ones.
  ExpectSamePointAndHolds(unstated, nchw);
  EXPECT_DOUBLE_EQ(unstated.prediction.step_low_ms, std::min(nchw.prediction.step_low_ms, nhwc.prediction.step_low_ms));
  EXPECT_LT(unstated.prediction.step_low_ms, nchw.prediction.step_low_ms);
  EXPECT_DOUBLE_EQ(unstated.prediction.step_high_ms, std::max(nchw.prediction.step_high_ms, nhwc.prediction.step_high_ms));
  EXPECT_DOUBLE_EQ(unstated.prediction.low, std::min(nchw.prediction.low, nhwc.prediction.low));
  EXPECT_DOUBLE_EQ(unstated.prediction.high, std::max(nchw.prediction.high, nhwc.prediction.high));
  // The same tensors are kept: the memory does not move.
  EXPECT_DOUBLE_EQ(unstated.memory.mib, nhwc.memory.mib);
  EXPECT_EQ(PredictionFieldsJson(unstated, 0.8)["uncertainty"]["unknown_channels_last"], true);
  EXPECT_EQ(PredictionFieldsJson(nchw, 0.8)["uncertainty"]["unknown_channels_last"], false);
  // FP32 with TF32 stated off on the RTX 3090, and AMP on a P100 (no tensor cores): no transposes,
  // no format to span.
  const PredictResult fp32 = predict(false, {"data_on_gpu=1", "tf32=0"}),
                      p100 = predict(true, {"data_on_gpu=1"}, "P100-PCIE-16GB");
  EXPECT_FALSE(fp32.unknown_channels_last);
  EXPECT_FALSE(fp32.unknown_tf32);
  EXPECT_FALSE(HasWarning(fp32, "the memory format is not stated"));
  EXPECT_FALSE(p100.unknown_channels_last);
  EXPECT_FALSE(p100.unknown_tf32);
  // TF32 stated on: its convolutions are on tensor cores too.
  EXPECT_TRUE(predict(false, {"data_on_gpu=1", "tf32=1"}).unknown_channels_last);
}

// ResNet-18 in FP32 on an A100, whose TF32 tensor cores run 8x its FP32 CUDA cores' rate: PyTorch
// runs convolutions there by default. Unstated, the point is FP32's and the intervals also hold the
// TF32 job's (channels-last or not); on a T4 (no TF32) or an RTX 3090 (TF32 at the FP32 rate) there
// is nothing to span.
TEST(Unseen, AnUnstatedTf32SpansCudaCoresAndTensorCores) {
  auto predict = [&](const std::string& gpu, const std::vector<std::string>& attrs) {
    return Predict("torchvision/resnet18.onnx", 64, gpu, "", attrs);
  };
  const PredictResult unstated = predict("A100-40GB", {"data_on_gpu=1"}),
                      fp32 = predict("A100-40GB", {"data_on_gpu=1", "tf32=0"}),
                      tf32 = predict("A100-40GB", {"data_on_gpu=1", "tf32=1"}),
                      tf32_nhwc = predict("A100-40GB", {"data_on_gpu=1", "tf32=1", "channels_last=1"});
  EXPECT_TRUE(unstated.unknown_tf32);
  EXPECT_TRUE(unstated.unknown_channels_last);  // through the TF32 job's tensor-core convolutions
  EXPECT_FALSE(fp32.unknown_tf32);
  EXPECT_FALSE(tf32.unknown_tf32);
  EXPECT_TRUE(HasWarning(unstated, "TF32 is not stated"));
  EXPECT_TRUE(HasWarning(unstated, "--attr tf32=1 or 0"));
  EXPECT_FALSE(HasWarning(fp32, "TF32 is not stated"));
  // TF32's step is shorter; the point is PyTorch's default (the convolutions on TF32, the
  // classifier's matmul in FP32): between the two stated jobs, nearer TF32's (ResNet-18's FLOPs
  // are its convolutions'); the intervals hold every stated variant.
  EXPECT_LT(tf32.prediction.step_ms, fp32.prediction.step_ms);
  EXPECT_GT(unstated.prediction.step_ms, tf32.prediction.step_ms);
  EXPECT_LT(unstated.prediction.step_ms, fp32.prediction.step_ms);
  EXPECT_LT(unstated.prediction.step_ms / tf32.prediction.step_ms, 1.05);
  ExpectHolds(unstated, fp32);
  ExpectHolds(unstated, tf32);
  ExpectHolds(unstated, tf32_nhwc);
  EXPECT_DOUBLE_EQ(unstated.prediction.step_low_ms, tf32_nhwc.prediction.step_low_ms);
  EXPECT_DOUBLE_EQ(unstated.prediction.step_high_ms, fp32.prediction.step_high_ms);
  EXPECT_EQ(PredictionFieldsJson(unstated, 0.8)["uncertainty"]["unknown_tf32"], true);
  // A network of matmuls alone (a Transformer): the default runs them in FP32 (PyTorch >= 1.12),
  // so the point is tf32=0's, and the interval holds the job that put them on TF32 (<= 1.11).
  auto transformer = [&](const std::vector<std::string>& attrs) {
    return Predict("transformer6.onnx", 16, "A100-40GB", "", attrs, 1, {{"seq", 128}});
  };
  const PredictResult t_unstated = transformer({"data_on_gpu=1"}), t_fp32 = transformer({"data_on_gpu=1", "tf32=0"}),
                      t_tf32 = transformer({"data_on_gpu=1", "tf32=1"});
  EXPECT_TRUE(t_unstated.unknown_tf32);
  EXPECT_FALSE(t_unstated.unknown_channels_last);  // no convolution
  EXPECT_LT(t_tf32.prediction.step_ms, t_fp32.prediction.step_ms);
  ExpectSamePointAndHolds(t_unstated, t_fp32);
  ExpectHolds(t_unstated, t_tf32);
  const PredictResult t4 = predict("T4", {"data_on_gpu=1"});
  EXPECT_FALSE(t4.unknown_tf32);
  EXPECT_FALSE(t4.unknown_channels_last);
  // The RTX 3090 runs TF32 at its FP32 rate (GeForce Ampere): nothing to span there either.
  const PredictResult rtx = predict("RTX3090", {"data_on_gpu=1"});
  EXPECT_FALSE(rtx.unknown_tf32);
  EXPECT_FALSE(rtx.unknown_channels_last);
  EXPECT_FALSE(HasWarning(rtx, "TF32 is not stated"));
}

TEST(Unseen, EveryPredictionHasAStepTimeInsideItsInterval) {
  for (const auto& [gpu, mig, gpus] : std::vector<std::tuple<std::string, std::string, int>>{
           {"RTX3090", "", 1}, {"A100-80GB", "3g.40gb", 1}, {"T4", "", 1}, {"RTX3090", "", 4}}) {
    PredictResult r = Predict("vgg.onnx", 64, gpu, mig, {"data_on_gpu=1"}, gpus);
    const UtilPrediction& q = r.prediction;
    ASSERT_TRUE(std::isfinite(q.step_ms)) << gpu << " " << mig << " " << gpus;
    EXPECT_GT(q.step_ms, 0);
    EXPECT_LE(q.step_low_ms, q.step_ms);
    EXPECT_GE(q.step_high_ms, q.step_ms);
    if (gpus > 1) {
      ASSERT_TRUE(r.data_parallel.has_value());
      EXPECT_DOUBLE_EQ(q.step_ms, r.data_parallel->step_s * 1e3);  // one rank's
    }
    nlohmann::json j = PredictionFieldsJson(r, 0.8);
    EXPECT_DOUBLE_EQ(j["step_ms"].get<double>(), q.step_ms);
    EXPECT_EQ(j["gpu_measured"].get<bool>(), gpu == "RTX3090");
    EXPECT_EQ(j["unsure"].get<bool>(), r.unsure);
  }
}

// The unstated-pipeline warning asks for what states the cost (loader_ms_per_sample or data on
// the GPU), not for loader_workers, which the user may have given; the service's wording names
// the request's JSON fields.
TEST(Unseen, TheUnstatedPipelineWarningAsksForTheCost) {
  for (const std::string workers : {"loader_workers=0", "loader_workers=4"}) {
    PredictResult r = Predict("resnet50.onnx", 32, "RTX3090", "", {workers});
    ASSERT_TRUE(HasWarning(r, "the input pipeline's cost is not stated")) << workers;
    EXPECT_TRUE(HasWarning(r, "--attr loader_ms_per_sample=MS")) << workers;
    EXPECT_FALSE(HasWarning(r, "loader_workers=N")) << workers;
    EXPECT_FALSE(HasWarning(r, "attrs.")) << workers;
  }
  EXPECT_FALSE(HasWarning(Predict("resnet50.onnx", 32, "RTX3090", "", {"loader_workers=4", "loader_ms_per_sample=2"}),
                          "the input pipeline's cost is not stated"));
  EXPECT_FALSE(HasWarning(Predict("resnet50.onnx", 32, "RTX3090", "", {"data_on_gpu=1"}),
                          "the input pipeline's cost is not stated"));
  JobConfig job;
  job.batch = 32;
  job.wording = InputWording::kApi;
  EXPECT_TRUE(ParseJobAttr("loader_workers=4", &job.attrs).ok());
  Result<PredictResult> api = Trained().Predict(Job("resnet50.onnx", 32), job);
  ASSERT_TRUE(api.ok()) << api.message();
  EXPECT_TRUE(HasWarning(*api, "state it: attrs.loader_ms_per_sample, "));
  EXPECT_TRUE(HasWarning(*api, "attrs.data_on_gpu: true"));
  EXPECT_FALSE(HasWarning(*api, "--attr"));
}

// An interval at a higher level contains the one at a lower level (nested), for the step time
// and utilization, on the training GPU, GPUs without rows (T4, H100) and a MIG slice. ResNet-50
// at batch 32 on the RTX 3090 was not: its step interval was [51.1, 297.0] ms at 0.8 and
// [61.3, 724.3] at 0.9 (the shortest window of the step scores moved its low end).
TEST(Unseen, IntervalsNestAcrossLevels) {
  std::vector<double> levels;
  for (int k = 1; k <= 9; ++k) levels.push_back(0.1 * k);
  for (double l : {0.85, 0.95, 0.99}) levels.push_back(l);
  std::sort(levels.begin(), levels.end());
  for (const auto& [model, batch] : std::vector<std::pair<std::string, int64_t>>{
           {"resnet50.onnx", 32}, {"pointnet.onnx", 32}, {"vgg.onnx", 64}})
    for (const auto& [gpu, mig] : std::vector<std::pair<std::string, std::string>>{
             {"RTX3090", ""}, {"T4", ""}, {"H100", ""}, {"A100-80GB", "3g.40gb"}}) {
      JobConfig job;
      job.batch = batch;
      job.gpu = gpu;
      job.mig_profile = mig;
      const std::vector<CostReport> reports = Job(model, batch);
      UtilPrediction prev;
      for (size_t i = 0; i < levels.size(); ++i) {
        Result<PredictResult> r = Trained().Predict(reports, job, levels[i]);
        ASSERT_TRUE(r.ok()) << r.message();
        const UtilPrediction& q = r->prediction;
        const std::string where = model + " " + gpu + " " + mig + " level " + std::to_string(levels[i]);
        ASSERT_TRUE(std::isfinite(q.step_low_ms) && std::isfinite(q.step_high_ms)) << where;
        if (i > 0) {
          EXPECT_DOUBLE_EQ(q.step_ms, prev.step_ms) << where;  // the point does not depend on the level
          EXPECT_LE(q.step_low_ms, prev.step_low_ms) << where;
          EXPECT_GE(q.step_high_ms, prev.step_high_ms) << where;
          EXPECT_LE(q.low, prev.low) << where;
          EXPECT_GE(q.high, prev.high) << where;
        }
        prev = q;
      }
    }
}

// Fast GPUs expose the host: with the same host work per step, a faster GPU
// (T4 -> A100 40GB -> H100) or a bigger MIG slice (1g -> 7g) never raises the
// utilization of a job whose step has host work (PointNet at batch 8, data on the GPU).
TEST(Unseen, FasterGpusAndBiggerSlicesNeverRaiseUtilization) {
  auto util = [](const std::string& gpu, const std::string& mig) {
    return Predict("pointnet.onnx", 8, gpu, mig, {"data_on_gpu=1", "loader_workers=0"}).prediction.util;
  };
  const double t4 = util("T4", ""), a100 = util("A100-40GB", ""), h100 = util("H100", "");
  EXPECT_GE(t4, a100);
  EXPECT_GE(a100, h100);
  EXPECT_GT(t4, h100 + 1);  // and it does fall
  const double g1 = util("A100-80GB", "1g.10gb"), g2 = util("A100-80GB", "2g.20gb"),
               g3 = util("A100-80GB", "3g.40gb"), g7 = util("A100-80GB", "7g.80gb");
  EXPECT_GE(g1, g2);
  EXPECT_GE(g2, g3);
  EXPECT_GE(g3, g7);
  EXPECT_GT(g1, g7 + 1);
}

}  // namespace
}  // namespace gpucast

namespace gpucast {
namespace {

// The sorted scores a row predicted at `util` is calibrated by, for a model whose utilization
// transfer scores have no GPU type (one group): TransferUtilGroupsFor's one group, or none.
std::vector<double> OneGroupFor(const UtilModel& m, double util) {
  const std::vector<std::vector<double>> g = m.TransferUtilGroupsFor(util);
  EXPECT_LE(g.size(), 1u);
  return g.empty() ? std::vector<double>{} : g[0];
}

// The utilization transfer score is the logit error beyond the row's band
// (hand values: UtilLogit(u) = log((u + 5) / (105 - u))).
TEST(Unseen, UtilTransferScoreIsTheLogitErrorBeyondTheBand) {
  EXPECT_DOUBLE_EQ(TransferUtilScore(50, 50, 50, 50), 0);
  EXPECT_NEAR(TransferUtilScore(20, 50, 50, 50), std::log(25.0 / 85) - 0, 1e-12);
  // Inside the band: 0; beyond it, from its end.
  EXPECT_DOUBLE_EQ(TransferUtilScore(35, 50, 30, 60), 0);
  EXPECT_NEAR(TransferUtilScore(20, 50, 30, 60), std::log(25.0 / 85) - std::log(35.0 / 75), 1e-12);
  EXPECT_NEAR(TransferUtilScore(90, 50, 30, 60), std::log(95.0 / 15) - std::log(65.0 / 45), 1e-12);
  // Busy time e^-0.4 of its prediction, idle exact: util 98 (busy 98, idle 2) -> 65.69 / 67.69.
  const double gpu_bound = 100 * 98 * std::exp(-0.4) / (98 * std::exp(-0.4) + 2);
  EXPECT_NEAR(TransferUtilScore(gpu_bound, 98, 98, 98), std::log(102.05 / 7.95) - std::log(103.0 / 7), 2e-3);
}

// A transfer error that is all busy time (the training GPUs' kernels ran up
// to e^0.4 slower or faster than predicted, their idle time as predicted)
// moves a GPU-bound job's utilization little and an idle-bound job's more; the
// rule without utilization scores (the busy time held, the whole step error
// idle time) lowered the GPU-bound job's low end by a quarter.
TEST(Unseen, APureBusyTimeTransferErrorBarelyWidensAGpuBoundJob) {
  // Two kinds of training rows, GPU-bound (busy 98, idle 2) and idle-bound (20, 80), their busy time
  // e^e off for e in -0.4, -0.3, ..., 0.4 (18 scores; the GPU-bound rows' are not enough alone).
  std::vector<double> step_scores;
  std::vector<std::pair<double, double>> util_scores;
  for (const auto& [busy, idle] : std::vector<std::pair<double, double>>{{98, 2}, {20, 80}})
    for (int k = -4; k <= 4; ++k) {
      const double b = busy * std::exp(0.1 * k);
      step_scores.push_back(std::log((b + idle) / (busy + idle)));
      util_scores.push_back({busy, TransferUtilScore(100 * b / (b + idle), busy, busy, busy)});
    }
  UtilModel host_only = Trained().model(), old_rule = host_only, split = host_only;
  ASSERT_TRUE(host_only.transfer_calibration().empty());  // one training GPU type
  old_rule.set_transfer_calibration_scores(step_scores);
  split.set_transfer_calibration_scores(step_scores);
  split.set_transfer_util_calibration_scores(util_scores);
  // A row predicted at 99 % or more is calibrated by all 18, one at 20-98 % by the idle-bound rows'
  // 9 (fewer than kMinGroupScores: the busy-held rule), one under 20 % by none.
  EXPECT_EQ(OneGroupFor(split, 99).size(), 18u);
  EXPECT_TRUE(OneGroupFor(split, 50).empty());
  EXPECT_TRUE(OneGroupFor(split, 10).empty());
  PredictResult last;
  auto low_end = [&](const UtilModel& m, const std::string& model, int64_t batch, RowRisk* risk = nullptr) {
    Predictor pr(Trained().info(), m);
    JobConfig job;
    job.batch = batch;
    job.gpu = "A100-40GB";
    for (const char* a : {"data_on_gpu=1", "loader_workers=0"}) EXPECT_TRUE(ParseJobAttr(a, &job.attrs).ok()) << a;
    Result<PredictResult> r = pr.Predict(Job(model, batch), job);
    EXPECT_TRUE(r.ok()) << r.message();
    if (risk) *risk = r->risk;
    last = *r;
    return std::expm1(std::log1p(r->prediction.util) - r->risk.low);  // the band's low end, before calibration
  };
  RowRisk rk;
  const double bound_host = low_end(host_only, "resnet50.onnx", 256);
  const double bound_old = low_end(old_rule, "resnet50.onnx", 256);
  const double bound_split = low_end(split, "resnet50.onnx", 256, &rk);
  ASSERT_GT(bound_host, 90) << "ResNet-50 at batch 256, data on the GPU: GPU-bound even on a host 2x slower";
  const double longer = ShortestWindow(old_rule.transfer_calibration(), 0.8).second;  // the step window's high end
  // The shortest 16 of the 18 sorted scores: all but the GPU-bound rows busy e^0.3 and e^0.4.
  EXPECT_NEAR(longer, std::log((98 * std::exp(0.2) + 2) / 100), 1e-12);
  EXPECT_NEAR(bound_old, bound_host * std::exp(-longer), 1e-6);
  EXPECT_GT(bound_host - bound_old, 15);  // the old rule: a quarter lower
  EXPECT_LT(bound_host - bound_split, 5);  // a busy-time error: a few points
  auto [z_lo, z_hi] = ShortestWindow(OneGroupFor(split, 99.5), 0.8);
  EXPECT_LT(z_lo, 0);
  EXPECT_DOUBLE_EQ(rk.transfer_util_fall, -z_lo);
  EXPECT_DOUBLE_EQ(rk.transfer_util_rise, z_hi);
  EXPECT_NEAR(bound_split, LogitToUtil(UtilLogit(bound_host) + z_lo), 1e-9);
  // Said: the warning gives both windows, --json the utilization one.
  EXPECT_TRUE(HasWarning(last, "x higher (the step-time and utilization errors of the training GPUs")) << last.warnings[0];
  nlohmann::json j = PredictionFieldsJson(last, 0.8);
  EXPECT_DOUBLE_EQ(j["uncertainty"]["gpu_transfer_util_fall_logit"].get<double>(), -z_lo);
  EXPECT_DOUBLE_EQ(j["uncertainty"]["gpu_transfer_util_rise_logit"].get<double>(), z_hi);
  // EfficientNet at batch 256 (its many small kernels' launches): more idle than the GPU-bound rows,
  // and too few idle-bound rows: the busy-held rule, as a model without utilization scores.
  const double idle_host = low_end(host_only, "efficientnet.onnx", 256);
  const double idle_old = low_end(old_rule, "efficientnet.onnx", 256);
  const double idle_split = low_end(split, "efficientnet.onnx", 256, &rk);
  ASSERT_LT(idle_host, 50) << "EfficientNet at batch 256 on a host 2x slower: mostly idle";
  EXPECT_DOUBLE_EQ(idle_split, idle_old);
  EXPECT_EQ(rk.transfer_util_fall, 0);
  EXPECT_TRUE(HasWarning(last, "utilization as if all of it were idle time")) << last.warnings[0];
  // With ten idle-bound rows it is calibrated by them, and moves more than the GPU-bound job.
  util_scores.push_back({20, TransferUtilScore(100 * 20 * std::exp(-0.4) / (20 * std::exp(-0.4) + 80), 20, 20, 20)});
  split.set_transfer_util_calibration_scores(util_scores);
  ASSERT_EQ(OneGroupFor(split, 50).size(), 10u);
  const double idle_split10 = low_end(split, "efficientnet.onnx", 256);
  EXPECT_GT(idle_host - idle_split10, bound_host - bound_split);
  EXPECT_NEAR(idle_split10, LogitToUtil(UtilLogit(idle_host) + ShortestWindow(OneGroupFor(split, 50), 0.8).first),
              1e-9);
}

// A training row at least as idle as the prediction calibrates it: GPU-bound
// rows' errors do not narrow an idle-bound row's band (hand values).
TEST(Unseen, UtilTransferScoresOfRowsAtLeastAsIdle) {
  UtilModel m = Trained().model();
  std::vector<std::pair<double, double>> s;
  for (int k = 0; k < 12; ++k) s.push_back({97 + 0.1 * k, -0.01 * k});  // GPU-bound rows
  for (int k = 0; k < 9; ++k) s.push_back({30 + k, -0.2 * k});          // idle-bound rows
  m.set_transfer_util_calibration_scores(s);
  EXPECT_EQ(OneGroupFor(m, 100).size(), 21u);
  EXPECT_EQ(OneGroupFor(m, 97.05).size(), 10u);  // 9 idle-bound + the one at 97
  EXPECT_EQ(OneGroupFor(m, 97).size(), 10u);
  EXPECT_TRUE(OneGroupFor(m, 96).empty());  // 9 < kMinGroupScores
  const std::vector<double> z = OneGroupFor(m, 97);
  EXPECT_TRUE(std::is_sorted(z.begin(), z.end()));
  EXPECT_NEAR(z.front(), -1.6, 1e-12);
  EXPECT_DOUBLE_EQ(z.back(), 0);
}

// One fold of leave-one-GPU-out on the shared rows: the RTX 3090's 52 Lucid
// rows held out; trained on the MIGProfiler A100 rows (utilization and step)
// and Pollux' single-T4 runs (step only). With the host scenario alone the
// 80% intervals of the held-out GPU held about half its rows (evaluate
// --split logo); the GPU-transfer scores (how wrong the step time was on
// each training GPU predicted from the other) widen an unmeasured GPU's band.
// Fitted without the power-limited clock: the widening is what this test is about. With the
// clock (the default since pred14) the T4's step is predicted better, its transfer scores are
// narrower and this fold holds 0.69 (docs/predictor.md, "The power-limited clock", generated).
TEST(Unseen, AnUnmeasuredGpuIsWidenedByTheStepTransferErrorOfTheOtherGpus) {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(cat.ok()) << cat.message();
  DatasetOptions boost_clock;
  boost_clock.power_limited_clock = false;
  auto data = BuildDataset({DataDir() + "/lucid/single_data.csv", DataDir() + "/migprofiler-a100/bert_train.csv",
                            DataDir() + "/pollux-t4"},
                           *cat, boost_clock);
  ASSERT_TRUE(data.ok()) << data.message();
  const std::string held = "RTX3090";
  Matrix xtr, xte;
  std::vector<double> ytr, yte;
  std::vector<std::string> gte;
  FitOptions fo;
  for (size_t i = 0; i < data->rows.size(); ++i) {
    if (data->RowGpu(i) == held) {
      xte.push_back(data->x[i]);
      yte.push_back(data->rows[i].gpu_util);
      gte.push_back(held);
      continue;
    }
    xtr.push_back(data->x[i]);
    ytr.push_back(data->rows[i].gpu_util);
    fo.step_s.push_back(data->step_s[i]);
    fo.group.push_back(data->group[i]);
    fo.row_gpu.push_back(data->RowGpu(i));
  }
  ASSERT_EQ(xte.size(), 52u);
  ASSERT_TRUE(std::none_of(fo.row_gpu.begin(), fo.row_gpu.end(), [&](const std::string& g) { return g == held; }));
  auto cols = SelectFeatures(data->feature_names, DefaultFeatureSet("physics"));
  ASSERT_TRUE(cols.ok()) << cols.message();
  auto m = UtilModel::Fit(xtr, ytr, data->feature_names, *cols, "physics", nullptr, 0, fo);
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_FALSE(m->GpuMeasured(held));
  // The T4's rows are step times only: its utilization was never measured, so
  // it is as unmeasured as the held-out GPU (its host band and transfer apply).
  EXPECT_TRUE(m->GpuMeasured("A100-80GB"));
  EXPECT_FALSE(m->GpuMeasured("T4"));
  EXPECT_EQ(m->measured_gpus(), std::vector<std::string>{"A100-80GB"});
  {
    // Fitted on the T4's step-only rows alone (as the transfer pass fits when
    // the A100 is held out): no GPU's utilization is known, so none is measured
    // (an empty list here is not the 'not recorded' of an old model file).
    Matrix xt;
    std::vector<double> yt;
    FitOptions ft;
    ft.calibrate = false;
    for (size_t i = 0; i < xtr.size(); ++i) {
      if (fo.row_gpu[i] != "T4") continue;
      xt.push_back(xtr[i]), yt.push_back(ytr[i]);
      ft.step_s.push_back(fo.step_s[i]), ft.group.push_back(fo.group[i]), ft.row_gpu.push_back("T4");
    }
    ASSERT_GT(xt.size(), 10u);
    auto mt = UtilModel::Fit(xt, yt, data->feature_names, *cols, "physics", nullptr, 0, ft);
    ASSERT_TRUE(mt.ok()) << mt.message();
    EXPECT_TRUE(mt->measured_gpus().empty());
    EXPECT_FALSE(mt->GpuMeasured("T4"));
    EXPECT_FALSE(mt->GpuMeasured("RTX3090"));
  }
  // Two training GPU types with step times (A100-80GB, T4): each predicted from the other.
  ASSERT_FALSE(m->transfer_calibration().empty());
  UtilModel host_only = *m;
  host_only.set_transfer_calibration_scores({});
  auto coverage = [&](const UtilModel& model, double* width) {
    auto p = model.Predict(xte, 0.8, &gte);
    EXPECT_TRUE(p.ok()) << p.message();
    size_t in = 0;
    std::vector<double> w;
    for (size_t j = 0; j < p->size(); ++j) {
      in += (*p)[j].low <= yte[j] && yte[j] <= (*p)[j].high;
      w.push_back((*p)[j].high - (*p)[j].low);
    }
    std::sort(w.begin(), w.end());
    *width = w[w.size() / 2];
    return static_cast<double>(in) / p->size();
  };
  double w_new = 0, w_old = 0;
  const double c_new = coverage(*m, &w_new), c_old = coverage(host_only, &w_old);
  // The point predictions are the same; only the unmeasured GPU's band grows.
  EXPECT_GT(w_new, w_old);
  EXPECT_GT(c_new, c_old);
  EXPECT_GE(c_new, 0.75) << "host scenario alone: " << c_old << ", median width " << w_old << " -> " << w_new;
  // The band carries the window it was widened by; the step band grows by it too.
  std::vector<RowRisk> rk_new, rk_old;
  ASSERT_TRUE(m->Risks(xte, &gte, 0.8).ok());
  rk_new = *m->Risks(xte, &gte, 0.8);
  rk_old = *host_only.Risks(xte, &gte, 0.8);
  // Each score with its GPU type; the window is each type's own, the wider of the two on each side
  // (GroupedWindow: 2 types at 0.8), not one pooled over their rows.
  std::map<std::string, std::vector<double>> by_gpu;
  ASSERT_EQ(m->transfer_gpus().size(), m->transfer_calibration().size());
  for (size_t k = 0; k < m->transfer_gpus().size(); ++k) by_gpu[m->transfer_gpus()[k]].push_back(m->transfer_calibration()[k]);
  ASSERT_EQ(by_gpu.size(), 2u);
  EXPECT_EQ(by_gpu.count("A100-80GB") + by_gpu.count("T4"), 2u);
  auto [a, b] = m->TransferStepWindow(0.8);
  EXPECT_EQ(std::make_pair(a, b), GroupedWindow({by_gpu["A100-80GB"], by_gpu["T4"]}, 0.8));
  for (const auto& [gpu, v] : by_gpu) {
    EXPECT_LE(a, ShortestWindow(v, 0.8).first) << gpu;
    EXPECT_GE(b, ShortestWindow(v, 0.8).second) << gpu;
  }
  EXPECT_GT(b, 0);  // some training GPU's steps were longer than predicted from the other
  EXPECT_LT(a, 0);  // and some shorter
  for (size_t j = 0; j < rk_new.size(); ++j) {
    EXPECT_DOUBLE_EQ(rk_new[j].transfer_longer, b);
    EXPECT_DOUBLE_EQ(rk_new[j].transfer_shorter, -a);
    EXPECT_GE(rk_new[j].low, rk_old[j].low);
    EXPECT_NEAR(rk_new[j].step_high, rk_old[j].step_high + b, 1e-12);
  }
  // The predictor says so (warning and --json), for a job on the held-out GPU.
  PredictorInfo info;
  info.feature_names = data->feature_names;
  info.schema_name = data->schema_name;
  info.schema_version = data->schema_version;
  Predictor pr(info, *m);
  JobConfig job;
  job.batch = 32;
  job.gpu = held;
  job.attrs.data_on_gpu = true;
  Result<PredictResult> res = pr.Predict(Job("resnet50.onnx", 32), job);
  ASSERT_TRUE(res.ok()) << res.message();
  EXPECT_FALSE(res->gpu_measured);
  EXPECT_TRUE(HasWarning(*res, "x longer or ")) << res->warnings[0];
  nlohmann::json j = PredictionFieldsJson(*res, 0.8);
  EXPECT_DOUBLE_EQ(j["uncertainty"]["gpu_transfer_step_longer_log"].get<double>(), b);
  EXPECT_DOUBLE_EQ(j["uncertainty"]["gpu_transfer_step_shorter_log"].get<double>(), -a);
  // A training GPU's rows (measured) are not widened.
  Matrix xa;
  std::vector<std::string> ga;
  for (size_t i = 0; i < xtr.size(); ++i)
    if (fo.row_gpu[i] == "A100-80GB") xa.push_back(xtr[i]), ga.push_back("A100-80GB");
  ASSERT_FALSE(xa.empty());
  auto pa = m->Predict(xa, 0.8, &ga);
  auto pb = host_only.Predict(xa, 0.8, &ga);
  ASSERT_TRUE(pa.ok() && pb.ok());
  const auto ra = m->Risks(xa, &ga, 0.8);
  ASSERT_TRUE(ra.ok());
  for (size_t j = 0; j < pa->size(); ++j) {
    EXPECT_EQ((*ra)[j].transfer_longer, 0);
    EXPECT_DOUBLE_EQ((*pa)[j].low, (*pb)[j].low);
    EXPECT_DOUBLE_EQ((*pa)[j].high, (*pb)[j].high);
  }
}

// The power-limited clock is the model's setting (PredictorInfo::power_limited_clock, a key of
// the model file): Predict computes every job's features with it, whatever the caller's JobConfig
// says, so every front end that loads the file answers alike. The Lucid rows are all RTX 3090s,
// which hold their boost clock (SustainedComputeFraction 1): trained with the clock on, the rows'
// features and the fit are the same as without, and on a T4 (0.70214 of its boost-clock peaks,
// by hand in gpu_specs_test.cc) the compute-bound part of the roofline is 1 / 0.70214 as long,
// so the step grows by that extra compute over the fitted eff_compute (physics_regressor.cc:
// gpu = est_compute / eff_compute + ...; a VGG step with data on the GPU is GPU-bound, no loader).
TEST(PowerLimitedClock, TheModelFileRecordsItAndEveryPredictionUsesIt) {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(cat.ok()) << cat.message();
  DatasetOptions on_opts, off_opts;
  on_opts.power_limited_clock = true;
  off_opts.power_limited_clock = false;
  auto on_data = BuildDataset({DataDir() + "/lucid/single_data.csv"}, *cat, on_opts);
  auto off_data = BuildDataset({DataDir() + "/lucid/single_data.csv"}, *cat, off_opts);
  ASSERT_TRUE(on_data.ok()) << on_data.message();
  ASSERT_TRUE(off_data.ok()) << off_data.message();
  EXPECT_EQ(on_data->x, off_data->x);  // RTX 3090 rows: fraction 1
  auto trained_off = Predictor::Train(*off_data, "physics", 1);
  ASSERT_TRUE(trained_off.ok()) << trained_off.message();
  const Predictor& off = *trained_off;
  EXPECT_FALSE(off.info().power_limited_clock);
  auto trained_on = Predictor::Train(*on_data, "physics", 1);
  ASSERT_TRUE(trained_on.ok()) << trained_on.message();
  EXPECT_TRUE(trained_on->info().power_limited_clock);
  // Through the model file, as predict, serve and the plugins load it.
  auto file = ModelFileJson(*trained_on);
  ASSERT_TRUE(file.ok()) << file.message();
  EXPECT_EQ((*file)["power_limited_clock"], true);
  auto on = ParseModelFile(file->dump(), "on.json", CurrentFeatureSchema());
  ASSERT_TRUE(on.ok()) << on.message();
  EXPECT_TRUE(on->info().power_limited_clock);
  const auto* ph_on = dynamic_cast<const PhysicsModel*>(&on->model().regressor());
  const auto* ph_off = dynamic_cast<const PhysicsModel*>(&off.model().regressor());
  ASSERT_TRUE(ph_on && ph_off);
  EXPECT_EQ(ph_on->Parameters(), ph_off->Parameters());  // RTX 3090 rows: the same fit
  double eff_compute = 0;
  for (const auto& [name, value] : ph_on->Parameters())
    if (name == "eff_compute") eff_compute = value;
  ASSERT_GT(eff_compute, 0);

  JobConfig job;
  job.batch = 64;
  job.gpu = "T4";
  ASSERT_TRUE(ParseJobAttr("data_on_gpu=1", &job.attrs).ok());
  const std::vector<CostReport> vgg = Job("vgg.onnx", 64);
  auto a = off.Predict(vgg, job);
  auto b = on->Predict(vgg, job);
  ASSERT_TRUE(a.ok() && b.ok()) << a.message() << b.message();
  const std::vector<std::string>& names = CurrentFeatureSchema().names;
  const size_t c = std::find(names.begin(), names.end(), "est_compute_ms") - names.begin();
  ASSERT_LT(c, names.size());
  const double compute_off = a->features[c], compute_on = b->features[c];
  ASSERT_GT(compute_off, 0);
  EXPECT_NEAR(compute_on / compute_off, 1 / 0.70214, 1e-4);
  EXPECT_GT(b->prediction.step_ms, a->prediction.step_ms);
  EXPECT_NEAR(b->prediction.step_ms - a->prediction.step_ms, (compute_on - compute_off) / eff_compute,
              1e-9 * b->prediction.step_ms);
  // The caller's JobConfig does not switch it: the model's setting applies.
  JobConfig asked = job;
  asked.power_limited_clock = true;
  auto c_off = off.Predict(vgg, asked);
  ASSERT_TRUE(c_off.ok()) << c_off.message();
  EXPECT_EQ(c_off->prediction.step_ms, a->prediction.step_ms);
  // On the RTX 3090 (fraction 1) the two models answer alike.
  job.gpu = "RTX3090";
  auto ra = off.Predict(vgg, job), rb = on->Predict(vgg, job);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->prediction.step_ms, rb->prediction.step_ms);
  EXPECT_EQ(ra->prediction.util, rb->prediction.util);
  // A model file from before the setting (no key) reads as off: the T4 answer of the off model.
  nlohmann::json old = *file;
  old.erase("power_limited_clock");
  auto read_old = ParseModelFile(old.dump(), "old.json", CurrentFeatureSchema());
  ASSERT_TRUE(read_old.ok()) << read_old.message();
  EXPECT_FALSE(read_old->info().power_limited_clock);
  job.gpu = "T4";
  auto o = read_old->Predict(vgg, job);
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_EQ(o->prediction.step_ms, a->prediction.step_ms);
  // predict --json and POST /v1/predict say which (PredictionJson): the model's setting.
  EXPECT_EQ(PredictionJson(off, *a, job, 0.8)["power_limited_clock"], false);
  EXPECT_EQ(PredictionJson(*on, *b, job, 0.8)["power_limited_clock"], true);
  EXPECT_EQ(PredictionJson(*read_old, *o, job, 0.8)["power_limited_clock"], false);
}

}  // namespace
}  // namespace gpucast
