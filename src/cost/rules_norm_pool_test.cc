// The normalisation rows added for unseen jobs (LRN, LpNormalization,
// MeanVarianceNormalization) against hand counts.
#include <gtest/gtest.h>

#include "cost/cost.h"
#include "cost/test_nodes.h"
#include "cost/test_graph.h"

namespace gpucast {
namespace {

using testing::NodeNamed;
using testing::GraphBuilder;
using testing::IntAttr;

// x [1,8,4,4] = 128 elements needs a gradient; `op` on it.
Result<CostReport> Norm(const std::string& op, std::optional<int64_t> size = std::nullopt) {
  GraphBuilder b;
  b.Data("x0", {1, 8, 4, 4}).Param("s", {1}).Value("x", {1, 8, 4, 4}).Value("y", {1, 8, 4, 4});
  b.Op("Mul", "m", {"x0", "s"}, {"x"});
  Node& n = b.Op(op, "op", {"x"}, {"y"});
  if (size) n.attrs["size"] = IntAttr(*size);
  return AnalyzeCost(b.graph(), {});
}

TEST(NormCost, LrnDependsOnTheWindow) {
  // size 5: forward (5 + 5)·128 = 1280; backward (5 + 7)·128 = 1536.
  Result<CostReport> r = Norm("LRN", 5);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "op").category, Category::kNormalization);
  EXPECT_EQ(NodeNamed(*r, "op").forward_flops, 1280);
  EXPECT_EQ(NodeNamed(*r, "op").backward_flops, 1536);
  EXPECT_EQ(Norm("LRN").message(), "m.onnx: node 'op' (LRN): attribute 'size' missing");
  EXPECT_EQ(Norm("LRN", 0).message(), "m.onnx: node 'op' (LRN): attribute 'size' is 0, want >= 1");
}

TEST(NormCost, LpAndMeanVarianceNormalization) {
  // LpNormalization: |x| or x², sum, divide: 3·128 = 384; backward 5·128 = 640.
  Result<CostReport> r = Norm("LpNormalization");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "op").forward_flops, 384);
  EXPECT_EQ(NodeNamed(*r, "op").backward_flops, 640);
  // MVN: BatchNorm's 7 less the affine 2: 5·128 = 640; input gradient 4·128 = 512; no params.
  r = Norm("MeanVarianceNormalization");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "op").forward_flops, 640);
  EXPECT_EQ(NodeNamed(*r, "op").backward_flops, 512);
  EXPECT_EQ(NodeNamed(*r, "op").params, 0);
}

}  // namespace
}  // namespace gpucast
