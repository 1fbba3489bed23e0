// Loops whose trip count folds, written out as their iterations (unrolled_loop.h): the
// renaming, the carried values and the lists by hand on a Loop as torch.jit.script writes a
// Python `for t in range(T)` over an RNN cell, the refusals, and the loader reading such a
// model with the sizes given (and leaving it alone without them).
#include "graph/unrolled_loop.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "graph/onnx_loader.h"
#include "graph/test_models.h"

namespace gpucast {
namespace {

using testing::ModelBuilder;

onnx::NodeProto Op(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                   const std::string& name = "") {
  return testing::MakeNode(op, in, out, name);
}

onnx::NodeProto BoolConstant(const std::string& out, bool v) {
  onnx::NodeProto n = Op("Constant", {}, {out});
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  a->mutable_t()->add_int32_data(v ? 1 : 0);
  return n;
}

// torch.jit.script's `for t in range(x.size(1)): h = tanh(x[:, t] @ w + h @ u); outs.append(h @ v)`:
// inputs (t, cond, h, outs); body Gather(x, t), two MatMuls, Add, Tanh, MatMul, SequenceInsert,
// Identity(true) as the condition; outputs (cond, h, outs) and one scan output (h again).
onnx::GraphProto RnnBody() {
  onnx::GraphProto g;
  g.set_name("body");
  for (const char* in : {"t", "cond_in", "h_in", "outs_in"}) g.add_input()->set_name(in);
  *g.add_node() = Op("Gather", {"x", "t"}, {"xt"}, "/Gather");  // x[:, t]
  auto* axis = g.mutable_node(0)->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  *g.add_node() = Op("MatMul", {"xt", "w"}, {"a"}, "/MatMul");
  *g.add_node() = Op("MatMul", {"h_in", "u"}, {"b"}, "/MatMul_1");
  *g.add_node() = Op("Add", {"a", "b"}, {"s"}, "/Add");
  *g.add_node() = Op("Tanh", {"s"}, {"h_out"}, "/Tanh");
  *g.add_node() = Op("MatMul", {"h_out", "v"}, {"y"}, "/MatMul_2");
  *g.add_node() = Op("SequenceInsert", {"outs_in", "y"}, {"outs_out"}, "/SequenceInsert");
  *g.add_node() = Op("Identity", {"true"}, {"cond_out"}, "/Identity");
  for (const char* out : {"cond_out", "h_out", "outs_out", "h_out"}) g.add_output()->set_name(out);
  return g;
}

onnx::NodeProto RnnLoop(onnx::GraphProto body = RnnBody(), const std::string& cond = "true") {
  onnx::NodeProto n = Op("Loop", {"T", cond, "h0", "empty"}, {"h_final", "outs", "hs"}, "/Loop");
  auto* a = n.add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = std::move(body);
  return n;
}

LoopContext Context(int64_t opset = 14) {
  LoopContext c;
  c.opset = opset;
  c.taken = [](const std::string& name) { return name == "x" || name == "taken/iter1/a"; };
  c.is_true = [](const std::string& name) { return name == "true"; };
  c.is_empty_sequence = [](const std::string& name) { return name == "empty"; };
  return c;
}

std::vector<std::string> Names(const std::vector<onnx::NodeProto>& nodes) {
  std::vector<std::string> v;
  for (const auto& n : nodes) v.push_back(n.op_type() + " " + n.name());
  return v;
}

TEST(UnrollLoop, TwoIterationsByHand) {
  auto u = UnrollLoop(RnnLoop(), 2, Context());
  ASSERT_TRUE(u.has_value());
  // Per iteration: the iteration number (the body reads t), the body without its SequenceInsert;
  // then the final h, the scan output's axes, one Unsqueeze per iteration and their Concat.
  EXPECT_EQ(Names(u->nodes),
            (std::vector<std::string>{
                "Constant /Loop/iter0/iteration", "Gather /Loop/iter0/Gather", "MatMul /Loop/iter0/MatMul",
                "MatMul /Loop/iter0/MatMul_1", "Add /Loop/iter0/Add", "Tanh /Loop/iter0/Tanh",
                "MatMul /Loop/iter0/MatMul_2", "Identity /Loop/iter0/Identity", "Constant /Loop/iter1/iteration",
                "Gather /Loop/iter1/Gather", "MatMul /Loop/iter1/MatMul", "MatMul /Loop/iter1/MatMul_1",
                "Add /Loop/iter1/Add", "Tanh /Loop/iter1/Tanh", "MatMul /Loop/iter1/MatMul_2",
                "Identity /Loop/iter1/Identity", "Identity /Loop/final_0", "Constant /Loop/scan0/axes",
                "Unsqueeze /Loop/scan0/row0", "Unsqueeze /Loop/scan0/row1", "Concat /Loop/scan0"}));
  // Iteration 0 reads the Loop's h0 and gathers row 0; iteration 1 reads iteration 0's h.
  const auto& n = u->nodes;
  EXPECT_EQ(n[0].attribute(0).t().int64_data(0), 0);
  EXPECT_EQ(n[8].attribute(0).t().int64_data(0), 1);
  EXPECT_EQ(n[1].input(0), "x");  // outer names stay
  EXPECT_EQ(n[1].input(1), "/Loop/iter0/iteration");
  EXPECT_EQ(n[3].input(0), "h0");
  EXPECT_EQ(n[3].input(1), "u");
  EXPECT_EQ(n[11].input(0), "/Loop/iter0/h_out");
  EXPECT_EQ(n[16].input(0), "/Loop/iter1/h_out");
  EXPECT_EQ(n[16].output(0), "h_final");
  EXPECT_EQ(n[18].input(0), "/Loop/iter0/h_out");
  EXPECT_EQ(n[18].input(1), "/Loop/scan0/axes");
  EXPECT_EQ(n[20].output(0), "hs");
  // The list: what each iteration appended, for the loader to concatenate.
  ASSERT_EQ(u->sequences.size(), 1u);
  EXPECT_EQ(u->sequences[0].output, "outs");
  EXPECT_EQ(u->sequences[0].elements, (std::vector<std::string>{"/Loop/iter0/y", "/Loop/iter1/y"}));
  // Before opset 13 Unsqueeze takes its axes as an attribute.
  auto old = UnrollLoop(RnnLoop(), 2, Context(12));
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->nodes[17].op_type(), "Unsqueeze");
  EXPECT_EQ(old->nodes[17].input_size(), 1);
  EXPECT_EQ(old->nodes[17].attribute(0).name(), "axes");
}

// torch.stack(outs, 1) of three elements at opset 14: an Unsqueeze of each at axis 1 (the axes a
// Constant), one Concat on axis 1 named and writing as the ConcatFromSequence; torch.cat: the Concat
// alone; a taken name refuses.
TEST(ListConcat, StackAndCatByHand) {
  onnx::NodeProto stack = Op("ConcatFromSequence", {"outs"}, {"stacked"}, "/stack");
  testing::SetAttr(&stack, "axis", int64_t{1});
  testing::SetAttr(&stack, "new_axis", int64_t{1});
  const std::vector<std::string> e = {"a", "b", "c"};
  auto none = [](const std::string&) { return false; };
  auto s = ListConcat(stack, e, 14, none);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(Names(*s), (std::vector<std::string>{"Constant /stack/axes", "Unsqueeze /stack/row0", "Unsqueeze /stack/row1",
                                                 "Unsqueeze /stack/row2", "Concat /stack"}));
  EXPECT_EQ((*s)[0].attribute(0).t().int64_data(0), 1);
  EXPECT_EQ((*s)[2].input(0), "b");
  EXPECT_EQ((*s)[2].input(1), "/stack/axes");
  EXPECT_EQ((*s)[4].input(2), "/stack/row2");
  EXPECT_EQ((*s)[4].output(0), "stacked");
  EXPECT_EQ((*s)[4].attribute(0).i(), 1);
  onnx::NodeProto cat = Op("ConcatFromSequence", {"outs"}, {"joined"}, "/cat");
  testing::SetAttr(&cat, "axis", int64_t{0});
  auto c = ListConcat(cat, e, 14, none);
  ASSERT_TRUE(c.has_value());
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].input_size(), 3);
  EXPECT_FALSE(ListConcat(stack, e, 14, [](const std::string& n) { return n == "/stack/row1"; }).has_value());
  EXPECT_FALSE(ListConcat(stack, {}, 14, none).has_value());
}

TEST(UnrollLoop, WhatCannotBeWrittenOutIsRefused) {
  EXPECT_FALSE(UnrollLoop(RnnLoop(), 0, Context()).has_value());                   // no iteration
  EXPECT_FALSE(UnrollLoop(RnnLoop(RnnBody(), "stop"), 3, Context()).has_value());  // a condition from data
  {  // the body's condition from data
    onnx::GraphProto b = RnnBody();
    b.mutable_node(7)->set_input(0, "s");
    EXPECT_FALSE(UnrollLoop(RnnLoop(b), 3, Context()).has_value());
  }
  {  // the body's condition a Constant true: fine; false: refused
    onnx::GraphProto b = RnnBody();
    *b.mutable_node(7) = BoolConstant("cond_out", true);
    EXPECT_TRUE(UnrollLoop(RnnLoop(b), 3, Context()).has_value());
    *b.mutable_node(7) = BoolConstant("cond_out", false);
    EXPECT_FALSE(UnrollLoop(RnnLoop(b), 3, Context()).has_value());
  }
  {  // the list read in the body (len(outs)), or appended at a position
    onnx::GraphProto b = RnnBody();
    *b.add_node() = Op("SequenceLength", {"outs_in"}, {"len"});
    EXPECT_FALSE(UnrollLoop(RnnLoop(b), 3, Context()).has_value());
    b = RnnBody();
    b.mutable_node(6)->add_input("t");
    EXPECT_FALSE(UnrollLoop(RnnLoop(b), 3, Context()).has_value());
  }
  {  // a name defined twice, a body initializer, a missing initial value
    onnx::GraphProto b = RnnBody();
    *b.add_node() = Op("Relu", {"a"}, {"b"});
    EXPECT_FALSE(UnrollLoop(RnnLoop(b), 3, Context()).has_value());
    b = RnnBody();
    b.add_initializer()->set_name("c");
    EXPECT_FALSE(UnrollLoop(RnnLoop(b), 3, Context()).has_value());
    onnx::NodeProto l = RnnLoop();
    l.set_input(2, "");
    EXPECT_FALSE(UnrollLoop(l, 3, Context()).has_value());
  }
  {  // a renamed name that is taken
    onnx::NodeProto l = RnnLoop();
    l.set_name("taken");
    EXPECT_FALSE(UnrollLoop(l, 3, Context()).has_value());
    EXPECT_TRUE(UnrollLoop(l, 1, Context()).has_value());  // only iteration 1 would collide
  }
}

// The model as the loader sees it: x [B, T, 8] with T symbolic, the trip count Gather(Shape(x), 1),
// h0 [1, 16], the list from SequenceEmpty, torch.stack(outs, 1) (ConcatFromSequence axis 1, new_axis 1)
// and the scan output.
ModelBuilder RnnModel(int64_t opset = 14) {
  ModelBuilder b(opset);
  b.Input("x", testing::kFloat, {testing::Dim("B"), testing::Dim("T"), 8});
  b.FloatInit("w", {8, 16}).FloatInit("u", {16, 16}).FloatInit("v", {16, 4}).FloatInit("h0", {1, 16});
  b.Int64Init("one", {}, {1});
  b.Node("Shape", {"x"}, {"shape"});
  b.Node("Gather", {"shape", "one"}, {"T"});
  b.Node("Constant", {}, {"true"}) = BoolConstant("true", true);
  b.Node("SequenceEmpty", {}, {"empty"});
  *b.model().mutable_graph()->add_node() = RnnLoop();
  onnx::NodeProto& stack = b.Node("ConcatFromSequence", {"outs"}, {"stacked"}, "/stack");
  testing::SetAttr(&stack, "axis", int64_t{1});
  testing::SetAttr(&stack, "new_axis", int64_t{1});
  b.Output("stacked").Output("hs").Output("h_final");
  return b;
}

TEST(LoadOnnx, AScriptedLoopIsWrittenOutOnceItsTripCountFolds) {
  for (int64_t opset : {12, 14}) {
    SCOPED_TRACE(opset);
    ModelBuilder b = RnnModel(opset);
    LoadOptions o;
    o.batch = 3;
    o.dims = {{"T", 5}};
    Result<Graph> g = LoadOnnxGraphFromBytes(b.Bytes(), "rnn.onnx", o);
    ASSERT_TRUE(g.ok()) << g.message();
    EXPECT_EQ(g->Tensor("stacked")->dims, (std::vector<int64_t>{3, 5, 4}));  // torch.stack(outs, 1)
    EXPECT_EQ(g->Tensor("hs")->dims, (std::vector<int64_t>{5, 3, 16}));
    EXPECT_EQ(g->Tensor("h_final")->dims, (std::vector<int64_t>{3, 16}));
    int matmuls = 0;
    std::set<std::string> ops;
    for (const Node& n : g->nodes) {
      matmuls += n.op_type == "MatMul";
      ops.insert(n.op_type);
    }
    EXPECT_EQ(matmuls, 15);  // 3 per iteration
    for (const char* gone : {"Loop", "SequenceEmpty", "SequenceInsert", "ConcatFromSequence"})
      EXPECT_EQ(ops.count(gone), 0u) << gone;
    bool warned = false;
    for (const std::string& w : g->warnings) {
      warned = warned || w == "rnn.onnx: 1 Loop node whose trip count the sizes fix read as its iterations one "
                              "after another (first: node '/Loop' (Loop): 5 iterations of 8 nodes); other sizes "
                              "run other counts";
      EXPECT_EQ(w.find("has subgraphs"), std::string::npos) << w;
    }
    EXPECT_TRUE(warned) << ::testing::PrintToString(g->warnings);
  }
}

// torch.jit.script's `while` on the data: the trip count INT64_MAX, the condition from the data.
TEST(LoadOnnx, AWhileOnTheDataStaysALoop) {
  ModelBuilder b = RnnModel();
  b.Int64Init("forever", {}, {INT64_MAX});
  b.Node("ReduceSum", {"x"}, {"sum"});
  b.Node("Cast", {"sum"}, {"go"});
  testing::SetAttr(&b.model().mutable_graph()->mutable_node(7)[0], "to", int64_t{onnx::TensorProto::BOOL});
  // Move the two nodes before the Loop (index 4), then point the Loop at them.
  auto* nodes = b.model().mutable_graph()->mutable_node();
  for (int k = 0; k < 2; ++k)
    for (int at = nodes->size() - 1; at > 4; --at) nodes->SwapElements(at, at - 1);
  onnx::NodeProto& loop = *nodes->Mutable(6);
  ASSERT_EQ(loop.op_type(), "Loop");
  loop.set_input(0, "forever");
  loop.set_input(1, "go");
  LoadOptions o;
  o.batch = 3;
  o.dims = {{"T", 5}};
  Result<Graph> g = LoadOnnxGraphFromBytes(b.Bytes(), "rnn.onnx", o);
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_EQ(g->warnings, (std::vector<std::string>{
                             "rnn.onnx: node '/Loop' (Loop) has subgraphs; they are kept inside the node and not analysed"}));
}

TEST(LoadOnnx, ALoopWhoseTripCountDoesNotFoldStaysALoop) {
  ModelBuilder b = RnnModel();
  b.model().mutable_graph()->mutable_node(4)->set_input(0, "x");  // a trip count that is data
  LoadOptions o;
  o.batch = 3;
  o.dims = {{"T", 5}};
  Result<Graph> g = LoadOnnxGraphFromBytes(b.Bytes(), "rnn.onnx", o);
  ASSERT_TRUE(g.ok()) << g.message();
  bool loop = false;
  for (const Node& n : g->nodes) loop = loop || n.op_type == "Loop";
  EXPECT_TRUE(loop);
  bool warned = false;
  for (const std::string& w : g->warnings)
    warned = warned || w == "rnn.onnx: node '/Loop' (Loop) has subgraphs; they are kept inside the node and not analysed";
  EXPECT_TRUE(warned);
}

// torch.tensor_split(y, (1, 3), dim=1) as torch 1.13 exports it (opset 17; MViT's pooling splits
// off its class token so): the bounds Concat([0], [1], [3]), a Loop of one trip per index
// (Unsqueeze(Gather(Shape(indices), 0)), the condition Cast(1) to bool) whose body Slices y from
// bound i to bound i + 1 (scalar starts and ends) and SequenceInserts the piece, the last piece
// Sliced after the Loop and SequenceInserted onto its list, each piece taken by SequenceAt (the
// last at -1), and a ConcatFromSequence of the list besides. y = x @ w, x [B, 6, 8].
ModelBuilder TensorSplitModel(bool with_concat) {
  ModelBuilder b(17);
  b.Input("x", testing::kFloat, {testing::Dim("B"), 6, 8});
  b.FloatInit("w", {8, 4});
  b.Int64Init("indices", {2}, {1, 3});
  b.Int64Init("zero", {}, {0});
  b.Int64Init("minus_one", {}, {-1});
  b.Int64Init("axes", {1}, {1});
  b.Int64Init("zero_1d", {1}, {0});
  b.Int64Init("one_1d", {1}, {1});
  b.Int64Init("three_1d", {1}, {3});
  b.Int64Init("at0", {}, {0});
  b.Int64Init("at1", {}, {1});
  b.Int64Init("at_last", {}, {-1});
  b.Node("MatMul", {"x", "w"}, {"y"}, "/MatMul");
  b.Node("Shape", {"indices"}, {"n_shape"});
  b.Node("Gather", {"n_shape", "zero"}, {"n"});
  b.Node("Unsqueeze", {"n", "zero_1d"}, {"trips"});
  onnx::NodeProto& one = b.Node("Constant", {}, {"one"});
  testing::SetAttr(&one, "value", testing::Int64Tensor({}, {1}));
  onnx::NodeProto& cast = b.Node("Cast", {"one"}, {"cond"});
  testing::SetAttr(&cast, "to", int64_t{onnx::TensorProto::BOOL});
  onnx::NodeProto& bounds = b.Node("Concat", {"zero_1d", "one_1d", "three_1d"}, {"bounds"});
  testing::SetAttr(&bounds, "axis", int64_t{0});
  onnx::NodeProto& empty = b.Node("SequenceEmpty", {}, {"empty"});
  testing::SetAttr(&empty, "dtype", int64_t{onnx::TensorProto::FLOAT});
  onnx::GraphProto body;
  body.set_name("body");
  for (const char* in : {"i", "cond_in", "seq_in"}) body.add_input()->set_name(in);
  onnx::NodeProto g0 = Op("Gather", {"bounds", "i"}, {"start"}, "/Gather_1");
  testing::SetAttr(&g0, "axis", int64_t{0});
  *body.add_node() = g0;
  onnx::NodeProto c1 = Op("Constant", {}, {"body_one"}, "/Constant_7");
  testing::SetAttr(&c1, "value", testing::Int64Tensor({}, {1}));
  *body.add_node() = c1;
  *body.add_node() = Op("Add", {"i", "body_one"}, {"next"}, "/Add");
  onnx::NodeProto g1 = Op("Gather", {"bounds", "next"}, {"end"}, "/Gather_2");
  testing::SetAttr(&g1, "axis", int64_t{0});
  *body.add_node() = g1;
  *body.add_node() = Op("Slice", {"y", "start", "end", "axes"}, {"piece"}, "/Slice");
  *body.add_node() = Op("SequenceInsert", {"seq_in", "piece"}, {"seq_out"}, "/SequenceInsert");
  *body.add_node() = Op("Identity", {"cond"}, {"cond_out"}, "/Identity");
  for (const char* out : {"cond_out", "seq_out"}) body.add_output()->set_name(out);
  onnx::NodeProto& loop = b.Node("Loop", {"trips", "cond", "empty"}, {"pieces"}, "/Loop");
  auto* a = loop.add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
  onnx::NodeProto& last_start = b.Node("Gather", {"bounds", "minus_one"}, {"last_start_0"});
  testing::SetAttr(&last_start, "axis", int64_t{0});
  b.Node("Unsqueeze", {"last_start_0", "zero_1d"}, {"last_start"});
  b.Node("Shape", {"y"}, {"y_shape"});
  onnx::NodeProto& last_end = b.Node("Gather", {"y_shape", "axes"}, {"last_end"});
  testing::SetAttr(&last_end, "axis", int64_t{0});
  b.Node("Slice", {"y", "last_start", "last_end", "axes"}, {"last"}, "/Slice_1");
  b.Node("SequenceInsert", {"pieces", "last"}, {"all"}, "/SequenceInsert_1");
  b.Node("SequenceAt", {"all", "at0"}, {"p0"}, "/SequenceAt");
  b.Node("SequenceAt", {"all", "at1"}, {"p1"}, "/SequenceAt_1");
  b.Node("SequenceAt", {"all", "at_last"}, {"p2"}, "/SequenceAt_2");
  b.Output("p0").Output("p1").Output("p2");
  if (with_concat) {
    onnx::NodeProto& cat = b.Node("ConcatFromSequence", {"all"}, {"joined"}, "/ConcatFromSequence");
    testing::SetAttr(&cat, "axis", int64_t{1});
    b.Output("joined");
  }
  return b;
}

TEST(LoadOnnx, TensorSplitsLoopIsWrittenOutAndItsPiecesTaken) {
  for (bool with_concat : {false, true}) {
    SCOPED_TRACE(with_concat);
    LoadOptions o;
    o.batch = 2;
    Result<Graph> g = LoadOnnxGraphFromBytes(TensorSplitModel(with_concat).Bytes(), "split.onnx", o);
    ASSERT_TRUE(g.ok()) << g.message();
    EXPECT_EQ(g->Tensor("p0")->dims, (std::vector<int64_t>{2, 1, 4}));
    EXPECT_EQ(g->Tensor("p1")->dims, (std::vector<int64_t>{2, 2, 4}));
    EXPECT_EQ(g->Tensor("p2")->dims, (std::vector<int64_t>{2, 3, 4}));
    if (with_concat) {
      EXPECT_EQ(g->Tensor("joined")->dims, (std::vector<int64_t>{2, 6, 4}));
    }
    std::multiset<std::string> ops;
    for (const Node& n : g->nodes) ops.insert(n.op_type);
    for (const char* gone : {"Loop", "SequenceEmpty", "SequenceInsert", "SequenceAt", "ConcatFromSequence"})
      EXPECT_EQ(ops.count(gone), 0u) << gone;
    EXPECT_EQ(ops.count("Slice"), 3u);     // two iterations' and the last piece's
    EXPECT_EQ(ops.count("Identity"), 5u);  // the three SequenceAt; each iteration's condition
    EXPECT_EQ(ops.count("Concat"), with_concat ? 2u : 1u);  // the bounds; the pieces joined
    for (const std::string& w : g->warnings) EXPECT_EQ(w.find("has subgraphs"), std::string::npos) << w;
  }
}

// A list read otherwise than ReadKnownList reads it (here SequenceLength) keeps the Loop.
TEST(LoadOnnx, AListReadOtherwiseKeepsItsLoop) {
  ModelBuilder b = TensorSplitModel(false);
  b.Node("SequenceLength", {"all"}, {"count"});
  b.Output("count", testing::kInt64);
  LoadOptions o;
  o.batch = 2;
  Result<Graph> g = LoadOnnxGraphFromBytes(b.Bytes(), "split.onnx", o);
  ASSERT_TRUE(g.ok()) << g.message();
  bool loop = false;
  for (const Node& n : g->nodes) loop = loop || n.op_type == "Loop";
  EXPECT_TRUE(loop);
}

}  // namespace
}  // namespace gpucast
