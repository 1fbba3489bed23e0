// The physical step-time model (`physics`, physics_regressor.cc) as a
// Regressor that also predicts the step time and the GPU-busy time per step.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "predict/regressor.h"

namespace gpucast {

struct PhysicsStep {
  double gpu_s = 0;   // GPU-busy time per training step, seconds
  double step_s = 0;  // wall time of one training step, seconds
  double util = 0;    // 100 * gpu_s / step_s, percent
  // The parts data-parallel training needs (predict/data_parallel.h):
  double core_s = 0;   // GPU and host work of the step (their partial overlap), no loader wait or RL env
  double slack_s = 0;  // loader wait that overlaps the core (workers > 0): GPU-side time added to the
                       // core up to this much does not lengthen the step
  bool unknown_pipeline = false;  // an input pipeline whose cost the job did not state
  // > 0: the loader time of this graph's measured workload (fitted per workload, seconds per
  // sample per worker) was used for the unstated pipeline instead of the training median.
  double own_loader_s_per_sample = 0;
};

// What-if changes to a prediction's step (the sensitivities behind the
// interval's widening, docs/predictor.md "What the predictor has not seen").
struct StepVariation {
  // Seconds per sample per worker of an input pipeline whose cost the job did
  // not state (data not on the GPU, no RL environment, no loader_ms_per_sample);
  // NaN = the model's own (the training workloads' median).
  double unknown_loader_s_per_sample = std::nan("");
  // The host's speed relative to the training rows' hosts: every host term
  // (per kernel, per step, per sample of a stated loader) is multiplied by it.
  double host_factor = 1;
  // Use a measured workload's own fitted loader time for a row of its graph with an unstated
  // pipeline (carried to another GPU), instead of the training median (fitting, and a row the
  // workload's seen-workload correction applies to, use the median).
  bool own_loaders = false;
  // Seconds of per-step host work in series (host_s_per_step) of a workload
  // whose script is not measured; NaN = the fitted global value.
  double host_s_per_step = std::nan("");
};

class PhysicsModel : public Regressor {
 public:
  // REQUIRES: fitted or loaded.
  virtual Result<std::vector<PhysicsStep>> PredictSteps(const Matrix& x) const = 0;
  virtual Result<std::vector<PhysicsStep>> PredictSteps(const Matrix& x, const StepVariation& v) const = 0;
  // The spread of the training workloads' per-step host work (seconds): the
  // central `level` range of each measured workload's implied per-step host
  // time (physics_regressor.cc); {NaN, NaN} when unknown (older model files).
  virtual std::pair<double, double> HostStepRange() const = 0;
  // The fitted global parameters, by name.
  virtual std::vector<std::pair<std::string, double>> Parameters() const = 0;
};

std::unique_ptr<PhysicsModel> MakePhysicsModel(const RegressorOptions& options = {});

// The tensor-core split (an experiment, off by default; docs/predictor.md, "Where the step error comes
// from"): with it, a row with amp = 1 divides its compute term by its own fitted efficiency
// `eff_tensor_core` instead of eff_compute (FP16 tensor-core work reaching another fraction of its peak
// than FP32 work on CUDA cores), fitted only where the training rows have an amp row with a measured
// utilization (else eff_compute's: an amp step alone cannot tell it from amp_host_factor). A physics model's parameter `tensor_core_split` (0 or 1, recorded in
// the model file; a file without it reads as 0); a new model starts with it on when made with
// RegressorOptions::tensor_core_split (MakePhysicsModel, MakeRegressor; FitOptions::regressor carries
// it through the fits of `train` / `evaluate --tensor-core-split`), or sets it by Configure.

}  // namespace gpucast
