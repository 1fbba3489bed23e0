// If nodes whose condition folds, read as the branch they take (folded_if.h): torch 1.13's
// export of `x.squeeze(1)` on a dim of unknown size (If(size == 1, Squeeze, Identity)), built
// here node for node as torch writes it, and the branch's renaming by hand.
#include "graph/folded_if.h"

#include <gtest/gtest.h>

#include "graph/onnx_loader.h"
#include "graph/test_models.h"

namespace gpucast {
namespace {

onnx::NodeProto Op(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                   const std::string& name = "") {
  return testing::MakeNode(op, in, out, name);
}

onnx::NodeProto IntConstant(const std::string& out, std::vector<int64_t> v, bool scalar = false) {
  onnx::NodeProto n = Op("Constant", {}, {out});
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  auto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
  return n;
}

onnx::GraphProto Branch(std::vector<onnx::NodeProto> nodes, std::vector<std::string> outputs) {
  onnx::GraphProto g;
  g.set_name("branch");
  for (auto& n : nodes) *g.add_node() = n;
  for (auto& o : outputs) g.add_output()->set_name(o);
  return g;
}

onnx::NodeProto If(const std::string& cond, onnx::GraphProto then_g, onnx::GraphProto else_g,
                   std::vector<std::string> out) {
  onnx::NodeProto n = Op("If", {cond}, out, "/If");
  auto* t = n.add_attribute();
  t->set_name("then_branch");
  t->set_type(onnx::AttributeProto::GRAPH);
  *t->mutable_g() = std::move(then_g);
  auto* e = n.add_attribute();
  e->set_name("else_branch");
  e->set_type(onnx::AttributeProto::GRAPH);
  *e->mutable_g() = std::move(else_g);
  return n;
}

// torch's squeeze(1) of x [B, S, 4] with S symbolic, then a MatMul by w [4, 3] (torch 1.13,
// symbolic_opset11.squeeze): If(Equal(Gather(Shape(x), 1), 1)).
onnx::ModelProto SqueezeModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_version(17);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("squeeze");
  auto* x = g.add_input();
  x->set_name("x");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("B");
  tt->mutable_shape()->add_dim()->set_dim_param("S");
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  auto* w = g.add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->add_dims(3);
  for (int i = 0; i < 12; ++i) w->add_float_data(0.5f);
  *g.add_node() = Op("Shape", {"x"}, {"shape"});
  *g.add_node() = IntConstant("one_idx", {1}, /*scalar=*/true);
  *g.add_node() = Op("Gather", {"shape", "one_idx"}, {"s"});
  *g.add_node() = IntConstant("one", {1}, /*scalar=*/true);
  *g.add_node() = Op("Equal", {"s", "one"}, {"is_one"});
  *g.add_node() = If("is_one", Branch({IntConstant("axes", {1}), Op("Squeeze", {"x", "axes"}, {"sq"}, "/Squeeze")}, {"sq"}),
                     Branch({Op("Identity", {"x"}, {"id"}, "/Identity")}, {"id"}), {"y"});
  *g.add_node() = Op("MatMul", {"y", "w"}, {"z"}, "/MatMul");
  g.add_output()->set_name("z");
  return m;
}

Result<Graph> Load(const onnx::ModelProto& m, int64_t batch, int64_t s) {
  LoadOptions opts;
  opts.batch = batch;
  opts.dims["S"] = s;
  return LoadOnnxGraphFromBytes(m.SerializeAsString(), "squeeze.onnx", opts);
}

TEST(FoldedIf, TorchsSqueezeOfAnUnknownDimIsTheBranchItTakes) {
  // S = 1: the then branch, a Squeeze: y [8, 4], the MatMul [8, 3].
  Result<Graph> one = Load(SqueezeModel(), 8, 1);
  ASSERT_TRUE(one.ok()) << one.message();
  EXPECT_TRUE(one->unknown_shapes.empty());
  bool squeezed = false;
  for (const Node& n : one->nodes) {
    EXPECT_NE(n.op_type, "If");
    squeezed = squeezed || (n.op_type == "Squeeze" && n.name == "/If/then/Squeeze" && n.outputs[0] == "y");
  }
  EXPECT_TRUE(squeezed);
  EXPECT_EQ(one->Tensor("y")->dims, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(one->Tensor("z")->dims, (std::vector<int64_t>{8, 3}));
  ASSERT_FALSE(one->warnings.empty());
  bool said = false;
  for (const std::string& w : one->warnings) {
    EXPECT_EQ(w.find("has subgraphs"), std::string::npos) << w;
    said = said || w == "squeeze.onnx: 1 If node whose condition the sizes given fix read as the branch taken "
                        "(first: node '/If' (If): condition true, the then branch's 2 nodes); other sizes may take the other branch";
  }
  EXPECT_TRUE(said);
  // S = 5: the else branch, an Identity: y [8, 5, 4], the MatMul [8, 5, 3].
  Result<Graph> five = Load(SqueezeModel(), 8, 5);
  ASSERT_TRUE(five.ok()) << five.message();
  EXPECT_TRUE(five->unknown_shapes.empty());
  EXPECT_EQ(five->Tensor("y")->dims, (std::vector<int64_t>{8, 5, 4}));
  EXPECT_EQ(five->Tensor("z")->dims, (std::vector<int64_t>{8, 5, 3}));
}

TEST(FoldedIf, AConditionThatDoesNotFoldKeepsTheIf) {
  // The condition from a graph input's values: the If stays, unanalysed, and says so.
  onnx::ModelProto m = SqueezeModel();
  auto* c = m.mutable_graph()->add_input();
  c->set_name("flag");
  c->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  c->mutable_type()->mutable_tensor_type()->mutable_shape();  // a scalar
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == "If") n.set_input(0, "flag");
  Result<Graph> g = Load(m, 8, 1);
  ASSERT_TRUE(g.ok()) << g.message();
  int ifs = 0;
  for (const Node& n : g->nodes) ifs += n.op_type == "If";
  EXPECT_EQ(ifs, 1);
  bool said = false;
  for (const std::string& w : g->warnings)
    said = said || w == "squeeze.onnx: node '/If' (If) has subgraphs; they are kept inside the node and not analysed";
  EXPECT_TRUE(said);
}

TEST(FoldedIf, RenamesByHand) {
  // then: t1 = Relu(x); t2 = Neg(t1); outputs (t2, x, t2): t2 becomes the If's first output, t1
  // "/If/then/t1"; the outer x and the second listing of t2 are copies (Identity).
  onnx::NodeProto n = If("c", Branch({Op("Relu", {"x"}, {"t1"}, "r"), Op("Neg", {"t1"}, {"t2"})}, {"t2", "x", "t2"}),
                         Branch({}, {"x", "x", "x"}), {"a", "b", "c2"});
  auto nothing_taken = [](const std::string&) { return false; };
  auto then_nodes = TakenBranch(n, true, nothing_taken);
  ASSERT_TRUE(then_nodes);
  ASSERT_EQ(then_nodes->size(), 4u);
  EXPECT_EQ((*then_nodes)[0].name(), "/If/then/r");
  EXPECT_EQ((*then_nodes)[0].output(0), "/If/then/t1");
  EXPECT_EQ((*then_nodes)[1].name(), "/If/then/Neg_1");
  EXPECT_EQ((*then_nodes)[1].input(0), "/If/then/t1");
  EXPECT_EQ((*then_nodes)[1].output(0), "a");
  EXPECT_EQ((*then_nodes)[2].op_type(), "Identity");
  EXPECT_EQ((*then_nodes)[2].input(0), "x");
  EXPECT_EQ((*then_nodes)[2].output(0), "b");
  EXPECT_EQ((*then_nodes)[3].input(0), "a");
  EXPECT_EQ((*then_nodes)[3].output(0), "c2");
  // else: three copies of x.
  auto else_nodes = TakenBranch(n, false, nothing_taken);
  ASSERT_TRUE(else_nodes);
  EXPECT_EQ(else_nodes->size(), 3u);
  // A renamed name already in the graph, a branch with an input or another output count: none.
  EXPECT_FALSE(TakenBranch(n, true, [](const std::string& s) { return s == "/If/then/t1"; }));
  onnx::NodeProto with_input = n;
  with_input.mutable_attribute(0)->mutable_g()->add_input()->set_name("i");
  EXPECT_FALSE(TakenBranch(with_input, true, nothing_taken));
  onnx::NodeProto two_out = If("c", Branch({}, {"x"}), Branch({}, {"x"}), {"a", "b"});
  EXPECT_FALSE(TakenBranch(two_out, true, nothing_taken));
  onnx::NodeProto twice = If("c", Branch({Op("Relu", {"x"}, {"t"}), Op("Neg", {"x"}, {"t"})}, {"t"}), Branch({}, {"x"}), {"a"});
  EXPECT_FALSE(TakenBranch(twice, true, nothing_taken));
  // "t" and "/t" would both become "/If/then/t".
  onnx::NodeProto slash = If("c", Branch({Op("Relu", {"x"}, {"t"}), Op("Neg", {"t"}, {"/t"})}, {"/t"}), Branch({}, {"x"}), {"a"});
  EXPECT_TRUE(TakenBranch(slash, true, nothing_taken));  // "/t" is the output: "a"
  onnx::NodeProto slash2 = If("c", Branch({Op("Relu", {"x"}, {"t"}), Op("Neg", {"t"}, {"/t"}), Op("Abs", {"/t"}, {"u"})}, {"u"}),
                              Branch({}, {"x"}), {"a"});
  EXPECT_FALSE(TakenBranch(slash2, true, nothing_taken));
}

}  // namespace
}  // namespace gpucast
