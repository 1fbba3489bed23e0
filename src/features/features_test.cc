#include "features/features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "cost/job_cost.h"
#include "cost/test_graph.h"
#include "features/gpu_specs.h"
#include "features/memory.h"

namespace gpucast {
namespace {

using testing::GraphBuilder;
using testing::IntAttr;

// x[2,4] -> Gemm(w[3,4]ᵀ, b[3]) -> y[2,3] -> Relu -> r[2,3], batch 2.
CostReport TinyReport(bool amp = false) {
  GraphBuilder b("tiny.onnx", 2);
  b.Data("x", {2, 4}).Param("w", {3, 4}).Param("b", {3}).Value("y", {2, 3}).Value("r", {2, 3});
  b.Op("Gemm", "fc", {"x", "w", "b"}, {"y"}).attrs["transB"] = IntAttr(1);
  b.Op("Relu", "relu", {"y"}, {"r"});
  Result<CostReport> r = AnalyzeCost(b.graph(), CostOptions{amp});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? r.value() : CostReport{};
}

std::map<std::string, double> Named(const std::vector<double>& v) {
  std::map<std::string, double> m;
  const auto& names = CurrentFeatureSchema().names;
  EXPECT_EQ(v.size(), names.size());
  for (size_t i = 0; i < names.size() && i < v.size(); ++i) m[names[i]] = v[i];
  return m;
}

TEST(FeatureSchema, NamedVersionedUnique) {
  const FeatureSchema& s = CurrentFeatureSchema();
  EXPECT_EQ(s.name, "gpucast-features");
  EXPECT_EQ(s.version, 2);
  std::set<std::string> unique(s.names.begin(), s.names.end());
  EXPECT_EQ(unique.size(), s.names.size());
  for (const char* paper : {"total_flops", "params", "n_conv_layers", "n_linear_layers",
                            "n_activation_layers", "n_other_layers", "batch_size"})
    EXPECT_TRUE(unique.count(paper)) << paper;
}

TEST(ComputeFeatures, TinyGraphByHand) {
  // Gemm: 2·3·4 = 24 MACs -> 48 + 6 bias = 54 forward; dW 48 + db 6 = 54 backward (x is data).
  // Relu: 6 forward, 6 backward.
  JobConfig job;
  job.batch = 2;
  job.attrs.loader_workers = 3;
  Result<std::vector<double>> v = ComputeFeatures({TinyReport()}, job);
  ASSERT_TRUE(v.ok()) << v.message();
  std::map<std::string, double> f = Named(*v);
  EXPECT_EQ(f["total_flops"], 120);
  EXPECT_EQ(f["forward_flops"], 60);
  EXPECT_EQ(f["params"], 15);
  EXPECT_EQ(f["n_conv_layers"], 0);
  EXPECT_EQ(f["n_linear_layers"], 1);
  EXPECT_EQ(f["n_activation_layers"], 1);
  EXPECT_EQ(f["n_other_layers"], 0);
  EXPECT_EQ(f["batch_size"], 2);
  EXPECT_EQ(f["flops_matmul"], 108);
  EXPECT_EQ(f["flops_activation"], 12);
  EXPECT_EQ(f["activation_bytes"], 48);
  EXPECT_EQ(f["weight_bytes"], 60);
  EXPECT_EQ(f["input_bytes_per_sample"], 16);
  EXPECT_EQ(f["input_bytes_per_step"], 32);
  EXPECT_EQ(f["node_count"], 2);
  EXPECT_EQ(f["amp"], 0);
  EXPECT_EQ(f["loader_workers"], 3);
  EXPECT_EQ(f["loader_workers_known"], 1);
  EXPECT_EQ(f["data_on_gpu"], 0);
  EXPECT_EQ(f["data_on_gpu_known"], 0);
  EXPECT_EQ(f["rl_env_known"], 0);
  // Roofline on the RTX 3090, all memory-bound here:
  //   Gemm forward reads x 32 B + weights 60 B, writes y 24 B = 116 B; backward 2·116;
  //   weight update 16 B × 15 params = 240. Relu forward 24 + 24, backward 96.
  //   bytes 116 + 232 + 240 + 48 + 96 = 732. Kernels: Gemm 1 + 2 + 1, Relu 1 + 1 = 6.
  const double busy_s = 732 / 936e9;
  EXPECT_EQ(f["kernel_count"], 6);
  EXPECT_DOUBLE_EQ(f["est_gpu_busy_ms"], busy_s * 1e3);
  EXPECT_DOUBLE_EQ(f["est_launch_ms"], 6 * 10e-6 * 1e3);
  EXPECT_DOUBLE_EQ(f["arithmetic_intensity"], 120.0 / 732);
  EXPECT_DOUBLE_EQ(f["est_util_launch_bound"], 100 * busy_s / 60e-6);
  EXPECT_DOUBLE_EQ(f["log10_total_flops"], std::log10(121.0));
}

// h = x @ W1 on 16 rows, the head h[mask] @ W2 on the rows a mask selects, sized by the loader as
// all 16 (TensorInfo::selection_bound).
CostReport MaskedHeadReport() {
  GraphBuilder b("mlm.onnx", 16);
  b.Data("x", {16, 32}).Data("mask", {16}, 9).Param("W1", {32, 64}).Param("W2", {64, 1000});
  b.Value("h", {16, 64}).Value("nz", {1, 16}, testing::kInt64).Value("idx", {16, 1}, testing::kInt64);
  b.Value("sel", {16, 64}).Value("logits", {16, 1000}).SelectionBound("nz");
  b.Op("MatMul", "enc", {"x", "W1"}, {"h"});
  b.Op("NonZero", "nonzero", {"mask"}, {"nz"});
  b.Op("Transpose", "tr", {"nz"}, {"idx"});
  b.Op("GatherND", "pick", {"h", "idx"}, {"sel"});
  b.Op("MatMul", "head", {"sel", "W2"}, {"logits"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? r.value() : CostReport{};
}

// selected_fraction scales the selection's nodes in the features and the memory estimate, as
// SelectionShare does; unstated, the upper bound; on a graph without a selection, nothing.
TEST(ComputeFeatures, SelectedFractionScalesTheSelectionsNodes) {
  const CostReport bound = MaskedHeadReport();
  ASSERT_EQ(bound.SelectionBoundNodes(), 3);
  JobConfig job;
  job.batch = 16;
  JobConfig stated = job;
  ASSERT_TRUE(ParseJobAttr("selected_fraction=0.25", &stated.attrs).ok());
  Result<CostReport> quarter = SelectionShare(bound, 0.25);
  ASSERT_TRUE(quarter.ok());
  Result<std::vector<double>> upper = ComputeFeatures({bound}, job), scaled = ComputeFeatures({bound}, stated),
                              by_hand = ComputeFeatures({*quarter}, job);
  ASSERT_TRUE(upper.ok() && scaled.ok() && by_hand.ok());
  EXPECT_EQ(*scaled, *by_hand);
  std::map<std::string, double> u = Named(*upper), q = Named(*scaled);
  // The head: 16 x 64 x 1000 MACs, forward 2,048,000 FLOPs, backward twice that: a quarter of it.
  EXPECT_EQ(u["flops_matmul"] - q["flops_matmul"], 0.75 * 3 * 2048000);
  EXPECT_EQ(q["kernel_count"], u["kernel_count"]);  // the same kernels launch
  EXPECT_EQ(q["params"], u["params"]);
  Result<MemoryEstimate> mu = EstimateMemory({bound}, job), mq = EstimateMemory({bound}, stated);
  ASSERT_TRUE(mu.ok() && mq.ok());
  EXPECT_LT(mq->activations_mib, mu->activations_mib);
  EXPECT_EQ(mq->weights_mib, mu->weights_mib);
  // No selection in the graph: the fact changes nothing.
  Result<std::vector<double>> tiny = ComputeFeatures({TinyReport()}, job), tiny_stated = ComputeFeatures({TinyReport()}, stated);
  ASSERT_TRUE(tiny.ok() && tiny_stated.ok());
  EXPECT_EQ(*tiny, *tiny_stated);
}

TEST(ParseJobAttr, SelectedFraction) {
  JobAttrs a;
  EXPECT_FALSE(a.selected_fraction.has_value());
  ASSERT_TRUE(ParseJobAttr("selected_fraction=0.15", &a).ok());
  EXPECT_EQ(a.selected_fraction, 0.15);
  ASSERT_TRUE(ParseJobAttr("selected_fraction=1", &a).ok());
  EXPECT_EQ(a.selected_fraction, 1.0);
  for (const char* bad : {"0", "1.5", "-0.1", "1e3"})
    EXPECT_EQ(ParseJobAttr(std::string("selected_fraction=") + bad, &a).message(),
              std::string("job attribute 'selected_fraction': value '") + bad +
                  "' is out of range (want > 0 and <= 1)");
  for (const char* bad : {"nan", "inf", "", "0x1p-2", "15%"})
    EXPECT_EQ(ParseJobAttr(std::string("selected_fraction=") + bad, &a).message(),
              std::string("job attribute 'selected_fraction': value '") + bad +
                  "' is not a number (the fraction of elements a mask selects)");
}

TEST(ComputeFeatures, ReportsOfOneJobAreSummed) {
  JobConfig job;
  job.batch = 2;
  Result<std::vector<double>> one = ComputeFeatures({TinyReport()}, job);
  Result<std::vector<double>> two = ComputeFeatures({TinyReport(), TinyReport()}, job);
  ASSERT_TRUE(one.ok() && two.ok());
  std::map<std::string, double> a = Named(*one), b = Named(*two);
  for (const char* k : {"total_flops", "params", "n_linear_layers", "kernel_count", "est_gpu_busy_ms"})
    EXPECT_DOUBLE_EQ(b[k], 2 * a[k]) << k;
  EXPECT_EQ(b["batch_size"], 2);
}

TEST(EstimateStep, MultiNetworkPassesAndOneUpdatePerNetwork) {
  // Kernels of one tiny pass, by hand: Gemm forward 1, backward 2 (dX/db and dW),
  // update 1; Relu forward 1, backward 1: 6. Its update reads/writes 16 B per param (15).
  const GpuSpec& gpu = *FindGpuSpec("RTX3090");
  const double update_s = 16.0 * 15 / gpu.mem_bandwidth;
  StepEstimate pass = EstimateStep({TinyReport()}, gpu, false);
  EXPECT_EQ(pass.kernels, 6);
  // Three passes of one network (DCGAN's D): 3 × 5 pass kernels + 1 update, not 3 × 6.
  Result<CostReport> d3 = StepReport(TinyReport(), 3, 0);
  ASSERT_TRUE(d3.ok()) << d3.message();
  StepEstimate three = EstimateStep({*d3}, gpu, false);
  EXPECT_EQ(three.kernels, 3 * 5 + 1);
  EXPECT_NEAR(three.busy_s, 3 * (pass.busy_s - update_s) + update_s, 1e-15);
  // Half a training pass plus one forward pass (TD3's actor): forward kernels 2 × 1.5,
  // backward kernels 3 × 0.5, update 0.5: 5, not the 6 + 6 + 2 of whole copies.
  Result<CostReport> actor = StepReport(TinyReport(), 0.5, 1);
  ASSERT_TRUE(actor.ok()) << actor.message();
  StepEstimate a = EstimateStep({*actor}, gpu, false);
  EXPECT_NEAR(a.launch_s, 5 * kHostSecondsPerKernel, 1e-15);
  EXPECT_EQ(a.kernels, 5);
  // Features of the job: params once per network, layer counts once per network.
  JobConfig job;
  job.batch = 2;
  Result<std::vector<double>> f = ComputeFeatures({TinyReport(), *d3}, job);
  ASSERT_TRUE(f.ok()) << f.message();
  std::map<std::string, double> m = Named(*f);
  EXPECT_EQ(m["params"], 2 * 15);
  EXPECT_EQ(m["n_linear_layers"], 2);
  EXPECT_EQ(m["total_flops"], 4 * 120);
  EXPECT_EQ(m["kernel_count"], 6 + 16);
}

TEST(EstimateStep, AFusedExportIsOneKernelMovingItsInputAndResult) {
  // F.silu exported as Sigmoid(h) -> Mul(h, s) between two Gemms (h, s, m: 2x16 fp32 = 128 B).
  // PyTorch runs silu as one kernel forward and one backward, reading h and writing m: 256 B
  // forward, 2 x 256 B backward. Node by node the chain was 4 kernels moving sig 128 + 128 and
  // mul 256 + 128 forward, twice that backward: 3 x 640 = 1920 B.
  GraphBuilder b("silu.onnx", 2);
  b.Data("x", {2, 8}).Param("w", {16, 8}).Value("h", {2, 16}).Param("w2", {4, 16}).Value("y", {2, 4});
  b.Value("s", {2, 16}).Value("m", {2, 16});
  b.Op("Gemm", "fc1", {"x", "w"}, {"h"}).attrs["transB"] = IntAttr(1);
  b.Op("Sigmoid", "sig", {"h"}, {"s"});
  b.Op("Mul", "mul", {"h", "s"}, {"m"});
  b.Op("Gemm", "fc2", {"m", "w2"}, {"y"}).attrs["transB"] = IntAttr(1);
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  const NodeCost *sig = nullptr, *mul = nullptr;
  for (const NodeCost& n : r->nodes) {
    if (n.name == "sig") sig = &n;
    if (n.name == "mul") mul = &n;
  }
  ASSERT_TRUE(sig && mul);
  EXPECT_GT(sig->fused_op, 0);
  EXPECT_EQ(mul->fused_op, sig->fused_op);
  EXPECT_EQ(sig->fused_io_bytes, 256);
  EXPECT_EQ(mul->fused_io_bytes, 0);
  CostReport by_node = *r;
  for (NodeCost& n : by_node.nodes) n.fused_op = 0, n.fused_io_bytes = 0;
  const GpuSpec& gpu = *FindGpuSpec("RTX3090");
  StepEstimate fused = EstimateStep({*r}, gpu, false), each = EstimateStep({by_node}, gpu, false);
  // Gemms: forward 1, backward 2, update 1 each; the fused silu 1 + 1 (the chain: 2 + 2).
  EXPECT_EQ(fused.kernels, 4 + 2 + 4);
  EXPECT_EQ(each.kernels, 4 + 4 + 4);
  EXPECT_NEAR(each.bytes - fused.bytes, 1920 - 3 * 256, 1e-9);
  // Three passes of the network (StepReport): the fused op's traffic scales with the passes.
  Result<CostReport> three = StepReport(*r, 3, 0);
  ASSERT_TRUE(three.ok()) << three.message();
  // Per pass: fc1 1 + 2, silu 1 + 1, fc2 1 + 2; one update of each Gemm per step.
  EXPECT_EQ(EstimateStep({*three}, gpu, false).kernels, 3 * (3 + 2 + 3) + 2);
}

CostReport Costed(const GraphBuilder& b) {
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : CostReport{};
}

// A LayerNorm with gamma and beta between two Gemms (testing::LayerNormMlp), exported before
// opset 17 and from 17: the two launch alike, at every batch. Each Gemm forward 1, backward 2
// (input and weight gradients), update 1; the LayerNorm forward 1, backward 2 (its input's
// gradient, gamma's and beta's), update 1, as the one LayerNormalization node. Before, the
// decomposed LayerNorm's update was one kernel per parameter node (gamma's Mul and beta's Add:
// 13), and at batch 1 its nodes were not found as one op (the variance, one number, was not told
// from eps): 30.
TEST(EstimateStep, ALayerNormLaunchesAlikeAtOpsets14And17) {
  const GpuSpec& gpu = *FindGpuSpec("RTX3090");
  for (int64_t batch : {1, 2, 64}) {
    SCOPED_TRACE(batch);
    StepEstimate d = EstimateStep({Costed(testing::LayerNormMlp("ln14.onnx", batch, true))}, gpu, false);
    StepEstimate f = EstimateStep({Costed(testing::LayerNormMlp("ln17.onnx", batch, false))}, gpu, false);
    EXPECT_EQ(d.kernels, 4 + 4 + 4);
    EXPECT_EQ(f.kernels, 4 + 4 + 4);
  }
}

// nn.Linear on a [B, S, 8] input exported with constant folding off (what gpucast-export and the
// catalog's graphs do): MatMul(x, Transpose(W)), W [4, 8]; with torch.onnx's default folding on:
// MatMul(x, Wt), Wt a [8, 4] initializer. PyTorch runs weight.t() as a view (cuBLAS reads it
// transposed): the two launch alike, MatMul forward 1, backward 2, update 1, and move the same
// bytes. Before, the Transpose of the weight launched a kernel writing W's 128 bytes.
TEST(EstimateStep, AWeightsTransposeIsAViewAsWithConstantFolding) {
  const GpuSpec& gpu = *FindGpuSpec("RTX3090");
  for (bool folded : {false, true}) {
    SCOPED_TRACE(folded);
    GraphBuilder b(folded ? "folded.onnx" : "unfolded.onnx", 2);
    b.Data("x", {2, 3, 8}).Value("y", {2, 3, 4});
    if (folded) {
      b.Param("wt", {8, 4});
    } else {
      b.Param("w", {4, 8}).Value("wt", {8, 4});
      b.Op("Transpose", "t", {"w"}, {"wt"}).attrs["perm"] = testing::IntsAttr({1, 0});
    }
    b.Op("MatMul", "mm", {"x", "wt"}, {"y"});
    Result<CostReport> r = AnalyzeCost(b.graph(), {});
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->totals.params, 32);
    if (!folded) {
      EXPECT_EQ(r->nodes[0].activation_bytes, 0);
    }
    StepEstimate e = EstimateStep({*r}, gpu, false);
    EXPECT_EQ(e.kernels, 1 + 2 + 1);
    // Forward reads x (2·3·8 floats, 192 B) and the weight (128 B), writes y (96 B); backward twice
    // that; the update 16 B per parameter.
    EXPECT_DOUBLE_EQ(e.bytes, 416 + 2 * 416 + 16 * 32);
  }
}

TEST(EstimateStep, ASparseTableMovesItsLookedUpRowsNotTheTable) {
  // ids [4, 5] look up 20 rows of a [1000, 8] table (32,000 B). Dense: the backward moves 2 x
  // (ids 160 + rows 640 + table 32,000) = 65,600 B and Adam steps 8,000 parameters (16 B each:
  // 128,000 B). Sparse (sparse=True): the backward moves 2 x (160 + 640) = 1,600 B plus the
  // gradient it writes, 20 x (8 x 4 + 8) = 800 B, and the step touches ~800 / 4 = 200 elements
  // (3,200 B). The forward reads the ids, the 20 rows looked up and writes them (160 + 640 + 640 B),
  // not the table, either way; the kernels are the same.
  auto report = [](bool sparse) {
    GraphBuilder b("emb.onnx", 4);
    b.Data("ids", {4, 5}, testing::kInt64).Value("emb", {4, 5, 8});
    if (sparse) b.SparseTable("table", {1000, 8});
    else b.Param("table", {1000, 8});
    b.Op("Gather", "lookup", {"table", "ids"}, {"emb"});
    Result<CostReport> r = AnalyzeCost(b.graph(), {});
    EXPECT_TRUE(r.ok()) << r.message();
    return *r;
  };
  const GpuSpec& gpu = *FindGpuSpec("RTX3090");
  StepEstimate dense = EstimateStep({report(false)}, gpu, false), sparse = EstimateStep({report(true)}, gpu, false);
  EXPECT_EQ(dense.kernels, sparse.kernels);
  const double forward = 160 + 640 + 640;
  EXPECT_NEAR(dense.bytes, forward + 65600 + 128000, 1e-6);
  EXPECT_NEAR(sparse.bytes, forward + 1600 + 800 + 3200, 1e-6);
}

TEST(EstimateStep, TensorCoreConvolutionsOfNchwTensorsAreTransposed) {
  // A 1x1 conv, x [2,4,8,8] -> y [2,4,8,8], weight [4,4,1,1] (a parameter); x is data (no gradient).
  // Under AMP on a T4 (Turing, tensor cores) x and y count fp16: 512 elements each, 1,024 B. NCHW
  // (channels_last unstated): cuDNN transposes x in and y out, 2 x (1,024 + 1,024) = 4,096 B more in
  // forward, and again in the backward pass (the weight's gradient: backward_flops > 0), in 2 more
  // kernels each; channels_last=1, or a Pascal GPU (no tensor cores), or FP32 without TF32: none.
  GraphBuilder b("conv.onnx", 2);
  b.Data("x", {2, 4, 8, 8}).Param("w", {4, 4, 1, 1}).Value("y", {2, 4, 8, 8});
  b.Op("Conv", "conv", {"x", "w"}, {"y"});
  Result<CostReport> r16 = AnalyzeCost(b.graph(), CostOptions{true});
  Result<CostReport> r32 = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r16.ok() && r32.ok());
  ASSERT_EQ(r16->nodes[0].input_bytes, 1024);
  ASSERT_EQ(r16->nodes[0].activation_bytes, 1024);
  const GpuSpec& t4 = *FindGpuSpec("T4");
  const StepEstimate nchw = EstimateStep({*r16}, t4, true);
  const StepEstimate nhwc = EstimateStep({*r16}, t4, true, Tf32::kNone, false, /*channels_last=*/true);
  EXPECT_DOUBLE_EQ(nchw.bytes - nhwc.bytes, 2 * 4096.0);
  EXPECT_EQ(nchw.kernels - nhwc.kernels, 4);
  EXPECT_NEAR(nchw.busy_s - nhwc.busy_s, 2 * 4096.0 / (t4.mem_bandwidth * t4.mem_bw_delivered), 1e-15);
  const GpuSpec& p100 = *FindGpuSpec("P100-PCIE-16GB");
  EXPECT_EQ(EstimateStep({*r16}, p100, true).bytes, EstimateStep({*r16}, p100, true, Tf32::kNone, false, true).bytes);
  EXPECT_EQ(EstimateStep({*r32}, t4, false).bytes, EstimateStep({*r32}, t4, false, Tf32::kNone, false, true).bytes);
  // TF32 on an A100 (FP32 bytes: 2,048 each way): transposed too, 2 x 2 x (2,048 + 2,048).
  const GpuSpec& a100 = *FindGpuSpec("A100");
  EXPECT_DOUBLE_EQ(EstimateStep({*r32}, a100, false, Tf32::kAll).bytes - EstimateStep({*r32}, a100, false, Tf32::kAll, false, true).bytes,
                   2 * 8192.0);
  // So under PyTorch's default (cuDNN's convolutions on TF32, unstated tf32 on the A100).
  EXPECT_DOUBLE_EQ(EstimateStep({*r32}, a100, false, Tf32::kCudnn).bytes - EstimateStep({*r32}, a100, false, Tf32::kCudnn, false, true).bytes,
                   2 * 8192.0);
  // The job attribute: ComputeFeatures reads it.
  JobAttrs cl;
  ASSERT_TRUE(ParseJobAttr("channels_last=1", &cl).ok());
  EXPECT_EQ(cl.channels_last, std::optional<bool>(true));
  EXPECT_EQ(ParseJobAttr("channels_last=2", &cl).message(), "job attribute 'channels_last': value '2' is not 0 or 1");
}

TEST(ComputeFeatures, AmpUsesTheTensorPeakForComputeBoundMatmul) {
  // A 4096³ weight-free matmul of two activations is compute-bound on any listed GPU.
  const int64_t n = 4096;
  GraphBuilder b("mm.onnx", 1);
  b.Param("a", {n, n}).Param("c", {n, n}).Value("y", {n, n});
  b.Op("MatMul", "mm", {"a", "c"}, {"y"});
  Result<CostReport> r32 = AnalyzeCost(b.graph(), {});
  Result<CostReport> r16 = AnalyzeCost(b.graph(), CostOptions{true});
  ASSERT_TRUE(r32.ok() && r16.ok());
  // A100: its FP16 tensor peak (FP32 accumulate) is 16× its FP32 peak.
  const GpuSpec& gpu = *FindGpuSpec("A100");
  const double flops = 2.0 * n * n * n;
  StepEstimate e32 = EstimateStep({*r32}, gpu, false);
  StepEstimate e16 = EstimateStep({*r16}, gpu, true);
  // forward + backward (dA and dB: 2× forward) + the weight update (memory-bound).
  const double update = 16.0 * 2 * n * n / gpu.mem_bandwidth;
  EXPECT_NEAR(e32.busy_s, 3 * flops / gpu.fp32_flops + update, 1e-12);
  EXPECT_NEAR(e16.busy_s, 3 * flops / gpu.fp16_tensor_flops + update, 1e-12);
  // T4 (70 W, 40 SMs): its peaks are at the 1590 MHz boost clock; with power_limited_clock
  // (JobConfig::power_limited_clock, a model's setting) held at 0.70214 of it within 70 W (SustainedComputeFraction, by hand in
  // gpu_specs_test.cc); bandwidth is not scaled. Off (the default): the datasheet peaks.
  const GpuSpec& t4 = *FindGpuSpec("T4");
  const double t4_update = 16.0 * 2 * n * n / t4.mem_bandwidth;
  EXPECT_NEAR(EstimateStep({*r32}, t4, false).busy_s, 3 * flops / 8.1e12 + t4_update, 1e-6);
  EXPECT_NEAR(EstimateStep({*r32}, t4, false, Tf32::kNone, true).busy_s, 3 * flops / (8.1e12 * 0.70214) + t4_update, 1e-5);
  EXPECT_NEAR(EstimateStep({*r16}, t4, true, Tf32::kNone, true).busy_s, 3 * flops / (65e12 * 0.70214) + t4_update, 1e-6);
  EXPECT_NEAR(EstimateStep({*r32}, gpu, false, Tf32::kNone, true).busy_s, 3 * flops / gpu.fp32_flops + update, 1e-12);  // A100 SXM: 1
  // ComputeFeatures takes it from the job (the model's setting): est_compute_ms by the same factor.
  JobConfig job;
  job.gpu = "T4";
  Result<std::vector<double>> off = ComputeFeatures({*r32}, job);
  job.power_limited_clock = true;
  Result<std::vector<double>> on = ComputeFeatures({*r32}, job);
  ASSERT_TRUE(off.ok() && on.ok());
  const std::vector<std::string>& names = CurrentFeatureSchema().names;
  const size_t c = std::find(names.begin(), names.end(), "est_compute_ms") - names.begin();
  ASSERT_LT(c, names.size());
  EXPECT_NEAR((*on)[c] / (*off)[c], 1 / 0.70214, 1e-4);
}

// TF32 (job attribute tf32): tf32=1 puts FP32 matmuls and convolutions on the TF32 tensor peak
// (PyTorch 1.7-1.11's defaults), tf32=0 neither; unstated, PyTorch's defaults since 1.12 on a GPU
// whose TF32 rate exceeds its FP32 rate: cuDNN's convolutions on TF32 (cudnn.allow_tf32 on),
// cuBLAS's matmuls in FP32 (cuda.matmul.allow_tf32 off). Hand counts on the A100 (FP32 19.5,
// TF32 156 TFLOPS).
TEST(ComputeFeatures, Tf32PeaksFollowPyTorchsSwitches) {
  const int64_t n = 4096;
  GraphBuilder mm("mm.onnx", 1);
  mm.Param("a", {n, n}).Param("c", {n, n}).Value("y", {n, n});
  mm.Op("MatMul", "mm", {"a", "c"}, {"y"});
  Result<CostReport> rm = AnalyzeCost(mm.graph(), {});
  // Conv 256 -> 256 channels, 3x3, pad 1, on a 64x256x56x56 input (no bias).
  GraphBuilder cv("conv.onnx", 64);
  cv.Data("x", {64, 256, 56, 56}).Param("w", {256, 256, 3, 3}).Value("y", {64, 256, 56, 56});
  auto& op = cv.Op("Conv", "conv", {"x", "w"}, {"y"});
  op.attrs["pads"] = testing::IntsAttr({1, 1, 1, 1});
  op.attrs["kernel_shape"] = testing::IntsAttr({3, 3});
  Result<CostReport> rc = AnalyzeCost(cv.graph(), {});
  ASSERT_TRUE(rm.ok() && rc.ok());
  const GpuSpec& a100 = *FindGpuSpec("A100");
  const GpuSpec& v100 = *FindGpuSpec("V100");
  const GpuSpec& rtx3090 = *FindGpuSpec("RTX3090");
  ASSERT_EQ(a100.fp32_flops, 19.5e12);
  ASSERT_EQ(a100.tf32_tensor_flops, 156e12);
  ASSERT_EQ(rtx3090.tf32_tensor_flops, rtx3090.fp32_flops);  // GeForce Ampere: TF32 at the FP32 rate
  const double mm_flops = 3 * 2.0 * n * n * n;  // forward, dA, dB
  const double mm_update = 16.0 * 2 * n * n / a100.mem_bandwidth;
  JobAttrs unknown, on, off;
  ASSERT_TRUE(ParseJobAttr("tf32=1", &on).ok());
  ASSERT_TRUE(ParseJobAttr("tf32=0", &off).ok());
  EXPECT_EQ(ParseJobAttr("tf32=yes", &off).message(), "job attribute 'tf32': value 'yes' is not 0 or 1");
  EXPECT_EQ(Tf32For(on.tf32, a100), Tf32::kAll);
  EXPECT_EQ(Tf32For(off.tf32, a100), Tf32::kNone);
  EXPECT_EQ(Tf32For(unknown.tf32, a100), Tf32::kCudnn);
  EXPECT_EQ(Tf32For(unknown.tf32, rtx3090), Tf32::kNone);  // no faster there
  EXPECT_EQ(Tf32For(unknown.tf32, v100), Tf32::kNone);     // no TF32
  EXPECT_EQ(Tf32For(on.tf32, rtx3090), Tf32::kAll);
  // Matmul: FP32 unless tf32=1.
  EXPECT_NEAR(EstimateStep({*rm}, a100, false, Tf32For(unknown.tf32, a100)).busy_s, mm_flops / 19.5e12 + mm_update, 1e-12);
  EXPECT_NEAR(EstimateStep({*rm}, a100, false, Tf32For(off.tf32, a100)).busy_s, mm_flops / 19.5e12 + mm_update, 1e-12);
  EXPECT_NEAR(EstimateStep({*rm}, a100, false, Tf32For(on.tf32, a100)).busy_s, mm_flops / 156e12 + mm_update, 1e-12);
  // Conv: TF32 unless tf32=0. Its forward FLOPs: 2 * 64*256*56*56 outputs * 256*9 MACs; backward 2x.
  const double conv_fwd = 2.0 * 64 * 256 * 56 * 56 * 256 * 9;
  ASSERT_EQ(static_cast<double>(rc->totals.forward_flops), conv_fwd);
  const StepEstimate c_default = EstimateStep({*rc}, a100, false, Tf32For(unknown.tf32, a100));
  const StepEstimate c_off = EstimateStep({*rc}, a100, false, Tf32For(off.tf32, a100));
  const StepEstimate c_on = EstimateStep({*rc}, a100, false, Tf32For(on.tf32, a100));
  const double conv_all = conv_fwd + static_cast<double>(rc->totals.backward_flops);
  EXPECT_GE(conv_all, 2 * conv_fwd);  // at least the weight gradient
  EXPECT_NEAR(c_off.compute_s, conv_all / 19.5e12, 1e-9);
  // On TF32 the convolution is memory-bound at the A100's bandwidth (its FLOPs in compute_s
  // would be conv_all / 156e12); each TF32 variant carries cuDNN's NCHW transposes alike.
  EXPECT_EQ(c_default.busy_s, c_on.busy_s);
  EXPECT_EQ(c_default.compute_s, c_on.compute_s);
  EXPECT_LT(c_on.busy_s, c_off.busy_s / 2);
  EXPECT_GT(c_on.kernels, c_off.kernels);  // the transposes' kernels
  // Volta has no TF32: the switch changes nothing there.
  EXPECT_EQ(EstimateStep({*rc}, v100, false, Tf32For(on.tf32, v100)).busy_s,
            EstimateStep({*rc}, v100, false, Tf32For(off.tf32, v100)).busy_s);
  // And ComputeFeatures reads the attribute: the matmul's compute on TF32 only with tf32=1, the
  // convolution's unless tf32=0.
  JobConfig job;
  job.gpu = "A100";
  auto est = [&](const CostReport& r, const JobAttrs& attrs, const char* column) {
    job.attrs = attrs;
    auto f = ComputeFeatures({r}, job);
    EXPECT_TRUE(f.ok());
    return f.ok() ? Named(*f).at(column) : 0.0;
  };
  EXPECT_NEAR(est(*rm, off, "est_compute_ms") / est(*rm, on, "est_compute_ms"), 156 / 19.5, 1e-9);
  EXPECT_EQ(est(*rm, unknown, "est_compute_ms"), est(*rm, off, "est_compute_ms"));
  EXPECT_EQ(est(*rc, unknown, "est_gpu_busy_ms"), est(*rc, on, "est_gpu_busy_ms"));
  EXPECT_LT(est(*rc, unknown, "est_gpu_busy_ms"), est(*rc, off, "est_gpu_busy_ms") / 2);
}

// Pascal GP100's memory controller delivers 1.5x less than Volta's at up to 95% of 900 GB/s (Tesla
// V100 whitepaper): at the efficiency fitted on Volta-and-later parts a P100's 732 GB/s counts as
// 900 / 1.5 = 600 GB/s. Hand count on a memory-bound ReLU; the V100 keeps its 900.
TEST(ComputeFeatures, Gp100BandwidthIsWhatVoltaDeliversOverOnePointFive) {
  GraphBuilder b("relu.onnx", 64);
  b.Data("x", {64, 1024, 1024}).Value("y", {64, 1024, 1024});
  b.Op("Relu", "relu", {"x"}, {"y"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok());
  for (const char* name : {"P100", "P100-PCIE-16GB"}) {
    const StepEstimate e = EstimateStep({*r}, *FindGpuSpec(name), false);
    ASSERT_GT(e.bytes, 0);
    EXPECT_NEAR(e.memory_s, e.bytes / 600e9, 1e-12) << name;
    EXPECT_EQ(e.compute_s, 0) << name;
  }
  const StepEstimate p12 = EstimateStep({*r}, *FindGpuSpec("P100-PCIE-12GB"), false);
  EXPECT_NEAR(p12.memory_s, p12.bytes / (549e9 * 600 / 732), 1e-12);
  const StepEstimate v = EstimateStep({*r}, *FindGpuSpec("V100-PCIE-32GB"), false);
  EXPECT_NEAR(v.memory_s, v.bytes / 900e9, 1e-12);
}

TEST(ComputeFeatures, BadJobsAreErrors) {
  JobConfig job;
  job.gpu = "GTX480";
  Result<std::vector<double>> v = ComputeFeatures({TinyReport()}, job);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.message(),
            "features: unknown GPU 'GTX480'; closest: GTX1080, RTX4080, GTX1060, GTX1070, Quadro-RTX4000 "
            "(gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)");
  EXPECT_EQ(ComputeFeatures({}, JobConfig{}).message(), "features: no cost reports given");
  job = JobConfig{};
  job.batch = 0;
  EXPECT_EQ(ComputeFeatures({TinyReport()}, job).message(), "features: batch 0 < 1");
}

TEST(ParseJobAttr, AcceptsTheThreeKeys) {
  JobAttrs a;
  ASSERT_TRUE(ParseJobAttr("loader_workers=4", &a).ok());
  ASSERT_TRUE(ParseJobAttr("data_on_gpu=1", &a).ok());
  ASSERT_TRUE(ParseJobAttr("rl_env=0", &a).ok());
  EXPECT_EQ(a.loader_workers, 4);
  EXPECT_EQ(a.data_on_gpu, true);
  EXPECT_EQ(a.rl_env, false);
}

// cpu_cores_per_gpu caps the workers that run at once: the training process keeps a core.
TEST(ParseJobAttr, CpuCoresPerGpuCapsTheLoaderWorkers) {
  JobAttrs a;
  EXPECT_EQ(EffectiveLoaderWorkers(a), kDefaultLoaderWorkers);
  ASSERT_TRUE(ParseJobAttr("loader_workers=8", &a).ok());
  EXPECT_EQ(EffectiveLoaderWorkers(a), 8);  // cores not stated: not capped
  ASSERT_TRUE(ParseJobAttr("cpu_cores_per_gpu=4", &a).ok());
  EXPECT_EQ(*a.cpu_cores_per_gpu, 4);
  EXPECT_EQ(EffectiveLoaderWorkers(a), 3);
  ASSERT_TRUE(ParseJobAttr("cpu_cores_per_gpu=1", &a).ok());
  EXPECT_EQ(EffectiveLoaderWorkers(a), 1);  // at least one worker
  ASSERT_TRUE(ParseJobAttr("loader_workers=0", &a).ok());
  EXPECT_EQ(EffectiveLoaderWorkers(a), 0);  // no workers stay none
  EXPECT_EQ(ParseJobAttr("cpu_cores_per_gpu=0", &a).message(),
            "job attribute 'cpu_cores_per_gpu': value '0' is not an integer >= 1");
}

TEST(ParseJobAttr, RejectsUnknownKeysAndBadValues) {
  JobAttrs a;
  EXPECT_EQ(ParseJobAttr("gpus=2", &a).message(),
            "job attribute 'gpus': unknown key (known: loader_workers, data_on_gpu, rl_env, "
            "loader_ms_per_sample, env_steps_per_update, optimizer, cpu_cores_per_gpu, tf32, channels_last, selected_fraction, "
            "activation_checkpointing, trainable_fraction, zero_stage, grad_accumulation, variable_shapes, "
            "cuda_module_loading)");
  EXPECT_EQ(ParseJobAttr("loader_workers=-1", &a).message(),
            "job attribute 'loader_workers': value '-1' is not a non-negative integer");
  EXPECT_EQ(ParseJobAttr("loader_workers=", &a).message(),
            "job attribute 'loader_workers': value '' is not a non-negative integer");
  EXPECT_EQ(ParseJobAttr("data_on_gpu=yes", &a).message(),
            "job attribute 'data_on_gpu': value 'yes' is not 0 or 1");
  EXPECT_EQ(ParseJobAttr("rl_env", &a).message(), "job attribute 'rl_env': want KEY=VALUE");
  EXPECT_FALSE(a.loader_workers.has_value());
}

TEST(ParseJobAttr, LoaderMsPerSampleAndEnvStepsPerUpdate) {
  JobAttrs a;
  // Absent is unknown, not 0.
  EXPECT_FALSE(a.loader_ms_per_sample.has_value());
  EXPECT_FALSE(a.env_steps_per_update.has_value());
  ASSERT_TRUE(ParseJobAttr("loader_ms_per_sample=2.5", &a).ok());
  ASSERT_TRUE(ParseJobAttr("env_steps_per_update=2048", &a).ok());
  EXPECT_EQ(a.loader_ms_per_sample, 2.5);
  EXPECT_EQ(a.env_steps_per_update, 2048);
  ASSERT_TRUE(ParseJobAttr("loader_ms_per_sample=1e-3", &a).ok());
  EXPECT_EQ(a.loader_ms_per_sample, 1e-3);
  ASSERT_TRUE(ParseJobAttr("loader_ms_per_sample=40", &a).ok());
  EXPECT_EQ(a.loader_ms_per_sample, 40);
  ASSERT_TRUE(ParseJobAttr("env_steps_per_update=1", &a).ok());
  EXPECT_EQ(a.env_steps_per_update, 1);
}

TEST(ParseJobAttr, LoaderMsPerSampleAndEnvStepsPerUpdateRejectBadValues) {
  JobAttrs a;
  for (const char* bad : {"", "abc", "nan", "inf", "0x10", "1.5ms", " 2", "2,5"})
    EXPECT_EQ(ParseJobAttr(std::string("loader_ms_per_sample=") + bad, &a).message(),
              std::string("job attribute 'loader_ms_per_sample': value '") + bad +
                  "' is not a number (milliseconds per sample)")
        << bad;
  for (const char* bad : {"0", "-1", "0.0", "1e7", "1e999"})
    EXPECT_EQ(ParseJobAttr(std::string("loader_ms_per_sample=") + bad, &a).message(),
              std::string("job attribute 'loader_ms_per_sample': value '") + bad +
                  "' is out of range (want > 0 and <= 1e6 ms per sample)")
        << bad;
  for (const char* bad : {"0", "-3", "1.5", "", "x", "1234567890"})
    EXPECT_EQ(ParseJobAttr(std::string("env_steps_per_update=") + bad, &a).message(),
              std::string("job attribute 'env_steps_per_update': value '") + bad + "' is not an integer >= 1")
        << bad;
  EXPECT_FALSE(a.loader_ms_per_sample.has_value());
  EXPECT_FALSE(a.env_steps_per_update.has_value());
}

}  // namespace
}  // namespace gpucast

namespace gpucast {
namespace {

// v2: the busy estimate split by which roofline bound each kernel hits, on
// the effective spec of a MIG slice. The tiny graph is memory-bound
// everywhere (a 2x4 by 4x3 Gemm: 48 FLOPs vs >100 bytes): all of it is
// memory time, and a 1g.10gb slice (1 of 8 memory slices) takes 8 times as long.
TEST(ComputeFeatures, ComputeAndMemoryTimeOnAMigSlice) {
  JobConfig job;
  job.batch = 2;
  job.gpu = "A100-80GB";
  auto whole = ComputeFeatures({TinyReport()}, job);
  job.mig_profile = "1g.10gb";
  auto slice = ComputeFeatures({TinyReport()}, job);
  ASSERT_TRUE(whole.ok() && slice.ok()) << whole.message() << slice.message();
  auto w = Named(*whole), m = Named(*slice);
  EXPECT_DOUBLE_EQ(w["est_compute_ms"] + w["est_memory_ms"], w["est_gpu_busy_ms"]);
  EXPECT_EQ(w["est_compute_ms"], 0);
  EXPECT_NEAR(m["est_memory_ms"] / w["est_memory_ms"], 8.0, 1e-9);
  job.mig_profile = "9g.90gb";
  EXPECT_NE(ComputeFeatures({TinyReport()}, job).message().find("features: GPU 'A100-80GB' has no MIG profile"),
            std::string::npos);
}

}  // namespace
}  // namespace gpucast
