// Shape helpers shared by the rule families.
#include "cost/rules.h"

namespace gpucast {

bool OpArgs::AnyGrad() const {
  for (bool g : input_requires_grad)
    if (g) return true;
  return false;
}

Count Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  Count c = 1;
  for (size_t i = from; i < to && i < dims.size(); ++i) c *= dims[i];
  return c;
}

Count Numel(const TensorInfo& t) { return Product(t.dims, 0, t.dims.size()); }

Status RankError(const std::string& what, size_t rank, const std::string& want) {
  return Status::Error(what + " has rank " + std::to_string(rank) + ", want " + want);
}

bool IsRowLookup(const Node& node, size_t input, size_t table_rank) {
  if (input != 0) return false;
  if (node.op_type == "EmbeddingBag" || node.op_type == "EmbeddingBagMax") return true;
  if (node.op_type != "Gather" || !IsDefaultDomain(node.domain)) return false;
  int64_t axis = node.AttrInt("axis").value_or(0);
  if (axis < 0) axis += static_cast<int64_t>(table_rank);
  return axis == 0;
}

OpCost WeightedCost(const OpArgs& a, Count macs) {
  Count bias_adds = a.In(2) ? Numel(*a.Out(0)) : Count(0);
  OpCost c;
  c.forward_flops = Count(2) * macs + bias_adds;
  if (a.Grad(0)) c.backward_flops += Count(2) * macs;
  if (a.Grad(1)) c.backward_flops += Count(2) * macs;
  if (a.Grad(2)) c.backward_flops += bias_adds;
  return c;
}

}  // namespace gpucast
