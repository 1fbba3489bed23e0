#include "graph/inference_guard.h"

#include <gtest/gtest.h>

#include "graph/onnx_loader.h"
#include "graph/test_models.h"

namespace gpucast {
namespace {

using testing::ModelBuilder;
using testing::kFloat;
using testing::kInt64;
using testing::SetAttr;

// The loader's message for a model, or "loaded".
std::string LoadMessage(const ModelBuilder& b, int64_t batch = 1) {
  LoadOptions o;
  o.batch = batch;
  auto g = LoadOnnxGraphFromBytes(b.Bytes(), "m.onnx", o);
  return g.ok() ? "loaded" : g.message();
}

// Each model below crashed gpucast (and any process that ran libonnx 1.12's
// shape inference on it) before the guard: found by fuzz/op_sweep.cc, the
// first one reported as onnx/onnx#6185. Now each is refused with the reason.
TEST(InferenceGuard, TheSweepsCrashingNodesAreRefusedWithTheReason) {
  {  // The 150-byte file: Gemm-6 on rank-0 inputs.
    ModelBuilder b(6);
    b.Input("a", kFloat, {}).Input("b", kFloat, {}).Input("c", kFloat, {});
    b.Node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
    b.Output("y");
    EXPECT_LT(b.Bytes().size(), 200u);
    EXPECT_EQ(LoadMessage(b), "m.onnx: node 'gemm' (Gemm): input 0 (A) has rank 0, want 2");
  }
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    ModelBuilder b(op == std::string("GRU") ? 3 : 1);
    b.Input("x", kFloat, {}).Input("w", kFloat, {}).Input("r", kFloat, {});
    auto& n = b.Node(op, {"x", "w", "r"}, {"y"}, "rnn");
    SetAttr(&n, "hidden_size", int64_t{4});
    b.Output("y");
    EXPECT_EQ(LoadMessage(b), std::string("m.onnx: node 'rnn' (") + op + "): input 0 (X) has rank 0, want 3") << op;
  }
  {  // LayerNormalization-17 on a scalar.
    ModelBuilder b(17);
    b.Input("x", kFloat, {}).Input("s", kFloat, {}).Input("bias", kFloat, {});
    b.Node("LayerNormalization", {"x", "s", "bias"}, {"y"}, "ln");
    b.Output("y");
    EXPECT_EQ(LoadMessage(b), "m.onnx: node 'ln' (LayerNormalization): input 0 (X) has rank 0, want >= 1");
  }
  {  // STFT-17 on scalars.
    ModelBuilder b(17);
    b.Input("signal", kFloat, {}).Int64Init("step", {}, {2});
    b.Node("STFT", {"signal", "step"}, {"y"}, "stft");
    b.Output("y");
    EXPECT_EQ(LoadMessage(b), "m.onnx: node 'stft' (STFT): input 0 (signal) has rank 0, want 3");
  }
  {  // GatherND-13 with a negative batch_dims.
    ModelBuilder b(13);
    b.Input("data", kFloat, {1, 5, 1, 1}).Int64Init("idx", {1}, {0});
    auto& n = b.Node("GatherND", {"data", "idx"}, {"y"}, "gnd");
    SetAttr(&n, "batch_dims", int64_t{-3});
    b.Output("y");
    EXPECT_EQ(LoadMessage(b), "m.onnx: node 'gnd' (GatherND): attribute 'batch_dims' is -3, want in [0, 0]");
  }
  {  // SplitToSequence-11 with a zero split (a division by zero: SIGFPE).
    ModelBuilder b(11);
    b.Input("x", kFloat, {1, 4}).Int64Init("split", {}, {0});
    b.Node("SplitToSequence", {"x", "split"}, {"y"}, "s2s");
    b.Output("y");
    EXPECT_EQ(LoadMessage(b), "m.onnx: node 's2s' (SplitToSequence): input 1 (split) holds 0, want >= 1");
  }
  {  // DepthToSpace with blocksize 0 (SIGFPE).
    ModelBuilder b(13);
    b.Input("x", kFloat, {1, 4, 2, 2});
    auto& n = b.Node("DepthToSpace", {"x"}, {"y"}, "d2s");
    SetAttr(&n, "blocksize", int64_t{0});
    b.Output("y");
    EXPECT_EQ(LoadMessage(b), "m.onnx: node 'd2s' (DepthToSpace): attribute 'blocksize' is 0, want in [1, 2147483647]");
  }
  {  // MaxUnpool-9 whose indices are 1-D (libonnx reads their dim 1).
    ModelBuilder b(9);
    b.Input("x", kFloat, {1, 1, 5}).Int64Init("i", {2}, {0, 1});
    auto& n = b.Node("MaxUnpool", {"x", "i"}, {"y"}, "unpool");
    SetAttr(&n, "kernel_shape", std::vector<int64_t>{5});
    b.Output("y");
    EXPECT_EQ(LoadMessage(b), "m.onnx: node 'unpool' (MaxUnpool): input 1 (I) has rank 1, want 3");
  }
  {  // ConvInteger-10 with a 2-D input and three pads for it.
    ModelBuilder b(10);
    b.Input("x", onnx::TensorProto::UINT8, {1, 1});
    b.Node("ConvInteger", {"x", "x"}, {"y"}, "convi");
    b.Output("y");
    EXPECT_EQ(LoadMessage(b), "m.onnx: node 'convi' (ConvInteger): input 0 (X) has rank 2, want >= 3");
  }
}

// The guard refuses what the specification forbids, not valid nodes: the same
// ops with their specified ranks load and get libonnx's shapes.
TEST(InferenceGuard, ValidNodesOfTheGuardedOpsStillGetTheirShapes) {
  {
    ModelBuilder b(6);
    b.Input("a", kFloat, {std::string("N"), 3}).FloatInit("b", {3, 5}).FloatInit("c", {5});
    b.Node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
    b.Output("y");
    LoadOptions o;
    o.batch = 4;
    auto g = LoadOnnxGraphFromBytes(b.Bytes(), "m.onnx", o);
    ASSERT_TRUE(g.ok()) << g.message();
    EXPECT_EQ(g->Tensor("y")->dims, (std::vector<int64_t>{4, 5}));
  }
  {
    ModelBuilder b(14);
    b.Input("x", kFloat, {7, std::string("batch"), 3}).FloatInit("w", {1, 16, 3}).FloatInit("r", {1, 16, 4});
    auto& n = b.Node("LSTM", {"x", "w", "r"}, {"y", "h"}, "lstm");
    SetAttr(&n, "hidden_size", int64_t{4});
    b.Output("y").Output("h");
    LoadOptions o;
    o.batch = 2;
    auto g = LoadOnnxGraphFromBytes(b.Bytes(), "m.onnx", o);
    ASSERT_TRUE(g.ok()) << g.message();
    EXPECT_EQ(g->Tensor("y")->dims, (std::vector<int64_t>{7, 1, 2, 4}));
    EXPECT_EQ(g->Tensor("h")->dims, (std::vector<int64_t>{1, 2, 4}));
  }
  {
    ModelBuilder b(13);
    b.Input("x", kFloat, {std::string("N"), 8, 2, 2});
    auto& n = b.Node("DepthToSpace", {"x"}, {"y"}, "d2s");
    SetAttr(&n, "blocksize", int64_t{2});
    b.Output("y");
    LoadOptions o;
    o.batch = 3;
    auto g = LoadOnnxGraphFromBytes(b.Bytes(), "m.onnx", o);
    ASSERT_TRUE(g.ok()) << g.message();
    EXPECT_EQ(g->Tensor("y")->dims, (std::vector<int64_t>{3, 2, 4, 4}));
  }
}

// Control flow is not given to libonnx's inference (its subgraph inference is
// where hostile bodies reach): the node loads with its outputs unknown and the
// loader's warning that its body was not analysed.
TEST(InferenceGuard, ControlFlowIsNotInferredAndSaysSo) {
  EXPECT_TRUE(SkipsInference("Scan"));
  EXPECT_TRUE(SkipsInference("Loop"));
  EXPECT_TRUE(SkipsInference("If"));
  EXPECT_FALSE(SkipsInference("Conv"));
  ModelBuilder b(16);
  b.Input("x", kFloat, {std::string("N"), 3});
  auto& n = b.Node("Scan", {"x"}, {"y"}, "scan");
  SetAttr(&n, "num_scan_inputs", int64_t{1});
  auto* body = n.add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  body->mutable_g()->set_name("empty");
  b.Output("y");
  LoadOptions o;
  auto g = LoadOnnxGraphFromBytes(b.Bytes(), "m.onnx", o);
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_FALSE(g->Tensor("y")->shape_known);
  ASSERT_FALSE(g->warnings.empty());
  EXPECT_EQ(g->warnings[0], "m.onnx: node 'scan' (Scan) has subgraphs; they are kept inside the node and not analysed");
}

// The table's rows, without ONNX: unknown ranks are not refused (libonnx's
// functions check what they can see), known ones are, per schema version.
TEST(InferenceGuard, UnknownRanksPassKnownOnesAreChecked) {
  Node gemm;
  gemm.op_type = "Gemm";
  gemm.inputs = {"a", "b"};
  EXPECT_EQ(CheckBeforeInference(gemm, 13, {{true, -1, nullptr}, {true, -1, nullptr}}), "");
  EXPECT_EQ(CheckBeforeInference(gemm, 13, {{true, 2, nullptr}, {true, 3, nullptr}}),
            "input 1 (B) has rank 3, want 2");
  gemm.domain = "com.example";  // not libonnx's op
  EXPECT_EQ(CheckBeforeInference(gemm, 13, {{true, 2, nullptr}, {true, 3, nullptr}}), "");

  Node conv;
  conv.op_type = "Conv";
  conv.attrs["strides"].ints = {1, 0};
  EXPECT_EQ(CheckBeforeInference(conv, 11, {{true, 4, nullptr}, {true, 4, nullptr}}),
            "attribute 'strides' has value 0, want >= 1");
  conv.attrs["strides"].ints = {1};
  EXPECT_EQ(CheckBeforeInference(conv, 11, {{true, 4, nullptr}, {true, 4, nullptr}}),
            "attribute 'strides' has 1 values, want 2");

  Node s2s;
  s2s.op_type = "SplitToSequence";
  std::vector<int64_t> split = {2, 0, 2};
  EXPECT_EQ(CheckBeforeInference(s2s, 11, {{true, 2, nullptr}, {true, 1, &split}}),
            "input 1 (split) holds 0, want >= 1");
  s2s.attrs["axis"].i = 2;
  split = {2, 2};
  EXPECT_EQ(CheckBeforeInference(s2s, 11, {{true, 2, nullptr}, {true, 1, &split}}),
            "attribute 'axis' is 2, want in [-2, 1]");
}

}  // namespace
}  // namespace gpucast
