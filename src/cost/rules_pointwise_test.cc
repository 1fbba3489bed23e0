// The elementwise rows added for unseen jobs (trigonometric and hyperbolic
// functions, Shrink, Hardmax, random draws, losses, ReduceLogSum) against
// hand counts: each arithmetic operation, comparison or transcendental
// evaluation is 1 FLOP per element (docs/cost-rules.md).
#include <gtest/gtest.h>

#include "cost/cost.h"
#include "cost/test_nodes.h"
#include "cost/test_graph.h"

namespace gpucast {
namespace {

using testing::NodeNamed;
using testing::GraphBuilder;
using testing::kInt64;

// x [2,3] needs a gradient (data times a learned scalar), then `op` on it.
Result<CostReport> Unary(const std::string& op, std::vector<int64_t> out = {2, 3}) {
  GraphBuilder b;
  b.Data("x0", {2, 3}).Param("s", {1}).Value("x", {2, 3}).Value("y", out);
  b.Op("Mul", "m", {"x0", "s"}, {"x"});
  b.Op(op, "op", {"x"}, {"y"});
  return AnalyzeCost(b.graph(), {});
}

TEST(PointwiseCost, TrigonometricAndHyperbolic) {
  // Forward: one evaluation per element (6). Backward per element, g times the derivative:
  // tan g·(1+y²) 3; asin g/√(1−x²) 4 (x², 1−, √, ÷); acos the same negated 5; atan g/(1+x²) 3;
  // sinh g·cosh x 2; cosh g·sinh x 2; asinh g/√(x²+1) 4; acosh g/√(x²−1) 4; atanh g/(1−x²) 3.
  const std::vector<std::pair<std::string, int>> want = {{"Tan", 3},   {"Asin", 4},  {"Acos", 5},
                                                         {"Atan", 3},  {"Sinh", 2},  {"Cosh", 2},
                                                         {"Asinh", 4}, {"Acosh", 4}, {"Atanh", 3}};
  for (const auto& [op, bwd] : want) {
    Result<CostReport> r = Unary(op);
    ASSERT_TRUE(r.ok()) << op << ": " << r.message();
    EXPECT_EQ(NodeNamed(*r, "op").category, Category::kElementwise) << op;
    EXPECT_EQ(NodeNamed(*r, "op").forward_flops, 6) << op;
    EXPECT_EQ(NodeNamed(*r, "op").backward_flops, 6 * bwd) << op;
  }
}

TEST(PointwiseCost, Mish) {
  // y = x·tanh(softplus(x)): softplus 3 (exp, add, log), tanh 1, product 1 = 5 per element (30).
  // Backward g·(tanh(sp) + x·σ(x)·(1 − tanh²(sp))): σ 4, softplus 3, tanh 1, square 1, 1− 1,
  // x·σ 1, ·(...) 1, + 1, ·g 1 = 14 per element (84).
  Result<CostReport> r = Unary("Mish");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "op").category, Category::kActivation);
  EXPECT_EQ(NodeNamed(*r, "op").forward_flops, 30);
  EXPECT_EQ(NodeNamed(*r, "op").backward_flops, 84);
}

TEST(PointwiseCost, ShrinkAndReduceLogSum) {
  // Shrink: 2 comparisons + 1 add forward (18), mask and select backward (12).
  Result<CostReport> r = Unary("Shrink");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "op").forward_flops, 18);
  EXPECT_EQ(NodeNamed(*r, "op").backward_flops, 12);
  // ReduceLogSum [2,3] -> [2,1]: 6 adds + 2 logs = 8; backward g/sum broadcast, 6.
  r = Unary("ReduceLogSum", {2, 1});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "op").forward_flops, 8);
  EXPECT_EQ(NodeNamed(*r, "op").backward_flops, 6);
}

TEST(PointwiseCost, RandomDrawsAndHardmaxCarryNoGradient) {
  // RandomNormalLike of x (needs a gradient): 3 per element (draw, scale, shift), no backward;
  // the noise needs no gradient, so Mul(x, noise) has 1 backward FLOP per element, not 2.
  for (const char* op : {"RandomNormalLike", "RandomUniformLike", "Bernoulli", "Hardmax"}) {
    GraphBuilder b;
    b.Data("x0", {2, 3}).Param("s", {1}).Value("x", {2, 3}).Value("n", {2, 3}).Value("y", {2, 3});
    b.Op("Mul", "m", {"x0", "s"}, {"x"});
    b.Op(op, "draw", {"x"}, {"n"});
    b.Op("Mul", "use", {"x", "n"}, {"y"});
    Result<CostReport> r = AnalyzeCost(b.graph(), {});
    ASSERT_TRUE(r.ok()) << op << ": " << r.message();
    const int per = std::string(op) == "Bernoulli" ? 2 : std::string(op) == "Hardmax" ? 1 : 3;
    EXPECT_EQ(NodeNamed(*r, "draw").forward_flops, 6 * per) << op;
    EXPECT_EQ(NodeNamed(*r, "draw").backward_flops, 0) << op;
    EXPECT_EQ(NodeNamed(*r, "use").backward_flops, 6) << op;
  }
  // RandomNormal from its shape attribute alone: [4,5], 3·20 = 60.
  GraphBuilder b;
  b.Value("n", {4, 5});
  b.Op("RandomNormal", "rn", {}, {"n"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "rn").forward_flops, 60);
  EXPECT_EQ(NodeNamed(*r, "rn").activation_bytes, 80);
}

TEST(PointwiseCost, MultinomialCostsItsRowsAndDrawsAndCarriesNoGradient) {
  // logits [4,10] (needing a gradient), 3 samples a row -> [4,3] indices. Forward: exp and running
  // sum per logit, 2·40 = 80; per sample a draw (3) and a binary search of 10 classes (ceil(log2 10)
  // = 4 compares): 7·12 = 84; 164 in all. No backward, and nothing flows back into the logits.
  GraphBuilder b;
  b.Data("z0", {4, 10}).Param("s", {1}).Value("z", {4, 10}).Value("i", {4, 3}, kInt64);
  b.Op("Mul", "m", {"z0", "s"}, {"z"});
  b.Op("Multinomial", "draw", {"z"}, {"i"}).attrs["sample_size"] = testing::IntAttr(3);
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "draw").forward_flops, 164);
  EXPECT_EQ(NodeNamed(*r, "draw").backward_flops, 0);
  // A rank-3 input is named in the error.
  GraphBuilder bad;
  bad.Data("z", {2, 4, 10}).Value("i", {2, 3}, kInt64);
  bad.Op("Multinomial", "draw", {"z"}, {"i"});
  Result<CostReport> e = AnalyzeCost(bad.graph(), {});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.message().find("draw"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("rank"), std::string::npos) << e.message();
}

TEST(LossCost, SoftmaxCrossEntropyAndNegativeLogLikelihood) {
  // scores [4,10] need a gradient, labels [4], class weights [10] (a constant, not a parameter).
  auto loss = [](const std::string& op, bool weights) {
    GraphBuilder b;
    b.Data("z0", {4, 10}).Param("s", {1}).Value("z", {4, 10}).Data("l", {4}, kInt64).Value("loss", {});
    b.Op("Mul", "m", {"z0", "s"}, {"z"});
    std::vector<std::string> in = {"z", "l"};
    if (weights) {
      b.Param("w", {10});
      in.push_back("w");
    }
    b.Op(op, "loss", in, {"loss"});
    return AnalyzeCost(b.graph(), {});
  };
  // SCE: log-softmax 5·40 = 200 + pick and sum 2·4 = 8 -> 208; backward 4·40 = 160.
  Result<CostReport> r = loss("SoftmaxCrossEntropyLoss", false);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "loss").forward_flops, 208);
  EXPECT_EQ(NodeNamed(*r, "loss").backward_flops, 160);
  // With class weights: 200 + 3·4 = 212; the weights are no parameters (only s counts).
  r = loss("SoftmaxCrossEntropyLoss", true);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "loss").forward_flops, 212);
  EXPECT_EQ(NodeNamed(*r, "loss").params, 0);
  EXPECT_EQ(r->totals.params, 1);
  // NLL: negate and sum 2·4 = 8; backward scatter 4.
  r = loss("NegativeLogLikelihoodLoss", false);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "loss").forward_flops, 8);
  EXPECT_EQ(NodeNamed(*r, "loss").backward_flops, 4);
}

}  // namespace
}  // namespace gpucast
