// The cost driver: propagates "requires grad" from the parameters, looks up
// each node's rule, checks shapes, and sums the totals with overflow checks.
#include "cost/cost.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cost/rules.h"
#include "cost/saved_rules.h"

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

constexpr const char* kShapeUnknown = "input or output shape unknown";
constexpr const char* kValueDependentSize =
    "output size depends on input values that shape inference could not resolve";

// Why a node could not be costed, for CostReport::first_uncosted: the reason,
// which tensors have no shape, and the loader's shape-inference warning for
// this node when there is one (the usual root cause).
std::string UncostedWhy(const Graph& graph, const Node& node, const OpArgs& args, const std::string& reason) {
  std::string why = reason;
  if (reason != kShapeUnknown && reason != kValueDependentSize) return why;
  auto shape = [](const TensorInfo& t) { return t.shape_known ? DimsString(t.dims) : std::string("?"); };
  std::string inputs, unknown;
  for (const TensorInfo* t : args.inputs) {
    if (!t) continue;
    inputs += (inputs.empty() ? "" : " ") + shape(*t);
    if (!t->shape_known) unknown += std::string(unknown.empty() ? "" : ", ") + "input '" + t->name + "'";
  }
  for (const TensorInfo* t : args.outputs)
    if (!t->shape_known) unknown += std::string(unknown.empty() ? "" : ", ") + "output '" + t->name + "'";
  why += " (input shapes " + inputs + "; unknown: " + unknown + ")";
  const std::string ref = "node '" + node.name + "' (";
  for (const std::string& w : graph.warnings) {
    size_t at = w.find(ref);
    if (at == std::string::npos) continue;
    why += ": " + w.substr(at + ref.size() + node.op_type.size() + 3);  // after "(Op): "
    return why;
  }
  return why;
}

}  // namespace

int64_t CostReport::UncostedNodes() const {
  int64_t n = 0;
  for (const Unsupported& u : unsupported) n += u.count;
  return n;
}

int64_t CostReport::SelectionBoundNodes() const {
  return std::count_if(nodes.begin(), nodes.end(), [](const NodeCost& n) { return n.selection_bound; });
}

Status RequireCompleteCost(const CostReport& r) {
  if (r.unsupported.empty()) return Status::Ok();
  const std::string file = r.path.empty() ? "<graph>" : r.path;
  return Status::Error(file + ": cannot predict from a partial cost report: " +
                       std::to_string(r.UncostedNodes()) + " of " + std::to_string(r.totals.num_nodes) +
                       " nodes could not be costed; first: " + r.first_uncosted);
}

Result<CostReport> AnalyzeCost(const Graph& graph, const CostOptions& opts) {
  CostReport rep;
  rep.path = graph.path;
  rep.batch = graph.batch;
  rep.warnings = graph.warnings;
  rep.amp = opts.amp;
  const std::string file = graph.path.empty() ? "<graph>" : graph.path;
  const std::string at_batch = " at batch " + std::to_string(graph.batch);

  std::set<std::string> grad;  // tensors that require a gradient
  for (const auto& [name, t] : graph.tensors)
    if (t.is_param && !t.is_buffer && !t.is_frozen && IsFloat(t.elem_type)) grad.insert(name);

  // Weights: parameters, and values computed from parameters only by free ops
  // (Transpose of a Linear weight, Slice/Concat gate reordering of recurrent
  // weights, Identity/Cast of a tied weight, Unsqueeze of a position table...).
  // Each weight is a node of a DAG: a parameter is a root (`root_of`: itself,
  // or the original of a tied copy), a made weight lists the weights it was
  // made from (`parts`). Totals count every root once, at the first node that
  // computes with it or mixes it with activations; a walk resolves a weight's
  // roots and never enters a weight twice for one purpose (`Walk`), so a chain
  // of n free ops over weights costs O(n), not the O(n^2) of copying each
  // weight's set of roots into the next.
  std::unordered_map<std::string, std::string> root_of;
  std::unordered_map<std::string, std::vector<std::string>> parts;
  {
    std::unordered_set<std::string> produced;
    for (const Node& node : graph.nodes)
      for (const std::string& o : node.outputs) produced.insert(o);
    // A copy the exporter wrote of a tied matrix is its original; an Identity
    // output that is a parameter of its own (merged by value) is its own root
    // (TensorInfo::tied_to, own_param; graph/param_ties.h).
    for (const auto& [name, t] : graph.tensors) {
      if (!t.is_param) continue;
      if (t.own_param) root_of[name] = name;
      else if (!produced.count(name)) root_of[name] = !t.tied_to.empty() && graph.tensors.count(t.tied_to) ? t.tied_to : name;
    }
  }
  // Weights made of the model's buffers only (TensorInfo::is_buffer, and free ops over them):
  // resident, not parameters. Weights made of buffers and frozen parameters only (is_frozen):
  // never trained (no gradient, no optimizer state).
  std::unordered_set<std::string> buffer_only, untrained;
  for (const auto& [name, t] : graph.tensors) {
    if (t.is_buffer) buffer_only.insert(name);
    if (t.is_buffer || t.is_frozen) untrained.insert(name);
  }
  // Embedding tables trained with sparse gradients (TensorInfo::sparse_table: each name's table, the
  // loader's, copies included), and the tables some node reads other than as a lookup's table (a
  // tied output projection, a Transpose): those get a dense gradient.
  std::unordered_map<std::string, std::string> sparse_table;
  std::unordered_set<std::string> dense_read;
  for (const auto& [name, t] : graph.tensors)
    if (!t.sparse_table.empty()) sparse_table[name] = t.sparse_table;
  if (!sparse_table.empty()) {
    for (const auto& [name, t] : graph.tensors)  // a copy the exporter wrote of a tied table
      if (!t.tied_to.empty() && sparse_table.count(t.tied_to)) dense_read.insert(sparse_table[t.tied_to]);
    for (const Node& node : graph.nodes)
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        auto s = sparse_table.find(node.inputs[i]);
        if (s == sparse_table.end()) continue;
        const bool copy = (node.op_type == "Identity" || node.op_type == "Cast") && !node.outputs.empty() &&
                          sparse_table.count(node.outputs[0]);
        if (!copy && !IsRowLookup(node, i, graph.tensors.at(node.inputs[i]).dims.size()))
          dense_read.insert(s->second);
      }
  }
  auto is_weight = [&root_of, &parts](const TensorInfo* t) -> bool {
    if (!t) return false;
    if (root_of.count(t->name) || parts.count(t->name)) return true;
    if (t->is_param) root_of[t->name] = t->name;  // a param of unknown origin
    return t->is_param;
  };
  // Calls fn(root) for each root of weight `w` not reached before through `seen`.
  auto walk = [&root_of, &parts](const std::string& w, std::unordered_set<std::string>* seen, auto&& fn) -> Status {
    std::vector<const std::string*> stack = {&w};
    while (!stack.empty()) {
      const std::string* n = stack.back();
      stack.pop_back();
      if (!seen->insert(*n).second) continue;
      if (auto r = root_of.find(*n); r != root_of.end()) {
        RETURN_IF_ERROR(fn(r->second));
        continue;
      }
      if (auto p = parts.find(*n); p != parts.end())
        for (const std::string& q : p->second) stack.push_back(&q);
    }
    return Status::Ok();
  };
  std::unordered_set<std::string> seen_weight, seen_param, seen_autocast;  // one per purpose

  // Memory kept for backward (saved_rules.h): the autocast element size of the
  // float tensors made so far (AMP), the tensors already kept (data inputs are
  // resident for the whole step: counted in data_input_bytes), the weights
  // autocast keeps an fp16 copy of.
  std::map<std::string, int64_t> amp_size;
  std::set<std::string> kept(graph.data_inputs.begin(), graph.data_inputs.end());
  // A view's output is its input's storage (Reshape, Flatten, Squeeze, Unsqueeze, Identity and a
  // ratio-0 Dropout, which returns the input itself): a tensor kept under two names is one
  // allocation. Keyed by the storage's first name.
  std::map<std::string, std::string> storage_of;
  auto storage = [&storage_of](const std::string& name) -> const std::string& {
    auto it = storage_of.find(name);
    return it == storage_of.end() ? name : it->second;
  };
  std::set<std::string> autocast_roots;
  const std::map<size_t, FusedMemory> fused = FindFusedExports(graph);
  struct FusedIo {
    size_t node;  // in rep.nodes
    const TensorInfo *x, *y;
    std::string where;
  };
  std::vector<FusedIo> fused_io;
  Count saved_total;
  int64_t largest = 0;
  auto elem_bytes = [&](const TensorInfo& t) -> int64_t {
    if (auto it = amp_size.find(t.name); it != amp_size.end()) return it->second;
    return ElemTypeBytes(t.elem_type);
  };

  std::map<std::pair<std::string, std::string>, int64_t> unsupported;
  // Deduplicated totals, by root (sparse_tensors: by table).
  std::map<std::string, int64_t> param_tensors, frozen_tensors, weight_tensors, sparse_tensors;
  Totals tot;
  // Tensors sized by a data-dependent selection's upper bound, and what is computed from them
  // (NodeCost::selection_bound).
  std::unordered_set<std::string> bounded;
  for (const auto& [name, t] : graph.tensors)
    if (t.selection_bound) bounded.insert(name);

  for (size_t node_index = 0; node_index < graph.nodes.size(); ++node_index) {
    const Node& node = graph.nodes[node_index];
    const std::string where = file + ": node '" + node.name + "' (" + node.op_type + ")";
    OpArgs args{node, {}, {}, {}, {}, opts.amp};
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
      args.input_is_weight.push_back(is_weight(t));
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
    if (!bounded.empty()) {
      // A scatter writes the selected rows into its data input (x[mask] = y): its output, and
      // most of its traffic, is as large as that input, selected or not.
      const bool scatter = node.op_type == "ScatterND" || node.op_type == "ScatterElements" ||
                           node.op_type == "Scatter";
      const auto is_bounded = [&bounded](const std::string& n) { return bounded.count(n) > 0; };
      nc.selection_bound = scatter ? !node.inputs.empty() && is_bounded(node.inputs[0])
                                   : std::any_of(node.inputs.begin(), node.inputs.end(), is_bounded);
      if (nc.selection_bound) bounded.insert(node.outputs.begin(), node.outputs.end());
    }
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
    } else if (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan") {
      reason = "control flow: the subgraphs of If, Loop and Scan are not costed";
    } else if (!(rule = FindCostRule(node.op_type))) {
      reason = "no cost rule";
    } else if (!shapes_known) {
      reason = rule->value_sized ? kValueDependentSize : kShapeUnknown;
    }
    auto report_uncosted = [&](const std::string& why) {
      ++unsupported[{op_key, why}];
      if (rep.first_uncosted.empty())
        rep.first_uncosted = "node '" + node.name + "' (" + op_key + "): " + UncostedWhy(graph, node, args, why);
      nc.category = Category::kUnsupported;
      ++rep.totals.nodes_by_category[static_cast<int>(Category::kUnsupported)];
      rep.nodes.push_back(std::move(nc));
    };
    if (!reason.empty()) {
      report_uncosted(reason);
      continue;
    }

    Result<OpCost> cost = rule->fn(args);
    if (!cost.ok()) return cost.status().Prefixed(where);
    if (!cost->unsupported.empty()) {
      report_uncosted(cost->unsupported);
      continue;
    }
    if (cost->no_grad_outputs)
      for (const TensorInfo* t : args.outputs) grad.erase(t->name);
    nc.category = cost->category.value_or(rule->category);
    if (!cost->forward_flops.ok() || !cost->backward_flops.ok())
      return Status::Error(where + ": FLOP count overflows int64" + at_batch);
    if (!cost->lookup_elems.ok()) return Status::Error(where + ": byte count overflows int64" + at_batch);

    // A free op whose float inputs are all weights makes a weight (it is not
    // where the parameters are used); one that mixes weights with activations
    // (Concat of a learned token with the data) consumes them.
    bool consumes = cost->consumes_params;
    if (!consumes) {
      std::vector<std::string> made_of;  // the weights it is made of (not their roots)
      bool all_weights = true, any_weight = false;
      for (size_t i = 0; i < args.inputs.size(); ++i) {
        const TensorInfo* t = args.inputs[i];
        if (!t || !IsFloat(t->elem_type)) continue;
        if (is_weight(t)) {
          any_weight = true;
          if (std::find(made_of.begin(), made_of.end(), t->name) == made_of.end()) made_of.push_back(t->name);
        } else {
          all_weights = false;
        }
      }
      if (any_weight && all_weights) {
        // A weight's transpose is a view in PyTorch (nn.Linear's weight.t(), which cuBLAS reads
        // transposed): no kernel, no traffic. torch.onnx writes it as a Transpose node only when
        // constant folding is off (its default folds it into a transposed initializer).
        if (node.op_type == "Transpose") cost->view = true;
        auto all_in = [&made_of](const std::unordered_set<std::string>& set) {
          return std::all_of(made_of.begin(), made_of.end(), [&set](const std::string& w) { return set.count(w) > 0; });
        };
        const bool of_buffers = all_in(buffer_only), of_untrained = all_in(untrained);
        for (const TensorInfo* t : args.outputs)
          if (IsFloat(t->elem_type) && !t->own_param && !root_of.count(t->name)) {
            parts[t->name] = made_of;
            if (of_buffers) buffer_only.insert(t->name);
            if (of_untrained) untrained.insert(t->name);
          }
      } else if (any_weight) {
        consumes = true;
      }
    }

    // Under AMP, the element type autocast gives each float output (saved_rules.h: fp16 for
    // conv/matmul/recurrent ops, fp32 for its fp32 list, else the widest float input's).
    const SavedRule* saved = FindSavedRule(node.op_type);  // every costed op has a row (cost_rules_test)
    if (!saved) return Status::Error(where + ": no memory rule (saved_rules.cc)");
    if (opts.amp) {
      int64_t widest = 0;  // of the non-weight float inputs
      for (const TensorInfo* t : args.inputs)
        if (t && IsFloat(t->elem_type) && !is_weight(t)) widest = std::max(widest, elem_bytes(*t));
      for (const TensorInfo* t : args.outputs) {
        if (!IsFloat(t->elem_type) || ElemTypeBytes(t->elem_type) != 4) continue;
        amp_size[t->name] = saved->amp == AmpType::kHalf    ? 2
                            : saved->amp == AmpType::kFloat ? 4
                                                            : (widest > 0 ? widest : 4);
      }
    }
    const bool half = opts.amp && RunsInHalf(nc.category);
    // Traffic of a non-weight tensor: a conv/matmul/recurrent op under AMP reads and writes fp16;
    // any other op its tensors' autocast element types (an fp16 activation is read as fp16 by the
    // ReLU or BatchNorm after a conv); without AMP the graph's types.
    auto traffic = [&](const TensorInfo& t) -> Count { return half ? Bytes(t, true) : Numel(t) * elem_bytes(t); };
    const bool any_float_output = std::any_of(args.outputs.begin(), args.outputs.end(),
                                              [](const TensorInfo* t) { return IsFloat(t->elem_type); });
    Count act, in_bytes, params, wbytes, lookup_bytes, sparse_params, sparse_bytes;
    if (!cost->view)
      for (const TensorInfo* t : args.outputs) act += traffic(*t);
    for (size_t i = 0; i < args.inputs.size(); ++i) {
      const TensorInfo* t = args.inputs[i];
      if (!t) continue;
      if (!is_weight(t)) {
        in_bytes += traffic(*t);
        continue;
      }
      if (!consumes) continue;
      // A parameter here, unless the model's buffer, an input the rule says is not trainable
      // (BatchNorm's running statistics), or read by a node with no float output (a comparison:
      // nanoGPT's causal mask == 0), which passes no gradient back. Trained unless frozen.
      const bool listed = !(cost->trainable_inputs && cost->consumes_params) ||
                          std::find(cost->trainable_inputs->begin(), cost->trainable_inputs->end(),
                                    static_cast<int>(i)) != cost->trainable_inputs->end();
      const bool parameter = IsFloat(t->elem_type) && any_float_output && listed && !buffer_only.count(t->name);
      const bool trainable = parameter && !untrained.count(t->name);
      wbytes += Bytes(*t, false);
      const Status overflow = Status::Error(where + ": parameter count overflows int64");
      RETURN_IF_ERROR(walk(t->name, &seen_weight, [&](const std::string& root) -> Status {
        Count rb = Bytes(graph.tensors.at(root), false);
        if (!rb.ok()) return overflow;
        weight_tensors[root] = rb.value();
        return Status::Ok();
      }));
      if (parameter)
        RETURN_IF_ERROR(walk(t->name, &seen_param, [&](const std::string& root) -> Status {
          const TensorInfo& rt = graph.tensors.at(root);
          Count rn = Numel(rt);
          if (!rn.ok()) return overflow;
          if (IsFloat(rt.elem_type) && !rt.is_buffer) {
            param_tensors[root] = rn.value();
            if (rt.is_frozen) frozen_tensors[root] = rn.value();
          }
          return Status::Ok();
        }));
      if (trainable) params += Numel(*t);
      if (i == 0 && cost->lookup_elems.value() > 0) lookup_bytes += cost->lookup_elems * ElemTypeBytes(t->elem_type);
      // A lookup in a table trained with sparse gradients that nothing reads densely: its gradient
      // is the rows looked up, each row's fp32 values and its int64 index (torch's COO gradient).
      if (auto s = sparse_table.find(t->name); trainable && i == 0 && cost->lookup_elems.value() > 0 &&
                                                s != sparse_table.end() && !dense_read.count(s->second)) {
        const int64_t dim = t->dims.empty() ? 0 : t->dims.back();
        const Count rows = dim > 0 ? Count(cost->lookup_elems.value() / dim) : Count(0);
        sparse_params += Numel(*t);
        sparse_bytes += cost->lookup_elems * 4 + rows * 8;
        Count n = Numel(graph.tensors.at(s->second));
        if (!n.ok()) return Status::Error(where + ": parameter count overflows int64");
        sparse_tensors[s->second] = n.value();
      }
    }
    if (!params.ok() || !sparse_params.ok()) return Status::Error(where + ": parameter count overflows int64");
    if (!sparse_bytes.ok()) return Status::Error(where + ": byte count overflows int64" + at_batch);
    if (!act.ok() || !in_bytes.ok() || !wbytes.ok() || !lookup_bytes.ok())
      return Status::Error(where + ": byte count overflows int64" + at_batch);

    // What the node keeps for its backward, in autocast's element types under AMP.
    if (args.AnyGrad()) {
      const bool cast_half = opts.amp && saved->amp == AmpType::kHalf;
      auto fit = fused.find(node_index);
      Count kept_bytes;
      auto keep = [&](Count bytes) {  // one allocation
        kept_bytes += bytes;
        if (bytes.ok() && bytes.value() > 0) nc.saved_tensors.push_back(bytes.value());
      };
      if (fit != fused.end()) {  // a fused op's export: what the fused op keeps, once
        for (const std::string& name : fit->second.keep) {
          const TensorInfo* t = graph.Tensor(name);
          if (t && t->shape_known && !is_weight(t) && kept.insert(storage(name)).second)
            keep(Numel(*t) * elem_bytes(*t));
        }
      }
      for (size_t i = 0; i < args.inputs.size() && i < 31; ++i) {
        const TensorInfo* t = args.inputs[i];
        if (!t) continue;
        if (is_weight(t)) {
          if (cast_half && IsFloat(t->elem_type))
            RETURN_IF_ERROR(walk(t->name, &seen_autocast, [&](const std::string& root) -> Status {
              autocast_roots.insert(root);
              return Status::Ok();
            }));
          continue;  // weights are resident anyway
        }
        if (fit != fused.end() || !((saved->inputs >> i) & 1)) continue;
        if (saved->inputs & kSavedPartner) {
          bool other_needs_grad = false;
          for (size_t k = 0; k < args.inputs.size(); ++k) other_needs_grad = other_needs_grad || (k != i && args.Grad(k));
          if (!other_needs_grad) continue;
        }
        std::string key = storage(t->name);
        int64_t eb = elem_bytes(*t);
        if (cast_half && IsFloat(t->elem_type) && eb > 2) {
          key += "#fp16@" + node.name;  // autocast casts activations per op, without a cache
          eb = 2;
        }
        if (kept.insert(key).second) keep(Numel(*t) * eb);
      }
      for (size_t i = 0; i < args.outputs.size() && i < 31 && fit == fused.end(); ++i)
        if (((saved->outputs >> i) & 1) && kept.insert(storage(args.outputs[i]->name)).second)
          keep(Numel(*args.outputs[i]) * elem_bytes(*args.outputs[i]));
      // A view (a ratio-0 Dropout: the input itself) keeps no extra state.
      if (fit == fused.end() && !cost->view && !args.outputs.empty() &&
          (saved->extra_elems > 0 || saved->extra_bytes > 0))
        keep(Numel(*args.outputs[0]) *
             (Count(saved->extra_elems) * elem_bytes(*args.outputs[0]) + saved->extra_bytes));
      // A normalisation's fp32 statistics, inside a fused pattern too (GroupNorm's InstanceNormalization).
      if (saved->stats > 0 && !args.inputs.empty() && args.inputs[0]) {
        const Count groups = NormGroups(node, *args.inputs[0]);
        for (int s = 0; s < saved->stats; ++s) keep(groups * 4);
      }
      if (!cost->view)
        for (const TensorInfo* t : args.outputs) {
          Count b = Numel(*t) * elem_bytes(*t);
          if (b.ok()) largest = std::max(largest, b.value());
        }
      if (!kept_bytes.ok()) return Status::Error(where + ": saved byte count overflows int64" + at_batch);
      nc.saved_bytes = kept_bytes.value();
      saved_total += nc.saved_bytes;
    }

    // A view of a same-sized input of the same element type shares its storage (Shape, Size and
    // Constant make new tensors).
    if (cost->view && !args.inputs.empty() && args.inputs[0] && !args.outputs.empty()) {
      const TensorInfo* in = args.inputs[0];
      const TensorInfo* out = args.outputs[0];
      if (in->shape_known && out->shape_known && in->elem_type == out->elem_type) {
        Count ni = Numel(*in), no = Numel(*out);
        if (ni.ok() && no.ok() && ni.value() == no.value()) storage_of[out->name] = storage(in->name);
      }
    }

    nc.forward_flops = cost->forward_flops.value();
    nc.backward_flops = cost->backward_flops.value();
    nc.params = params.value();
    nc.sparse_grad_params = sparse_params.value();
    nc.sparse_grad_bytes = sparse_bytes.value();
    nc.activation_bytes = act.value();
    nc.weight_bytes = wbytes.value();
    nc.lookup_bytes = lookup_bytes.value();
    nc.input_bytes = in_bytes.value();

    if (auto f = fused.find(node_index); f != fused.end()) {
      nc.fused_op = static_cast<int64_t>(f->second.first) + 1;
      if (!f->second.inside && !f->second.keep.empty()) {
        const TensorInfo* x = graph.Tensor(f->second.keep[0]);
        const TensorInfo* y = f->second.output.empty() ? nullptr : graph.Tensor(f->second.output);
        if (x && y && x->shape_known && y->shape_known) {
          // The output's element type is known once its node is costed (AMP): filled in below.
          fused_io.push_back({rep.nodes.size(), x, y, where});
        }
      }
    }

    const int ci = static_cast<int>(nc.category);
    tot.fwd += nc.forward_flops;
    tot.bwd += nc.backward_flops;
    tot.cat[ci] += Count(nc.forward_flops) + nc.backward_flops;
    tot.act += nc.activation_bytes;
    ++rep.totals.nodes_by_category[ci];
    rep.nodes.push_back(std::move(nc));
  }
  // A fused op's traffic: its input and its result, in autocast's element types under AMP.
  for (const FusedIo& f : fused_io) {
    Count io = Numel(*f.x) * elem_bytes(*f.x) + Numel(*f.y) * elem_bytes(*f.y);
    if (!io.ok()) return Status::Error(f.where + ": byte count overflows int64" + at_batch);
    rep.nodes[f.node].fused_io_bytes = io.value();
  }

  Count all = tot.fwd + tot.bwd;
  for (const Count& c : tot.cat) all += c;
  if (!all.ok()) return Status::Error(file + ": total FLOP count overflows int64" + at_batch);
  if (!tot.act.ok()) return Status::Error(file + ": total activation bytes overflow int64" + at_batch);
  Count params, wbytes, frozen, sparse, sparse_bytes;
  for (const auto& [name, n] : param_tensors) params += n;
  for (const auto& [name, n] : frozen_tensors) frozen += n;
  for (const auto& [name, n] : sparse_tensors) sparse += n;
  for (const auto& [name, b] : weight_tensors) wbytes += b;
  for (const NodeCost& n : rep.nodes) sparse_bytes += n.sparse_grad_bytes;
  if (!params.ok() || !wbytes.ok() || !frozen.ok() || !sparse.ok() || !sparse_bytes.ok())
    return Status::Error(file + ": parameter count overflows int64");

  CostTotals& T = rep.totals;
  T.forward_flops = tot.fwd.value();
  T.backward_flops = tot.bwd.value();
  T.activation_bytes = tot.act.value();
  T.params = params.value();
  T.frozen_params = frozen.value();
  T.sparse_grad_params = sparse.value();
  T.sparse_grad_bytes = sparse_bytes.value();
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

  Count data_bytes, autocast_bytes;
  for (const std::string& name : graph.data_inputs)
    if (auto it = graph.tensors.find(name); it != graph.tensors.end() && it->second.shape_known)
      data_bytes += Numel(it->second) * ElemTypeBytes(it->second.elem_type);
  for (const std::string& root : autocast_roots) autocast_bytes += Numel(graph.tensors.at(root)) * 2;
  if (!saved_total.ok() || !data_bytes.ok() || !autocast_bytes.ok())
    return Status::Error(file + ": memory byte count overflows int64" + at_batch);
  T.saved_bytes = saved_total.value();
  T.largest_tensor_bytes = largest;
  T.data_input_bytes = data_bytes.value();
  T.autocast_weight_bytes = autocast_bytes.value();
  for (const std::string& name : graph.outputs)
    if (auto it = graph.tensors.find(name);
        it != graph.tensors.end() && it->second.shape_known && IsFloat(it->second.elem_type))
      if (Count n = Numel(it->second); n.ok()) T.largest_output_elems = std::max(T.largest_output_elems, n.value());

  for (const auto& [key, count] : unsupported) rep.unsupported.push_back({key.first, count, key.second});
  return rep;
}

}  // namespace gpucast
