#include "sim/cluster.h"

#include <algorithm>
#include <map>

#include "sim/text.h"

namespace gpucast::sim {

double GpuTypeMemMib(const std::string& type) {
  static const std::map<std::string, double> kGib = {
      {"RTX3090", 24}, {"A10", 24}, {"P100", 16}, {"T4", 16}, {"V100M16", 16}, {"V100M32", 32}};
  auto it = kGib.find(type);
  return (it == kGib.end() ? 24.0 : it->second) * 1024.0;
}

namespace {

constexpr long long kMaxGpus = 1'000'000;

Status SpecError(const std::string& spec, const std::string& why) {
  return Status::Error("--cluster '" + spec + "': " + why);
}

Result<Cluster> AlibabaNodes(const std::string& spec, long long every, const std::string& data_dir) {
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
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    auto f = Split(lines[ln], ',');
    if (static_cast<int>(f.size()) <= std::max(c_g, c_m))
      return Status::Error(file + ": line " + std::to_string(ln + 1) + ": too few fields");
    auto g = ParseInt(f[c_g]);
    if (!g || *g < 0 || *g > 64)
      return Status::Error(file + ": line " + std::to_string(ln + 1) + ": gpu '" + std::string(f[c_g]) + "' is not in [0, 64]");
    if ((ln - 1) % static_cast<size_t>(every) != 0) continue;
    std::string type(f[c_m]);
    for (long long i = 0; i < *g; ++i)
      c.gpus.push_back({static_cast<int>(c.gpus.size()), node, type, GpuTypeMemMib(type)});
    ++node;
  }
  if (c.gpus.empty()) return SpecError(spec, "selects no GPUs");
  return c;
}

}  // namespace

Result<Cluster> ParseCluster(const std::string& spec, const std::string& data_dir) {
  if (spec.rfind("alibaba-nodes", 0) == 0) {
    std::string rest = spec.substr(13);
    long long every = 1;
    if (!rest.empty()) {
      if (rest.rfind(":every=", 0) != 0) return SpecError(spec, "want alibaba-nodes[:every=N]");
      auto e = ParseInt(rest.substr(7));
      if (!e || *e < 1) return SpecError(spec, "every must be a positive integer");
      every = *e;
    }
    return AlibabaNodes(spec, every, data_dir);
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
  double mem = mem_mib > 0 ? mem_mib : GpuTypeMemMib(type);
  for (long long i = 0; i < n; ++i)
    c.gpus.push_back({static_cast<int>(i), static_cast<int>(i / per_node), type, mem});
  return c;
}

}  // namespace gpucast::sim
