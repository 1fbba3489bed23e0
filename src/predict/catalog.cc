#include "predict/catalog.h"

#include "predict/dataset.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace gpucast {
namespace {

using nlohmann::json;

Status FieldError(const std::string& field, const std::string& reason) {
  return Status::Error(field + ": " + reason);
}

Result<std::string> GetString(const json& obj, const std::string& key, const std::string& field,
                              bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) return FieldError(field + "." + key, "missing");
    return std::string();
  }
  if (!it->is_string()) return FieldError(field + "." + key, "want a string");
  return it->get<std::string>();
}

Result<CatalogWorkload> ParseWorkload(const json& w, const std::string& field,
                                      const std::string& base_dir) {
  if (!w.is_object()) return FieldError(field, "want an object");
  static const std::set<std::string> kKeys = {"model", "dataset", "graphs", "dims", "attrs",
                                                "speed_is_samples_per_s", "notes"};
  for (auto it = w.begin(); it != w.end(); ++it)
    if (!kKeys.count(it.key())) return FieldError(field + "." + it.key(), "unknown key");
  CatalogWorkload out;
  ASSIGN_OR_RETURN(out.model, GetString(w, "model", field, true));
  ASSIGN_OR_RETURN(out.dataset, GetString(w, "dataset", field, true));
  ASSIGN_OR_RETURN(out.notes, GetString(w, "notes", field, false));
  if (out.model.empty()) return FieldError(field + ".model", "empty");
  if (auto sp = w.find("speed_is_samples_per_s"); sp != w.end()) {
    if (!sp->is_boolean()) return FieldError(field + ".speed_is_samples_per_s", "want true or false");
    out.speed_is_samples_per_s = sp->get<bool>();
  }
  auto graphs = w.find("graphs");
  if (graphs == w.end()) return FieldError(field + ".graphs", "missing");
  if (!graphs->is_array() || graphs->empty()) return FieldError(field + ".graphs", "want a non-empty array");
  for (size_t i = 0; i < graphs->size(); ++i) {
    const json& g = (*graphs)[i];
    std::string gf = field + ".graphs[" + std::to_string(i) + "]";
    if (!g.is_object()) return FieldError(gf, "want an object");
    CatalogGraph cg;
    ASSIGN_OR_RETURN(std::string file, GetString(g, "file", gf, true));
    if (file.empty()) return FieldError(gf + ".file", "empty");
    std::filesystem::path p(file);
    cg.file = p.is_absolute() || base_dir.empty() ? file : (std::filesystem::path(base_dir) / p).string();
    for (auto it = g.begin(); it != g.end(); ++it)
      if (it.key() != "file" && it.key() != "repeat" && it.key() != "forward_only")
        return FieldError(gf + "." + it.key(), "unknown key");
    if (auto r = g.find("repeat"); r != g.end()) {
      if (!r->is_number() || !(r->get<double>() > 0) || r->get<double>() > 1e6)
        return FieldError(gf + ".repeat", "want a number > 0");
      cg.repeat = r->get<double>();
    }
    if (auto r = g.find("forward_only"); r != g.end()) {
      if (!r->is_number() || !(r->get<double>() >= 0) || r->get<double>() > 1e6)
        return FieldError(gf + ".forward_only", "want a number >= 0");
      cg.forward_only = r->get<double>();
    }
    out.graphs.push_back(cg);
  }
  if (auto d = w.find("dims"); d != w.end()) {
    if (!d->is_object()) return FieldError(field + ".dims", "want an object");
    for (auto it = d->begin(); it != d->end(); ++it) {
      if (!it->is_number_integer() || it->get<int64_t>() < 1)
        return FieldError(field + ".dims." + it.key(), "want an integer >= 1");
      out.dims[it.key()] = it->get<int64_t>();
    }
  }
  if (auto a = w.find("attrs"); a != w.end()) {
    if (!a->is_object()) return FieldError(field + ".attrs", "want an object");
    for (auto it = a->begin(); it != a->end(); ++it) {
      if (!it->is_number_integer() && !it->is_string())
        return FieldError(field + ".attrs." + it.key(), "want an integer or a string");
      const std::string value = it->is_string() ? it->get<std::string>() : std::to_string(it->get<int64_t>());
      Status st = ParseJobAttr(it.key() + "=" + value, &out.attrs);
      if (!st.ok()) return FieldError(field + ".attrs." + it.key(), st.message());
    }
  }
  return out;
}

}  // namespace

const CatalogWorkload* Catalog::Find(const std::string& model, const std::string& dataset) const {
  for (const CatalogWorkload& w : workloads)
    if (w.model == model && w.dataset == dataset) return &w;
  return nullptr;
}

Result<Catalog> ParseCatalog(const std::string& text, const std::string& path,
                             const std::string& base_dir) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::Error(path + ": not valid JSON");
  if (!doc.is_object()) return Status::Error(path + ": want a JSON object");
  Catalog cat;
  cat.path = path;
  auto v = doc.find("version");
  if (v == doc.end() || !v->is_number_integer())
    return Status::Error(path + ": version: missing or not an integer");
  cat.version = v->get<int>();
  if (cat.version != kCatalogVersion)
    return Status::Error(path + ": version: " + std::to_string(cat.version) + " not supported, want " +
                         std::to_string(kCatalogVersion));
  auto gpu = GetString(doc, "gpu", "", true);
  if (!gpu.ok()) return Status::Error(path + ": gpu: missing or not a string");
  cat.gpu = *gpu;
  auto ws = doc.find("workloads");
  if (ws == doc.end() || !ws->is_array()) return Status::Error(path + ": workloads: missing or not an array");
  std::set<std::string> seen;
  for (size_t i = 0; i < ws->size(); ++i) {
    std::string field = "workloads[" + std::to_string(i) + "]";
    auto w = ParseWorkload((*ws)[i], field, base_dir);
    if (!w.ok()) return w.status().Prefixed(path);
    if (!seen.insert(w->Key()).second)
      return Status::Error(path + ": " + field + ": duplicate workload " + w->Key());
    cat.workloads.push_back(std::move(w).value());
  }
  return cat;
}

Result<Catalog> LoadCatalog(const std::string& path) {
  // Bounded like every input (a FIFO or /dev/zero given to --catalog hung or grew until killed).
  Result<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return text.status().Prefixed("catalog");
  return ParseCatalog(*text, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace gpucast
