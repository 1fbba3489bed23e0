// Measured workload configurations (rows of lucid/single_data.csv) and the
// predicted utilization and memory the schedulers see for each.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "util/status.h"

namespace gpucast::sim {

// One measured (model, dataset, batch size, AMP) configuration trained alone on
// one RTX 3090. Utilizations are percent (0-100), memory MiB.
struct WorkloadProfile {
  std::string model, dataset;
  int batch = 0;
  int amp = 0;
  double true_util = 0;      // measured gpu_util, percent
  double gmem_mib = 0;       // measured used memory, MiB: the job's true memory need per GPU
  double speed = 0;          // samples/s alone
  double predicted_util = NAN;  // out-of-sample prediction, percent; NaN = none
  // Predicted memory per GPU and the high end of its interval, MiB; NaN = none.
  // Policies pack by the high end (pred_mem_high_mib).
  double pred_mem_mib = NAN, pred_mem_high_mib = NAN;
  // The predicted utilization's interval (the predict layer's, percent; NaN =
  // none): what predictive-hybrid calls confident or unsure.
  double pred_util_low = NAN, pred_util_high = NAN;

  // "ResNet50/ImageNet/b64/amp1": the workload column of jobs.csv.
  std::string Name() const;
  bool HasPrediction() const { return !std::isnan(predicted_util); }
  bool HasMemPrediction() const { return !std::isnan(pred_mem_high_mib); }
  bool HasInterval() const { return !std::isnan(pred_util_low) && !std::isnan(pred_util_high); }
};

// The most rows a workload table may hold (Lucid's single_data.csv has 52):
// a prediction CSV is matched to it row by row, so its size bounds that time.
inline constexpr size_t kMaxWorkloads = 10000;

// Loads single_data.csv (header model,dataset,batchsize,amp,speed,gpu_util,
// gmem_util,gmem,...). Errors name the file, line and column: a batch size
// outside [1, INT_MAX], a speed or memory that `train --data` refuses too
// (util/measured.h: speed > 0 with a finite batchsize / speed, memory in
// (0, 1e7] MiB), gpu_util outside [0, 100], an empty model or dataset, a
// configuration (model, dataset, batch, amp) that repeats an earlier row, and
// more than kMaxWorkloads rows. Numbers are ParseDouble's (no nan, inf,
// overflowing or hex text).
Result<std::vector<WorkloadProfile>> LoadWorkloads(const std::string& path);

// Reads a predictions CSV (header with columns model,dataset,batchsize,amp,
// predicted_util; optional pred_mem_mib,pred_mem_high_mib; other columns
// ignored) into `workloads`. Every workload must get exactly one prediction;
// a prediction for an unknown workload or a second one for a workload is an
// error too.
Status LoadPredictionsCsv(const std::string& path, std::vector<WorkloadProfile>* workloads);

// Writes what LoadPredictionsCsv reads (every workload; empty memory cells when none).
std::string PredictionsCsv(const std::vector<WorkloadProfile>& workloads);

// The number PredictionsCsv writes for v (6 significant digits) as
// LoadPredictionsCsv reads it back; NaN stays NaN. Predictions computed now
// are rounded so, so that a run that computes them and a run that reads them
// from a cache of PredictionsCsv decide by the same numbers.
double CsvRounded(double v);

// The workloads of a table by their configuration (model, dataset, batch,
// amp): a lookup is O(log n), so matching the rows of a pair table or a
// prediction CSV (up to millions of lines) to kMaxWorkloads workloads stays
// bounded. Built once from a table; the table must outlive no one (indices only).
class WorkloadIndex {
 public:
  WorkloadIndex() = default;
  explicit WorkloadIndex(const std::vector<WorkloadProfile>& workloads);

  // Index of the workload with this configuration, or -1. A batch or amp
  // outside int matches none (a cast would wrap 4294967328 onto 32).
  int Find(std::string_view model, std::string_view dataset, int64_t batch, int64_t amp) const;

  // Adds w as index i; returns the index already holding its configuration
  // (and adds nothing), or -1 when it is new.
  int Insert(const WorkloadProfile& w, int i);

 private:
  using Key = std::tuple<std::string, std::string, int, int>;
  std::map<Key, int> index_;
};

// Where the utilization predictions a run decides by come from (--predictions):
//   oracle        the measured utilization (the upper line of what prediction can give)
//   noisy:SD      the oracle with noise where a predictor's errors live: log1p(true) +
//                 NoisyShift(true, sd) + N(0, sd), sd = NoisyLog1pSd(SD), one draw per
//                 workload seeded by the run's seed, back to points and clamped to
//                 [0, 100]; the shift recentres it so that the prediction's expectation
//                 is the truth (mean-preserving); its interval is the same sd's 80%
//                 interval around the prediction in log1p
//   noisy:SD@K    the same control's draw K (K >= 0; noisy:SD is draw 0): another
//                 independent draw of the per-workload noise for the same run seed
//                 (arrivals unchanged), so that the effect of noise can be measured
//                 as an expectation over draws rather than from one draw of 52 rows
//   constant:U    U for every workload (a predictor that knows nothing)
//   shuffled      the model's predictions permuted among workloads (seeded): their
//                 distribution without their information
//   a CSV path    (contains '/' or ends in .csv) LoadPredictionsCsv
//   ALGO          the predict layer's algorithm, each workload predicted by a model
//                 trained on the other workloads (leave one workload out)
struct PredictionSource {
  enum Kind { kOracle, kNoisy, kConstant, kShuffled, kCsv, kAlgo } kind = kAlgo;
  double value = 0;   // noisy: SD; constant: U
  int draw = 0;       // noisy: the noise draw (noisy:SD@K); 0 the default
  std::string name;   // csv: the path; algo: the algorithm
  bool NeedsModel() const { return kind == kShuffled || kind == kAlgo; }
  // The label summary.json carries: "oracle", "noisy:15", "lowo:auto", ...
  std::string Label() const;
};
// Parses the flag's text; errors name the flag and the reason.
Result<PredictionSource> ParsePredictionSource(const std::string& text, const std::string& default_algo);

// Sets every workload's predicted_util for one run. Needs the model's
// predictions already in predicted_util for kShuffled (permutes them) and
// kAlgo/kCsv (keeps them); the others overwrite them.
Status ApplyPredictionSource(const PredictionSource& src, uint64_t seed, std::vector<WorkloadProfile>* w);

// The log1p-space sd of noisy:SD: SD points at 50% utilization (the slope of
// log1p there is 1/51), less on lighter jobs, more on heavier ones.
double NoisyLog1pSd(double sd_points);

// The expectation of noisy:SD's prediction, clamp(expm1(log1p(u) + shift +
// sd x Z), 0, 100) with Z standard normal (closed form: lognormal partial
// expectations), points.
double NoisyMean(double true_util, double shift, double log1p_sd);

// The shift (log1p space) that makes noisy:SD mean-preserving for a workload
// of true utilization u: NoisyMean(u, shift, sd) = u. Without it the clamp at
// 100 biased heavy workloads low (98 -> 89.2 on average under SD 15) and the
// lognormal biased light ones high; no bounded noise can be unbiased at 0 or
// 100, so there (and with sd 0) the prediction is the truth (shift 0 there).
double NoisyShift(double true_util, double log1p_sd);

// A standard normal draw determined by (seed, index, salt) (SplitMix64 and
// Box-Muller): the simulator's seeded noise.
double SeededNormal(uint64_t seed, int64_t index, uint64_t salt);

// The salt of noisy:SD@K's draws (SeededNormal(seed, row, salt)); draw 0's is
// the control's original salt.
uint64_t NoisyDrawSalt(int draw);

// Mean |predicted - measured| utilization over workload rows, points.
double PredictionMae(const std::vector<WorkloadProfile>& w);

}  // namespace gpucast::sim
