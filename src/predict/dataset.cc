#include "predict/dataset.h"

#include "util/bounded_read.h"
#include "util/fnv1a.h"
#include "util/measured.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cost/job_cost.h"
#include "graph/onnx_loader.h"
#include "predict/step_eval.h"

namespace gpucast {
namespace {

std::vector<std::string> SplitComma(std::string_view line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    std::string_view cell = line.substr(start, comma == std::string_view::npos ? line.npos : comma - start);
    while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
    while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t')) cell.remove_suffix(1);
    out.emplace_back(cell);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  auto [p, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && p == e && std::isfinite(*out);
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec == std::errc() && p == s.data() + s.size()) return true;
  // Accept integral floats such as "32.0".
  double d;
  if (!ParseDouble(s, &d) || d != std::floor(d) || std::fabs(d) > 9e15) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

}  // namespace

std::string DigestString(std::string_view bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(Fnv1a64(bytes)));
  return std::string("fnv1a64:") + buf;
}

Result<std::string> ReadFileBytes(const std::string& path, size_t max_bytes) {
  return ReadFileBounded(path, max_bytes, kReadFileSeconds);
}

Result<std::vector<Measurement>> ParseMeasurementsCsv(std::string_view text, const std::string& path) {
  std::vector<Measurement> rows;
  std::vector<std::string> header;
  enum Col {
    kModel, kDataset, kBatch, kAmp, kGpuUtil,  // required
    kSpeed, kGmemUtil, kGmem, kStepMs, kGpu, kMig, kSeq, kWorkers, kGmemMib, kOptimizer, kNumCols
  };
  static const char* kNames[kNumCols] = {"model", "dataset", "batchsize", "amp", "gpu_util",
                                         "speed", "gmem_util", "gmem", "step_ms", "gpu",
                                         "mig_profile", "seq_length", "loader_workers", "gmem_mib",
                                         "optimizer"};
  constexpr int kRequired = 5;  // the first five
  int idx[kNumCols];
  std::string target = kTargetNvidiaSmi;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank
    std::string where = path + ":" + std::to_string(line_no);
    std::vector<std::string> cells = SplitComma(line);
    if (header.empty()) {
      header = cells;
      for (int c = 0; c < kNumCols; ++c) {
        idx[c] = -1;
        for (size_t h = 0; h < header.size(); ++h)
          if (header[h] == kNames[c]) idx[c] = static_cast<int>(h);
        if (c < kRequired && idx[c] < 0)
          return Status::Error(where + ": header lacks column '" + kNames[c] + "'");
      }
      // MIGProfiler's export (step_ms column): DCGM GR-engine-active, not nvidia-smi.
      if (idx[kStepMs] >= 0) target = kTargetDcgmGrActive;
      continue;
    }
    if (cells.size() != header.size())
      return Status::Error(where + ": " + std::to_string(cells.size()) + " columns, want " +
                           std::to_string(header.size()));
    Measurement m;
    m.line = line_no;
    m.file = path;
    m.target = target;
    m.model = cells[idx[kModel]];
    m.dataset = cells[idx[kDataset]];
    if (m.model.empty()) return Status::Error(where + ": column 'model': empty");
    if (m.dataset.empty()) return Status::Error(where + ": column 'dataset': empty");
    auto number = [&](int c, double* out) -> Status {
      if (idx[c] < 0) return Status::Ok();
      const std::string& s = cells[idx[c]];
      if (!ParseDouble(s, out))
        return Status::Error(where + ": column '" + kNames[c] + "': '" + s + "' is not a number");
      return Status::Ok();
    };
    auto integer = [&](int c, int64_t min, int64_t* out) -> Status {
      const std::string& s = cells[idx[c]];
      if (!ParseInt(s, out) || *out < min)
        return Status::Error(where + ": column '" + kNames[c] + "': '" + s + "' is not an integer >= " +
                             std::to_string(min));
      return Status::Ok();
    };
    RETURN_IF_ERROR(integer(kBatch, 1, &m.batch));
    const std::string& as = cells[idx[kAmp]];
    if (as != "0" && as != "1") return Status::Error(where + ": column 'amp': '" + as + "' is not 0 or 1");
    m.amp = as == "1";
    RETURN_IF_ERROR(number(kGpuUtil, &m.gpu_util));
    if (m.gpu_util < 0 || m.gpu_util > 100)
      return Status::Error(where + ": column 'gpu_util': " + cells[idx[kGpuUtil]] + " is outside 0-100");
    RETURN_IF_ERROR(number(kSpeed, &m.speed));
    // A measured speed is positive, and the step it implies (batchsize / speed)
    // finite: train --data took a speed of 0 (no step) and a subnormal one (an
    // infinite step). No upper bound: the codebase holds no measured least step
    // time (kHostSecondsPerKernel is an assumed scale, docs/features.md).
    // The rule is util/measured.h's, which simulate's workload table obeys too.
    if (idx[kSpeed] >= 0)
      if (std::string why = SpeedProblem(m.speed, m.batch); !why.empty())
        return Status::Error(where + ": column 'speed': " + cells[idx[kSpeed]] + " " + why);
    RETURN_IF_ERROR(number(kStepMs, &m.step_ms));
    if (idx[kStepMs] >= 0 && !(m.step_ms > 0))
      return Status::Error(where + ": column 'step_ms': " + cells[idx[kStepMs]] + " is not > 0");
    RETURN_IF_ERROR(number(kGmemUtil, &m.gmem_util));
    RETURN_IF_ERROR(number(kGmem, &m.gmem));
    RETURN_IF_ERROR(number(kGmemMib, &m.gmem));
    for (int c : {kGmem, kGmemMib})
      if (idx[c] >= 0)
        if (std::string why = MemMibProblem(m.gmem); !why.empty())
          return Status::Error(where + ": column '" + kNames[c] + "': " + cells[idx[c]] + " " + why);
    if (idx[kOptimizer] >= 0) {
      JobAttrs a;
      if (Status st = ParseJobAttr("optimizer=" + cells[idx[kOptimizer]], &a); !st.ok())
        return Status::Error(where + ": column 'optimizer': " + st.message());
      m.optimizer = a.optimizer;
    }
    if (idx[kGpu] >= 0) m.gpu = cells[idx[kGpu]];
    if (idx[kMig] >= 0) m.mig_profile = cells[idx[kMig]];
    if (idx[kSeq] >= 0) {
      int64_t seq = 0;
      RETURN_IF_ERROR(integer(kSeq, 1, &seq));
      m.dims["seq"] = seq;
    }
    if (idx[kWorkers] >= 0) {
      int64_t w = 0;
      RETURN_IF_ERROR(integer(kWorkers, 0, &w));
      m.loader_workers = w;
    }
    rows.push_back(std::move(m));
  }
  if (header.empty()) return Status::Error(path + ": empty file (no header)");
  if (rows.empty()) return Status::Error(path + ": no data rows");
  return rows;
}

Result<CostReport> GraphCostCache::Get(const std::string& file, int64_t batch, bool amp,
                                       const std::map<std::string, int64_t>& dims) {
  auto key = std::make_tuple(file, batch, amp, dims);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  LoadOptions lo;
  lo.batch = batch;
  lo.dims = dims;
  ASSIGN_OR_RETURN(Graph g, LoadOnnxGraph(file, lo));
  CostOptions co;
  co.amp = amp;
  ASSIGN_OR_RETURN(CostReport r, AnalyzeCost(g, co));
  cache_.emplace(key, r);
  return r;
}

Result<std::vector<CostReport>> WorkloadReports(const CatalogWorkload& w, int64_t batch, bool amp,
                                                GraphCostCache* cache) {
  std::vector<CostReport> reports;
  for (const CatalogGraph& g : w.graphs) {
    ASSIGN_OR_RETURN(CostReport r, cache->Get(g.file, batch, amp, w.dims));
    // Training rows, like predictions, come only from completely costed graphs.
    RETURN_IF_ERROR(RequireCompleteCost(r));
    // One network per catalog graph: its passes per step, one optimizer step.
    ASSIGN_OR_RETURN(CostReport step, StepReport(r, g.repeat, g.forward_only));
    reports.push_back(std::move(step));
  }
  return reports;
}

std::vector<double> Dataset::Labels() const {
  std::vector<double> y;
  y.reserve(rows.size());
  for (const Measurement& m : rows) y.push_back(m.gpu_util);
  return y;
}

std::vector<double> Dataset::MemoryLabels() const {
  std::vector<double> y;
  y.reserve(rows.size());
  for (const Measurement& m : rows) y.push_back(m.gmem);
  return y;
}

namespace {
// The single-GPU runs of a pollux-t4 folder as step-only rows; appends the bytes read to `bytes`.
Result<std::vector<Measurement>> StepOnlyMeasurements(const std::string& dir, std::string* bytes) {
  if (!std::filesystem::exists(std::filesystem::path(dir) / "cifar10" / "placements.csv"))
    return Status::Error(dir + ": a folder, but not of ../shared/data/pollux-t4's layout (training takes step-only "
                         "rows from Pollux' single-GPU runs; Zeus' epoch times have no steps per epoch: use them in "
                         "'evaluate --steps')");
  std::map<std::string, size_t> skipped;
  ASSIGN_OR_RETURN(std::vector<StepRun> runs, ReadStepRuns(dir, &skipped));
  for (const StepJob& j : StepJobs()) {
    if (j.source != "pollux-t4" || j.files.empty()) continue;
    ASSIGN_OR_RETURN(std::string b, ReadFileBytes((std::filesystem::path(dir) / j.key / "placements.csv").string()));
    *bytes += b;
  }
  std::vector<Measurement> out;
  for (const StepRun& r : runs) {
    if (r.gpus != 1 || r.nodes != 1) continue;  // several GPUs: the data-parallel model's (evaluate --steps)
    Measurement m;
    m.model = r.job->name;
    m.dataset = r.job->source;
    m.batch = r.batch;
    m.amp = r.job->amp;
    m.step_ms = r.step_s * 1e3;
    m.gpu_util = std::nan("");
    m.gpu = r.gpu;
    m.step_job = r.job->source + "/" + r.job->key;
    m.line = r.line;
    m.file = r.file;
    out.push_back(std::move(m));
  }
  if (out.empty()) return Status::Error(dir + ": no single-GPU run");
  return out;
}
}  // namespace

Result<CatalogWorkload> StepJobWorkload(const std::string& key, const Catalog& catalog) {
  const std::string dir = std::filesystem::path(catalog.path).parent_path().string();
  for (const StepJob& j : StepJobs()) {
    if (j.source + "/" + j.key != key) continue;
    if (j.files.empty()) return Status::Error("step job " + key + " has no graph: " + j.notes);
    CatalogWorkload w;
    w.model = j.name;
    w.dataset = j.source;
    for (const std::string& f : j.files) w.graphs.push_back({(std::filesystem::path(dir) / f).string(), 1, 0});
    w.dims = j.dims;
    w.attrs = j.attrs;
    w.notes = j.notes;
    return w;
  }
  return Status::Error("unknown step job '" + key + "'");
}

Result<Dataset> BuildDataset(const std::vector<std::string>& csv_paths, const Catalog& catalog,
                             const DatasetOptions& opts) {
  if (csv_paths.empty()) return Status::Error("no measurement CSV given");
  std::vector<Measurement> rows;
  std::string all_bytes;
  Dataset ds;
  for (const std::string& path : csv_paths) {
    ds.csv_path += (ds.csv_path.empty() ? "" : "; ") + path;
    if (std::filesystem::is_directory(path)) {
      ASSIGN_OR_RETURN(std::vector<Measurement> r, StepOnlyMeasurements(path, &all_bytes));
      rows.insert(rows.end(), r.begin(), r.end());
      continue;
    }
    ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
    ASSIGN_OR_RETURN(std::vector<Measurement> r, ParseMeasurementsCsv(bytes, path));
    rows.insert(rows.end(), r.begin(), r.end());
    all_bytes += bytes;
  }
  ds.digest = DigestString(all_bytes);
  ds.gpu = opts.gpu.empty() ? catalog.gpu : opts.gpu;
  ds.power_limited_clock = opts.power_limited_clock;
  const FeatureSchema& schema = CurrentFeatureSchema();
  ds.schema_name = schema.name;
  ds.schema_version = schema.version;
  ds.feature_names = schema.names;
  std::string cat_name = std::filesystem::path(catalog.path).filename().string();
  for (const Measurement& m : rows)  // all rows checked before any graph is loaded
    if (m.step_job.empty() && !catalog.Find(m.model, m.dataset))
      return Status::Error(m.file + ":" + std::to_string(m.line) + ": unknown workload '" + m.Key() +
                           "' (not in " + cat_name + ")");
  GraphCostCache cache;
  std::map<std::string, int> group_of;
  for (const Measurement& m : rows) {
    std::string where = m.file + ":" + std::to_string(m.line);
    CatalogWorkload w;
    if (!m.step_job.empty()) {
      ASSIGN_OR_RETURN(w, StepJobWorkload(m.step_job, catalog));
    } else {
      w = *catalog.Find(m.model, m.dataset);
    }
    for (const auto& [k, v] : m.dims) w.dims[k] = v;  // the row's own dims win
    if (m.loader_workers) w.attrs.loader_workers = m.loader_workers;
    if (m.optimizer) w.attrs.optimizer = m.optimizer;
    auto reports = WorkloadReports(w, m.batch, m.amp, &cache);
    if (!reports.ok()) return reports.status().Prefixed(where);
    JobConfig job;
    job.batch = m.batch;
    job.amp = m.amp;
    job.attrs = w.attrs;
    job.gpu = m.gpu.empty() ? ds.gpu : m.gpu;
    job.mig_profile = m.mig_profile.empty() ? opts.mig_profile : m.mig_profile;
    job.power_limited_clock = ds.power_limited_clock;
    // A measured row's CUDA module loading, unless its workload states it:
    // eager, the stacks of the measured data sets (Lucid's tiny jobs use
    // 2,050-2,059 MiB on the RTX 3090, the published eager context of 1,687
    // MiB plus cuBLAS's; MIGProfiler's requirements pin torch==1.12.0, before
    // PyTorch 1.13 set CUDA_MODULE_LOADING=LAZY): the fitted context is theirs.
    if (!job.attrs.memory.lazy_module_loading) job.attrs.memory.lazy_module_loading = false;
    auto f = ComputeFeatures(*reports, job);
    if (!f.ok()) return f.status().Prefixed(where);
    if (f->size() != schema.names.size())
      return Status::Error(where + ": ComputeFeatures returned " + std::to_string(f->size()) +
                           " values for a schema of " + std::to_string(schema.names.size()));
    auto mem = EstimateMemory(*reports, job);
    if (!mem.ok()) return mem.status().Prefixed(where);
    auto [it, fresh] = group_of.emplace(m.Key(), static_cast<int>(ds.groups.size()));
    if (fresh) ds.groups.push_back(m.Key());
    ds.group.push_back(it->second);
    ds.x.push_back(std::move(f).value());
    double step = std::nan("");
    if (m.step_ms > 0)
      step = m.step_ms * 1e-3;
    else if (m.speed > 0 && w.speed_is_samples_per_s)
      step = static_cast<double>(m.batch) / m.speed;
    ds.step_s.push_back(step);
    ds.row_gpu.push_back(job.gpu);
    ds.row_mig.push_back(job.mig_profile);
    ds.mem.push_back(std::move(mem).value());
    ds.rows.push_back(m);
  }
  return ds;
}

Result<Dataset> BuildDataset(const std::string& csv_path, const Catalog& catalog) {
  return BuildDataset(std::vector<std::string>{csv_path}, catalog, DatasetOptions{});
}

}  // namespace gpucast
