// The physical step-time model (`physics`, physics_regressor.cc) as a
// Regressor that also predicts the step time and the GPU-busy time per step.
#pragma once

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
};

class PhysicsModel : public Regressor {
 public:
  // REQUIRES: fitted or loaded.
  virtual Result<std::vector<PhysicsStep>> PredictSteps(const Matrix& x) const = 0;
  // The fitted global parameters, by name.
  virtual std::vector<std::pair<std::string, double>> Parameters() const = 0;
};

std::unique_ptr<PhysicsModel> MakePhysicsModel();

}  // namespace gpucast
