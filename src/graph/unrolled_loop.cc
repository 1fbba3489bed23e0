#include "graph/unrolled_loop.h"

#include <unordered_set>

#include "graph/graph.h"
#include "graph/subgraph_names.h"

namespace gpucast {
namespace {

// A Constant node whose value is one boolean (or integer) true.
bool IsConstantTrue(const onnx::NodeProto& n) {
  if (!IsDefaultDomain(n.domain()) || n.op_type() != "Constant" || n.input_size() != 0) return false;
  for (const auto& a : n.attribute()) {
    if (a.name() != "value" || !a.has_t()) continue;
    const onnx::TensorProto& t = a.t();
    int64_t elems = 1;
    for (int64_t d : t.dims()) elems *= d;
    if (elems != 1) return false;
    if (t.int32_data_size() == 1) return t.int32_data(0) != 0;
    if (t.int64_data_size() == 1) return t.int64_data(0) != 0;
    if (!t.raw_data().empty()) return t.raw_data()[0] != 0;
  }
  return false;
}

onnx::NodeProto ConstantNode(const std::string& name, const std::string& output, int32_t elem_type,
                             std::vector<int64_t> dims, int64_t value) {
  onnx::NodeProto n;
  n.set_op_type("Constant");
  n.set_name(name);
  n.add_output(output);
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = a->mutable_t();
  t->set_data_type(elem_type);
  for (int64_t d : dims) t->add_dims(d);
  if (elem_type == onnx::TensorProto::INT64) t->add_int64_data(value);
  else t->add_int32_data(static_cast<int32_t>(value));
  return n;
}

onnx::NodeProto SimpleNode(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                           const std::string& output) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (std::string& in : inputs) n.add_input(std::move(in));
  n.add_output(output);
  return n;
}

// `elements` joined by one Concat on `axis` named `prefix` writing `output`; with new_axis each
// is first Unsqueezed at `axis` ("<prefix>/row<k>"; opset 13+: the axes a Constant "<prefix>/axes").
// Every new name is vetted by `fresh`; nullopt when one is taken.
std::optional<std::vector<onnx::NodeProto>> Stacked(
    const std::vector<std::string>& elements, int64_t axis, bool new_axis, int64_t opset, const std::string& prefix,
    const std::string& output, const std::function<std::optional<std::string>(const std::string&)>& fresh) {
  std::vector<onnx::NodeProto> out;
  std::vector<std::string> parts = elements;
  if (new_axis) {
    std::string axes;
    if (opset >= 13) {
      auto f = fresh(Under(prefix, "axes"));
      if (!f) return std::nullopt;
      axes = *f;
      out.push_back(ConstantNode(axes, axes, onnx::TensorProto::INT64, {1}, axis));
    }
    for (size_t k = 0; k < parts.size(); ++k) {
      auto f = fresh(Under(prefix, "row" + std::to_string(k)));
      if (!f) return std::nullopt;
      std::vector<std::string> in = {parts[k]};
      if (!axes.empty()) in.push_back(axes);
      onnx::NodeProto u = SimpleNode("Unsqueeze", *f, std::move(in), *f);
      if (axes.empty()) {
        auto* a = u.add_attribute();
        a->set_name("axes");
        a->set_type(onnx::AttributeProto::INTS);
        a->add_ints(axis);
      }
      out.push_back(std::move(u));
      parts[k] = *f;
    }
  }
  onnx::NodeProto c = SimpleNode("Concat", prefix, std::move(parts), output);
  auto* a = c.add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(axis);
  out.push_back(std::move(c));
  return out;
}

}  // namespace

std::optional<std::vector<onnx::NodeProto>> ListConcat(const onnx::NodeProto& concat,
                                                       const std::vector<std::string>& elements, int64_t opset,
                                                       const std::function<bool(const std::string&)>& taken) {
  if (!IsDefaultDomain(concat.domain()) || concat.op_type() != "ConcatFromSequence" || concat.output_size() != 1 ||
      elements.empty())
    return std::nullopt;
  int64_t axis = 0, new_axis = 0;
  for (const auto& a : concat.attribute()) {
    if (a.name() == "axis") axis = a.i();
    if (a.name() == "new_axis") new_axis = a.i();
  }
  std::unordered_set<std::string> fresh_names;
  return Stacked(elements, axis, new_axis != 0, opset, concat.name(), concat.output(0),
                 [&](const std::string& name) -> std::optional<std::string> {
                   if (taken(name) || !fresh_names.insert(name).second) return std::nullopt;
                   return name;
                 });
}

std::optional<UnrolledLoop> UnrollLoop(const onnx::NodeProto& loop, int64_t trips, const LoopContext& ctx) {
  if (!IsDefaultDomain(loop.domain()) || loop.op_type() != "Loop" || loop.input_size() < 2 || trips < 1)
    return std::nullopt;
  const onnx::GraphProto* body = nullptr;
  for (const auto& a : loop.attribute())
    if (a.name() == "body" && a.has_g()) body = &a.g();
  const int carried = loop.input_size() - 2;
  if (!body || body->initializer_size() != 0 || body->sparse_initializer_size() != 0 ||
      body->input_size() != carried + 2 || body->output_size() < carried + 1 ||
      loop.output_size() != body->output_size() - 1)
    return std::nullopt;
  const int scans = body->output_size() - 1 - carried;
  if (!loop.input(1).empty() && !ctx.is_true(loop.input(1))) return std::nullopt;

  const std::string& iter_name = body->input(0).name();
  const std::string& cond_name = body->input(1).name();
  std::unordered_map<std::string, int> producer;  // body name -> node index
  for (int i = 0; i < body->node_size(); ++i)
    for (const auto& o : body->node(i).output())
      if (!o.empty() && !producer.emplace(o, i).second) return std::nullopt;  // two producers
  for (int i = 0; i < body->input_size(); ++i)
    if (producer.count(body->input(i).name())) return std::nullopt;  // a body input redefined

  // The body's condition stays true: its condition input, a Constant true, a folded true outer
  // name, or an Identity of one of those.
  auto always_true = [&](const std::string& name) {
    if (name == cond_name) return true;
    auto p = producer.find(name);
    if (p == producer.end()) return ctx.is_true(name);
    return IsConstantTrue(body->node(p->second));
  };
  {
    const std::string& c = body->output(0).name();
    auto p = producer.find(c);
    const bool identity = p != producer.end() && body->node(p->second).op_type() == "Identity" &&
                          body->node(p->second).input_size() == 1;
    if (!(identity ? always_true(body->node(p->second).input(0)) : always_true(c))) return std::nullopt;
  }

  std::unordered_multiset<std::string> reads;
  ForEachRead(*body, [&reads](const std::string& in) {
    if (!in.empty()) reads.insert(in);
  });
  // Lists the body appends to: carried value j starts as a SequenceEmpty, and the body's only use
  // of it is one SequenceInsert without a position whose result is the body's output for j.
  std::vector<int> append(static_cast<size_t>(carried), -1);  // the SequenceInsert's node index
  std::unordered_set<int> skipped;
  for (int j = 0; j < carried; ++j) {
    if (loop.input(2 + j).empty()) return std::nullopt;  // no initial value
    if (!ctx.is_empty_sequence(loop.input(2 + j))) continue;
    const std::string& in = body->input(2 + j).name();
    const std::string& out = body->output(1 + j).name();
    auto p = producer.find(out);
    if (p == producer.end()) return std::nullopt;
    const onnx::NodeProto& ins = body->node(p->second);
    if (!IsDefaultDomain(ins.domain()) || ins.op_type() != "SequenceInsert" || ins.input_size() != 2 ||
        ins.input(0) != in || reads.count(in) != 1 || reads.count(out) != 0 || ins.input(1).empty() ||
        !skipped.insert(p->second).second)
      return std::nullopt;
    for (int k = 0; k < body->output_size(); ++k)
      if (k != 1 + j && body->output(k).name() == out) return std::nullopt;  // the list output twice
    append[static_cast<size_t>(j)] = p->second;
  }

  UnrolledLoop result;
  std::unordered_set<std::string> fresh_names;
  auto fresh = [&](const std::string& name) -> std::optional<std::string> {
    if (ctx.taken(name) || !fresh_names.insert(name).second) return std::nullopt;
    return name;
  };
  std::vector<std::string> current(static_cast<size_t>(carried));
  for (int j = 0; j < carried; ++j) current[static_cast<size_t>(j)] = loop.input(2 + j);
  std::vector<std::vector<std::string>> appended(static_cast<size_t>(carried)), scanned(static_cast<size_t>(scans));
  for (int64_t k = 0; k < trips; ++k) {
    const std::string prefix = loop.name() + "/iter" + std::to_string(k);
    Renames renames;
    for (const auto& [name, index] : producer) {
      (void)index;
      auto f = fresh(Under(prefix, name));
      if (!f) return std::nullopt;
      renames.emplace(name, std::move(*f));
    }
    for (int j = 0; j < carried; ++j) renames[body->input(2 + j).name()] = current[static_cast<size_t>(j)];
    if (reads.count(iter_name)) {
      auto f = fresh(Under(prefix, "iteration"));
      if (!f) return std::nullopt;
      result.nodes.push_back(ConstantNode(*f, *f, onnx::TensorProto::INT64, {}, k));
      renames[iter_name] = *f;
    }
    if (reads.count(cond_name)) {
      auto f = fresh(Under(prefix, "condition"));
      if (!f) return std::nullopt;
      result.nodes.push_back(ConstantNode(*f, *f, onnx::TensorProto::BOOL, {}, 1));
      renames[cond_name] = *f;
    }
    for (int i = 0; i < body->node_size(); ++i) {
      if (skipped.count(i)) continue;
      onnx::NodeProto n = body->node(i);
      n.set_name(Under(prefix, n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name()));
      RenameNode(&n, renames);
      result.nodes.push_back(std::move(n));
    }
    auto resolved = [&](std::string name) {
      Rename(&name, renames);
      return name;
    };
    for (int j = 0; j < carried; ++j) {
      const int a = append[static_cast<size_t>(j)];
      if (a >= 0) appended[static_cast<size_t>(j)].push_back(resolved(body->node(a).input(1)));
      else current[static_cast<size_t>(j)] = resolved(body->output(1 + j).name());
    }
    for (int s = 0; s < scans; ++s) scanned[static_cast<size_t>(s)].push_back(resolved(body->output(1 + carried + s).name()));
  }
  // The Loop's outputs: final values, lists, stacked scan outputs.
  for (int j = 0; j < carried; ++j) {
    const std::string& want = loop.output(j);
    if (want.empty()) continue;
    if (append[static_cast<size_t>(j)] >= 0) {
      result.sequences.push_back({want, appended[static_cast<size_t>(j)]});
      continue;
    }
    if (current[static_cast<size_t>(j)].empty()) return std::nullopt;
    result.nodes.push_back(SimpleNode("Identity", Under(loop.name(), "final_" + std::to_string(j)),
                                      {current[static_cast<size_t>(j)]}, want));
  }
  for (int s = 0; s < scans; ++s) {
    const std::string& want = loop.output(carried + s);
    if (want.empty()) continue;
    for (const std::string& v : scanned[static_cast<size_t>(s)])
      if (v.empty()) return std::nullopt;
    auto stacked = Stacked(scanned[static_cast<size_t>(s)], 0, /*new_axis=*/true, ctx.opset,
                           Under(loop.name(), "scan" + std::to_string(s)), want, fresh);
    if (!stacked) return std::nullopt;
    for (auto& m : *stacked) result.nodes.push_back(std::move(m));
  }
  return result;
}

}  // namespace gpucast
