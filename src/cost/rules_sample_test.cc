// Resize/Upsample, GridSample and RoiAlign against hand counts: an
// interpolated element of T taps costs 2T − 1 forward, 2T backward.
#include <gtest/gtest.h>

#include "cost/cost.h"
#include "cost/test_nodes.h"
#include "cost/test_graph.h"

namespace gpucast {
namespace {

using testing::NodeNamed;
using testing::GraphBuilder;
using testing::IntAttr;
using testing::kInt64;

Attribute Str(const std::string& s) {
  Attribute a;
  a.s = s;
  return a;
}

// `name` [dims] needs a gradient: data x times a learned scalar s.
void Graded(GraphBuilder& b, const std::string& name, const std::vector<int64_t>& dims) {
  b.Data(name + "_x", dims).Param(name + "_s", {1}).Value(name, dims);
  b.Op("Mul", name + "_mul", {name + "_x", name + "_s"}, {name});
}

Result<CostReport> ResizeOf(const std::string& op, const std::string& mode, std::vector<int64_t> in,
                            std::vector<int64_t> out) {
  GraphBuilder b;
  Graded(b, "x", in);
  b.Value("y", out);
  Node& n = b.Op(op, "rs", {"x"}, {"y"});
  if (!mode.empty()) n.attrs["mode"] = Str(mode);
  return AnalyzeCost(b.graph(), {});
}

TEST(ResizeCost, NearestIsAGatherLinearAndCubicInterpolate) {
  // [1,2,4,4] -> [1,2,8,8]: 128 output elements, d = 2 resized dims.
  Result<CostReport> r = ResizeOf("Resize", "", {1, 2, 4, 4}, {1, 2, 8, 8});  // default: nearest
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "rs").category, Category::kDataMovement);
  EXPECT_EQ(NodeNamed(*r, "rs").forward_flops, 0);
  EXPECT_EQ(NodeNamed(*r, "rs").backward_flops, 128);  // one scatter-add per output element
  EXPECT_EQ(NodeNamed(*r, "rs").activation_bytes, 128 * 4);
  // linear: T = 2² = 4 taps: 128·(2·4 − 1) = 896 forward, 128·8 = 1024 backward.
  r = ResizeOf("Resize", "linear", {1, 2, 4, 4}, {1, 2, 8, 8});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "rs").category, Category::kElementwise);
  EXPECT_EQ(NodeNamed(*r, "rs").forward_flops, 896);
  EXPECT_EQ(NodeNamed(*r, "rs").backward_flops, 1024);
  // cubic: T = 4² = 16: 128·31 = 3968, 128·32 = 4096.
  r = ResizeOf("Resize", "cubic", {1, 2, 4, 4}, {1, 2, 8, 8});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "rs").forward_flops, 3968);
  EXPECT_EQ(NodeNamed(*r, "rs").backward_flops, 4096);
  EXPECT_EQ(NodeNamed(*r, "rs").params, 0);
}

TEST(ResizeCost, UpsampleLinearOverOneDimAndItsOldBilinearName) {
  // [1,2,4] -> [1,2,8]: 16 outputs, d = 1, T = 2: 16·3 = 48 forward, 16·4 = 64 backward.
  for (const char* mode : {"linear", "bilinear"}) {
    Result<CostReport> r = ResizeOf("Upsample", mode, {1, 2, 4}, {1, 2, 8});
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(NodeNamed(*r, "rs").forward_flops, 48) << mode;
    EXPECT_EQ(NodeNamed(*r, "rs").backward_flops, 64) << mode;
  }
}

TEST(ResizeCost, FloatScalesInitializerDoesNotMakeTheOutputNeedAGradient) {
  // An eval-style export: scales is a float initializer (a "parameter" to the loader). Resizing data
  // still needs no gradient: the Relu after it has no backward, and the scales count as no params.
  GraphBuilder b;
  b.Data("x", {1, 2, 4, 4}).Param("scales", {4}).Value("y", {1, 2, 8, 8}).Value("z", {1, 2, 8, 8});
  b.Op("Resize", "rs", {"x", "", "scales"}, {"y"}).attrs["mode"] = Str("linear");
  b.Op("Relu", "relu", {"y"}, {"z"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "rs").backward_flops, 0);
  EXPECT_EQ(NodeNamed(*r, "relu").backward_flops, 0);
  EXPECT_EQ(r->totals.params, 0);
}

TEST(ResizeCost, UnknownModeAndRankChangeAreErrors) {
  EXPECT_EQ(ResizeOf("Resize", "area", {1, 2, 4, 4}, {1, 2, 8, 8}).message(),
            "m.onnx: node 'rs' (Resize): attribute 'mode' is 'area', want nearest, linear or cubic");
  EXPECT_EQ(ResizeOf("Resize", "linear", {1, 2, 4, 4}, {2, 8, 8}).message(),
            "m.onnx: node 'rs' (Resize): output has rank 3, want 4 (the input's)");
}

TEST(GridSampleCost, BilinearCountsTapsAndCoordinates) {
  // X [1,2,4,4], grid [1,3,3,2] -> [1,2,3,3]: 18 outputs, 9 grid points, d = 2, T = 4.
  // forward: unnormalise 2·2·9 = 36, interpolate 18·7 = 126: 162.
  // backward: input 18·8 = 144; grid 2·2·4·18 = 288 + 36 = 324: 468.
  GraphBuilder b;
  Graded(b, "x", {1, 2, 4, 4});
  Graded(b, "g", {1, 3, 3, 2});
  b.Value("y", {1, 2, 3, 3});
  b.Op("GridSample", "gs", {"x", "g"}, {"y"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "gs").forward_flops, 162);
  EXPECT_EQ(NodeNamed(*r, "gs").backward_flops, 468);
}

TEST(RoiAlignCost, SamplesPerBinAndAdaptiveIsUnsupported) {
  // X [1,4,8,8], 3 rois -> [3,4,2,2] = 48 bins; sampling_ratio 2, avg:
  // per bin 8·2·2 + 1 = 33: forward 48·33 = 1584; backward the same.
  auto build = [](int64_t s) {
    GraphBuilder b;
    Graded(b, "x", {1, 4, 8, 8});
    b.Data("rois", {3, 4}).Data("idx", {3}, kInt64).Value("y", {3, 4, 2, 2});
    Node& n = b.Op("RoiAlign", "ra", {"x", "rois", "idx"}, {"y"});
    n.attrs["sampling_ratio"] = IntAttr(s);
    n.attrs["output_height"] = IntAttr(2);
    n.attrs["output_width"] = IntAttr(2);
    return AnalyzeCost(b.graph(), {});
  };
  Result<CostReport> r = build(2);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "ra").category, Category::kPooling);
  EXPECT_EQ(NodeNamed(*r, "ra").forward_flops, 1584);
  EXPECT_EQ(NodeNamed(*r, "ra").backward_flops, 1584);
  r = build(0);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(NodeNamed(*r, "ra").category, Category::kUnsupported);
  EXPECT_EQ(r->first_uncosted,
            "node 'ra' (RoiAlign): sampling_ratio 0 (adaptive): the samples per bin depend on each ROI's size");
}

}  // namespace
}  // namespace gpucast
