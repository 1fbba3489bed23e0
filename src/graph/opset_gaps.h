// Output shapes of default-domain ops that libonnx 1.12 (Debian 12; schemas up
// to opset 17) has no schema for, or whose rule there is wrong or incomplete:
// ops of opsets 18-23 that torch's dynamo exporter writes (Gelu-20,
// GroupNormalization-18/21, RMSNormalization-23, Attention-23,
// RotaryEmbedding-23, ...), and Einsum and OneHot (libonnx infers only their rank). Each
// rule follows the op's section of onnx/docs/Operators.md (ONNX 1.18); the
// loader calls it instead of ONNX's own inference (docs/graph-loading.md,
// "Gaps filled by hand").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "util/status.h"

namespace gpucast {

// What a rule knows of one input.
struct GapInput {
  bool present = false;                       // false: omitted optional input
  std::optional<std::vector<int64_t>> dims;   // nullopt: shape unknown
  ElemType elem_type = 0;
  const std::vector<int64_t>* value = nullptr;  // a constant integer input's values
};

struct GapOutput {
  std::optional<std::vector<int64_t>> dims;  // nullopt: left unknown
  ElemType elem_type = 0;
};

// The opset an op's rule here starts at (Gelu: 20, Pad: 18), or 0 when none:
// for a model of an older opset no rule applies.
int GapOpSince(const std::string& op_type);

// Whether a rule here gives `node`'s shapes at `opset`: ops without a schema
// in libonnx 1.12 from their opset on; ops it knows at an older version only
// where that version's rule is wrong (Pad-18 with its axes input,
// AveragePool-19 with dilations): the loader then skips libonnx's rule.
bool GapRuleApplies(const Node& node, int64_t opset);

// Output shapes of `node` (GapRuleApplies; otherwise all unknown); one entry per output of the node (unknown where the inputs do not
// give it). An error says what is inconsistent (no file or node prefix: the
// caller adds them), e.g. "channels 30 do not divide by num_groups 4".
Result<std::vector<GapOutput>> InferGapOutputs(const Node& node, int64_t opset, const std::vector<GapInput>& inputs);

}  // namespace gpucast
