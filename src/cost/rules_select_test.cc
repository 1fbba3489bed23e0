// TopK, NonZero, NonMaxSuppression against hand counts, and the reason when
// their output size is unknown.
#include <gtest/gtest.h>

#include "cost/cost.h"
#include "cost/test_nodes.h"
#include "cost/test_graph.h"

namespace gpucast {
namespace {

using testing::NodeNamed;
using testing::GraphBuilder;
using testing::kInt64;

TEST(TopKCost, HeapComparisonsAndScatterBackward) {
  // X [4,10] (needs a gradient), K = 3 on the last axis: 40 elements × ⌈log2 4⌉ = 2 -> 80;
  // backward: 12 values scattered back.
  GraphBuilder b;
  b.Data("x0", {4, 10}).Param("s", {1}).Value("x", {4, 10});
  b.Op("Mul", "m", {"x0", "s"}, {"x"});
  b.Data("k", {1}, kInt64).Value("v", {4, 3}).Value("i", {4, 3}, kInt64);
  b.Op("TopK", "t", {"x", "k"}, {"v", "i"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "t").forward_flops, 80);
  EXPECT_EQ(NodeNamed(*r, "t").backward_flops, 12);
  EXPECT_EQ(NodeNamed(*r, "t").activation_bytes, 12 * 4 + 12 * 8);
  // K = 1 (ArgMax-like): ⌈log2 2⌉ = 1 comparison per element.
  GraphBuilder one;
  one.Data("x", {4, 10}).Data("k", {1}, kInt64).Value("v", {4, 1}).Value("i", {4, 1}, kInt64);
  one.Op("TopK", "t", {"x", "k"}, {"v", "i"});
  r = AnalyzeCost(one.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "t").forward_flops, 40);
}

TEST(TopKCost, UnknownKIsUnsupportedWithTheReason) {
  GraphBuilder b;
  b.Data("x", {4, 10}).Data("k", {1}, kInt64).Unknown("v").Unknown("i");
  b.Op("TopK", "t", {"x", "k"}, {"v", "i"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->unsupported.size(), 1u);
  EXPECT_EQ(r->unsupported[0].reason, "output size depends on input values that shape inference could not resolve");
  EXPECT_EQ(r->first_uncosted,
            "node 't' (TopK): output size depends on input values that shape inference could not resolve "
            "(input shapes [4,10] [1]; unknown: output 'v', output 'i')");
}

TEST(NonZeroCost, OneComparisonPerElementOrUnsupported) {
  GraphBuilder b;
  b.Data("x", {3, 4}).Value("nz", {2, 5}, kInt64);
  b.Op("NonZero", "nz", {"x"}, {"nz"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "nz").forward_flops, 12);
  EXPECT_EQ(NodeNamed(*r, "nz").backward_flops, 0);
  GraphBuilder u;
  u.Data("x", {3, 4}).Unknown("nz");
  u.Op("NonZero", "nz", {"x"}, {"nz"});
  r = AnalyzeCost(u.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "nz").category, Category::kUnsupported);
  EXPECT_EQ(r->unsupported[0].reason, "output size depends on input values that shape inference could not resolve");
}

TEST(NonMaxSuppressionCost, WorstCasePairwiseIoU) {
  // boxes [1,5,4], scores [1,2,5]: 2 lists of B = 5 boxes, each:
  // sort 5·⌈log2 5⌉ = 15, areas 3·5 = 15, IoU 13·(5·4/2) = 130: 160; total 320.
  GraphBuilder b;
  b.Data("boxes", {1, 5, 4}).Data("scores", {1, 2, 5}).Value("sel", {4, 3}, kInt64);
  b.Op("NonMaxSuppression", "nms", {"boxes", "scores"}, {"sel"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "nms").forward_flops, 320);
  b.Data("bad", {1, 6, 4});
  b.Op("NonMaxSuppression", "nms2", {"bad", "scores"}, {"sel"});
  EXPECT_EQ(AnalyzeCost(b.graph(), {}).message(),
            "m.onnx: node 'nms2' (NonMaxSuppression): scores have 5 boxes, boxes input has 6");
}

TEST(ControlFlow, LoopIsUnsupportedAndSaysWhy) {
  GraphBuilder b;
  b.Data("n", {}, kInt64).Data("x", {2}).Value("y", {2});
  b.Op("Loop", "loop", {"n", "", "x"}, {"y"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->first_uncosted, "node 'loop' (Loop): control flow: the subgraphs of If, Loop and Scan are not costed");
}

}  // namespace
}  // namespace gpucast
