// The learnt GPU memory model: the physical estimate of src/features/memory.h
// plus a few global parameters fitted on measured rows (Lucid `gmem`,
// MIGProfiler `gmem_mib`), with a split-conformal interval (docs/predictor.md,
// "GPU memory"). In MiB:
//
//   context   = context_mib[gpu] - mib_per_sm * (whole-GPU SMs - SMs of the slice)
//               + cudnn_mib if the job uses cuDNN (convolutions, batch norm, RNNs)
//   mib       = context + static (weights, gradients, optimizer state, autocast
//               copies, data, DDP buckets, allocator rounding; factor 1: exact)
//               + activation_factor * activations + transient_factor * largest tensor
//
// context_mib: one per GPU type of the training rows (CUDA context, cuDNN and
// cuBLAS kernels and workspaces, the driver's share as nvidia-smi counts it);
// a GPU without training rows gets the mean of the fitted ones. mib_per_sm:
// the context's per-SM part (local memory for every resident thread), fitted
// when the training rows hold one GPU at two SM counts (MIG slices), else
// kDefaultMibPerSm. cudnn_mib: cuDNN's kernels and handles, fitted when the
// rows of one GPU hold jobs with and without cuDNN ops, else 0 (folded into
// the context). activation_factor: what the caching allocator holds per
// kept byte (fragmentation, what the saved-tensor table misses).
// transient_factor: tensors of the size of the largest alive at the peak
// (gradients, workspaces). Fitted by least squares on log(mib), so every
// row's relative error counts alike.
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
  bool available() const { return !std::isnan(mib); }
  // Fit against capacity_mib: the point above it will not fit; the high end above it may not.
  bool fits() const { return available() && high <= capacity_mib; }
  bool will_not_fit() const { return available() && mib > capacity_mib; }
};

// 2,048 resident threads per SM x the 1 KiB default CUDA stack
// (cudaLimitStackSize) = 2 MiB of local memory per SM, reserved with the context.
inline constexpr double kDefaultMibPerSm = 2.0;

struct MemoryParams {
  std::map<std::string, double> context_mib;  // per canonical GPU name, MiB
  double mib_per_sm = kDefaultMibPerSm;
  bool mib_per_sm_fitted = false;
  double activation_factor = 1;
  double transient_factor = 1;
  double cudnn_mib = 0;
  bool cudnn_mib_fitted = false;
};

class MemoryModel {
 public:
  // Fits on the rows whose measured_mib is finite and > 0 (the others are
  // skipped). `group`: workload of each row; with >= 3 workloads among the
  // fitted rows and `calibrate`, the interval is split-conformal on the log
  // residuals of a leave-one-workload-out pass over those rows (each
  // workload predicted by a model fit without it), as utilization's.
  // Errors: sizes that differ, fewer than 2 rows with a memory value.
  static Result<MemoryModel> Fit(const std::vector<MemoryEstimate>& est, const std::vector<double>& measured_mib,
                                 const std::vector<int>& group, bool calibrate = true);

  double PointMib(const MemoryEstimate& e) const;
  // The context part of PointMib (with cuDNN when the job loads it), MiB.
  double ContextMib(const MemoryEstimate& e) const;
  // PointMib split into its parts, in MiB, in a fixed order: context (with
  // cuDNN and the per-SM part), weights, gradients, optimizer, autocast_weights,
  // data, ddp_buckets, activations (x activation_factor), transient (x
  // transient_factor), rounding. They sum to PointMib.
  std::vector<std::pair<std::string, double>> Components(const MemoryEstimate& e) const;
  // The point and its interval at `level` (central probability, (0, 1)):
  // point x exp(conformal offsets), always containing the point; the
  // uncalibrated model's interval is the point itself. capacity_mib from `e`.
  MemoryPrediction Predict(const MemoryEstimate& e, double level) const;

  const MemoryParams& params() const { return params_; }
  // Sorted log(measured) - log(predicted) of the calibration pass; empty = uncalibrated.
  const std::vector<double>& calibration() const { return calibration_; }
  size_t rows() const { return rows_; }

  nlohmann::json Save() const;
  // What Save wrote; errors name the field ("memory.activation_factor: ...").
  static Result<MemoryModel> Load(const nlohmann::json& j);

 private:
  MemoryParams params_;
  std::vector<double> calibration_;
  size_t rows_ = 0;  // training rows with a memory value
};

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
