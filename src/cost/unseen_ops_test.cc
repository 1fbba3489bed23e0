// Unseen-job ops end to end: ONNX models built in code load (the loader's
// shape inference resolves Einsum, Resize, TopK, LRN, ...), cost completely
// (RequireCompleteCost passes) and give the hand counts; value-dependent
// sizes and 3-operand Einsum are reported, never costed as zero.
#include <gtest/gtest.h>

#include "cost/cost.h"
#include "cost/test_nodes.h"
#include "graph/onnx_loader.h"
#include "graph/test_models.h"

namespace gpucast {
namespace {

using testing::NodeNamed;
using testing::Dim;
using testing::kFloat;
using testing::kInt64;
using testing::ModelBuilder;
using testing::SetAttr;

onnx::TensorProto FloatTensor(const std::vector<int64_t>& dims, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

Result<CostReport> LoadAndCost(const ModelBuilder& b, int64_t batch) {
  LoadOptions o;
  o.batch = batch;
  Result<Graph> g = LoadOnnxGraphFromBytes(b.Bytes(), "m.onnx", o);
  if (!g.ok()) return g.status();
  return AnalyzeCost(*g, {});
}

// Dropout as torch.onnx.export writes it in training mode (opset 13: ratio and
// training_mode Constant inputs). PyTorch's dropout at p = 0 returns its input
// (ATen Dropout.cpp: the fused CUDA kernel only for 0 < p < 1, _dropout_impl
// returns the input when p == 0): no kernel, no bytes written, no mask kept.
// At p = 0.1: 3 FLOPs per element forward, 2 backward, a 1-byte mask.
Result<CostReport> LinearDropout(float p) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {Dim("batch"), Dim(int64_t{16})});
  b.FloatInit("w", {16, 32});
  b.Node("MatMul", {"x", "w"}, {"h"}, "mm");
  onnx::TensorProto mode;
  mode.set_data_type(onnx::TensorProto::BOOL);
  mode.add_int32_data(1);
  SetAttr(&b.Node("Constant", {}, {"ratio"}, "ratio"), "value", FloatTensor({}, {p}));
  SetAttr(&b.Node("Constant", {}, {"mode"}, "mode"), "value", mode);
  b.Node("Dropout", {"h", "ratio", "mode"}, {"y", "mask"}, "drop");
  b.Output("y");
  return LoadAndCost(b, 4);
}

TEST(UnseenOps, DropoutAtRatioZeroIsTheInputItself) {
  Result<CostReport> zero = LinearDropout(0.0f), some = LinearDropout(0.1f);
  ASSERT_TRUE(zero.ok()) << zero.message();
  ASSERT_TRUE(some.ok()) << some.message();
  const NodeCost& d0 = NodeNamed(*zero, "drop");
  EXPECT_EQ(d0.forward_flops, 0);
  EXPECT_EQ(d0.backward_flops, 0);
  EXPECT_EQ(d0.activation_bytes, 0);
  EXPECT_EQ(d0.saved_bytes, 0);
  const NodeCost& d1 = NodeNamed(*some, "drop");  // 4 x 32 = 128 elements
  EXPECT_EQ(d1.forward_flops, 3 * 128);
  EXPECT_EQ(d1.backward_flops, 2 * 128);
  EXPECT_EQ(d1.saved_bytes, 128);  // the bool mask
  EXPECT_GT(d1.activation_bytes, 0);
  // The MatMul before it is the same in both.
  EXPECT_EQ(NodeNamed(*zero, "mm").forward_flops, NodeNamed(*some, "mm").forward_flops);
}

TEST(UnseenOps, EinsumResizeTopKAndFriendsLoadAndCostCompletely) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {Dim("batch"), Dim(int64_t{3}), Dim(int64_t{4})});
  b.Input("img", kFloat, {Dim("batch"), Dim(int64_t{2}), Dim(int64_t{4}), Dim(int64_t{4})});
  b.FloatInit("w", {4, 5});
  b.Int64Init("k", {1}, {2});
  SetAttr(&b.Node("Einsum", {"x", "w"}, {"e"}, "einsum"), "equation", std::string("bij,jk->bik"));
  SetAttr(&b.Node("Constant", {}, {"scales"}, "scales"), "value", FloatTensor({4}, {1, 1, 2, 2}));
  SetAttr(&b.Node("Resize", {"img", "", "scales"}, {"up"}, "resize"), "mode", std::string("linear"));
  SetAttr(&b.Node("LRN", {"up"}, {"lrn"}, "lrn"), "size", int64_t{3});
  b.Node("TopK", {"e", "k"}, {"top", "idx"}, "topk");
  b.Node("Asin", {"top"}, {"as"}, "asin");
  b.Node("RandomNormalLike", {"as"}, {"noise"}, "noise");
  b.Node("Add", {"as", "noise"}, {"out"}, "add");
  b.Node("ReduceL2", {"lrn"}, {"norm"}, "l2");
  b.Output("out").Output("norm").Output("idx", kInt64);
  Result<CostReport> r = LoadAndCost(b, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_TRUE(RequireCompleteCost(*r).ok()) << RequireCompleteCost(*r).message();
  // Einsum at batch 2: b·i·j·k = 2·3·4·5 = 120 multiply-adds; w needs a gradient, x not.
  EXPECT_EQ(NodeNamed(*r, "einsum").forward_flops, 240);
  EXPECT_EQ(NodeNamed(*r, "einsum").backward_flops, 240);
  EXPECT_EQ(NodeNamed(*r, "einsum").params, 20);
  EXPECT_EQ(r->totals.params, 20);  // the Constant scales are no parameter
  // Resize linear [2,2,4,4] -> [2,2,8,8]: 256 outputs × (2·4 − 1) = 1792; no gradient (data).
  EXPECT_EQ(NodeNamed(*r, "resize").forward_flops, 1792);
  EXPECT_EQ(NodeNamed(*r, "resize").backward_flops, 0);
  // LRN size 3 on 256 elements: (3 + 5)·256 = 2048.
  EXPECT_EQ(NodeNamed(*r, "lrn").forward_flops, 2048);
  // TopK K = 2 of e [2,3,5]: 30 × ⌈log2 3⌉ = 60; values [2,3,2] get 12 scatter-adds back.
  EXPECT_EQ(NodeNamed(*r, "topk").forward_flops, 60);
  EXPECT_EQ(NodeNamed(*r, "topk").backward_flops, 12);
  EXPECT_EQ(NodeNamed(*r, "asin").forward_flops, 12);
  EXPECT_EQ(NodeNamed(*r, "noise").forward_flops, 36);
  // The noise needs no gradient: Add's backward is 12 (one input), not 24.
  EXPECT_EQ(NodeNamed(*r, "add").backward_flops, 12);
}

TEST(UnseenOps, EinsumThatDoesNotFitItsInputsIsReportedWithTheReason) {
  // j is 4 in x and 6 in w: the loader leaves the output unknown and says why; the cost report
  // names the node and carries that reason (no crash, no zero).
  ModelBuilder b(13);
  b.Input("x", kFloat, {Dim("batch"), Dim(int64_t{4})});
  b.FloatInit("w", {6, 5});
  SetAttr(&b.Node("Einsum", {"x", "w"}, {"e"}, "einsum"), "equation", std::string("ij,jk->ik"));
  b.Output("e");
  Result<CostReport> r = LoadAndCost(b, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->first_uncosted,
            "node 'einsum' (Einsum): input or output shape unknown (input shapes [2,4] [6,5]; unknown: output 'e'): "
            "shape inference failed: index 'j' is 4 and 6 (input 1)");
}

TEST(UnseenOps, MishLoadsWithoutASchemaAndCosts) {
  // Mish (opset 18; libonnx 1.12 has no schema): x·tanh(softplus(x)) = 3 + 1 + 1 = 5 per
  // element forward. [2,4] at batch 2 = 8 elements -> 40; no "no ONNX schema" warning.
  ModelBuilder b(18);
  b.Input("x", kFloat, {Dim("batch"), Dim(int64_t{4})});
  b.Node("Mish", {"x"}, {"y"}, "mish");
  b.Output("y");
  Result<CostReport> r = LoadAndCost(b, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_TRUE(RequireCompleteCost(*r).ok()) << RequireCompleteCost(*r).message();
  EXPECT_EQ(NodeNamed(*r, "mish").forward_flops, 40);
  EXPECT_EQ(NodeNamed(*r, "mish").output_shapes, (std::vector<std::vector<int64_t>>{{2, 4}}));
  for (const std::string& w : r->warnings) EXPECT_EQ(w.find("Mish"), std::string::npos) << w;
}

TEST(UnseenOps, ValueDependentSizesAndThreeOperandEinsumAreReported) {
  // Compress by a mask from the data: its size depends on the mask's values, reported. NonZero of
  // data is read as selecting every element (graph/onnx_loader.cc: an upper bound, with a warning).
  ModelBuilder b(13);
  b.Input("x", kFloat, {Dim("batch"), Dim(int64_t{4})});
  b.Input("y", kFloat, {Dim(int64_t{4}), Dim(int64_t{4})});
  b.Input("keep", onnx::TensorProto::BOOL, {Dim("batch")});
  SetAttr(&b.Node("Compress", {"x", "keep"}, {"cz"}, "compress"), "axis", int64_t{0});
  b.Node("NonZero", {"x"}, {"nz"}, "nonzero");
  SetAttr(&b.Node("Einsum", {"x", "y", "y"}, {"e3"}, "einsum3"), "equation", std::string("bi,ij,jk->bk"));
  b.Output("cz").Output("nz", kInt64).Output("e3");
  Result<CostReport> r = LoadAndCost(b, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->unsupported.size(), 2u);
  EXPECT_EQ(r->unsupported[0].op_type, "Compress");
  EXPECT_EQ(r->unsupported[0].reason, "output size depends on input values that shape inference could not resolve");
  EXPECT_EQ(r->unsupported[1].op_type, "Einsum");
  EXPECT_EQ(r->unsupported[1].reason, "einsum of 3 operands is not costed: its cost depends on the contraction order");
  EXPECT_EQ(NodeNamed(*r, "nonzero").output_shapes, (std::vector<std::vector<int64_t>>{{2, 8}}));
  EXPECT_EQ(RequireCompleteCost(*r).message(),
            "m.onnx: cannot predict from a partial cost report: 2 of 3 nodes could not be costed; first: node "
            "'compress' (Compress): output size depends on input values that shape inference could not resolve "
            "(input shapes [2,4] [2]; unknown: output 'cz')");
}

// A model newer than libonnx 1.12's schemas loads with this one warning and no other (no "no
// ONNX schema", no failed inference).
std::vector<std::string> OnlyTheOpsetWarning(int64_t opset) {
  return {"m.onnx: opset " + std::to_string(opset) +
          " is newer than the ONNX schemas of this build know (up to 17); shapes were inferred with opset 17 rules "
          "and may be incomplete"};
}

// The lead's repro (torch's dynamo exporter): x [batch,32,8,8] -> Gelu -> GroupNormalization
// (num_groups 4) -> LayerNormalization (axis -1, scale [8]) -> Relu. GroupNormalization's
// scale/bias are [num_groups] at opsets 18-20 and [C] from 21 (Operators.md).
ModelBuilder GeluGroupNormModel(int64_t opset, int64_t gn_params) {
  ModelBuilder b(opset);
  b.Input("x", kFloat, {Dim("batch"), Dim(int64_t{32}), Dim(int64_t{8}), Dim(int64_t{8})});
  b.FloatInit("gs", {gn_params}).FloatInit("gb", {gn_params}).FloatInit("ls", {8});
  b.Node("Gelu", {"x"}, {"g"}, "gelu");
  SetAttr(&b.Node("GroupNormalization", {"g", "gs", "gb"}, {"gn"}, "gn"), "num_groups", int64_t{4});
  SetAttr(&b.Node("LayerNormalization", {"gn", "ls"}, {"ln"}, "ln"), "axis", int64_t{-1});
  b.Node("Relu", {"ln"}, {"y"}, "relu");
  b.Output("y");
  return b;
}

TEST(UnseenOps, GeluGroupNormReproLoadsAndCostsAtOpsets20And21) {
  // batch 4: 4·32·8·8 = 8192 elements through each node. Forward: Gelu 5·8192 = 40960, the
  // norms 7·8192 = 57344 each, Relu 8192. Backward: Gelu 0 (its input is data), GroupNorm
  // 3·8192 (scale/bias grads; its input needs none), LayerNorm (3 + 4)·8192, Relu 8192.
  for (auto [opset, gn_params] : {std::pair<int64_t, int64_t>{20, 4}, {21, 32}}) {
    Result<CostReport> r = LoadAndCost(GeluGroupNormModel(opset, gn_params), 4);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_TRUE(RequireCompleteCost(*r).ok()) << opset << ": " << RequireCompleteCost(*r).message();
    EXPECT_EQ(r->warnings, OnlyTheOpsetWarning(opset));
    EXPECT_EQ(NodeNamed(*r, "gelu").forward_flops, 40960);
    EXPECT_EQ(NodeNamed(*r, "gelu").backward_flops, 0);
    EXPECT_EQ(NodeNamed(*r, "gn").forward_flops, 57344);
    EXPECT_EQ(NodeNamed(*r, "gn").backward_flops, 24576);
    EXPECT_EQ(NodeNamed(*r, "ln").forward_flops, 57344);
    EXPECT_EQ(NodeNamed(*r, "ln").backward_flops, 57344);
    EXPECT_EQ(NodeNamed(*r, "relu").forward_flops, 8192);
    EXPECT_EQ(NodeNamed(*r, "relu").output_shapes, (std::vector<std::vector<int64_t>>{{4, 32, 8, 8}}));
    EXPECT_EQ(r->totals.params, 2 * gn_params + 8);
  }
}

TEST(UnseenOps, GroupNormWhoseParamsOrGroupsDoNotFitIsReportedNamingTheNode) {
  // Per-channel scale at opset 20 (GroupNormalization-18 wants [num_groups]).
  Result<CostReport> r = LoadAndCost(GeluGroupNormModel(20, 32), 4);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(RequireCompleteCost(*r).message(),
            "m.onnx: cannot predict from a partial cost report: 3 of 4 nodes could not be costed; first: node 'gn' "
            "(GroupNormalization): input or output shape unknown (input shapes [4,32,8,8] [32] [32]; unknown: "
            "output 'gn'): shape inference failed: scale has shape [32], want [4] (num_groups, opset 18-20)");
  // 30 channels in 4 groups.
  ModelBuilder b(21);
  b.Input("x", kFloat, {Dim("batch"), Dim(int64_t{30}), Dim(int64_t{8})});
  b.FloatInit("gs", {30}).FloatInit("gb", {30});
  SetAttr(&b.Node("GroupNormalization", {"x", "gs", "gb"}, {"y"}, "gn"), "num_groups", int64_t{4});
  b.Output("y");
  r = LoadAndCost(b, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->first_uncosted,
            "node 'gn' (GroupNormalization): input or output shape unknown (input shapes [2,30,8] [30] [30]; unknown: "
            "output 'y'): shape inference failed: channels 30 do not divide by num_groups 4");
}

TEST(UnseenOps, Opset23DecoderBlockLoadsAndCostsCompletely) {
  // x [batch, 8, 16] -> RMSNormalization -> q/k/v MatMuls -> RotaryEmbedding (3-D, 2 heads of 8,
  // position_ids) on q and k -> Attention (3-D, 2 q heads, 1 kv head: GQA, causal) at batch 2.
  ModelBuilder b(23);
  b.Input("x", kFloat, {Dim("batch"), Dim(int64_t{8}), Dim(int64_t{16})});
  b.Input("pos", kInt64, {Dim("batch"), Dim(int64_t{8})});
  b.FloatInit("rs", {16}).FloatInit("wq", {16, 16}).FloatInit("wk", {16, 8}).FloatInit("wv", {16, 8});
  b.FloatInit("cos", {32, 4}).FloatInit("sin", {32, 4});
  b.Node("RMSNormalization", {"x", "rs"}, {"h"}, "rms");
  b.Node("MatMul", {"h", "wq"}, {"q0"}, "q");
  b.Node("MatMul", {"h", "wk"}, {"k0"}, "k");
  b.Node("MatMul", {"h", "wv"}, {"v"}, "v");
  SetAttr(&b.Node("RotaryEmbedding", {"q0", "cos", "sin", "pos"}, {"q1"}, "rope_q"), "num_heads", int64_t{2});
  SetAttr(&b.Node("RotaryEmbedding", {"k0", "cos", "sin", "pos"}, {"k1"}, "rope_k"), "num_heads", int64_t{1});
  onnx::NodeProto& att = b.Node("Attention", {"q1", "k1", "v"}, {"y"}, "att");
  SetAttr(&att, "q_num_heads", int64_t{2});
  SetAttr(&att, "kv_num_heads", int64_t{1});
  SetAttr(&att, "is_causal", int64_t{1});
  b.Output("y");
  Result<CostReport> r = LoadAndCost(b, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_TRUE(RequireCompleteCost(*r).ok()) << RequireCompleteCost(*r).message();
  EXPECT_EQ(r->warnings, OnlyTheOpsetWarning(23));
  // RMSNorm 4·(2·8·16) = 1024; q 2·(2·8)·16·16 = 8192; rope_q rotates 2·8·16 = 256 -> 768,
  // rope_k 2·8·8 = 128 -> 384.
  EXPECT_EQ(NodeNamed(*r, "rms").forward_flops, 1024);
  EXPECT_EQ(NodeNamed(*r, "q").forward_flops, 8192);
  EXPECT_EQ(NodeNamed(*r, "rope_q").forward_flops, 768);
  EXPECT_EQ(NodeNamed(*r, "rope_k").forward_flops, 384);
  // Attention: B 2, Hq 2, Sq = T = 8, D = Dv = 8: 256 scores; 2·256·8 + (1 + 1 + 5)·256 +
  // 2·256·8 = 9984. Backward (Q, K, V need grads): dP 4096 + (4 + 1 + 1)·256 + dV 4096 +
  // dQ 4096 + dK 4096 = 17920.
  EXPECT_EQ(NodeNamed(*r, "att").forward_flops, 9984);
  EXPECT_EQ(NodeNamed(*r, "att").backward_flops, 17920);
  EXPECT_EQ(NodeNamed(*r, "att").output_shapes, (std::vector<std::vector<int64_t>>{{2, 8, 16}}));
  // Trainable: rs 16 + wq 256 + wk 128 + wv 128; the cos/sin caches are not trained.
  EXPECT_EQ(r->totals.params, 528);
}

TEST(UnseenOps, AttentionWithMismatchedHeadSizesIsReportedNamingTheNode) {
  ModelBuilder b(23);
  b.Input("q", kFloat, {Dim("batch"), Dim(int64_t{2}), Dim(int64_t{4}), Dim(int64_t{8})});
  b.Input("k", kFloat, {Dim("batch"), Dim(int64_t{2}), Dim(int64_t{4}), Dim(int64_t{6})});
  b.Node("Attention", {"q", "k", "k"}, {"y"}, "att");
  b.Output("y");
  Result<CostReport> r = LoadAndCost(b, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->first_uncosted,
            "node 'att' (Attention): input or output shape unknown (input shapes [2,2,4,8] [2,2,4,6] [2,2,4,6]; "
            "unknown: output 'y'): shape inference failed: head size of K 6 differs from Q's 8");
}

TEST(UnseenOps, Opset20BitwiseCropCol2ImAffineGridLoadAndCost) {
  ModelBuilder b(20);
  b.Input("a", kInt64, {Dim("batch"), Dim(int64_t{4})});
  b.Input("img", kFloat, {Dim("batch"), Dim(int64_t{3}), Dim(int64_t{10}), Dim(int64_t{10})});
  b.Input("cols", kFloat, {Dim("batch"), Dim(int64_t{5}), Dim(int64_t{5})});
  b.Int64Init("crop", {2}, {6, 7}).Int64Init("im", {2}, {5, 5}).Int64Init("blk", {2}, {1, 5});
  b.Int64Init("size", {4}, {2, 3, 4, 5});
  b.FloatInit("theta", {2, 2, 3});
  b.Node("BitwiseAnd", {"a", "a"}, {"and"}, "and");
  b.Node("BitwiseNot", {"and"}, {"not"}, "not");
  SetAttr(&b.Node("CenterCropPad", {"img", "crop"}, {"cc"}, "crop"), "axes", std::vector<int64_t>{2, 3});
  b.Node("Col2Im", {"cols", "im", "blk"}, {"c2i"}, "col2im");
  b.Node("AffineGrid", {"theta", "size"}, {"grid"}, "affine");
  b.Output("not", kInt64).Output("cc").Output("c2i").Output("grid");
  Result<CostReport> r = LoadAndCost(b, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_TRUE(RequireCompleteCost(*r).ok()) << RequireCompleteCost(*r).message();
  EXPECT_EQ(r->warnings, OnlyTheOpsetWarning(20));
  EXPECT_EQ(NodeNamed(*r, "and").forward_flops, 8);
  EXPECT_EQ(NodeNamed(*r, "not").forward_flops, 8);
  EXPECT_EQ(NodeNamed(*r, "crop").output_shapes, (std::vector<std::vector<int64_t>>{{2, 3, 6, 7}}));
  EXPECT_EQ(NodeNamed(*r, "crop").forward_flops, 0);
  // Col2Im: [2, 5, 5] -> [2, 1, 5, 5], one add per input element: 50.
  EXPECT_EQ(NodeNamed(*r, "col2im").output_shapes, (std::vector<std::vector<int64_t>>{{2, 1, 5, 5}}));
  EXPECT_EQ(NodeNamed(*r, "col2im").forward_flops, 50);
  // AffineGrid [2, 4, 5, 2] = 80 elements: 2·2·80 = 320; theta trains: 2·3·80 = 480.
  EXPECT_EQ(NodeNamed(*r, "affine").forward_flops, 320);
  EXPECT_EQ(NodeNamed(*r, "affine").backward_flops, 480);
}

TEST(UnseenOps, Opset19ReduceSplitPadAveragePoolWithNewSignaturesLoadRight) {
  // ReduceMean-18 takes axes as an input; Split-18 num_outputs; Pad-18 a 4th input, axes (the
  // opset-13 rule libonnx runs wants 2·rank pads: graph/opset_gaps.h pads axis 1 by 1 + 2);
  // AveragePool-19 dilations (the opset-11 rule ignores them): kernel 2, dilation 2 spans 3 of
  // the last dim's 4 -> 2 outputs (3 without the dilation).
  ModelBuilder b(19);
  b.Input("x", kFloat, {Dim("batch"), Dim(int64_t{6}), Dim(int64_t{4})});
  b.Int64Init("axes", {1}, {2}).Int64Init("pads", {2}, {1, 2}).Int64Init("pad_axes", {1}, {1});
  b.Node("ReduceMean", {"x", "axes"}, {"m"}, "mean");
  onnx::NodeProto& split = b.Node("Split", {"x"}, {"s0", "s1"}, "split");
  SetAttr(&split, "num_outputs", int64_t{2});
  SetAttr(&split, "axis", int64_t{1});
  b.Node("Pad", {"x", "pads", "", "pad_axes"}, {"p"}, "pad");
  onnx::NodeProto& pool = b.Node("AveragePool", {"x"}, {"ap"}, "pool");
  SetAttr(&pool, "kernel_shape", std::vector<int64_t>{2});
  SetAttr(&pool, "dilations", std::vector<int64_t>{2});
  // ReduceMax-18 (axes input), ScatterND-18 reduction "max", Resize-18 antialias: libonnx's
  // older rules give the right shapes.
  b.Node("ReduceMax", {"x", "axes"}, {"mx"}, "max");
  b.Int64Init("idx", {1, 1}, {1}).Int64Init("sizes", {3}, {2, 12, 2});
  b.Input("u", kFloat, {Dim(int64_t{1}), Dim(int64_t{6}), Dim(int64_t{4})});
  SetAttr(&b.Node("ScatterND", {"x", "idx", "u"}, {"sc"}, "scatter"), "reduction", std::string("max"));
  onnx::NodeProto& rs = b.Node("Resize", {"x", "", "", "sizes"}, {"rs"}, "resize");
  SetAttr(&rs, "antialias", int64_t{1});
  SetAttr(&rs, "mode", std::string("linear"));
  // DeformConv-19 (no schema in libonnx 1.12): X [2,6,4], W [3,6,3], offset [2, 2·3, 2] -> [2,3,2].
  b.FloatInit("dw", {3, 6, 3});
  b.Input("off", kFloat, {Dim("batch"), Dim(int64_t{6}), Dim(int64_t{2})});
  b.Node("DeformConv", {"x", "dw", "off"}, {"dc"}, "deform");
  b.Output("m").Output("s0").Output("s1").Output("p").Output("ap").Output("mx").Output("sc").Output("rs").Output("dc");
  Result<CostReport> r = LoadAndCost(b, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_TRUE(RequireCompleteCost(*r).ok()) << RequireCompleteCost(*r).message();
  EXPECT_EQ(NodeNamed(*r, "mean").output_shapes, (std::vector<std::vector<int64_t>>{{2, 6, 1}}));
  EXPECT_EQ(NodeNamed(*r, "split").output_shapes, (std::vector<std::vector<int64_t>>{{2, 3, 4}, {2, 3, 4}}));
  EXPECT_EQ(NodeNamed(*r, "pad").output_shapes, (std::vector<std::vector<int64_t>>{{2, 9, 4}}));
  EXPECT_EQ(NodeNamed(*r, "pool").output_shapes, (std::vector<std::vector<int64_t>>{{2, 6, 2}}));
  EXPECT_EQ(NodeNamed(*r, "max").output_shapes, (std::vector<std::vector<int64_t>>{{2, 6, 1}}));
  EXPECT_EQ(NodeNamed(*r, "scatter").output_shapes, (std::vector<std::vector<int64_t>>{{2, 6, 4}}));
  EXPECT_EQ(NodeNamed(*r, "resize").output_shapes, (std::vector<std::vector<int64_t>>{{2, 12, 2}}));
  // MACs 2·3·2·6·3 = 216, samples N·C·K·positions = 2·6·3·2 = 72: 2·216 + 7·72 = 936.
  EXPECT_EQ(NodeNamed(*r, "deform").output_shapes, (std::vector<std::vector<int64_t>>{{2, 3, 2}}));
  EXPECT_EQ(NodeNamed(*r, "deform").forward_flops, 936);
  EXPECT_EQ(r->warnings, OnlyTheOpsetWarning(19));
}

}  // namespace
}  // namespace gpucast
