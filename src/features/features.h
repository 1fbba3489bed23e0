// The predictor's input: a named, versioned feature vector computed from the
// cost reports of a job's graph(s) plus the job's configuration.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost.h"
#include "features/interconnect.h"
#include "features/memory_facts.h"
#include "util/status.h"

namespace gpucast {

// The optimizer of a training job (job attribute `optimizer`): how much state
// it keeps per parameter (memory; features/memory.h). AdamW keeps what Adam keeps.
enum class Optimizer { kSgd, kSgdMomentum, kAdam, kAdamW };

// Facts about a job beyond its graph. All optional: a job given only graph +
// batch (+ AMP) must still be predictable (missing values get documented
// defaults and an "is known" indicator feature).
struct JobAttrs {
  std::optional<int64_t> loader_workers;  // 0 = data loaded in the training process
  std::optional<bool> data_on_gpu;        // inputs already resident on the GPU
  std::optional<bool> rl_env;             // CPU-simulated environment in the loop
  // CPU milliseconds one DataLoader worker needs to produce one sample (read,
  // decode, transform, collate share); > 0 and finite. Measure it with
  // tools/measure/loader_probe.py. Unknown (nullopt) is not 0: 0 is rejected.
  std::optional<double> loader_ms_per_sample;
  // RL jobs: environment steps simulated per gradient update (rollout length ×
  // environments / updates per rollout); an integer >= 1.
  std::optional<int64_t> env_steps_per_update;
  // sgd, sgd_momentum, adam, adamw. Not a feature of the utilization schema:
  // the memory estimate reads it (kDefaultOptimizer when unknown).
  std::optional<Optimizer> optimizer;
  // CPU cores the job's host gives each of its GPUs (a cluster fact: cores of
  // a node / GPUs of the node). Unknown (nullopt): the loader workers are not
  // capped. Stated: the loader runs min(loader_workers, max(1, cores - 1))
  // workers at once (the training process keeps one core): the loader_workers
  // feature is that effective count (docs/features.md).
  std::optional<int64_t> cpu_cores_per_gpu;
  // Whether FP32 convolutions and matmuls run on TF32 tensor cores (Ampere and
  // newer: GPUs whose spec has tf32_tensor_flops > 0). 1: both (PyTorch 1.7 to
  // 1.11's defaults, or torch.backends.cuda.matmul.allow_tf32 = True); 0:
  // neither; unknown (nullopt): PyTorch's defaults since 1.12, cuDNN's
  // convolutions and recurrent layers on TF32 and matmuls in FP32, on a GPU
  // whose TF32 rate exceeds its FP32 rate, else neither (Tf32For; the
  // predictor's interval also holds 0 and 1). Not a feature column: it chooses
  // the peak rate of the roofline estimate (EstimateStep).
  std::optional<bool> tf32;
  // Whether the job's convolutions run on channels-last (NHWC) tensors
  // (model.to(memory_format=torch.channels_last)). 0 or unknown (nullopt):
  // PyTorch's default NCHW, which cuDNN transposes to NHWC around every
  // convolution it runs on tensor cores (AMP, TF32): extra traffic in the step
  // estimate (EstimateStep). Not a feature column.
  std::optional<bool> channels_last;
  // Fraction of the elements a boolean mask selects (a masked LM's 15% of the
  // tokens, a detector's boxes over a score threshold), where the graph
  // selects by a mask of the data: the loader sizes such a selection as every
  // element (an upper bound), and the nodes computed from it
  // (NodeCost::selection_bound) are scaled to this fraction (SelectionShare,
  // cost/job_cost.h) in the features and the memory estimate. (0, 1]; unknown
  // (nullopt): 1 in both, and the predictor's interval spans 0 to 1
  // (docs/predictor.md, "Data-dependent selections").
  std::optional<double> selected_fraction;
  // Facts that change GPU memory only (features/memory_facts.h).
  MemoryFacts memory;
};

// The loader_workers feature: loader_workers (default kDefaultLoaderWorkers),
// capped by cpu_cores_per_gpu as above.
int64_t EffectiveLoaderWorkers(const JobAttrs& a);

// Parses "KEY=VALUE" into attrs. Keys: loader_workers, data_on_gpu, rl_env,
// loader_ms_per_sample, env_steps_per_update, optimizer, cpu_cores_per_gpu,
// tf32, channels_last, selected_fraction and
// the memory facts of features/memory_facts.h (docs/features.md).
// Unknown keys and malformed or out-of-range values are errors naming the key.
Status ParseJobAttr(const std::string& key_value, JobAttrs* attrs);

// The reports the features and the memory estimate of a job read: `reports`
// itself (returned) unless attrs.selected_fraction is stated and some report
// has selection-bound nodes; then each SelectionShare'd at it, kept in
// *storage, which is returned.
Result<const std::vector<CostReport>*> SelectedReports(const std::vector<CostReport>& reports, const JobAttrs& attrs,
                                                       std::vector<CostReport>* storage);

struct FeatureSchema {
  std::string name;     // "gpucast-features"
  int version = 0;      // bumped whenever names or meanings change
  std::vector<std::string> names;
};

// The schema ComputeFeatures produces.
const FeatureSchema& CurrentFeatureSchema();

struct JobConfig {
  int64_t batch = 1;
  bool amp = false;
  JobAttrs attrs;
  std::string gpu = "RTX3090";  // key of the GPU spec table
  std::string mig_profile;      // MIG instance of `gpu` ("" = the whole GPU); see ResolveGpu
  // Data-parallel training (DDP): `batch` is per GPU; the features are one rank's. The
  // predictor turns the single-GPU answer into one rank's (predict/data_parallel.h).
  int gpus = 1;                 // GPUs (ranks) in all, >= 1
  int nodes = 1;                // nodes they are spread on evenly, >= 1
  std::string interconnect;     // --interconnect tokens ("" = the GPU table's links); ResolveInterconnect
  // Whose names the errors give these inputs (the service: kApi, its JSON fields).
  InputWording wording = InputWording::kCli;
  // Whether the roofline counts each GPU's compute peaks at the clock its board power sustains
  // (SustainedComputeFraction, gpu_specs.h) rather than at the boost clock. A property of the
  // model, not of the job: a model file records the setting it was trained with
  // (PredictorInfo::power_limited_clock) and Predictor::Predict sets it from there, so that
  // every front end computes the features the model was fitted on.
  bool power_limited_clock = false;
};

// REQUIRES: reports non-empty (several graphs per job: GAN G+D, actor+critic),
// already repeated per the catalog's repeat count; they are summed.
// Returns values in CurrentFeatureSchema().names order (docs/features.md).
// Errors: no reports, batch < 1, a GPU not in the spec table.
Result<std::vector<double>> ComputeFeatures(const std::vector<CostReport>& reports,
                                            const JobConfig& job);

// Whether `gpucast train` and `evaluate` count the power-limited clock unless told
// (--power-limited-clock / --no-power-limited-clock; JobConfig::power_limited_clock).
// On: held out by workload and by GPU the step time is better and utilization the same or
// slightly worse (docs/predictor.md, "The power-limited clock").
inline constexpr bool kDefaultPowerLimitedClock = true;

// Documented defaults of the job attributes when unknown.
inline constexpr int64_t kDefaultLoaderWorkers = 0;  // PyTorch DataLoader's default
inline constexpr bool kDefaultDataOnGpu = false;
inline constexpr bool kDefaultRlEnv = false;
// Adam: the most state of the four (2 tensors per parameter), so that a job
// whose optimizer is not stated is not predicted below what it may need.
inline constexpr Optimizer kDefaultOptimizer = Optimizer::kAdam;
// Largest accepted loader_ms_per_sample (1000 s per sample): beyond it a value is a unit mistake.
inline constexpr double kMaxLoaderMsPerSample = 1e6;

// Roofline estimate of one training step (forward + backward + weight update).
struct StepEstimate {
  double busy_s = 0;      // Σ nodes max(flops / peak, bytes / bandwidth) = compute_s + memory_s
  double compute_s = 0;   // the part of busy_s from kernels whose flops / peak is the larger
  double memory_s = 0;    // the part of busy_s from kernels whose bytes / bandwidth is the larger
  double launch_s = 0;    // kernels × kHostSecondsPerKernel
  int64_t kernels = 0;    // kernel launches per step
  double bytes = 0;       // memory traffic per step (bytes)
};
// Host-side time to issue one kernel (PyTorch eager dispatch + CUDA launch).
inline constexpr double kHostSecondsPerKernel = 10e-6;
// Weight-update traffic per parameter (read weight, grad, one optimizer state; write weight).
inline constexpr double kOptimizerBytesPerParam = 16;

struct GpuSpec;
// Which FP32 nodes run on TF32 tensor cores (where the GPU has TF32).
enum class Tf32 {
  kNone,   // every FP32 FLOP on CUDA cores (tf32 stated 0)
  kCudnn,  // cuDNN's convolutions and recurrent layers (torch.backends.cudnn.allow_tf32,
           // default on); matmuls in FP32 (torch.backends.cuda.matmul.allow_tf32, default
           // off since PyTorch 1.12): PyTorch's defaults, the unstated job's on a GPU whose
           // TF32 rate exceeds its FP32 rate
  kAll,    // convolutions, recurrent layers and matmuls (tf32 stated 1)
};
// The TF32 use of a job stating `tf32` (or not) on `gpu`: stated 1 kAll, stated 0 kNone;
// unstated kCudnn where gpu.tf32_tensor_flops > gpu.fp32_flops, else kNone (GeForce Ampere and
// Ada run TF32 at the FP32 rate: there the measured FP32 rows, PyTorch 1.11's TF32 defaults, are
// fitted without cuDNN's transposes).
Tf32 Tf32For(const std::optional<bool>& tf32, const GpuSpec& gpu);
// Peaks: AMP half ops (convolution, matmul, recurrent under autocast) at
// fp16_tensor_flops; without AMP, the nodes `tf32` puts on TF32 (above) at
// tf32_tensor_flops where the GPU has TF32 (> 0); every other FLOP at fp32_flops. power_limited_clock: every compute peak times
// SustainedComputeFraction(gpu) (JobConfig::power_limited_clock); bandwidth is not scaled.
// A convolution on tensor cores (fp16 under AMP, or TF32 by `tf32`; not Pascal) of NCHW tensors
// (channels_last false, PyTorch's default) also moves 2 x (its input + its output bytes) in two
// kernels, in forward and in each backward pass: cuDNN's NHWC transposes.
StepEstimate EstimateStep(const std::vector<CostReport>& reports, const GpuSpec& gpu, bool amp,
                          Tf32 tf32 = Tf32::kNone, bool power_limited_clock = false, bool channels_last = false);

}  // namespace gpucast
