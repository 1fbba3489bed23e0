// Job facts that change a training job's GPU memory but not its graph
// (`--attr KEY=VALUE` in every front end; docs/features.md, "Job attributes",
// and docs/predictor.md, "GPU memory"). All optional; unknown means the
// documented default, which is the one that needs the most memory (a limit
// set from it must hold).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "util/status.h"

namespace gpucast {

struct MemoryFacts {
  // torch.utils.checkpoint over the network: only segment boundaries are kept
  // for backward, each segment recomputed in turn. Default false.
  std::optional<bool> activation_checkpointing;
  // Fraction of the graph's parameters that are trained (fine-tuning with
  // frozen layers, adapters): only they get gradients and optimizer state.
  // (0, 1]; default 1.
  std::optional<double> trainable_fraction;
  // ZeRO stage across the data-parallel ranks (--gpus): 1 shards the optimizer
  // state, 2 also the gradients, 3 also the parameters (FSDP FULL_SHARD = 3,
  // SHARD_GRAD_OP = 2). 0..3; default 0 (plain DDP).
  std::optional<int64_t> zero_stage;
  // Micro-batches per optimizer step (--batch is one micro-batch): the
  // gradients stay resident between them. >= 1; default 1.
  std::optional<int64_t> grad_accumulation;
  // Input shapes change between steps (dynamic padding, variable image sizes;
  // --dim gives the largest): the caching allocator fragments. Default false.
  std::optional<bool> variable_shapes;
  // How the CUDA driver loads the kernels of PyTorch and its libraries
  // (CUDA_MODULE_LOADING): true = lazy, on first use (the default from CUDA
  // 11.7 with PyTorch 1.13: a context of a few hundred MiB), false = eager,
  // all at start-up (older stacks: 0.7-1.7 GB). Unknown: the point assumes the
  // training rows' stack (eager), the low end reaches the lazy context.
  std::optional<bool> lazy_module_loading;
};

inline constexpr bool kDefaultActivationCheckpointing = false;
inline constexpr double kDefaultTrainableFraction = 1.0;
inline constexpr int64_t kDefaultZeroStage = 0;
inline constexpr int64_t kDefaultGradAccumulation = 1;
inline constexpr bool kDefaultVariableShapes = false;

// "activation_checkpointing, trainable_fraction, zero_stage, grad_accumulation, variable_shapes,
// cuda_module_loading" (the last: lazy_module_loading, values lazy | eager).
const char* MemoryFactKeys();

// cuda_module_loading's value as stated: "lazy" (true), "eager" (false), "unknown" (unset).
inline const char* CudaModuleLoadingName(std::optional<bool> lazy) {
  return !lazy ? "unknown" : *lazy ? "lazy" : "eager";
}

// A job attribute's number: a plain decimal (digits, '.', an exponent, a sign; at most 32
// characters, all of them read), else nullopt: no "inf", "nan", hex or trailing text.
std::optional<double> ParsePlainNumber(const std::string& value);

// Parses one memory fact: true when `key` is one (then *status says whether
// `value` was valid; errors as ParseJobAttr's, naming the key), false when it
// is not a memory fact (status untouched).
bool ParseMemoryFact(const std::string& key, const std::string& value, MemoryFacts* facts, Status* status);

}  // namespace gpucast
