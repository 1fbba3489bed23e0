// The cost driver: propagates "requires grad" from the parameters, looks up
// each node's rule, checks shapes, and sums the totals with overflow checks.
#include "cost/cost.h"

#include <map>
#include <set>
#include <tuple>

#include "cost/rules.h"

namespace gpucast {

const char* CategoryName(Category c) {
  switch (c) {
    case Category::kConvolution: return "convolution";
    case Category::kMatmul: return "matmul";
    case Category::kRecurrent: return "recurrent";
    case Category::kActivation: return "activation";
    case Category::kNormalization: return "normalization";
    case Category::kPooling: return "pooling";
    case Category::kElementwise: return "elementwise";
    case Category::kEmbedding: return "embedding";
    case Category::kDataMovement: return "data_movement";
    case Category::kUnsupported: return "unsupported";
  }
  return "unsupported";
}

namespace {

// Element types that carry gradients: FLOAT, FLOAT16, DOUBLE, BFLOAT16, and
// unknown (0), treated as float rather than cutting a gradient path.
bool IsFloat(ElemType t) { return t == 0 || t == 1 || t == 10 || t == 11 || t == 16; }

bool RunsInHalf(Category c) {
  return c == Category::kConvolution || c == Category::kMatmul || c == Category::kRecurrent;
}

// Bytes of a tensor; under AMP, 4-byte floats of conv/matmul/recurrent ops count 2.
Count Bytes(const TensorInfo& t, bool half) {
  int64_t b = ElemTypeBytes(t.elem_type);
  if (half && b == 4 && IsFloat(t.elem_type)) b = 2;
  return Numel(t) * b;
}

struct Totals {
  Count fwd, bwd, act, cat[kNumCategories];
};

}  // namespace

Result<CostReport> AnalyzeCost(const Graph& graph, const CostOptions& opts) {
  CostReport rep;
  rep.path = graph.path;
  rep.batch = graph.batch;
  rep.amp = opts.amp;
  const std::string file = graph.path.empty() ? "<graph>" : graph.path;
  const std::string at_batch = " at batch " + std::to_string(graph.batch);

  std::set<std::string> grad;  // tensors that require a gradient
  for (const auto& [name, t] : graph.tensors)
    if (t.is_param && IsFloat(t.elem_type)) grad.insert(name);

  std::map<std::pair<std::string, std::string>, int64_t> unsupported;
  std::map<std::string, int64_t> param_tensors, weight_tensors;  // deduplicated totals
  // Parameter aliases (Identity/Cast of a shared weight) -> the tensor they alias.
  std::map<std::string, std::string> alias;
  auto root = [&alias](const std::string& name) {
    auto it = alias.find(name);
    return it == alias.end() ? name : it->second;
  };
  Totals tot;

  for (const Node& node : graph.nodes) {
    const std::string where = file + ": node '" + node.name + "' (" + node.op_type + ")";
    OpArgs args{node, {}, {}, {}, opts.amp};
    bool shapes_known = true;
    for (const std::string& name : node.inputs) {
      const TensorInfo* t = nullptr;
      if (!name.empty()) {
        auto it = graph.tensors.find(name);
        if (it == graph.tensors.end())
          return Status::Error(where + ": input '" + name + "' is not a known tensor");
        t = &it->second;
        shapes_known = shapes_known && t->shape_known;
      }
      args.inputs.push_back(t);
      args.input_requires_grad.push_back(t && grad.count(name) > 0);
    }
    for (const std::string& name : node.outputs) {
      auto it = graph.tensors.find(name);
      if (it == graph.tensors.end())
        return Status::Error(where + ": output '" + name + "' is not a known tensor");
      args.outputs.push_back(&it->second);
      shapes_known = shapes_known && it->second.shape_known;
    }
    // Gradients flow to every float output of a node with a grad-carrying input.
    if (args.AnyGrad())
      for (const TensorInfo* t : args.outputs)
        if (IsFloat(t->elem_type)) grad.insert(t->name);

    NodeCost nc;
    nc.name = node.name;
    nc.op_type = node.op_type;
    for (const TensorInfo* t : args.inputs)
      nc.input_shapes.push_back(t && t->shape_known ? t->dims : std::vector<int64_t>{});
    for (const TensorInfo* t : args.outputs)
      nc.output_shapes.push_back(t->shape_known ? t->dims : std::vector<int64_t>{});

    const CostRule* rule = nullptr;
    std::string reason;
    std::string op_key = node.op_type;
    if (!node.domain.empty() && node.domain != "ai.onnx") {
      op_key = node.domain + "::" + node.op_type;
      reason = "custom domain '" + node.domain + "' has no cost rules";
    } else if (!(rule = FindCostRule(node.op_type))) {
      reason = "no cost rule";
    } else if (!shapes_known) {
      reason = "input or output shape unknown";
    }
    if (!reason.empty()) {
      ++unsupported[{op_key, reason}];
      nc.category = Category::kUnsupported;
      ++rep.totals.nodes_by_category[static_cast<int>(Category::kUnsupported)];
      rep.nodes.push_back(std::move(nc));
      continue;
    }

    Result<OpCost> cost = rule->fn(args);
    if (!cost.ok()) return cost.status().Prefixed(where);
    nc.category = cost->category.value_or(rule->category);
    if (!cost->consumes_params && args.In(0) && args.In(0)->is_param)
      for (const TensorInfo* t : args.outputs)
        if (t->is_param) alias[t->name] = root(args.In(0)->name);
    if (!cost->forward_flops.ok() || !cost->backward_flops.ok())
      return Status::Error(where + ": FLOP count overflows int64" + at_batch);

    const bool half = opts.amp && RunsInHalf(nc.category);
    Count act, in_bytes, params, wbytes;
    if (!cost->view)
      for (const TensorInfo* t : args.outputs) act += Bytes(*t, half);
    for (size_t i = 0; i < args.inputs.size(); ++i) {
      const TensorInfo* t = args.inputs[i];
      if (!t) continue;
      if (!t->is_param) {
        in_bytes += Bytes(*t, half);
        continue;
      }
      if (!cost->consumes_params) continue;
      bool trainable = IsFloat(t->elem_type);
      if (cost->trainable_inputs) {
        trainable = false;
        for (int k : *cost->trainable_inputs) trainable = trainable || static_cast<size_t>(k) == i;
      }
      Count b = Bytes(*t, false);
      wbytes += b;
      if (b.ok()) weight_tensors[root(t->name)] = b.value();
      if (trainable) {
        params += Numel(*t);
        if (Numel(*t).ok()) param_tensors[root(t->name)] = Numel(*t).value();
      }
    }
    if (!params.ok()) return Status::Error(where + ": parameter count overflows int64");
    if (!act.ok() || !in_bytes.ok() || !wbytes.ok())
      return Status::Error(where + ": byte count overflows int64" + at_batch);

    nc.forward_flops = cost->forward_flops.value();
    nc.backward_flops = cost->backward_flops.value();
    nc.params = params.value();
    nc.activation_bytes = act.value();
    nc.weight_bytes = wbytes.value();
    nc.input_bytes = in_bytes.value();

    const int ci = static_cast<int>(nc.category);
    tot.fwd += nc.forward_flops;
    tot.bwd += nc.backward_flops;
    tot.cat[ci] += Count(nc.forward_flops) + nc.backward_flops;
    tot.act += nc.activation_bytes;
    ++rep.totals.nodes_by_category[ci];
    rep.nodes.push_back(std::move(nc));
  }

  Count all = tot.fwd + tot.bwd;
  for (const Count& c : tot.cat) all += c;
  if (!all.ok()) return Status::Error(file + ": total FLOP count overflows int64" + at_batch);
  if (!tot.act.ok()) return Status::Error(file + ": total activation bytes overflow int64" + at_batch);
  Count params, wbytes;
  for (const auto& [name, n] : param_tensors) params += n;
  for (const auto& [name, b] : weight_tensors) wbytes += b;
  if (!params.ok() || !wbytes.ok()) return Status::Error(file + ": parameter count overflows int64");

  CostTotals& T = rep.totals;
  T.forward_flops = tot.fwd.value();
  T.backward_flops = tot.bwd.value();
  T.activation_bytes = tot.act.value();
  T.params = params.value();
  T.weight_bytes = wbytes.value();
  for (int i = 0; i < kNumCategories; ++i) T.flops_by_category[i] = tot.cat[i].value();
  T.num_nodes = static_cast<int64_t>(graph.nodes.size());

  // Bytes of one sample: each data input's bytes divided by the batch when
  // the batch divides its element count (inputs without a batch dim count whole).
  Count per_sample;
  for (const std::string& name : graph.data_inputs) {
    auto it = graph.tensors.find(name);
    if (it == graph.tensors.end() || !it->second.shape_known) continue;
    Count n = Numel(it->second);
    if (!n.ok()) return Status::Error(file + ": data input '" + name + "' size overflows int64");
    int64_t elems = n.value();
    if (graph.batch > 0 && elems % graph.batch == 0) elems /= graph.batch;
    per_sample += Count(elems) * ElemTypeBytes(it->second.elem_type);
  }
  if (!per_sample.ok()) return Status::Error(file + ": input size overflows int64");
  T.input_bytes_per_sample = per_sample.value();

  for (const auto& [key, count] : unsupported) rep.unsupported.push_back({key.first, count, key.second});
  return rep;
}

}  // namespace gpucast
