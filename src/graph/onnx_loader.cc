#include "graph/onnx_loader.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <climits>
#include <exception>
#include <functional>
#include <queue>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "graph/export_mode.h"
#include "graph/folded_if.h"
#include "graph/unrolled_loop.h"
#include "graph/inference_guard.h"
#include "graph/onnx_functions.h"
#include "graph/onnx_schemas.h"
#include "graph/opset_gaps.h"
#include "graph/param_ties.h"
#include "graph/pattern_fills.h"
#include "graph/onnx_wire.h"
#include "graph/shape_fold.h"
#include "graph/subgraph_names.h"
#include "graph/torch_loops.h"
#include "util/checked.h"
#include "util/utf8.h"

namespace gpucast {
namespace {

using onnx::TensorProto;
using Dims = std::vector<int64_t>;

// Any tensor with more elements than this is rejected (counts stay in int64).
constexpr int64_t kMaxElements = int64_t{1} << 62;


std::string DimsStr(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string OpName(const onnx::NodeProto& n) {
  return IsDefaultDomain(n.domain()) ? n.op_type() : n.domain() + "::" + n.op_type();
}

std::string NodeRef(const onnx::NodeProto& n) {
  return "node '" + n.name() + "' (" + OpName(n) + ")";
}

// The first string field of `m` or the messages in it (protobuf `string`,
// not `bytes`: names, op types, domains, dim names, keys) that is not valid
// UTF-8, as "graph.node[3].name: byte 0xaf at offset 0 is not valid UTF-8";
// empty when there is none. Such a name reached the JSON writers, which
// throw on it (gpucast analyze --json aborted). doc_string is never read or
// written and is not checked. Recursion follows the message nesting, which the
// wire filter bounds (max_graph_depth).
std::string InvalidUtf8Field(const google::protobuf::Message& m, const std::string& path) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  std::string scratch;
  for (const FieldDescriptor* f : fields) {
    // Only strings and messages: numbers (float_data, int64_data, dims) are
    // skipped whole, and a path is built only for what is visited.
    const bool text = f->type() == FieldDescriptor::TYPE_STRING && f->name() != "doc_string";
    if (!text && f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const std::string name = path.empty() ? f->name() : path + "." + f->name();
    const int count = f->is_repeated() ? r->FieldSize(m, f) : 1;
    auto at = [&](int i) { return f->is_repeated() ? name + "[" + std::to_string(i) + "]" : name; };
    for (int i = 0; i < count; ++i) {
      if (text) {
        const std::string& v =
            f->is_repeated() ? r->GetRepeatedStringReference(m, f, i, &scratch) : r->GetStringReference(m, f, &scratch);
        if (size_t bad = FirstInvalidUtf8(v); bad != std::string_view::npos) {
          char buf[64];
          std::snprintf(buf, sizeof buf, ": byte 0x%02x at offset %zu is not valid UTF-8",
                        static_cast<unsigned>(static_cast<unsigned char>(v[bad])), bad);
          return at(i) + buf;
        }
      } else {
        const google::protobuf::Message& sub = f->is_repeated() ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f);
        if (std::string bad = InvalidUtf8Field(sub, at(i)); !bad.empty()) return bad;
      }
    }
  }
  return "";
}

std::string ToLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Fully known dims of a type, or nullopt.
std::optional<Dims> KnownDims(const onnx::TypeProto& t) {
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return std::nullopt;
  Dims d;
  for (const auto& dim : t.tensor_type().shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0) return std::nullopt;
    d.push_back(dim.dim_value());
  }
  return d;
}

// Inputs of ops that hold weights in weight-free exports (fixed-shape graphs
// only; see docs/graph-loading.md).
const std::map<std::string, std::vector<int>>& WeightSlots() {
  static const std::map<std::string, std::vector<int>> kSlots = {
      {"Conv", {1, 2}},          {"ConvTranspose", {1, 2}},
      {"Gemm", {1, 2}},          {"MatMul", {1}},
      {"BatchNormalization", {1, 2, 3, 4}},
      {"InstanceNormalization", {1, 2}},
      {"LayerNormalization", {1, 2}},
      {"GroupNormalization", {1, 2}},
      {"LSTM", {1, 2, 3}},       {"GRU", {1, 2, 3}},
      {"RNN", {1, 2, 3}},        {"Gather", {0}},
      {"PRelu", {1}},
  };
  return kSlots;
}

// The words a message uses for what the user sets: the command line's flags
// or the HTTP API's fields (LoadOptions::wording).
class Words {
 public:
  explicit Words(LoadOptions::Wording w) : api_(w == LoadOptions::Wording::kApi) {}
  // A symbolic dimension given by the user: "--dim seq" / "dims.seq".
  std::string Dim(const std::string& name) const { return api_ ? "dims." + name : "--dim " + name; }
  // How to give it a value: "--dim seq=N" / "\"dims\": {\"seq\": N}".
  std::string SetDim(const std::string& name) const {
    return api_ ? "\"dims\": {\"" + name + "\": N}" : "--dim " + name + "=N";
  }
  std::string Batch() const { return api_ ? "\"batch\"" : "--batch"; }
  std::string BatchIs(int64_t b) const {
    return api_ ? "\"batch\": " + std::to_string(b) : "--batch " + std::to_string(b);
  }
  std::string DimsField() const { return api_ ? "\"dims\"" : "--dim"; }
  std::string SetEachDim() const { return api_ ? "set each in \"dims\"" : "set each with --dim NAME=VALUE"; }
  // Which setting a limit is (load_limits.h).
  std::string Limit(LoadFailure f) const {
    if (!api_) return f == LoadFailure::kTimeout ? "--max-seconds" : "gpucast's limit for one graph";
    switch (f) {
      case LoadFailure::kTooManyNodes: return "the service's limit, gpucast serve --max-graph-nodes";
      case LoadFailure::kTooManyEntries: return "the service's limit, gpucast serve --max-graph-entries";
      case LoadFailure::kTooDeep: return "the service's limit, gpucast serve --max-subgraph-depth";
      case LoadFailure::kTooLarge: return "the service's limit, gpucast serve --max-graph-bytes";
      case LoadFailure::kTimeout: return "the service's limit, gpucast serve --max-analysis-seconds";
      default: return "the service's limit";
    }
  }

 private:
  bool api_;
};

using Clock = std::chrono::steady_clock;

class Loader {
 public:
  Loader(std::string file, const LoadOptions& opts, Clock::time_point deadline)
      : file_(std::move(file)), opts_(opts), words_(opts.wording), deadline_(deadline) {}

  // *why: kNotAModel, kTimeout or kInvalid when it fails.
  Result<Graph> Load(const std::string& filtered, LoadFailure* why) {
    *why = LoadFailure::kNotAModel;
    if (!model_.ParseFromString(filtered)) return Err("not an ONNX model (malformed protobuf)");
    if (!model_.has_graph()) return Err("not an ONNX model (no graph)");
    *why = LoadFailure::kInvalid;
    if (std::string bad = InvalidUtf8Field(model_, ""); !bad.empty()) return Err(bad);
    // Functions' attribute defaults are an unknown field to libonnx 1.12 (onnx_functions.h).
    for (int i = 0; i < model_.functions_size(); ++i) {
      auto defaults = FunctionAttributeDefaults(model_.functions(i));
      for (size_t j = 0; defaults.ok() && j < defaults->size(); ++j) {
        const std::string path = "functions[" + std::to_string(i) + "].attribute_proto[" + std::to_string(j) + "]";
        if (std::string bad = InvalidUtf8Field((*defaults)[j], path); !bad.empty()) return Err(bad);
      }
    }
    Result<Graph> g = LoadParsed();
    if (!g.ok() && limit_why_ != LoadFailure::kNone) *why = limit_why_;
    if (!g.ok() && timed_out_) *why = LoadFailure::kTimeout;
    if (g.ok()) *why = LoadFailure::kNone;
    return g;
  }

 private:
  Result<Graph> LoadParsed() {
    onnx::GraphProto& g = *model_.mutable_graph();
    if (g.node_size() == 0) return Err("graph has no nodes");
    RETURN_IF_ERROR(ReadOpset());
    for (int i = 0; i < g.node_size(); ++i) {
      auto* n = g.mutable_node(i);
      if (n->name().empty()) n->set_name(n->op_type() + "_" + std::to_string(i));
    }
    identity_of_param_ = IdentityOfParameterOutputs(g);  // before the inliner adds its own Identity nodes
    RETURN_IF_ERROR(InlineModelFunctions());
    // Calls of functions with empty bodies leave nothing to cost: refused as a graph without nodes is.
    if (g.node_size() == 0) return Err("graph has no nodes once its model-local functions are inlined");
    RETURN_IF_ERROR(CheckSlots());
    DropUnread();
    RETURN_IF_ERROR(CheckNamesAndSort());
    RETURN_IF_ERROR(CheckDeadline());
    RETURN_IF_ERROR(CheckInitializers());
    RETURN_IF_ERROR(ResolveInputDims());
    RETURN_IF_ERROR(CheckDeadline());
    MarkParams();
    NoteUnanalysed();
    InferAndFold();
    RETURN_IF_ERROR(inference_error_);
    RETURN_IF_ERROR(CheckDeadline());
    ASSIGN_OR_RETURN(Graph graph, Build());
    if (std::string w = EvalModeExportWarning(graph); !w.empty()) graph.warnings.push_back(file_ + ": " + w);
    return graph;
  }

  Status Err(const std::string& m) const { return Status::Error(file_ + ": " + m); }
  // An error once the time limit has passed (checked between and inside the steps).
  Status CheckDeadline() {
    if (timed_out_ || Clock::now() <= deadline_) return timed_out_ ? DeadlineError() : Status::Ok();
    timed_out_ = true;
    return DeadlineError();
  }
  Status DeadlineError() const {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", opts_.limits.max_seconds);
    return Err(std::string("analysis stopped: it took longer than ") + secs + " s (" +
               words_.Limit(LoadFailure::kTimeout) + ")");
  }
  std::string Ref(const onnx::NodeProto& n) const { return NodeRef(n); }
  void Warn(const std::string& m) { graph_.warnings.push_back(file_ + ": " + m); }

  Status ReadOpset() {
    bool found = false;
    for (const auto& o : model_.opset_import()) {
      if (IsDefaultDomain(o.domain())) {
        opset_ = o.version();
        found = true;
      }
    }
    if (!found) return Err("model declares no opset for the default ONNX domain");
    if (opset_ < 1) return Err("invalid opset " + std::to_string(opset_) + " for the default domain");
    const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto it = ranges.find(onnx::ONNX_DOMAIN);
    int64_t max_known = it == ranges.end() ? opset_ : it->second.second;
    infer_opset_ = std::min(opset_, max_known);
    if (opset_ > max_known) {
      Warn("opset " + std::to_string(opset_) + " is newer than the ONNX schemas of this build know (up to " +
           std::to_string(max_known) + "); shapes were inferred with opset " +
           std::to_string(max_known) + " rules and may be incomplete");
    }
    return Status::Ok();
  }

  // Calls of model-local functions become their bodies (onnx_functions.h),
  // before anything reads the nodes. A bound passed is said with its setting.
  Status InlineModelFunctions() {
    if (model_.functions_size() == 0) return Status::Ok();
    LoadFailure why = LoadFailure::kInvalid;
    Result<InlineResult> r = InlineFunctions(&model_, opts_.limits, &why);
    if (r.ok()) return Status::Ok();
    if (IsLimit(why)) limit_why_ = why;
    // The node limit is a setting of the service; function nesting is not (the
    // depth setting is --max-subgraph-depth's, for If/Loop/Scan bodies).
    if (why == LoadFailure::kTooManyNodes || why == LoadFailure::kTooLarge) return Err(r.message() + " (" + words_.Limit(why) + ")");
    return Err(r.message());
  }

  // Initializers and graph inputs that no node reads and that name no graph
  // output are dropped before the steps that keep a record per tensor: a few
  // MB of header-only initializers or input declarations (hundreds of
  // thousands, within max_entries) must cost one hash lookup each, not
  // seconds. Nothing is costed from them: a tensor no node reads has no cost,
  // and parameters are counted by the nodes that read them. Dropped inputs are
  // said in a warning (an input the exporter kept but the graph ignores).
  void DropUnread() {
    onnx::GraphProto& g = *model_.mutable_graph();
    // Names read by a node, also inside If/Loop/Scan bodies (outer-scope
    // references; the wire filter bounded their depth and count).
    std::unordered_set<std::string_view> read;
    ForEachRead(g, [&read](const std::string& in) { read.insert(in); });
    for (const auto& o : g.output()) read.insert(o.name());
    auto* inputs = g.mutable_input();
    int kept = 0;
    std::string first_dropped;
    for (int i = 0; i < inputs->size(); ++i) {
      if (!read.count(inputs->Get(i).name())) {
        if (first_dropped.empty()) first_dropped = inputs->Get(i).name();
        dropped_.insert(inputs->Get(i).name());
        continue;
      }
      if (kept != i) inputs->SwapElements(kept, i);
      ++kept;
    }
    const int dropped_inputs = inputs->size() - kept;
    if (dropped_inputs > 0) inputs->DeleteSubrange(kept, dropped_inputs);
    for (const auto& i : g.input()) read.insert(i.name());  // an initializer may name a kept input
    auto* inits = g.mutable_initializer();
    kept = 0;
    for (int i = 0; i < inits->size(); ++i) {
      if (!read.count(inits->Get(i).name())) {
        dropped_.insert(inits->Get(i).name());
        continue;
      }
      if (kept != i) inits->SwapElements(kept, i);
      ++kept;
    }
    if (kept < inits->size()) inits->DeleteSubrange(kept, inits->size() - kept);
    if (dropped_inputs > 0) {
      Warn(std::to_string(dropped_inputs) + " graph input(s) that no node reads were ignored (first: '" +
           first_dropped + "')");
    }
  }

  // Unique producers, no dangling inputs, topological order (stable).
  Status CheckNamesAndSort() {
    onnx::GraphProto& g = *model_.mutable_graph();
    std::unordered_set<std::string> inputs;  // graph inputs and initializers
    for (const auto& i : g.input()) {
      if (i.name().empty()) return Err("a graph input has an empty name");
      inputs.insert(i.name());
    }
    for (const auto& t : g.initializer()) inputs.insert(t.name());
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < g.node_size(); ++i) {
      for (const auto& o : g.node(i).output()) {
        if (o.empty()) continue;
        if (inputs.count(o)) {
          return Err(Ref(g.node(i)) + ": output '" + o + "' is already a graph input or initializer");
        }
        auto [it, fresh] = producer.emplace(o, i);
        if (!fresh) {
          return Err(Ref(g.node(i)) + ": output '" + o + "' is already produced by " +
                     Ref(g.node(it->second)));
        }
      }
    }
    std::vector<std::vector<int>> users(g.node_size());
    std::vector<int> pending(g.node_size(), 0);
    for (int i = 0; i < g.node_size(); ++i) {
      std::unordered_set<int> preds;
      for (const auto& in : g.node(i).input()) {
        if (in.empty() || inputs.count(in)) continue;
        auto it = producer.find(in);
        if (it == producer.end()) {
          return Err(Ref(g.node(i)) + ": input '" + in +
                     "' is not produced by any node, initializer or graph input");
        }
        preds.insert(it->second);
      }
      for (int p : preds) users[p].push_back(i);
      pending[i] = static_cast<int>(preds.size());
    }
    for (const auto& o : g.output()) {
      if (!inputs.count(o.name()) && !producer.count(o.name())) {
        return Err("graph output '" + o.name() +
                   "' is not produced by any node, initializer or graph input");
      }
    }
    // Kahn's algorithm, always taking the lowest ready index: keeps file order when valid.
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int i = 0; i < g.node_size(); ++i) {
      if (pending[i] == 0) ready.push(i);
    }
    std::vector<int> order;
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      order.push_back(i);
      for (int u : users[i]) {
        if (--pending[u] == 0) ready.push(u);
      }
    }
    if (static_cast<int>(order.size()) != g.node_size()) {
      // Walk back through unsorted producers until a node repeats: it is on a cycle.
      int i = 0;
      while (pending[i] == 0) ++i;
      std::vector<bool> seen(g.node_size(), false);
      while (!seen[i]) {
        seen[i] = true;
        for (const auto& in : g.node(i).input()) {
          auto it = producer.find(in);
          if (it != producer.end() && !inputs.count(in) && pending[it->second] > 0) {
            i = it->second;
            break;
          }
        }
      }
      return Err("graph has a cycle through " + Ref(g.node(i)));
    }
    google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
    for (int i : order) *sorted.Add() = g.node(i);
    g.mutable_node()->Swap(&sorted);
    return Status::Ok();
  }

  Status CheckInitializers() {
    std::unordered_set<std::string> seen;
    for (const auto& t : model_.graph().initializer()) {
      if (!seen.insert(t.name()).second) return Err("initializer '" + t.name() + "' is listed twice");
      initializers_.insert(t.name());
      for (int64_t d : t.dims()) {
        if (d < 0) return Err("initializer '" + t.name() + "' has negative dimension " + std::to_string(d));
      }
      if (!CheckedProduct(Dims(t.dims().begin(), t.dims().end())).has_value() ||
          *CheckedProduct(Dims(t.dims().begin(), t.dims().end())) > kMaxElements) {
        return Err("initializer '" + t.name() + "' with shape " +
                   DimsStr(Dims(t.dims().begin(), t.dims().end())) + " has more than 2^62 elements");
      }
    }
    return Status::Ok();
  }

  // Finds the data inputs and writes concrete dims into their types.
  Status ResolveInputDims() {
    if (opts_.batch < 1) return Err("batch must be >= 1, got " + std::to_string(opts_.batch));
    for (const auto& [name, v] : opts_.dims) {
      if (v < 1) return Err(words_.Dim(name) + "=" + std::to_string(v) + ": value must be >= 1");
    }
    onnx::GraphProto& g = *model_.mutable_graph();
    std::vector<onnx::ValueInfoProto*> candidates;
    std::unordered_set<std::string> seen;
    bool symbolic = false;
    for (auto& in : *g.mutable_input()) {
      if (!seen.insert(in.name()).second) return Err("graph input '" + in.name() + "' is listed twice");
      if (initializers_.count(in.name())) continue;
      if (!in.type().has_tensor_type()) return Err("input '" + in.name() + "' is not a tensor");
      if (!in.type().tensor_type().has_shape()) return Err("input '" + in.name() + "' has no shape");
      for (int k = 0; k < in.type().tensor_type().shape().dim_size(); ++k) {
        const auto& d = in.type().tensor_type().shape().dim(k);
        if (!d.has_dim_value()) {
          symbolic = true;
        } else if (d.dim_value() < 1) {
          return Err("input '" + in.name() + "' has dimension " + std::to_string(k) + " = " +
                     std::to_string(d.dim_value()) + "; dimensions must be >= 1");
        }
      }
      candidates.push_back(&in);
    }
    if (symbolic) {
      RETURN_IF_ERROR(ResolveSymbolic(candidates));
    } else {
      RETURN_IF_ERROR(ResolveFixed(candidates));
    }
    for (auto* in : candidates) {
      Dims d;
      for (const auto& dim : in->type().tensor_type().shape().dim()) d.push_back(dim.dim_value());
      auto n = CheckedProduct(d);
      if (!n || *n > kMaxElements) {
        return Err("input '" + in->name() + "' with shape " + DimsStr(d) + " has more than 2^62 elements; reduce " +
                   words_.Batch() + " or " + words_.DimsField());
      }
    }
    return Status::Ok();
  }

  Status ResolveSymbolic(const std::vector<onnx::ValueInfoProto*>& candidates) {
    // Batch dims: a dim whose name contains "batch", else dim 0 if symbolic. When some input
    // names its batch, an input without such a dim has none (a full-graph GNN's edge list
    // [edges, 2] beside node features [batch, features]: its dim 0 is not the batch).
    auto names_batch = [](const onnx::ValueInfoProto* in) {
      for (const auto& d : in->type().tensor_type().shape().dim()) {
        if (!d.has_dim_value() && ToLower(d.dim_param()).find("batch") != std::string::npos) return true;
      }
      return false;
    };
    const bool some_named = std::any_of(candidates.begin(), candidates.end(), names_batch);
    std::set<std::string> batch_names, all_names;
    std::map<const onnx::ValueInfoProto*, std::vector<bool>> is_batch;
    for (auto* in : candidates) {
      const auto& shape = in->type().tensor_type().shape();
      bool has_symbolic = false, named = false;
      std::vector<bool> b(shape.dim_size(), false);
      for (int k = 0; k < shape.dim_size(); ++k) {
        const auto& d = shape.dim(k);
        if (d.has_dim_value()) continue;
        has_symbolic = true;
        all_names.insert(d.dim_param());
        if (ToLower(d.dim_param()).find("batch") != std::string::npos) b[k] = named = true;
      }
      if (!has_symbolic) continue;
      if (!named && !some_named && !shape.dim(0).has_dim_value()) b[0] = true;
      for (int k = 0; k < shape.dim_size(); ++k) {
        if (b[k] && !shape.dim(k).dim_param().empty()) batch_names.insert(shape.dim(k).dim_param());
      }
      is_batch[in] = b;
      data_inputs_.push_back(in->name());
    }
    all_names.erase("");
    for (const auto& [name, v] : opts_.dims) {
      if (batch_names.count(name)) {
        return Err(words_.Dim(name) + ": '" + name + "' is the batch dimension; set it with " + words_.Batch());
      }
      if (!all_names.count(name)) {
        std::string have;
        for (const auto& a : all_names) have += (have.empty() ? "" : ", ") + a;
        return Err(words_.Dim(name) + ": no graph input has a dimension named '" + name +
                   "' (symbolic dimensions: " + have + ")");
      }
    }
    std::string missing, first_missing;
    for (auto* in : candidates) {
      auto it = is_batch.find(in);
      if (it == is_batch.end()) continue;
      auto* shape = in->mutable_type()->mutable_tensor_type()->mutable_shape();
      for (int k = 0; k < shape->dim_size(); ++k) {
        auto* d = shape->mutable_dim(k);
        if (d->has_dim_value()) continue;
        std::string name = d->dim_param();
        if (it->second[k] || batch_names.count(name)) {
          d->set_dim_value(opts_.batch);
        } else if (name.empty()) {
          return Err("input '" + in->name() + "' dim " + std::to_string(k) +
                     " is dynamic but has no name; re-export with a named dynamic axis");
        } else if (auto v = opts_.dims.find(name); v != opts_.dims.end()) {
          d->set_dim_value(v->second);
        } else {
          if (first_missing.empty()) first_missing = name;
          missing += (missing.empty() ? "'" : ", '") + name + "' (input '" + in->name() + "' dim " +
                     std::to_string(k) + ")";
        }
      }
    }
    if (!missing.empty()) {
      return Err("symbolic dimensions without a value: " + missing + "; " + words_.SetEachDim() + ", e.g. " +
                 words_.SetDim(first_missing));
    }
    return Status::Ok();
  }

  // Whether every use of `name` is a weight slot (through Identity/Cast).
  // REQUIRES: IndexConsumers() ran. Each node has one producer per input, so
  // the walk from one name visits each node at most once.
  bool UsedOnlyAsWeight(const std::string& name, int rank, int depth = 0) const {
    if (depth > 8) return false;
    auto uses = consumers_.find(name);
    if (uses == consumers_.end()) return true;
    for (const auto& [node, k] : uses->second) {
      const onnx::NodeProto& n = model_.graph().node(node);
      if (!IsDefaultDomain(n.domain())) return false;
      const std::string& op = n.op_type();
      auto it = WeightSlots().find(op);
      bool slot = it != WeightSlots().end() && std::count(it->second.begin(), it->second.end(), k) > 0;
      bool vector_operand = rank <= 1 && (op == "Add" || op == "Sub" || op == "Mul" || op == "Div");
      bool pass = (op == "Identity" || op == "Cast") && n.output_size() == 1 &&
                  UsedOnlyAsWeight(n.output(0), rank, depth + 1);
      if (!slot && !vector_operand && !pass) return false;
    }
    return true;
  }

  // consumers_: every (node, input slot) that reads a name, in graph order.
  void IndexConsumers() {
    consumers_.clear();
    const auto& g = model_.graph();
    for (int i = 0; i < g.node_size(); ++i) {
      for (int k = 0; k < g.node(i).input_size(); ++k) consumers_[g.node(i).input(k)].emplace_back(i, k);
    }
  }

  Status ResolveFixed(const std::vector<onnx::ValueInfoProto*>& candidates) {
    if (!opts_.dims.empty()) {
      return Err(words_.Dim(opts_.dims.begin()->first) + ": no graph input has a dimension named '" +
                 opts_.dims.begin()->first + "' (the graph has no symbolic dimensions)");
    }
    IndexConsumers();
    // The first data input of rank >= 1 holds the batch the graph was exported
    // at (exporters keep the forward's argument order); the others may have
    // other leading dims (a recommender's flat lookup indices: bags x lookups).
    const onnx::ValueInfoProto* batch_input = nullptr;
    std::string others;  // data inputs whose dim 0 is not the batch
    int n_others = 0;
    for (auto* in : candidates) {
      RETURN_IF_ERROR(CheckDeadline());
      int32_t et = in->type().tensor_type().elem_type();
      int rank = in->type().tensor_type().shape().dim_size();
      if (IsFloatElemType(et) && UsedOnlyAsWeight(in->name(), rank)) {
        weight_inputs_.insert(in->name());
        continue;
      }
      data_inputs_.push_back(in->name());
      if (rank == 0) continue;
      int64_t b = in->type().tensor_type().shape().dim(0).dim_value();
      if (!batch_input) {
        batch_input = in;
        if (b != opts_.batch) {
          return Err("input '" + in->name() + "' has a fixed batch dimension " + std::to_string(b) +
                     "; re-export with a dynamic batch axis or use " + words_.BatchIs(b));
        }
      } else if (b != opts_.batch && ++n_others <= 3) {
        others += (others.empty() ? "'" : ", '") + in->name() + "' (" + std::to_string(b) + ")";
      }
    }
    if (n_others > 0) {
      Warn(std::to_string(n_others) + " data input(s) have a leading dimension other than the batch " +
           std::to_string(opts_.batch) + " of input '" + batch_input->name() + "': " + others +
           (n_others > 3 ? ", ..." : "") + "; the graph's shapes are fixed, so they are costed as exported");
    }
    return Status::Ok();
  }

  // The parameter tensors a metadata entry names (kBuffersMetadataKey: the model's buffers,
  // TensorInfo::is_buffer; kFrozenMetadataKey: parameters with requires_grad off, is_frozen;
  // kSparseGradMetadataKey: embedding tables with sparse gradients, sparse_table), one
  // name per line, as gpucast-export writes them from the module. A name that is not a float
  // parameter tensor is ignored, and counted in one warning per entry (the file was edited, or
  // the model's state names changed), unless it was dropped as unread (DropUnread warns of those).
  void MarkNamed(std::string_view key, std::unordered_set<std::string>* marked) {
    int64_t unknown = 0;
    std::string first_unknown;
    for (const auto& kv : model_.metadata_props()) {
      if (kv.key() != key) continue;
      std::string_view rest = kv.value();
      while (!rest.empty()) {
        const size_t end = std::min(rest.find('\n'), rest.size());
        const std::string name(rest.substr(0, end));
        rest.remove_prefix(std::min(end + 1, rest.size()));
        if (name.empty()) continue;
        if (params_.count(name)) {
          marked->insert(name);
        } else if (!dropped_.count(name) && unknown++ == 0) {
          first_unknown = name;
        }
      }
    }
    if (unknown > 0)
      Warn(std::to_string(unknown) + " name(s) of the metadata entry '" + std::string(key) +
           "' are not float parameter tensors of the graph (first: '" + first_unknown + "'): ignored");
  }

  void MarkParams() {
    const auto& g = model_.graph();
    for (const auto& t : g.initializer()) {
      if (IsFloatElemType(t.data_type())) params_.insert(t.name());
    }
    std::unordered_set<std::string> data(data_inputs_.begin(), data_inputs_.end());
    for (const auto& in : g.input()) {
      if (initializers_.count(in.name()) || data.count(in.name())) continue;
      if (IsFloatElemType(in.type().tensor_type().elem_type())) params_.insert(in.name());
    }
    MarkNamed(kBuffersMetadataKey, &buffers_);
    MarkNamed(kFrozenMetadataKey, &frozen_);
    std::unordered_set<std::string> sparse;
    MarkNamed(kSparseGradMetadataKey, &sparse);
    for (const std::string& name : sparse) sparse_table_[name] = name;
    for (const auto& n : g.node()) {
      bool cast_to_float = n.op_type() == "Cast";
      for (const auto& a : n.attribute()) {
        if (a.name() == "to") cast_to_float = cast_to_float && IsFloatElemType(static_cast<int32_t>(a.i()));
      }
      if (IsDefaultDomain(n.domain()) && (n.op_type() == "Identity" || cast_to_float) &&
          n.input_size() >= 1 && params_.count(n.input(0)) && n.output_size() >= 1) {
        params_.insert(n.output(0));
        if (buffers_.count(n.input(0))) buffers_.insert(n.output(0));
        if (frozen_.count(n.input(0))) frozen_.insert(n.output(0));
        if (auto s = sparse_table_.find(n.input(0)); s != sparse_table_.end()) {
          const std::string table = s->second;  // (the insert below may rehash)
          sparse_table_[n.output(0)] = table;
        }
        if (n.op_type() == "Identity" && identity_of_param_.count(n.output(0))) own_params_.insert(n.output(0));
      }
    }
    tied_to_ = FindTransposedCopies(g, params_);
    if (!tied_to_.empty()) {
      // In file order, so the message names the same pair every run.
      const onnx::TensorProto* first = nullptr;
      for (const auto& t : g.initializer())
        if (tied_to_.count(t.name())) {
          first = &t;
          break;
        }
      Warn(std::to_string(tied_to_.size()) + " parameter(s) hold the transpose of another (a tied weight whose "
           "Transpose the exporter folded into a copy; first '" + first->name() + "' of '" + tied_to_.at(first->name()) +
           "'): each is counted as the parameter it copies");
    }
  }

  // torch's repeat_interleave Loops (torch_loops.h) whose absorbed nodes nothing else reads:
  // the Loop's sequence only by the ConcatFromSequence, SequenceEmpty's only by the Loop, the two
  // SplitToSequence outputs only inside the Loop's body (no main-graph node, no graph output);
  // x and the counts are defined before the Loop. REQUIRES: the graph is sorted.
  void MatchRepeatInterleaves() {
    const auto& g = model_.graph();
    if (std::none_of(g.node().begin(), g.node().end(),
                     [](const onnx::NodeProto& n) { return n.op_type() == "ConcatFromSequence"; }))
      return;  // no index of the whole graph for the graphs without one
    std::unordered_map<std::string_view, const onnx::NodeProto*> producer;
    std::unordered_map<std::string_view, int> readers;
    std::unordered_map<std::string_view, int> position;
    for (int i = 0; i < g.node_size(); ++i) {
      for (const auto& in : g.node(i).input()) ++readers[in];
      for (const auto& o : g.node(i).output()) {
        producer.emplace(o, &g.node(i));
        position.emplace(o, i);
      }
    }
    for (const auto& o : g.output()) readers[o.name()] += 2;  // a graph output is never absorbed
    auto find = [&](const std::string& name) -> const onnx::NodeProto* {
      auto it = producer.find(name);
      return it == producer.end() ? nullptr : it->second;
    };
    auto count = [&](const std::string& name) {
      auto it = readers.find(name);
      return it == readers.end() ? 0 : it->second;
    };
    for (const auto& n : g.node()) {
      if (n.op_type() != "ConcatFromSequence") continue;
      auto m = MatchRepeatInterleaveLoop(n, find);
      if (!m) continue;
      const std::string& loop_out = m->absorbed[0];
      auto before_loop = [&](const std::string& name) {
        auto it = position.find(name);
        return it == position.end() || it->second < position.at(loop_out);  // inputs, initializers: before
      };
      if (count(m->absorbed[0]) != 1 || count(m->absorbed[1]) != 1 || count(m->absorbed[2]) != 0 ||
          count(m->absorbed[3]) != 0 || !before_loop(m->input) || !before_loop(m->repeats))
        continue;
      for (const std::string& a : m->absorbed) absorbed_.insert(a);
      repeats_.emplace(m->output, std::move(*m));
    }
  }

  void NoteUnanalysed() {
    std::map<std::string, int> no_schema;
    std::map<std::string, int64_t> domain_versions;
    for (const auto& o : model_.opset_import()) domain_versions[o.domain()] = o.version();
    // Names defined before the node at hand (graph order is topological here): an EmbeddingBag
    // Loop's table and ids must be, so the node it becomes reads nothing later or its own output.
    std::unordered_set<std::string_view> defined;
    for (const auto& i : model_.graph().input()) defined.insert(i.name());
    for (const auto& t : model_.graph().initializer()) defined.insert(t.name());
    MatchRepeatInterleaves();
    for (const auto& n : model_.graph().node()) {
      std::string domain = IsDefaultDomain(n.domain()) ? "" : n.domain();
      int64_t v = domain.empty() ? infer_opset_
                  : domain_versions.count(domain) ? domain_versions[domain] : INT_MAX;
      if (!FilledByHand(n) && !FindOpSchema(n.op_type(), static_cast<int>(std::min<int64_t>(v, INT_MAX)), domain)) {
        ++no_schema[OpName(n)];
      }
      auto bag = MatchEmbeddingBagLoop(n);
      if (n.output_size() == 1 && absorbed_.count(n.output(0))) {
        // part of a repeat_interleave read as one copy
      } else if (bag && defined.count(bag->table) && defined.count(bag->indices) &&
                 (bag->weights.empty() || defined.count(bag->weights))) {
        bags_.emplace(bag->output, std::move(*bag));  // read as the embedding bag it is
      } else if (!IsIf(n) && !IsLoop(n)) {  // read as a branch / iterations once they fold (InferAndFold)
        WarnIfSubgraphs(n);
      }
      for (const auto& o : n.output()) defined.insert(o);
    }
    for (const auto& [op, count] : no_schema) {
      Warn("no ONNX schema for op '" + op + "' (" + std::to_string(count) +
           (count == 1 ? " node" : " nodes") + "); its outputs' shapes may be unknown");
    }
  }

  static bool IsIf(const onnx::NodeProto& n) { return IsDefaultDomain(n.domain()) && n.op_type() == "If"; }

  void WarnIfSubgraphs(const onnx::NodeProto& n) {
    for (const auto& a : n.attribute()) {
      if (a.has_g() || a.graphs_size() > 0) {
        Warn(Ref(n) + " has subgraphs; they are kept inside the node and not analysed");
        return;
      }
    }
  }

  // The If at `i` replaced by the branch its folded condition takes (folded_if.h); false, with
  // the subgraph warning, when its condition is not a folded value or the branch cannot stand in.
  bool InlineFoldedIf(int i) {
    auto* nodes = model_.mutable_graph()->mutable_node();
    const onnx::NodeProto& n = nodes->Get(i);
    auto cond = n.input_size() == 1 ? values_.find(n.input(0)) : values_.end();
    if (cond == values_.end() || cond->second.IsReal() || cond->second.values.size() != 1) {
      WarnIfSubgraphs(n);
      return false;
    }
    CollectNames();
    const bool taken = cond->second.values[0] != 0;
    auto branch = TakenBranch(n, taken, [&](const std::string& name) { return names_.count(name) > 0; });
    if (!branch) {
      WarnIfSubgraphs(n);
      return false;
    }
    if (inlined_ifs_++ == 0)
      first_inlined_if_ = Ref(n) + ": condition " + (taken ? "true, the then" : "false, the else") + " branch's " +
                          std::to_string(branch->size()) + (branch->size() == 1 ? " node" : " nodes");
    Splice(i, &*branch);
    return true;
  }

  static bool IsLoop(const onnx::NodeProto& n) { return IsDefaultDomain(n.domain()) && n.op_type() == "Loop"; }

  // Every name of the graph, once: what a renamed subgraph name must avoid.
  void CollectNames() {
    if (!names_.empty()) return;
    for (const auto& in : model_.graph().input()) names_.insert(in.name());
    for (const auto& t : model_.graph().initializer()) names_.insert(t.name());
    for (const auto& m : model_.graph().node()) {
      for (const auto& o : m.output()) names_.insert(o);
      NoteEmptyList(m);
    }
  }
  void NoteEmptyList(const onnx::NodeProto& m) {
    if (IsDefaultDomain(m.domain()) && m.op_type() == "SequenceEmpty" && m.output_size() == 1)
      empty_lists_.insert(m.output(0));
  }

  // Puts `nodes` in the place of the node at `i` (deleted); the nodes after it keep their
  // addresses (views into them stay valid).
  void Splice(int i, std::vector<onnx::NodeProto>* nodes) {
    auto* all = model_.mutable_graph()->mutable_node();
    for (const auto& m : *nodes) {
      for (const auto& o : m.output()) names_.insert(o);
      NoteEmptyList(m);
    }
    std::vector<onnx::NodeProto*> tail(static_cast<size_t>(all->size() - i));
    all->ExtractSubrange(i, all->size() - i, tail.data());
    delete tail[0];
    for (auto& m : *nodes) *all->Add() = std::move(m);
    for (size_t k = 1; k < tail.size(); ++k) all->AddAllocated(tail[k]);
  }

  // How often `name` is read by the nodes of the main graph (inside their subgraphs too) and
  // the graph's outputs.
  int Reads(const std::string& name) const {
    int count = 0;
    ForEachRead(model_.graph(), [&](const std::string& in) { count += in == name; });
    for (const auto& o : model_.graph().output()) count += o.name() == name;
    return count;
  }

  // The Loop at `i` written out as its iterations (unrolled_loop.h) when its trip count is a
  // folded value; false, with the subgraph warning, when it is not, the iterations would pass
  // the node limit, or the Loop cannot be written out. A list the body appends to becomes a
  // Concat of its elements in its ConcatFromSequence's place (Unsqueezes first for new_axis),
  // its SequenceEmpty absorbed.
  bool UnrollFoldedLoop(int i) {
    auto* nodes = model_.mutable_graph()->mutable_node();
    const onnx::NodeProto& n = nodes->Get(i);
    if (n.output_size() >= 1 && (bags_.count(n.output(0)) || absorbed_.count(n.output(0)))) return false;
    auto trips = n.input_size() >= 1 ? values_.find(n.input(0)) : values_.end();
    if (trips == values_.end() || trips->second.IsReal() || trips->second.values.size() != 1 ||
        trips->second.values[0] < 1) {
      WarnIfSubgraphs(n);
      return false;
    }
    auto is_true = [&](const std::string& name) {
      auto v = values_.find(name);
      return v != values_.end() && !v->second.IsReal() && v->second.values.size() == 1 && v->second.values[0] != 0;
    };
    if (n.input_size() >= 2 && !n.input(1).empty() && !is_true(n.input(1))) {  // a while on the data
      WarnIfSubgraphs(n);
      return false;
    }
    const int64_t count = trips->second.values[0];
    int64_t body_nodes = 0;
    for (const auto& a : n.attribute())
      if (a.name() == "body" && a.has_g()) body_nodes = a.g().node_size();
    if (count > opts_.limits.max_nodes || count * (body_nodes + 2) + nodes->size() > opts_.limits.max_nodes) {
      Warn(Ref(n) + " runs " + std::to_string(count) + " iterations of " + std::to_string(body_nodes) +
           " nodes: written out they would pass the limit of " + std::to_string(opts_.limits.max_nodes) +
           " nodes, so its subgraph is not analysed");
      return false;
    }
    CollectNames();
    LoopContext ctx;
    ctx.opset = opset_;
    ctx.taken = [&](const std::string& name) { return names_.count(name) > 0; };
    ctx.is_true = is_true;
    ctx.is_empty_sequence = [&](const std::string& name) { return empty_lists_.count(name) > 0; };
    std::optional<UnrolledLoop> unrolled = UnrollLoop(n, count, ctx);
    // Each list: read once, by a ConcatFromSequence after the Loop (ListConcat: the nodes for it);
    // its SequenceEmpty read only by the Loop.
    std::vector<int> concats;
    std::vector<std::vector<onnx::NodeProto>> lists;
    std::vector<size_t> later;  // lists read otherwise (ListReadsKnown): kept in lists_
    for (size_t s = 0; unrolled && s < unrolled->sequences.size(); ++s) {
      const UnrolledSequence& seq = unrolled->sequences[s];
      int at = -1;
      for (int k = i + 1; k < nodes->size() && at < 0; ++k)
        if (nodes->Get(k).op_type() == "ConcatFromSequence" && nodes->Get(k).input_size() == 1 &&
            nodes->Get(k).input(0) == seq.output)
          at = k;
      auto list = at < 0 || Reads(seq.output) != 1 ? std::nullopt : ListConcat(nodes->Get(at), seq.elements, opset_, ctx.taken);
      if (list) {
        concats.push_back(at);
        lists.push_back(std::move(*list));
      } else if (ListReadsKnown(seq.output, i)) {
        later.push_back(s);  // read by ReadKnownList as the nodes that read it come
      } else {
        unrolled.reset();
      }
    }
    for (int j = 2; unrolled && j < n.input_size(); ++j)
      if (empty_lists_.count(n.input(j)) && Reads(n.input(j)) != 1) unrolled.reset();
    if (!unrolled) {
      WarnIfSubgraphs(n);
      return false;
    }
    if (unrolled_loops_++ == 0)
      first_unrolled_loop_ = Ref(n) + ": " + std::to_string(count) + " iterations of " + std::to_string(body_nodes) +
                             (body_nodes == 1 ? " node" : " nodes");
    // The lists' Unsqueezes go with the iterations; each Concat takes its ConcatFromSequence's place.
    for (size_t s = 0; s < lists.size(); ++s) {
      *nodes->Mutable(concats[s]) = std::move(lists[s].back());
      lists[s].pop_back();
      for (auto& m : lists[s]) unrolled->nodes.push_back(std::move(m));
    }
    for (int j = 2; j < n.input_size(); ++j)
      if (empty_lists_.count(n.input(j))) absorbed_.insert(n.input(j));
    for (size_t s : later) lists_[unrolled->sequences[s].output] = unrolled->sequences[s].elements;
    Splice(i, &unrolled->nodes);
    return true;
  }

  // Whether every read of the list `name` an unrolled Loop at `after` makes, and of the longer
  // lists SequenceInserts make of it, is one ReadKnownList reads: by a main-graph node after
  // `after`, as its first input, that is a SequenceInsert without a position, a SequenceAt or a
  // ConcatFromSequence; nothing else, no subgraph and no graph output reads any of them. torch's
  // export of torch.tensor_split (MViT's pooling splits off the class token so) appends the
  // pieces but the last in a Loop, the last after it, and takes each with SequenceAt.
  bool ListReadsKnown(const std::string& name, int after) const {
    constexpr int kMaxLists = 64;  // the list and the longer ones made of it: a bound on the scans
    std::vector<std::pair<std::string, int>> todo{{name, after}};
    for (int visited = 0; !todo.empty(); ++visited) {
      if (visited >= kMaxLists) return false;
      auto [list, from] = todo.back();
      todo.pop_back();
      const auto& nodes = model_.graph().node();
      int direct = 0;
      for (int k = from + 1; k < nodes.size(); ++k) {
        const onnx::NodeProto& m = nodes.Get(k);
        for (int j = 0; j < m.input_size(); ++j) {
          if (m.input(j) != list) continue;
          ++direct;
          if (!IsDefaultDomain(m.domain()) || j != 0 || m.output_size() != 1) return false;
          if (m.op_type() == "SequenceInsert" && m.input_size() == 2) {
            todo.emplace_back(m.output(0), k);
          } else if (!(m.op_type() == "SequenceAt" && m.input_size() == 2) &&
                     !(m.op_type() == "ConcatFromSequence" && m.input_size() == 1)) {
            return false;
          }
        }
      }
      if (direct == 0 || direct != Reads(list)) return false;
    }
    return true;
  }

  // The node at `i` when it reads a list an unrolled Loop appended to (lists_, ListReadsKnown): a
  // SequenceInsert without a position is left out (its output: the list and the tensor it
  // appends), a SequenceAt at a folded position becomes an Identity of that element, a
  // ConcatFromSequence a Concat of the elements (ListConcat, Unsqueezes first for new_axis).
  // False for any other node, and for a SequenceAt whose position does not fold or lies outside
  // the list (left as it is: not costed).
  bool ReadKnownList(int i) {
    auto* nodes = model_.mutable_graph()->mutable_node();
    const onnx::NodeProto& n = nodes->Get(i);
    if (lists_.empty() || !IsDefaultDomain(n.domain()) || n.input_size() < 1 || n.output_size() != 1) return false;
    auto list = lists_.find(n.input(0));
    if (list == lists_.end()) return false;
    if (n.op_type() == "SequenceInsert" && n.input_size() == 2) {
      std::vector<std::string> longer = list->second;
      longer.push_back(n.input(1));
      lists_[n.output(0)] = std::move(longer);
      std::vector<onnx::NodeProto> none;
      Splice(i, &none);
      return true;
    }
    if (n.op_type() == "SequenceAt" && n.input_size() == 2) {
      auto at = values_.find(n.input(1));
      if (at == values_.end() || at->second.IsReal() || at->second.values.size() != 1) return false;
      const int64_t size = static_cast<int64_t>(list->second.size());
      const int64_t k = at->second.values[0] < 0 ? at->second.values[0] + size : at->second.values[0];
      if (k < 0 || k >= size) return false;
      onnx::NodeProto id;
      id.set_op_type("Identity");
      id.set_name(n.name());
      id.add_input(list->second[static_cast<size_t>(k)]);
      id.add_output(n.output(0));
      *nodes->Mutable(i) = std::move(id);
      return true;
    }
    if (n.op_type() == "ConcatFromSequence") {
      auto concat = ListConcat(n, list->second, opset_, [&](const std::string& name) { return names_.count(name) > 0; });
      if (!concat) return false;
      Splice(i, &*concat);
      return true;
    }
    return false;
  }

  // Type of a graph input / initializer as ONNX inference wants it.
  static onnx::TypeProto TensorType(int32_t elem_type, const Dims& dims) {
    onnx::TypeProto t;
    auto* tt = t.mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
    return t;
  }

  // Whether a tensor's data is present and consistent (not skipped, not
  // external), so ONNX inference functions may read it.
  static bool HasCompleteData(const TensorProto& t) {
    if (t.data_location() == TensorProto::EXTERNAL) return false;
    if (IsIntElemType(t.data_type())) return FoldValueFromTensor(t).has_value();
    if (t.data_type() != TensorProto::FLOAT && t.data_type() != TensorProto::DOUBLE) return false;
    // Element count without a temporary vector (GCC 12 -O2 misreports freeing one here).
    std::optional<int64_t> n = 1;
    for (int64_t d : t.dims()) n = n && d >= 0 ? CheckedMul(*n, d) : std::nullopt;
    if (!n || *n > kMaxFoldElements) return false;
    int64_t width = t.data_type() == TensorProto::FLOAT ? 4 : 8;
    if (t.has_raw_data()) return static_cast<int64_t>(t.raw_data().size()) == *n * width;
    int64_t count = t.data_type() == TensorProto::FLOAT ? t.float_data_size() : t.double_data_size();
    return count == *n;
  }

  // Whether a folded value fits the graph's folding budget (and counts it):
  // beyond kMaxFoldTotalElements values stay unfolded, with one warning, so a
  // graph of many large constant chains cannot grow memory without bound.
  bool KeepFolded(const FoldValue& v) {
    if (folded_elements_ + v.Size() <= kMaxFoldTotalElements) {
      folded_elements_ += v.Size();
      return true;
    }
    if (!fold_budget_warned_) {
      fold_budget_warned_ = true;
      Warn("constant folding stopped: the folded values reached " + std::to_string(folded_elements_) +
           " elements (gpucast's limit for one graph: " + std::to_string(kMaxFoldTotalElements) +
           "); later constant sub-graphs stay unfolded and shapes that depend on them stay unknown");
    }
    return false;
  }

  // One pass in topological order: ONNX's per-node type and shape inference
  // function, then folding of integer shape computations, whose values are
  // handed to the inference of the nodes after it (as constant input data).
  void InferAndFold() {
    const auto& g = model_.graph();
    std::unordered_map<std::string, int> opsets;
    for (const auto& o : model_.opset_import()) {
      opsets[IsDefaultDomain(o.domain()) ? "" : o.domain()] = static_cast<int>(o.version());
    }
    opsets[""] = static_cast<int>(infer_opset_);
    const int max_rank = opts_.limits.max_rank;
    for (const auto& in : g.input()) {
      if (!initializers_.count(in.name())) types_[in.name()] = in.type();
      if (int r = RankOf(in.name()); r > max_rank) {
        inference_error_ = Err("graph input '" + in.name() + "' has rank " + std::to_string(r) + RankLimit());
        return;
      }
    }
    std::unordered_map<std::string, const TensorProto*> data;
    for (const auto& t : g.initializer()) {
      if (t.dims_size() > max_rank) {
        inference_error_ =
            Err("initializer '" + t.name() + "' has rank " + std::to_string(t.dims_size()) + RankLimit());
        return;
      }
      types_[t.name()] = TensorType(t.data_type(), Dims(t.dims().begin(), t.dims().end()));
      if (auto v = FoldValueFromTensor(t); v && KeepFolded(*v)) values_[t.name()] = std::move(*v);
      if (HasCompleteData(t)) data[t.name()] = &t;
    }
    std::unordered_map<std::string, onnx::TypeProto*> type_ptrs;
    for (auto& [name, t] : types_) type_ptrs[name] = &t;
    onnx::shape_inference::GraphInferenceContext graph_ctx(type_ptrs, opsets);
    std::unordered_map<std::string, TensorProto> folded;  // data for later nodes

    FoldContext fold;
    fold.opset = infer_opset_;
    fold.value = [&](const std::string& name) -> const FoldValue* {
      auto it = values_.find(name);
      return it == values_.end() ? nullptr : &it->second;
    };
    fold.shape = [&](const std::string& name) { return ShapeOf(name); };

    int failures = 0;
    int64_t slot_dims = 0;  // max_slot_dims: inputs before the node's inference, outputs after
    std::unordered_map<std::string_view, const onnx::NodeProto*> producer;  // Equal and TopK so far
    const KnownTensors known = Known();  // the pattern fills' view of types_ and values_
    for (int i = 0; i < g.node_size(); ++i) {
      if (Status st = CheckDeadline(); !st.ok()) {
        inference_error_ = st;
        return;
      }
      if ((IsIf(g.node(i)) && InlineFoldedIf(i)) || (IsLoop(g.node(i)) && UnrollFoldedLoop(i)) ||
          ReadKnownList(i)) {
        --i;  // infer the branch's, the first iteration's or the list read's first node next
        continue;
      }
      const onnx::NodeProto& node = g.node(i);
      for (const std::string& in : node.input()) slot_dims += 1 + RankOf(in);
      if (slot_dims > opts_.limits.max_slot_dims) {
        inference_error_ = Err(Ref(node) + ": " + SlotLimit(slot_dims));
        return;
      }
      std::string domain = IsDefaultDomain(node.domain()) ? "" : node.domain();
      auto ov = opsets.find(domain);
      const bool gap = FilledByHand(node);
      // Control flow is not inferred (inference_guard.h): its bodies are not analysed.
      const bool skip = gap || (domain.empty() && SkipsInference(node.op_type()));
      const onnx::OpSchema* schema =
          ov == opsets.end() || skip ? nullptr
                                     : FindOpSchema(node.op_type(), ov->second, domain);  // not the whole registry
      // A node downstream of an unknown type stays unknown (no inference error noise).
      bool inputs_typed = std::all_of(node.input().begin(), node.input().end(), [&](const std::string& in) {
        return in.empty() || type_ptrs.count(in) > 0;
      });
      if (schema && schema->has_type_and_shape_inference_function() && inputs_typed) {
        if (Status st = CheckBeforeLibonnx(node, *schema); !st.ok()) {
          inference_error_ = st;
          return;
        }
        onnx::NodeProto n = node;
        try {
          onnx::shape_inference::InferenceContextImpl ctx(n, type_ptrs, data, {}, nullptr, &graph_ctx);
          schema->GetTypeAndShapeInferenceFunction()(ctx);
          for (int i = 0; i < n.output_size() && i < static_cast<int>(ctx.allOutputTypes_.size()); ++i) {
            if (n.output(i).empty() || ctx.allOutputTypes_[i].value_case() == onnx::TypeProto::VALUE_NOT_SET) {
              continue;
            }
            auto& slot = types_[n.output(i)];
            slot = ctx.allOutputTypes_[i];
            type_ptrs[n.output(i)] = &slot;
          }
        } catch (const std::exception& e) {
          if (++failures <= 3) Warn(Ref(node) + ": shape inference failed: " + std::string(e.what()).substr(0, 200));
        } catch (...) {
          if (++failures <= 3) Warn(Ref(node) + ": shape inference failed");
        }
      }
      if (gap) {
        FillOpsetGap(node, &type_ptrs);
      } else {
        FillKnownGaps(node, &type_ptrs);
        FillPatterns(node, known, producer, &type_ptrs);
      }
      if (node.op_type() == "Equal" || node.op_type() == "TopK")  // what RoutedNonZeroOutput looks up
        for (const std::string& o : node.output()) producer.emplace(o, &node);
      // A folded value is data for later nodes' inference, a type where inference gave none,
      // and a value for later folding.
      auto keep = [&](const std::string& o, FoldValue v) {
        if (o.empty() || !KeepFolded(v)) return false;
        auto& t = folded[o] = TensorFromFoldValue(v, o);
        data[o] = &t;
        if (!types_.count(o) || !ShapeOf(o)) {
          auto& slot = types_[o] = TensorType(v.elem_type, v.dims);
          type_ptrs[o] = &slot;
        }
        values_[o] = std::move(v);
        return true;
      };
      if (IsDefaultDomain(node.domain()) && node.op_type() == "Split") {
        std::vector<FoldValue> parts = FoldSplit(node, fold);  // every output (FoldNode: the first)
        for (int k = 0; k < node.output_size() && k < static_cast<int>(parts.size()); ++k)
          keep(node.output(k), std::move(parts[k]));
      } else if (node.output_size() >= 1 && !node.output(0).empty()) {
        auto v = FoldNode(node, fold);
        if (!(v && keep(node.output(0), std::move(*v))) && node.op_type() == "Constant") {
          for (const auto& a : node.attribute()) {
            if (a.name() == "value" && a.has_t() && HasCompleteData(a.t())) data[node.output(0)] = &a.t();
          }
        }
      }
      // Every inferred shape is kept: a bound on the rank bounds their memory (load_limits.h).
      for (const std::string& o : node.output()) {
        if (int r = RankOf(o); r > max_rank) {
          inference_error_ = Err(Ref(node) + ": output '" + o + "' has rank " + std::to_string(r) + RankLimit());
          return;
        }
        slot_dims += 1 + RankOf(o);
      }
      if (slot_dims > opts_.limits.max_slot_dims) {
        inference_error_ = Err(Ref(node) + ": " + SlotLimit(slot_dims));
        return;
      }
    }
    if (failures > 3) Warn("shape inference failed for " + std::to_string(failures - 3) + " more nodes");
    if (selecting_nonzero_ > 0)
      Warn(std::to_string(selecting_nonzero_) + (selecting_nonzero_ == 1 ? " NonZero node" : " NonZero nodes") +
           " whose size depends on the data read as selecting every element (first: " + first_selecting_nonzero_ +
           "): the cost and memory after it are upper bounds (a masked-token loss or a score threshold selects fewer)");
    if (unrolled_loops_ > 0)
      Warn(std::to_string(unrolled_loops_) +
           (unrolled_loops_ == 1 ? " Loop node whose trip count the sizes fix read as its"
                                 : " Loop nodes whose trip counts the sizes fix read as their") +
           " iterations one after another (first: " +
           first_unrolled_loop_ + "); other sizes run other counts");
    if (inlined_ifs_ > 0)
      Warn(std::to_string(inlined_ifs_) + (inlined_ifs_ == 1 ? " If node" : " If nodes") +
           " whose condition the sizes given fix read as the branch taken (first: " + first_inlined_if_ +
           "); other sizes may take the other branch");
  }

  // Node input and output slots, before anything keeps a record per slot:
  // each counts at least 1 towards max_slot_dims (InferAndFold adds the ranks).
  Status CheckSlots() {
    int64_t slots = 0;
    for (const auto& n : model_.graph().node()) slots += n.input_size() + n.output_size();
    if (slots > opts_.limits.max_slot_dims) return Err(SlotLimit(slots, /*at_least=*/true));
    return Status::Ok();
  }
  std::string SlotLimit(int64_t got, bool at_least = false) const {
    return "graph too large: its nodes' inputs and outputs hold " + std::string(at_least ? "at least " : "") +
           std::to_string(got) +
           " shape dimensions (each slot counts 1 plus its tensor's rank, a tensor at every slot that reads or "
           "writes it), more than " + std::to_string(opts_.limits.max_slot_dims) + " (" +
           words_.Limit(LoadFailure::kInvalid) + ")";
  }

  // Dimensions of a typed tensor's shape; 0 when unknown or not a tensor.
  int RankOf(const std::string& name) const {
    auto it = types_.find(name);
    if (it == types_.end() || !it->second.has_tensor_type() || !it->second.tensor_type().has_shape()) return 0;
    return it->second.tensor_type().shape().dim_size();
  }
  std::string RankLimit() const {
    return ", more than " + std::to_string(opts_.limits.max_rank) + " dimensions (" +
           words_.Limit(LoadFailure::kInvalid) + ")";
  }

  // graph/inference_guard.h: what libonnx 1.12's inference function for this
  // node reads without checking (ranks, list lengths, divisors), checked first.
  Status CheckBeforeLibonnx(const onnx::NodeProto& n, const onnx::OpSchema& schema) const {
    std::vector<GuardInput> in;
    for (const std::string& name : n.input()) {
      GuardInput g;
      g.present = !name.empty();
      if (g.present) {
        if (auto it = types_.find(name);
            it != types_.end() && it->second.has_tensor_type() && it->second.tensor_type().has_shape()) {
          g.rank = it->second.tensor_type().shape().dim_size();
        }
        if (auto v = values_.find(name); v != values_.end()) g.value = &v->second.values;
      }
      in.push_back(g);
    }
    std::string why = CheckBeforeInference(ToNode(n), schema.SinceVersion(), in);
    return why.empty() ? Status::Ok() : Err(Ref(n) + ": " + why);
  }

  // Shapes ONNX's inference functions leave out for ops the exporters emit:
  // BatchNormalization's training outputs (running/saved mean and var) are [C].
  void FillKnownGaps(const onnx::NodeProto& n,
                     std::unordered_map<std::string, onnx::TypeProto*>* type_ptrs) {
    if (!IsDefaultDomain(n.domain()) || n.op_type() != "BatchNormalization" || n.input_size() < 2) return;
    auto c = ShapeOf(n.input(1));
    auto x = types_.find(n.input(0));
    if (!c || x == types_.end()) return;
    for (int i = 1; i < n.output_size() && i <= 4; ++i) {
      if (n.output(i).empty() || ShapeOf(n.output(i))) continue;
      auto& slot = types_[n.output(i)] = TensorType(x->second.tensor_type().elem_type(), *c);
      (*type_ptrs)[n.output(i)] = &slot;
    }
  }

  // What the pattern fills read (pattern_fills.h): shapes, element types and folded values.
  KnownTensors Known() const {
    KnownTensors k;
    k.shape = [this](const std::string& name) { return ShapeOf(name); };
    k.elem_type = [this](const std::string& name) -> int32_t {
      auto t = types_.find(name);
      return t != types_.end() && t->second.has_tensor_type() ? t->second.tensor_type().elem_type() : 0;
    };
    k.ints = [this](const std::string& name) -> const std::vector<int64_t>* {
      auto v = values_.find(name);
      return v == values_.end() || v->second.IsReal() ? nullptr : &v->second.values;
    };
    k.folded = [this](const std::string& name) { return values_.count(name) > 0; };
    return k;
  }

  void SetFilled(const std::string& name, const FilledOutput& f,
                 std::unordered_map<std::string, onnx::TypeProto*>* type_ptrs) {
    auto& slot = types_[name] = TensorType(f.elem_type, f.dims);
    (*type_ptrs)[name] = &slot;
  }

  // The torch export patterns whose one output libonnx leaves unknown (pattern_fills.h), in
  // order: an EmbeddingBag Loop, a repeat_interleave, a mixture-of-experts router's NonZero
  // (balanced, one warning), any other NonZero of data (every element, counted for one warning).
  void FillPatterns(const onnx::NodeProto& n, const KnownTensors& k,
                    const std::unordered_map<std::string_view, const onnx::NodeProto*>& producer,
                    std::unordered_map<std::string, onnx::TypeProto*>* type_ptrs) {
    if (n.output_size() != 1 || n.output(0).empty() || ShapeOf(n.output(0))) return;
    const std::string& out = n.output(0);
    if (auto bag = bags_.find(out); bag != bags_.end()) {
      if (auto f = EmbeddingBagOutput(bag->second, n.input(0), k)) SetFilled(out, *f, type_ptrs);
    } else if (auto rep = repeats_.find(out); rep != repeats_.end()) {
      if (auto f = RepeatInterleaveOutput(rep->second, k)) SetFilled(out, *f, type_ptrs);
    } else if (auto routed = RoutedNonZeroOutput(
                   n,
                   [&](const std::string& name) -> const onnx::NodeProto* {
                     auto it = producer.find(name);
                     return it == producer.end() ? nullptr : it->second;
                   },
                   k)) {
      SetFilled(out, routed->output, type_ptrs);
      if (routed_nonzero_++ == 0)
        Warn(Ref(n) + " selects the tokens a mixture-of-experts router sends to expert " +
             std::to_string(routed->expert) + " of " + std::to_string(routed->experts) +
             ": its size depends on the routing, read as balanced (1/" + std::to_string(routed->experts) +
             " of the router's slots each; the experts' shares add up to all the slots whatever the routing, so a "
             "loop over every expert costs the same in all)");
    } else if (auto f = SelectingNonZeroOutput(n, k)) {
      SetFilled(out, *f, type_ptrs);
      selection_bound_.insert(out);
      if (selecting_nonzero_++ == 0)
        first_selecting_nonzero_ = Ref(n) + " of " + DimsString(*ShapeOf(n.input(0)));
    }
  }

  // Ops of opsets 18-23 that libonnx 1.12 has no schema for (Gelu-20,
  // GroupNormalization-18/21, Attention-23, ...): graph/opset_gaps.h. An
  // inconsistent node leaves its outputs unknown, with a warning naming it.
  void FillOpsetGap(const onnx::NodeProto& n, std::unordered_map<std::string, onnx::TypeProto*>* type_ptrs) {
    Node node = ToNode(n);
    std::vector<GapInput> in;
    for (const std::string& name : n.input()) {
      GapInput g;
      g.present = !name.empty();
      if (g.present) {
        g.dims = ShapeOf(name);
        if (auto t = types_.find(name); t != types_.end() && t->second.has_tensor_type()) {
          g.elem_type = t->second.tensor_type().elem_type();
        }
        if (auto v = values_.find(name); v != values_.end() && !v->second.IsReal()) g.value = &v->second.values;
      }
      in.push_back(std::move(g));
    }
    Result<std::vector<GapOutput>> out = InferGapOutputs(node, opset_, in);
    if (!out.ok()) {
      Warn(Ref(n) + ": shape inference failed: " + out.message());
      return;
    }
    for (int i = 0; i < n.output_size() && i < static_cast<int>(out->size()); ++i) {
      const GapOutput& o = (*out)[i];
      if (n.output(i).empty() || !o.dims || o.elem_type == 0 || ShapeOf(n.output(i))) continue;
      auto& slot = types_[n.output(i)] = TensorType(o.elem_type, *o.dims);
      (*type_ptrs)[n.output(i)] = &slot;
    }
  }

  // Whether graph/opset_gaps.h gives this node's shapes instead of libonnx
  // (ops libonnx 1.12 lacks or gets wrong at this opset). GapOpSince first:
  // most nodes are not in that table and need no conversion.
  bool FilledByHand(const onnx::NodeProto& n) const {
    return IsDefaultDomain(n.domain()) && GapOpSince(n.op_type()) > 0 && GapRuleApplies(ToNode(n), opset_);
  }

  // gpucast's node for an ONNX node (attributes of the kinds Node keeps).
  static Node ToNode(const onnx::NodeProto& n) {
    Node node;
    node.name = n.name();
    node.op_type = n.op_type();
    node.domain = IsDefaultDomain(n.domain()) ? "" : n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) {
      Attribute attr;
      if (a.has_i()) attr.i = a.i();
      if (a.has_f()) attr.f = a.f();
      if (a.has_s()) attr.s = a.s();
      attr.ints.assign(a.ints().begin(), a.ints().end());
      attr.floats.assign(a.floats().begin(), a.floats().end());
      node.attrs[a.name()] = std::move(attr);
    }
    return node;
  }

  std::optional<Dims> ShapeOf(const std::string& name) const {
    if (auto it = types_.find(name); it != types_.end()) {
      if (auto d = KnownDims(it->second)) return d;
    }
    if (auto it = values_.find(name); it != values_.end()) return it->second.dims;
    return std::nullopt;
  }

  Result<Graph> Build() {
    const auto& g = model_.graph();
    Graph& out = graph_;
    out.path = file_;
    out.opset = opset_;
    out.batch = opts_.batch;
    out.data_inputs = data_inputs_;
    for (const auto& o : g.output()) out.outputs.push_back(o.name());
    std::unordered_map<std::string, const TensorProto*> inits;
    for (const auto& t : g.initializer()) inits[t.name()] = &t;
    std::unordered_set<std::string> data(data_inputs_.begin(), data_inputs_.end());

    auto add = [&](const std::string& name) {
      if (name.empty() || out.tensors.count(name)) return;
      TensorInfo t;
      t.name = name;
      if (auto it = inits.find(name); it != inits.end()) {
        t.elem_type = it->second->data_type();
        t.dims.assign(it->second->dims().begin(), it->second->dims().end());
        t.shape_known = true;
      } else if (auto d = ShapeOf(name)) {
        t.dims = *d;
        t.shape_known = true;
      }
      if (t.elem_type == 0) {
        if (auto it = types_.find(name); it != types_.end() && it->second.has_tensor_type()) {
          t.elem_type = it->second.tensor_type().elem_type();
        }
      }
      if (auto it = values_.find(name); it != values_.end()) {
        if (it->second.IsReal()) {
          t.real_value = it->second.reals;
        } else {
          t.int_value = it->second.values;
          if (t.elem_type == 0) t.elem_type = it->second.elem_type;
        }
      }
      t.is_param = params_.count(name) > 0;
      t.is_buffer = t.is_param && buffers_.count(name) > 0;
      t.is_frozen = t.is_param && !t.is_buffer && frozen_.count(name) > 0;
      if (auto s = sparse_table_.find(name); s != sparse_table_.end() && t.is_param && !t.is_buffer && !t.is_frozen)
        t.sparse_table = s->second;
      if (auto it = tied_to_.find(name); it != tied_to_.end()) t.tied_to = it->second;
      t.own_param = own_params_.count(name) > 0;
      t.is_data_input = data.count(name) > 0;
      t.selection_bound = selection_bound_.count(name) > 0;
      out.tensors.emplace(name, std::move(t));
    };
    for (const auto& in : g.input()) add(in.name());
    for (const auto& t : g.initializer()) add(t.name());
    for (const auto& n : g.node()) {
      for (const auto& i : n.input()) add(i);
      for (const auto& o : n.output()) add(o);
    }
    std::unordered_set<std::string> unknown;
    for (const auto& n : g.node()) {
      if (n.output_size() == 1 && absorbed_.count(n.output(0))) continue;  // in a repeat_interleave
      Node node = ToNode(n);
      if (n.output_size() == 1) {
        if (auto rep = repeats_.find(n.output(0)); rep != repeats_.end()) {
          // One copy of x to the repeated shape (cost/cost_rules.cc: Tile writes its output).
          node.op_type = "Tile";
          node.inputs = {rep->second.input};
          node.attrs.clear();
        } else if (auto bag = bags_.find(n.output(0)); bag != bags_.end()) {
          // Table, flat indices, trip count and the per-sample weights if any in; one row per
          // bag out (cost/rules_free.cc).
          const EmbeddingBagLoop& m = bag->second;
          node.attrs.clear();
          node.inputs = {m.table, m.indices, n.input(0)};
          if (m.mode == "max") {
            node.op_type = "EmbeddingBagMax";
          } else {
            node.op_type = "EmbeddingBag";
            node.attrs["mode"].s = m.mode;
            if (!m.weights.empty()) node.inputs.push_back(m.weights);
          }
        }
      }
      for (const auto* names : {&node.inputs, &node.outputs}) {
        for (const auto& name : *names) {
          const TensorInfo* t = out.Tensor(name);
          if (!t) continue;
          if (!t->shape_known) {
            if (unknown.insert(name).second) out.unknown_shapes.push_back(name);
            continue;
          }
          auto c = CheckedProduct(t->dims);
          if (!c || *c > kMaxElements) {
            return Err(Ref(n) + ": tensor '" + name + "' with shape " + DimsStr(t->dims) +
                       " has more than 2^62 elements; reduce " + words_.Batch() + " or " + words_.DimsField());
          }
        }
      }
      out.nodes.push_back(std::move(node));
    }
    return std::move(graph_);
  }

  std::string file_;
  LoadOptions opts_;
  Words words_;
  Clock::time_point deadline_;
  bool timed_out_ = false;
  LoadFailure limit_why_ = LoadFailure::kNone;  // a bound passed while inlining functions
  onnx::ModelProto model_;
  int64_t opset_ = 0;
  int64_t infer_opset_ = 0;
  std::unordered_set<std::string> initializers_;
  std::vector<std::string> data_inputs_;
  std::unordered_set<std::string> weight_inputs_;
  std::unordered_set<std::string> params_;
  std::unordered_set<std::string> buffers_;  // of params_: the model's buffers (MarkNamed)
  std::unordered_set<std::string> frozen_;   // of params_: parameters not trained (MarkNamed)
  // Of params_: tables with sparse gradients (MarkNamed) and their Identity/Cast copies, each to its table.
  std::unordered_map<std::string, std::string> sparse_table_;
  std::unordered_set<std::string> dropped_;  // inputs and initializers nothing reads (DropUnread)
  // Parameters written other than as the model holds them (param_ties.h).
  std::unordered_set<std::string> identity_of_param_;  // found before inlining
  std::unordered_set<std::string> own_params_;
  // torch's EmbeddingBag Loops (torch_loops.h), by the Loop's output name.
  std::unordered_map<std::string, EmbeddingBagLoop> bags_;
  // torch's repeat_interleave Loops (torch_loops.h), by the ConcatFromSequence's output name,
  // and the outputs of the nodes they absorb (left out of the graph handed on).
  std::unordered_map<std::string, RepeatInterleaveLoop> repeats_;
  std::unordered_set<std::string> absorbed_;
  int routed_nonzero_ = 0;  // NonZero nodes read as a balanced router's tokens
  int selecting_nonzero_ = 0;  // other NonZero nodes of data, read as selecting everything
  std::string first_selecting_nonzero_;
  std::unordered_set<std::string> selection_bound_;  // those NonZero nodes' outputs (TensorInfo::selection_bound)
  // Loop nodes written out as their iterations (unrolled_loop.h), and the first one.
  int unrolled_loops_ = 0;
  std::string first_unrolled_loop_;
  // If nodes read as the branch their folded condition takes (folded_if.h), and the first one.
  int inlined_ifs_ = 0;
  std::string first_inlined_if_;
  // Every name of the graph (CollectNames, at the first If or Loop read; Splice adds).
  std::unordered_set<std::string> names_;
  std::unordered_set<std::string> empty_lists_;  // SequenceEmpty outputs (lists a Loop may append to)
  // Lists an unrolled Loop appended to that nodes after it read (ListReadsKnown), and the longer
  // ones SequenceInserts make of them: their elements, by the list's name (ReadKnownList).
  std::unordered_map<std::string, std::vector<std::string>> lists_;
  std::unordered_map<std::string, std::string> tied_to_;
  // Who reads each name (IndexConsumers); views into model_'s strings.
  std::unordered_map<std::string_view, std::vector<std::pair<int, int>>> consumers_;
  // Node-based map: pointers to values stay valid while it grows.
  std::unordered_map<std::string, onnx::TypeProto> types_;
  std::unordered_map<std::string, FoldValue> values_;
  int64_t folded_elements_ = 0;  // elements of values_ (kMaxFoldTotalElements)
  bool fold_budget_warned_ = false;
  Graph graph_;
  Status inference_error_;
};

}  // namespace

WireLimits WireLimitsOf(const LoadLimits& limits) {
  WireLimits w;
  w.max_nodes = limits.max_nodes;
  w.max_entries = limits.max_entries;
  w.max_graph_depth = limits.max_subgraph_depth;
  w.max_kept_bytes = limits.max_graph_bytes;
  if (limits.max_seconds > 0) {
    w.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(std::min(limits.max_seconds, 1e6)));
  }
  return w;
}

namespace {

// The wire error with the file name and, for a limit, the setting.
Status WireError(const Status& st, LoadFailure wire_why, const std::string& name, const LoadOptions& opts) {
  std::string m = st.message();
  if (wire_why == LoadFailure::kTimeout) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", opts.limits.max_seconds);
    m = std::string("analysis stopped: it took longer than ") + secs + " s";
  }
  if (IsLimit(wire_why)) m += " (" + Words(opts.wording).Limit(wire_why) + ")";
  return Status::Error(name + ": " + m);
}

Result<Graph> LoadFiltered(Result<std::string> filtered, LoadFailure wire_why, const std::string& name,
                           const LoadOptions& opts, const WireLimits& wire, LoadFailure* why) {
  LoadFailure ignored;
  if (!why) why = &ignored;
  if (!filtered.ok()) {
    *why = wire_why;
    return WireError(filtered.status(), wire_why, name, opts);
  }
  return Loader(name, opts, wire.deadline).Load(*filtered, why);
}

}  // namespace

Result<std::string> ReadModelWithoutWeights(int fd, const std::string& display_name, const LoadOptions& opts,
                                            LoadFailure* why) {
  LoadFailure wire_why = LoadFailure::kNone;
  auto bytes = ReadModelBytesWithoutWeightsFromFd(fd, WireLimitsOf(opts.limits), &wire_why);
  if (why) *why = wire_why;
  if (!bytes.ok()) return WireError(bytes.status(), wire_why, display_name, opts);
  return bytes;
}

Result<Graph> LoadOnnxGraph(const std::string& path, const LoadOptions& opts, LoadFailure* why) {
  const WireLimits wire = WireLimitsOf(opts.limits);
  LoadFailure wire_why = LoadFailure::kNone;
  auto bytes = ReadModelBytesWithoutWeights(path, wire, &wire_why);
  return LoadFiltered(std::move(bytes), wire_why, path, opts, wire, why);
}

Result<Graph> LoadOnnxGraphFromFd(int fd, const std::string& display_name, const LoadOptions& opts,
                                  LoadFailure* why) {
  const WireLimits wire = WireLimitsOf(opts.limits);
  LoadFailure wire_why = LoadFailure::kNone;
  auto bytes = ReadModelBytesWithoutWeightsFromFd(fd, wire, &wire_why);
  return LoadFiltered(std::move(bytes), wire_why, display_name, opts, wire, why);
}

Result<Graph> LoadOnnxGraphFromBytes(std::string_view bytes, const std::string& display_name,
                                     const LoadOptions& opts, LoadFailure* why) {
  const WireLimits wire = WireLimitsOf(opts.limits);
  LoadFailure wire_why = LoadFailure::kNone;
  auto filtered = FilterModelBytesWithoutWeights(bytes, wire, &wire_why);
  return LoadFiltered(std::move(filtered), wire_why, display_name, opts, wire, why);
}

}  // namespace gpucast
