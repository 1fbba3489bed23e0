// The per-op cost rules (internal to gpucast_cost). A rule is a pure function
// of one node's resolved shapes; the table in cost_rules.cc maps op_type to
// {category, rule}. Rule families live in rules_*.cc. Units: see cost.h.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost.h"
#include "cost/count.h"
#include "graph/graph.h"
#include "util/status.h"

namespace gpucast {

// What a rule sees. The driver guarantees that every non-omitted input and
// every output has a known shape before calling a rule.
struct OpArgs {
  const Node& node;
  std::vector<const TensorInfo*> inputs;   // nullptr: omitted optional input
  std::vector<const TensorInfo*> outputs;
  std::vector<bool> input_requires_grad;   // same length as inputs
  // Input i is a weight: a parameter, or made from parameters by free ops
  // only (Transpose of a Linear weight, Slice/Concat of recurrent weights).
  std::vector<bool> input_is_weight;       // same length as inputs
  bool amp = false;

  // Input i, or nullptr if absent/omitted.
  const TensorInfo* In(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  const TensorInfo* Out(size_t i) const { return i < outputs.size() ? outputs[i] : nullptr; }
  bool Grad(size_t i) const { return i < input_requires_grad.size() && input_requires_grad[i]; }
  bool Weight(size_t i) const { return i < input_is_weight.size() && input_is_weight[i]; }
  bool AnyGrad() const;
};

// What a rule returns. Activation bytes are computed by the driver from the
// outputs; params and weight bytes default to all weight inputs.
struct OpCost {
  Count forward_flops;
  Count backward_flops;
  // Inputs holding trainable parameters; unset: every parameter input.
  // BatchNormalization lists scale and bias (running mean/var are buffers).
  std::optional<std::vector<int>> trainable_inputs;
  // false (free ops): the node does not compute with its weight inputs; its
  // float outputs are weights too when every float input is one, otherwise
  // the driver counts the weight inputs here (they meet activations here).
  bool consumes_params = true;
  std::optional<Category> category;      // set when the input decides it (Gather)
  // An embedding lookup (Gather on axis 0 of a weight table, EmbeddingBag): the elements it
  // reads from its table (input 0), lookups x dim, one pass. A table trained with sparse
  // gradients (TensorInfo::sparse_table) gets a gradient of these rows only (cost.h
  // NodeCost::sparse_grad_bytes). 0: not a lookup.
  Count lookup_elems;
  bool view = false;                     // outputs alias inputs / metadata: no bytes written
  // The outputs carry no gradient whatever the inputs (random draws, Hardmax,
  // Bernoulli): ops downstream count no backward through them.
  bool no_grad_outputs = false;
  // Non-empty: the rule cannot cost this node (Einsum of three operands,
  // RoiAlign with adaptive sampling); the driver reports it unsupported with
  // this reason, never as zero.
  std::string unsupported;
};

using RuleFn = std::function<Result<OpCost>(const OpArgs&)>;

struct CostRule {
  const char* op_type;  // default (ai.onnx) domain
  Category category;
  RuleFn fn;
  // The output's size depends on input values, not only on input shapes
  // (NonZero, NonMaxSuppression, Compress, TopK's K): when shape inference
  // leaves an output unknown, the driver says so.
  bool value_sized = false;
};

// The table of all rules (cost_rules.cc).
const std::vector<CostRule>& CostRuleTable();

// Indexes `table` by op_type; a duplicate op_type is an error naming it.
Result<std::vector<const CostRule*>> CheckRuleTable(const std::vector<CostRule>& table);

// Finds the rule for a default-domain op_type, or nullptr.
const CostRule* FindCostRule(const std::string& op_type);

// ---- Shape helpers shared by the rule families (rules_util.cc) ----
Count Numel(const TensorInfo& t);
Count Product(const std::vector<int64_t>& dims, size_t from, size_t to);
// Error "<what> has rank R, want W".
Status RankError(const std::string& what, size_t rank, const std::string& want);
// Whether input `input` of `node` is the table of an embedding lookup (whole rows read): input 0
// of an EmbeddingBag / EmbeddingBagMax, or of a default-domain Gather on axis 0 of a table of rank
// `table_rank` (a negative axis counts from it). GatherRule and the sparse-gradient pass of
// AnalyzeCost (cost.cc) both ask it.
bool IsRowLookup(const Node& node, size_t input, size_t table_rank);
// Cost of a weighted op (input 0 data, input 1 weight, optional input 2 bias
// added once per output element): forward 2·macs + bias adds; backward
// 2·macs for each of data and weight that needs a gradient, plus the bias
// adds for the bias gradient.
OpCost WeightedCost(const OpArgs& a, Count macs);

// ---- Rule factories and rules, by family ----
// rules_conv.cc
Result<OpCost> ConvRule(const OpArgs& a);
Result<OpCost> ConvTransposeRule(const OpArgs& a);
Result<OpCost> DeformConvRule(const OpArgs& a);  // opset 19
// rules_matmul.cc
Result<OpCost> GemmRule(const OpArgs& a);
Result<OpCost> MatMulRule(const OpArgs& a);
// rules_recurrent.cc
Result<OpCost> LstmRule(const OpArgs& a);
Result<OpCost> GruRule(const OpArgs& a);
Result<OpCost> RnnRule(const OpArgs& a);
// rules_pointwise.cc
// Per output element: `fwd` FLOPs forward; `bwd` FLOPs backward for each
// float input that requires a gradient.
RuleFn Elementwise(int fwd, int bwd);
// Per input element (of input 0): `fwd` forward, plus `fwd_out` per output
// element; `bwd` backward if input 0 requires a gradient.
RuleFn Reduction(int fwd, int fwd_out, int bwd);
Result<OpCost> DropoutRule(const OpArgs& a);
Result<OpCost> PReluRule(const OpArgs& a);
// Per output element `fwd` forward; no backward, and the outputs carry no
// gradient (random draws, Bernoulli, Hardmax).
RuleFn NoGradient(int fwd);
Result<OpCost> MultinomialRule(const OpArgs& a);  // draws per row by inverse CDF
// SoftmaxCrossEntropyLoss (softmax) or NegativeLogLikelihoodLoss.
RuleFn ClassLoss(bool softmax);
// rules_norm_pool.cc
// Training-mode normalisation: `fwd` per element; backward `bwd_params` per
// element for scale/bias grads plus `bwd_input` when the input needs a grad.
RuleFn Normalization(int fwd, int bwd_params, int bwd_input, std::vector<int> trainable_inputs);
// Windowed pooling: `fwd` per (output element × kernel element) plus
// `fwd_out` per output element; backward `bwd_win` per window element plus
// `bwd_out` per output element.
RuleFn WindowPool(int fwd, int fwd_out, int bwd_win, int bwd_out);
Result<OpCost> LrnRule(const OpArgs& a);
// rules_einsum.cc
Result<OpCost> EinsumRule(const OpArgs& a);
// rules_sample.cc
Result<OpCost> ResizeRule(const OpArgs& a);  // Resize and Upsample
Result<OpCost> GridSampleRule(const OpArgs& a);
Result<OpCost> RoiAlignRule(const OpArgs& a);
// rules_select.cc
Result<OpCost> TopKRule(const OpArgs& a);
Result<OpCost> NonZeroRule(const OpArgs& a);
Result<OpCost> NonMaxSuppressionRule(const OpArgs& a);
// rules_attention.cc
Result<OpCost> GeluRule(const OpArgs& a);  // approximate "none" or "tanh"
Result<OpCost> AttentionRule(const OpArgs& a);
Result<OpCost> RotaryEmbeddingRule(const OpArgs& a);
Result<OpCost> AffineGridRule(const OpArgs& a);
// rules_free.cc
RuleFn Free(bool view);
Result<OpCost> GatherRule(const OpArgs& a);
Result<OpCost> EmbeddingBagRule(const OpArgs& a);     // torch's EmbeddingBag Loop (sum, mean), read by the loader
Result<OpCost> EmbeddingBagMaxRule(const OpArgs& a);  // the same with mode max

}  // namespace gpucast
