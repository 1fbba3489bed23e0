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
  if (!text) return Status::Error(path + ": cannot open");
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

Result<Cluster> ParseCluster(const std::string& spec, const std::string& data_dir) {
  if (spec.rfind("alibaba-nodes", 0) == 0) {
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
  long long n = 0, per_node = 8;
  std::string type = "RTX3090";
  double mem_mib = -1;
  size_t x = spec.find('x');
  if (spec.find('=') == std::string::npos && x != std::string::npos) {
    // "64x RTX3090" / "64xRTX3090"
    auto cnt = ParseInt(std::string_view(spec).substr(0, x));
    if (!cnt || *cnt < 1 || *cnt > kMaxGpus) return SpecError(spec, "GPU count must be in [1, 1000000]");
    n = *cnt;
    std::string t = spec.substr(x + 1);
    while (!t.empty() && t.front() == ' ') t.erase(t.begin());
    if (t.empty()) return SpecError(spec, "missing GPU type after 'x'");
    type = t;
  } else {
    long long nodes = -1;
    for (std::string_view kv : Split(spec, ',')) {
      size_t eq = kv.find('=');
      if (eq == std::string_view::npos) return SpecError(spec, "'" + std::string(kv) + "' is not key=value");
      std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "type") { type = std::string(v); continue; }
      if (k == "mem_gib") {
        auto m = ParseDouble(v);
        if (!m || *m <= 0 || *m > 4096) return SpecError(spec, "mem_gib must be in (0, 4096]");
        mem_mib = *m * 1024;
        continue;
      }
      auto iv = ParseInt(v);
      if (!iv || *iv < 1 || *iv > kMaxGpus) return SpecError(spec, std::string(k) + " must be a positive integer");
      if (k == "nodes") nodes = *iv;
      else if (k == "gpus_per_node") per_node = *iv;
      else if (k == "gpus") n = *iv;
      else return SpecError(spec, "unknown key '" + std::string(k) + "' (want nodes, gpus_per_node, gpus, mem_gib, type)");
    }
    if (nodes > 0) {
      if (nodes * per_node > kMaxGpus) return SpecError(spec, "more than 1000000 GPUs");
      n = nodes * per_node;
    }
    if (n <= 0) return SpecError(spec, "want nodes=N,gpus_per_node=M or gpus=N or 'Nx TYPE'");
  }
  auto t = ResolveGpuType(type);
  if (!t.ok()) return SpecError(spec, t.message());
  double mem = mem_mib > 0 ? mem_mib : t->mem_mib;
  for (long long i = 0; i < n; ++i)
    c.gpus.push_back({static_cast<int>(i), static_cast<int>(i / per_node), t->name, mem});
  return c;
}

}  // namespace gpucast::sim
