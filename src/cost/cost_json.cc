#include "cost/cost_json.h"

namespace gpucast {

nlohmann::json CostReportToJson(const CostReport& r) {
  using nlohmann::json;
  json nodes = json::array();
  for (const NodeCost& n : r.nodes) {
    nodes.push_back({{"name", n.name},
                     {"op_type", n.op_type},
                     {"category", CategoryName(n.category)},
                     {"input_shapes", n.input_shapes},
                     {"output_shapes", n.output_shapes},
                     {"forward_flops", n.forward_flops},
                     {"backward_flops", n.backward_flops},
                     {"params", n.params},
                     {"activation_bytes", n.activation_bytes},
                     {"weight_bytes", n.weight_bytes},
                     {"lookup_bytes", n.lookup_bytes},
                     {"saved_bytes", n.saved_bytes},
                     {"selection_bound", n.selection_bound}});
  }
  const CostTotals& t = r.totals;
  json flops_by = json::object(), nodes_by = json::object();
  for (int i = 0; i < kNumCategories; ++i) {
    const char* name = CategoryName(static_cast<Category>(i));
    flops_by[name] = t.flops_by_category[i];
    nodes_by[name] = t.nodes_by_category[i];
  }
  json totals = {{"forward_flops", t.forward_flops},
                 {"backward_flops", t.backward_flops},
                 {"params", t.params},
                 {"frozen_params", t.frozen_params},
                 {"sparse_grad_params", t.sparse_grad_params},
                 {"sparse_grad_bytes", t.sparse_grad_bytes},
                 {"activation_bytes", t.activation_bytes},
                 {"weight_bytes", t.weight_bytes},
                 {"flops_by_category", flops_by},
                 {"nodes_by_category", nodes_by},
                 {"num_nodes", t.num_nodes},
                 {"input_bytes_per_sample", t.input_bytes_per_sample},
                 {"saved_bytes", t.saved_bytes},
                 {"largest_tensor_bytes", t.largest_tensor_bytes},
                 {"data_input_bytes", t.data_input_bytes},
                 {"autocast_weight_bytes", t.autocast_weight_bytes}};
  json unsupported = json::array();
  for (const Unsupported& u : r.unsupported)
    unsupported.push_back({{"op_type", u.op_type}, {"count", u.count}, {"reason", u.reason}});
  // "complete": false marks a partial report (totals leave the uncosted nodes
  // out); gpucast predict and the service refuse such a graph.
  return {{"nodes", nodes},
          {"totals", totals},
          {"unsupported", unsupported},
          {"complete", r.unsupported.empty()},
          {"uncosted_nodes", r.UncostedNodes()},
          {"selection_bound_nodes", r.SelectionBoundNodes()},
          {"first_uncosted", r.first_uncosted}};
}

}  // namespace gpucast
