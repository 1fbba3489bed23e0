#include "graph/onnx_functions.h"

#include <algorithm>
#include <climits>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <google/protobuf/unknown_field_set.h>
#include <onnx/defs/schema.h>

#include "graph/onnx_schemas.h"
#include "util/utf8.h"

namespace gpucast {
namespace {

// FunctionProto.attribute_proto in ONNX >= 1.13's onnx.proto.
constexpr int kAttributeProtoField = 11;

std::string Domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

// A name or overload from the model as a message shows it: each control byte
// (C0, DEL, C1), each byte that does not start well-formed UTF-8 (RFC 3629)
// and the backslash as \xNN, as the service's log lines show client text
// (service/http_util.h ForLog); other UTF-8 is kept. Overloads are unknown
// fields to libonnx 1.12, never checked as UTF-8, and names are any UTF-8:
// an ESC in one was echoed raw to the terminal by the CLI's error message.
std::string Shown(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto escape = [&out](unsigned char c) {
    static const char kHex[] = "0123456789ABCDEF";
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F || c == '\\') escape(c);
      else out += static_cast<char>(c);
      ++i;
      continue;
    }
    // Well-formed UTF-8 is kept, but not U+0080-U+009F (C1 controls), escaped byte by byte.
    const size_t len = Utf8SequenceLength(s, i);
    const size_t n = len == 0 ? 0 : len - 1;
    const bool ok = len > 0 && !(c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0);
    if (!ok) {
      escape(c);
      ++i;
      continue;
    }
    out.append(s.substr(i, n + 1));
    i += n + 1;
  }
  return out;
}

// "__main__::Block", or "Block" in the default domain, as messages show it (Shown).
std::string FunctionName(const std::string& domain, const std::string& name) {
  return Shown(domain.empty() ? name : domain + "::" + name);
}
std::string FunctionName(const onnx::FunctionProto& f) { return FunctionName(Domain(f.domain()), f.name()); }

// NodeProto.overload and FunctionProto.overload (IR 10), unknown fields to
// libonnx 1.12's classes: the last string of field `number`, or "".
std::string UnknownString(const google::protobuf::Message& m, int number) {
  const google::protobuf::UnknownFieldSet& u = m.GetReflection()->GetUnknownFields(m);
  std::string out;
  for (int i = 0; i < u.field_count(); ++i) {
    if (u.field(i).number() == number && u.field(i).type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      out = u.field(i).length_delimited();
    }
  }
  return out;
}
constexpr int kNodeOverloadField = 8, kFunctionOverloadField = 13;

using Key = std::tuple<std::string, std::string, std::string>;  // (domain, name, overload)
Key KeyOf(const onnx::NodeProto& n) { return {Domain(n.domain()), n.op_type(), UnknownString(n, kNodeOverloadField)}; }
Key KeyOf(const onnx::FunctionProto& f) {
  return {Domain(f.domain()), f.name(), UnknownString(f, kFunctionOverloadField)};
}

std::string NodeRef(const onnx::NodeProto& n) {
  return "node '" + Shown(n.name()) + "' (" + FunctionName(Domain(n.domain()), n.op_type()) + ")";
}

class Inliner {
 public:
  Inliner(onnx::ModelProto* model, const LoadLimits& limits) : model_(*model), limits_(limits) {}

  Result<InlineResult> Run(LoadFailure* why) {
    why_ = why;
    *why_ = LoadFailure::kInvalid;
    if (model_.functions_size() == 0) return InlineResult{};
    for (const auto& f : model_.functions()) {
      if (!functions_.emplace(KeyOf(f), &f).second) {
        const std::string overload = std::get<2>(KeyOf(f));
        return Status::Error("function '" + FunctionName(f) + "'" +
                             (overload.empty() ? "" : " (overload '" + Shown(overload) + "')") + " is defined twice");
      }
    }
    onnx::GraphProto& g = *model_.mutable_graph();
    // Sizes and depths first, without expanding: a cycle, a too deep nesting
    // or a graph over the node limit is refused before any copy is made.
    int64_t total = 0;
    for (const auto& n : g.node()) {
      auto it = functions_.find(KeyOf(n));
      if (it == functions_.end()) {
        total = Add(total, 1);
        continue;
      }
      std::vector<const onnx::FunctionProto*> path;
      RETURN_IF_ERROR(Measure(it->second, &path));
      total = Add(total, info_[it->second].nodes);
    }
    if (info_.empty()) return InlineResult{};
    if (total > limits_.max_nodes) {
      *why_ = LoadFailure::kTooManyNodes;
      return Status::Error("graph too large: more than " + std::to_string(limits_.max_nodes) +
                           " nodes once its model-local functions are inlined");
    }
    RETURN_IF_ERROR(ReconcileOpsets());
    for (const auto& [f, info] : info_) RETURN_IF_ERROR(ReadDefaults(*f));

    // Every name of the graph, so that internal names made for inlined
    // bodies never collide with one.
    for (const auto& i : g.input()) used_.insert(i.name());
    for (const auto& t : g.initializer()) used_.insert(t.name());
    for (const auto& o : g.output()) used_.insert(o.name());
    for (const auto& n : g.node()) {
      used_.insert(n.name());
      for (const auto& o : n.output()) used_.insert(o);
      for (const auto& i : n.input()) used_.insert(i);
    }
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    out.Reserve(static_cast<int>(total));
    for (const auto& n : g.node()) {
      auto it = functions_.find(KeyOf(n));
      if (it == functions_.end()) {
        *out.Add() = n;
      } else {
        RETURN_IF_ERROR(Expand(n, *it->second, &out));
      }
    }
    g.mutable_node()->Swap(&out);
    InlineResult r;
    r.calls = calls_;
    r.functions = static_cast<int>(info_.size());
    model_.clear_functions();
    return r;
  }

 private:
  struct Info {
    int64_t nodes = 0;  // nodes once inlined, saturated past max_nodes
    int depth = 0;      // levels of functions, this one included
    bool done = false;
  };

  int64_t Add(int64_t a, int64_t b) const {
    const int64_t cap = limits_.max_nodes + 1;
    return std::min(cap, std::min(a, cap) + std::min(b, cap));
  }

  // Node count and depth of `f` once inlined (memoised); a function on
  // `path` again is a cycle.
  Status Measure(const onnx::FunctionProto* f, std::vector<const onnx::FunctionProto*>* path) {
    if (info_[f].done) return Status::Ok();
    if (auto on = std::find(path->begin(), path->end(), f); on != path->end()) {
      std::string cycle;
      for (auto it = on; it != path->end(); ++it) cycle += FunctionName(**it) + " -> ";
      return Status::Error("function '" + FunctionName(*f) + "' calls itself: " + cycle + FunctionName(*f));
    }
    if (static_cast<int>(path->size()) >= limits_.max_function_depth) return TooDeep(*path, *f);
    path->push_back(f);
    Info mine;
    mine.depth = 1;
    // Outputs that pass an input through become Identity nodes (Expand).
    std::unordered_set<std::string> produced;
    for (const auto& n : f->node()) produced.insert(n.output().begin(), n.output().end());
    for (const auto& o : f->output()) {
      if (!produced.count(o)) mine.nodes = Add(mine.nodes, 1);
    }
    for (const auto& n : f->node()) {
      auto it = functions_.find(KeyOf(n));
      if (it == functions_.end()) {
        mine.nodes = Add(mine.nodes, 1);
        continue;
      }
      RETURN_IF_ERROR(Measure(it->second, path));
      const Info& callee = info_[it->second];
      // The callee may have been measured before, from a shallower call.
      if (static_cast<int64_t>(path->size()) + callee.depth > limits_.max_function_depth) {
        return TooDeep(*path, *it->second);
      }
      mine.nodes = Add(mine.nodes, callee.nodes);
      mine.depth = std::max(mine.depth, callee.depth + 1);
    }
    path->pop_back();
    mine.done = true;
    info_[f] = mine;
    return Status::Ok();
  }

  Status TooDeep(const std::vector<const onnx::FunctionProto*>& path, const onnx::FunctionProto& f) {
    *why_ = LoadFailure::kTooDeep;
    std::string chain = path.empty() ? "" : FunctionName(*path.front()) + " -> ";
    if (path.size() > 1) chain += "... -> " + FunctionName(*path.back()) + " -> ";
    return Status::Error("model-local functions nested deeper than " + std::to_string(limits_.max_function_depth) +
                         " levels (" + chain + FunctionName(f) + ")");
  }

  // Each domain a used function imports must bind its ops as the model's
  // import does: a domain the model lacks is added; another version of one
  // the model imports is accepted only when every op of the body from that
  // domain has the same schema at both versions (ONNX's own rule for
  // function opsets, onnx.proto), else refused naming the function and op.
  Status ReconcileOpsets() {
    std::map<std::string, int64_t> model_versions;
    for (const auto& o : model_.opset_import()) model_versions[Domain(o.domain())] = o.version();
    const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto known = ranges.find(onnx::ONNX_DOMAIN);
    const int64_t max_known = known == ranges.end() ? 0 : known->second.second;
    auto which = [](const std::string& d) {
      return d.empty() ? "the default ONNX domain" : "domain '" + Shown(d) + "'";
    };
    for (const auto& [f, info] : info_) {
      // One version per domain; then each body node is checked once against
      // its domain's (imports x nodes was quadratic in the file's size).
      std::map<std::string, int64_t> imports;
      for (const auto& o : f->opset_import()) {
        const std::string d = Domain(o.domain());
        auto [it, fresh] = imports.emplace(d, o.version());
        if (!fresh && it->second != o.version()) {
          return Status::Error("function '" + FunctionName(*f) + "' imports " + which(d) + " twice, as opset " +
                               std::to_string(it->second) + " and " + std::to_string(o.version()));
        }
      }
      std::map<std::string, int64_t> differing;  // domain -> the model's version, where the function's differs
      for (const auto& [d, fv] : imports) {
        auto [it, fresh] = model_versions.emplace(d, fv);
        if (fresh) {
          auto* add = model_.add_opset_import();
          add->set_domain(d);
          add->set_version(fv);
        } else if (it->second != fv) {
          differing.emplace(d, it->second);
        }
      }
      if (differing.empty()) continue;
      for (const auto& n : f->node()) {
        const std::string d = Domain(n.domain());
        auto dv = differing.find(d);
        if (dv == differing.end() || functions_.count(KeyOf(n))) continue;
        const int64_t mv = dv->second, fv = imports.at(d);
        const std::string head = "function '" + FunctionName(*f) + "' imports opset " + std::to_string(fv) + " of " +
                                 which(d) + " but the model imports " + std::to_string(mv);
        if (d.empty() && std::max(mv, fv) > max_known) {
          return Status::Error(head + ", and this build knows the default domain's schemas only up to opset " +
                               std::to_string(max_known) + ", so op '" + Shown(n.op_type()) +
                               "' cannot be shown to be the same at both; re-export with one opset");
        }
        auto clamp = [](int64_t v) { return static_cast<int>(std::clamp<int64_t>(v, 0, INT_MAX)); };
        const onnx::OpSchema* a = FindOpSchema(n.op_type(), clamp(mv), d);
        const onnx::OpSchema* b = FindOpSchema(n.op_type(), clamp(fv), d);
        if ((a == nullptr) != (b == nullptr) || (a && a->SinceVersion() != b->SinceVersion())) {
          auto ver = [&](const onnx::OpSchema* s) {
            return s ? Shown(n.op_type()) + "-" + std::to_string(s->SinceVersion()) : std::string("none");
          };
          return Status::Error(head + ", and op '" + Shown(n.op_type()) + "' differs between them (" + ver(b) +
                               " in the function, " + ver(a) + " in the model); re-export with one opset");
        }
      }
    }
    return Status::Ok();
  }

  Status ReadDefaults(const onnx::FunctionProto& f) {
    auto d = FunctionAttributeDefaults(f);
    if (!d.ok()) return Status::Error("function '" + FunctionName(f) + "': " + d.message());
    auto& mine = defaults_[&f];
    for (auto& a : *d) mine.emplace(a.name(), std::move(a));
    return Status::Ok();
  }

  // `candidate`, or with a suffix when the graph already uses it.
  // Suffixes are tried from where the last search for the same candidate
  // stopped: a body whose nodes share one name costs one probe per node.
  std::string Fresh(const std::string& candidate) {
    if (used_.insert(candidate).second) return candidate;
    for (int64_t& k = next_suffix_.try_emplace(candidate, 2).first->second;; ++k) {
      std::string c = candidate + "_" + std::to_string(k);
      if (used_.insert(c).second) return c;
    }
  }

  // Counts `bytes` built for the inlined graph against max_graph_bytes: every
  // name made and every node copied, so the work is bounded whatever the
  // functions' shapes (long call names, many formal inputs, empty bodies).
  Status Spend(int64_t bytes) {
    built_ += bytes;
    if (limits_.max_graph_bytes > 0 && built_ > limits_.max_graph_bytes) {
      *why_ = LoadFailure::kTooLarge;
      return Status::Error("graph too large: more than " + std::to_string(limits_.max_graph_bytes) +
                           " bytes once its model-local functions are inlined");
    }
    return Status::Ok();
  }

  // Renames references to the enclosing body's values inside a subgraph.
  static void RenameInSubgraph(onnx::GraphProto* g, const std::unordered_map<std::string, std::string>& names) {
    for (auto& n : *g->mutable_node()) {
      for (auto& in : *n.mutable_input()) {
        if (auto it = names.find(in); it != names.end()) in = it->second;
      }
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) RenameInSubgraph(a.mutable_g(), names);
        for (auto& sub : *a.mutable_graphs()) RenameInSubgraph(&sub, names);
      }
    }
  }

  // Appends the body of `f`, bound to the call `call`, to `out`.
  // Recursion depth: bounded by Measure (max_function_depth).
  Status Expand(const onnx::NodeProto& call, const onnx::FunctionProto& f, google::protobuf::RepeatedPtrField<onnx::NodeProto>* out) {
    ++calls_;
    const std::string where = NodeRef(call) + ", calling function '" + FunctionName(f) + "'";
    if (call.input_size() > f.input_size()) {
      return Status::Error(where + ": " + std::to_string(call.input_size()) + " inputs, but the function takes " +
                           std::to_string(f.input_size()));
    }
    if (call.output_size() > f.output_size()) {
      return Status::Error(where + ": " + std::to_string(call.output_size()) +
                           " outputs, but the function has " + std::to_string(f.output_size()));
    }
    std::unordered_map<std::string, std::string> names;  // body name -> graph name
    for (int i = 0; i < f.input_size(); ++i) {
      if (f.input(i).empty()) continue;
      if (!names.emplace(f.input(i), i < call.input_size() ? call.input(i) : "").second) {
        return Status::Error(where + ": the function lists input '" + Shown(f.input(i)) + "' twice");
      }
    }
    std::unordered_set<std::string> produced;
    for (const auto& n : f.node()) {
      for (const auto& o : n.output()) {
        if (o.empty()) continue;
        if (names.count(o) && !produced.count(o)) {
          return Status::Error(where + ": body node '" + Shown(n.name()) + "' writes '" + Shown(o) +
                               "', which is an input of the function");
        }
        if (!produced.insert(o).second) {
          return Status::Error(where + ": value '" + Shown(o) + "' is produced twice in the function's body");
        }
      }
    }
    std::unordered_map<std::string, std::string> outputs;  // formal output -> actual
    std::unordered_set<std::string> formal_outputs;
    for (int i = 0; i < f.output_size(); ++i) {
      const std::string& formal = f.output(i);
      if (!formal_outputs.insert(formal).second) {
        return Status::Error(where + ": the function lists output '" + Shown(formal) + "' twice");
      }
      const bool bound = i < call.output_size() && !call.output(i).empty();
      if (!produced.count(formal) && !names.count(formal)) {
        return Status::Error(where + ": function output '" + Shown(formal) + "' is not produced by its body");
      }
      if (bound) outputs[formal] = call.output(i);
    }
    RETURN_IF_ERROR(Spend(f.input_size() + f.output_size() +
                          static_cast<int64_t>(produced.size() * (call.name().size() + 1))));
    for (const auto& o : produced) {
      auto it = outputs.find(o);
      RETURN_IF_ERROR(Spend(static_cast<int64_t>(o.size())));
      names[o] = it != outputs.end() ? it->second : Fresh(call.name() + "/" + o);
    }
    // A formal output that is a formal input: the call passes its input through.
    for (const auto& [formal, actual] : outputs) {
      if (produced.count(formal)) continue;
      onnx::NodeProto* id = out->Add();
      id->set_op_type("Identity");
      id->set_name(Fresh(call.name() + "/Identity_" + formal));
      id->add_input(names[formal]);
      id->add_output(actual);
      RETURN_IF_ERROR(Spend(static_cast<int64_t>(id->ByteSizeLong())));
    }
    const auto& defaults = defaults_[&f];
    // The call's attributes by name (the last of a name wins), looked up once
    // per reference: scanning them per reference was quadratic in the file.
    std::unordered_map<std::string_view, const onnx::AttributeProto*> given_by_name;
    for (const auto& ca : call.attribute()) given_by_name[ca.name()] = &ca;
    for (int k = 0; k < f.node_size(); ++k) {
      const onnx::NodeProto& b = f.node(k);
      onnx::NodeProto n;
      n.set_op_type(b.op_type());
      n.set_domain(b.domain());
      n.set_name(Fresh(call.name() + "/" + (b.name().empty() ? b.op_type() + "_" + std::to_string(k) : b.name())));
      for (const auto& in : b.input()) {
        if (in.empty()) {
          n.add_input("");
          continue;
        }
        auto it = names.find(in);
        if (it == names.end()) {
          return Status::Error(where + ": body node '" + Shown(b.name()) + "' (" + Shown(b.op_type()) + ") reads '" +
                               Shown(in) + "', which is neither an input of the function nor produced in its body");
        }
        n.add_input(it->second);
      }
      for (const auto& o : b.output()) n.add_output(o.empty() ? "" : names[o]);
      for (const auto& a : b.attribute()) {
        if (a.ref_attr_name().empty()) {
          onnx::AttributeProto* c = n.add_attribute();
          *c = a;
          if (c->has_g()) RenameInSubgraph(c->mutable_g(), names);
          for (auto& sub : *c->mutable_graphs()) RenameInSubgraph(&sub, names);
          continue;
        }
        const onnx::AttributeProto* given = nullptr;
        if (auto g = given_by_name.find(a.ref_attr_name()); g != given_by_name.end()) given = g->second;
        if (!given) {
          if (auto d = defaults.find(a.ref_attr_name()); d != defaults.end()) given = &d->second;
        }
        if (!given) continue;  // neither set nor defaulted: the attribute is absent, as in ONNX
        onnx::AttributeProto* c = n.add_attribute();
        *c = *given;
        c->set_name(a.name());
        c->clear_ref_attr_name();
      }
      RETURN_IF_ERROR(Spend(static_cast<int64_t>(n.ByteSizeLong())));
      auto callee = functions_.find(KeyOf(b));  // b: n does not carry b's overload
      if (callee == functions_.end()) {
        *out->Add() = std::move(n);
      } else {
        RETURN_IF_ERROR(Expand(n, *callee->second, out));
      }
    }
    return Status::Ok();
  }

  onnx::ModelProto& model_;
  const LoadLimits& limits_;
  LoadFailure* why_ = nullptr;
  std::map<Key, const onnx::FunctionProto*> functions_;
  std::map<const onnx::FunctionProto*, Info> info_;  // the functions the graph calls, directly or not
  std::map<const onnx::FunctionProto*, std::map<std::string, onnx::AttributeProto>> defaults_;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int64_t> next_suffix_;  // Fresh
  int64_t built_ = 0;  // bytes of names and nodes made (Spend)
  int calls_ = 0;
};

}  // namespace

Result<std::vector<onnx::AttributeProto>> FunctionAttributeDefaults(const onnx::FunctionProto& f) {
  std::vector<onnx::AttributeProto> out;
  const google::protobuf::UnknownFieldSet& unknown = f.GetReflection()->GetUnknownFields(f);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& u = unknown.field(i);
    if (u.number() != kAttributeProtoField) continue;
    onnx::AttributeProto a;
    if (u.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED || !a.ParseFromString(u.length_delimited())) {
      return Status::Error("attribute default " + std::to_string(out.size()) + " is not an AttributeProto");
    }
    out.push_back(std::move(a));
  }
  return out;
}

Result<InlineResult> InlineFunctions(onnx::ModelProto* model, const LoadLimits& limits, LoadFailure* why) {
  LoadFailure ignored;
  return Inliner(model, limits).Run(why ? why : &ignored);
}

}  // namespace gpucast
