// A site's GPU table: parsing and checking (site_gpus.h).
#include "features/site_gpus.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>

#include <nlohmann/json.hpp>

#include "features/gpu_specs.h"
#include "util/bounded_read.h"
#include "util/json_text.h"

namespace gpucast {
namespace {

using nlohmann::json;

constexpr double kTera = 1e12, kGiga = 1e9;

// One numeric field of a row: its JSON key, where it goes (scaled by `scale`), its range, and
// whether the row must give it. Integers must be whole numbers.
struct NumField {
  const char* key;
  double lo, hi;
  bool required, integer;
  double scale;
  void (*set)(GpuSpec&, double);
};

const NumField kNumFields[] = {
    {"fp32_tflops", 1e-3, 1000, true, false, kTera, [](GpuSpec& s, double v) { s.fp32_flops = v; }},
    {"fp16_tensor_tflops", 1e-3, 20000, true, false, kTera, [](GpuSpec& s, double v) { s.fp16_tensor_flops = v; }},
    {"bf16_tensor_tflops", 0, 20000, false, false, kTera, [](GpuSpec& s, double v) { s.bf16_tensor_flops = v; }},
    {"tf32_tensor_tflops", 0, 20000, false, false, kTera, [](GpuSpec& s, double v) { s.tf32_tensor_flops = v; }},
    {"memory_gb", 0.5, 1024, true, false, 1, [](GpuSpec& s, double v) { s.memory_gib = v; }},
    {"mem_bandwidth_gbs", 1, 100000, true, false, kGiga, [](GpuSpec& s, double v) { s.mem_bandwidth = v; }},
    {"sms", 1, 1024, true, true, 1, [](GpuSpec& s, double v) { s.sms = static_cast<int>(v); }},
    {"boost_mhz", 0, 5000, false, false, 1, [](GpuSpec& s, double v) { s.boost_mhz = s.boost_mhz_min = v; }},
    {"power_w", 0, 5000, false, false, 1, [](GpuSpec& s, double v) { s.power_w = s.power_w_min = v; }},
    {"pcie_gen", 0, 7, false, true, 1, [](GpuSpec& s, double v) { s.pcie_gen = static_cast<int>(v); }},
    {"pcie_lanes", 0, 16, false, true, 1, [](GpuSpec& s, double v) { s.pcie_lanes = static_cast<int>(v); }},
    {"nvlink_gen", 0, 6, false, true, 1, [](GpuSpec& s, double v) { s.nvlink_gen = static_cast<int>(v); }},
    {"nvlink_links", 0, 36, false, true, 1, [](GpuSpec& s, double v) { s.nvlink_links = static_cast<int>(v); }},
    {"nvlink_gbs", 0, 10000, false, false, kGiga, [](GpuSpec& s, double v) { s.nvlink_bandwidth = v; }},
};

// The words a text field may be (the built-in table's words); empty: any text.
struct TextField {
  const char* key;
  bool required;
  size_t max_chars;
  std::vector<std::string> words;
  void (*set)(GpuSpec&, const std::string&);
};

const std::vector<TextField>& TextFields() {
  static const std::vector<TextField> fields = {
      {"architecture", true, 16, {"Pascal", "Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell"},
       [](GpuSpec& s, const std::string& v) { s.architecture = v; }},
      {"gpu_class", false, 16, {"datacenter", "workstation", "desktop", "laptop"},
       [](GpuSpec& s, const std::string& v) { s.gpu_class = v; }},
      {"form_factor", false, 16, {"SXM2", "SXM4", "SXM5", "SXM6", "PCIe", "laptop"},
       [](GpuSpec& s, const std::string& v) { s.form_factor = v; }},
      {"source", true, 2000, {}, [](GpuSpec& s, const std::string& v) { s.source = v; }},
  };
  return fields;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Printable ASCII only: names end up in CSV rows, JSON, Slurm comments and HTTP headers.
bool Printable(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7F; });
}

// A canonical name as gpucast's own are spelled: letters, digits, '.', '_', '-'.
bool CanonicalSpelling(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

Result<GpuTableRow> ParseRow(const json& r, const std::string& where,
                             std::map<std::string, std::string>* taken /* key -> whose */) {
  if (!r.is_object()) return Status::Error(where + ": want an object, got " + std::string(r.type_name()));
  GpuTableRow row;
  // The row's label in errors: its name, where it has one.
  std::string at = where;
  if (auto n = r.find("name"); n != r.end() && n->is_string() && n->get<std::string>().size() <= 64 &&
      Printable(n->get<std::string>()))
    at += " ('" + n->get<std::string>() + "')";
  // Every key must be one the format names.
  for (const auto& [key, value] : r.items()) {
    bool known = key == "name" || key == "aliases" || key == "nvlink_bridge";
    for (const NumField& f : kNumFields) known = known || key == f.key;
    for (const TextField& f : TextFields()) known = known || key == f.key;
    if (!known) {
      std::vector<std::string> keys = {"name", "aliases", "nvlink_bridge"};
      for (const NumField& f : kNumFields) keys.push_back(f.key);
      for (const TextField& f : TextFields()) keys.push_back(f.key);
      return Status::Error(at + ": unknown field '" + key.substr(0, 64) + "' (fields: " + Join(keys) + ")");
    }
  }
  // The name.
  auto name = r.find("name");
  if (name == r.end() || !name->is_string())
    return Status::Error(where + ": 'name' is required, a string such as \"A10G\"");
  row.spec.name = name->get<std::string>();
  if (row.spec.name.empty() || row.spec.name.size() > 64 || !CanonicalSpelling(row.spec.name) ||
      GpuNameKey(row.spec.name).empty())
    return Status::Error(where + ": 'name' must be 1-64 letters, digits, '.', '_' or '-' (the other spellings, "
                         "e.g. what nvidia-smi prints, go in 'aliases')");
  // Aliases.
  if (auto a = r.find("aliases"); a != r.end()) {
    if (!a->is_array() || a->size() > 16)
      return Status::Error(at + ": 'aliases' must be an array of at most 16 strings");
    for (const json& s : *a) {
      if (!s.is_string()) return Status::Error(at + ": 'aliases' must be an array of at most 16 strings");
      const std::string alias = s.get<std::string>();
      if (alias.empty() || alias.size() > 128 || !Printable(alias) || GpuNameKey(alias).empty())
        return Status::Error(at + ": alias '" + alias.substr(0, 64) + "' must be 1-128 printable characters " +
                             "with a letter or digit that is not a vendor word (NVIDIA, GeForce, GPU, ...)");
      row.aliases.push_back(alias);
    }
  }
  // Every name must be new: not gpucast's, not another site row's.
  std::vector<std::string> names = row.aliases;
  names.insert(names.begin(), row.spec.name);
  for (const std::string& n : names)
    if (auto it = taken->find(GpuNameKey(n)); it != taken->end())
      return Status::Error(at + ": the name '" + n + "' is " + it->second +
                           " already; a site table adds GPUs gpucast does not list, it cannot rename or change one");
  for (const std::string& n : names) taken->emplace(GpuNameKey(n), "the site's " + row.spec.name);
  // Numbers.
  for (const NumField& f : kNumFields) {
    auto v = r.find(f.key);
    if (v == r.end()) {
      if (f.required) return Status::Error(at + ": '" + f.key + "' is required");
      continue;
    }
    if (!v->is_number()) return Status::Error(at + ": '" + f.key + "' must be a number");
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < f.lo || x > f.hi || (f.integer && x != std::floor(x))) {
      char range[96];
      std::snprintf(range, sizeof range, "%s%g to %g", f.integer ? "a whole number from " : "", f.lo, f.hi);
      return Status::Error(at + ": '" + f.key + "' is " + v->dump() + "; want " + range);
    }
    f.set(row.spec, x * f.scale);
  }
  for (const TextField& f : TextFields()) {
    auto v = r.find(f.key);
    if (v == r.end()) {
      if (f.required)
        return Status::Error(at + ": '" + f.key + "' is required" +
                             (f.words.empty() ? std::string(" (where the numbers come from: a datasheet, a URL)")
                                              : " (one of " + Join(f.words) + ")"));
      continue;
    }
    const std::string text = v->is_string() ? v->get<std::string>() : "";
    if (!v->is_string() || text.empty() || text.size() > f.max_chars ||
        (!f.words.empty() && std::find(f.words.begin(), f.words.end(), text) == f.words.end()))
      return Status::Error(at + ": '" + f.key + "' must be " +
                           (f.words.empty() ? "a string of 1-" + std::to_string(f.max_chars) + " characters"
                                            : "one of " + Join(f.words)));
    f.set(row.spec, text);
  }
  if (auto b = r.find("nvlink_bridge"); b != r.end()) {
    if (!b->is_boolean()) return Status::Error(at + ": 'nvlink_bridge' must be true or false");
    row.spec.nvlink_bridge = b->get<bool>();
  }
  // What the numbers must satisfy together.
  const GpuSpec& s = row.spec;
  if (s.fp16_tensor_flops < s.fp32_flops)
    return Status::Error(at + ": 'fp16_tensor_tflops' is below 'fp32_tflops'; give the rate autocast's FP16 matmuls "
                         "run at with FP32 accumulate (the FP32 rate on a GPU without faster FP16)");
  if ((s.pcie_gen > 0) != (s.pcie_lanes > 0) || (s.pcie_gen > 0 && s.pcie_gen < 3))
    return Status::Error(at + ": 'pcie_gen' (3 or later) and 'pcie_lanes' go together");
  if ((s.nvlink_gen > 0) != (s.nvlink_bandwidth > 0))
    return Status::Error(at + ": 'nvlink_gen' and 'nvlink_gbs' (one direction, all links) go together");
  if (s.nvlink_links > 0 && s.nvlink_gen == 0) return Status::Error(at + ": 'nvlink_links' without 'nvlink_gen'");
  if (s.nvlink_bridge && s.nvlink_gen == 0) return Status::Error(at + ": 'nvlink_bridge' without 'nvlink_gen'");
  return row;
}

}  // namespace

Result<std::vector<GpuTableRow>> ParseSiteGpuTable(std::string_view text, const std::string& path) {
  const std::string file = "site GPU table " + path;
  if (text.size() > kMaxSiteGpuTableBytes)
    return Status::Error(file + ": " + std::to_string(text.size()) + " bytes, over the " +
                         std::to_string(kMaxSiteGpuTableBytes) + "-byte limit");
  if (JsonNestedDeeperThan(text, 4)) return Status::Error(file + ": nested deeper than {\"gpus\": [{\"aliases\": [...]}]}");
  json doc;
  try {
    doc = json::parse(text);
  } catch (const std::exception& e) {
    return Status::Error(file + ": not JSON: " + JsonErrorReason(e));
  }
  if (!doc.is_object() || !doc.contains("gpus") || !doc["gpus"].is_array() || doc.size() != 1)
    return Status::Error(file + ": want an object {\"gpus\": [ROW, ...]} and nothing else (docs/features.md)");
  const json& rows = doc["gpus"];
  if (rows.empty()) return Status::Error(file + ": 'gpus' is empty");
  if (rows.size() > kMaxSiteGpus)
    return Status::Error(file + ": " + std::to_string(rows.size()) + " rows, over the limit of " +
                         std::to_string(kMaxSiteGpus));
  std::map<std::string, std::string> taken;  // every name's key, and whose it is
  for (const GpuTableRow& r : BuiltinGpuTable()) {
    taken.emplace(GpuNameKey(r.spec.name), "gpucast's " + r.spec.name);
    for (const std::string& a : r.aliases) taken.emplace(GpuNameKey(a), "gpucast's " + r.spec.name);
  }
  std::vector<GpuTableRow> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSIGN_OR_RETURN(GpuTableRow row, ParseRow(rows[i], file + ": gpus[" + std::to_string(i) + "]", &taken));
    row.spec.site_table = path;
    out.push_back(std::move(row));
  }
  return out;
}

Status InstallSiteGpuTable(const std::string& path) {
  if (path.empty()) return Status::Ok();
  Result<std::string> text = ReadFileBounded(path, kMaxSiteGpuTableBytes, 5);
  if (!text.ok()) return Status::Error("site GPU table: " + text.status().message());
  ASSIGN_OR_RETURN(std::vector<GpuTableRow> rows, ParseSiteGpuTable(*text, path));
  Status added = AddSiteGpuRows(std::move(rows));
  if (!added.ok()) return Status::Error("site GPU table " + path + ": " + added.message());
  return Status::Ok();
}

}  // namespace gpucast
