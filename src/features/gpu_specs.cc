// Lookups in the GPU table (gpu_table.cc): names, aliases, the closest names of
// an unknown one, and the effective spec of a whole GPU or a MIG slice.
#include "features/gpu_specs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>

#include "features/gpu_table.h"

namespace gpucast {

namespace {

std::string Lower(const std::string& s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "MIG 3g.40gb", "3G.40GB", "3g.40g" -> "3g40g".
std::string MigKey(const std::string& name) {
  std::string s = Lower(name);
  size_t i = s.find_first_not_of(" ");
  if (i != std::string::npos && s.compare(i, 3, "mig") == 0) s = s.substr(i + 3);
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += c;
  for (size_t p; (p = out.find("gb")) != std::string::npos;) out.replace(p, 2, "g");
  return out;
}

// Every name and alias of the table by its key. Two rows claiming one key is a
// table error that GpuSpecsTest.EveryNameReachesItsOwnRow catches: the first wins.
const std::map<std::string, const GpuTableRow*>& Index() {
  static const std::map<std::string, const GpuTableRow*> index = [] {
    std::map<std::string, const GpuTableRow*> m;
    for (const GpuTableRow& r : GpuTable()) {
      m.emplace(GpuNameKey(r.spec.name), &r);
      for (const std::string& a : r.aliases) m.emplace(GpuNameKey(a), &r);
    }
    return m;
  }();
  return index;
}

const GpuTableRow* FindRow(const std::string& name) {
  std::string key = GpuNameKey(name);
  if (key.empty()) return nullptr;
  auto it = Index().find(key);
  return it == Index().end() ? nullptr : it->second;
}

// Optimal-string-alignment (Damerau) distance: insertions, deletions,
// substitutions and transpositions of neighbours ("3900" -> "3090" is 1).
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::string GpuNameKey(const std::string& name) {
  std::string s = Lower(name);
  // "max-q" / "max q" -> "maxq" before splitting on punctuation.
  for (const char* mq : {"max-q", "max q", "max_q"})
    for (size_t p; (p = s.find(mq)) != std::string::npos;) s.replace(p, std::string(mq).size(), "maxq");
  std::vector<std::string> words;
  std::string w;
  for (char c : s + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      w += c;
    } else if (!w.empty()) {
      words.push_back(w);
      w.clear();
    }
  }
  std::string key;
  for (std::string& word : words) {
    if (word == "nvidia" || word == "tesla" || word == "geforce" || word == "quadro" || word == "gpu" ||
        word == "with" || word == "design" || word == "generation")
      continue;
    if (word == "mobile" || word == "notebook") word = "laptop";
    key += word;
  }
  for (size_t p; (p = key.find("gb")) != std::string::npos;) key.replace(p, 2, "g");
  return key;
}

const std::vector<GpuSpec>& GpuSpecs() {
  static const std::vector<GpuSpec> specs = [] {
    std::vector<GpuSpec> v;
    for (const GpuTableRow& r : GpuTable()) v.push_back(r.spec);
    return v;
  }();
  return specs;
}

const GpuSpec* FindGpuSpec(const std::string& name) {
  const GpuTableRow* row = FindRow(name);
  if (!row) return nullptr;
  return &GpuSpecs()[static_cast<size_t>(row - GpuTable().data())];
}

const std::vector<MigProfile>& MigProfiles(const std::string& gpu) {
  static const std::vector<MigProfile> none;
  const GpuTableRow* row = FindRow(gpu);
  return row ? row->mig : none;
}

const MigProfile* FindMigProfile(const std::string& gpu, const std::string& profile) {
  const std::string key = MigKey(profile);
  if (key.empty()) return nullptr;
  for (const MigProfile& p : MigProfiles(gpu))
    if (MigKey(p.name) == key) return &p;
  return nullptr;
}

MigSlices MigSlicesOf(const MigProfile& p) {
  return {p.compute_slices, static_cast<int>(std::lround(p.mem_bw_fraction * 8))};
}

MigSlices GpuMigSlices(const std::string& gpu) {
  MigSlices all;
  for (const MigProfile& p : MigProfiles(gpu)) {
    const MigSlices s = MigSlicesOf(p);
    all.compute = std::max(all.compute, s.compute);
    all.memory = std::max(all.memory, s.memory);
  }
  return all;
}

Result<std::string> CanonicalMigProfile(const std::string& profile) {
  std::vector<std::string> names;  // every profile of the table, once, in table order
  const std::string key = MigKey(profile);
  for (const GpuTableRow& r : GpuTable()) {
    for (const MigProfile& p : r.mig) {
      if (!key.empty() && MigKey(p.name) == key) return p.name;
      if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
    }
  }
  std::string shown = profile.substr(0, 64);
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  if (profile.size() > 64) shown += "...";
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return Status::Error("unknown MIG profile '" + shown + "' (MIG profiles of gpucast's GPUs: " + list +
                       "; gpucast gpus --json lists each GPU's)");
}

const std::vector<std::string>& GpuAliases(const std::string& gpu) {
  static const std::vector<std::string> none;
  const GpuTableRow* row = FindRow(gpu);
  return row ? row->aliases : none;
}

std::string KnownGpuNames() {
  std::string known;
  for (const GpuSpec& s : GpuSpecs()) known += (known.empty() ? "" : ", ") + s.name;
  return known;
}

std::vector<std::string> ClosestGpuNames(const std::string& name, size_t n) {
  const std::string key = GpuNameKey(name);
  // (distance, -common prefix length, table index) of each GPU's nearest name.
  struct Near {
    size_t distance;
    size_t prefix;
    size_t row;
  };
  auto prefix = [&](const std::string& k) {
    size_t n = 0;
    while (n < k.size() && n < key.size() && k[n] == key[n]) ++n;
    return n;
  };
  std::vector<Near> by;
  const std::vector<GpuTableRow>& table = GpuTable();
  for (size_t i = 0; i < table.size(); ++i) {
    Near best{SIZE_MAX, 0, i};
    std::vector<std::string> names = table[i].aliases;
    names.push_back(table[i].spec.name);
    for (const std::string& n : names) {
      std::string k = GpuNameKey(n);
      Near c{EditDistance(key, k), prefix(k), i};
      if (c.distance < best.distance || (c.distance == best.distance && c.prefix > best.prefix)) best = c;
    }
    by.push_back(best);
  }
  // Nearest first; among equals the longer common prefix ("rtx3900": RTX3080 before RTX4000).
  std::stable_sort(by.begin(), by.end(), [](const Near& a, const Near& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.prefix > b.prefix;
  });
  std::vector<std::string> out;
  for (size_t k = 0; k < by.size() && k < n; ++k) out.push_back(table[by[k].row].spec.name);
  return out;
}

Result<std::string> CanonicalGpuName(const std::string& name) {
  if (const GpuTableRow* row = FindRow(name)) return row->spec.name;
  std::string closest;
  for (const std::string& c : ClosestGpuNames(name, 5)) closest += (closest.empty() ? "" : ", ") + c;
  return Status::Error("unknown GPU '" + name + "'; closest: " + closest + " (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)");
}

double SustainedComputeFraction(const GpuSpec& gpu) {
  static const char* const kFitted[] = {"Pascal", "Volta", "Turing", "Ampere"};
  if (std::find(std::begin(kFitted), std::end(kFitted), gpu.architecture) == std::end(kFitted)) return 1;
  if (!(gpu.power_w > 0) || gpu.sms <= 0 || !(gpu.compute_fraction > 0)) return 1;
  const double w = gpu.power_w / (gpu.sms / gpu.compute_fraction);
  if (w >= kPowerW1PerSm) return 1;
  // Below w0 the fit says nothing (no compute at all); no table row is there (the lowest, the L4, is Ada).
  return std::cbrt(std::max(w - kPowerW0PerSm, 0.0) / (kPowerW1PerSm - kPowerW0PerSm));
}

Result<GpuSpec> ResolveGpu(const std::string& gpu, const std::string& mig_profile) {
  ASSIGN_OR_RETURN(std::string canonical, CanonicalGpuName(gpu));
  const GpuTableRow* row = FindRow(canonical);
  GpuSpec s = row->spec;
  if (mig_profile.empty()) return s;
  if (row->mig.empty()) {
    std::string capable;
    for (const GpuTableRow& r : GpuTable())
      if (!r.mig.empty()) capable += (capable.empty() ? "" : ", ") + r.spec.name;
    return Status::Error("GPU '" + s.name + "' has no MIG profiles (MIG-capable: " + capable + ")");
  }
  if (const MigProfile* found = FindMigProfile(canonical, mig_profile)) {
    const MigProfile& p = *found;
    const double f = static_cast<double>(p.sms) / s.sms;
    s.fp32_flops *= f;
    s.fp16_tensor_flops *= f;
    s.bf16_tensor_flops *= f;
    s.tf32_tensor_flops *= f;
    s.mem_bandwidth *= p.mem_bw_fraction;
    s.memory_gib = p.memory_gib;
    s.sms = p.sms;
    s.mig_profile = p.name;
    s.compute_fraction = f;
    s.mem_bw_fraction = p.mem_bw_fraction;
    return s;
  }
  std::string names;
  for (const MigProfile& p : row->mig) names += (names.empty() ? "" : ", ") + p.name;
  return Status::Error("GPU '" + s.name + "' has no MIG profile '" + mig_profile + "' (profiles: " +
                       names + ")");
}

}  // namespace gpucast
