// Unseen-job ops end to end: ONNX models built in code load (the loader's
// shape inference resolves Einsum, Resize, TopK, LRN, ...), cost completely
// (RequireCompleteCost passes) and give the hand counts; value-dependent
// sizes and 3-operand Einsum are reported, never costed as zero.
#include <gtest/gtest.h>

#include "cost/cost.h"
#include "graph/onnx_loader.h"
#include "graph/test_models.h"

namespace gpucast {
namespace {

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

const NodeCost& Named(const CostReport& r, const std::string& n) {
  for (const NodeCost& c : r.nodes)
    if (c.name == n) return c;
  static NodeCost none;
  ADD_FAILURE() << "no node " << n;
  return none;
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
  EXPECT_EQ(Named(*r, "einsum").forward_flops, 240);
  EXPECT_EQ(Named(*r, "einsum").backward_flops, 240);
  EXPECT_EQ(Named(*r, "einsum").params, 20);
  EXPECT_EQ(r->totals.params, 20);  // the Constant scales are no parameter
  // Resize linear [2,2,4,4] -> [2,2,8,8]: 256 outputs × (2·4 − 1) = 1792; no gradient (data).
  EXPECT_EQ(Named(*r, "resize").forward_flops, 1792);
  EXPECT_EQ(Named(*r, "resize").backward_flops, 0);
  // LRN size 3 on 256 elements: (3 + 5)·256 = 2048.
  EXPECT_EQ(Named(*r, "lrn").forward_flops, 2048);
  // TopK K = 2 of e [2,3,5]: 30 × ⌈log2 3⌉ = 60; values [2,3,2] get 12 scatter-adds back.
  EXPECT_EQ(Named(*r, "topk").forward_flops, 60);
  EXPECT_EQ(Named(*r, "topk").backward_flops, 12);
  EXPECT_EQ(Named(*r, "asin").forward_flops, 12);
  EXPECT_EQ(Named(*r, "noise").forward_flops, 36);
  // The noise needs no gradient: Add's backward is 12 (one input), not 24.
  EXPECT_EQ(Named(*r, "add").backward_flops, 12);
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
  EXPECT_EQ(Named(*r, "mish").forward_flops, 40);
  EXPECT_EQ(Named(*r, "mish").output_shapes, (std::vector<std::vector<int64_t>>{{2, 4}}));
  for (const std::string& w : r->warnings) EXPECT_EQ(w.find("Mish"), std::string::npos) << w;
}

TEST(UnseenOps, ValueDependentSizesAndThreeOperandEinsumAreReported) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {Dim("batch"), Dim(int64_t{4})});
  b.Input("y", kFloat, {Dim(int64_t{4}), Dim(int64_t{4})});
  b.Node("NonZero", {"x"}, {"nz"}, "nonzero");
  SetAttr(&b.Node("Einsum", {"x", "y", "y"}, {"e3"}, "einsum3"), "equation", std::string("bi,ij,jk->bk"));
  b.Output("nz", kInt64).Output("e3");
  Result<CostReport> r = LoadAndCost(b, 2);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->unsupported.size(), 2u);
  EXPECT_EQ(r->unsupported[0].op_type, "Einsum");
  EXPECT_EQ(r->unsupported[0].reason, "einsum of 3 operands is not costed: its cost depends on the contraction order");
  EXPECT_EQ(r->unsupported[1].op_type, "NonZero");
  EXPECT_EQ(r->unsupported[1].reason, "output size depends on input values that shape inference could not resolve");
  EXPECT_EQ(RequireCompleteCost(*r).message(),
            "m.onnx: cannot predict from a partial cost report: 2 of 2 nodes could not be costed; first: node "
            "'nonzero' (NonZero): output size depends on input values that shape inference could not resolve "
            "(input shapes [2,4]; unknown: output 'nz')");
}

}  // namespace
}  // namespace gpucast
