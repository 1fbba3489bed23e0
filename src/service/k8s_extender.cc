#include "service/k8s_extender.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <type_traits>

#include "features/gpu_specs.h"
#include "service/http_util.h"
#include "service/k8s_admission.h"
#include "util/json_text.h"

namespace gpucast::service::k8s {

using nlohmann::json;

namespace {

constexpr size_t kMaxNodes = 100000;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Go's encoding/json matches keys case-insensitively: so do we (the first match).
const json* Field(const json& obj, std::string_view name) {
  if (!obj.is_object()) return nullptr;
  const std::string want = Lower(name);
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (Lower(it.key()) == want) return &*it;
  }
  return nullptr;
}

Status ArgsError(const std::string& field, const std::string& want) {
  return Status::Error("ExtenderArgs: field '" + field + "': want " + want);
}

std::string Canonical(const std::string& gpu) {
  Result<std::string> c = CanonicalGpuName(gpu);
  return c.ok() ? *c : gpu;
}

std::string Num(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool Kept(std::string_view annotation_or_resource, bool resource) {
  if (resource) return annotation_or_resource.rfind("nvidia.com/", 0) == 0;
  return annotation_or_resource.rfind("gpucast.io/", 0) == 0 || annotation_or_resource.rfind("gpu-fraction", 0) == 0;
}

// Where a value sits, as far as the extender cares; kSkip: nothing below is read.
enum class At {
  kSkip, kTop, kPod, kPodMeta, kPodName, kPodNamespace, kAnnotations, kAnnotation, kPodSpec, kContainers,
  kContainer, kContainerName, kResources, kResList, kResValue, kNodeNames, kNodeName, kNodes, kItems, kItem,
  kItemMeta, kItemName
};

// A SAX handler that keeps only what ExtenderArgs holds (first match of each
// key, Go's case-insensitive field names; annotation and resource keys exact).
class ArgsSax {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  bool null() { return Scalar(json(nullptr), 'n'); }
  bool boolean(bool v) { return Scalar(json(v), 's'); }
  bool number_integer(number_integer_t v) { return Scalar(json(v), 's'); }
  bool number_unsigned(number_unsigned_t v) { return Scalar(json(v), 's'); }
  bool number_float(number_float_t v, const string_t&) { return Scalar(json(v), 's'); }
  bool binary(binary_t&) { return Scalar(json(nullptr), 's'); }
  bool string(string_t& v) {
    const At at = Start('S');
    switch (at) {
      case At::kPodName: pod_name = v; break;
      case At::kPodNamespace: pod_ns = v; break;
      case At::kAnnotation: annotations[key_] = v; break;
      case At::kContainerName: containers.back()["name"] = v; break;
      case At::kResValue: containers.back()["resources"][list_][key_] = v; break;
      case At::kNodeName: Name(v); break;
      case At::kItemName:
        if (!v.empty()) {
          item_named.back() = true;
          item_names.back() = v;
        }
        break;
      default: break;
    }
    return true;
  }

  bool start_object(std::size_t) {
    const At at = Start('o');
    At inside = At::kSkip;
    switch (at) {
      case At::kTop: case At::kPod: case At::kPodMeta: case At::kAnnotations: case At::kPodSpec:
      case At::kResources: case At::kResList: case At::kNodes: case At::kItem: case At::kItemMeta:
        inside = at;
        break;
      case At::kContainer:
        inside = at;
        containers.push_back(json::object());
        break;
      default: break;
    }
    stack_.push_back({inside, false, At::kSkip});
    return true;
  }
  bool key(string_t& k) {
    Frame& f = stack_.back();
    f.child = At::kSkip;
    auto first = [&](const char* field, bool* seen) {
      if (*seen || !IEquals(k, field)) return false;
      return *seen = true;
    };
    switch (f.at) {
      case At::kTop:
        if (first("Pod", &seen_pod_)) f.child = At::kPod;
        else if (first("NodeNames", &seen_names_)) f.child = At::kNodeNames;
        else if (first("Nodes", &seen_nodes_)) f.child = At::kNodes;
        break;
      case At::kPod:
        if (first("metadata", &seen_meta_)) f.child = At::kPodMeta;
        else if (first("spec", &seen_spec_)) f.child = At::kPodSpec;
        break;
      case At::kPodMeta:
        if (first("name", &seen_name_)) f.child = At::kPodName;
        else if (first("namespace", &seen_ns_)) f.child = At::kPodNamespace;
        else if (first("annotations", &seen_ann_)) f.child = At::kAnnotations;
        break;
      case At::kAnnotations:
        if (Kept(k, false) && !annotations.count(k)) {
          f.child = At::kAnnotation;
          key_ = k;
        }
        break;
      case At::kPodSpec:
        if (first("containers", &seen_containers_)) f.child = At::kContainers;
        break;
      case At::kContainer:
        if (IEquals(k, "name") && !containers.back().contains("name")) {
          f.child = At::kContainerName;
        } else if (IEquals(k, "resources") && !f.seen) {
          f.child = At::kResources;
          f.seen = true;
        }
        break;
      case At::kResources:
        if ((IEquals(k, "limits") || IEquals(k, "requests")) &&
            !(containers.back().contains("resources") && containers.back()["resources"].contains(Lower(k)))) {
          f.child = At::kResList;
          list_ = Lower(k);
          containers.back()["resources"][list_] = json::object();
        }
        break;
      case At::kResList:
        if (Kept(k, true)) {
          f.child = At::kResValue;
          key_ = k;
        }
        break;
      case At::kNodes:
      case At::kItem:
      case At::kItemMeta: {
        const char* want = f.at == At::kNodes ? "items" : f.at == At::kItem ? "metadata" : "name";
        if (!f.seen && IEquals(k, want)) {
          f.child = f.at == At::kNodes ? At::kItems : f.at == At::kItem ? At::kItemMeta : At::kItemName;
          f.seen = true;
        }
        break;
      }
      default: break;
    }
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    const At at = Start('a');
    At inside = At::kSkip;
    if (at == At::kContainers || at == At::kNodeNames || at == At::kItems) inside = at;
    stack_.push_back({inside, false, At::kSkip});
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error = "ExtenderArgs: malformed JSON: " + JsonErrorReason(e);
    return false;
  }

  // What was read. Kinds: 0 absent, 'n' null, 'a' array, 'o' object, 'S' a string, 's' another value.
  bool top_object = false;
  char pod_kind = 0, names_kind = 0, nodes_kind = 0, items_kind = 0;
  std::string pod_name, pod_ns;
  std::map<std::string, std::string> annotations;
  std::vector<json> containers;
  std::string names;
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  std::vector<bool> item_named;
  std::vector<std::string> item_names;
  std::string error;        // set: the parse stopped
  std::string names_error;  // a bad NodeNames element (reported if NodeNames is what is used)

 private:
  struct Frame {
    At at;
    bool seen;  // the frame's once-only key was seen (resources, items, metadata, name)
    At child;   // the context of the current key's value (objects)
  };

  static std::string Lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
  // The context of the value that starts now (of kind `kind`), noting the kinds that matter.
  At Start(char kind) {
    At at = At::kTop;
    if (!stack_.empty()) {
      const Frame& f = stack_.back();
      switch (f.at) {
        case At::kContainers: at = At::kContainer; break;
        case At::kNodeNames: at = At::kNodeName; break;
        case At::kItems:
          item_named.push_back(false);
          item_names.emplace_back();
          at = At::kItem;
          break;
        case At::kSkip: at = At::kSkip; break;
        default: at = f.child; break;
      }
    } else {
      top_object = kind == 'o';
    }
    if (at == At::kPod) pod_kind = kind;
    if (at == At::kNodeNames) names_kind = kind;
    if (at == At::kNodes) nodes_kind = kind;
    if (at == At::kItems) items_kind = kind;
    if (at == At::kNodeName && kind != 'S' && names_error.empty()) {
      names_error = "NodeNames[" + std::to_string(spans.size()) + "]";
    }
    if (at == At::kNodeName && kind != 'S') spans.emplace_back(0, 0);
    return at;
  }
  bool Scalar(json v, char kind) {
    const At at = Start(kind);
    if (at == At::kResValue) containers.back()["resources"][list_][key_] = std::move(v);
    return true;
  }
  void Name(const std::string& v) {
    if (spans.size() >= kMaxNodes) {
      names_error = "NodeNames";
      return;
    }
    if ((v.empty() || v.size() > 253) && names_error.empty()) {
      names_error = "NodeNames[" + std::to_string(spans.size()) + "]";
    }
    spans.emplace_back(static_cast<uint32_t>(names.size()), static_cast<uint32_t>(v.size()));
    names += v;
  }

  std::vector<Frame> stack_;
  std::string key_, list_;
  bool seen_pod_ = false, seen_names_ = false, seen_nodes_ = false, seen_meta_ = false, seen_spec_ = false,
       seen_name_ = false, seen_ns_ = false, seen_ann_ = false, seen_containers_ = false;
};

// A minimal scanner over JSON text already known to be valid.
struct Scanner {
  std::string_view s;
  size_t i = 0;
  void Ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  // A string token at i (the quote), decoded; i after it.
  std::string String() {
    const size_t start = i++;
    bool escaped = false;
    while (i < s.size() && s[i] != '"') i += s[i] == '\\' ? (escaped = true, 2) : 1;
    ++i;
    std::string_view raw = s.substr(start, i - start);
    if (!escaped) return std::string(raw.substr(1, raw.size() - 2));
    return json::parse(raw).get<std::string>();
  }
  // Skips the value at i.
  void Skip() {
    Ws();
    if (s[i] == '"') {
      String();
      return;
    }
    if (s[i] != '{' && s[i] != '[') {
      while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' &&
             s[i] != '\t' && s[i] != '\r')
        ++i;
      return;
    }
    int depth = 0;
    do {
      char c = s[i];
      if (c == '"') {
        String();
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      else if (c == '}' || c == ']') --depth;
      ++i;
    } while (depth > 0 && i < s.size());
  }
  // In the object at i: positions i at the value of the first key equal
  // (case-insensitively) to `want`; false if none.
  bool Member(std::string_view want) {
    Ws();
    if (s[i] != '{') return false;
    ++i;
    for (;;) {
      Ws();
      if (s[i] == '}') return false;
      std::string k = String();
      Ws();
      ++i;  // ':'
      Ws();
      if (IEquals(k, want)) return true;
      Skip();
      Ws();
      if (s[i] == ',') ++i;
    }
  }
};

// The text of each element of Nodes.items (the first "Nodes", its first "items").
std::vector<std::string_view> ItemTexts(std::string_view body) {
  std::vector<std::string_view> out;
  Scanner sc{body};
  if (!sc.Member("Nodes") || !sc.Member("items")) return out;
  sc.Ws();
  if (sc.s[sc.i] != '[') return out;
  ++sc.i;
  for (;;) {
    sc.Ws();
    if (sc.s[sc.i] == ']') return out;
    const size_t start = sc.i;
    sc.Skip();
    out.push_back(body.substr(start, sc.i - start));
    sc.Ws();
    if (sc.s[sc.i] == ',') ++sc.i;
  }
}

}  // namespace

Result<ExtenderArgs> ParseExtenderArgs(std::string_view body) {
  ArgsSax sax;
  const bool ok = json::sax_parse(body.begin(), body.end(), &sax);
  if (!ok) return Status::Error(sax.error.empty() ? "ExtenderArgs: malformed JSON" : sax.error);
  if (!sax.top_object) return Status::Error("ExtenderArgs: want a JSON object");
  if (sax.pod_kind != 'o') return ArgsError("Pod", "a Pod object");
  ExtenderArgs out;
  json meta = json::object();
  if (!sax.pod_name.empty()) meta["name"] = sax.pod_name;
  if (!sax.pod_ns.empty()) meta["namespace"] = sax.pod_ns;
  meta["annotations"] = sax.annotations;
  out.pod = {{"metadata", meta}, {"spec", {{"containers", sax.containers}}}};
  if (sax.names_kind == 'a') {
    if (sax.names_error == "NodeNames") return ArgsError("NodeNames", "at most 100000 names");
    if (!sax.names_error.empty()) return ArgsError(sax.names_error, "a non-empty string of at most 253 bytes");
    out.names = std::move(sax.names);
    out.spans = std::move(sax.spans);
  } else if (sax.names_kind != 0 && sax.names_kind != 'n') {
    return ArgsError("NodeNames", "an array of node names");
  } else if (sax.nodes_kind != 0 && sax.nodes_kind != 'n') {
    if (sax.items_kind != 'a') return ArgsError("Nodes.items", "an array of Node objects");
    if (sax.item_named.size() > kMaxNodes) return ArgsError("Nodes.items", "at most 100000 nodes");
    out.node_objects = true;
    for (size_t i = 0; i < sax.item_named.size(); ++i) {
      if (!sax.item_named[i]) {
        return ArgsError("Nodes.items[" + std::to_string(i) + "].metadata.name", "a non-empty string");
      }
      out.spans.emplace_back(static_cast<uint32_t>(out.names.size()), static_cast<uint32_t>(sax.item_names[i].size()));
      out.names += sax.item_names[i];
    }
    out.node_texts = ItemTexts(body);
    if (out.node_texts.size() != out.spans.size()) return Status::Error("ExtenderArgs: Nodes.items could not be read");
  } else {
    return ArgsError("NodeNames", "an array of node names, or 'Nodes' (a NodeList); got neither");
  }
  return out;
}

namespace {
Status ParseOneShare(const std::string& text, const std::function<Status(const std::string&)>& bad, PodShare* out);
}  // namespace

Result<PodShare> ReadPodShare(const json& pod) {
  PodShare s;
  const json* meta = Field(pod, "metadata");
  const json* ann = meta ? Field(*meta, "annotations") : nullptr;
  const json* v = ann && ann->is_object() && ann->contains(kAnnShare) ? &(*ann)[kAnnShare] : nullptr;
  if (!v) return s;
  auto bad = [&](const std::string& why) {
    return Status::Error(std::string("annotation ") + kAnnShare + ": " + why + " (written by gpucast's webhook: " +
                         "gpu=NAME,gpus=N,util=PERCENT,mem_mib=MIB,...)");
  };
  if (!v->is_string()) return bad("want a string");
  const std::string all = v->get<std::string>();
  if (all.size() > 2048) return bad("longer than 2048 bytes");
  // One share per GPU type the pod was sized for, ';'-separated (a mixed cluster's pod).
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    size_t semi = all.find(';', at);
    parts.push_back(all.substr(at, semi == std::string::npos ? std::string::npos : semi - at));
    if (semi == std::string::npos) break;
    at = semi + 1;
  }
  if (parts.size() > 16) return bad("more than 16 GPU types");
  for (size_t i = 0; i < parts.size(); ++i) {
    PodShare one;
    RETURN_IF_ERROR(ParseOneShare(parts[i], bad, &one));
    if (i == 0) {
      s = one;
    } else {
      if (one.gpus != s.gpus) return bad("gpus differ between the GPU types");
      s.alternatives.push_back(one);
    }
  }
  return s;
}

namespace {

Status ParseOneShare(const std::string& text, const std::function<Status(const std::string&)>& bad, PodShare* out) {
  PodShare& s = *out;
  bool have_gpu = false, have_util = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() + 1 : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string::npos) return bad("item '" + item.substr(0, 64) + "' is not KEY=VALUE");
    std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    auto number = [&](double lo, double hi, double* out) -> Status {
      double x = 0;
      auto [end, ec] = std::from_chars(val.data(), val.data() + val.size(), x);
      if (ec != std::errc() || end != val.data() + val.size() || !std::isfinite(x) || x < lo || x > hi) {
        return bad(key + ": want a number in [" + Num("%g", lo) + ", " + Num("%g", hi) + "], got '" +
                   val.substr(0, 64) + "'");
      }
      *out = x;
      return Status::Ok();
    };
    if (key == "gpu") {
      if (val.empty()) return bad("gpu: empty");
      s.gpu = Canonical(val);
      have_gpu = true;
    } else if (key == "gpus") {
      double g = 0;
      RETURN_IF_ERROR(number(1, 1024, &g));
      if (g != std::floor(g)) return bad("gpus: want a whole number");
      s.gpus = static_cast<int64_t>(g);
    } else if (key == "util") {
      RETURN_IF_ERROR(number(0, 100, &s.util));
      have_util = true;
    } else if (key == "mem_mib") {
      RETURN_IF_ERROR(number(0, 1e9, &s.mem_mib));
    } else if (key == "mig") {
      if (val.empty() || val.size() > 64) return bad("mig: want a MIG profile such as 1g.10gb");
      s.mig = val;
    }  // cores=, fraction=, whole=: how the share is enforced; not needed here
  }
  if (!have_gpu || !have_util) return bad("gpu and util are required");
  s.sized = true;
  return Status::Ok();
}

}  // namespace

PodShare ForNode(const PodShare& pod, const std::vector<GpuLoad>& node) {
  if (pod.alternatives.empty()) return pod;
  auto on_node = [&](const std::string& gpu) {
    return std::any_of(node.begin(), node.end(), [&](const GpuLoad& g) { return g.type == gpu; });
  };
  PodShare out = pod;
  out.alternatives.clear();
  if (on_node(pod.gpu)) return out;
  for (const PodShare& alt : pod.alternatives) {
    if (!on_node(alt.gpu)) continue;
    PodShare one = alt;
    one.alternatives.clear();
    return one;
  }
  return out;
}

Result<std::map<std::string, std::vector<GpuLoad>>> NodesFromCluster(const json& cluster,
                                                                     const std::vector<std::string>& k8s_nodes) {
  std::vector<int> order;  // cluster node ids, in first-appearance order
  std::map<int, std::vector<GpuLoad>> by_node;
  const json* gpus = cluster.is_object() && cluster.contains("gpus") ? &cluster["gpus"] : nullptr;
  if (!gpus || !gpus->is_array()) return Status::Error("cluster view: no 'gpus' array");
  for (const json& g : *gpus) {
    GpuLoad l;
    int node = g.value("node", 0);
    l.id = g.value("id", 0);
    l.type = Canonical(g.value("type", std::string()));
    l.mem_mib = g.value("mem_mib", 0.0);
    l.mem_used_mib = g.value("mem_used_mib", 0.0);
    l.exclusive = g.value("exclusive", false);
    if (g.contains("jobs") && g["jobs"].is_array()) {
      for (const json& j : g["jobs"]) {
        if (j.is_object()) l.utils.push_back(j.value("predicted_util", 0.0));
      }
    }
    if (!by_node.count(node)) order.push_back(node);
    by_node[node].push_back(std::move(l));
  }
  if (k8s_nodes.size() > order.size()) {
    return Status::Error("--k8s-node: " + std::to_string(k8s_nodes.size()) + " names for a cluster of " +
                         std::to_string(order.size()) + " node(s) ('" + cluster.value("cluster", std::string()) +
                         "'); the n-th name is the cluster's n-th node");
  }
  std::map<std::string, std::vector<GpuLoad>> out;
  for (size_t i = 0; i < k8s_nodes.size(); ++i) {
    if (out.count(k8s_nodes[i])) return Status::Error("--k8s-node '" + k8s_nodes[i] + "' given twice");
    out[k8s_nodes[i]] = by_node[order[i]];
  }
  return out;
}

NodeVerdict Evaluate(const PodShare& sized, const std::vector<GpuLoad>* node, const sim::InterferenceModel& physics) {
  NodeVerdict v;
  // A pod sized for several GPU types is judged by its share on this node's type.
  const PodShare pod = node ? ForNode(sized, *node) : sized;
  if (!pod.sized) {
    v.fits = true;
    v.reason = "not sized by gpucast";
    return v;
  }
  if (!node) {
    v.reason = "gpucast: not one of gpucast's GPU nodes (gpucast serve --k8s-node)";
    return v;
  }
  std::vector<const GpuLoad*> typed;
  for (const GpuLoad& g : *node) {
    if (g.type == pod.gpu) typed.push_back(&g);
  }
  if (typed.empty()) {
    std::string types;
    for (const GpuLoad& g : *node) {
      if (types.find(g.type) == std::string::npos) types += (types.empty() ? "" : ", ") + g.type;
    }
    std::string predicted = pod.gpu;
    for (const PodShare& alt : sized.alternatives) predicted += ", " + alt.gpu;
    v.reason = "gpucast: the pod was predicted for " + predicted + "; this node has " + (types.empty() ? "no GPUs" : types);
    return v;
  }
  if (!pod.mig.empty()) {
    // A MIG slice: an isolated partition that kube-scheduler places by the
    // node's nvidia.com/mig-<profile> capacity. gpucast's view is of whole
    // GPUs, and a slice does not share SMs, memory or L2 with its neighbours,
    // so no co-location slows it (rate 1): every node of its GPU type passes
    // with the top score, and the type check above is gpucast's only say.
    v.fits = true;
    v.score = kMaxExtenderPriority;
    v.reason = "MIG " + pod.mig + " slice of a " + pod.gpu + " (isolated; placed by its nvidia.com/mig-" + pod.mig +
               " resource)";
    return v;
  }
  if (pod.gpus > 1) {
    for (const GpuLoad* g : typed) {
      if (g->utils.empty() && !g->exclusive && g->mem_used_mib + pod.mem_mib <= g->mem_mib + 1e-6) {
        v.gpus.push_back(g->id);
      }
      if (static_cast<int64_t>(v.gpus.size()) == pod.gpus) break;
    }
    if (static_cast<int64_t>(v.gpus.size()) < pod.gpus) {
      v.gpus.clear();
      size_t idle = 0;
      for (const GpuLoad* g : typed) idle += g->utils.empty() && !g->exclusive;
      v.reason = "gpucast: needs " + std::to_string(pod.gpus) + " idle " + pod.gpu + " GPUs, this node has " +
                 std::to_string(idle);
      return v;
    }
    v.fits = true;
    v.score = kMaxExtenderPriority;
    v.reason = "whole GPUs";
    return v;
  }
  double best = -1;
  std::string why;
  for (const GpuLoad* g : typed) {
    double load = 0;
    for (double u : g->utils) load += u;
    if (g->exclusive) {
      why = "GPU " + std::to_string(g->id) + " is held by a job alone";
      continue;
    }
    if (load + pod.util > 100 + 1e-9) {
      why = "predicted utilization " + Num("%.1f", load) + "% + the pod's " + Num("%.1f", pod.util) + "% > 100%";
      continue;
    }
    if (g->mem_used_mib + pod.mem_mib > g->mem_mib + 1e-6) {
      why = "memory " + Num("%.0f", g->mem_used_mib) + " + the pod's " + Num("%.0f", pod.mem_mib) + " MiB > " +
            Num("%.0f", g->mem_mib) + " MiB";
      continue;
    }
    double rate = physics.MinRate(g->utils.data(), static_cast<int>(g->utils.size()), pod.util);
    if (rate > best) {
      best = rate;
      v.gpus = {g->id};
    }
  }
  if (best < 0) {
    v.reason = "gpucast: no " + pod.gpu + " GPU here has room (" + why + ")";
    return v;
  }
  v.fits = true;
  v.score = std::clamp<int64_t>(static_cast<int64_t>(std::floor(best * kMaxExtenderPriority + 1e-9)), 0,
                                kMaxExtenderPriority);
  v.reason = "GPU " + std::to_string(v.gpus[0]) + ", slowest job at rate " + Num("%.2f", best);
  return v;
}

Verdicts EvaluateAll(const PodShare& pod, const ExtenderArgs& args,
                     const std::map<std::string, std::vector<GpuLoad>>& nodes, const sim::InterferenceModel& physics) {
  Verdicts out;
  out.of.reserve(args.size());
  out.distinct.push_back(Evaluate(pod, nullptr, physics));  // 0: a node gpucast does not know
  if (!pod.sized) {  // no opinion: every node passes alike
    out.of.assign(args.size(), 0);
    return out;
  }
  std::map<std::string_view, uint32_t> known;  // gpucast node -> its verdict
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view name = args.name(i);
    auto it = known.find(name);
    if (it == known.end()) {
      auto node = nodes.find(std::string(name));
      if (node == nodes.end()) {
        out.of.push_back(0);
        continue;
      }
      out.distinct.push_back(Evaluate(pod, &node->second, physics));
      it = known.emplace(node->first, static_cast<uint32_t>(out.distinct.size() - 1)).first;
    }
    out.of.push_back(it->second);
  }
  return out;
}

namespace {

// JSON string literal of `s`.
std::string Quoted(std::string_view s) { return json(std::string(s)).dump(); }

}  // namespace

std::string FilterResult(const ExtenderArgs& args, const Verdicts& v, size_t max_bytes, size_t* omitted) {
  std::string out = args.node_objects ? R"({"Nodes":{"apiVersion":"v1","kind":"NodeList","items":[)"
                                      : R"({"NodeNames":[)";
  std::set<std::string_view> answered;  // each node once
  bool first = true;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!v.distinct[v.of[i]].fits || !answered.insert(args.name(i)).second) continue;
    if (!first) out += ',';
    first = false;
    if (args.node_objects) out += args.node_texts[i];
    else out += Quoted(args.name(i));
  }
  out += args.node_objects ? "]}," : "],";
  out += R"("FailedNodes":{)";
  const std::string tail = R"(},"Error":""})";
  std::vector<std::string> reasons(v.distinct.size());  // quoted once each
  size_t left_out = 0;
  first = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const NodeVerdict& nv = v.distinct[v.of[i]];
    if (nv.fits || !answered.insert(args.name(i)).second) continue;
    std::string& reason = reasons[v.of[i]];
    if (reason.empty()) reason = Quoted(nv.reason);
    const std::string name = Quoted(args.name(i));
    if (out.size() + name.size() + reason.size() + 2 + tail.size() > max_bytes) {
      ++left_out;
      continue;
    }
    if (!first) out += ',';
    first = false;
    out += name;
    out += ':';
    out += reason;
  }
  out += tail;
  if (omitted) *omitted = left_out;
  return out;
}

std::string PrioritizeResult(const ExtenderArgs& args, const Verdicts& v, size_t max_bytes, size_t* omitted) {
  std::string out = "[";
  std::set<std::string_view> answered;
  size_t left_out = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!answered.insert(args.name(i)).second) continue;
    const NodeVerdict& nv = v.distinct[v.of[i]];
    const int64_t score = nv.fits ? nv.score : 0;
    std::string item = R"({"Host":)" + Quoted(args.name(i)) + R"(,"Score":)" + std::to_string(score) + "}";
    if (score == 0 && out.size() + item.size() + 2 > max_bytes) {
      ++left_out;
      continue;
    }
    if (out.size() > 1) out += ',';
    out += item;
  }
  out += ']';
  if (omitted) *omitted = left_out;
  return out;
}

}  // namespace gpucast::service::k8s
