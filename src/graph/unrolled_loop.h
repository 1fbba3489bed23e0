// A Loop whose trip count the sizes fix, read as its iterations one after another.
//
// torch.jit.script (and torch.onnx's export of scripted code) writes a Python
// `for t in range(x.size(0))` as a Loop: the trip count is a size of the data,
// the condition a constant true, the loop-carried values the recurrent state
// (an RNN cell's h and c) and, where the loop appends to a list, a sequence
// (SequenceEmpty before the Loop, SequenceInsert in its body, ConcatFromSequence
// after it: torch.stack / torch.cat of the list). Once the loader knows the
// sizes (--batch, --dim) the trip count folds, and the Loop is its body written
// out that many times (docs/graph-loading.md); its nodes are inferred and costed
// as any other node. A Loop whose trip count or condition does not fold stays a
// node whose subgraph is not analysed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace gpucast {

// A Loop output that is a list the body appends to (SequenceInsert without a
// position onto a SequenceEmpty): the tensors appended, in order (renamed), for
// the loader to put in the place of its ConcatFromSequence.
struct UnrolledSequence {
  std::string output;                 // the Loop's output naming the final list
  std::vector<std::string> elements;  // one per iteration
};

struct UnrolledLoop {
  std::vector<onnx::NodeProto> nodes;     // what stands in the Loop's place
  std::vector<UnrolledSequence> sequences;
};

// What the loader knows of the outer graph, for UnrollLoop.
struct LoopContext {
  int64_t opset = 0;  // the model's default-domain opset (how Unsqueeze takes its axes)
  // Whether an outer name is taken (a renamed body name must avoid it).
  std::function<bool(const std::string&)> taken;
  // Whether an outer name is a folded boolean true (the Loop's and the body's condition).
  std::function<bool(const std::string&)> is_true;
  // Whether an outer name is the output of a SequenceEmpty (the start of a list).
  std::function<bool(const std::string&)> is_empty_sequence;
};

// The nodes that stand in `loop`'s place when it runs `trips` iterations: the
// body once per iteration k (every name it defines renamed to
// "<Loop name>/iter<k>/<name>", node names alike, reads inside nested subgraphs
// too), the iteration number a Constant k, the condition a Constant true, each
// loop-carried value the previous iteration's (the first: the Loop's input);
// the Loop's final values an Identity of the last iteration's, each scan output
// the iterations' values stacked (Unsqueeze at 0, one Concat). A list the body
// appends to is not written as sequence ops: its elements are returned
// (`sequences`; the SequenceInsert nodes are left out).
// nullopt when the Loop cannot be written out: not a default-domain Loop with a
// body, `trips` < 1, a condition that is not a folded true (the Loop's: absent
// or ctx.is_true; the body's: its own condition input, a Constant true, or an
// Identity of either or of a folded true outer name), a body with initializers
// or another input or output count than the Loop's, a loop-carried value
// without an initial one, a list the body does otherwise than append to
// (read, position given, appended twice), a name defined twice, or a renamed
// name that is taken.
std::optional<UnrolledLoop> UnrollLoop(const onnx::NodeProto& loop, int64_t trips, const LoopContext& ctx);

// The nodes that stand for `concat`, a ConcatFromSequence of a list the Loop appended to, given
// the list's elements: with new_axis (torch.stack) an Unsqueeze of each at its axis first
// ("<concat name>/row<k>", opset 13+ their axes a Constant "<concat name>/axes"), then one Concat
// named and writing as `concat` (the last node). nullopt: not a default-domain ConcatFromSequence
// with one output, no element, or a new name `taken`.
std::optional<std::vector<onnx::NodeProto>> ListConcat(const onnx::NodeProto& concat,
                                                       const std::vector<std::string>& elements, int64_t opset,
                                                       const std::function<bool(const std::string&)>& taken);

}  // namespace gpucast
