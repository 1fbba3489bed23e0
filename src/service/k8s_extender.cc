#include "service/k8s_extender.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "features/gpu_specs.h"
#include "service/http_util.h"
#include "service/k8s_admission.h"

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

Result<ExtenderArgs> ParseExtenderArgs(std::string_view body) {
  Result<json> parsed = ParseJson(body);
  if (!parsed.ok()) return parsed.status().Prefixed("ExtenderArgs");
  json j = std::move(parsed).value();
  if (!j.is_object()) return Status::Error("ExtenderArgs: want a JSON object");
  ExtenderArgs out;
  const json* pod = Field(j, "Pod");
  if (!pod || !pod->is_object()) return ArgsError("Pod", "a Pod object");
  out.pod = *pod;
  const json* names = Field(j, "NodeNames");
  const json* nodes = Field(j, "Nodes");
  if (names && !names->is_null()) {
    if (!names->is_array()) return ArgsError("NodeNames", "an array of node names");
    if (names->size() > kMaxNodes) return ArgsError("NodeNames", "at most 100000 names");
    for (size_t i = 0; i < names->size(); ++i) {
      const json& n = (*names)[i];
      if (!n.is_string() || n.get<std::string>().empty() || n.get<std::string>().size() > 253) {
        return ArgsError("NodeNames[" + std::to_string(i) + "]", "a non-empty string of at most 253 bytes");
      }
      out.node_names.push_back(n.get<std::string>());
    }
  } else if (nodes && !nodes->is_null()) {
    const json* items = Field(*nodes, "items");
    if (!items || !items->is_array()) return ArgsError("Nodes.items", "an array of Node objects");
    if (items->size() > kMaxNodes) return ArgsError("Nodes.items", "at most 100000 nodes");
    out.node_objects = true;
    for (size_t i = 0; i < items->size(); ++i) {
      const json& node = (*items)[i];
      const json* meta = Field(node, "metadata");
      const json* name = meta ? Field(*meta, "name") : nullptr;
      if (!name || !name->is_string() || name->get<std::string>().empty()) {
        return ArgsError("Nodes.items[" + std::to_string(i) + "].metadata.name", "a non-empty string");
      }
      out.node_names.push_back(name->get<std::string>());
      out.nodes.push_back(node);
    }
  } else {
    return ArgsError("NodeNames", "an array of node names, or 'Nodes' (a NodeList); got neither");
  }
  return out;
}

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
  std::string text = v->get<std::string>();
  if (text.size() > 1024) return bad("longer than 1024 bytes");
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
    }  // cores=, fraction=, whole=: how the share is enforced; not needed here
  }
  if (!have_gpu || !have_util) return bad("gpu and util are required");
  s.sized = true;
  return s;
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

NodeVerdict Evaluate(const PodShare& pod, const std::vector<GpuLoad>* node, const sim::InterferenceModel& physics) {
  NodeVerdict v;
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
    v.reason = "gpucast: the pod was predicted for " + pod.gpu + "; this node has " + (types.empty() ? "no GPUs" : types);
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

json FilterResult(const ExtenderArgs& args, const std::vector<NodeVerdict>& verdicts) {
  json names = json::array(), items = json::array(), failed = json::object();
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    if (verdicts[i].fits) {
      names.push_back(args.node_names[i]);
      if (args.node_objects) items.push_back(args.nodes[i]);
    } else {
      failed[args.node_names[i]] = verdicts[i].reason;
    }
  }
  json out = {{"FailedNodes", failed}, {"Error", ""}};
  if (args.node_objects) {
    out["Nodes"] = {{"apiVersion", "v1"}, {"kind", "NodeList"}, {"items", items}};
  } else {
    out["NodeNames"] = names;
  }
  return out;
}

json PrioritizeResult(const ExtenderArgs& args, const std::vector<NodeVerdict>& verdicts) {
  json out = json::array();
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    out.push_back({{"Host", args.node_names[i]}, {"Score", verdicts[i].fits ? verdicts[i].score : 0}});
  }
  return out;
}

}  // namespace gpucast::service::k8s
