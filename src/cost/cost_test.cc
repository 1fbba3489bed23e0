// Cost rules against hand-computed counts on hand-built graphs.
// Units: 2 FLOPs per multiply-add (MAC).
#include "cost/cost.h"
#include "cost/job_cost.h"

#include <gtest/gtest.h>

#include <optional>

#include "cost/test_graph.h"
#include "cost/test_nodes.h"

namespace gpucast {
namespace {

using testing::NodeNamed;
using testing::GraphBuilder;
using testing::IntAttr;
using testing::IntsAttr;
using testing::kFloat;
using testing::kInt64;

CostReport Analyze(const GraphBuilder& b, bool amp = false) {
  Result<CostReport> r = AnalyzeCost(b.graph(), CostOptions{amp});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? r.value() : CostReport{};
}

int64_t CategoryFlops(const CostReport& r, Category c) {
  return r.totals.flops_by_category[static_cast<int>(c)];
}

TEST(ConvCost, FirstLayerWithBiasHasNoInputGradient) {
  // X[2,3,8,8] * W[4,3,3,3] -> Y[2,4,6,6] (no padding).
  // MACs = N·Cout·∏out·Cin·∏k = 2·4·36·3·9 = 7776; bias adds = 2·4·36 = 288.
  GraphBuilder b;
  b.Data("x", {2, 3, 8, 8}).Param("w", {4, 3, 3, 3}).Param("b", {4}).Value("y", {2, 4, 6, 6});
  b.Op("Conv", "conv", {"x", "w", "b"}, {"y"});
  CostReport r = Analyze(b);
  const NodeCost& n = NodeNamed(r, "conv");
  EXPECT_EQ(n.category, Category::kConvolution);
  EXPECT_EQ(n.forward_flops, 2 * 7776 + 288);
  // x is a data input: only dW (2·7776) and db (288).
  EXPECT_EQ(n.backward_flops, 2 * 7776 + 288);
  EXPECT_EQ(n.params, 4 * 3 * 3 * 3 + 4);
  EXPECT_EQ(n.weight_bytes, (108 + 4) * 4);
  EXPECT_EQ(n.activation_bytes, 2 * 4 * 36 * 4);
  EXPECT_EQ(n.input_bytes, 2 * 3 * 64 * 4);
}

TEST(ConvCost, DeformConvSamplesThenConvolves) {
  // X [1,2,5,5], W [3,2,3,3] (K = 9), offset [1,18,3,3] -> Y [1,3,3,3]: 9 positions.
  // MACs = 1·3·9·2·9 = 486; samples S = N·C·K·positions = 1·2·9·9 = 162.
  // Forward 2·486 + 7·162 = 2106. Backward: only W trains (X, offset are data): 972.
  GraphBuilder b;
  b.Data("x", {1, 2, 5, 5}).Param("w", {3, 2, 3, 3}).Data("off", {1, 18, 3, 3}).Value("y", {1, 3, 3, 3});
  b.Op("DeformConv", "dc", {"x", "w", "off"}, {"y"});
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "dc").category, Category::kConvolution);
  EXPECT_EQ(NodeNamed(r, "dc").forward_flops, 2106);
  EXPECT_EQ(NodeNamed(r, "dc").backward_flops, 972);
  EXPECT_EQ(NodeNamed(r, "dc").params, 54);
  // With a mask (data) and an offset that needs a grad (scaled by a parameter): forward + S =
  // 2268; backward dW 972 + samples' grad 972 + d offset 16·162 = 2592 -> 4536.
  GraphBuilder m;
  m.Data("x", {1, 2, 5, 5}).Param("w", {3, 2, 3, 3}).Data("off0", {1, 18, 3, 3}).Param("s", {1});
  m.Value("off", {1, 18, 3, 3}).Data("mask", {1, 9, 3, 3}).Value("y", {1, 3, 3, 3});
  m.Op("Mul", "scale", {"off0", "s"}, {"off"});
  m.Op("DeformConv", "dc", {"x", "w", "off", "", "mask"}, {"y"});
  r = Analyze(m);
  EXPECT_EQ(NodeNamed(r, "dc").forward_flops, 2268);
  EXPECT_EQ(NodeNamed(r, "dc").backward_flops, 4536);
}

TEST(ConvCost, DepthwiseAndGroupedStridedConvs) {
  // c1: 1×1 conv on data, so its output requires a gradient.
  // dw: depthwise X[1,8,10,10], W[8,1,3,3], group 8, stride 2, pad 1 -> [1,8,5,5]:
  //     MACs = 1·8·25·(8/8)·9 = 1800.
  // gc: group 2, X[1,8,10,10], W[6,4,1,1] -> [1,6,10,10]: MACs = 6·100·4 = 2400.
  GraphBuilder b;
  b.Data("x", {1, 3, 10, 10}).Param("w1", {8, 3, 1, 1}).Value("a", {1, 8, 10, 10});
  b.Param("wd", {8, 1, 3, 3}).Value("d", {1, 8, 5, 5});
  b.Param("wg", {6, 4, 1, 1}).Value("g", {1, 6, 10, 10});
  b.Op("Conv", "c1", {"x", "w1"}, {"a"});
  Node& dw = b.Op("Conv", "dw", {"a", "wd"}, {"d"});
  dw.attrs["group"] = IntAttr(8);
  dw.attrs["strides"] = IntsAttr({2, 2});
  dw.attrs["pads"] = IntsAttr({1, 1, 1, 1});
  b.Op("Conv", "gc", {"a", "wg"}, {"g"}).attrs["group"] = IntAttr(2);
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "c1").forward_flops, 2 * 800 * 3);
  EXPECT_EQ(NodeNamed(r, "c1").backward_flops, 2 * 800 * 3);  // dW only
  EXPECT_EQ(NodeNamed(r, "dw").forward_flops, 2 * 1800);
  EXPECT_EQ(NodeNamed(r, "dw").backward_flops, 2 * 1800 + 2 * 1800);  // dW + dX
  EXPECT_EQ(NodeNamed(r, "gc").forward_flops, 2 * 2400);
  EXPECT_EQ(NodeNamed(r, "gc").backward_flops, 4 * 2400);
}

TEST(ConvCost, MalformedWeightIsAnErrorNamingTheNode) {
  GraphBuilder b;
  b.Data("x", {1, 8, 4, 4}).Param("w", {6, 3, 1, 1}).Value("y", {1, 6, 4, 4});
  b.Op("Conv", "Conv_3", {"x", "w"}, {"y"}).attrs["group"] = IntAttr(2);
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(),
            "m.onnx: node 'Conv_3' (Conv): weight has 3 input channels per group × group 2, input has 8");

  GraphBuilder c;
  c.Data("x", {1, 8, 4, 4}).Param("w", {6, 8, 1}).Value("y", {1, 6, 4, 4});
  c.Op("Conv", "Conv_4", {"x", "w"}, {"y"});
  r = AnalyzeCost(c.graph(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "m.onnx: node 'Conv_4' (Conv): weight has rank 3, want 4 (Cout, Cin/group, kernel...)");

  // A group whose product with the weight's channels overflows int64 (2^62 x 3;
  // tools/fuzz_inputs.py's conv_group_huge) is the same error, not a wrapped product.
  GraphBuilder d;
  d.Data("x", {1, 8, 4, 4}).Param("w", {6, 3, 1, 1}).Value("y", {1, 6, 4, 4});
  d.Op("Conv", "Conv_5", {"x", "w"}, {"y"}).attrs["group"] = IntAttr(int64_t{1} << 62);
  r = AnalyzeCost(d.graph(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "m.onnx: node 'Conv_5' (Conv): weight has 3 input channels per group × group "
                         "4611686018427387904, input has 8");
}

TEST(ConvCost, ConvTransposeLikeDcganGenerator) {
  // g1: X[2,100,1,1], W[100,512,4,4] -> [2,512,4,4]: MACs = N·Cin·∏in·Cout·∏k = 2·100·1·512·16.
  // g2: X[2,512,4,4], W[512,256,4,4], stride 2, pad 1 -> [2,256,8,8]:
  //     MACs = 2·512·16·256·16 = 67,108,864 (each input pixel scatters a 4×4×256 patch).
  GraphBuilder b;
  b.Data("z", {2, 100, 1, 1}).Param("w1", {100, 512, 4, 4}).Value("h1", {2, 512, 4, 4});
  b.Param("w2", {512, 256, 4, 4}).Value("h2", {2, 256, 8, 8});
  b.Op("ConvTranspose", "g1", {"z", "w1"}, {"h1"});
  b.Op("ConvTranspose", "g2", {"h1", "w2"}, {"h2"});
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "g1").forward_flops, 2LL * 2 * 100 * 512 * 16);
  EXPECT_EQ(NodeNamed(r, "g1").backward_flops, 2LL * 2 * 100 * 512 * 16);  // dW only
  EXPECT_EQ(NodeNamed(r, "g2").forward_flops, 2LL * 67108864);
  EXPECT_EQ(NodeNamed(r, "g2").backward_flops, 4LL * 67108864);
  EXPECT_EQ(NodeNamed(r, "g2").category, Category::kConvolution);
}

TEST(MatmulCost, GemmWithTransposedWeightAndBias) {
  // fc1: A[4,5] · W[3,5]ᵀ + C[3]: M=4, N=3, K=5 -> 60 MACs, 12 bias adds.
  // fc2: y[4,3] · w2[3,2]: 24 MACs; y needs a gradient (it derives from W).
  GraphBuilder b;
  b.Data("a", {4, 5}).Param("w", {3, 5}).Param("c", {3}).Value("y", {4, 3});
  b.Param("w2", {3, 2}).Value("z", {4, 2});
  b.Op("Gemm", "fc1", {"a", "w", "c"}, {"y"}).attrs["transB"] = IntAttr(1);
  b.Op("Gemm", "fc2", {"y", "w2"}, {"z"});
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "fc1").forward_flops, 2 * 60 + 12);
  EXPECT_EQ(NodeNamed(r, "fc1").backward_flops, 2 * 60 + 12);  // dW + dC, no dA
  EXPECT_EQ(NodeNamed(r, "fc1").params, 18);
  EXPECT_EQ(NodeNamed(r, "fc2").forward_flops, 48);
  EXPECT_EQ(NodeNamed(r, "fc2").backward_flops, 96);  // dA + dW

  // w2 given as [2,3] without transB: K = 3 from A, 2 from B.
  GraphBuilder bad;
  bad.Data("y", {4, 3}).Param("w2", {2, 3}).Value("z", {4, 3});
  bad.Op("Gemm", "fc2", {"y", "w2"}, {"z"});
  Result<CostReport> e = AnalyzeCost(bad.graph(), {});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.message(), "m.onnx: node 'fc2' (Gemm): inner dimensions differ: A gives 3, B gives 2");
}

TEST(MatmulCost, BatchedAndBroadcastMatMul) {
  // p[2,3,4,5] · q[2,3,5,6] -> [2,3,4,6]: 2·3·4·6·5 = 720 MACs, both operands need grads.
  // x[2,7,8] · w[8,3] -> [2,7,3]: 2·7·3·8 = 336 MACs, only dW.
  // x · x2ᵀ of two data inputs: no backward.
  GraphBuilder b;
  b.Param("p", {2, 3, 4, 5}).Param("q", {2, 3, 5, 6}).Value("pq", {2, 3, 4, 6});
  b.Data("x", {2, 7, 8}).Param("w", {8, 3}).Value("xw", {2, 7, 3});
  b.Data("x2", {2, 8, 7}).Value("xx", {2, 7, 7});
  b.Op("MatMul", "bmm", {"p", "q"}, {"pq"});
  b.Op("MatMul", "lin", {"x", "w"}, {"xw"});
  b.Op("MatMul", "data", {"x", "x2"}, {"xx"});
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "bmm").forward_flops, 1440);
  EXPECT_EQ(NodeNamed(r, "bmm").backward_flops, 2880);
  EXPECT_EQ(NodeNamed(r, "lin").forward_flops, 672);
  EXPECT_EQ(NodeNamed(r, "lin").backward_flops, 672);
  EXPECT_EQ(NodeNamed(r, "data").forward_flops, 2 * 2 * 7 * 7 * 8);
  EXPECT_EQ(NodeNamed(r, "data").backward_flops, 0);
  EXPECT_EQ(CategoryFlops(r, Category::kMatmul), 1440 + 2880 + 672 + 672 + 1568);
}

TEST(RecurrentCost, LstmHandCount) {
  // X[seq=5, B=2, I=3], H=4, one direction, with bias; g=4, gH=16. Per step:
  //   linear  2·B·I·gH + 2·B·H·gH = 192 + 256 = 448
  //   combine B·gH = 32;  bias 2·B·gH = 64
  //   gates   B·H·18 = 144  (3 sigmoids ×4, 2 tanh, c update 3, h update 1)
  //   = 688 per step, ×5 steps = 3440.
  // Backward per step (X is data: no dX): recurrence 256 + 2·(32+144) + dW 192 + dR 256 + dB 64
  //   = 1120, ×5 = 5600.
  GraphBuilder b;
  b.Data("x", {5, 2, 3}).Param("W", {1, 16, 3}).Param("R", {1, 16, 4}).Param("B", {1, 32});
  b.Value("y", {5, 1, 2, 4}).Value("yh", {1, 2, 4}).Value("yc", {1, 2, 4});
  b.Op("LSTM", "lstm", {"x", "W", "R", "B"}, {"y", "yh", "yc"}).attrs["hidden_size"] = IntAttr(4);
  CostReport r = Analyze(b);
  const NodeCost& n = NodeNamed(r, "lstm");
  EXPECT_EQ(n.category, Category::kRecurrent);
  EXPECT_EQ(n.forward_flops, 3440);
  EXPECT_EQ(n.backward_flops, 5600);
  EXPECT_EQ(n.params, 48 + 64 + 32);
}

TEST(RecurrentCost, BidirectionalGruAndRnnHandCount) {
  // GRU: X[4,1,3], H=2, 2 directions, no bias; g=3, gH=6. Per step and direction:
  //   linear 2·1·3·6 + 2·1·2·6 = 36 + 24 = 60; combine 6; gates 1·2·14 = 28 -> 94.
  //   ×4 steps ×2 directions = 752.
  // RNN: X[3,2,2], H=3, bias; gH=3. Per step: linear 2·2·2·3 + 2·2·3·3 = 24 + 36 = 60;
  //   combine 6; bias 12; tanh 6 -> 84; ×3 = 252.
  GraphBuilder b;
  b.Data("x", {4, 1, 3}).Param("W", {2, 6, 3}).Param("R", {2, 6, 2}).Value("y", {4, 2, 1, 2});
  b.Op("GRU", "gru", {"x", "W", "R"}, {"y"}).attrs["hidden_size"] = IntAttr(2);
  b.Data("u", {3, 2, 2}).Param("Wr", {1, 3, 2}).Param("Rr", {1, 3, 3}).Param("Br", {1, 6});
  b.Value("v", {3, 1, 2, 3});
  b.Op("RNN", "rnn", {"u", "Wr", "Rr", "Br"}, {"v"}).attrs["hidden_size"] = IntAttr(3);
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "gru").forward_flops, 752);
  EXPECT_EQ(NodeNamed(r, "rnn").forward_flops, 252);
  // RNN backward per step: recurrence 36 + 2·(6+6) + dW 24 + dR 36 + dB 12 = 132, ×3 = 396.
  EXPECT_EQ(NodeNamed(r, "rnn").backward_flops, 396);
}

TEST(RecurrentCost, WeightShapeMismatchIsAnError) {
  GraphBuilder b;
  b.Data("x", {5, 2, 3}).Param("W", {1, 12, 3}).Param("R", {1, 16, 4}).Value("y", {5, 1, 2, 4});
  b.Op("LSTM", "LSTM_7", {"x", "W", "R"}, {"y"}).attrs["hidden_size"] = IntAttr(4);
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "m.onnx: node 'LSTM_7' (LSTM): weight W is 12×3, want 16×3");
}

// A post-norm Transformer encoder layer as PyTorch exports it before opset 17
// (LayerNorm decomposed), d=8, 2 heads (dh=4), FFN 16, batch B=2, seq S=5.
GraphBuilder EncoderLayer() {
  const int64_t B = 2, S = 5, D = 8, Hh = 2, Dh = 4, F = 16;
  GraphBuilder b("enc.onnx", B);
  b.Data("x", {B, S, D});
  auto proj = [&](const std::string& p, const std::string& in, int64_t din, int64_t dout) {
    b.Param(p + ".w", {din, dout}).Param(p + ".b", {dout});
    b.Value(p + ".mm", {B, S, dout}).Value(p + ".out", {B, S, dout});
    b.Op("MatMul", p + "_mm", {in, p + ".w"}, {p + ".mm"});
    b.Op("Add", p + "_bias", {p + ".mm", p + ".b"}, {p + ".out"});
  };
  proj("q", "x", D, D);
  proj("k", "x", D, D);
  proj("v", "x", D, D);
  b.Value("q4", {B, S, Hh, Dh}).Value("qh", {B, Hh, S, Dh}).Value("k4", {B, S, Hh, Dh});
  b.Value("kt", {B, Hh, Dh, S}).Value("v4", {B, S, Hh, Dh}).Value("vh", {B, Hh, S, Dh});
  b.Value("shape4", {4}, kInt64).Value("shape3", {3}, kInt64);
  b.Op("Constant", "shape4_c", {}, {"shape4"});
  b.Op("Constant", "shape3_c", {}, {"shape3"});
  b.Op("Reshape", "q_split", {"q.out", "shape4"}, {"q4"});
  b.Op("Transpose", "q_t", {"q4"}, {"qh"});
  b.Op("Reshape", "k_split", {"k.out", "shape4"}, {"k4"});
  b.Op("Transpose", "k_t", {"k4"}, {"kt"});
  b.Op("Reshape", "v_split", {"v.out", "shape4"}, {"v4"});
  b.Op("Transpose", "v_t", {"v4"}, {"vh"});
  b.Value("scale", {});
  b.Op("Constant", "scale_c", {}, {"scale"});
  b.Value("scores", {B, Hh, S, S}).Value("scaled", {B, Hh, S, S}).Value("probs", {B, Hh, S, S});
  b.Value("ctx", {B, Hh, S, Dh}).Value("ctx_t", {B, S, Hh, Dh}).Value("ctx3", {B, S, D});
  b.Op("MatMul", "scores_mm", {"qh", "kt"}, {"scores"});
  b.Op("Div", "scores_div", {"scores", "scale"}, {"scaled"});
  b.Op("Softmax", "softmax", {"scaled"}, {"probs"});
  b.Op("MatMul", "ctx_mm", {"probs", "vh"}, {"ctx"});
  b.Op("Transpose", "ctx_tr", {"ctx"}, {"ctx_t"});
  b.Op("Reshape", "ctx_merge", {"ctx_t", "shape3"}, {"ctx3"});
  proj("o", "ctx3", D, D);
  b.Value("res1", {B, S, D});
  b.Op("Add", "res1_add", {"x", "o.out"}, {"res1"});
  testing::DecomposedLayerNorm(b, "ln1_", "res1", "ln1.out", {B, S, D});
  proj("ff1", "ln1.out", D, F);
  b.Value("relu", {B, S, F});
  b.Op("Relu", "ff_relu", {"ff1.out"}, {"relu"});
  proj("ff2", "relu", F, D);
  b.Value("res2", {B, S, D});
  b.Op("Add", "res2_add", {"ln1.out", "ff2.out"}, {"res2"});
  testing::DecomposedLayerNorm(b, "ln2_", "res2", "ln2.out", {B, S, D});
  return b;
}

TEST(TransformerCost, EncoderLayerHandCount) {
  // Forward, with B·S = 10 tokens, d = 8:
  //   Q, K, V, out projections: 4 × 2·10·8·8 = 5120; scores 2·B·h·S·S·dh = 800; context 800;
  //   FFN 2·10·8·16 ×2 = 5120 -> matmul 11840.
  //   bias adds 4·80 + 160 + 80 = 560; scale Div 100; Softmax 5·100 = 500; residuals 160;
  //   ReLU 160; each LayerNorm: ReduceMean 80+10, Sub 80, Pow 80, ReduceMean 90, +eps 10,
  //   Sqrt 10, Div 80, Mul 80, Add 80 = 600, two of them 1200.
  //   Total 11840 + 560 + 100 + 500 + 160 + 160 + 1200 = 14520.
  // Matmul backward: Q/K/V projections see data x (dW only) 3·1280; scores and context
  //   both operands 2·1600; out projection and FFN dA + dB 2·1280 + 2·5120 -> 19840.
  CostReport r = Analyze(EncoderLayer());
  EXPECT_EQ(r.totals.forward_flops, 14520);
  EXPECT_EQ(CategoryFlops(r, Category::kMatmul), 11840 + 19840);
  EXPECT_EQ(r.totals.nodes_by_category[static_cast<int>(Category::kMatmul)], 8);
  EXPECT_EQ(r.totals.nodes_by_category[static_cast<int>(Category::kActivation)], 2);
  // params: 4·(64+8) + (128+16) + (128+8) + 2 LayerNorms ·(8+8) = 600
  EXPECT_EQ(r.totals.params, 4 * 72 + 144 + 136 + 2 * 16);
  EXPECT_TRUE(r.unsupported.empty());
  // Reshape is a view (no bytes), Transpose a copy (its output's bytes).
  EXPECT_EQ(NodeNamed(r, "q_split").activation_bytes, 0);
  EXPECT_EQ(NodeNamed(r, "q_t").activation_bytes, 80 * 4);
  EXPECT_EQ(NodeNamed(r, "q_t").forward_flops, 0);
}

TEST(BackwardRules, ActivationsNormAndPoolOnTinyGraph) {
  // data -> Conv (first layer) -> BN -> Relu -> MaxPool(2×2) ; also data + data.
  GraphBuilder b;
  b.Data("x", {1, 1, 4, 4}).Param("w", {2, 1, 1, 1}).Value("c", {1, 2, 4, 4});
  b.Param("s", {2}).Param("bb", {2}).Param("m", {2}).Param("v", {2}).Value("n", {1, 2, 4, 4});
  b.Value("r", {1, 2, 4, 4}).Value("p", {1, 2, 2, 2}).Value("xx", {1, 1, 4, 4});
  b.Op("Conv", "conv", {"x", "w"}, {"c"});
  b.Op("BatchNormalization", "bn", {"c", "s", "bb", "m", "v"}, {"n"});
  b.Op("Relu", "relu", {"n"}, {"r"});
  b.Op("MaxPool", "pool", {"r"}, {"p"}).attrs["kernel_shape"] = IntsAttr({2, 2});
  b.Op("Add", "dd", {"x", "x"}, {"xx"});
  CostReport r = Analyze(b);
  // conv: 32 MACs; dW only.
  EXPECT_EQ(NodeNamed(r, "conv").backward_flops, 64);
  // BN over 32 elements: forward 7/elem; backward 3 (dγ, dβ) + 4 (dx) per element.
  EXPECT_EQ(NodeNamed(r, "bn").forward_flops, 7 * 32);
  EXPECT_EQ(NodeNamed(r, "bn").backward_flops, 7 * 32);
  EXPECT_EQ(NodeNamed(r, "bn").params, 4);         // scale + bias; running stats are buffers
  EXPECT_EQ(NodeNamed(r, "bn").weight_bytes, 32);  // all four 2-element tensors
  EXPECT_EQ(NodeNamed(r, "relu").forward_flops, 32);
  EXPECT_EQ(NodeNamed(r, "relu").backward_flops, 32);
  // MaxPool: 8 outputs × 4 window compares; backward routes 1 grad per output.
  EXPECT_EQ(NodeNamed(r, "pool").forward_flops, 32);
  EXPECT_EQ(NodeNamed(r, "pool").backward_flops, 8);
  EXPECT_EQ(NodeNamed(r, "dd").forward_flops, 16);
  EXPECT_EQ(NodeNamed(r, "dd").backward_flops, 0);  // only data: no gradient at all
  EXPECT_EQ(r.totals.params, 2 + 4);
  EXPECT_EQ(r.totals.weight_bytes, (2 + 8) * 4);
}

// A small CNN at a given batch: Conv -> BN -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> LogSoftmax.
GraphBuilder SmallCnn(int64_t n) {
  GraphBuilder b("cnn.onnx", n);
  b.Data("x", {n, 3, 16, 16}).Param("w", {8, 3, 3, 3}).Param("cb", {8}).Value("c", {n, 8, 16, 16});
  b.Param("s", {8}).Param("bb", {8}).Param("m", {8}).Param("v", {8}).Value("bn", {n, 8, 16, 16});
  b.Value("r", {n, 8, 16, 16}).Value("g", {n, 8, 1, 1}).Value("f", {n, 8});
  b.Param("fw", {10, 8}).Param("fb", {10}).Value("y", {n, 10}).Value("ls", {n, 10});
  Node& conv = b.Op("Conv", "conv", {"x", "w", "cb"}, {"c"});
  conv.attrs["pads"] = IntsAttr({1, 1, 1, 1});
  b.Op("BatchNormalization", "bn", {"c", "s", "bb", "m", "v"}, {"bn"});
  b.Op("Relu", "relu", {"bn"}, {"r"});
  b.Op("GlobalAveragePool", "gap", {"r"}, {"g"});
  b.Op("Flatten", "flat", {"g"}, {"f"});
  b.Op("Gemm", "fc", {"f", "fw", "fb"}, {"y"}).attrs["transB"] = IntAttr(1);
  b.Op("LogSoftmax", "lsm", {"y"}, {"ls"});
  return b;
}

TEST(Scaling, CountsScaleExactlyLinearlyWithBatch) {
  CostReport one = Analyze(SmallCnn(1));
  for (int64_t n : {2, 7, 64, 1000}) {
    CostReport r = Analyze(SmallCnn(n));
    EXPECT_EQ(r.totals.forward_flops, n * one.totals.forward_flops) << n;
    EXPECT_EQ(r.totals.backward_flops, n * one.totals.backward_flops) << n;
    EXPECT_EQ(r.totals.activation_bytes, n * one.totals.activation_bytes) << n;
    EXPECT_EQ(r.totals.params, one.totals.params);
    EXPECT_EQ(r.totals.weight_bytes, one.totals.weight_bytes);
    EXPECT_EQ(r.totals.input_bytes_per_sample, 3 * 16 * 16 * 4);
  }
  // Hand count at batch 1: conv 8·256·27 = 55296 MACs + 2048 bias; BN 7·2048; ReLU 2048;
  // GAP 2048 + 8; Gemm 80 MACs + 10 bias; LogSoftmax 50.
  EXPECT_EQ(one.totals.forward_flops, 110592 + 2048 + 14336 + 2048 + 2056 + 170 + 50);
}

TEST(Overflow, HugeBatchConvIsAnErrorNotAWrap) {
  const int64_t n = 1000000000000;  // 10^12
  GraphBuilder b("m.onnx", n);
  b.Data("x", {n, 3, 224, 224}).Param("w", {64, 3, 7, 7}).Value("y", {n, 64, 112, 112});
  b.Op("Conv", "Conv_0", {"x", "w"}, {"y"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "m.onnx: node 'Conv_0' (Conv): FLOP count overflows int64 at batch 1000000000000");
}

TEST(Unsupported, UnknownOpsCustomDomainsAndUnknownShapesAreReported) {
  GraphBuilder b;
  b.Data("x", {2, 4}).Value("a", {2, 4}).Value("c", {2, 4}).Value("d", {2, 4}).Unknown("u");
  b.Value("e", {2, 4});
  b.Op("Det", "e1", {"x"}, {"a"});
  b.Op("Det", "e2", {"a"}, {"c"});
  b.Op("FusedGemm", "f", {"c"}, {"d"}).domain = "com.microsoft";
  b.Op("Relu", "r", {"d"}, {"u"});
  b.Op("Relu", "ok", {"d"}, {"e"});
  CostReport r = Analyze(b);
  ASSERT_EQ(r.unsupported.size(), 3u);
  EXPECT_EQ(r.unsupported[0].op_type, "Det");
  EXPECT_EQ(r.unsupported[0].count, 2);
  EXPECT_EQ(r.unsupported[0].reason, "no cost rule");
  EXPECT_EQ(r.unsupported[1].op_type, "Relu");
  EXPECT_EQ(r.unsupported[1].count, 1);
  EXPECT_EQ(r.unsupported[1].reason, "input or output shape unknown");
  EXPECT_EQ(r.unsupported[2].op_type, "com.microsoft::FusedGemm");
  EXPECT_EQ(r.unsupported[2].reason, "custom domain 'com.microsoft' has no cost rules");
  EXPECT_EQ(NodeNamed(r, "e1").category, Category::kUnsupported);
  EXPECT_EQ(r.totals.nodes_by_category[static_cast<int>(Category::kUnsupported)], 4);
  EXPECT_EQ(NodeNamed(r, "ok").forward_flops, 8);
  EXPECT_EQ(r.totals.num_nodes, 5);
  EXPECT_EQ(r.UncostedNodes(), 4);
  EXPECT_EQ(r.first_uncosted, "node 'e1' (Det): no cost rule");
  EXPECT_EQ(RequireCompleteCost(r).message(),
            "m.onnx: cannot predict from a partial cost report: 4 of 5 nodes could not be costed; "
            "first: node 'e1' (Det): no cost rule");
}

TEST(Unsupported, FirstUncostedNodeCarriesTheLoadersShapeInferenceFailure) {
  // As BERT at seq 1024: the embedding sum broadcasts [2,8,4] with a position
  // table slice of only [1,6,4]; the loader's inference fails there, and every
  // node downstream has no shape.
  GraphBuilder b("bert.onnx", 2);
  b.Data("x", {2, 8, 4}).Param("pos", {1, 6, 4}).Unknown("sum").Unknown("act");
  b.Warn("bert.onnx: node 'emb_add' (Add): shape inference failed: [ShapeInferenceError] "
         "Incompatible dimensions");
  b.Op("Add", "emb_add", {"x", "pos"}, {"sum"});
  b.Op("Relu", "relu", {"sum"}, {"act"});
  CostReport r = Analyze(b);
  EXPECT_EQ(r.UncostedNodes(), 2);
  EXPECT_EQ(RequireCompleteCost(r).message(),
            "bert.onnx: cannot predict from a partial cost report: 2 of 2 nodes could not be costed; "
            "first: node 'emb_add' (Add): input or output shape unknown (input shapes [2,8,4] [1,6,4]; "
            "unknown: output 'sum'): shape "
            "inference failed: [ShapeInferenceError] Incompatible dimensions");
  // A complete report passes.
  GraphBuilder ok;
  ok.Data("x", {2, 4}).Value("y", {2, 4});
  ok.Op("Relu", "r", {"x"}, {"y"});
  CostReport c = Analyze(ok);
  EXPECT_TRUE(c.first_uncosted.empty());
  EXPECT_TRUE(RequireCompleteCost(c).ok());
}

TEST(Params, SharedWeightsThroughIdentityCountOnce) {
  // Exporters de-duplicate tied weights into Identity nodes: the Identity is free
  // and consumes nothing; the totals count the tensor once.
  GraphBuilder b;
  b.Data("x", {2, 4}).Param("w", {4, 4}).Param("w_id", {4, 4}).Value("h", {2, 4}).Value("y", {2, 4});
  b.Op("Identity", "tie", {"w"}, {"w_id"});
  b.Op("MatMul", "l1", {"x", "w"}, {"h"});
  b.Op("MatMul", "l2", {"h", "w_id"}, {"y"});
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "tie").params, 0);
  EXPECT_EQ(NodeNamed(r, "l1").params, 16);
  EXPECT_EQ(NodeNamed(r, "l2").params, 16);
  EXPECT_EQ(r.totals.params, 16);
  EXPECT_EQ(r.totals.weight_bytes, 64);
}

TEST(Params, LinearWeightBehindTransposeIsCountedWithItsGradient) {
  // nn.Linear on 3-D input exports as MatMul(x, Transpose(W)) + Add(b).
  // x[2,3,8] data, W[5,8], b[5] -> y[2,3,5]. MACs = 2·3·5·8 = 240.
  // Forward 480; backward: x is data (no dX), dW through the Transpose = 480.
  // Params: 40 (W, counted at the MatMul) + 5 (b) = 45, as torch counts.
  GraphBuilder b("m.onnx", 2);
  b.Data("x", {2, 3, 8}).Param("W", {5, 8}).Param("b", {5});
  b.Value("Wt", {8, 5}).Value("xw", {2, 3, 5}).Value("y", {2, 3, 5});
  b.Op("Transpose", "t", {"W"}, {"Wt"});
  b.Op("MatMul", "mm", {"x", "Wt"}, {"xw"});
  b.Op("Add", "bias", {"xw", "b"}, {"y"});
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "t").params, 0);
  EXPECT_EQ(NodeNamed(r, "mm").params, 40);
  EXPECT_EQ(NodeNamed(r, "mm").forward_flops, 480);
  EXPECT_EQ(NodeNamed(r, "mm").backward_flops, 480);
  EXPECT_EQ(NodeNamed(r, "mm").weight_bytes, 160);
  EXPECT_EQ(NodeNamed(r, "mm").input_bytes, 2 * 3 * 8 * 4);  // the weight is not an input
  EXPECT_EQ(NodeNamed(r, "bias").params, 5);
  EXPECT_EQ(r.totals.params, 45);
  EXPECT_EQ(r.totals.weight_bytes, 45 * 4);
}

TEST(Params, RecurrentWeightsReorderedBySliceConcatCountOnce) {
  // torch exports an LSTM's gate reordering as Slice/Concat of weight_ih,
  // weight_hh and the biases, then Unsqueeze to [1, 4H, .]. H=2, I=3: W 8×3 = 24,
  // R 8×2 = 16, b_ih + b_hh 8 + 8 = 16: 56 parameters (torch's count).
  GraphBuilder b("m.onnx", 1);
  b.Data("x", {4, 1, 3}).Param("w_ih", {8, 3}).Param("w_hh", {8, 2}).Param("b_ih", {8}).Param("b_hh", {8});
  b.Value("s0", {4, 3}).Value("s1", {4, 3}).Value("wc", {8, 3}).Value("W", {1, 8, 3});
  b.Value("R", {1, 8, 2}).Value("bc", {16}).Value("B", {1, 16}).Value("y", {4, 1, 1, 2});
  b.Value("axis0", {1}, kInt64);
  b.Op("Constant", "c0", {}, {"axis0"});
  b.Op("Slice", "sl0", {"w_ih"}, {"s0"});
  b.Op("Slice", "sl1", {"w_ih"}, {"s1"});
  b.Op("Concat", "cat", {"s1", "s0"}, {"wc"});
  b.Op("Unsqueeze", "uw", {"wc", "axis0"}, {"W"});
  b.Op("Unsqueeze", "ur", {"w_hh", "axis0"}, {"R"});
  b.Op("Concat", "catb", {"b_ih", "b_hh"}, {"bc"});
  b.Op("Unsqueeze", "ub", {"bc", "axis0"}, {"B"});
  b.Op("LSTM", "lstm", {"x", "W", "R", "B"}, {"y"}).attrs["hidden_size"] = IntAttr(2);
  CostReport r = Analyze(b);
  const NodeCost& n = NodeNamed(r, "lstm");
  EXPECT_EQ(n.params, 24 + 16 + 16);
  EXPECT_EQ(r.totals.params, 56);
  // Backward includes dW, dR, dB: per step recurrence 2·1·2·8 = 32, gates 2·(8 + 1·2·18) = 88,
  // dW 2·1·3·8 = 48, dR 32, dB 2·8 = 16 (x is data) -> 216, × 4 steps = 864.
  EXPECT_EQ(n.backward_flops, 864);
  for (const char* free_op : {"sl0", "sl1", "cat", "uw", "ur", "catb", "ub"})
    EXPECT_EQ(NodeNamed(r, free_op).params, 0) << free_op;
}

TEST(Params, TiedWeightAndLearnedTokenCountOnce) {
  // A tied embedding/decoder (Gather of E, MatMul with Transpose(E)) counts E once;
  // a learned token concatenated with activations is consumed at the Concat.
  GraphBuilder b("m.onnx", 2);
  b.Data("ids", {2, 3}, kInt64).Param("E", {10, 4}).Param("cls", {1, 1, 4});
  b.Value("emb", {2, 3, 4}).Value("Et", {4, 10}).Value("tok", {2, 1, 4}).Value("seq", {2, 4, 4});
  b.Value("logits", {2, 4, 10}).Value("shape", {3}, kInt64);
  b.Op("Gather", "embed", {"E", "ids"}, {"emb"});
  b.Op("Constant", "c", {}, {"shape"});
  b.Op("Expand", "expand", {"cls", "shape"}, {"tok"});
  b.Op("Concat", "prepend", {"tok", "emb"}, {"seq"}).attrs["axis"] = IntAttr(1);
  b.Op("Transpose", "t", {"E"}, {"Et"});
  b.Op("MatMul", "decode", {"seq", "Et"}, {"logits"});
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "embed").category, Category::kEmbedding);
  EXPECT_EQ(NodeNamed(r, "embed").params, 40);
  EXPECT_EQ(NodeNamed(r, "expand").params, 0);       // still only the token
  EXPECT_EQ(NodeNamed(r, "prepend").params, 2 * 4);  // the expanded token meets the data here
  EXPECT_EQ(NodeNamed(r, "decode").params, 40);
  EXPECT_EQ(r.totals.params, 40 + 4);
}

TEST(Params, AMaskBufferComparedIsNotTrained) {
  // nanoGPT registers its causal mask as a float buffer (torch.tril(torch.ones(n, n))) and uses
  // it as att.masked_fill(bias[:, :, :T, :T] == 0, -inf); an export without weights makes the
  // buffer a graph input like the parameters. Only its comparison reads it: no gradient reaches
  // it, so it is a weight (resident) but not a parameter (torch's parameters() leaves buffers
  // out). The same tensor added to the scores is trained there.
  for (bool also_added : {false, true}) {
    GraphBuilder b("m.onnx", 2);
    b.Data("att", {2, 4, 4}).Param("bias", {8, 8}).Value("m", {4, 4}).Value("zero", {}, kFloat);
    b.Value("cond", {4, 4}, /*bool*/ 9).Value("ninf", {}, kFloat).Value("y", {2, 4, 4}).Value("z", {2, 4, 4});
    b.Op("Slice", "slice", {"bias"}, {"m"});
    b.Op("Constant", "c0", {}, {"zero"});
    b.Op("Constant", "c1", {}, {"ninf"});
    b.Op("Equal", "eq", {"m", "zero"}, {"cond"});
    b.Op("Where", "fill", {"cond", "ninf", "att"}, {"y"});
    if (also_added) b.Op("Add", "add", {"y", "m"}, {"z"});
    CostReport r = Analyze(b);
    EXPECT_EQ(NodeNamed(r, "eq").params, 0);
    EXPECT_EQ(r.totals.params, also_added ? 64 : 0) << also_added;
    EXPECT_EQ(r.totals.weight_bytes, 64 * 4) << also_added;  // resident either way
  }
}

TEST(Params, BuffersAreResidentButNeverTrained) {
  // Normalization inside the model, ((x - mean) / std) -> Conv, with mean and std registered
  // buffers [1, 3, 1, 1], and a sinusoidal position table pe [16, 3] (a buffer) sliced to the
  // input's 4 rows and added to the data. x[2,3,4,4] data; Conv w[2,3,1,1] + b[2] -> [2,2,4,4].
  // Params are torch's: w + b = 8. Nothing upstream of the Conv needs a gradient, so its
  // backward is dW and db only: dW 2 x (2·2·4·4 outputs x 3 multiply-adds) = 384, db 2·2·4·4 =
  // 64 (with a gradient for its input, dX would add another 384).
  GraphBuilder b("m.onnx", 2);
  b.Data("x", {2, 3, 4, 4}).Buffer("mean", {1, 3, 1, 1}).Buffer("std", {1, 3, 1, 1}).Buffer("pe", {16, 3});
  b.Param("w", {2, 3, 1, 1}).Param("b", {2});
  b.Value("c", {2, 3, 4, 4}).Value("n", {2, 3, 4, 4}).Value("y", {2, 2, 4, 4});
  b.Value("tok", {2, 4, 3}).Value("p4", {4, 3}).Value("t", {2, 4, 3});
  b.Op("Sub", "center", {"x", "mean"}, {"c"});
  b.Op("Div", "scale", {"c", "std"}, {"n"});
  b.Op("Conv", "conv", {"n", "w", "b"}, {"y"});
  b.Op("Slice", "rows", {"pe"}, {"p4"});  // a weight made of a buffer alone
  b.Op("Add", "position", {"tok", "p4"}, {"t"});
  CostReport r = Analyze(b);
  EXPECT_EQ(NodeNamed(r, "center").params, 0);
  EXPECT_EQ(NodeNamed(r, "scale").params, 0);
  EXPECT_EQ(NodeNamed(r, "position").params, 0);
  EXPECT_EQ(NodeNamed(r, "center").backward_flops, 0);
  EXPECT_EQ(NodeNamed(r, "conv").params, 8);
  EXPECT_EQ(NodeNamed(r, "conv").backward_flops, 384 + 64);
  EXPECT_EQ(r.totals.params, 8);
  EXPECT_EQ(r.totals.weight_bytes, (8 + 3 + 3 + 48) * 4);  // buffers are resident
}

TEST(Params, FrozenParametersAreCountedButGetNoGradient) {
  // Fine-tuning a head on a frozen backbone: x[4,8] data -> MatMul(w1[8,16], frozen) -> Relu ->
  // MatMul(w2[16,2]) -> y. torch counts both (128 + 32 = 160 parameters, 128 frozen). Nothing
  // before the head needs a gradient: the head's backward is dW2 only, 2·4·16·2 = 256 (no
  // gradient of its input, so the Relu and the backbone run no backward at all).
  GraphBuilder b("m.onnx", 4);
  b.Data("x", {4, 8}).Frozen("w1", {8, 16}).Param("w2", {16, 2});
  b.Value("h", {4, 16}).Value("r", {4, 16}).Value("y", {4, 2});
  b.Op("MatMul", "backbone", {"x", "w1"}, {"h"});
  b.Op("Relu", "relu", {"h"}, {"r"});
  b.Op("MatMul", "head", {"r", "w2"}, {"y"});
  CostReport r = Analyze(b);
  EXPECT_EQ(r.totals.params, 160);
  EXPECT_EQ(r.totals.frozen_params, 128);
  EXPECT_EQ(NodeNamed(r, "backbone").params, 0);  // a node's params are the ones it trains
  EXPECT_EQ(NodeNamed(r, "head").params, 32);
  EXPECT_EQ(NodeNamed(r, "backbone").backward_flops, 0);
  EXPECT_EQ(NodeNamed(r, "relu").backward_flops, 0);
  EXPECT_EQ(NodeNamed(r, "head").backward_flops, 256);
  EXPECT_EQ(r.totals.backward_flops, 256);
  EXPECT_EQ(r.totals.weight_bytes, 160 * 4);
}

TEST(Params, SparseGradientTablesGetTheLookedUpRows) {
  // nn.Embedding(100, 8, sparse=True) looked up by ids[4,5] (20 rows), a second sparse table
  // [50, 8] tied to an output projection (read by a MatMul: its gradient is dense), and a dense
  // table [30, 8]. The first's step gradient: 20 rows x (8 fp32 values + one int64 index) =
  // 20 x 40 = 800 bytes; the others none. torch counts every table (800 + 400 + 240).
  GraphBuilder b("m.onnx", 4);
  b.Data("ids", {4, 5}, kInt64).SparseTable("table", {100, 8}).SparseTable("tied", {50, 8}).Param("dense", {30, 8});
  b.Value("emb", {4, 5, 8}).Value("emb2", {4, 5, 8}).Value("emb3", {4, 5, 8}).Value("s", {4, 5, 8});
  b.Value("s2", {4, 5, 8}).Value("tiedT", {8, 50}).Value("logits", {4, 5, 50});
  b.Op("Gather", "lookup", {"table", "ids"}, {"emb"});
  b.Op("Gather", "lookup_tied", {"tied", "ids"}, {"emb2"});
  b.Op("Gather", "lookup_dense", {"dense", "ids"}, {"emb3"});
  b.Op("Add", "add", {"emb", "emb2"}, {"s"});
  b.Op("Add", "add2", {"s", "emb3"}, {"s2"});
  b.Op("Transpose", "t", {"tied"}, {"tiedT"});
  b.Op("MatMul", "project", {"s2", "tiedT"}, {"logits"});
  CostReport r = Analyze(b);
  EXPECT_EQ(r.totals.params, 800 + 400 + 240);
  EXPECT_EQ(r.totals.sparse_grad_params, 800);
  EXPECT_EQ(r.totals.sparse_grad_bytes, 20 * (8 * 4 + 8));
  EXPECT_EQ(NodeNamed(r, "lookup").sparse_grad_params, 800);
  EXPECT_EQ(NodeNamed(r, "lookup").sparse_grad_bytes, 800);
  EXPECT_EQ(NodeNamed(r, "lookup").params, 800);  // still trained: its optimizer state is the table's
  EXPECT_EQ(NodeNamed(r, "lookup_tied").sparse_grad_params, 0);
  EXPECT_EQ(NodeNamed(r, "lookup_dense").sparse_grad_params, 0);
  // The backward is the same scatter of the output's gradient, sparse or not.
  EXPECT_EQ(NodeNamed(r, "lookup").backward_flops, NodeNamed(r, "lookup_dense").backward_flops);

  // A network run twice per step (a GAN's D) looks up twice: twice the rows, the table once.
  Result<CostReport> twice = StepReport(r, 2, 0);
  ASSERT_TRUE(twice.ok()) << twice.message();
  EXPECT_EQ(twice->totals.sparse_grad_bytes, 2 * 800);
  EXPECT_EQ(twice->totals.sparse_grad_params, 800);
  // Its forward reads 20 rows x 8 fp32 a pass: 640 B, twice; the table (3,200 B) is not what it reads.
  EXPECT_EQ(NodeNamed(r, "lookup").lookup_bytes, 640);
  EXPECT_EQ(NodeNamed(*twice, "lookup").lookup_bytes, 2 * 640);

  // Gather on axis 1 of a sparse table reads columns, not rows: not a lookup, the gradient dense.
  GraphBuilder c("m.onnx", 1);
  c.Data("cols", {3}, kInt64).SparseTable("w", {10, 8}).Value("picked", {10, 3});
  c.Op("Gather", "columns", {"w", "cols"}, {"picked"}).attrs["axis"] = IntAttr(1);
  CostReport rc = Analyze(c);
  EXPECT_EQ(rc.totals.sparse_grad_params, 0);
  EXPECT_EQ(rc.totals.sparse_grad_bytes, 0);
  EXPECT_EQ(NodeNamed(rc, "columns").lookup_bytes, 0);
}

TEST(Embedding, GatherOfParameterTableIsAnEmbedding) {
  GraphBuilder b("m.onnx", /*batch=*/2);
  b.Data("ids", {2, 5}, kInt64).Param("table", {100, 8}).Value("emb", {2, 5, 8});
  b.Value("idx", {}, kInt64).Value("row", {5, 8});
  b.Op("Gather", "embed", {"table", "ids"}, {"emb"});
  b.Op("Constant", "c", {}, {"idx"});
  b.Op("Gather", "pick", {"emb", "idx"}, {"row"});
  CostReport r = Analyze(b);
  const NodeCost& e = NodeNamed(r, "embed");
  EXPECT_EQ(e.category, Category::kEmbedding);
  EXPECT_EQ(e.forward_flops, 0);
  EXPECT_EQ(e.backward_flops, 80);  // scatter-add one grad element per output element
  EXPECT_EQ(e.params, 800);
  // Its forward reads the 10 rows looked up (10 x 8 fp32 = 320 B), not the table (3,200 B).
  EXPECT_EQ(e.lookup_bytes, 320);
  EXPECT_EQ(e.weight_bytes, 3200);
  EXPECT_EQ(NodeNamed(r, "pick").lookup_bytes, 0);  // a Gather of an activation is a copy
  EXPECT_EQ(NodeNamed(r, "pick").category, Category::kDataMovement);
  EXPECT_EQ(NodeNamed(r, "pick").backward_flops, 40);
  EXPECT_EQ(NodeNamed(r, "pick").params, 0);
  EXPECT_EQ(r.totals.input_bytes_per_sample, 5 * 8);
}

// An EmbeddingBag-family node `op` (attribute mode `mode` unless empty) over a [100, 8] table at
// batch 4. The ids an activation (copied by a Cast: the input batch, and views of it, are counted
// as data, not as kept for backward); with `weights` given, per-sample weights of that shape made
// from a parameter (so they need a gradient) as the node's fourth input.
Result<CostReport> BagCost(const std::string& op, const std::string& mode, std::vector<int64_t> ids,
                           std::vector<int64_t> out, std::optional<std::vector<int64_t>> weights = std::nullopt) {
  GraphBuilder b("m.onnx", /*batch=*/4);
  b.Data("ids0", ids, kInt64).Value("ids", ids, kInt64).Param("table", {100, 8}).Value("bags", {}, kInt64);
  b.Value("y", out);
  b.Op("Cast", "flat", {"ids0"}, {"ids"}).attrs["to"] = IntAttr(7);
  b.Op("Constant", "c", {}, {"bags"});
  std::vector<std::string> in = {"table", "ids", "bags"};
  if (weights) {
    b.Param("scale", {1}).Data("w0", *weights).Value("w", *weights);
    b.Op("Mul", "weigh", {"w0", "scale"}, {"w"});
    in.push_back("w");
  }
  Node& n = b.Op(op, "bag", in, {"y"});
  if (!mode.empty()) n.attrs["mode"].s = mode;
  return AnalyzeCost(b.graph(), {});
}

// EmbeddingBag (torch's Loop export as the loader reads it, graph/torch_loops.h) by hand: 12 ids
// into 4 bags. Sum: 12 x 8 adds; mean: and 4 x 8 divides; backward: 12 x 8 scatter-adds into the
// table; the ids kept (12 int64). A node whose shapes or mode do not fit is an error naming it.
TEST(Embedding, EmbeddingBagByHandAndItsErrors) {
  Result<CostReport> sum = BagCost("EmbeddingBag", "sum", {12}, {4, 8});
  ASSERT_TRUE(sum.ok()) << sum.message();
  const NodeCost& s = NodeNamed(*sum, "bag");
  EXPECT_EQ(s.category, Category::kEmbedding);
  EXPECT_EQ(s.forward_flops, 96);
  EXPECT_EQ(s.backward_flops, 96);
  EXPECT_EQ(s.params, 800);
  EXPECT_EQ(s.saved_bytes, 12 * 8);
  EXPECT_EQ(s.lookup_bytes, 12 * 8 * 4);  // the 12 rows it adds up, fp32; the table is 3,200 B
  Result<CostReport> mean = BagCost("EmbeddingBag", "mean", {12}, {4, 8});
  ASSERT_TRUE(mean.ok()) << mean.message();
  EXPECT_EQ(NodeNamed(*mean, "bag").forward_flops, 96 + 32);
  EXPECT_EQ(BagCost("EmbeddingBag", "max", {12}, {4, 8}).message(),
            "m.onnx: node 'bag' (EmbeddingBag): attribute 'mode' is 'max', want sum or mean");
  EXPECT_EQ(BagCost("EmbeddingBag", "sum", {3, 4}, {4, 8}).message(),
            "m.onnx: node 'bag' (EmbeddingBag): input indices has rank 2, want 1 (lookups)");
  EXPECT_EQ(BagCost("EmbeddingBag", "sum", {12}, {4, 9}).message(),
            "m.onnx: node 'bag' (EmbeddingBag): output has shape [4,9], want [bags, 8] (the table's dim)");
}

// The two other forms by hand, 12 ids into 4 bags. Per-sample weights that need a gradient:
// forward 12 x 8 multiplies and adds; backward the table's 12 x 8 scaled scatter-adds (2 each) and
// each weight's dot product of its row with its bag's gradient (12 x 8 x 2); kept: the ids and the
// weights. Max: 12 x 8 comparisons; backward 4 x 8 (each output element's gradient to one row);
// kept: the ids and max_indices (4 x 8 int64).
TEST(Embedding, WeightedAndMaxEmbeddingBagsByHandAndTheirErrors) {
  Result<CostReport> weighted = BagCost("EmbeddingBag", "sum", {12}, {4, 8}, std::vector<int64_t>{12});
  ASSERT_TRUE(weighted.ok()) << weighted.message();
  const NodeCost& w = NodeNamed(*weighted, "bag");
  EXPECT_EQ(w.category, Category::kEmbedding);
  EXPECT_EQ(w.forward_flops, 2 * 96);
  EXPECT_EQ(w.backward_flops, 2 * 96 + 2 * 96);
  EXPECT_EQ(w.saved_bytes, 12 * 8 + 12 * 4);
  Result<CostReport> max = BagCost("EmbeddingBagMax", "", {12}, {4, 8});
  ASSERT_TRUE(max.ok()) << max.message();
  const NodeCost& m = NodeNamed(*max, "bag");
  EXPECT_EQ(m.category, Category::kEmbedding);
  EXPECT_EQ(m.forward_flops, 96);
  EXPECT_EQ(m.backward_flops, 32);
  EXPECT_EQ(m.params, 800);
  EXPECT_EQ(m.saved_bytes, 12 * 8 + 32 * 8);
  EXPECT_EQ(BagCost("EmbeddingBag", "mean", {12}, {4, 8}, std::vector<int64_t>{12}).message(),
            "m.onnx: node 'bag' (EmbeddingBag): per-sample weights with mode 'mean' (torch: sum only)");
  EXPECT_EQ(BagCost("EmbeddingBag", "sum", {12}, {4, 8}, std::vector<int64_t>{11}).message(),
            "m.onnx: node 'bag' (EmbeddingBag): input per-sample weights has shape [11], want the indices' [12]");
}

TEST(Amp, TrafficIsInAutocastsElementTypes) {
  // Batch 4. Under autocast the conv writes fp16 c [4,8,16,16] (8,192 elements: 16,384 B, fp32
  // 32,768); BatchNorm and ReLU keep their input's type (torch runs them on the fp16 tensor): read
  // and write 16,384 B each; the Gemm writes fp16 y [4,10] (80 B); LogSoftmax is on autocast's fp32
  // list: it reads y's 80 B and writes fp32 ls, 160 B.
  CostReport fp32 = Analyze(SmallCnn(4));
  CostReport amp = Analyze(SmallCnn(4), /*amp=*/true);
  EXPECT_EQ(NodeNamed(fp32, "conv").activation_bytes, 32768);
  EXPECT_EQ(NodeNamed(amp, "conv").activation_bytes, 16384);
  EXPECT_EQ(NodeNamed(amp, "bn").input_bytes, 16384);
  EXPECT_EQ(NodeNamed(amp, "bn").activation_bytes, 16384);
  EXPECT_EQ(NodeNamed(amp, "relu").input_bytes, 16384);
  EXPECT_EQ(NodeNamed(amp, "relu").activation_bytes, 16384);
  EXPECT_EQ(NodeNamed(fp32, "relu").activation_bytes, 32768);
  EXPECT_EQ(NodeNamed(amp, "fc").activation_bytes, 80);
  EXPECT_EQ(NodeNamed(amp, "lsm").input_bytes, 80);
  EXPECT_EQ(NodeNamed(amp, "lsm").activation_bytes, 160);
  EXPECT_EQ(NodeNamed(fp32, "lsm").input_bytes, 160);
  EXPECT_EQ(amp.totals.forward_flops, fp32.totals.forward_flops);
  EXPECT_EQ(amp.totals.weight_bytes, fp32.totals.weight_bytes);  // fp32 master weights
  EXPECT_TRUE(amp.amp);
}

// Memory kept for backward (saved_rules.cc), by hand. Batch 2:
// x[2,3,8,8] -> Conv(w[4,3,3,3], b) -> c[2,4,6,6] -> BN -> n -> Relu -> r -> MaxPool 2x2 -> p[2,4,3,3]
// -> Flatten -> f[2,36] -> Dropout -> d -> Gemm(w2[5,36]^T, b2) -> y[2,5] -> LogSoftmax -> z.
GraphBuilder SavedGraph() {
  GraphBuilder b("saved.onnx", 2);
  b.Data("x", {2, 3, 8, 8}).Param("w", {4, 3, 3, 3}).Param("b", {4}).Value("c", {2, 4, 6, 6});
  b.Param("s", {4}).Param("bb", {4}).Param("m", {4}).Param("v", {4}).Value("n", {2, 4, 6, 6});
  b.Value("r", {2, 4, 6, 6}).Value("p", {2, 4, 3, 3}).Value("f", {2, 36}).Value("d", {2, 36});
  b.Param("w2", {5, 36}).Param("b2", {5}).Value("y", {2, 5}).Value("z", {2, 5});
  b.Op("Conv", "conv", {"x", "w", "b"}, {"c"});
  b.Op("BatchNormalization", "bn", {"c", "s", "bb", "m", "v"}, {"n"});
  b.Op("Relu", "relu", {"n"}, {"r"});
  Node& pool = b.Op("MaxPool", "pool", {"r"}, {"p"});
  pool.attrs["kernel_shape"] = IntsAttr({2, 2});
  pool.attrs["strides"] = IntsAttr({2, 2});
  b.Op("Flatten", "flat", {"p"}, {"f"});
  b.Op("Dropout", "drop", {"f"}, {"d"});
  b.Op("Gemm", "fc", {"d", "w2", "b2"}, {"y"}).attrs["transB"] = IntAttr(1);
  b.Op("LogSoftmax", "lsm", {"y"}, {"z"});
  return b;
}

TEST(SavedBytes, Fp32ByHand) {
  CostReport r = Analyze(SavedGraph());
  // conv keeps x, a data input (resident: data_input_bytes); bn its input c (288 x 4) and
  // cuDNN's save_mean and save_invstd of its 4 channels (2 x 4 x 4); relu its output r
  // (288 x 4); pool r again (already kept) + int64 indices (72 x 8); flatten nothing; dropout a 1-byte mask (72); fc its input d (72 x 4); log-softmax z (10 x 4).
  EXPECT_EQ(NodeNamed(r, "conv").saved_bytes, 0);
  EXPECT_EQ(NodeNamed(r, "bn").saved_bytes, 1152 + 32);
  EXPECT_EQ(NodeNamed(r, "bn").saved_tensors, (std::vector<int64_t>{1152, 16, 16}));
  EXPECT_EQ(NodeNamed(r, "relu").saved_bytes, 1152);
  EXPECT_EQ(NodeNamed(r, "pool").saved_bytes, 576);
  EXPECT_EQ(NodeNamed(r, "flat").saved_bytes, 0);
  EXPECT_EQ(NodeNamed(r, "drop").saved_bytes, 72);
  EXPECT_EQ(NodeNamed(r, "fc").saved_bytes, 288);
  EXPECT_EQ(NodeNamed(r, "lsm").saved_bytes, 40);
  EXPECT_EQ(r.totals.saved_bytes, 1184 + 1152 + 576 + 72 + 288 + 40);
  EXPECT_EQ(r.totals.largest_tensor_bytes, 1152);  // c, n, r
  EXPECT_EQ(r.totals.data_input_bytes, 2 * 3 * 64 * 4);
  EXPECT_EQ(r.totals.autocast_weight_bytes, 0);
}

TEST(SavedBytes, AmpKeepsWhatAutocastMakes) {
  CostReport r = Analyze(SavedGraph(), /*amp=*/true);
  // conv (fp16 list) keeps an fp16 copy of x (384 x 2); c is fp16, so bn (input type) keeps
  // c at 2 bytes (its statistics stay fp32: 32) and makes n fp16; relu r fp16; pool indices
  // stay int64; fc's input d is fp16 already (72 x 2); log-softmax (fp32 list) keeps z in fp32 (10 x 4).
  EXPECT_EQ(NodeNamed(r, "conv").saved_bytes, 768);
  EXPECT_EQ(NodeNamed(r, "bn").saved_bytes, 576 + 32);
  EXPECT_EQ(NodeNamed(r, "relu").saved_bytes, 576);
  EXPECT_EQ(NodeNamed(r, "pool").saved_bytes, 576);
  EXPECT_EQ(NodeNamed(r, "drop").saved_bytes, 72);
  EXPECT_EQ(NodeNamed(r, "fc").saved_bytes, 144);
  EXPECT_EQ(NodeNamed(r, "lsm").saved_bytes, 40);
  EXPECT_EQ(r.totals.saved_bytes, 768 + 608 + 576 + 576 + 72 + 144 + 40);
  EXPECT_EQ(r.totals.largest_tensor_bytes, 576);
  // fp16 copies of the conv and fc weights and biases (108 + 4 + 180 + 5) x 2; BN's are not cast.
  EXPECT_EQ(r.totals.autocast_weight_bytes, 297 * 2);
}

TEST(SavedBytes, NothingKeptWithoutAGradient) {
  // data + data: no input needs a gradient, so no backward and nothing kept.
  GraphBuilder b("nograd.onnx", 4);
  b.Data("a", {4, 8}).Data("b", {4, 8}).Value("s", {4, 8}).Value("t", {4, 8});
  b.Op("Add", "add", {"a", "b"}, {"s"});
  b.Op("Mul", "mul", {"s", "s"}, {"t"});
  CostReport r = Analyze(b);
  EXPECT_EQ(r.totals.saved_bytes, 0);
  EXPECT_EQ(r.totals.largest_tensor_bytes, 0);
  EXPECT_EQ(r.totals.data_input_bytes, 2 * 4 * 8 * 4);
}

TEST(SavedBytes, LinearInTheBatch) {
  // Kept tensors are per sample: doubling the batch doubles them exactly.
  auto at = [](int64_t batch) {
    GraphBuilder b("lin.onnx", batch);
    b.Data("x", {batch, 16}).Param("w", {32, 16}).Value("h", {batch, 32}).Value("r", {batch, 32});
    b.Param("w2", {8, 32}).Value("y", {batch, 8});
    b.Op("Gemm", "fc1", {"x", "w"}, {"h"}).attrs["transB"] = IntAttr(1);
    b.Op("Relu", "relu", {"h"}, {"r"});
    b.Op("Gemm", "fc2", {"r", "w2"}, {"y"}).attrs["transB"] = IntAttr(1);
    return Analyze(b).totals.saved_bytes;
  };
  EXPECT_EQ(at(1), 32 * 4);
  EXPECT_EQ(at(64), 64 * at(1));
  EXPECT_EQ(at(1024), 1024 * at(1));
}

// GELU exported before opset 20: h -> Div(sqrt 2) -> Erf -> Add(1) -> Mul(h, .) -> Mul(0.5) = g,
// the scalars from Constant nodes. PyTorch's fused gelu keeps h only.
TEST(SavedBytes, GeluExportKeepsWhatTheFusedOpKeeps) {
  GraphBuilder b("gelu.onnx", 2);
  b.Data("x", {2, 8}).Param("w", {16, 8}).Value("h", {2, 16});
  b.Value("c1", {}).Value("c2", {}).Value("c3", {});
  b.Value("u", {2, 16}).Value("e", {2, 16}).Value("a", {2, 16}).Value("m", {2, 16}).Value("g", {2, 16});
  b.Param("w2", {4, 16}).Value("y", {2, 4});
  b.Op("Gemm", "fc1", {"x", "w"}, {"h"}).attrs["transB"] = IntAttr(1);
  b.Op("Constant", "k1", {}, {"c1"});
  b.Op("Constant", "k2", {}, {"c2"});
  b.Op("Constant", "k3", {}, {"c3"});
  b.Op("Div", "div", {"h", "c1"}, {"u"});
  b.Op("Erf", "erf", {"u"}, {"e"});
  b.Op("Add", "add", {"e", "c2"}, {"a"});
  b.Op("Mul", "mul", {"h", "a"}, {"m"});
  b.Op("Mul", "half", {"m", "c3"}, {"g"});
  b.Op("Gemm", "fc2", {"g", "w2"}, {"y"}).attrs["transB"] = IntAttr(1);
  CostReport r = Analyze(b);
  // h (2·16·4 = 128 bytes) on the pattern's first node; fc2 keeps g for dW2 (128).
  EXPECT_EQ(NodeNamed(r, "div").saved_bytes, 128);
  for (const char* inside : {"erf", "add", "mul", "half"}) EXPECT_EQ(NodeNamed(r, inside).saved_bytes, 0) << inside;
  EXPECT_EQ(NodeNamed(r, "fc2").saved_bytes, 128);
  EXPECT_EQ(r.totals.saved_bytes, 256);  // node by node it would be u, h, a and c3: 516
}

// LayerNorm exported before opset 17 (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add):
// PyTorch's fused layer_norm keeps its input, the mean and the standard deviation. At batch 1 the
// mean and the variance are one number each, like the constant eps the variance is added to: the
// pattern is still the fused op (before, Add(var, eps) had "no scalar input" and the chain was
// costed node by node, as a ConvNeXt's head LayerNorm over a 1x1 map was at batch 1).
TEST(SavedBytes, LayerNormExportKeepsWhatTheFusedOpKeeps) {
  for (int64_t batch : {2, 1}) {
    SCOPED_TRACE(batch);
    CostReport r = Analyze(testing::LayerNormMlp("ln.onnx", batch, /*decomposed=*/true));
    // h (batch·8·4 bytes), mu and sd (batch·4 each) on the first node; fc2 keeps o (batch·32).
    EXPECT_EQ(NodeNamed(r, "mean").saved_bytes, batch * (32 + 4 + 4));
    EXPECT_GT(NodeNamed(r, "mean").fused_op, 0);
    for (const char* inside : {"sub", "pow", "mean2", "addeps", "sqrt", "div", "scale", "shift"}) {
      EXPECT_EQ(NodeNamed(r, inside).saved_bytes, 0) << inside;
      EXPECT_EQ(NodeNamed(r, inside).fused_op, NodeNamed(r, "mean").fused_op) << inside;
    }
    EXPECT_EQ(r.totals.saved_bytes, batch * (40 + 32));
    // The opset-17 export keeps the same: h, and native_layer_norm's fp32 mean and rstd per row.
    CostReport f = Analyze(testing::LayerNormMlp("ln17.onnx", batch, /*decomposed=*/false));
    EXPECT_EQ(NodeNamed(f, "ln").saved_tensors, (std::vector<int64_t>{batch * 32, batch * 4, batch * 4}));
    EXPECT_EQ(NodeNamed(f, "ln").saved_bytes, NodeNamed(r, "mean").saved_bytes);
    EXPECT_EQ(f.totals.saved_bytes, r.totals.saved_bytes);
  }
  // A Sub that is not a LayerNorm keeps what its rules say (nothing): no pattern claimed.
  GraphBuilder c("sub.onnx", 2);
  c.Data("x", {2, 8}).Param("w", {8, 8}).Value("h", {2, 8}).Value("t", {2, 8}).Value("d", {2, 8});
  c.Op("Gemm", "fc1", {"x", "w"}, {"h"}).attrs["transB"] = IntAttr(1);
  c.Op("Relu", "relu", {"h"}, {"t"});
  c.Op("Sub", "sub", {"h", "t"}, {"d"});
  EXPECT_EQ(Analyze(c).totals.saved_bytes, 64);  // relu's output
}

// Each normalisation keeps its input and fp32 statistics per group (NormGroups), each statistic
// its own allocation; by hand on x[2, 4, 3, 3] fp32 (288 bytes), one op per graph.
TEST(SavedBytes, NormalisationStatisticsByHand) {
  struct Case {
    const char* op;
    std::optional<int64_t> axis, groups;
    std::vector<int64_t> affine;  // the scale's (and bias') shape
    std::vector<int64_t> kept;
  };
  const Case cases[] = {
      {"LayerNormalization", -1, {}, {3}, {288, 96, 96}},       // 24 rows of 3: mean, rstd 24 x 4 each
      {"LayerNormalization", 1, {}, {4, 3, 3}, {288, 8, 8}},    // 2 rows of 4 x 3 x 3
      {"RMSNormalization", -2, {}, {3, 3}, {288, 32}},          // 8 rows of 3 x 3: rstd only
      {"GroupNormalization", {}, 2, {4}, {288, 16, 16}},        // N x groups = 4
      {"BatchNormalization", {}, {}, {4}, {288, 16, 16}},       // 4 channels
      {"InstanceNormalization", {}, {}, {4}, {288, 32, 32}},    // N x C = 8
  };
  for (const Case& c : cases) {
    const std::string op = c.op;
    SCOPED_TRACE(op + " axis " + std::to_string(c.axis.value_or(0)));
    GraphBuilder b("norm.onnx", 2);
    b.Data("x", {2, 4}).Param("w", {4, 36}).Value("h", {2, 36}).Value("hr", {2, 4, 3, 3});
    b.Value("shape", {4}, kInt64).Value("n", {2, 4, 3, 3}).Param("scale", c.affine);
    b.Op("MatMul", "fc", {"x", "w"}, {"h"});
    b.Op("Constant", "k", {}, {"shape"});
    b.Op("Reshape", "view", {"h", "shape"}, {"hr"});
    std::vector<std::string> inputs = {"hr", "scale"};
    if (op == "BatchNormalization") {
      b.Param("bias", c.affine).Param("mean", c.affine).Param("var", c.affine);
      inputs = {"hr", "scale", "bias", "mean", "var"};
    } else if (op != "RMSNormalization") {
      b.Param("bias", c.affine);
      inputs.push_back("bias");
    }
    Node& n = b.Op(op, "norm", inputs, {"n"});
    if (c.axis) n.attrs["axis"] = IntAttr(*c.axis);
    if (c.groups) n.attrs["num_groups"] = IntAttr(*c.groups);
    const CostReport r = Analyze(b);
    EXPECT_EQ(NodeNamed(r, "norm").saved_tensors, c.kept);
    int64_t sum = 0;
    for (int64_t k : c.kept) sum += k;
    EXPECT_EQ(NodeNamed(r, "norm").saved_bytes, sum);
  }
}

}  // namespace
}  // namespace gpucast


namespace gpucast {
namespace {

using testing::GraphBuilder;

TEST(WeightRoots, AChainOfFreeOpsOverWeightsCountsEachParameterOnceInLinearTime) {
  // t_k = Concat(t_{k-1}, w_k) over 100,000 one-element parameters, then Mul(x, t): the
  // weight t is made of every w_k. Copying each weight's set of roots into the next
  // (before) made this quadratic: 1,000 / 2,000 / 4,000 links took 0.3 / 1.0 / 4.1 s
  // (tools/scale_probe.py's weight_concat_chain), so 100,000 would take some 40 minutes
  // by that growth (not run; the 300 s ctest timeout catches a return to it); the walk over the
  // weights' DAG visits each once (about 2 s here, most of it building the graph).
  constexpr int64_t kN = 100000;
  GraphBuilder b("chain.onnx", 2);
  b.Data("x", {2, kN + 1});
  b.Param("w0", {1});
  std::string prev = "w0";
  for (int64_t k = 1; k <= kN; ++k) {
    std::string w = "w" + std::to_string(k), t = "t" + std::to_string(k);
    b.Param(w, {1}).Value(t, {k + 1});
    b.Op("Concat", "c" + std::to_string(k), {prev, w}, {t}).attrs["axis"] = testing::IntAttr(0);
    prev = t;
  }
  b.Value("y", {2, kN + 1}).Output("y");
  b.Op("Mul", "mul", {"x", prev}, {"y"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->totals.params, kN + 1);  // each w_k once
  EXPECT_EQ(r->totals.weight_bytes, 4 * (kN + 1));
}

}  // namespace
}  // namespace gpucast
