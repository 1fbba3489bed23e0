// Output shapes of the opset 18-23 ops libonnx 1.12 has no schema for,
// against shapes worked out by hand from onnx/docs/Operators.md.
#include "graph/opset_gaps.h"

#include <gtest/gtest.h>

namespace gpucast {
namespace {

using Dims = std::vector<int64_t>;

Node MakeNode(const std::string& op, int outputs = 1) {
  Node n;
  n.name = "n";
  n.op_type = op;
  for (int i = 0; i < outputs; ++i) n.outputs.push_back("y" + std::to_string(i));
  return n;
}

GapInput Shape(Dims d) {
  GapInput g;
  g.present = true;
  g.dims = std::move(d);
  g.elem_type = 1;
  return g;
}

GapInput Values(const std::vector<int64_t>* v) {
  GapInput g = Shape({static_cast<int64_t>(v->size())});
  g.elem_type = 7;
  g.value = v;
  return g;
}

void SetInt(Node* n, const std::string& k, int64_t v) { n->attrs[k].i = v; }

std::optional<Dims> Out(const Result<std::vector<GapOutput>>& r, size_t i = 0) {
  EXPECT_TRUE(r.ok()) << r.message();
  if (!r.ok() || i >= r->size()) return std::nullopt;
  return (*r)[i].dims;
}

TEST(OpsetGaps, SinceVersionsFromTheSpec) {
  EXPECT_EQ(GapOpSince("Gelu"), 20);
  EXPECT_EQ(GapOpSince("GroupNormalization"), 18);
  EXPECT_EQ(GapOpSince("RMSNormalization"), 23);
  EXPECT_EQ(GapOpSince("Attention"), 23);
  EXPECT_EQ(GapOpSince("RotaryEmbedding"), 23);
  EXPECT_EQ(GapOpSince("BitwiseAnd"), 18);
  EXPECT_EQ(GapOpSince("AffineGrid"), 20);
  EXPECT_EQ(GapOpSince("Relu"), 0);
  // Below its opset the op does not exist: nothing is filled.
  auto r = InferGapOutputs(MakeNode("Gelu"), 17, {Shape({2, 3})});
  EXPECT_EQ(Out(r), std::nullopt);
}

TEST(OpsetGaps, GeluKeepsTheShapeAndChecksApproximate) {
  EXPECT_EQ(Out(InferGapOutputs(MakeNode("Gelu"), 20, {Shape({2, 3})})), (Dims{2, 3}));
  Node n = MakeNode("Gelu");
  n.attrs["approximate"].s = "tanh";
  EXPECT_EQ(Out(InferGapOutputs(n, 20, {Shape({2, 3})})), (Dims{2, 3}));
  n.attrs["approximate"].s = "sigmoid";
  EXPECT_EQ(InferGapOutputs(n, 20, {Shape({2, 3})}).message(),
            "attribute 'approximate' is 'sigmoid', want 'none' or 'tanh'");
}

TEST(OpsetGaps, GroupNormalizationScaleIsPerGroupAtOpset18AndPerChannelFrom21) {
  Node n = MakeNode("GroupNormalization");
  SetInt(&n, "num_groups", 4);
  EXPECT_EQ(Out(InferGapOutputs(n, 18, {Shape({2, 32, 8, 8}), Shape({4}), Shape({4})})), (Dims{2, 32, 8, 8}));
  EXPECT_EQ(Out(InferGapOutputs(n, 21, {Shape({2, 32, 8, 8}), Shape({32}), Shape({32})})), (Dims{2, 32, 8, 8}));
  EXPECT_EQ(InferGapOutputs(n, 21, {Shape({2, 32, 8, 8}), Shape({4}), Shape({4})}).message(),
            "scale has shape [4], want [32] (channels, opset >= 21)");
  EXPECT_EQ(InferGapOutputs(n, 18, {Shape({2, 32, 8, 8}), Shape({32}), Shape({4})}).message(),
            "scale has shape [32], want [4] (num_groups, opset 18-20)");
  EXPECT_EQ(InferGapOutputs(n, 21, {Shape({2, 30, 8}), Shape({30}), Shape({30})}).message(),
            "channels 30 do not divide by num_groups 4");
  SetInt(&n, "num_groups", 0);
  EXPECT_EQ(InferGapOutputs(n, 21, {Shape({2, 32})}).message(), "num_groups is 0, want >= 1");
  EXPECT_EQ(InferGapOutputs(MakeNode("GroupNormalization"), 21, {Shape({2, 32})}).message(),
            "attribute 'num_groups' missing");
}

TEST(OpsetGaps, RmsNormalizationAndRotaryEmbeddingKeepTheShape) {
  Node rms = MakeNode("RMSNormalization");
  EXPECT_EQ(Out(InferGapOutputs(rms, 23, {Shape({2, 5, 16}), Shape({16})})), (Dims{2, 5, 16}));
  SetInt(&rms, "axis", 3);
  EXPECT_EQ(InferGapOutputs(rms, 23, {Shape({2, 5, 16})}).message(), "axis 3 is out of range for rank 3");

  Node rope = MakeNode("RotaryEmbedding");
  EXPECT_EQ(Out(InferGapOutputs(rope, 23, {Shape({2, 4, 6, 8}), Shape({6, 4}), Shape({6, 4})})), (Dims{2, 4, 6, 8}));
  EXPECT_EQ(InferGapOutputs(rope, 23, {Shape({2, 6, 32})}).message(), "3-D input needs attribute 'num_heads' >= 1");
  SetInt(&rope, "num_heads", 4);
  EXPECT_EQ(Out(InferGapOutputs(rope, 23, {Shape({2, 6, 32})})), (Dims{2, 6, 32}));
  SetInt(&rope, "rotary_embedding_dim", 10);
  EXPECT_EQ(InferGapOutputs(rope, 23, {Shape({2, 6, 32})}).message(),
            "rotary_embedding_dim 10 is not even and within head size 8");
}

TEST(OpsetGaps, AttentionFourDimensionalWithGroupedKvHeadsAndACache) {
  // Q [2, 8, 5, 16], K/V with 2 kv heads, past of 3: Y [2, 8, 5, 32] (Dv = 32), present
  // [2, 2, 3 + 5, 16|32], qk [2, 8, 5, 8].
  Node n = MakeNode("Attention", 4);
  GapInput none;
  auto r = InferGapOutputs(n, 23, {Shape({2, 8, 5, 16}), Shape({2, 2, 5, 16}), Shape({2, 2, 5, 32}), none,
                                   Shape({2, 2, 3, 16}), Shape({2, 2, 3, 32})});
  EXPECT_EQ(Out(r, 0), (Dims{2, 8, 5, 32}));
  EXPECT_EQ(Out(r, 1), (Dims{2, 2, 8, 16}));
  EXPECT_EQ(Out(r, 2), (Dims{2, 2, 8, 32}));
  EXPECT_EQ(Out(r, 3), (Dims{2, 8, 5, 8}));
  // No cache: present = the new keys; cross attention (Skv 7 != Sq 5).
  r = InferGapOutputs(n, 23, {Shape({2, 8, 5, 16}), Shape({2, 8, 7, 16}), Shape({2, 8, 7, 16})});
  EXPECT_EQ(Out(r, 0), (Dims{2, 8, 5, 16}));
  EXPECT_EQ(Out(r, 1), (Dims{2, 8, 7, 16}));
  EXPECT_EQ(Out(r, 3), (Dims{2, 8, 5, 7}));
  // A past key of unknown shape: Y known, the cache outputs unknown.
  GapInput unknown;
  unknown.present = true;
  r = InferGapOutputs(n, 23, {Shape({2, 8, 5, 16}), Shape({2, 2, 5, 16}), Shape({2, 2, 5, 32}), none, unknown, unknown});
  EXPECT_EQ(Out(r, 0), (Dims{2, 8, 5, 32}));
  EXPECT_EQ(Out(r, 1), std::nullopt);
}

TEST(OpsetGaps, AttentionThreeDimensionalNeedsHeadCounts) {
  Node n = MakeNode("Attention");
  EXPECT_EQ(InferGapOutputs(n, 23, {Shape({2, 5, 64}), Shape({2, 5, 64}), Shape({2, 5, 64})}).message(),
            "3-D inputs need attributes 'q_num_heads' and 'kv_num_heads' >= 1");
  SetInt(&n, "q_num_heads", 4);
  SetInt(&n, "kv_num_heads", 2);
  // D = 64/4 = 16; K [2, 7, 2·16]; V [2, 7, 2·8] -> Dv 8; Y [2, 5, 4·8].
  EXPECT_EQ(Out(InferGapOutputs(n, 23, {Shape({2, 5, 64}), Shape({2, 7, 32}), Shape({2, 7, 16})})), (Dims{2, 5, 32}));
}

TEST(OpsetGaps, AttentionMismatchesAreErrors) {
  Node n = MakeNode("Attention");
  EXPECT_EQ(InferGapOutputs(n, 23, {Shape({2, 8, 5, 16}), Shape({2, 8, 5, 12}), Shape({2, 8, 5, 16})}).message(),
            "head size of K 12 differs from Q's 16");
  EXPECT_EQ(InferGapOutputs(n, 23, {Shape({2, 6, 5, 16}), Shape({2, 4, 5, 16}), Shape({2, 4, 5, 16})}).message(),
            "q heads 6 are not a multiple of kv heads 4");
  EXPECT_EQ(InferGapOutputs(n, 23, {Shape({2, 8, 5, 16}), Shape({2, 8, 5, 16}), Shape({2, 8, 6, 16})}).message(),
            "V [2,8,6,16] does not match K [2,8,5,16] in heads and sequence");
  EXPECT_EQ(InferGapOutputs(n, 23, {Shape({2, 8, 5, 16}), Shape({2, 8, 16}), Shape({2, 8, 5, 16})}).message(),
            "Q, K, V have ranks 4, 3, 4; want all 3 or all 4");
  EXPECT_EQ(InferGapOutputs(n, 23, {Shape({2, 8, 5, 16}), Shape({2, 8, 5, 16})}).message(), "input V is missing");
}

TEST(OpsetGaps, BitwiseBroadcastsLikeNumpy) {
  EXPECT_EQ(Out(InferGapOutputs(MakeNode("BitwiseAnd"), 18, {Shape({3, 1, 5}), Shape({4, 1})})), (Dims{3, 4, 5}));
  EXPECT_EQ(Out(InferGapOutputs(MakeNode("BitwiseNot"), 18, {Shape({3, 5})})), (Dims{3, 5}));
  EXPECT_EQ(InferGapOutputs(MakeNode("BitwiseXor"), 18, {Shape({3, 5}), Shape({4})}).message(),
            "shapes [3,5] and [4] do not broadcast");
}

// libonnx 1.12 defines LessOrEqual / GreaterOrEqual (12, 16) and MeanVarianceNormalization (9, 13)
// by a function body, with no shape rule of their own (its OpSchema says so; python's
// onnx.shape_inference runs the body instead): the rules here give them.
TEST(OpsetGaps, FunctionDefinedOpsOfLibonnxGetTheirShapes) {
  Result<std::vector<GapOutput>> ge = InferGapOutputs(MakeNode("GreaterOrEqual"), 16, {Shape({4, 8}), Shape({})});
  ASSERT_TRUE(ge.ok()) << ge.message();
  EXPECT_EQ((*ge)[0].dims, (Dims{4, 8}));  // x >= 0: the scalar broadcasts
  EXPECT_EQ((*ge)[0].elem_type, 9);        // BOOL
  EXPECT_EQ(Out(InferGapOutputs(MakeNode("LessOrEqual"), 12, {Shape({3, 1}), Shape({1, 5})})), (Dims{3, 5}));
  EXPECT_EQ(InferGapOutputs(MakeNode("LessOrEqual"), 16, {Shape({3}), Shape({4})}).message(),
            "shapes [3] and [4] do not broadcast");
  EXPECT_EQ(Out(InferGapOutputs(MakeNode("MeanVarianceNormalization"), 13, {Shape({2, 3, 5, 5})})),
            (Dims{2, 3, 5, 5}));
  EXPECT_EQ(GapOpSince("GreaterOrEqual"), 12);
  EXPECT_EQ(Out(InferGapOutputs(MakeNode("GreaterOrEqual"), 11, {Shape({4}), Shape({4})})), std::nullopt);
}

TEST(OpsetGaps, CenterCropPadCol2ImAffineGridFromTheirConstantInputs) {
  // CenterCropPad: [20, 10, 3] with shape [10, 7] on axes (0, 1) -> [10, 7, 3].
  Node ccp = MakeNode("CenterCropPad");
  ccp.attrs["axes"].ints = {0, 1};
  const std::vector<int64_t> crop = {10, 7};
  EXPECT_EQ(Out(InferGapOutputs(ccp, 18, {Shape({20, 10, 3}), Values(&crop)})), (Dims{10, 7, 3}));
  const std::vector<int64_t> crop3 = {10, 7, 3};
  EXPECT_EQ(InferGapOutputs(ccp, 18, {Shape({20, 10, 3}), Values(&crop3)}).message(), "shape has 3 values for 2 axes");

  // Col2Im (the spec's example): input [1, 5, 5], image [5, 5], block [1, 5]: blocks
  // (5 − 0 − 1)/1 + 1 = 5 by (5 − 4 − 1)/1 + 1 = 1 -> L = 5; C = 5/5 = 1 -> [1, 1, 5, 5].
  const std::vector<int64_t> image = {5, 5}, block = {1, 5};
  Node c2i = MakeNode("Col2Im");
  EXPECT_EQ(Out(InferGapOutputs(c2i, 18, {Shape({1, 5, 5}), Values(&image), Values(&block)})), (Dims{1, 1, 5, 5}));
  EXPECT_EQ(InferGapOutputs(c2i, 18, {Shape({1, 5, 6}), Values(&image), Values(&block)}).message(),
            "input dim 2 = 6, want the block count 5");

  // AffineGrid: theta [2, 2, 3], size [2, 3, 4, 5] -> [2, 4, 5, 2]; 3-D: [2, 3, 4] with
  // size [2, 1, 6, 4, 5] -> [2, 6, 4, 5, 3].
  const std::vector<int64_t> size2 = {2, 3, 4, 5}, size3 = {2, 1, 6, 4, 5};
  Node ag = MakeNode("AffineGrid");
  EXPECT_EQ(Out(InferGapOutputs(ag, 20, {Shape({2, 2, 3}), Values(&size2)})), (Dims{2, 4, 5, 2}));
  EXPECT_EQ(Out(InferGapOutputs(ag, 20, {Shape({2, 3, 4}), Values(&size3)})), (Dims{2, 6, 4, 5, 3}));
  EXPECT_EQ(InferGapOutputs(ag, 20, {Shape({2, 3, 4}), Values(&size2)}).message(),
            "theta has shape [2,3,4], want [2,2,3] for size [2,3,4,5]");
}

TEST(OpsetGaps, PadWithAxesAndDilatedAveragePoolReplaceTheOlderRules) {
  // Pad-18: [2, 6, 4] padded on axis -2 by 1 before, 2 after -> [2, 9, 4]; a crop of 7 fails.
  Node pad = MakeNode("Pad");
  pad.inputs = {"x", "pads", "", "axes"};
  EXPECT_FALSE(GapRuleApplies(pad, 17));
  EXPECT_TRUE(GapRuleApplies(pad, 18));
  const std::vector<int64_t> pads = {1, 2}, axes = {-2}, crop = {-7, 0};
  GapInput none;
  EXPECT_EQ(Out(InferGapOutputs(pad, 18, {Shape({2, 6, 4}), Values(&pads), none, Values(&axes)})), (Dims{2, 9, 4}));
  EXPECT_EQ(InferGapOutputs(pad, 18, {Shape({2, 6, 4}), Values(&crop), none, Values(&axes)}).message(),
            "padding axis -2 gives a negative or overflowing size");
  EXPECT_EQ(InferGapOutputs(pad, 18, {Shape({2, 6, 4}), Values(&axes), none, Values(&axes)}).message(),
            "pads has 1 values for 1 axes, want 2");
  pad.inputs = {"x", "pads"};
  EXPECT_FALSE(GapRuleApplies(pad, 21));  // no axes: libonnx's rule is right

  // AveragePool-19, x [1, 1, 7, 7], kernel 3×3, dilation 2 (span 5): (7 − 5)/1 + 1 = 3.
  Node pool = MakeNode("AveragePool");
  pool.attrs["kernel_shape"].ints = {3, 3};
  EXPECT_FALSE(GapRuleApplies(pool, 19));  // no dilations
  pool.attrs["dilations"].ints = {2, 2};
  EXPECT_FALSE(GapRuleApplies(pool, 18));
  EXPECT_EQ(Out(InferGapOutputs(pool, 19, {Shape({1, 1, 7, 7})})), (Dims{1, 1, 3, 3}));
  // ceil_mode: x [1, 1, 3], kernel 2, dilation 2 (span 3), stride 3, pads (0, 2): room 2 ->
  // ⌈2/3⌉ + 1 = 2, but the 2nd window would start at 3, in the end padding: 1.
  Node c = MakeNode("AveragePool");
  c.attrs["kernel_shape"].ints = {2};
  c.attrs["dilations"].ints = {2};
  c.attrs["strides"].ints = {3};
  c.attrs["pads"].ints = {0, 2};
  c.attrs["ceil_mode"].i = 1;
  EXPECT_EQ(Out(InferGapOutputs(c, 19, {Shape({1, 1, 3})})), (Dims{1, 1, 1}));
  EXPECT_EQ(InferGapOutputs(pool, 19, {Shape({1, 1, 4, 4})}).message(),
            "dilated window 5 is larger than the padded input dim");
}

TEST(OpsetGaps, SplitNumOutputsUnevenResizeAxesAndPolicyDeformConv) {
  // Split-18: 5 into 2 -> chunks of ⌈5/2⌉ = 3 and 2; 5 into 4 (2, 2, 1, 0) has an empty chunk.
  Node split = MakeNode("Split", 2);
  split.inputs = {"x"};
  split.attrs["num_outputs"].i = 2;
  split.attrs["axis"].i = -1;
  EXPECT_TRUE(GapRuleApplies(split, 18));
  auto r = InferGapOutputs(split, 18, {Shape({2, 5})});
  EXPECT_EQ(Out(r, 0), (Dims{2, 3}));
  EXPECT_EQ(Out(r, 1), (Dims{2, 2}));
  Node split4 = MakeNode("Split", 4);
  split4.attrs["num_outputs"].i = 4;
  split4.attrs["axis"].i = 1;
  EXPECT_EQ(InferGapOutputs(split4, 18, {Shape({2, 5})}).message(), "dim 5 cannot be split into 4 non-empty chunks of 2");
  split4.inputs = {"x", "split"};
  EXPECT_FALSE(GapRuleApplies(split4, 18));  // explicit sizes: libonnx's rule

  // Resize-18 with axes (2, 3) and sizes (16, 12): [2, 3, 8, 8] -> [2, 3, 16, 12];
  // not_larger: scale min(16/8, 12/8) = 1.5 -> 12 × 12; not_smaller: 2 -> 16 × 16.
  Node rs = MakeNode("Resize");
  rs.inputs = {"x", "", "", "sizes"};
  EXPECT_FALSE(GapRuleApplies(rs, 19));  // neither: libonnx's rule
  rs.attrs["axes"].ints = {2, 3};
  const std::vector<int64_t> sizes = {16, 12};
  GapInput none;
  const std::vector<GapInput> in = {Shape({2, 3, 8, 8}), none, none, Values(&sizes)};
  EXPECT_EQ(Out(InferGapOutputs(rs, 18, in)), (Dims{2, 3, 16, 12}));
  rs.attrs["keep_aspect_ratio_policy"].s = "not_larger";
  EXPECT_EQ(Out(InferGapOutputs(rs, 18, in)), (Dims{2, 3, 12, 12}));
  rs.attrs["keep_aspect_ratio_policy"].s = "not_smaller";
  EXPECT_EQ(Out(InferGapOutputs(rs, 18, in)), (Dims{2, 3, 16, 16}));
  EXPECT_EQ(InferGapOutputs(rs, 18, {Shape({2, 3, 8, 8}), none, Shape({2})}).message(),
            "scales with axes or a keep_aspect_ratio_policy are not read by gpucast's shape rule; give sizes");

  // DeformConv-19: X [2, 4, 8, 8], W [6, 4, 3, 3], offset [2, 2·9, 6, 6] -> [2, 6, 6, 6].
  Node dc = MakeNode("DeformConv");
  EXPECT_EQ(Out(InferGapOutputs(dc, 19, {Shape({2, 4, 8, 8}), Shape({6, 4, 3, 3}), Shape({2, 18, 6, 6})})),
            (Dims{2, 6, 6, 6}));
  EXPECT_EQ(InferGapOutputs(dc, 19, {Shape({2, 4, 8, 8}), Shape({6, 4, 3, 3}), Shape({2, 9, 6, 6})}).message(),
            "offset [2,9,6,6] does not match [2, offset_group·2·kernel = 18, ...]");
}

TEST(OpsetGaps, AbsurdSizesAreErrorsNotOverflows) {
  Node att = MakeNode("Attention");
  att.attrs["q_num_heads"].i = int64_t{1} << 31;
  att.attrs["kv_num_heads"].i = 1;
  const int64_t big = int64_t{1} << 31;
  EXPECT_EQ(InferGapOutputs(att, 23, {Shape({1, 1, big}), Shape({1, 1, 1}), Shape({1, 1, int64_t{1} << 40})}).message(),
            "output size q_num_heads·Dv overflows");
  Node pool = MakeNode("AveragePool");
  pool.attrs["kernel_shape"].ints = {int64_t{1} << 40};
  pool.attrs["dilations"].ints = {int64_t{1} << 40};
  EXPECT_EQ(InferGapOutputs(pool, 19, {Shape({1, 1, 8})}).message(),
            "kernel_shape, dilations and strides must be >= 1 and pads >= 0 (and bounded)");
}

}  // namespace
}  // namespace gpucast
