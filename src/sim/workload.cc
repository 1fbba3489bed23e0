#include "sim/workload.h"

#include <algorithm>

#include "sim/text.h"

namespace gpucast::sim {

std::string WorkloadProfile::Name() const {
  return model + "/" + dataset + "/b" + std::to_string(batch) + "/amp" + std::to_string(amp);
}

int FindWorkload(const std::vector<WorkloadProfile>& w, const std::string& model,
                 const std::string& dataset, int batch, int amp) {
  for (size_t i = 0; i < w.size(); ++i)
    if (w[i].model == model && w[i].dataset == dataset && w[i].batch == batch && w[i].amp == amp)
      return static_cast<int>(i);
  return -1;
}

namespace {

// Finds each named column in the header or fails naming the first missing one.
Result<std::vector<int>> RequireColumns(const std::string& file,
                                        const std::vector<std::string_view>& header,
                                        std::initializer_list<const char*> names) {
  std::vector<int> out;
  for (const char* n : names) {
    int i = ColumnIndex(header, n);
    if (i < 0) return Status::Error(file + ": line 1: missing column '" + n + "'");
    out.push_back(i);
  }
  return out;
}

}  // namespace

Result<std::vector<WorkloadProfile>> LoadWorkloads(const std::string& path) {
  const std::string file = BaseName(path);
  auto text = ReadFile(path);
  if (!text) return Status::Error(path + ": cannot open");
  auto lines = Lines(*text);
  if (lines.empty()) return Status::Error(file + ": empty file");
  ASSIGN_OR_RETURN(auto col, RequireColumns(file, Split(lines[0], ','),
                                            {"model", "dataset", "batchsize", "amp", "speed",
                                             "gpu_util", "gmem"}));
  std::vector<WorkloadProfile> out;
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    auto f = Split(lines[ln], ',');
    const std::string where = file + ": line " + std::to_string(ln + 1) + ": ";
    for (int c : col)
      if (c >= static_cast<int>(f.size()))
        return Status::Error(where + "has " + std::to_string(f.size()) + " fields, want at least " +
                             std::to_string(c + 1));
    WorkloadProfile w;
    w.model = std::string(f[col[0]]);
    w.dataset = std::string(f[col[1]]);
    auto b = ParseInt(f[col[2]]), a = ParseInt(f[col[3]]);
    auto sp = ParseDouble(f[col[4]]), u = ParseDouble(f[col[5]]), m = ParseDouble(f[col[6]]);
    if (!b || *b <= 0) return Status::Error(where + "batchsize '" + std::string(f[col[2]]) + "' is not a positive integer");
    if (!a || (*a != 0 && *a != 1)) return Status::Error(where + "amp '" + std::string(f[col[3]]) + "' is not 0 or 1");
    if (!sp || *sp <= 0) return Status::Error(where + "speed '" + std::string(f[col[4]]) + "' is not a positive number");
    if (!u || *u < 0 || *u > 100) return Status::Error(where + "gpu_util '" + std::string(f[col[5]]) + "' is not in [0, 100]");
    if (!m || *m <= 0) return Status::Error(where + "gmem '" + std::string(f[col[6]]) + "' is not a positive number");
    w.batch = static_cast<int>(*b);
    w.amp = static_cast<int>(*a);
    w.speed = *sp;
    w.true_util = *u;
    w.gmem_mib = *m;
    out.push_back(std::move(w));
  }
  if (out.empty()) return Status::Error(file + ": no workload rows");
  return out;
}

Status LoadPredictionsCsv(const std::string& path, std::vector<WorkloadProfile>* workloads) {
  const std::string file = BaseName(path);
  auto text = ReadFile(path);
  if (!text) return Status::Error(path + ": cannot open");
  auto lines = Lines(*text);
  if (lines.empty()) return Status::Error(file + ": empty file");
  ASSIGN_OR_RETURN(auto col, RequireColumns(file, Split(lines[0], ','),
                                            {"model", "dataset", "batchsize", "amp", "predicted_util"}));
  std::vector<bool> seen(workloads->size(), false);
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    auto f = Split(lines[ln], ',');
    const std::string where = file + ": line " + std::to_string(ln + 1) + ": ";
    int need = *std::max_element(col.begin(), col.end());
    if (need >= static_cast<int>(f.size()))
      return Status::Error(where + "has " + std::to_string(f.size()) + " fields, want at least " +
                           std::to_string(need + 1));
    auto b = ParseInt(f[col[2]]), a = ParseInt(f[col[3]]);
    auto p = ParseDouble(f[col[4]]);
    if (!b || !a) return Status::Error(where + "batchsize/amp are not integers");
    if (!p || *p < 0) return Status::Error(where + "predicted_util '" + std::string(f[col[4]]) + "' is not a non-negative number");
    int i = FindWorkload(*workloads, std::string(f[col[0]]), std::string(f[col[1]]),
                         static_cast<int>(*b), static_cast<int>(*a));
    if (i < 0)
      return Status::Error(where + "workload " + std::string(f[col[0]]) + "/" + std::string(f[col[1]]) +
                           "/b" + std::to_string(*b) + "/amp" + std::to_string(*a) +
                           " is not in single_data.csv");
    (*workloads)[i].predicted_util = *p;
    seen[i] = true;
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i])
      return Status::Error(file + ": no prediction for workload " + (*workloads)[i].Name());
  return Status::Ok();
}

}  // namespace gpucast::sim
