// The learnt GPU memory model: the physical estimate of src/features/memory.h
// plus a few global parameters fitted on measured rows (Lucid `gmem`,
// MIGProfiler `gmem_mib`), with a split-conformal interval whose high end is a
// one-sided bound (docs/predictor.md, "GPU memory"). In MiB:
//
//   context   = context base of the chip (architecture and whole-GPU SMs; else of the
//               architecture) + mib_per_sm * SMs of the GPU or MIG slice
//               + cudnn_mib if the job uses cuDNN (convolutions, batch norm, RNNs)
//   working   = activation_factor * activations + transient_factor * largest tensor + loss head
//   mib       = context + static (weights, gradients, optimizer state, autocast
//               copies, data, DDP buckets, ZeRO buffers, cuBLAS workspaces,
//               allocator rounding and segments; exact or documented)
//               + max(working, the optimizer step's temporaries)
//   x exp(workload offset) for a job with the graph of a measured workload.
//
// The context is the CUDA context with the kernels it loads and the driver's
// share as nvidia-smi counts it: one SM-independent part per GPU architecture
// of the training rows (the same kernels load on every GPU of it) and a
// per-SM part (local memory for every resident thread), fitted when the rows
// hold one architecture at two SM counts (MIG slices), else
// kDefaultMibPerSm. A GPU of another architecture gets the mean of the fitted
// ones, and its high end also covers the largest published context
// (ContextSources, features/memory.h). cudnn_mib: cuDNN's kernels and
// handles, fitted when the rows of one architecture hold jobs with and without
// cuDNN ops, else 0 (folded into the context). activation_factor: what the
// caching allocator holds per kept byte (fragmentation, what the saved-tensor
// table misses). transient_factor: tensors of the size of the largest alive at
// the peak (gradients, workspaces). The optimizer step's temporaries: one
// parameter-sized fp32 list for Adam/AdamW (the multi-tensor step), none for
// SGD; they count where they exceed the working set (activations are freed by
// then). Fitted by least squares on log(mib), each workload's rows weighted
// alike (1 / its rows), so every workload and every row's relative error count.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "features/memory.h"
#include "predict/dataset.h"
#include "util/status.h"

namespace gpucast {

// Predicted GPU memory of the job: what nvidia-smi (whole GPU) or DCGM's
// framebuffer-used (MIG slice) shows for it, in MiB (1 MiB = 2^20 bytes):
// CUDA context and libraries, weights, gradients, optimizer state,
// activations kept for backward, workspace, allocator rounding
// (docs/predictor.md, "GPU memory"). NaN everywhere when the predictor has no
// memory model (its training rows had no memory column).
struct MemoryPrediction {
  double mib = std::nan("");   // point prediction, MiB
  double low = std::nan("");   // interval, MiB: low <= mib <= high (split-conformal, like utilization)
  double high = std::nan("");  // pack by this end
  double capacity_mib = std::nan("");  // memory of the GPU or MIG slice (spec table), MiB
  // Of `high`: the MiB added for estimated parts (MemoryEstimate::uncertain_mib),
  // cuDNN's run-to-run spread (kConvRerunMib), a GPU architecture whose
  // context was not fitted (up to the published maximum), for a lazy
  // stack up to the eager stack's high end, and for an uncalibrated model up
  // to the GPU's or slice's memory.
  double widened_mib = 0;
  bool context_fitted = false;  // training rows on a GPU of its architecture fitted the context
  double context_mib = std::nan("");  // the context in the point (without cuDNN's part), MiB
  // The job's CUDA_MODULE_LOADING as applied: "lazy" (the published lazy
  // context, LazyContextMib, in the point and the low end; the high end
  // eager's), "eager" (the fitted context) or "unknown" (the fitted context
  // in the point and the high end; the low end the lazy point's).
  std::string cuda_module_loading = "unknown";
  bool available() const { return !std::isnan(mib); }
  // Fit against capacity_mib: the point above it will not fit; the high end above it may not.
  bool fits() const { return available() && high <= capacity_mib; }
  bool will_not_fit() const { return available() && mib > capacity_mib; }
};

// The high end of the memory interval is a one-sided conformal bound at this
// level at least (at (1 + level) / 2 when that is higher): a limit is set
// from it (HAMi's nvidia.com/gpumem, the simulator's packing), so it must hold.
inline constexpr double kMemoryHighLevel = 0.95;
// The high end's one-sided level for an interval at central level `level`:
// max(kMemoryHighLevel, (1 + level) / 2).
double MemoryHighLevel(double level);
// The low end's one-sided miss rate for an interval at `level`: what the
// interval may miss (1 - level) less what the high end misses (1 -
// MemoryHighLevel(level)). (1 - level) / 2 for level >= 0.9; above it for a
// lower level, where the high end is held at kMemoryHighLevel: 0.15 at 0.8.
double MemoryLowAlpha(double level);

// What the peak of a job with convolutions may exceed the mean of one measured
// run by, in another run: cuDNN's autotuner picks algorithms (and caches their
// workspaces) anew each run. The 95th percentile of what a pair's peak
// exceeded the two jobs' means alone, for a convolutional job beside a tiny
// one: 903 MiB (tools/memory_peak_vs_mean.py on ../shared/data/lucid: 144
// co-located pairs on the RTX 3090; memory_model_test recomputes it). Added
// to the high end of such jobs, so that the limit holds for the peak of any run.
inline constexpr double kConvRerunMib = 903;


// The part of the point the high end's scale weighs beside the whole point
// (MemoryModel::high_scale_part): the uncertain part (the working set and the
// optimizer step's excess) or the graph's part (all but the context: what the
// job's graph adds to the GPU's fixed CUDA context, cuDNN's part included).
enum class HighScalePart { kUncertain, kGraph };
const char* HighScalePartName(HighScalePart p);

struct MemoryParams {
  // The context's SM-independent part per GPU architecture (GpuSpec::architecture), MiB:
  // context = context_base_mib + mib_per_sm x SMs of the GPU or MIG slice.
  // Fitted on all the architecture's rows: what a chip of it without rows gets.
  std::map<std::string, double> context_base_mib;
  // The same per chip (ContextChip: the architecture and the whole GPU's SM
  // count, e.g. "Ampere 108 SMs" for the A100 40 and 80 GB and their MIG
  // slices), fitted on that chip's rows alone: what its rows' stack loads (its
  // compute capability's kernels, its driver and libraries). A chip with rows
  // gets its own; the others their architecture's.
  std::map<std::string, double> chip_context_base_mib;
  double mib_per_sm = kDefaultMibPerSm;
  bool mib_per_sm_fitted = false;
  double activation_factor = 1;
  double transient_factor = 1;
  double cudnn_mib = 0;
  bool cudnn_mib_fitted = false;
  // Measured workloads ("model/dataset"): the mean log residual of their rows,
  // applied to a job of the same graph (Predictor: the seen or same-graph workload).
  std::map<std::string, double> workload_offsets;
};

// The key of chip_context_base_mib: "<architecture> <whole-GPU SMs> SMs".
std::string ContextChip(const MemoryEstimate& e);

class MemoryModel {
 public:
  // Fits on the rows whose measured_mib is finite and > 0 (the others are
  // skipped). `group`: workload of each row; with >= 3 workloads among the
  // fitted rows and `calibrate`, the interval is split-conformal on the log
  // residuals of a leave-one-workload-out pass over those rows (each
  // workload predicted by a model fit without it), as utilization's.
  // Errors: sizes that differ, fewer than 2 rows with a memory value.
  // `group_names`, when given, names each group id (Dataset::groups): their
  // offsets (MemoryParams::workload_offsets) are fitted, the calibration
  // residuals stay those of unseen workloads.
  static Result<MemoryModel> Fit(const std::vector<MemoryEstimate>& est, const std::vector<double>& measured_mib,
                                 const std::vector<int>& group, bool calibrate = true,
                                 const std::vector<std::string>& group_names = {});

  // `workload`: the measured workload whose graph the job has ("" = none).
  double PointMib(const MemoryEstimate& e, const std::string& workload = "") const;
  // The context part of PointMib (with cuDNN when the job loads it), MiB.
  double ContextMib(const MemoryEstimate& e) const;
  // PointMib split into its parts, in MiB, in a fixed order: context (with
  // the per-SM part), cudnn, cublas_workspace, weights, gradients, optimizer,
  // optimizer_step (its temporaries beyond the working set), autocast_weights, data, ddp_buckets,
  // zero_buffers, activations (x activation_factor), transient (x
  // transient_factor), loss_head, allocator_rounding, allocator_segments, fragmentation.
  // They sum to PointMib.
  // Last, measured_workload: what the workload's offset adds (0 for an unseen one).
  std::vector<std::pair<std::string, double>> Components(const MemoryEstimate& e,
                                                         const std::string& workload = "") const;
  // The point and its interval at `level` (central probability, (0, 1)):
  // low = point x exp(LowScoreQuantile(MemoryLowAlpha(level))), high = point + HighScoreQuantile(max(kMemoryHighLevel, (1 +
  // level) / 2)) x HighScaleMib + widened_mib; always containing the point;
  // the uncalibrated model's (fewer than 3 workloads: no held-out error) low
  // end is the point, its high end the GPU's or slice's memory (e.capacity_mib),
  // or point + widened_mib where that is higher. capacity_mib from `e`.
  MemoryPrediction Predict(const MemoryEstimate& e, double level, const std::string& workload = "") const;

  const MemoryParams& params() const { return params_; }
  // Sorted log(measured) - log(predicted) of the calibration pass (rows whose
  // architecture had other workloads' rows to fit its context on); empty = uncalibrated.
  const std::vector<double>& calibration() const { return calibration_; }
  // The high end's calibration, sorted: ((measured - MemoryAdditiveMib -
  // predicted) / HighScale(high_certain_weight, predicted, its
  // high_scale_part), weight = 1 / the calibration rows of the row's
  // workload), one per calibration row, all of the held-out prediction.
  // high_certain_weight (one of CertainWeights) and high_scale_part are the
  // pair whose high end at kMemoryHighLevel has the smallest workload-weighted
  // median margin over the point on these rows (1, the whole point, on a tie;
  // the uncertain part before the graph's): 1 when the rows' errors are a
  // share of the whole point, lower when they are a share of the uncertain
  // part, or of all but the context (a context-only job then gets a narrow
  // high end: its context was measured on the training rows' GPUs).
  const std::vector<std::pair<double, double>>& high_scores() const { return high_scores_; }
  // The weighted conformal quantile of high_scores at `level` (REQUIRES: calibrated).
  double HighScoreQuantile(double level) const;
  // The low end's offset: the weighted lower conformal quantile at `alpha`
  // of the log residuals, each weighted 1 / the calibration rows of its
  // workload as the high end's (REQUIRES: calibrated).
  double LowScoreQuantile(double alpha) const;
  // The high end's scale for e, MiB: certain_weight x point + (1 -
  // certain_weight) x its high_scale_part (the uncertain part: working set and
  // optimizer-step excess; or the graph's part: the point less the context),
  // times the workload's offset factor.
  double HighScaleMib(const MemoryEstimate& e, const std::string& workload = "") const;
  // The workload (Fit's group id) of the calibration row whose score is the
  // high end's quantile at kMemoryHighLevel: the held-out error that sets
  // every job's high end (docs/predictor.md, "What sets the width"). -1 for an
  // uncalibrated model or one loaded from a file (the file keeps no workloads).
  int high_set_by() const { return high_set_by_; }
  double high_certain_weight() const { return high_certain_weight_; }
  HighScalePart high_scale_part() const { return high_scale_part_; }
  size_t rows() const { return rows_; }

  nlohmann::json Save() const;
  // What Save wrote; errors name the field ("memory.activation_factor: ...").
  static Result<MemoryModel> Load(const nlohmann::json& j);

 private:
  MemoryParams params_;
  std::vector<double> calibration_;
  std::vector<std::pair<double, double>> high_scores_;
  double high_certain_weight_ = 1;
  HighScalePart high_scale_part_ = HighScalePart::kUncertain;
  int high_set_by_ = -1;
  std::vector<std::pair<double, double>> low_scores_;  // (log residual, weight), sorted
  size_t rows_ = 0;  // training rows with a memory value
};

// What the high end adds to point x exp(quantile) for a job whatever the
// calibration: its estimated parts (MemoryEstimate::uncertain_mib) and, for a
// job with convolutions, cuDNN's run-to-run spread (kConvRerunMib), MiB.
double MemoryAdditiveMib(const MemoryEstimate& e);

// The high end's scale of a job whose point is `point` with `uncertain` MiB
// of it uncertain: certain_weight x point + (1 - certain_weight) x uncertain.
double HighScale(double certain_weight, double point, double uncertain);
// The weighted split-conformal quantile of (score, weight) pairs sorted by score.
double WeightedConformalQuantile(const std::vector<std::pair<double, double>>& sorted, double level);
// The certain weights Fit chooses among.
const std::vector<double>& CertainWeights();

// Leave-one-group-out log residuals (measured - predicted, NaN for rows
// without a memory value) of the memory model on these rows.
// REQUIRES >= 2 groups among the rows with a value.
Result<std::vector<double>> MemoryGroupedResiduals(const std::vector<MemoryEstimate>& est,
                                                   const std::vector<double>& measured_mib,
                                                   const std::vector<int>& group);

// One fold's held-out GPU memory: a MemoryModel fit (calibrated, as Fit's
// default) on the rows `train` of `data`, in that order, predicts each row of
// `test` at `level`. One MemoryPrediction per test row, in `test` order; all
// NaN when `data` has no memory estimates (mem not one per row) or fewer than
// 2 training rows have a memory value. The evaluation folds (evaluate.cc) and
// the lowo predictions a model file stores (Predictor::LowoRows) both come
// from here, so the two agree bit for bit.
// REQUIRES: every index < data.rows.size().
Result<std::vector<MemoryPrediction>> FoldMemoryPredictions(const Dataset& data, const std::vector<size_t>& train,
                                                            const std::vector<size_t>& test, double level);

}  // namespace gpucast
