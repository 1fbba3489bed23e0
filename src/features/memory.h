// The physical part of a job's GPU memory: what its graph(s), its job facts and
// the libraries PyTorch loads put on the GPU, component by component, in MiB
// (2^20 bytes). The parts the graph cannot tell (the CUDA context with its
// kernels, how much the caching allocator holds beyond the tensors it keeps)
// are learnt by the predictor (src/predict/memory_model.h) on measured rows;
// the documented constants and their sources are in memory.cc and in
// docs/predictor.md, "GPU memory".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost.h"
#include "features/features.h"
#include "util/status.h"

namespace gpucast {

// Optimizer state per trainable parameter, in parameter-sized fp32 tensors.
int OptimizerStates(Optimizer o);
const char* OptimizerName(Optimizer o);

// The CUDA context of a PyTorch process as published measurements give it
// (nvidia-smi or cudaMemGetInfo after the first CUDA tensor, before any
// allocation of the job): one row per source. The predictor's fitted context
// stands in for these on the GPUs it was trained on; these bound it elsewhere.
struct ContextSource {
  const char* gpu;           // the GPU measured
  const char* architecture;  // as GpuSpec::architecture
  int sms;                   // SMs of the GPU measured (0: not stated)
  const char* software;      // PyTorch / CUDA / how kernels load
  bool lazy;                 // CUDA_MODULE_LOADING=LAZY (CUDA >= 11.7, PyTorch >= 1.13 default)
  double mib;                // the measured context, MiB
  const char* source;        // where it is published
};
const std::vector<ContextSource>& ContextSources();
// The largest and smallest published context (MiB), eager loading with cuDNN
// loaded counted in (a cuDNN handle, published separately: kCudnnHandleMib).
double PublishedContextMaxMib();
double PublishedContextMinMib();

// 2,048 resident threads per SM x the 1 KiB default CUDA stack
// (cudaLimitStackSize) = 2 MiB of local memory per SM, reserved with the context.
inline constexpr double kDefaultMibPerSm = 2.0;

// The CUDA context of an idle PyTorch process with lazy module loading
// (CUDA_MODULE_LOADING=LAZY: the default from CUDA 11.7 and PyTorch 1.13) on
// a GPU or MIG slice of `sms` SMs, MiB: the largest published lazy context
// (ContextSources), the per-SM local memory (kDefaultMibPerSm) of a source
// whose GPU is stated moved from its SM count to `sms`; a source whose GPU is
// not stated counts as published. The largest, so that a limit set from it
// holds on every published stack.
double LazyContextMib(int sms);

// A cuDNN 7 handle's memory on a GTX 1070 (pytorch/pytorch#12873): ~750 MB.
inline constexpr double kCudnnHandleMib = 750e6 / (1 << 20);

struct MemoryEstimate {
  // Resident for the whole step, MiB:
  double weights_mib = 0;     // parameters and buffers (fp32 master copies), every network once; / ranks under ZeRO-3
  double gradients_mib = 0;   // fp32 gradients of the trained parameters, networks with a backward; / ranks under ZeRO >= 2
                              // (a table with sparse gradients: the rows the step looks up, x grad_accumulation)
  double optimizer_mib = 0;   // optimizer state: OptimizerStates x trained parameters x 4 B; / ranks under ZeRO >= 1
  double autocast_mib = 0;    // AMP: fp16 copies of conv/matmul/recurrent weights (autocast's cache)
  double data_mib = 0;        // the data inputs of one batch
  double ddp_buckets_mib = 0; // DDP (ranks > 1, ZeRO 0): its gradient buckets (a copy of the gradients)
  double zero_buffers_mib = 0;  // ZeRO 2/3: the unsharded gradient, and (3) two gathered copies, of the largest layer
  double cublas_workspace_mib = 0;  // cuBLAS + cuBLASLt workspaces PyTorch allocates (documented sizes)
  // Grows with the batch, MiB:
  double activations_mib = 0;  // tensors kept from forward to backward (CostTotals::saved_bytes, one pass
                               // per network that runs a backward); with checkpointing, what it keeps
  double activations_full_mib = 0;  // the same without checkpointing
  double checkpoint_segment_mib = 0;  // checkpointing: the largest segment, recomputed in backward
  double largest_tensor_mib = 0;  // the largest tensor of one pass (its gradient is alive at the peak)
  // The loss on the network's output, computed in fp32 (autocast's list) after the graph: the
  // log-probabilities, their gradient and exp(output) in log_softmax's backward (derivatives.yaml:
  // _log_softmax_backward_data) = 3 fp32 tensors of the size of the largest float graph output
  // (CostTotals::largest_output_elems) of the networks with a backward. A language model's vocabulary-sized logits make it large.
  double loss_head_mib = 0;
  double rounding_mib = 0;     // caching-allocator block rounding of the kept tensors (512 B; 2 MiB
                               // segments above 10 MiB), per node
  double segments_mib = 0;     // the allocator's partly used segments: small tensors share 2 MiB
                               // segments, 1-10 MiB ones 20 MiB segments (one of each, at most)
  double fragmentation_mib = 0;  // variable_shapes: blocks cached for other shapes (an estimate)
  // What the high end adds for the parts that are estimates, not fitted on
  // measured rows (checkpoint segmentation, fragmentation), MiB.
  double uncertain_mib = 0;
  double trained_params = 0;   // parameters that get a gradient (after trainable_fraction)
  double sparse_grad_params = 0;  // of trained_params: tables with sparse gradients (CostTotals::sparse_grad_params)
  // Libraries the step loads besides cuBLAS (their kernels and handles sit in
  // the context): cuDNN for convolutions, batch and instance norm, recurrent ops.
  bool uses_cudnn = false;
  bool uses_cublas = false;    // matmul / Gemm / Einsum / Attention (cuBLAS workspaces)
  bool uses_conv = false;      // convolutions: cuDNN's autotuner picks workspaces that vary run to run
  // The GPU or MIG slice the job runs on (ResolveGpu):
  std::string gpu;             // canonical GPU name
  std::string architecture;    // its architecture (GpuSpec::architecture)
  int sms = 0;                 // SMs of the GPU or slice
  int gpu_sms = 0;             // SMs of the whole GPU
  double capacity_mib = 0;     // memory of the GPU or slice (spec table GiB × 1024)
  Optimizer optimizer = kDefaultOptimizer;  // the one used (stated, or the default)
  int64_t ranks = 1;           // data-parallel ranks the estimate is for
  // The memory facts as applied (stated or defaults):
  bool checkpointing = kDefaultActivationCheckpointing;
  double trainable_fraction = kDefaultTrainableFraction;
  int64_t zero_stage = kDefaultZeroStage;
  int64_t grad_accumulation = kDefaultGradAccumulation;
  bool variable_shapes = kDefaultVariableShapes;
  // CUDA_MODULE_LOADING of the job's stack: true lazy, false eager, unset unknown.
  std::optional<bool> lazy_module_loading;
  double lazy_context_mib = 0;  // LazyContextMib(sms)

  // Everything exact or documented that does not scale with a fitted factor:
  // weights + gradients + optimizer + autocast + data + ddp_buckets +
  // zero_buffers + cublas_workspace + rounding + segments + fragmentation.
  double StaticMib() const;
};

// REQUIRES: reports as for ComputeFeatures (one per network, StepReport shares).
// `ranks`: data-parallel ranks (DDP) of the job, >= 1; each rank holds the
// whole model (unless job.attrs.memory.zero_stage shards it), its own batch
// and, above 1 rank, the gradient buckets. The job's memory facts
// (job.attrs.memory) and the selected fraction (job.attrs.selected_fraction,
// features.h) apply.
// Errors: no reports, batch < 1, ranks < 1, a GPU or MIG profile not in the table.
Result<MemoryEstimate> EstimateMemory(const std::vector<CostReport>& reports, const JobConfig& job,
                                      int64_t ranks = 1);

// Size the PyTorch caching allocator gives a block of `bytes` (>= 0): rounded
// up to 512 B, and above 10 MiB (its large-allocation threshold) to 2 MiB.
int64_t AllocatorBlockBytes(int64_t bytes);

// The cuBLAS and cuBLASLt workspaces PyTorch allocates through its caching
// allocator on the default stream, MiB, for a GPU of `architecture` with
// `memory_gib`: CUBLAS_WORKSPACE_CONFIG's default :4096:2:16:8 (8.125 MiB)
// plus the cuBLASLt workspace (1 MiB; 4 MiB on Ampere with >= 24 GB; 32 MiB on
// Hopper and later: pytorch/pytorch#120925).
double CublasWorkspaceMib(const std::string& architecture, double memory_gib);

}  // namespace gpucast
