// torch.onnx exports that write one op as a Loop, read as that op (the loader
// gives the result its shape and the cost layer a node it has a rule for):
//
// torch.onnx's export of nn.EmbeddingBag / F.embedding_bag (a recommender's
// sparse features: DLRM, Wide & Deep) read as the one op it is. The exporter
// (torch/onnx/symbolic_opset11.py, embedding_bag with offsets, as torch 1.13
// writes it) writes a Loop over the bags whose body slices the flat indices at
// the bag's offsets, Gathers those rows of the table and reduces them
// (ReduceSum, ReduceMean, ReduceMax; with per_sample_weights, ReduceSum of the
// rows times the weights sliced at the same offsets) to one row: one scan
// output, [bags, dim]. The loader gives that output its shape and hands the
// cost layer a node "EmbeddingBag" (sum, mean) or "EmbeddingBagMax"
// (docs/graph-loading.md, docs/cost-rules.md); any other Loop keeps its
// subgraph unanalysed, as before.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace gpucast {

struct EmbeddingBagLoop {
  std::string table;    // outer-scope name of the [rows, dim] table the body gathers from
  std::string indices;  // outer-scope name of the flat indices the body slices, [lookups]
  std::string weights;  // outer-scope name of the flat per_sample_weights, [lookups]; empty: none
  std::string mode;     // "sum", "mean" or "max"
  std::string output;   // the Loop's only output: one row per bag, [bags, dim]
};

// Loop bodies larger than this are never matched (the exporter writes 11 nodes for an
// EmbeddingBag, 18 for a repeat_interleave).
inline constexpr int kMaxTorchLoopBodyNodes = 32;

// The match when `loop` is exactly that pattern: a default-domain Loop with a
// trip count, a condition and no loop-carried value; one output; a body of at
// most kMaxTorchLoopBodyNodes nodes whose scan output is ReduceSum, ReduceMean
// or ReduceMax (keepdims 0) of a Gather (axis 0) from an outer-scope table at
// indices a Slice of an outer-scope tensor gives, or ReduceSum of that Gather
// times an Unsqueeze of the same Slice of another outer-scope tensor (the
// weights). nullopt otherwise. Shapes are the loader's to check.
std::optional<EmbeddingBagLoop> MatchEmbeddingBagLoop(const onnx::NodeProto& loop);

// torch.repeat_interleave(x, repeats, dim) on a tensor with a dynamic dim (torch.onnx's
// symbolic_opset11 as torch 1.13 writes it; user-written grouped-query attention repeats its keys
// and values so): SplitToSequence of x into chunks along `axis`, a Loop whose body takes chunk i
// and repeat count i (SequenceAt), Unsqueezes, Expands and Reshapes the chunk to that many copies
// and SequenceInserts it, then ConcatFromSequence along `axis`. The loader checks the values
// (chunks of 1, the repeat counts folded) and gives the output x's shape with dim `axis` the sum
// of the counts; the cost layer gets one copy node (Tile: it writes its output) in place of the
// ConcatFromSequence, and the Loop, its SequenceEmpty and both SplitToSequence are absorbed.
struct RepeatInterleaveLoop {
  std::string input;          // x
  std::string chunk_split;    // split sizes of x's SplitToSequence
  std::string repeats;        // the tensor of repeat counts (its SplitToSequence's input)
  std::string repeats_split;  // split sizes of the counts' SplitToSequence
  std::string trips;          // the Loop's trip count
  int64_t axis = 0;           // ConcatFromSequence's axis, as written (may be negative)
  int64_t chunk_axis = 0;     // x's SplitToSequence axis, as written
  std::string output;         // ConcatFromSequence's output
  // Outputs of the nodes the pattern absorbs: the Loop, SequenceEmpty, both SplitToSequence.
  std::vector<std::string> absorbed;
};

// `producer(name)`: the main-graph node that writes `name`, or nullptr. The match when `concat`
// (a ConcatFromSequence) ends that pattern; nullopt otherwise. Values and shapes are the loader's
// to check; so is that nothing outside the pattern reads what it absorbs.
std::optional<RepeatInterleaveLoop> MatchRepeatInterleaveLoop(
    const onnx::NodeProto& concat, const std::function<const onnx::NodeProto*(const std::string&)>& producer);

}  // namespace gpucast
