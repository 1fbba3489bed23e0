// torch's EmbeddingBag and repeat_interleave exports (torch_loops.h). EmbeddingBag on the DLRM of examples/dlrm.py
// as tools/unseen_models.py exported it (torch 1.13, training mode, opset 17):
// three tables of 1,000, 2,000 and 4,000 rows of 16, each sample a bag of 4 ids
// per table. The Loop is read as one EmbeddingBag node; other Loops are not.
#include "graph/torch_loops.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "graph/onnx_loader.h"
#include "util/paths.h"

namespace gpucast {
namespace {

// models/unseen/FILE, as tools/unseen_models.py wrote it.
onnx::ModelProto Unseen(const std::string& file) {
  std::ifstream in(HomeDir() + "/models/unseen/" + file, std::ios::binary);
  onnx::ModelProto m;
  EXPECT_TRUE(in.good() && m.ParseFromIstream(&in)) << "models/unseen/" << file << ": run tools/unseen_models.py";
  return m;
}

onnx::ModelProto Dlrm() { return Unseen("dlrm-opset17.onnx"); }

Result<Graph> Load(const onnx::ModelProto& m, int64_t batch) {
  LoadOptions opts;
  opts.batch = batch;
  std::string bytes = m.SerializeAsString();
  return LoadOnnxGraphFromBytes(bytes, "dlrm.onnx", opts);
}

onnx::NodeProto* FirstLoop(onnx::ModelProto* m) {
  for (auto& n : *m->mutable_graph()->mutable_node())
    if (n.op_type() == "Loop") return &n;
  ADD_FAILURE() << "no Loop";
  return nullptr;
}

onnx::NodeProto* BodyNode(onnx::NodeProto* loop, const std::string& op) {
  for (auto& a : *loop->mutable_attribute())
    if (a.name() == "body")
      for (auto& n : *a.mutable_g()->mutable_node())
        if (n.op_type() == op) return &n;
  ADD_FAILURE() << "no " << op << " in the body";
  return nullptr;
}

TEST(EmbeddingBag, TorchsLoopExportIsOneNodePerTable) {
  onnx::ModelProto m = Dlrm();
  auto bag = MatchEmbeddingBagLoop(*FirstLoop(&m));
  ASSERT_TRUE(bag);
  EXPECT_EQ(bag->table, "tables.0.weight");
  EXPECT_EQ(bag->mode, "sum");

  Result<Graph> g = Load(m, 32);
  ASSERT_TRUE(g.ok()) << g.message();
  int bags = 0;
  for (const Node& n : g->nodes) {
    if (n.op_type == "Loop") ADD_FAILURE() << n.name << " was not read as an EmbeddingBag";
    if (n.op_type != "EmbeddingBag") continue;
    ++bags;
    ASSERT_EQ(n.inputs.size(), 3u);
    EXPECT_EQ(n.inputs[0], "tables." + std::to_string(bags - 1) + ".weight");
    EXPECT_EQ(n.AttrString("mode"), "sum");
    // One row per sample of 16, from 32 bags of 4 ids: the flat indices.
    EXPECT_EQ(g->Tensor(n.outputs[0])->dims, (std::vector<int64_t>{32, 16}));
    EXPECT_EQ(g->Tensor(n.inputs[1])->dims, (std::vector<int64_t>{128}));
    EXPECT_TRUE(g->Tensor(n.inputs[0])->is_param);
  }
  EXPECT_EQ(bags, 3);
  EXPECT_TRUE(g->unknown_shapes.empty());
  for (const std::string& w : g->warnings) EXPECT_EQ(w.find("subgraphs"), std::string::npos) << w;
}

TEST(EmbeddingBag, AnotherLoopKeepsItsSubgraphUnanalysed) {
  // A ReduceProd (no EmbeddingBag mode), a kept dim, a Gather on another axis, a loop-carried
  // value: not torch's bag, so the Loop stays a Loop and its output unknown.
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE(variant);
    onnx::ModelProto m = Dlrm();
    onnx::NodeProto* loop = FirstLoop(&m);
    if (variant == 0) BodyNode(loop, "ReduceSum")->set_op_type("ReduceProd");
    if (variant == 1)
      for (auto& a : *BodyNode(loop, "ReduceSum")->mutable_attribute())
        if (a.name() == "keepdims") a.set_i(1);
    if (variant == 2) {
      for (auto& n : *loop->mutable_attribute()->Mutable(0)->mutable_g()->mutable_node())
        if (n.op_type() == "Gather" && n.input(0).find("weight") != std::string::npos) {
          ASSERT_EQ(n.attribute_size(), 1);
          ASSERT_EQ(n.attribute(0).name(), "axis");
          n.mutable_attribute(0)->set_i(1);
        }
    }
    if (variant == 3) loop->add_input(loop->input(1));
    EXPECT_FALSE(MatchEmbeddingBagLoop(*loop));
    Result<Graph> g = Load(m, 8);
    ASSERT_TRUE(g.ok()) << g.message();
    int loops = 0;
    for (const Node& n : g->nodes) loops += n.op_type == "Loop";
    EXPECT_EQ(loops, 1);
    bool said = false;
    for (const std::string& w : g->warnings) said = said || w.find("has subgraphs") != std::string::npos;
    EXPECT_TRUE(said);
  }
}

TEST(EmbeddingBag, ATableOrIdsNotDefinedBeforeTheLoopKeepItALoop) {
  // The body reads (0) the Loop's own output as its table, (1) a later Loop's output, (2) ids of
  // a name nothing defines: read as an EmbeddingBag, the node would read its own output, a later
  // one or nothing. It stays a Loop (unanalysed, uncosted), and the graph loads.
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    onnx::ModelProto m = Dlrm();
    std::vector<onnx::NodeProto*> loops;
    for (auto& n : *m.mutable_graph()->mutable_node())
      if (n.op_type() == "Loop") loops.push_back(&n);
    ASSERT_EQ(loops.size(), 3u);
    for (auto& n : *loops[0]->mutable_attribute()->Mutable(0)->mutable_g()->mutable_node()) {
      if (variant < 2 && n.op_type() == "Gather" && n.input(0) == "tables.0.weight")
        n.set_input(0, loops[variant == 0 ? 0 : 1]->output(0));
      if (variant == 2 && n.op_type() == "Slice") n.set_input(0, "nowhere");
    }
    ASSERT_TRUE(MatchEmbeddingBagLoop(*loops[0]));  // the pattern alone still matches
    Result<Graph> g = Load(m, 8);
    ASSERT_TRUE(g.ok()) << g.message();
    int as_loop = 0, as_bag = 0;
    for (const Node& n : g->nodes) {
      as_loop += n.op_type == "Loop";
      as_bag += n.op_type == "EmbeddingBag";
    }
    EXPECT_EQ(as_loop, 1);
    EXPECT_EQ(as_bag, 2);
  }
}

// The other two bodies torch writes (tools/unseen_models.py's bags: a history bag of 6 ids with
// per_sample_weights, whose body multiplies the gathered rows by the weights sliced at the same
// offsets before its ReduceSum; a tag bag of 3 ids with mode max, a ReduceMax): one node each,
// the weights its fourth input.
TEST(EmbeddingBag, PerSampleWeightsAndModeMaxAreReadToo) {
  onnx::ModelProto m = Unseen("bags-opset17.onnx");
  Result<Graph> g = Load(m, 32);
  ASSERT_TRUE(g.ok()) << g.message();
  int weighted = 0, max = 0;
  for (const Node& n : g->nodes) {
    if (n.op_type == "Loop") ADD_FAILURE() << n.name << " was not read as an EmbeddingBag";
    if (n.op_type == "EmbeddingBag") {
      ++weighted;
      EXPECT_EQ(n.inputs[0], "history.weight");
      EXPECT_EQ(n.AttrString("mode"), "sum");
      ASSERT_EQ(n.inputs.size(), 4u);
      EXPECT_EQ(g->Tensor(n.inputs[1])->dims, (std::vector<int64_t>{192}));
      EXPECT_EQ(g->Tensor(n.inputs[3])->dims, (std::vector<int64_t>{192}));
      EXPECT_EQ(g->Tensor(n.outputs[0])->dims, (std::vector<int64_t>{32, 16}));
    } else if (n.op_type == "EmbeddingBagMax") {
      ++max;
      EXPECT_EQ(n.inputs[0], "tags.weight");
      EXPECT_EQ(n.inputs.size(), 3u);
      EXPECT_EQ(g->Tensor(n.inputs[1])->dims, (std::vector<int64_t>{96}));
      EXPECT_EQ(g->Tensor(n.outputs[0])->dims, (std::vector<int64_t>{32, 16}));
    }
  }
  EXPECT_EQ(weighted, 1);
  EXPECT_EQ(max, 1);
  EXPECT_TRUE(g->unknown_shapes.empty());
}

TEST(EmbeddingBag, WeightsThatAreNotTheBagsKeepItALoop) {
  // The weights sliced at other offsets than the ids (0), the ids themselves as weights (1),
  // weights of a name nothing defines (2), weights in a max bag (3): the Loop stays a Loop.
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE(variant);
    onnx::ModelProto m = Unseen("bags-opset17.onnx");
    onnx::NodeProto* loop = FirstLoop(&m);
    onnx::NodeProto* weights_slice = nullptr;
    for (auto& n : *loop->mutable_attribute()->Mutable(0)->mutable_g()->mutable_node())
      if (n.op_type() == "Slice" && n.output(0).find("Slice_2") != std::string::npos) weights_slice = &n;
    ASSERT_TRUE(weights_slice);
    ASSERT_TRUE(MatchEmbeddingBagLoop(*loop));
    if (variant == 0) weights_slice->set_input(1, weights_slice->input(2));
    if (variant == 1) weights_slice->set_input(0, MatchEmbeddingBagLoop(*loop)->indices);
    if (variant == 2) weights_slice->set_input(0, "nowhere");
    if (variant == 3) BodyNode(loop, "ReduceSum")->set_op_type("ReduceMax");
    EXPECT_EQ(MatchEmbeddingBagLoop(*loop).has_value(), variant == 2);  // (2): the loader's check
    Result<Graph> g = Load(m, 8);
    ASSERT_TRUE(g.ok()) << g.message();
    int loops = 0;
    for (const Node& n : g->nodes) loops += n.op_type == "Loop";
    EXPECT_EQ(loops, 1);
  }
}

// torch.repeat_interleave on the dynamic batch (tools/unseen_models.py's multiview: x [B, 3, 16,
// 16] repeated 3 times on dim 0): SplitToSequence, a Loop over sequences, ConcatFromSequence,
// read as one copy to [3B, 3, 16, 16]; the Loop, SequenceEmpty and both SplitToSequence absorbed.
onnx::ModelProto MultiView() { return Unseen("multiview-opset17.onnx"); }

TEST(RepeatInterleave, TorchsSequenceLoopIsOneCopy) {
  Result<Graph> g = Load(MultiView(), 4);
  ASSERT_TRUE(g.ok()) << g.message();
  int copies = 0;
  for (const Node& n : g->nodes) {
    EXPECT_NE(n.op_type, "Loop");
    EXPECT_NE(n.op_type, "SplitToSequence");
    EXPECT_NE(n.op_type, "SequenceEmpty");
    if (n.op_type == "Tile" && n.name.find("ConcatFromSequence") != std::string::npos) {
      ++copies;
      ASSERT_EQ(n.inputs, std::vector<std::string>{"x"});
      EXPECT_EQ(g->Tensor(n.outputs[0])->dims, (std::vector<int64_t>{12, 3, 16, 16}));
    }
  }
  EXPECT_EQ(copies, 1);
  EXPECT_TRUE(g->unknown_shapes.empty());
  for (const std::string& w : g->warnings) EXPECT_EQ(w.find("subgraphs"), std::string::npos) << w;
}

TEST(RepeatInterleave, WhatElseReadsOrDoesNotAddUpKeepsItUnread) {
  // (0) another node reads the chunks' sequence: nothing is absorbed, the Loop stays (and its
  // output unknown); (1) the repeat counts are not the chunks' count (a trip count of 2 for 4
  // samples): the copy stays, its shape unknown.
  for (int variant = 0; variant < 2; ++variant) {
    SCOPED_TRACE(variant);
    onnx::ModelProto m = MultiView();
    auto* g = m.mutable_graph();
    const onnx::NodeProto* loop = nullptr;
    std::string chunks;
    for (const auto& n : g->node()) {
      if (n.op_type() == "Loop") loop = &n;
      if (n.op_type() == "SplitToSequence" && n.input(0) == "x") chunks = n.output(0);
    }
    ASSERT_TRUE(loop && !chunks.empty());
    if (variant == 0) {
      auto* reader = g->add_node();
      reader->set_op_type("SequenceLength");
      reader->add_input(chunks);
      reader->add_output("how_many");
      *g->add_output() = g->output(0);
      g->mutable_output(g->output_size() - 1)->set_name("how_many");
      g->mutable_output(g->output_size() - 1)->mutable_type()->mutable_tensor_type()->set_elem_type(7);
    } else {
      auto* two = g->add_node();
      two->set_op_type("Constant");
      two->add_output("two");
      auto* a = two->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(7);
      a->mutable_t()->add_int64_data(2);
      // Constant first, so the sort keeps it before the Loop.
      for (int k = g->node_size() - 1; k > 0; --k) g->mutable_node()->SwapElements(k, k - 1);
      for (auto& n : *g->mutable_node())
        if (n.op_type() == "Loop") n.set_input(0, "two");
    }
    Result<Graph> loaded = Load(m, 4);
    ASSERT_TRUE(loaded.ok()) << loaded.message();
    int loops = 0, copies = 0;
    for (const Node& n : loaded->nodes) {
      loops += n.op_type == "Loop";
      if (n.op_type == "Tile") {
        ++copies;
        EXPECT_FALSE(loaded->Tensor(n.outputs[0])->shape_known);
      }
    }
    EXPECT_EQ(loops, variant == 0 ? 1 : 0);
    EXPECT_EQ(copies, variant == 0 ? 0 : 1);
  }
}

TEST(EmbeddingBag, ALargeBodyIsNeverMatched) {
  onnx::ModelProto m = Dlrm();
  onnx::NodeProto* loop = FirstLoop(&m);
  auto* body = loop->mutable_attribute()->Mutable(0)->mutable_g();
  ASSERT_TRUE(MatchEmbeddingBagLoop(*loop));
  while (body->node_size() <= kMaxTorchLoopBodyNodes) {
    auto* n = body->add_node();
    n->set_op_type("Identity");
    n->add_input(body->input(0).name());
    n->add_output("pad_" + std::to_string(body->node_size()));
  }
  EXPECT_FALSE(MatchEmbeddingBagLoop(*loop));
}

}  // namespace
}  // namespace gpucast
