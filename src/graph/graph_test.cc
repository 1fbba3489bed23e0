#include "graph/graph.h"

#include <gtest/gtest.h>

namespace gpucast {
namespace {

TEST(ElemTypeBytes, OnnxTypes) {
  EXPECT_EQ(ElemTypeBytes(1), 4);   // FLOAT
  EXPECT_EQ(ElemTypeBytes(7), 8);   // INT64
  EXPECT_EQ(ElemTypeBytes(10), 2);  // FLOAT16
  EXPECT_EQ(ElemTypeBytes(16), 2);  // BFLOAT16
  EXPECT_EQ(ElemTypeBytes(9), 1);   // BOOL
  EXPECT_EQ(ElemTypeBytes(8), 0);   // STRING
  EXPECT_EQ(ElemTypeBytes(0), 0);
  EXPECT_EQ(ElemTypeBytes(999), 0);
}

TEST(TensorInfo, NumElements) {
  TensorInfo t;
  EXPECT_FALSE(t.NumElements().has_value());  // unknown shape
  t.shape_known = true;
  EXPECT_EQ(t.NumElements(), 1);  // scalar
  t.dims = {32, 3, 224, 224};
  EXPECT_EQ(t.NumElements(), 32 * 3 * 224 * 224);
  t.dims = {int64_t{1} << 32, int64_t{1} << 32};
  EXPECT_FALSE(t.NumElements().has_value());  // overflows int64
  t.dims = {4, 0};
  EXPECT_EQ(t.NumElements(), 0);
}

TEST(Node, AttrAccessors) {
  Node n;
  n.attrs["group"].i = 2;
  n.attrs["pads"].ints = {1, 1, 1, 1};
  n.attrs["alpha"].f = 0.5;
  n.attrs["mode"].s = "constant";
  EXPECT_EQ(n.AttrInt("group"), 2);
  EXPECT_FALSE(n.AttrInt("missing").has_value());
  EXPECT_FALSE(n.AttrInt("pads").has_value());
  EXPECT_EQ(n.AttrInts("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_TRUE(n.AttrInts("missing").empty());
  EXPECT_EQ(n.AttrFloat("alpha"), 0.5);
  EXPECT_EQ(n.AttrString("mode"), "constant");
  EXPECT_FALSE(n.AttrString("group").has_value());
}

TEST(Graph, Tensor) {
  Graph g;
  g.tensors["x"].name = "x";
  EXPECT_EQ(g.Tensor(""), nullptr);
  ASSERT_NE(g.Tensor("x"), nullptr);
  EXPECT_EQ(g.Tensor("x")->name, "x");
  EXPECT_EQ(g.Tensor("nope"), nullptr);
}

TEST(DimsString, AsMessagesPrintThem) {
  EXPECT_EQ(DimsString({2, 3, 224, 224}), "[2,3,224,224]");
  EXPECT_EQ(DimsString({7}), "[7]");
  EXPECT_EQ(DimsString({}), "[]");  // a scalar
}

}  // namespace
}  // namespace gpucast
