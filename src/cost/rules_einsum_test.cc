// Einsum against hand-computed iteration spaces (2 FLOPs per multiply-add)
// and against MatMul's rule on the same product.
#include <gtest/gtest.h>

#include "cost/cost.h"
#include "cost/test_graph.h"

namespace gpucast {
namespace {

using testing::GraphBuilder;

Attribute Str(const std::string& s) {
  Attribute a;
  a.s = s;
  return a;
}

Result<CostReport> Einsum(const std::string& eq, GraphBuilder b, std::vector<std::string> in) {
  b.Op("Einsum", "e", std::move(in), {"y"}).attrs["equation"] = Str(eq);
  return AnalyzeCost(b.graph(), {});
}

const NodeCost& Node0(const CostReport& r) { return r.nodes.back(); }

TEST(EinsumCost, BatchedMatmulEqualsMatMulsCount) {
  // "bij,bjk->bik", A [2,3,4] data, B [2,4,5] param: b·i·j·k = 2·3·4·5 = 120 multiply-adds.
  // forward 240; backward: dB only (A is data) 240.
  GraphBuilder b;
  b.Data("a", {2, 3, 4}).Param("w", {2, 4, 5}).Value("y", {2, 3, 5});
  Result<CostReport> r = Einsum("bij,bjk->bik", b, {"a", "w"});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(Node0(*r).category, Category::kMatmul);
  EXPECT_EQ(Node0(*r).forward_flops, 240);
  EXPECT_EQ(Node0(*r).backward_flops, 240);
  EXPECT_EQ(Node0(*r).params, 40);
  // The same product as MatMul: 2·out·K = 2·(2·3·5)·4 = 240, backward 240.
  GraphBuilder m;
  m.Data("a", {2, 3, 4}).Param("w", {2, 4, 5}).Value("y", {2, 3, 5});
  m.Op("MatMul", "mm", {"a", "w"}, {"y"});
  Result<CostReport> mr = AnalyzeCost(m.graph(), {});
  ASSERT_TRUE(mr.ok());
  EXPECT_EQ(mr->nodes[0].forward_flops, Node0(*r).forward_flops);
  EXPECT_EQ(mr->nodes[0].backward_flops, Node0(*r).backward_flops);
}

TEST(EinsumCost, AttentionScoresBothOperandsNeedGradients) {
  // "bhqd,bhkd->bhqk", Q [2,4,8,16], K [2,4,6,16] (params: both need a gradient):
  // 2·4·8·6·16 = 6144 multiply-adds: forward 12288, backward 2 × 12288.
  GraphBuilder b;
  b.Param("q", {2, 4, 8, 16}).Param("k", {2, 4, 6, 16}).Value("y", {2, 4, 8, 6});
  Result<CostReport> r = Einsum("bhqd, bhkd -> bhqk", b, {"q", "k"});  // spaces are ignored
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(Node0(*r).forward_flops, 12288);
  EXPECT_EQ(Node0(*r).backward_flops, 24576);
}

TEST(EinsumCost, TransposeIsAFreeCopy) {
  // "ij->ji" on [3,5]: nothing summed: no FLOPs, 15 fp32 elements written.
  GraphBuilder b;
  b.Data("x", {3, 5}).Value("y", {5, 3});
  Result<CostReport> r = Einsum("ij->ji", b, {"x"});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(Node0(*r).category, Category::kDataMovement);
  EXPECT_EQ(Node0(*r).forward_flops, 0);
  EXPECT_EQ(Node0(*r).activation_bytes, 60);
}

TEST(EinsumCost, OneOperandSumsCostOneAddPerPoint) {
  // "ij->i" on [3,4]: 12 adds; the trace "ii" (implicit output: scalar) on [3,3]: 3 adds.
  GraphBuilder b;
  b.Data("x", {3, 4}).Value("y", {3});
  Result<CostReport> r = Einsum("ij->i", b, {"x"});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(Node0(*r).category, Category::kElementwise);
  EXPECT_EQ(Node0(*r).forward_flops, 12);
  GraphBuilder t;
  t.Data("x", {3, 3}).Value("y", {});
  r = Einsum("ii", t, {"x"});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(Node0(*r).forward_flops, 3);
}

TEST(EinsumCost, EllipsisBroadcastsLeadingDims) {
  // "...ij,...jk->...ik", A [2,1,4,5], B [3,5,6]: "..." = [2,1] and [3] broadcast to [2,3];
  // i·j·k = 4·5·6: 2·3·120 = 720 multiply-adds, forward 1440.
  GraphBuilder b;
  b.Data("a", {2, 1, 4, 5}).Data("c", {3, 5, 6}).Value("y", {2, 3, 4, 6});
  Result<CostReport> r = Einsum("...ij,...jk->...ik", b, {"a", "c"});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(Node0(*r).forward_flops, 1440);
  EXPECT_EQ(Node0(*r).backward_flops, 0);  // data only
}

TEST(EinsumCost, ImplicitOutputIsTheLettersUsedOnceSorted) {
  // "ij,jk" = "ij,jk->ik": [3,4]·[4,5]: 60 multiply-adds, forward 120; output [3,5].
  GraphBuilder b;
  b.Data("a", {3, 4}).Data("c", {4, 5}).Value("y", {3, 5});
  Result<CostReport> r = Einsum("ij,jk", b, {"a", "c"});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(Node0(*r).forward_flops, 120);
  // "ba,cb" -> "ac" (sorted), not "ca": [4,3]·[5,4] gives [3,5].
  GraphBuilder s;
  s.Data("a", {4, 3}).Data("c", {5, 4}).Value("y", {3, 5});
  r = Einsum("ba,cb", s, {"a", "c"});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(Node0(*r).forward_flops, 120);
}

TEST(EinsumCost, ThreeOperandsAreUnsupportedWithTheReason) {
  GraphBuilder b;
  b.Data("a", {3, 4}).Data("c", {4, 5}).Data("d", {5, 6}).Value("y", {3, 6});
  Result<CostReport> r = Einsum("ij,jk,kl->il", b, {"a", "c", "d"});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(Node0(*r).category, Category::kUnsupported);
  ASSERT_EQ(r->unsupported.size(), 1u);
  EXPECT_EQ(r->unsupported[0].reason, "einsum of 3 operands is not costed: its cost depends on the contraction order");
  EXPECT_EQ(RequireCompleteCost(*r).message(),
            "m.onnx: cannot predict from a partial cost report: 1 of 1 nodes could not be costed; first: node 'e' "
            "(Einsum): einsum of 3 operands is not costed: its cost depends on the contraction order");
}

TEST(EinsumCost, BadEquationsAreErrorsNamingTheNode) {
  auto err = [](const std::string& eq, std::vector<int64_t> a, std::vector<int64_t> c, std::vector<int64_t> y) {
    GraphBuilder b;
    b.Data("a", a).Data("c", c).Value("y", y);
    Result<CostReport> r = Einsum(eq, b, {"a", "c"});
    return r.ok() ? std::string("ok") : r.message();
  };
  const std::string at = "m.onnx: node 'e' (Einsum): ";
  EXPECT_EQ(err("ij,jk->ik", {3, 4}, {5, 6}, {3, 6}), at + "index 'j' is 4 and 5 (input 1)");
  EXPECT_EQ(err("ij,jk->ik", {3, 4}, {4, 6}, {3, 7}), at + "output has shape [3,7], equation 'ij,jk->ik' gives [3,6]");
  EXPECT_EQ(err("ij,j2->i", {3, 4}, {4, 2}, {3}), at + "equation operand 1 'j2' has character '2', want letters and '...'");
  EXPECT_EQ(err("ij,jk,kl->il", {3, 4}, {4, 6}, {3, 6}), at + "equation 'ij,jk,kl->il' has 3 operand terms, node has 2 inputs");
  EXPECT_EQ(err("ijk,jk->i", {3, 4}, {4, 6}, {3}), at + "input 0 (term 'ijk') has rank 2, want 3");
  EXPECT_EQ(err("ij,jk->iz", {3, 4}, {4, 6}, {3, 6}), at + "output index 'z' is in no input term");
  EXPECT_EQ(err("...ij,...jk->...ik", {2, 3, 4}, {5, 4, 6}, {2, 3, 6}), at + "'...' dims do not broadcast: 2 and 5 (input 1)");
  GraphBuilder none;
  none.Data("a", {3}).Value("y", {3});
  none.Op("Einsum", "e", {"a"}, {"y"});
  EXPECT_EQ(AnalyzeCost(none.graph(), {}).message(), at + "attribute 'equation' missing");
}

}  // namespace
}  // namespace gpucast
