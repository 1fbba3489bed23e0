// The output shapes the loader gives the torch export patterns it reads, where libonnx's
// inference leaves them unknown: an EmbeddingBag Loop's and a repeat_interleave's
// (torch_loops.h matches them), a mixture-of-experts router's NonZero (balanced) and any other
// NonZero of data (every element). Pure functions of what the loader knows; the loader keeps the
// types, the values and the warnings (docs/graph-loading.md).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "graph/torch_loops.h"

namespace gpucast {

// What the loader knows of a name: its shape (nullopt: not known), its element type (0: not
// known), its folded integer values (nullptr: none, or reals) and whether any value is folded.
struct KnownTensors {
  std::function<std::optional<std::vector<int64_t>>(const std::string&)> shape;
  std::function<int32_t(const std::string&)> elem_type;
  std::function<const std::vector<int64_t>*(const std::string&)> ints;
  std::function<bool(const std::string&)> folded;
};

// An output's element type and shape.
struct FilledOutput {
  int32_t elem_type = 0;
  std::vector<int64_t> dims;
};

// An EmbeddingBag Loop's output: [trip count, table dim 1] in the table's type, when the trip
// count `trips` is one folded value >= 0 and the table a rank-2 float tensor.
std::optional<FilledOutput> EmbeddingBagOutput(const EmbeddingBagLoop& m, const std::string& trips,
                                               const KnownTensors& k);

// A repeat_interleave's output: x's shape with dim `axis` the sum of the repeat counts, when x's
// shape is known, both axes name the same dim, x is split into chunks of 1 (split sizes a folded
// 1 or n ones), the counts are n folded values >= 0 and the trip count is n (n = x's extent on
// the axis).
std::optional<FilledOutput> RepeatInterleaveOutput(const RepeatInterleaveLoop& m, const KnownTensors& k);

// NonZero(Equal(TopK's indices, one id)), either operand order: the tokens a mixture-of-experts
// router sends to expert `expert` of `experts` (`torch.where(topk_idx == e)`). Read as balanced:
// of the indices' n elements (tokens x k) each expert gets ceil(n / E), an id outside [0, E)
// none; output [rank of the indices, that count], int64. `producer(name)`: the node that wrote
// `name` (only Equal and TopK are looked up), or nullptr.
struct RoutedNonZero {
  FilledOutput output;
  int64_t expert = 0;
  int64_t experts = 0;
};
std::optional<RoutedNonZero> RoutedNonZeroOutput(
    const onnx::NodeProto& nonzero, const std::function<const onnx::NodeProto*(const std::string&)>& producer,
    const KnownTensors& k);

// Any other NonZero whose input's values are not folded (a mask from the data): its size depends
// on the data, read as every element selected, the most it can be: [rank, elements], int64.
std::optional<FilledOutput> SelectingNonZeroOutput(const onnx::NodeProto& nonzero, const KnownTensors& k);

}  // namespace gpucast
