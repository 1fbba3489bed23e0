// The physical part of a job's GPU memory: what its graph(s) and configuration
// put on the GPU, component by component, in MiB (2^20 bytes). The parts the
// graph cannot tell (the CUDA context with its libraries, how much the caching
// allocator holds beyond the tensors it keeps) are learnt by the predictor
// (src/predict/memory_model.h) on measured rows. docs/predictor.md, "GPU memory".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cost/cost.h"
#include "features/features.h"
#include "util/status.h"

namespace gpucast {

// Optimizer state per trainable parameter, in parameter-sized tensors.
int OptimizerStates(Optimizer o);
const char* OptimizerName(Optimizer o);

struct MemoryEstimate {
  // Resident for the whole step, MiB:
  double weights_mib = 0;     // parameters and buffers (fp32 master copies), every network once
  double gradients_mib = 0;   // one gradient per trainable parameter (fp32), networks with a backward
  double optimizer_mib = 0;   // optimizer state: OptimizerStates × parameters × 4 B, networks updated
  double autocast_mib = 0;    // AMP: fp16 copies of conv/matmul/recurrent weights (autocast's cache)
  double data_mib = 0;        // the data inputs of one batch
  double ddp_buckets_mib = 0; // data-parallel ranks > 1: DDP's gradient buckets (a copy of the gradients)
  // Grows with the batch, MiB:
  double activations_mib = 0;  // tensors kept from forward to backward (CostTotals::saved_bytes),
                               // one pass per network that runs a backward
  double largest_tensor_mib = 0;  // the largest tensor of one pass (its gradient is alive at the peak)
  double rounding_mib = 0;     // caching-allocator rounding of the kept tensors (512 B blocks,
                               // 2 MiB above 10 MiB), per node
  // Libraries the step loads besides cuBLAS (their kernels and handles sit in
  // the context): cuDNN for convolutions, batch and instance norm, recurrent ops.
  bool uses_cudnn = false;
  // The GPU or MIG slice the job runs on (ResolveGpu):
  std::string gpu;             // canonical GPU name
  int sms = 0;                 // SMs of the GPU or slice
  int gpu_sms = 0;             // SMs of the whole GPU
  double capacity_mib = 0;     // memory of the GPU or slice (spec table GiB × 1024)
  Optimizer optimizer = kDefaultOptimizer;  // the one used (stated, or the default)
  int64_t ranks = 1;           // data-parallel ranks the estimate is for

  // weights + gradients + optimizer + autocast + data + ddp_buckets + rounding.
  double StaticMib() const;
};

// REQUIRES: reports as for ComputeFeatures (one per network, StepReport shares).
// `ranks`: data-parallel ranks (DDP) of the job, >= 1; each rank holds the
// whole model, its own batch and, above 1 rank, the gradient buckets.
// Errors: no reports, batch < 1, ranks < 1, a GPU or MIG profile not in the table.
Result<MemoryEstimate> EstimateMemory(const std::vector<CostReport>& reports, const JobConfig& job,
                                      int64_t ranks = 1);

// Size the PyTorch caching allocator gives a block of `bytes` (>= 0): rounded
// up to 512 B, and above 10 MiB (its large-allocation threshold) to 2 MiB.
int64_t AllocatorBlockBytes(int64_t bytes);

}  // namespace gpucast
