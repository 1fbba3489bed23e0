#include "graph/shape_fold.h"

#include <map>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpucast
