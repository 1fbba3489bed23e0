// Free ops: no arithmetic. A view (reshape, squeeze, identity, shape
// metadata) writes no bytes; a copy (transpose, concat, slice...) writes its
// outputs. Neither computes with parameters: a Transpose of a weight, or an
// Identity of a shared weight, is itself a weight, counted at the node that
// computes with it (the driver, cost.cc).
#include "cost/rules.h"

namespace gpucast {

RuleFn Free(bool view) {
  return [view](const OpArgs&) -> Result<OpCost> {
    OpCost c;
    c.view = view;
    c.trainable_inputs = std::vector<int>{};
    c.consumes_params = false;
    return c;
  };
}

// Gather of a parameter table (or a weight made from one) is an embedding lookup: no forward arithmetic;
// backward scatter-adds one gradient element per output element. Gather of
// an activation is a copy, with the same scatter-add if it needs a gradient.
Result<OpCost> GatherRule(const OpArgs& a) {
  if (!a.In(0) || !a.Out(0)) return Status::Error("needs data and an output");
  OpCost c;
  if (a.Weight(0)) c.category = Category::kEmbedding;
  else c.consumes_params = false;
  if (a.Grad(0)) c.backward_flops = Numel(*a.Out(0));
  return c;
}

}  // namespace gpucast
