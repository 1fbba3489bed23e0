#include "sim/cluster.h"

#include <algorithm>
#include <map>

#include "features/gpu_specs.h"
#include "sim/text.h"

namespace gpucast::sim {

namespace {

constexpr long long kMaxGpus = 1'000'000;

Status SpecError(const std::string& spec, const std::string& why) {
  return Status::Error("--cluster '" + spec + "': " + why);
}

// Alibaba's anonymised GPU models and what they stand in as by default.
const std::map<std::string, std::string>& AlibabaStandIns() {
  static const std::map<std::string, std::string> m = {{"G2", "RTX3090"}, {"G3", "RTX3090"}};
  return m;
}

Result<Cluster> AlibabaNodes(const std::string& spec, long long every, const std::map<std::string, std::string>& map,
                             const std::string& data_dir) {
  const std::string path = data_dir + "/alibaba-gpu-v2023/openb_node_list_gpu_node.csv";
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto lines = Lines(*text);
  const std::string file = BaseName(path);
  if (lines.empty()) return Status::Error(file + ": empty file");
  auto header = Split(lines[0], ',');
  int c_g = ColumnIndex(header, "gpu"), c_m = ColumnIndex(header, "model");
  if (c_g < 0 || c_m < 0) return Status::Error(file + ": line 1: want columns gpu,model");
  Cluster c;
  c.spec = spec;
  int node = 0;
  std::map<std::string, GpuType> types;  // trace model -> resolved
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    const std::string where = file + ": line " + std::to_string(ln + 1) + ": ";
    auto f = Split(lines[ln], ',');
    if (static_cast<int>(f.size()) <= std::max(c_g, c_m)) return Status::Error(where + "too few fields");
    auto g = ParseInt(f[c_g]);
    if (!g || *g < 0 || *g > 64) return Status::Error(where + "gpu '" + std::string(f[c_g]) + "' is not in [0, 64]");
    if ((ln - 1) % static_cast<size_t>(every) != 0) continue;
    std::string model(f[c_m]);
    auto it = types.find(model);
    if (it == types.end()) {
      auto m = map.find(model);
      auto t = ResolveGpuType(m == map.end() ? model : m->second);
      if (!t.ok())
        return Status::Error(where + "model '" + model + "'" +
                             (m == map.end() ? std::string() : " (mapped to '" + m->second + "')") + ": " + t.message());
      it = types.emplace(model, *t).first;
    }
    for (long long i = 0; i < *g; ++i)
      c.gpus.push_back({static_cast<int>(c.gpus.size()), node, it->second.name, it->second.mem_mib});
    ++node;
  }
  if (c.gpus.empty()) return SpecError(spec, "selects no GPUs");
  return c;
}

}  // namespace

Result<GpuType> ResolveGpuType(const std::string& type) {
  ASSIGN_OR_RETURN(std::string name, CanonicalGpuName(type));
  const GpuSpec* s = FindGpuSpec(name);
  if (!s || s->memory_gib <= 0) return Status::Error("GPU type '" + type + "' has no memory size in the GPU table");
  return GpuType{s->name, s->memory_gib * 1024.0};
}

namespace {

// One node group, "64x RTX3090" or "nodes=N,gpus_per_node=M[,mem_gib=G][,type=T]"
// (or "gpus=N,..."), appended to `c` from node `first_node` on. Errors name
// the group as `part`.
Status AddGroup(const std::string& spec, const std::string& part, const std::string& group, Cluster* c) {
  auto err = [&](const std::string& why) { return SpecError(spec, part + why); };
  long long n = 0, per_node = 8;
  std::string type = "RTX3090";
  double mem_mib = -1;
  size_t x = group.find('x');
  if (group.empty()) return err("empty (want 'Nx TYPE' or nodes=N,gpus_per_node=M,type=T)");
  if (group.find('=') == std::string::npos && x != std::string::npos) {
    // "64x RTX3090" / "64xRTX3090"
    auto cnt = ParseInt(std::string_view(group).substr(0, x));
    if (!cnt || *cnt < 1 || *cnt > kMaxGpus) return err("GPU count must be in [1, 1000000]");
    n = *cnt;
    std::string t = group.substr(x + 1);
    while (!t.empty() && t.front() == ' ') t.erase(t.begin());
    while (!t.empty() && t.back() == ' ') t.pop_back();
    if (t.empty()) return err("missing GPU type after 'x'");
    type = t;
  } else {
    long long nodes = -1;
    std::map<std::string, int> seen;
    for (std::string_view kv : Split(group, ',')) {
      size_t eq = kv.find('=');
      if (eq == std::string_view::npos) return err("'" + std::string(kv) + "' is not key=value");
      std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (seen[std::string(k)]++) return err("'" + std::string(k) + "' given twice");
      if (k == "type") {
        if (v.empty()) return err("type is empty");
        type = std::string(v);
        continue;
      }
      if (k == "mem_gib") {
        auto m = ParseDouble(v);
        if (!m || *m <= 0 || *m > 4096) return err("mem_gib must be in (0, 4096]");
        mem_mib = *m * 1024;
        continue;
      }
      auto iv = ParseInt(v);
      if (k != "nodes" && k != "gpus_per_node" && k != "gpus")
        return err("unknown key '" + std::string(k) + "' (want nodes, gpus_per_node, gpus, mem_gib, type)");
      if (!iv || *iv < 1 || *iv > kMaxGpus) return err(std::string(k) + " must be a positive integer");
      if (k == "nodes") nodes = *iv;
      else if (k == "gpus_per_node") per_node = *iv;
      else n = *iv;
    }
    if (nodes > 0 && n > 0) return err("give nodes (with gpus_per_node) or gpus, not both");
    if (nodes > 0) {
      if (nodes * per_node > kMaxGpus) return err("more than 1000000 GPUs");
      n = nodes * per_node;
    }
    if (n <= 0) return err("want nodes=N,gpus_per_node=M or gpus=N or 'Nx TYPE'");
  }
  auto t = ResolveGpuType(type);
  if (!t.ok()) return err(t.message());
  if (static_cast<long long>(c->gpus.size()) + n > kMaxGpus) return err("more than 1000000 GPUs in the cluster");
  const double mem = mem_mib > 0 ? mem_mib : t->mem_mib;
  const int first_node = c->gpus.empty() ? 0 : c->gpus.back().node + 1;
  for (long long i = 0; i < n; ++i)
    c->gpus.push_back({static_cast<int>(c->gpus.size()), first_node + static_cast<int>(i / per_node), t->name, mem});
  return Status::Ok();
}

}  // namespace

Result<Cluster> ParseCluster(const std::string& spec, const std::string& data_dir) {
  if (spec.rfind("alibaba-nodes", 0) == 0) {
    if (spec.find(';') != std::string::npos)
      return SpecError(spec, "alibaba-nodes cannot be combined with other node groups (';')");
    long long every = 1;
    std::map<std::string, std::string> map = AlibabaStandIns();
    std::string rest = spec.substr(13);
    if (!rest.empty() && rest[0] != ':') return SpecError(spec, "want alibaba-nodes[:every=N][:G2=TYPE][:G3=TYPE]");
    const std::vector<std::string_view> opts =
        rest.empty() ? std::vector<std::string_view>{} : Split(std::string_view(rest).substr(1), ':');
    for (std::string_view opt : opts) {
      size_t eq = opt.find('=');
      if (eq == std::string_view::npos) return SpecError(spec, "'" + std::string(opt) + "' is not key=value");
      std::string k(opt.substr(0, eq)), v(opt.substr(eq + 1));
      if (k == "every") {
        auto e = ParseInt(v);
        if (!e || *e < 1) return SpecError(spec, "every must be a positive integer");
        every = *e;
      } else if (map.count(k)) {
        map[k] = v;
      } else {
        return SpecError(spec, "unknown option '" + k + "' (want every, G2, G3)");
      }
    }
    return AlibabaNodes(spec, every, map, data_dir);
  }
  Cluster c;
  c.spec = spec;
  // Node groups separated by ';', each on nodes of its own; a group's errors name it.
  const std::vector<std::string_view> groups = Split(spec, ';');
  for (size_t i = 0; i < groups.size(); ++i) {
    std::string g(groups[i]);
    while (!g.empty() && g.front() == ' ') g.erase(g.begin());
    while (!g.empty() && g.back() == ' ') g.pop_back();
    const std::string part =
        groups.size() == 1 ? "" : "node group " + std::to_string(i + 1) + " '" + g + "': ";
    if (g.rfind("alibaba-nodes", 0) == 0)
      return SpecError(spec, part + "alibaba-nodes cannot be combined with other node groups (';')");
    RETURN_IF_ERROR(AddGroup(spec, part, g, &c));
  }
  return c;
}

std::vector<NodeGroup> NodeGroups(const Cluster& c) {
  std::vector<NodeGroup> out;
  size_t i = 0;
  while (i < c.gpus.size()) {
    // One node: its GPUs (consecutive ids).
    size_t j = i;
    while (j < c.gpus.size() && c.gpus[j].node == c.gpus[i].node) ++j;
    const Gpu& g = c.gpus[i];
    bool uniform = true;
    for (size_t k = i; k < j; ++k) uniform = uniform && c.gpus[k].type == g.type && c.gpus[k].mem_mib == g.mem_mib;
    const int per_node = static_cast<int>(j - i);
    NodeGroup* last = out.empty() ? nullptr : &out.back();
    if (uniform && last && last->type == g.type && last->mem_mib == g.mem_mib && last->gpus_per_node == per_node) {
      ++last->nodes;
    } else if (uniform) {
      out.push_back({g.type, g.mem_mib, 1, per_node, g.node, g.id});
    } else {  // a node of several types (not from a spec): one group per GPU
      for (size_t k = i; k < j; ++k) out.push_back({c.gpus[k].type, c.gpus[k].mem_mib, 1, 1, g.node, c.gpus[k].id});
    }
    i = j;
  }
  return out;
}

std::vector<std::string> GpuTypes(const Cluster& c) {
  std::vector<std::string> out;
  for (const Gpu& g : c.gpus)
    if (std::find(out.begin(), out.end(), g.type) == out.end()) out.push_back(g.type);
  return out;
}

}  // namespace gpucast::sim
