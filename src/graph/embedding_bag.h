// torch.onnx's export of nn.EmbeddingBag / F.embedding_bag (a recommender's
// sparse features: DLRM, Wide & Deep) read as the one op it is. The exporter
// (torch/onnx/symbolic_opset11.py, embedding_bag with offsets, every torch
// from 1.8) writes a Loop over the bags whose body slices the flat indices at
// the bag's offsets, Gathers those rows of the table and reduces them
// (ReduceSum, ReduceMean) to one row: one scan output, [bags, dim]. The
// loader gives that output its shape and hands the cost layer a node
// "EmbeddingBag" (docs/graph-loading.md, docs/cost-rules.md); any other Loop
// keeps its subgraph unanalysed, as before.
#pragma once

#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

namespace gpucast {

struct EmbeddingBagLoop {
  std::string table;    // outer-scope name of the [rows, dim] table the body gathers from
  std::string indices;  // outer-scope name of the flat indices the body slices, [lookups]
  std::string mode;     // "sum" or "mean"
  std::string output;   // the Loop's only output: one row per bag, [bags, dim]
};

// Bodies larger than this are never matched (the exporter's has 11 nodes).
inline constexpr int kMaxEmbeddingBagBodyNodes = 32;

// The match when `loop` is exactly that pattern: a default-domain Loop with a
// trip count, a condition and no loop-carried value; one output; a body of at
// most kMaxEmbeddingBagBodyNodes nodes whose scan output is ReduceSum or
// ReduceMean (keepdims 0) of a Gather (axis 0) from an outer-scope table at
// indices a Slice of an outer-scope tensor gives. nullopt otherwise (per-sample
// weights, mode max, padding_idx: not matched). Shapes are the loader's to check.
std::optional<EmbeddingBagLoop> MatchEmbeddingBagLoop(const onnx::NodeProto& loop);

}  // namespace gpucast
