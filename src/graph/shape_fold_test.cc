#include "graph/shape_fold.h"

#include <map>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "graph/onnx_loader.h"
#include "graph/test_models.h"

namespace gpucast {
namespace {

using testing::SetAttr;
using V = std::vector<int64_t>;

constexpr int32_t kI64 = onnx::TensorProto::INT64;
constexpr int64_t kMax = INT64_MAX;

// Folds one node given named input values and shapes.
struct Folder {
  std::map<std::string, FoldValue> values;
  std::map<std::string, V> shapes;
  int64_t opset = 13;

  void Set(const std::string& name, V dims, V vals) { values[name] = FoldValue{kI64, dims, vals, {}}; }
  std::optional<FoldValue> Fold(const onnx::NodeProto& n) {
    FoldContext ctx;
    ctx.opset = opset;
    ctx.value = [&](const std::string& s) -> const FoldValue* {
      auto it = values.find(s);
      return it == values.end() ? nullptr : &it->second;
    };
    ctx.shape = [&](const std::string& s) -> std::optional<V> {
      auto it = shapes.find(s);
      if (it == shapes.end()) return std::nullopt;
      return it->second;
    };
    return FoldNode(n, ctx);
  }
};

onnx::NodeProto Node(const std::string& op, std::vector<std::string> ins) {
  onnx::NodeProto n;
  n.set_op_type(op);
  for (auto& i : ins) n.add_input(i);
  n.add_output("out");
  return n;
}

TEST(ShapeFold, ShapeWithStartEnd) {
  Folder f;
  f.shapes["x"] = {8, 3, 224, 224};
  auto r = f.Fold(Node("Shape", {"x"}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->values, (V{8, 3, 224, 224}));
  EXPECT_EQ(r->dims, V{4});
  auto n = Node("Shape", {"x"});
  SetAttr(&n, "start", int64_t{-2});
  f.opset = 15;
  EXPECT_EQ(f.Fold(n)->values, (V{224, 224}));
  EXPECT_FALSE(f.Fold(Node("Shape", {"unknown"})));
}

TEST(ShapeFold, GatherNegativeAndOutOfRange) {
  Folder f;
  f.Set("s", {4}, {8, 3, 224, 112});
  f.Set("i", {}, {-1});
  auto r = f.Fold(Node("Gather", {"s", "i"}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->values, V{112});
  EXPECT_TRUE(r->dims.empty());  // scalar index -> scalar
  f.Set("i", {2}, {0, 2});
  EXPECT_EQ(f.Fold(Node("Gather", {"s", "i"}))->values, (V{8, 224}));
  f.Set("i", {}, {4});
  EXPECT_FALSE(f.Fold(Node("Gather", {"s", "i"})));
}

TEST(ShapeFold, SliceTorchStyleBounds) {
  Folder f;
  f.Set("s", {4}, {8, 3, 224, 112});
  f.Set("st", {1}, {-2});
  f.Set("en", {1}, {kMax});  // torch writes INT64_MAX for "to the end"
  f.Set("ax", {1}, {0});
  EXPECT_EQ(f.Fold(Node("Slice", {"s", "st", "en", "ax"}))->values, (V{224, 112}));
  f.Set("st", {1}, {-1});
  f.Set("en", {1}, {INT64_MIN});
  f.Set("step", {1}, {-1});
  EXPECT_EQ(f.Fold(Node("Slice", {"s", "st", "en", "ax", "step"}))->values, (V{112, 224, 3, 8}));
  f.Set("step", {1}, {kMax});
  f.Set("st", {1}, {1});
  f.Set("en", {1}, {kMax});
  EXPECT_EQ(f.Fold(Node("Slice", {"s", "st", "en", "ax", "step"}))->values, V{3});
}

// torch's repeat_interleave splits its repeat counts with Split: every output of a 1-D Split,
// by the split input, or equal chunks of ceil(n / outputs).
TEST(ShapeFold, SplitOfAOneDimensionalTensorGivesEveryChunk) {
  Folder f;
  f.Set("s", {4}, {5, 6, 7, 8});
  f.Set("sizes", {2}, {1, 3});
  onnx::NodeProto n = Node("Split", {"s", "sizes"});
  n.add_output("out1");
  FoldContext ctx;
  ctx.opset = 13;
  ctx.value = [&](const std::string& name) -> const FoldValue* {
    auto it = f.values.find(name);
    return it == f.values.end() ? nullptr : &it->second;
  };
  ctx.shape = [](const std::string&) -> std::optional<V> { return std::nullopt; };
  auto parts = FoldSplit(n, ctx);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].values, V{5});
  EXPECT_EQ(parts[1].values, (V{6, 7, 8}));
  EXPECT_EQ(parts[1].dims, V{3});
  EXPECT_EQ(f.Fold(n)->values, V{5});  // FoldNode: the first output
  f.Set("sizes", {2}, {1, 2});          // does not add up to 4
  EXPECT_TRUE(FoldSplit(n, ctx).empty());
  EXPECT_FALSE(f.Fold(n));
  onnx::NodeProto equal = Node("Split", {"s"});  // no sizes: ceil(4 / 3) = 2, 2, then 0
  equal.add_output("out1");
  equal.add_output("out2");
  parts = FoldSplit(equal, ctx);
  EXPECT_TRUE(parts.empty());  // 2 + 2 leaves no third chunk: three outputs do not fit
  f.Set("s", {5}, {5, 6, 7, 8, 9});
  parts = FoldSplit(equal, ctx);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].values, V{9});
  f.Set("m", {2, 2}, {1, 2, 3, 4});  // not 1-D: not folded
  EXPECT_FALSE(f.Fold(Node("Split", {"m"})));
}

TEST(ShapeFold, ConcatUnsqueezeReshape) {
  Folder f;
  f.Set("a", {}, {8});
  f.Set("ax", {1}, {0});
  auto u = f.Fold(Node("Unsqueeze", {"a", "ax"}));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->dims, V{1});
  f.values["a1"] = *u;
  f.Set("b", {2}, {-1, 64});
  auto n = Node("Concat", {"a1", "b"});
  SetAttr(&n, "axis", int64_t{0});
  EXPECT_EQ(f.Fold(n)->values, (V{8, -1, 64}));
  // Reshape of a value tensor: 0 copies, -1 infers.
  f.Set("data", {2, 3}, {1, 2, 3, 4, 5, 6});
  f.Set("shape", {2}, {-1, 2});
  auto r = f.Fold(Node("Reshape", {"data", "shape"}));
  EXPECT_EQ(r->dims, (V{3, 2}));
  f.Set("shape", {2}, {4, -1});
  EXPECT_FALSE(f.Fold(Node("Reshape", {"data", "shape"})));  // 6 not divisible by 4
}

TEST(ShapeFold, ArithmeticIsCheckedAndTruncates) {
  Folder f;
  f.Set("a", {2}, {768, -7});
  f.Set("b", {}, {12});
  EXPECT_EQ(f.Fold(Node("Div", {"a", "b"}))->values, (V{64, 0}));  // C truncation
  EXPECT_EQ(f.Fold(Node("Mul", {"a", "b"}))->values, (V{9216, -84}));
  EXPECT_EQ(f.Fold(Node("Mod", {"a", "b"}))->values, (V{0, 5}));  // sign of divisor
  f.Set("z", {}, {0});
  EXPECT_FALSE(f.Fold(Node("Div", {"a", "z"})));
  f.Set("big", {}, {kMax});
  EXPECT_FALSE(f.Fold(Node("Mul", {"big", "b"})));
  EXPECT_FALSE(f.Fold(Node("Add", {"big", "b"})));
  auto eq = f.Fold(Node("Equal", {"a", "b"}));
  EXPECT_EQ(eq->elem_type, onnx::TensorProto::BOOL);
  EXPECT_EQ(eq->values, (V{0, 0}));
}

// torch's expand(-1, ...) export: ConstantOfShape -> Mul -> Equal -> Where -> Expand.
TEST(ShapeFold, TorchExpandPattern) {
  Folder f;
  auto cos = Node("ConstantOfShape", {"len"});
  SetAttr(&cos, "value", testing::Int64Tensor({1}, {1}));
  f.Set("len", {1}, {3});
  auto ones = f.Fold(cos);
  ASSERT_TRUE(ones);
  EXPECT_EQ(ones->values, (V{1, 1, 1}));
  f.values["ones"] = *ones;
  f.Set("m1", {}, {-1});
  f.values["neg"] = *f.Fold(Node("Mul", {"ones", "m1"}));
  f.Set("target", {3}, {-1, 4, 5});
  f.values["eq"] = *f.Fold(Node("Equal", {"target", "neg"}));
  EXPECT_EQ(f.values["eq"].values, (V{1, 0, 0}));
  f.values["shape"] = *f.Fold(Node("Where", {"eq", "ones", "target"}));
  EXPECT_EQ(f.values["shape"].values, (V{1, 4, 5}));
  f.Set("x", {1, 1}, {7});
  auto e = f.Fold(Node("Expand", {"x", "shape"}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->dims, (V{1, 4, 5}));
  EXPECT_EQ(e->values.size(), 20u);
  // The default ConstantOfShape fill is float 0.
  auto zeros = f.Fold(Node("ConstantOfShape", {"len"}));
  ASSERT_TRUE(zeros);
  EXPECT_EQ(zeros->elem_type, onnx::TensorProto::FLOAT);
  EXPECT_EQ(zeros->reals, (std::vector<double>{0, 0, 0}));
  EXPECT_TRUE(zeros->values.empty());
}

TEST(ShapeFold, RangeReduceCastAndLimits) {
  Folder f;
  f.Set("s", {}, {0});
  f.Set("l", {}, {10});
  f.Set("d", {}, {3});
  EXPECT_EQ(f.Fold(Node("Range", {"s", "l", "d"}))->values, (V{0, 3, 6, 9}));
  f.Set("l", {}, {kMax});
  f.Set("d", {}, {1});
  EXPECT_FALSE(f.Fold(Node("Range", {"s", "l", "d"})));  // too many elements
  f.Set("v", {3}, {2, 3, 4});
  EXPECT_EQ(f.Fold(Node("ReduceProd", {"v"}))->values, V{24});
  auto cast = Node("Cast", {"v"});
  SetAttr(&cast, "to", int64_t{onnx::TensorProto::INT32});
  EXPECT_EQ(f.Fold(cast)->elem_type, onnx::TensorProto::INT32);
  f.Set("w", {1}, {int64_t{1} << 40});
  EXPECT_FALSE(f.Fold(Node("Cast", {"w"})));  // no "to"
  auto cast32 = Node("Cast", {"w"});
  SetAttr(&cast32, "to", int64_t{onnx::TensorProto::INT32});
  EXPECT_FALSE(f.Fold(cast32));  // does not fit
  auto cof = Node("ConstantOfShape", {"huge"});
  SetAttr(&cof, "value", testing::Int64Tensor({1}, {0}));
  f.Set("huge", {2}, {kMax, kMax});
  EXPECT_FALSE(f.Fold(cof));
}

TEST(ShapeFold, TensorRoundTrip) {
  FoldValue v{onnx::TensorProto::INT32, {2, 2}, {1, -2, 3, 4}, {}};
  auto back = FoldValueFromTensor(TensorFromFoldValue(v, "t"));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->values, v.values);
  EXPECT_EQ(back->dims, v.dims);
  onnx::TensorProto raw;
  raw.set_data_type(onnx::TensorProto::INT64);
  raw.add_dims(2);
  int64_t data[2] = {-1, 4096};
  raw.set_raw_data(std::string(reinterpret_cast<const char*>(data), 16));
  EXPECT_EQ(FoldValueFromTensor(raw)->values, (V{-1, 4096}));
  raw.set_raw_data(std::string(8, '\0'));  // payload too short (e.g. skipped)
  EXPECT_FALSE(FoldValueFromTensor(raw));
}

// ---- Reals and Transpose ----

using R = std::vector<double>;
constexpr int32_t kF32 = onnx::TensorProto::FLOAT;

onnx::TensorProto FloatTensor(const V& dims, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_data_type(kF32);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

TEST(ShapeFold, RealsConcatCastArithmeticFloor) {
  Folder f;
  // Resize scales as torch exports F.interpolate(scale_factor=2): Concat(Constant, Constant).
  auto c1 = Node("Constant", {});
  SetAttr(&c1, "value", FloatTensor({2}, {1, 1}));
  auto c2 = Node("Constant", {});
  SetAttr(&c2, "value", FloatTensor({2}, {2, 2}));
  f.values["a"] = *f.Fold(c1);
  f.values["b"] = *f.Fold(c2);
  auto scales = f.Fold(Node("Concat", {"a", "b"}));
  ASSERT_TRUE(scales);
  EXPECT_EQ(scales->elem_type, kF32);
  EXPECT_EQ(scales->reals, (R{1, 1, 2, 2}));
  EXPECT_TRUE(scales->values.empty());
  // Sizes computed in floats: floor(float(17) * 1.5) = 25 (torch's upsample size arithmetic).
  f.Set("n", {1}, {17});
  auto to_float = Node("Cast", {"n"});
  SetAttr(&to_float, "to", int64_t{kF32});
  f.values["nf"] = *f.Fold(to_float);
  EXPECT_EQ(f.values["nf"].reals, R{17});
  auto k = Node("Constant", {});
  SetAttr(&k, "value", FloatTensor({}, {1.5f}));
  f.values["k"] = *f.Fold(k);
  f.values["m"] = *f.Fold(Node("Mul", {"nf", "k"}));
  EXPECT_EQ(f.values["m"].reals, R{25.5});
  f.values["fl"] = *f.Fold(Node("Floor", {"m"}));
  auto back = Node("Cast", {"fl"});
  SetAttr(&back, "to", int64_t{onnx::TensorProto::INT64});
  EXPECT_EQ(f.Fold(back)->values, V{25});
  // FLOAT arithmetic rounds to float: 0.1f * 3 is float's product, not double's 0.3.
  auto tenth = Node("Constant", {});
  SetAttr(&tenth, "value", FloatTensor({}, {0.1f}));
  f.values["t"] = *f.Fold(tenth);
  f.values["three"] = *f.Fold([&] { auto c = Node("Constant", {}); SetAttr(&c, "value", FloatTensor({}, {3})); return c; }());
  EXPECT_EQ(f.Fold(Node("Mul", {"t", "three"}))->reals, R{static_cast<double>(0.1f * 3.0f)});
  // Mixed element types, a division by zero and a negative Sqrt stay unfolded.
  EXPECT_FALSE(f.Fold(Node("Add", {"n", "k"})));
  f.values["zero"] = *f.Fold([&] { auto c = Node("Constant", {}); SetAttr(&c, "value", FloatTensor({}, {0})); return c; }());
  EXPECT_FALSE(f.Fold(Node("Div", {"k", "zero"})));
  f.values["neg"] = *f.Fold(Node("Neg", {"k"}));
  EXPECT_EQ(f.values["neg"].reals, R{-1.5});
  EXPECT_FALSE(f.Fold(Node("Sqrt", {"neg"})));
  EXPECT_FALSE(f.Fold(Node("Floor", {"n"})));  // Floor is defined on reals only
  // A product beyond float's range stays unfolded (casting it to float is undefined).
  f.values["big"] = *f.Fold([&] { auto c = Node("Constant", {}); SetAttr(&c, "value", FloatTensor({}, {3e38f})); return c; }());
  EXPECT_FALSE(f.Fold(Node("Mul", {"big", "big"})));
  // Real comparisons give bools; a real Range counts ceil((limit - start) / delta) elements.
  auto lt = f.Fold(Node("Less", {"neg", "k"}));
  ASSERT_TRUE(lt);
  EXPECT_EQ(lt->elem_type, onnx::TensorProto::BOOL);
  EXPECT_EQ(lt->values, V{1});
  f.values["quarter"] = *f.Fold([&] { auto c = Node("Constant", {}); SetAttr(&c, "value", FloatTensor({}, {0.25f})); return c; }());
  f.values["one"] = *f.Fold([&] { auto c = Node("Constant", {}); SetAttr(&c, "value", FloatTensor({}, {1})); return c; }());
  EXPECT_EQ(f.Fold(Node("Range", {"zero", "one", "quarter"}))->reals, (R{0, 0.25, 0.5, 0.75}));
}

// F.pad's pads as torch exports them: (left, right) pairs of the last dims
// first, padded with zeros to 2 x rank, then reversed and transposed into
// ONNX's [begin..., end...] order (Reshape, Slice with step -1, Transpose).
TEST(ShapeFold, TorchPadReversalThroughTranspose) {
  Folder f;
  f.Set("pairs", {8}, {0, 0, 0, 2, 0, 3, 0, 0});  // (C: 0,0) (W: 0,2) (H: 0,3) (N: 0,0)
  f.Set("to2", {2}, {-1, 2});
  f.values["r"] = *f.Fold(Node("Reshape", {"pairs", "to2"}));
  f.Set("st", {1}, {-1});
  f.Set("en", {1}, {-kMax});
  f.Set("ax", {1}, {0});
  f.Set("sp", {1}, {-1});
  f.values["rev"] = *f.Fold(Node("Slice", {"r", "st", "en", "ax", "sp"}));
  EXPECT_EQ(f.values["rev"].values, (V{0, 0, 0, 3, 0, 2, 0, 0}));
  auto tr = Node("Transpose", {"rev"});
  SetAttr(&tr, "perm", V{1, 0});
  auto t = f.Fold(tr);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->dims, (V{2, 4}));
  EXPECT_EQ(t->values, (V{0, 0, 0, 0, 0, 3, 2, 0}));  // begins of N,H,W,C then ends
  f.values["t"] = *t;
  // No perm: the dims reversed. A perm that repeats an axis stays unfolded.
  EXPECT_EQ(f.Fold(Node("Transpose", {"t"}))->values, (V{0, 0, 0, 3, 0, 2, 0, 0}));
  auto bad = Node("Transpose", {"t"});
  SetAttr(&bad, "perm", V{0, 0});
  EXPECT_FALSE(f.Fold(bad));
}

TEST(ShapeFold, RealTensorRoundTrip) {
  FoldValue v{kF32, {3}, {}, {0.5, -2, 1e10}};
  auto back = FoldValueFromTensor(TensorFromFoldValue(v, "t"));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->reals, v.reals);
  onnx::TensorProto raw;
  raw.set_data_type(onnx::TensorProto::DOUBLE);
  raw.add_dims(1);
  double nan = std::nan("");
  raw.set_raw_data(std::string(reinterpret_cast<const char*>(&nan), 8));
  EXPECT_FALSE(FoldValueFromTensor(raw));  // a NaN is not a size
}

// ---- Through the loader ----

using testing::ModelBuilder;
using testing::kFloat;
using testing::PeakRssKiB;

ModelBuilder ReluOnly() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {std::string("batch"), 4});
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y");
  return b;
}

Result<Graph> LoadAt(const ModelBuilder& b, int64_t batch) {
  LoadOptions o;
  o.batch = batch;
  return LoadOnnxGraphFromBytes(b.Bytes(), "m.onnx", o);
}

onnx::NodeProto& Const(ModelBuilder& b, const std::string& out, const onnx::TensorProto& t) {
  auto& n = b.Node("Constant", {}, {out});
  SetAttr(&n, "value", t);
  return n;
}

// The diffusion UNet's upsampling that stopped every UNet (issue 33):
// F.interpolate(scale_factor=2) at opset 13 is Resize(x, roi, Concat(Constant, Constant)).
TEST(ShapeFoldLoader, ResizeScalesFromConcatOfConstants) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {std::string("batch"), 8, 5, 5});
  Const(b, "ones", FloatTensor({2}, {1, 1}));
  Const(b, "twos", FloatTensor({2}, {2, 2}));
  SetAttr(&b.Node("Concat", {"ones", "twos"}, {"scales"}), "axis", int64_t{0});
  Const(b, "roi", FloatTensor({0}, {}));
  SetAttr(&b.Node("Resize", {"x", "roi", "scales"}, {"y"}), "mode", std::string("nearest"));
  b.Output("y");
  auto g = LoadAt(b, 3);
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_TRUE(g->unknown_shapes.empty()) << g->unknown_shapes[0];
  EXPECT_EQ(g->Tensor("y")->dims, (V{3, 8, 10, 10}));
  EXPECT_FALSE(g->Tensor("scales")->int_value);  // reals are not integer values
}

// Sizes computed in floats from the input's shape (F.interpolate with a scale
// whose output size torch computes at run time): floor(5 * 1.5) = 7.
TEST(ShapeFoldLoader, ResizeSizesFromFloatArithmetic) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {std::string("batch"), 8, 5, 5});
  b.Int64Init("s0", {1}, {0}).Int64Init("s2", {1}, {2}).Int64Init("s4", {1}, {4});
  b.Node("Shape", {"x"}, {"shape"});
  b.Node("Slice", {"shape", "s0", "s2"}, {"nc"});
  b.Node("Slice", {"shape", "s2", "s4"}, {"hw"});
  SetAttr(&b.Node("Cast", {"hw"}, {"hwf"}), "to", int64_t{kF32});
  Const(b, "k", FloatTensor({}, {1.5f}));
  b.Node("Mul", {"hwf", "k"}, {"scaled"});
  b.Node("Floor", {"scaled"}, {"fl"});
  SetAttr(&b.Node("Cast", {"fl"}, {"hw2"}), "to", int64_t{onnx::TensorProto::INT64});
  SetAttr(&b.Node("Concat", {"nc", "hw2"}, {"sizes"}), "axis", int64_t{0});
  SetAttr(&b.Node("Resize", {"x", "", "", "sizes"}, {"y"}), "mode", std::string("linear"));
  b.Output("y");
  auto g = LoadAt(b, 2);
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_EQ(g->Tensor("sizes")->int_value, (V{2, 8, 7, 7}));
  EXPECT_EQ(g->Tensor("y")->dims, (V{2, 8, 7, 7}));
}

// Swin's window partition pads H and W up to a multiple of the window (4)
// with pads computed from the input's shape: (4 - W % 4) % 4, through F.pad's
// reversal (ConstantOfShape, Concat, Reshape, Slice step -1, Transpose).
TEST(ShapeFoldLoader, SwinWindowPadFromShapes) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {std::string("batch"), 14, 13, 32});
  b.Int64Init("i1", {}, {1}).Int64Init("i2", {}, {2}).Int64Init("win", {}, {4});
  b.Int64Init("z", {1}, {0}).Int64Init("ax0", {1}, {0}).Int64Init("eight", {1}, {8});
  b.Int64Init("to2", {2}, {-1, 2}).Int64Init("st", {1}, {-1}).Int64Init("en", {1}, {-kMax});
  b.Int64Init("sp", {1}, {-1}).Int64Init("flat", {1}, {-1});
  b.Node("Shape", {"x"}, {"s"});
  for (const char* d : {"h", "w"}) {
    std::string k = d;
    b.Node("Gather", {"s", k == "h" ? "i1" : "i2"}, {k});
    b.Node("Mod", {k, "win"}, {k + "m"});
    b.Node("Sub", {"win", k + "m"}, {k + "s"});
    b.Node("Mod", {k + "s", "win"}, {k + "pad"});
    b.Node("Unsqueeze", {k + "pad", "ax0"}, {k + "u"});
  }
  SetAttr(&b.Node("Concat", {"z", "z", "z", "wu", "z", "hu"}, {"pairs6"}), "axis", int64_t{0});
  b.Node("Shape", {"pairs6"}, {"n6"});
  b.Node("Sub", {"eight", "n6"}, {"rest"});
  SetAttr(&b.Node("ConstantOfShape", {"rest"}, {"zeros"}), "value", testing::Int64Tensor({1}, {0}));
  SetAttr(&b.Node("Concat", {"pairs6", "zeros"}, {"pairs"}), "axis", int64_t{0});
  b.Node("Reshape", {"pairs", "to2"}, {"r"});
  b.Node("Slice", {"r", "st", "en", "z", "sp"}, {"rev"});
  SetAttr(&b.Node("Transpose", {"rev"}, {"t"}), "perm", V{1, 0});
  b.Node("Reshape", {"t", "flat"}, {"pads"});
  SetAttr(&b.Node("Pad", {"x", "pads"}, {"y"}), "mode", std::string("constant"));
  b.Output("y");
  auto g = LoadAt(b, 2);
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_EQ(g->Tensor("pads")->int_value, (V{0, 0, 0, 0, 0, 2, 3, 0}));
  EXPECT_EQ(g->Tensor("y")->dims, (V{2, 16, 16, 32}));
}

// Issue 31's fold bomb: many ConstantOfShape nodes of kMaxFoldElements each
// fit every per-node and per-file limit (a 2.6 MB upload grew the service to
// 3.35 GB). The graph-wide budget stops folding at kMaxFoldTotalElements.
TEST(ShapeFoldLoader, FoldBombStopsAtTheGraphBudget) {
  const int kNodes = 2000;  // 2000 x 4096 = 8.2M elements: 8 times the budget
  ModelBuilder b(13);
  b.Input("x", kFloat, {std::string("batch"), 4});
  b.Int64Init("len", {1}, {kMaxFoldElements});
  for (int i = 0; i < kNodes; ++i) {
    SetAttr(&b.Node("ConstantOfShape", {"len"}, {"c" + std::to_string(i)}), "value",
            testing::Int64Tensor({1}, {7}));
  }
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y");
  ASSERT_TRUE(LoadAt(ReluOnly(), 1).ok());  // warm-up: ONNX's schemas are not what this measures
  std::ofstream("/proc/self/clear_refs") << "5";
  const int64_t before = PeakRssKiB();
  auto g = LoadAt(b, 1);
  const int64_t growth_kib = PeakRssKiB() - before;
  ASSERT_TRUE(g.ok()) << g.message();
  // The first values fold; once the budget is spent the rest stay unfolded, said once.
  EXPECT_EQ(g->Tensor("c0")->int_value->size(), static_cast<size_t>(kMaxFoldElements));
  EXPECT_FALSE(g->Tensor("c" + std::to_string(kNodes - 1))->int_value);
  EXPECT_EQ(g->Tensor("c" + std::to_string(kNodes - 1))->dims, V{kMaxFoldElements});  // shapes still known
  int kept = 0;
  for (int i = 0; i < kNodes; ++i) kept += g->Tensor("c" + std::to_string(i))->int_value.has_value();
  EXPECT_EQ(kept, kMaxFoldTotalElements / kMaxFoldElements - 1);  // the "len" initializer counts too
  int budget_warnings = 0;
  for (const auto& w : g->warnings) {
    if (w.find("constant folding stopped") != std::string::npos) {
      ++budget_warnings;
      EXPECT_EQ(w, "m.onnx: constant folding stopped: the folded values reached 1044481 elements (gpucast's "
                   "limit for one graph: 1048576); later constant sub-graphs stay unfolded and shapes that "
                   "depend on them stay unknown");
    }
  }
  EXPECT_EQ(budget_warnings, 1);
  // Measured: without the budget, peak RSS grew by 140 MiB (8.2M folded elements);
  // with it, by 22 MiB. Under AddressSanitizer freed memory stays in its
  // quarantine, so RSS counts every allocation ever made, not what is kept:
  // there the budget is checked by its warning above only (make sanitize).
#if defined(__SANITIZE_ADDRESS__)
  std::printf("RSS bound not applied under AddressSanitizer (grew by %ld KiB)\n", static_cast<long>(growth_kib));
#else
  EXPECT_LT(growth_kib, 64 * 1024) << "peak RSS grew by " << growth_kib << " KiB";
#endif
}

}  // namespace
}  // namespace gpucast
