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
  if (a.Weight(0)) {
    c.category = Category::kEmbedding;
    if (IsRowLookup(a.node, 0, a.In(0)->dims.size())) c.lookup_elems = Numel(*a.Out(0));  // whole rows
  } else {
    c.consumes_params = false;
  }
  if (a.Grad(0)) c.backward_flops = Numel(*a.Out(0));
  return c;
}

namespace {

// The shapes both EmbeddingBag rules read: table [rows, dim], flat indices [lookups], output
// [bags, dim]; the lookups x dim elements gathered, or the error naming what does not fit.
Result<Count> GatheredByBag(const OpArgs& a) {
  const TensorInfo* table = a.In(0);
  const TensorInfo* indices = a.In(1);
  const TensorInfo* out = a.Out(0);
  if (!table || !indices || !out) return Status::Error("needs a table, indices and an output");
  if (table->dims.size() != 2) return RankError("input table", table->dims.size(), "2 (rows, dim)");
  if (indices->dims.size() != 1) return RankError("input indices", indices->dims.size(), "1 (lookups)");
  if (out->dims.size() != 2 || out->dims[1] != table->dims[1])
    return Status::Error("output has shape " + DimsString(out->dims) + ", want [bags, " +
                         std::to_string(table->dims[1]) + "] (the table's dim)");
  return Count(indices->dims[0]) * table->dims[1];
}

OpCost BagCost(const OpArgs& a, Count gathered) {
  OpCost c;
  if (a.Weight(0)) {
    c.category = Category::kEmbedding;
    c.lookup_elems = gathered;
  } else {
    c.consumes_params = false;
  }
  return c;
}

}  // namespace

// EmbeddingBag (torch's nn.EmbeddingBag, mode sum or mean, as the loader reads
// its Loop export, graph/torch_loops.h): table [rows, dim], flat indices
// [lookups], trip count, per_sample_weights [lookups] (optional, mode sum);
// output [bags, dim]. Forward: each looked-up row is added into its bag,
// lookups x dim adds, plus one multiply per added element with weights and one
// divide per output element for mode "mean". Backward: each looked-up row of
// the table gets its bag's gradient added (lookups x dim, as Gather's
// scatter-add per gathered element; x2 with weights: each scaled by its
// weight); weights that need a gradient get one dot product of a row with its
// bag's gradient per lookup (2 x lookups x dim).
Result<OpCost> EmbeddingBagRule(const OpArgs& a) {
  Result<Count> gathered = GatheredByBag(a);
  if (!gathered.ok()) return gathered.status();
  const std::string mode = a.node.AttrString("mode").value_or("");
  if (mode != "sum" && mode != "mean") return Status::Error("attribute 'mode' is '" + mode + "', want sum or mean");
  const TensorInfo* weights = a.In(3);
  if (weights && mode != "sum") return Status::Error("per-sample weights with mode '" + mode + "' (torch: sum only)");
  if (weights && weights->dims != a.In(1)->dims)
    return Status::Error("input per-sample weights has shape " + DimsString(weights->dims) + ", want the indices' " +
                         DimsString(a.In(1)->dims));
  const Count per_lookup = weights ? 2 : 1;
  OpCost c = BagCost(a, *gathered);
  c.forward_flops = *gathered * per_lookup + (mode == "mean" ? Numel(*a.Out(0)) : Count(0));
  if (a.Grad(0)) c.backward_flops = *gathered * per_lookup;
  if (weights && a.Grad(3)) c.backward_flops = c.backward_flops + *gathered * 2;
  return c;
}

// EmbeddingBagMax (torch's nn.EmbeddingBag, mode max, as the loader reads its Loop export):
// table, flat indices, trip count; output [bags, dim]. Forward: lookups x dim comparisons.
// Backward: each output element's gradient goes to the one row that held its maximum (torch's
// max_indices, [bags, dim]): bags x dim.
Result<OpCost> EmbeddingBagMaxRule(const OpArgs& a) {
  Result<Count> gathered = GatheredByBag(a);
  if (!gathered.ok()) return gathered.status();
  OpCost c = BagCost(a, *gathered);
  c.forward_flops = *gathered;
  if (a.Grad(0)) c.backward_flops = Numel(*a.Out(0));
  return c;
}

}  // namespace gpucast
