// Per-operation training cost of a resolved Graph.
//
// Units: FLOPs count one multiply-add as 2 FLOPs (torch.utils.flop_counter's
// convention; torchvision's published "GFLOPS" are multiply-adds, i.e. half).
// Bytes are bytes of the element type in the graph (fp32 = 4); with AMP,
// activations of convolution/matmul/recurrent ops count as fp16 (2 bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "util/status.h"

namespace gpucast {

enum class Category {
  kConvolution,
  kMatmul,          // matmul / linear / Gemm
  kRecurrent,
  kActivation,
  kNormalization,
  kPooling,
  kElementwise,     // arithmetic, reductions, dropout
  kEmbedding,
  kDataMovement,    // free: reshape, transpose, concat, shape arithmetic...
  kUnsupported,
};
inline constexpr int kNumCategories = 10;

// Stable lowercase name used in JSON/CSV ("convolution", "matmul", ...).
const char* CategoryName(Category c);

struct NodeCost {
  std::string name;
  std::string op_type;
  Category category = Category::kUnsupported;
  std::vector<std::vector<int64_t>> input_shapes;   // empty vector: unknown/omitted
  std::vector<std::vector<int64_t>> output_shapes;
  int64_t forward_flops = 0;
  int64_t backward_flops = 0;
  int64_t params = 0;             // trained parameter elements consumed (not frozen ones)
  // Of params: those of embedding tables trained with sparse gradients (TensorInfo::sparse_table,
  // every reader of the table a lookup), and the bytes of the sparse gradient this node writes
  // into them per step: each looked-up row's fp32 values and its int64 row index (torch's COO
  // gradient of nn.Embedding(sparse=True), uncoalesced), scaled by the backward passes.
  int64_t sparse_grad_params = 0;
  int64_t sparse_grad_bytes = 0;
  int64_t activation_bytes = 0;   // bytes of outputs written in forward
  int64_t weight_bytes = 0;       // bytes of parameters (and BN buffers) consumed
  // An embedding lookup (OpCost::lookup_elems: Gather on axis 0 of a table, EmbeddingBag): the bytes
  // its forward reads from the table, the rows looked up (lookups x dim x element size), where
  // weight_bytes is the whole table (what FSDP gathers and a dense gradient writes). 0: not one.
  int64_t lookup_bytes = 0;
  int64_t input_bytes = 0;        // bytes of non-parameter inputs read in forward
  // Memory, not traffic: bytes of the tensors this node keeps from its forward
  // to its backward that no earlier node keeps already (docs/cost-rules.md,
  // "Memory kept for backward"); one pass (StepReport does not scale it); 0
  // when no input needs a gradient. Under AMP in autocast's element types.
  int64_t saved_bytes = 0;
  // The allocations saved_bytes sums, one per kept tensor or piece of kept state (a dropout's
  // mask, a normalisation's mean and rstd): PyTorch's caching allocator rounds each on its own
  // (features/memory.cc). Their sum is saved_bytes.
  std::vector<int64_t> saved_tensors;
  // A fused PyTorch op that the export wrote as several nodes (saved_rules.h
  // FindFusedExports: LayerNorm before opset 17, GELU, SiLU, GroupNorm): each
  // of its nodes has fused_op = 1 + the index of its first node (0: not part
  // of one), and its first node fused_io_bytes, what the fused op reads and
  // writes in forward (its input and its result). The step-time estimate
  // counts such an op as one kernel moving those bytes (features.cc
  // EstimateStep), as PyTorch runs it, not as each node's launch and traffic.
  int64_t fused_op = 0;
  int64_t fused_io_bytes = 0;
  // Computed from a data-dependent selection costed at its upper bound
  // (graph/graph.h TensorInfo::selection_bound: a boolean mask's NonZero read
  // as selecting every element), directly or through nodes that are: its
  // FLOPs and bytes scale with the fraction selected (SelectionShare,
  // job_cost.h). A scatter into an unselected tensor (ScatterND,
  // ScatterElements, Scatter: `x[mask] = y`) is not marked, nor is its output:
  // it writes a tensor as large as its data input whatever is selected.
  bool selection_bound = false;
};

struct Unsupported {
  std::string op_type;  // "domain::op" for custom domains
  int64_t count = 0;
  std::string reason;   // "no cost rule", "output shape unknown", ...
};

// Sums over nodes, except params and weight_bytes, which count each
// parameter tensor once (the model's size) even when several nodes use it.
struct CostTotals {
  int64_t forward_flops = 0;
  int64_t backward_flops = 0;
  int64_t params = 0;         // the model's parameters, as torch counts them (frozen ones too)
  int64_t frozen_params = 0;  // of params: frozen (TensorInfo::is_frozen), no gradient or optimizer state
  int64_t sparse_grad_params = 0;  // of params: tables with sparse gradients (NodeCost::sparse_grad_params)
  int64_t sparse_grad_bytes = 0;   // sum of the nodes' sparse_grad_bytes: the step's sparse gradients
  int64_t activation_bytes = 0;
  int64_t weight_bytes = 0;
  int64_t flops_by_category[kNumCategories] = {};  // forward + backward
  int64_t nodes_by_category[kNumCategories] = {};
  int64_t num_nodes = 0;
  int64_t input_bytes_per_sample = 0;  // data inputs, bytes per batch element
  // Memory of one forward+backward pass (one network, not multiplied by passes):
  int64_t saved_bytes = 0;           // sum of the nodes' saved_bytes
  int64_t largest_tensor_bytes = 0;  // largest output of a node on the gradient path
  int64_t data_input_bytes = 0;      // the data inputs of one batch (resident during the step)
  int64_t autocast_weight_bytes = 0; // AMP: fp16 copies of the weights of conv/matmul/recurrent
                                     // ops, which autocast caches for the step (0 without AMP)
  int64_t largest_output_elems = 0;  // elements of the largest float graph output (the loss's input)
};

struct CostReport {
  std::string path;
  int64_t batch = 0;
  bool amp = false;
  std::vector<NodeCost> nodes;          // graph order
  CostTotals totals;
  std::vector<Unsupported> unsupported; // sorted by op_type
  // The first node (graph order) that could not be costed and why:
  // "node 'n' (Op): reason[: the loader's explanation]"; empty when every
  // node was costed (unsupported is empty).
  std::string first_uncosted;
  // The loader's warnings about the graph (Graph::warnings: eval-mode export,
  // ops without a schema, ...), for the front ends to show.
  std::vector<std::string> warnings;

  // Executions per training step (StepReport, src/cost/job_cost.h); AnalyzeCost
  // returns one forward+backward pass updated once: 1, 1, 1. Node FLOPs and
  // activation/input/weight bytes, and the FLOP and activation totals, are
  // already multiplied by the passes; node counts, per-node `params` and the
  // totals' `params` and `weight_bytes` describe the network, once.
  double forward_passes = 1;   // forward runs of every node per step (fractions: averages)
  double backward_passes = 1;  // backward runs per step
  double updates = 1;          // optimizer steps on the network's parameters per step

  // Nodes that could not be costed (the sum of unsupported[].count).
  int64_t UncostedNodes() const;
  // Nodes whose counts are a selection's upper bound (NodeCost::selection_bound).
  int64_t SelectionBoundNodes() const;
};

struct CostOptions {
  bool amp = false;
};

// Costs every node. Errors (overflow of a count, malformed attribute) name
// the file, the node and the reason; ops without a rule are not errors but
// are listed in `unsupported`.
Result<CostReport> AnalyzeCost(const Graph& graph, const CostOptions& opts);

// OK when every node of `r` was costed. Otherwise the error a prediction
// must refuse with (FILE is r.path):
//   "FILE: cannot predict from a partial cost report: 989 of 1625 nodes could
//    not be costed; first: node '/Add' (Add): input or output shape unknown: ..."
Status RequireCompleteCost(const CostReport& r);

}  // namespace gpucast
