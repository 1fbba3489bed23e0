// The pattern fills by hand (pattern_fills.h), on what a loader would know, without a model:
// the loader-level tests (torch_loops_test.cc, onnx_loader_test.cc) load torch's exports.
#include "graph/pattern_fills.h"

#include <gtest/gtest.h>

#include <map>

namespace gpucast {
namespace {

struct Facts {
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, int32_t> types;
  std::map<std::string, std::vector<int64_t>> ints;
  std::map<std::string, bool> reals;  // folded, but real-valued

  KnownTensors Known() const {
    KnownTensors k;
    k.shape = [this](const std::string& n) -> std::optional<std::vector<int64_t>> {
      auto it = shapes.find(n);
      return it == shapes.end() ? std::nullopt : std::optional(it->second);
    };
    k.elem_type = [this](const std::string& n) { return types.count(n) ? types.at(n) : 0; };
    k.ints = [this](const std::string& n) { return ints.count(n) ? &ints.at(n) : nullptr; };
    k.folded = [this](const std::string& n) { return ints.count(n) > 0 || reals.count(n) > 0; };
    return k;
  }
};

constexpr int32_t kF32 = onnx::TensorProto::FLOAT, kI64 = onnx::TensorProto::INT64;

TEST(PatternFills, EmbeddingBagIsOneTableRowPerBag) {
  Facts f;
  f.shapes["table"] = {1000, 16};
  f.types["table"] = kF32;
  f.ints["trips"] = {32};
  EmbeddingBagLoop m{"table", "ids", "", "sum", "out"};
  auto out = EmbeddingBagOutput(m, "trips", f.Known());
  ASSERT_TRUE(out);
  EXPECT_EQ(out->elem_type, kF32);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{32, 16}));
  f.types["table"] = kI64;  // an integer table is not an embedding
  EXPECT_FALSE(EmbeddingBagOutput(m, "trips", f.Known()));
  f.types["table"] = kF32;
  f.ints["trips"] = {-1};
  EXPECT_FALSE(EmbeddingBagOutput(m, "trips", f.Known()));
  EXPECT_FALSE(EmbeddingBagOutput(m, "unknown", f.Known()));
}

TEST(PatternFills, RepeatInterleaveSumsTheCounts) {
  // x [4, 3, 8] repeated on dim 1 (-2 as written) by counts 1, 2, 5: [4, 8, 8].
  Facts f;
  f.shapes["x"] = {4, 3, 8};
  f.types["x"] = kF32;
  f.ints["split"] = {1};
  f.ints["counts"] = {1, 2, 5};
  f.ints["trips"] = {3};
  RepeatInterleaveLoop m;
  m.input = "x", m.chunk_split = "split", m.repeats = "counts", m.trips = "trips", m.axis = -2, m.chunk_axis = 1;
  auto out = RepeatInterleaveOutput(m, f.Known());
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{4, 8, 8}));
  f.ints["split"] = {1, 1, 1};  // n ones: the same
  EXPECT_TRUE(RepeatInterleaveOutput(m, f.Known()));
  f.ints["split"] = {2, 1};  // not chunks of 1
  EXPECT_FALSE(RepeatInterleaveOutput(m, f.Known()));
  f.ints["split"] = {1};
  f.ints["counts"] = {1, -2, 5};
  EXPECT_FALSE(RepeatInterleaveOutput(m, f.Known()));
  f.ints["counts"] = {INT64_MAX, 1, 0};  // the sum overflows
  EXPECT_FALSE(RepeatInterleaveOutput(m, f.Known()));
  f.ints["counts"] = {1, 2, 5};
  m.chunk_axis = 0;  // the chunks split another dim
  EXPECT_FALSE(RepeatInterleaveOutput(m, f.Known()));
}

onnx::NodeProto Node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
  onnx::NodeProto n;
  n.set_op_type(op);
  for (auto& i : in) n.add_input(i);
  for (auto& o : out) n.add_output(o);
  return n;
}

TEST(PatternFills, NonZeroOfARouterIsBalancedAndOfAnyOtherDataEverything) {
  // 25 tokens x top 2 of 8 experts: 50 slots, ceil(50 / 8) = 7 each; an id of 8 gets none.
  onnx::NodeProto topk = Node("TopK", {"scores", "k"}, {"w", "idx"});
  onnx::NodeProto eq = Node("Equal", {"e", "idx"}, {"is"});
  onnx::NodeProto nz = Node("NonZero", {"is"}, {"to"});
  auto producer = [&](const std::string& name) -> const onnx::NodeProto* {
    return name == "idx" ? &topk : name == "is" ? &eq : nullptr;
  };
  Facts f;
  f.shapes["scores"] = {25, 8};
  f.shapes["idx"] = {25, 2};
  f.shapes["is"] = {25, 2};
  f.ints["e"] = {3};
  auto routed = RoutedNonZeroOutput(nz, producer, f.Known());
  ASSERT_TRUE(routed);
  EXPECT_EQ(routed->output.dims, (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(routed->expert, 3);
  EXPECT_EQ(routed->experts, 8);
  f.ints["e"] = {8};
  EXPECT_EQ(RoutedNonZeroOutput(nz, producer, f.Known())->output.dims, (std::vector<int64_t>{2, 0}));
  // Not a router (the id not folded): NonZero of data, every element of [25, 2].
  f.ints.erase("e");
  EXPECT_FALSE(RoutedNonZeroOutput(nz, producer, f.Known()));
  auto all = SelectingNonZeroOutput(nz, f.Known());
  ASSERT_TRUE(all);
  EXPECT_EQ(all->elem_type, kI64);
  EXPECT_EQ(all->dims, (std::vector<int64_t>{2, 50}));
  // A folded input (real or integer) is not data: left to folding, not read as everything.
  f.reals["is"] = true;
  EXPECT_FALSE(SelectingNonZeroOutput(nz, f.Known()));
}

}  // namespace
}  // namespace gpucast
