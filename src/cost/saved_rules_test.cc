// Fused ops that torch.onnx decomposes (saved_rules.cc, FindFusedExports): the
// bytes kept for backward by the exported chain equal what PyTorch's fused op
// keeps. The torch numbers in the comments were counted with
// torch.autograd.graph.saved_tensors_hooks on the same module (torch 1.13,
// Linear(8,16) -> act -> Linear(16,4) at batch 2; Conv2d(3,8,3) -> GroupNorm(4,8)
// -> Conv2d(8,4,1) at batch 2, 4x4), parameters and the data input left out as
// gpucast leaves them out.
#include <gtest/gtest.h>

#include "cost/cost.h"
#include "cost/saved_rules.h"
#include "cost/test_graph.h"
#include "cost/test_nodes.h"

namespace gpucast {
namespace {

using testing::GraphBuilder;
using testing::IntAttr;
using testing::IntsAttr;
using testing::NodeNamed;

CostReport Analyze(const GraphBuilder& b) {
  Result<CostReport> r = AnalyzeCost(b.graph(), CostOptions{false});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : CostReport{};
}

// x[2,8] -> Gemm fc1 -> h[2,16] -> (the activation's chain) -> `act` -> Gemm fc2 -> y[2,4].
GraphBuilder Mlp(const std::string& file) {
  GraphBuilder b(file, 2);
  b.Data("x", {2, 8}).Param("w", {16, 8}).Value("h", {2, 16}).Param("w2", {4, 16}).Value("y", {2, 4});
  b.Op("Gemm", "fc1", {"x", "w"}, {"h"}).attrs["transB"] = IntAttr(1);
  return b;
}

// F.silu exports as Sigmoid(h) -> Mul(h, s). torch's silu keeps h: with fc2's
// input, torch counts 2 x 128 = 256 bytes. Node by node: s by the Sigmoid, h
// and s by the Mul, the product by fc2 = 384 (torch's count for h * sigmoid(h)
// written out, which exports the same; F.silu is what nn.SiLU runs).
TEST(FusedExports, SiluKeepsItsInput) {
  GraphBuilder b = Mlp("silu.onnx");
  b.Value("s", {2, 16}).Value("m", {2, 16});
  b.Op("Sigmoid", "sig", {"h"}, {"s"});
  b.Op("Mul", "mul", {"h", "s"}, {"m"});
  b.Op("Gemm", "fc2", {"m", "w2"}, {"y"}).attrs["transB"] = IntAttr(1);
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "sig").saved_bytes, 128);
  EXPECT_EQ(NodeNamed(r, "mul").saved_bytes, 0);
  EXPECT_EQ(r.totals.saved_bytes, 256);
  // A Sigmoid gating another tensor (squeeze-and-excitation) is not a SiLU: node by node.
  GraphBuilder se = Mlp("se.onnx");
  se.Value("s", {2, 16}).Value("m", {2, 16}).Value("g", {2, 16});
  se.Op("Relu", "relu", {"h"}, {"g"});
  se.Op("Sigmoid", "sig", {"h"}, {"s"});
  se.Op("Mul", "mul", {"g", "s"}, {"m"});
  se.Op("Gemm", "fc2", {"m", "w2"}, {"y"}).attrs["transB"] = IntAttr(1);
  // relu's output g, the sigmoid's output s (kept by sig, and by mul), mul's product by fc2.
  EXPECT_EQ(Analyze(se).totals.saved_bytes, 3 * 128);
}

// nn.Hardswish as torch.onnx writes it before opset 14: HardSigmoid(h) (alpha 1/6, beta 1/2) ->
// Mul(h, s). torch's hardswish keeps h (hardswish_backward(grad, self)): 256 bytes with fc2's input,
// as the HardSwish node of opset 14 keeps. Node by node: s by the Mul too, 384.
TEST(FusedExports, HardSwishBeforeOpset14KeepsItsInput) {
  for (bool fused_node : {false, true}) {
    SCOPED_TRACE(fused_node);
    GraphBuilder b = Mlp("hardswish.onnx");
    b.Value("s", {2, 16}).Value("m", {2, 16});
    if (fused_node) {
      b.Op("HardSwish", "hswish", {"h"}, {"m"});
    } else {
      b.Op("HardSigmoid", "hsig", {"h"}, {"s"});
      b.Op("Mul", "mul", {"h", "s"}, {"m"});
    }
    b.Op("Gemm", "fc2", {"m", "w2"}, {"y"}).attrs["transB"] = IntAttr(1);
    CostReport r = Analyze(b);
    EXPECT_EQ(r.totals.saved_bytes, 256);
    if (!fused_node) {
      EXPECT_EQ(NodeNamed(r, "hsig").saved_bytes, 128);
      EXPECT_GT(NodeNamed(r, "hsig").fused_op, 0);
      EXPECT_EQ(NodeNamed(r, "mul").fused_op, NodeNamed(r, "hsig").fused_op);
    }
  }
}

// F.gelu(approximate='tanh') as torch.onnx writes it; torch's gelu keeps h: 256 bytes with fc2's input.
TEST(FusedExports, TanhGeluKeepsItsInput) {
  GraphBuilder b = Mlp("gelu_tanh.onnx");
  for (const char* v : {"sq", "cube", "kc", "sum", "inner", "t", "a", "m", "g"}) b.Value(v, {2, 16});
  for (const char* c : {"kappa", "beta", "one", "half"}) b.Value(c, {});
  for (const char* c : {"kappa", "beta", "one", "half"}) b.Op("Constant", std::string("k_") + c, {}, {c});
  b.Op("Mul", "sq", {"h", "h"}, {"sq"});
  b.Op("Mul", "cube", {"h", "sq"}, {"cube"});
  b.Op("Mul", "kappa", {"kappa", "cube"}, {"kc"});
  b.Op("Add", "add", {"h", "kc"}, {"sum"});
  b.Op("Mul", "beta", {"beta", "sum"}, {"inner"});
  b.Op("Tanh", "tanh", {"inner"}, {"t"});
  b.Op("Add", "one", {"one", "t"}, {"a"});
  b.Op("Mul", "mul", {"h", "a"}, {"m"});
  b.Op("Mul", "half", {"half", "m"}, {"g"});
  b.Op("Gemm", "fc2", {"g", "w2"}, {"y"}).attrs["transB"] = IntAttr(1);
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "sq").saved_bytes, 128);
  for (const char* inside : {"cube", "kappa", "add", "beta", "tanh", "one", "mul", "half"}) {
    EXPECT_EQ(NodeNamed(r, inside).saved_bytes, 0) << inside;
  }
  // Node by node it was 652: h, sq, the tanh's result, a, three scalar constants and fc2's input.
  EXPECT_EQ(r.totals.saved_bytes, 256);
}

// nn.GroupNorm(4, 8) as torch.onnx writes it before opset 18. torch keeps the
// conv's output h (1024 bytes) for group_norm and the result for conv2 (1024),
// plus a mean and an rstd per group (2 x 8 groups x 4 bytes, the InstanceNormalization's
// statistics over its 2 x 4 channels): 2112. Node by node: the reshaped h, the normalized
// tensor (the Mul by gamma needs it), the result and the statistics: 3136.
TEST(FusedExports, GroupNormKeepsItsInput) {
  GraphBuilder b("gn.onnx", 2);
  b.Data("x", {2, 3, 4, 4}).Param("w", {8, 3, 3, 3}).Value("h", {2, 8, 4, 4});
  b.Value("gshape", {3}, testing::kInt64).Value("r", {2, 4, 32}).Value("one4", {4}).Value("zero4", {4});
  b.Value("n", {2, 4, 32}).Value("hshape", {4}, testing::kInt64).Value("n2", {2, 8, 4, 4});
  b.Param("gamma", {8, 1, 1}).Param("beta", {8, 1, 1}).Value("g", {2, 8, 4, 4}).Value("o", {2, 8, 4, 4});
  b.Param("w2", {4, 8, 1, 1}).Value("y", {2, 4, 4, 4});
  b.Op("Conv", "conv1", {"x", "w"}, {"h"}).attrs["pads"] = testing::IntsAttr({1, 1, 1, 1});
  b.Op("Constant", "k_shape", {}, {"gshape"});
  b.Op("Constant", "k_one", {}, {"one4"});
  b.Op("Constant", "k_zero", {}, {"zero4"});
  b.Op("Reshape", "group", {"h", "gshape"}, {"r"});
  b.Op("InstanceNormalization", "norm", {"r", "one4", "zero4"}, {"n"});
  b.Op("Shape", "shape", {"h"}, {"hshape"});
  b.Op("Reshape", "ungroup", {"n", "hshape"}, {"n2"});
  b.Op("Mul", "scale", {"n2", "gamma"}, {"g"});
  b.Op("Add", "shift", {"g", "beta"}, {"o"});
  b.Op("Conv", "conv2", {"o", "w2"}, {"y"});
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "group").saved_bytes, 1024);
  EXPECT_EQ(NodeNamed(r, "norm").saved_tensors, (std::vector<int64_t>{32, 32}));
  for (const char* inside : {"ungroup", "scale", "shift"}) EXPECT_EQ(NodeNamed(r, inside).saved_bytes, 0) << inside;
  EXPECT_EQ(NodeNamed(r, "conv2").saved_bytes, 1024);
  EXPECT_EQ(r.totals.saved_bytes, 2112);
}

// Attention probabilities through an eval-mode (ratio-0) Dropout, by hand: one head of 4 x 4
// scores at batch 2 (32 floats, 128 bytes). PyTorch's dropout at p = 0 returns its input itself
// (aten/src/ATen/native/Dropout.cpp), so softmax's saved result and the probabilities the
// second matmul saves are one tensor: 128 bytes, plus v (2 x 4 x 8 floats, 256 bytes) for the
// probabilities' gradient. Counted by name, the Dropout's output was a second 128 bytes. At a
// ratio of 0.1 the dropout makes a new tensor (kept by the matmul) and a 1-byte mask: 128 + 32 +
// 128 + 256.
TEST(SavedTensors, AViewKeptUnderTwoNamesIsOneTensor) {
  auto attention = [](double ratio) {
    GraphBuilder b("attn.onnx", 2);
    b.Data("x", {2, 4, 8}).Param("wq", {8, 8}).Param("wv", {8, 8});
    b.Value("q", {2, 4, 8}).Value("k", {2, 8, 4}).Value("v", {2, 4, 8}).Value("s", {2, 4, 4});
    b.Value("p", {2, 4, 4}).Value("d", {2, 4, 4}).Value("mask", {2, 4, 4}, 9).Value("c", {2, 4, 8});
    b.Value("flat", {2, 32}).Output("c");
    b.Op("MatMul", "q_proj", {"x", "wq"}, {"q"});
    b.Op("Transpose", "k_t", {"q"}, {"k"}).attrs["perm"] = IntsAttr({0, 2, 1});
    b.Op("MatMul", "v_proj", {"x", "wv"}, {"v"});
    b.Op("MatMul", "scores", {"q", "k"}, {"s"});
    b.Op("Softmax", "softmax", {"s"}, {"p"}).attrs["axis"] = IntAttr(-1);
    Attribute r;
    r.f = ratio;
    b.Op("Dropout", "drop", {"p"}, {"d", "mask"}).attrs["ratio"] = r;
    b.Op("MatMul", "context", {"d", "v"}, {"c"});
    return Analyze(b);
  };
  // scores keeps q and its transpose (2 x 64 floats); then as above.
  const int64_t qk = 2 * 256;
  CostReport eval = attention(0.0);
  EXPECT_EQ(NodeNamed(eval, "softmax").saved_bytes, 128);
  EXPECT_EQ(NodeNamed(eval, "drop").saved_bytes, 0);
  EXPECT_EQ(NodeNamed(eval, "context").saved_bytes, 256);  // v only: d is p
  EXPECT_EQ(eval.totals.saved_bytes, qk + 128 + 256);
  CostReport train = attention(0.1);
  EXPECT_EQ(NodeNamed(train, "drop").saved_bytes, 32);
  EXPECT_EQ(NodeNamed(train, "context").saved_bytes, 128 + 256);
  EXPECT_EQ(train.totals.saved_bytes, qk + 128 + 32 + 128 + 256);
}

// A Flatten of a kept activation is the same storage: ReLU keeps r [2,16] (128 bytes) and fc2,
// reading Flatten(r), keeps nothing more.
TEST(SavedTensors, AFlattenedActivationIsKeptOnce) {
  GraphBuilder b("flat.onnx", 2);
  b.Data("x", {2, 8}).Param("w", {16, 8}).Value("h", {2, 16}).Value("r", {2, 16}).Value("f", {2, 16});
  b.Param("w2", {4, 16}).Value("y", {2, 4}).Output("y");
  b.Op("Gemm", "fc1", {"x", "w"}, {"h"}).attrs["transB"] = IntAttr(1);
  b.Op("Relu", "relu", {"h"}, {"r"});
  b.Op("Flatten", "flat", {"r"}, {"f"}).attrs["axis"] = IntAttr(1);
  b.Op("Gemm", "fc2", {"f", "w2"}, {"y"}).attrs["transB"] = IntAttr(1);
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "relu").saved_bytes, 128);
  EXPECT_EQ(NodeNamed(r, "fc2").saved_bytes, 0);
  EXPECT_EQ(r.totals.saved_bytes, 128);
}

// NormGroups on what no export should hold: no statistics rather than a wrong count.
TEST(NormGroups, OutsideItsInputItCountsNone) {
  TensorInfo x;
  x.dims = {2, 4, 3, 3};
  x.shape_known = true;
  auto groups = [&](const char* op, const char* attr = nullptr, int64_t value = 0) {
    Node n;
    n.op_type = op;
    if (attr) n.attrs[attr] = IntAttr(value);
    const Count c = NormGroups(n, x);
    return c.ok() ? c.value() : -1;
  };
  EXPECT_EQ(groups("LayerNormalization"), 24);  // axis -1
  EXPECT_EQ(groups("LayerNormalization", "axis", -4), 1);
  EXPECT_EQ(groups("LayerNormalization", "axis", 0), 1);
  EXPECT_EQ(groups("LayerNormalization", "axis", 4), 72);  // every element its own group
  EXPECT_EQ(groups("LayerNormalization", "axis", 5), 0);
  EXPECT_EQ(groups("LayerNormalization", "axis", -5), 0);
  EXPECT_EQ(groups("GroupNormalization"), 0);  // num_groups is required
  EXPECT_EQ(groups("GroupNormalization", "num_groups", -2), 0);
  EXPECT_EQ(groups("GroupNormalization", "num_groups", 2), 4);
  EXPECT_EQ(groups("Relu"), 0);
  x.dims = {8};
  EXPECT_EQ(groups("BatchNormalization"), 0);  // rank < 2
  x.dims = {2, 4, 3, 3};
  x.shape_known = false;
  EXPECT_EQ(groups("InstanceNormalization"), 0);
}

}  // namespace
}  // namespace gpucast
