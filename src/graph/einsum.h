// Einsum equations ("bij,bjk->bik", "...ij,...jk", "ii->i"): the one parser
// of gpucast, used by the loader (libonnx 1.12 infers only Einsum's output
// rank, not its dims) and by the cost rule (the iteration space).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace gpucast {

struct EinsumSpace {
  std::vector<int64_t> output_dims;
  // The iteration space: each distinct index letter's extent (alphabetical),
  // then the broadcast "..." dims.
  std::vector<int64_t> extents;
  // Some index or "..." dim of the inputs is summed away (not in the output).
  bool sums = false;
};

// Resolves `equation` (spaces ignored; at most kMaxEinsumEquation characters)
// for operands of shapes `inputs`: numpy's rules, with the implicit output
// ("..." then the letters used once, sorted) when there is no "->". Errors
// say what is wrong (an operand's rank, an index with two extents, a bad
// character); callers prefix the file and node.
Result<EinsumSpace> ResolveEinsum(const std::string& equation, const std::vector<std::vector<int64_t>>& inputs);

inline constexpr size_t kMaxEinsumEquation = 1024;

}  // namespace gpucast
