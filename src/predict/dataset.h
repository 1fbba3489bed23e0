// Measured training jobs (the CSV of ../shared/data/lucid/single_data.csv)
// joined with their graphs from the catalog into a feature matrix.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "cost/cost.h"
#include "features/features.h"
#include "features/memory.h"
#include "predict/catalog.h"
#include "util/status.h"

namespace gpucast {

// What a row's `gpu_util` counts (docs/predictor.md): nvidia-smi's
// utilization.gpu (Lucid) or DCGM's GR-engine-active x 100 (MIGProfiler; on a
// MIG slice relative to the slice). Both are the fraction of time the GPU (or
// slice) had work running; they are different counters.
inline constexpr const char* kTargetNvidiaSmi = "nvidia-smi utilization.gpu";
inline constexpr const char* kTargetDcgmGrActive = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";

// One CSV row. `label` (Lucid's sharing score) is never read: it is not a
// measurement and must not leak into features.
struct Measurement {
  std::string model;
  std::string dataset;
  int64_t batch = 0;
  bool amp = false;
  double speed = 0;      // samples/s (optional column, Lucid format)
  double step_ms = 0;    // measured time of one training iteration, ms (optional column, MIGProfiler format); 0 = absent
  double gpu_util = 0;   // percent 0-100: the target
  double gmem_util = 0;  // percent (optional column)
  double gmem = std::nan("");  // used GPU memory, MiB (optional column gmem or gmem_mib); NaN = absent
  std::string gpu;          // spec key of the GPU the row ran on ("" = the dataset's default GPU)
  std::string mig_profile;  // MIG instance ("" = the default; "7g.80gb" = a whole A100 80GB)
  std::string target;       // kTargetNvidiaSmi or kTargetDcgmGrActive (from the file's format)
  std::map<std::string, int64_t> dims;   // per-row symbolic dims (seq_length -> "seq")
  std::optional<int64_t> loader_workers;  // per-row job attribute (overrides the catalog's)
  std::optional<Optimizer> optimizer;     // per-row job attribute (MIGProfiler's column; overrides the catalog's)
  // A run of a step-time data set (predict/step_eval.h: "pollux-t4/cifar10"):
  // its graph and job facts come from that table, not the catalog, and it has
  // a step time but no utilization (gpu_util NaN, target "").
  std::string step_job;
  int line = 0;          // 1-based line in the file
  std::string file;      // path of the CSV the row came from
  std::string Key() const { return model + "/" + dataset; }
};

// Parses a measurement CSV of one of two formats, told apart by the header:
//  - Lucid (../shared/data/lucid/single_data.csv): model, dataset, batchsize,
//    amp, gpu_util required; speed, gmem_util, gmem optional; target nvidia-smi.
//  - MIGProfiler (../shared/data/migprofiler-a100/bert_train.csv), recognised
//    by its step_ms column: also gpu, mig_profile, seq_length (-> dim "seq"),
//    loader_workers, optimizer, step_ms, gmem_mib; target DCGM GR-engine-active.
// Other columns are ignored. Errors name the file and line:
// "data.csv:7: column 'gpu_util': 'abc' is not a number".
Result<std::vector<Measurement>> ParseMeasurementsCsv(std::string_view text, const std::string& path);

// "fnv1a64:" + 16 lowercase hex digits.
std::string DigestString(std::string_view bytes);

// The most bytes ReadFileBytes reads by default (256 MiB: measurement CSVs,
// predictor files and step logs are kilobytes to a few MB) and how long it
// waits for them (a hung network mount).
inline constexpr size_t kMaxReadFileBytes = size_t{256} << 20;
inline constexpr double kReadFileSeconds = 60;

// Reads a whole regular file of at most `max_bytes`; errors name the path and
// the reason (cannot open: strerror; not a regular file (a FIFO, a device, a
// directory), at once, without blocking; larger than max_bytes; not read
// within kReadFileSeconds) -- util/bounded_read.h. It read without a bound:
// `train --data /dev/zero` grew until killed, a FIFO hung.
Result<std::string> ReadFileBytes(const std::string& path, size_t max_bytes = kMaxReadFileBytes);

// Loads and costs graphs, each (file, batch, amp, dims) once.
class GraphCostCache {
 public:
  Result<CostReport> Get(const std::string& file, int64_t batch, bool amp,
                         const std::map<std::string, int64_t>& dims);

 private:
  std::map<std::tuple<std::string, int64_t, bool, std::map<std::string, int64_t>>, CostReport> cache_;
};

// The cost reports of one step of a catalog workload, each graph costed at
// (batch, amp, catalog dims): one report per graph (= one network), its
// repeat and forward_only passes per step applied by StepReport
// (src/cost/job_cost.h): FLOPs and bytes per step, parameters and the
// optimizer step once. A graph with uncosted nodes is an error
// (RequireCompleteCost). ComputeFeatures sums them.
Result<std::vector<CostReport>> WorkloadReports(const CatalogWorkload& w, int64_t batch, bool amp,
                                                GraphCostCache* cache);

struct Dataset {
  std::string csv_path;      // the CSV paths, joined by "; "
  std::string digest;        // DigestString of the CSV bytes (concatenated in order)
  std::string gpu;           // default GPU type of the labels (rows without a gpu column)
  std::string schema_name;   // feature schema of `x`
  int schema_version = 0;
  std::vector<std::string> feature_names;
  std::vector<Measurement> rows;
  std::vector<std::vector<double>> x;  // rows x feature_names
  std::vector<int> group;              // workload index of each row
  std::vector<std::string> groups;     // workload keys, first-seen order

  // Per row: measured step time in seconds, NaN where unknown (no speed/step_ms
  // column, or a workload whose catalog entry says speed is not samples/s).
  std::vector<double> step_s;
  // Per row: the GPU and MIG profile the features were computed for.
  std::vector<std::string> row_gpu, row_mig;
  // Per row: the physical memory estimate (features/memory.h) the memory
  // model learns from; rows[i].gmem is its label (NaN: no memory column).
  std::vector<MemoryEstimate> mem;
  // Whether `x` counts the power-limited clock (JobConfig::power_limited_clock); a model
  // trained on it records it (PredictorInfo::power_limited_clock).
  bool power_limited_clock = false;

  // The GPU / MIG profile row i's features were computed for; "" where the
  // dataset carries none for that row (hand-built datasets, older callers).
  std::string RowGpu(size_t i) const { return i < row_gpu.size() ? row_gpu[i] : std::string(); }
  std::string RowMig(size_t i) const { return i < row_mig.size() ? row_mig[i] : std::string(); }

  std::vector<double> Labels() const;  // gpu_util of each row (NaN: a step-only row)
  std::vector<double> MemoryLabels() const;  // gmem of each row, MiB (NaN: none)
};

struct DatasetOptions {
  std::string gpu;          // GPU of rows without a gpu column ("" = the catalog's gpu)
  std::string mig_profile;  // MIG profile of rows without a mig_profile column ("" = whole GPU)
  bool power_limited_clock = kDefaultPowerLimitedClock;  // JobConfig::power_limited_clock of every row
};

// Parses the CSV(s) and computes features for each row (rows of all files, in
// order). A row whose workload is not in the catalog is an error:
// "data.csv:9: unknown workload 'X/Y' (not in catalog.json)".
// A path that is a folder of ../shared/data/pollux-t4's layout adds its
// single-GPU runs (step time, no utilization: gpu_util NaN), each job a
// workload "<job name>/pollux-t4" with the graph of step_eval.h's table; the
// physics fit uses their step time, the other regressors skip them.
Result<Dataset> BuildDataset(const std::vector<std::string>& csv_paths, const Catalog& catalog,
                             const DatasetOptions& opts = {});
Result<Dataset> BuildDataset(const std::string& csv_path, const Catalog& catalog);
// The workload of a step job ("pollux-t4/cifar10", predict/step_eval.h), its
// files in the catalog's folder.
Result<CatalogWorkload> StepJobWorkload(const std::string& key, const Catalog& catalog);

}  // namespace gpucast
