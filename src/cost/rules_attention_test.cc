// Gelu (opset 20 approximate), Attention, RotaryEmbedding, AffineGrid,
// RMSNormalization and the Bitwise ops against hand counts.
#include <gtest/gtest.h>

#include "cost/cost.h"
#include "cost/test_nodes.h"
#include "cost/test_graph.h"

namespace gpucast {
namespace {

using testing::NodeNamed;
using testing::GraphBuilder;
using testing::IntAttr;

TEST(GeluCost, ErfAndTanhForms) {
  // [4, 10] = 40 elements, input needs a gradient (Mul by a parameter first).
  for (auto [approx, fwd, bwd] : {std::tuple{"none", 5, 8}, std::tuple{"tanh", 9, 13}}) {
    GraphBuilder b;
    b.Data("x0", {4, 10}).Param("s", {1}).Value("x", {4, 10}).Value("y", {4, 10});
    b.Op("Mul", "m", {"x0", "s"}, {"x"});
    b.Op("Gelu", "g", {"x"}, {"y"}).attrs["approximate"].s = approx;
    Result<CostReport> r = AnalyzeCost(b.graph(), {});
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(NodeNamed(*r, "g").forward_flops, 40 * fwd) << approx;
    EXPECT_EQ(NodeNamed(*r, "g").backward_flops, 40 * bwd) << approx;
  }
  GraphBuilder b;
  b.Data("x", {4, 10}).Value("y", {4, 10});
  b.Op("Gelu", "g", {"x"}, {"y"}).attrs["approximate"].s = "fast";
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  // A graph the loader built never gets here (it leaves such a Gelu's output unknown, with
  // the same reason); a hand-built one is an error naming the node.
  EXPECT_EQ(r.message(), "m.onnx: node 'g' (Gelu): attribute 'approximate' is 'fast', want 'none' or 'tanh'");
}

TEST(AttentionCost, CountsAsMatMulSoftmaxMatMul) {
  // Q [2, 4, 8, 16] (needs a grad), K/V [2, 2, 8, 16] (GQA, data): scores 2·4·8·8 = 512.
  // Forward: QKᵀ 2·512·16 = 16384, scale 1 + softmax 5 per score = 3072, P·V 16384 -> 35840.
  // Backward (only Q needs a grad): dP 16384 + (4 + 1)·512 = 2560, dQ 16384 -> 35328.
  GraphBuilder b;
  b.Data("q0", {2, 4, 8, 16}).Param("s", {1}).Value("q", {2, 4, 8, 16});
  b.Data("k", {2, 2, 8, 16}).Data("v", {2, 2, 8, 16}).Value("y", {2, 4, 8, 16});
  b.Op("Mul", "m", {"q0", "s"}, {"q"});
  b.Op("Attention", "att", {"q", "k", "v"}, {"y"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "att").forward_flops, 35840);
  EXPECT_EQ(NodeNamed(*r, "att").backward_flops, 35328);
  EXPECT_EQ(NodeNamed(*r, "att").category, Category::kMatmul);
}

TEST(AttentionCost, CausalThreeDimensionalWithACache) {
  // 3-D: Q [1, 4, 32] with q_num_heads 2 (D 16), K/V [1, 4, 16] with kv_num_heads 1; past 6:
  // T = 10, scores 1·2·4·10 = 80. Forward: 2·80·16 + (1 + 1 + 5)·80 + 2·80·16 = 5680.
  // No input needs a gradient: backward 0.
  GraphBuilder b;
  b.Data("q", {1, 4, 32}).Data("k", {1, 4, 16}).Data("v", {1, 4, 16});
  b.Data("pk", {1, 1, 6, 16}).Data("pv", {1, 1, 6, 16}).Value("y", {1, 4, 32});
  b.Value("prk", {1, 1, 10, 16}).Value("prv", {1, 1, 10, 16});
  Node& n = b.Op("Attention", "att", {"q", "k", "v", "", "pk", "pv"}, {"y", "prk", "prv"});
  n.attrs["q_num_heads"] = IntAttr(2);
  n.attrs["kv_num_heads"] = IntAttr(1);
  n.attrs["is_causal"] = IntAttr(1);
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "att").forward_flops, 5680);
  EXPECT_EQ(NodeNamed(*r, "att").backward_flops, 0);
}

TEST(RotaryEmbeddingCost, ThreePerRotatedElementAndNoParameters) {
  // X [2, 4, 6, 8] needs a grad; rotary_embedding_dim 4 of 8: 2·4·6·4 = 192 rotated -> 576 each way.
  // The cos/sin caches are float initializers but not trained: 0 parameters.
  GraphBuilder b;
  b.Data("x0", {2, 4, 6, 8}).Param("s", {1}).Value("x", {2, 4, 6, 8}).Value("y", {2, 4, 6, 8});
  b.Param("cos", {6, 2}).Param("sin", {6, 2});
  b.Op("Mul", "m", {"x0", "s"}, {"x"});
  b.Op("RotaryEmbedding", "rope", {"x", "cos", "sin"}, {"y"}).attrs["rotary_embedding_dim"] = IntAttr(4);
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "rope").forward_flops, 576);
  EXPECT_EQ(NodeNamed(*r, "rope").backward_flops, 576);
  EXPECT_EQ(r->totals.params, 1);  // the Mul's scale only
}

TEST(AffineGridCost, TwoDPerCoordinate) {
  // Grid [2, 4, 5, 2] = 80 elements; d = 2: forward 2·2·80 = 320; theta (a parameter) needs a
  // grad: 2·3·80 = 480.
  GraphBuilder b;
  b.Param("theta", {2, 2, 3}).Data("size", {4}, testing::kInt64).Value("grid", {2, 4, 5, 2});
  b.Op("AffineGrid", "ag", {"theta", "size"}, {"grid"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "ag").forward_flops, 320);
  EXPECT_EQ(NodeNamed(*r, "ag").backward_flops, 480);
}

TEST(RmsNormalizationCost, LayerNormWithoutMeanAndBias) {
  // X [4, 10] needs a grad, scale [10] trained: forward 4·40 = 160; backward (2 + 3)·40 = 200.
  GraphBuilder b;
  b.Data("x0", {4, 10}).Param("s", {1}).Value("x", {4, 10}).Param("g", {10}).Value("y", {4, 10});
  b.Op("Mul", "m", {"x0", "s"}, {"x"});
  b.Op("RMSNormalization", "rms", {"x", "g"}, {"y"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "rms").forward_flops, 160);
  EXPECT_EQ(NodeNamed(*r, "rms").backward_flops, 200);
  EXPECT_EQ(r->totals.params, 11);
}

TEST(BitwiseAndCol2ImCost, IntegerOpsAndTheFold) {
  // BitwiseAnd of int64 [3, 4]: 12 forward, no gradient. Col2Im of [1, 5, 5]: 25 adds.
  GraphBuilder b;
  b.Data("a", {3, 4}, testing::kInt64).Data("c", {3, 4}, testing::kInt64).Value("o", {3, 4}, testing::kInt64);
  b.Op("BitwiseAnd", "and", {"a", "c"}, {"o"});
  b.Data("cols", {1, 5, 5}).Data("img", {2}, testing::kInt64).Data("blk", {2}, testing::kInt64).Value("im", {1, 1, 5, 5});
  b.Op("Col2Im", "c2i", {"cols", "img", "blk"}, {"im"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "and").forward_flops, 12);
  EXPECT_EQ(NodeNamed(*r, "and").backward_flops, 0);
  EXPECT_EQ(NodeNamed(*r, "c2i").forward_flops, 25);
}

}  // namespace
}  // namespace gpucast
