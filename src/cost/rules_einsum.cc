// Einsum: the contraction's exact iteration space. For one or two operands
// with index extents e (the distinct letters, and the broadcast "..." dims):
//   two operands: forward 2·∏e (one multiply-add per point of the iteration
//     space, as MatMul); backward 2·∏e per operand needing a gradient (each
//     operand's gradient is an Einsum of the same space).
//   one operand: a sum over the indices missing from the output costs ∏e
//     (one add per point, as ReduceSum), backward ∏e; a pure permutation or
//     diagonal is a copy (data_movement, no FLOPs).
//   three or more: unsupported (the contraction order decides the cost).
#include "cost/rules.h"
#include "graph/einsum.h"

namespace gpucast {
Result<OpCost> EinsumRule(const OpArgs& a) {
  std::optional<std::string> eq = a.node.AttrString("equation");
  if (!eq) return Status::Error("attribute 'equation' missing");
  std::vector<std::vector<int64_t>> dims;
  for (const TensorInfo* t : a.inputs)
    if (t) dims.push_back(t->dims);
  if (dims.empty() || !a.Out(0)) return Status::Error("needs at least one input and an output");
  if (dims.size() > 2) {
    OpCost c;
    c.unsupported = "einsum of " + std::to_string(dims.size()) +
                    " operands is not costed: its cost depends on the contraction order";
    return c;
  }
  ASSIGN_OR_RETURN(EinsumSpace s, ResolveEinsum(*eq, dims));
  if (s.output_dims != a.Out(0)->dims)
    return Status::Error("output has shape " + DimsString(a.Out(0)->dims) + ", equation '" + *eq + "' gives " +
                         DimsString(s.output_dims));
  const Count space = Product(s.extents, 0, s.extents.size());
  OpCost c;
  if (dims.size() == 2) {
    c.forward_flops = Count(2) * space;
    if (a.Grad(0)) c.backward_flops += Count(2) * space;
    if (a.Grad(1)) c.backward_flops += Count(2) * space;
    return c;
  }
  if (!s.sums) {  // a permutation or diagonal: a copy, as Transpose
    c.category = Category::kDataMovement;
    c.trainable_inputs = std::vector<int>{};
    c.consumes_params = false;
    return c;
  }
  c.category = Category::kElementwise;
  c.forward_flops = space;
  if (a.Grad(0)) c.backward_flops = space;
  return c;
}

}  // namespace gpucast
