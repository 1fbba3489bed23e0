// `gpucast evaluate --memory-only`: the GPU memory model's held-out evaluation
// (predict/memory_eval.h) printed as tables or JSON (gpucast.memory-evaluation).
#pragma once

#include <vector>

#include "predict/dataset.h"
#include "predict/evaluate.h"

namespace gpucast::cli {

// Prints the evaluation of each split; returns the exit code.
int RunMemoryEvaluation(const Dataset& data, const std::vector<Split>& splits, double level, bool json);

}  // namespace gpucast::cli
