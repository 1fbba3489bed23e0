// What each op keeps in GPU memory between its forward and its backward (the
// tensors PyTorch autograd saves: tools/autograd/derivatives.yaml), and the
// element type autocast runs it in. Internal to gpucast_cost; the table is in
// saved_rules.cc, the bookkeeping (deduplication by tensor) in cost.cc, the
// meaning in docs/cost-rules.md ("Memory kept for backward").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cost/count.h"
#include "graph/graph.h"

namespace gpucast {

// The element type an op's float outputs have under torch.autocast (CUDA):
// kHalf for the ops autocast casts to fp16 (conv, matmul/linear, recurrent),
// kFloat for its fp32 list (softmax, log_softmax, layer/group norm, exp, log,
// pow, sum, prod, norms, cumsum, softplus, reciprocal), kPromote for the rest
// (the widest of the non-weight float inputs: elementwise, ReLU, batch norm,
// pooling, dropout, copies).
enum class AmpType { kHalf, kFloat, kPromote };

struct SavedRule {
  const char* op_type;
  // bit i (i < 31): input i is kept (weights never: they are resident
  // anyway); with kSavedPartner set, only when another input needs a gradient
  // (a product's derivative in one operand is the other operand).
  uint32_t inputs = 0;
  uint32_t outputs = 0;  // bit i: output i is kept
  // Extra state kept per element of output 0: `extra_elems` in output 0's
  // element type (cuDNN RNN reserve space: gates and cell state), `extra_bytes`
  // absolute (dropout's 1-byte mask, max-pool's int64 indices).
  int64_t extra_elems = 0;
  int64_t extra_bytes = 0;
  AmpType amp = AmpType::kPromote;
  // fp32 statistics kept per normalisation group (NormGroups), each its own tensor: a layer norm's
  // mean and rstd (2), an RMS norm's rstd (1). Kept in fp32 whatever the input's type.
  int stats = 0;
};
inline constexpr uint32_t kSavedPartner = 1u << 31;

// Exports of fused PyTorch ops that keep less than their ONNX decomposition:
// LayerNorm before opset 17 (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
// Div, then Mul and Add by the affine weights) keeps its input, mean and
// standard deviation; GELU before opset 20 (x * 0.5 * (1 + erf(x / sqrt 2)),
// the scalar products in either order) keeps its input. For each node of
// such a pattern: the tensors the whole pattern keeps, on its first node;
// `inside` on the others (they keep nothing). Every node of a pattern also has
// `first`, the index of the pattern's first node (its id), and the first node
// `output`, the pattern's result (the output of its last node): the fused op
// reads keep[0] and writes `output`, as one kernel (features.cc EstimateStep).
struct FusedMemory {
  std::vector<std::string> keep;
  bool inside = false;
  size_t first = 0;
  std::string output;
};
std::map<size_t, FusedMemory> FindFusedExports(const Graph& graph);

// The groups a normalisation keeps statistics for (SavedRule::stats), from its input X:
// LayerNormalization and RMSNormalization the elements of X before `axis` (default -1: every
// row), GroupNormalization N x num_groups, BatchNormalization the channels (dim 1),
// InstanceNormalization N x C. 0 for another op, an X of rank < 2 or an axis outside X.
Count NormGroups(const Node& node, const TensorInfo& x);

// The row for a default-domain op, or nullptr (every op of the cost rule
// table has one: cost_rules_test checks it).
const SavedRule* FindSavedRule(const std::string& op_type);
const std::vector<SavedRule>& SavedRuleTable();

}  // namespace gpucast
