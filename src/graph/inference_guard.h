// What libonnx 1.12's shape-inference functions read without checking, checked
// before they run.
//
// Several of libonnx's per-op inference functions index an input's dims, an
// attribute's list or a constant input's values without checking the rank or
// the length first, or divide by an attribute (onnx/onnx#6185: Gemm-6 reads a
// dim of a rank-0 input). A file that breaks such a precondition crashes the
// process that analyses it (the CLI, the service) instead of getting an error.
// This is one table, by op and schema version, of those preconditions, taken
// from the ONNX operator specification (the ranks and values a valid node has)
// and found by fuzz/op_sweep.cc, which loads a single-node graph of every
// schema of every version with inputs of every rank, constant inputs and
// random attributes: a node that breaks one is an error naming the node and the
// reason; the graph is refused. Control-flow ops (If, Loop, Scan) are not
// inferred at all (SkipsInference): their bodies are not analysed and gpucast
// does not cost them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace gpucast {

// What the check knows of one input of the node.
struct GuardInput {
  bool present = false;                        // named (an empty name is an absent optional input)
  int64_t rank = -1;                           // -1: unknown
  const std::vector<int64_t>* value = nullptr; // integer constant's values, when known
};

// "" when libonnx's inference for `node` (op_type, attrs) at schema version
// `since_version` may run on inputs `in`; otherwise the reason it must not
// ("input 0 (A) has rank 0, want 2").
std::string CheckBeforeInference(const Node& node, int since_version, const std::vector<GuardInput>& in);

// Whether libonnx's inference is never run for this op (control flow: its
// outputs' shapes stay unknown).
bool SkipsInference(const std::string& op_type);

}  // namespace gpucast
