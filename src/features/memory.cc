#include "features/memory.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "features/gpu_specs.h"

namespace gpucast {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kParamBytes = 4;  // fp32 parameters, gradients and optimizer state

// PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp): requests of
// at most 1 MiB share 2 MiB segments, requests below 10 MiB 20 MiB segments,
// larger ones get their own segment rounded up to 2 MiB.
constexpr int64_t kSmallSize = 1 << 20, kSmallBuffer = 2 << 20, kLargeBuffer = 20 << 20, kMinLargeAlloc = 10 << 20;

// What the allocator may hold for other shapes when input shapes vary between
// steps (variable_shapes=1), as a fraction of the step's working set
// (activations + the largest transient): 0.25 in the point, up to 1 more in
// the high end. An ESTIMATE, no measured row: blocks cut for one shape are
// split for smaller ones but a larger shape needs new segments; the allocator's
// authors report 13 GB of split free blocks on a 32 GB card
// (pytorch/pytorch#44742) and added expandable segments for this case
// (pytorch/pytorch#96995).
constexpr double kFragmentationPoint = 0.25, kFragmentationHigh = 1.0;

// fp32 tensors of the output's size the loss holds in backward (MemoryEstimate::loss_head_mib).
constexpr double kLossHeadTensors = 3;

bool NeedsCublas(const NodeCost& n) {
  return n.category == Category::kMatmul || n.op_type == "Einsum" || n.op_type == "Attention" ||
         n.category == Category::kRecurrent;
}

// Checkpointing (torch.utils.checkpoint, checkpoint_sequential): the saving
// nodes of one pass cut into round(sqrt(n)) segments of consecutive nodes
// (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"); kept:
// each segment's input (the first node's non-weight inputs) and, in backward,
// the largest segment recomputed. Returns {kept, largest segment} in bytes.
std::pair<double, double> Checkpointed(const CostReport& r) {
  std::vector<double> saved, boundary;
  const double passes = r.forward_passes > 0 ? r.forward_passes : 1;
  for (const NodeCost& n : r.nodes) {
    if (n.saved_bytes <= 0) continue;
    saved.push_back(static_cast<double>(n.saved_bytes));
    boundary.push_back(static_cast<double>(n.input_bytes) / passes);
  }
  if (saved.empty()) return {0, 0};
  const size_t n = saved.size();
  const size_t segments = std::max<size_t>(1, static_cast<size_t>(std::lround(std::sqrt(static_cast<double>(n)))));
  const size_t per = (n + segments - 1) / segments;
  double kept = 0, largest = 0, total = 0;
  for (size_t s = 0; s * per < n; ++s) {
    double seg = 0;
    for (size_t i = s * per; i < std::min(n, (s + 1) * per); ++i) seg += saved[i];
    if (s > 0) kept += boundary[s * per];  // the first segment's input is the data (counted in data)
    largest = std::max(largest, seg);
    total += seg;
  }
  kept += largest;
  return {std::min(kept, total), largest};
}

int ComputeMajor(const std::string& architecture) {
  if (architecture == "Pascal") return 6;
  if (architecture == "Volta" || architecture == "Turing") return 7;
  if (architecture == "Ampere" || architecture == "Ada") return 8;
  if (architecture == "Hopper") return 9;
  if (architecture == "Blackwell") return 10;
  return 0;
}

}  // namespace

const std::vector<ContextSource>& ContextSources() {
  // SMs of the GPU measured (datasheets: CUDA cores / 128 per SM): GTX 1080
  // 2,560 -> 20; RTX 3090 10,496 -> 82; RTX 6000 Ada 18,176 -> 142; 0 = not stated.
  static const std::vector<ContextSource> rows = {
      {"GTX 1080", "Pascal", 20, "PyTorch 1.8.2+cu101, eager module loading", false, 721,
       "pytorch/pytorch#55277 (comment 2022-04-12: torch.Tensor(1).cuda(), nvidia-smi)"},
      {"RTX 3090", "Ampere", 82, "PyTorch 1.8.2+cu111, eager module loading", false, 1687,
       "pytorch/pytorch#55277 (same comment, same probe)"},
      {"not stated", "", 0, "PyTorch 1.13 nightly, CUDA_MODULE_LOADING=DEFAULT (eager)", false, 666632192.0 / kMiB,
       "pytorch/pytorch#86509 (cudaMemGetInfo after one 20x16x50x100 tensor: 666,632,192 B)"},
      {"not stated", "", 0, "PyTorch 1.13 nightly, CUDA_MODULE_LOADING=LAZY", true, 287047680.0 / kMiB,
       "pytorch/pytorch#86509 (the same probe: 287,047,680 B)"},
      {"not stated", "", 0, "CUDA >= 11.7, lazy loading (PyTorch default)", true, 400e6 / kMiB,
       "pytorch/pytorch#109888 (maintainer: 'around 400MB')"},
      {"RTX 3090", "Ampere", 82, "PyTorch 2.7.1+cu128, lazy", true, 256,
       "invoke-ai/InvokeAI#9413 (nvidia-smi, idle process)"},
      {"RTX 6000 Ada", "Ada", 142, "PyTorch 2.10.0+cu130, lazy", true, 426,
       "unslothai/unsloth-zoo#1053 (nvidia-smi after torch.cuda.mem_get_info)"},
  };
  return rows;
}

double PublishedContextMaxMib() {
  double m = 0;
  for (const ContextSource& s : ContextSources()) m = std::max(m, s.mib);
  return m + kCudnnHandleMib;
}

double LazyContextMib(int sms) {
  double m = 0;
  for (const ContextSource& s : ContextSources()) {
    if (!s.lazy) continue;
    const double local = s.sms > 0 ? kDefaultMibPerSm * (std::max(sms, 0) - s.sms) : 0;
    m = std::max(m, s.mib + local);
  }
  return m;
}

double PublishedContextMinMib() {
  double m = INFINITY;
  for (const ContextSource& s : ContextSources()) m = std::min(m, s.mib);
  return m;
}

int OptimizerStates(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd: return 0;          // w -= lr * g
    case Optimizer::kSgdMomentum: return 1;  // momentum buffer
    case Optimizer::kAdam:
    case Optimizer::kAdamW: return 2;        // exp_avg, exp_avg_sq
  }
  return 2;
}

const char* OptimizerName(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd: return "sgd";
    case Optimizer::kSgdMomentum: return "sgd_momentum";
    case Optimizer::kAdam: return "adam";
    case Optimizer::kAdamW: return "adamw";
  }
  return "adam";
}

int64_t AllocatorBlockBytes(int64_t bytes) {
  constexpr int64_t kMinBlock = 512, kLargeAlloc = 10 << 20, kRoundLarge = 2 << 20;
  if (bytes <= 0) return 0;
  const int64_t unit = bytes > kLargeAlloc ? kRoundLarge : kMinBlock;
  return (bytes + unit - 1) / unit * unit;
}

double CublasWorkspaceMib(const std::string& architecture, double memory_gib) {
  // CUBLAS_WORKSPACE_CONFIG default ":4096:2:16:8": 2 x 4096 KiB + 8 x 16 KiB
  // (PyTorch CUDA semantics, "cuBLAS workspaces"; 8,519,680 B in a memory
  // snapshot: discuss.pytorch.org/t/178671).
  const double cublas = (2 * 4096 + 8 * 16) / 1024.0;
  // cuBLASLt (pytorch/pytorch#120925): 1 MiB, 4 MiB on compute capability 8.x
  // with >= 24 GB, 32 MiB from 9.0.
  const int major = ComputeMajor(architecture);
  const double lt = major >= 9 ? 32 : (major == 8 && memory_gib >= 24) ? 4 : 1;
  return cublas + lt;
}

double MemoryEstimate::StaticMib() const {
  return weights_mib + gradients_mib + optimizer_mib + autocast_mib + data_mib + ddp_buckets_mib + zero_buffers_mib +
         cublas_workspace_mib + rounding_mib + segments_mib + fragmentation_mib;
}

Result<MemoryEstimate> EstimateMemory(const std::vector<CostReport>& given, const JobConfig& job, int64_t ranks) {
  if (given.empty()) return Status::Error("memory: no cost reports given");
  std::vector<CostReport> selected;
  ASSIGN_OR_RETURN(const std::vector<CostReport>* use, SelectedReports(given, job.attrs, &selected));
  const std::vector<CostReport>& reports = *use;
  if (job.batch < 1) return Status::Error("memory: batch " + std::to_string(job.batch) + " < 1");
  if (ranks < 1) return Status::Error("memory: data-parallel ranks " + std::to_string(ranks) + " < 1");
  Result<GpuSpec> gpu = ResolveGpu(job.gpu, job.mig_profile);
  if (!gpu.ok()) return Status::Error("memory: " + gpu.message());
  const GpuSpec* whole = FindGpuSpec(job.gpu);
  const MemoryFacts& facts = job.attrs.memory;
  MemoryEstimate e;
  e.gpu = gpu->name;
  e.architecture = gpu->architecture;
  e.sms = gpu->sms;
  e.gpu_sms = whole ? whole->sms : gpu->sms;
  e.capacity_mib = gpu->memory_gib * 1024;
  e.optimizer = job.attrs.optimizer.value_or(kDefaultOptimizer);
  e.ranks = ranks;
  e.checkpointing = facts.activation_checkpointing.value_or(kDefaultActivationCheckpointing);
  e.trainable_fraction = facts.trainable_fraction.value_or(kDefaultTrainableFraction);
  e.zero_stage = facts.zero_stage.value_or(kDefaultZeroStage);
  e.grad_accumulation = facts.grad_accumulation.value_or(kDefaultGradAccumulation);
  e.variable_shapes = facts.variable_shapes.value_or(kDefaultVariableShapes);
  e.lazy_module_loading = facts.lazy_module_loading;
  e.lazy_context_mib = LazyContextMib(gpu->sms);
  const double states = OptimizerStates(e.optimizer);
  const double shards = static_cast<double>(ranks);
  double largest = 0, rounding = 0, largest_layer_params = 0, largest_layer_weights = 0;
  bool small_kept = false, mid_kept = false;
  for (const CostReport& r : reports) {
    const CostTotals& t = r.totals;
    // Frozen parameters the export names (CostTotals::frozen_params) get no gradient or optimizer
    // state; trainable_fraction scales what is left (the user's statement for a file without them).
    const double trained = static_cast<double>(t.params - t.frozen_params) * e.trainable_fraction;
    // Of those, embedding tables trained with sparse gradients (CostTotals::sparse_grad_params): their
    // gradient is the rows a step looks up (sparse_grad_bytes), which accumulate (uncoalesced) over
    // the micro-batches of a gradient accumulation; their optimizer state is dense (SparseAdam and
    // Adagrad keep the table-sized state; SGD none), as every trained parameter's.
    const double sparse = static_cast<double>(t.sparse_grad_params) * e.trainable_fraction;
    const double sparse_grad_mib =
        static_cast<double>(t.sparse_grad_bytes) * e.trainable_fraction * e.grad_accumulation / kMiB;
    e.weights_mib += static_cast<double>(t.weight_bytes) / kMiB;
    e.data_mib += static_cast<double>(t.data_input_bytes) / kMiB;
    e.autocast_mib += static_cast<double>(t.autocast_weight_bytes) / kMiB;
    for (const NodeCost& n : r.nodes) {
      largest_layer_params = std::max(largest_layer_params, static_cast<double>(n.params));
      largest_layer_weights = std::max(largest_layer_weights, static_cast<double>(n.weight_bytes));
      e.uses_cudnn = e.uses_cudnn || n.category == Category::kConvolution || n.category == Category::kRecurrent ||
                     n.op_type == "BatchNormalization" || n.op_type == "InstanceNormalization";
      e.uses_cublas = e.uses_cublas || NeedsCublas(n);
      e.uses_conv = e.uses_conv || n.category == Category::kConvolution;
    }
    if (r.backward_passes > 0) {
      // One pass's kept tensors: the passes of a network run one after another
      // (DCGAN's three D passes each end in their backward).
      e.trained_params += trained;
      e.sparse_grad_params += sparse;
      e.gradients_mib += (trained - sparse) * kParamBytes / kMiB + sparse_grad_mib;
      const double full = static_cast<double>(t.saved_bytes) / kMiB;
      e.activations_full_mib += full;
      if (e.checkpointing) {
        auto [kept, segment] = Checkpointed(r);
        e.activations_mib += kept / kMiB;
        e.checkpoint_segment_mib = std::max(e.checkpoint_segment_mib, segment / kMiB);
      } else {
        e.activations_mib += full;
      }
      // Each kept tensor is its own allocation (NodeCost::saved_tensors), rounded on its own.
      for (const NodeCost& n : r.nodes)
        for (int64_t b : n.saved_tensors) {
          if (b <= 0) continue;
          rounding += static_cast<double>(AllocatorBlockBytes(b) - b);
          small_kept = small_kept || b <= kSmallSize;
          mid_kept = mid_kept || (b > kSmallSize && b < kMinLargeAlloc);
        }
    }
    if (r.updates > 0) e.optimizer_mib += states * trained * kParamBytes / kMiB;
    largest = std::max(largest, static_cast<double>(t.largest_tensor_bytes));
    // The loss head: the largest float output of a network with a backward.
    if (r.backward_passes > 0)
      e.loss_head_mib =
          std::max(e.loss_head_mib, kLossHeadTensors * 4 * static_cast<double>(t.largest_output_elems) / kMiB);
  }
  e.largest_tensor_mib = largest / kMiB;
  // With checkpointing the rounding applies to what is kept: scale it alike.
  if (e.activations_full_mib > 0) rounding *= e.activations_mib / e.activations_full_mib;
  e.rounding_mib = rounding / kMiB;
  e.segments_mib = ((small_kept ? kSmallBuffer : 0) + (mid_kept ? kLargeBuffer : 0)) / kMiB;
  if (e.uses_cublas) e.cublas_workspace_mib = CublasWorkspaceMib(gpu->architecture, gpu->memory_gib);
  // Data parallelism: DDP keeps a bucketed copy of the gradients; ZeRO shards
  // the optimizer state (1), the gradients (2) and the parameters (3) across
  // the ranks, each rank holding the unsharded gradient of the layer being
  // reduced and (3) the gathered parameters of the layer running and the next.
  if (ranks > 1) {
    const double trained_largest = largest_layer_params * e.trainable_fraction * kParamBytes / kMiB;
    if (e.zero_stage >= 1) {
      e.optimizer_mib /= shards;
      e.zero_buffers_mib += trained_largest;
    }
    if (e.zero_stage >= 2) e.gradients_mib /= shards;
    if (e.zero_stage >= 3) {
      e.weights_mib /= shards;
      e.zero_buffers_mib += 2 * largest_layer_weights / kMiB;
    }
    if (e.zero_stage == 0) e.ddp_buckets_mib = e.gradients_mib;
  }
  // Estimates, widened in the high end: the segmentation of checkpointing (a
  // coarser one keeps up to one more largest segment) and fragmentation.
  if (e.checkpointing) e.uncertain_mib += e.checkpoint_segment_mib;
  if (e.variable_shapes) {
    const double working = e.activations_mib + e.largest_tensor_mib + e.loss_head_mib;
    e.fragmentation_mib = kFragmentationPoint * working;
    e.uncertain_mib += (kFragmentationHigh - kFragmentationPoint) * working;
  }
  return e;
}

const char* MemoryFactKeys() {
  return "activation_checkpointing, trainable_fraction, zero_stage, grad_accumulation, variable_shapes, "
         "cuda_module_loading";
}

std::optional<double> ParsePlainNumber(const std::string& value) {
  const bool plain = !value.empty() && value.size() <= 32 && std::all_of(value.begin(), value.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
  });
  if (!plain) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (end != value.c_str() + value.size()) return std::nullopt;
  return v;
}

bool ParseMemoryFact(const std::string& key, const std::string& value, MemoryFacts* facts, Status* status) {
  auto error = [&](const std::string& why) { return Status::Error("job attribute '" + key + "': " + why); };
  auto parse_bool = [&](std::optional<bool>* out) {
    if (value != "0" && value != "1") return error("value '" + value + "' is not 0 or 1");
    *out = value == "1";
    return Status::Ok();
  };
  auto parse_int = [&](int64_t lo, int64_t hi, std::optional<int64_t>* out) {
    const bool digits = !value.empty() && value.size() <= 6 &&
                        std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int64_t v = digits ? std::stoll(value) : -1;
    if (!digits || v < lo || v > hi)
      return error("value '" + value + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                   "]");
    *out = v;
    return Status::Ok();
  };
  if (key == "cuda_module_loading") {
    // CUDA_MODULE_LOADING's values, any case (DEFAULT is not one: what it means depends on the CUDA version).
    std::string v = value;
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    if (v == "lazy" || v == "eager") {
      facts->lazy_module_loading = v == "lazy";
      *status = Status::Ok();
    } else {
      *status = error("value '" + value + "' is not lazy or eager (CUDA_MODULE_LOADING of the job's stack)");
    }
  } else if (key == "activation_checkpointing") {
    *status = parse_bool(&facts->activation_checkpointing);
  } else if (key == "variable_shapes") {
    *status = parse_bool(&facts->variable_shapes);
  } else if (key == "zero_stage") {
    *status = parse_int(0, 3, &facts->zero_stage);
  } else if (key == "grad_accumulation") {
    *status = parse_int(1, 100000, &facts->grad_accumulation);
  } else if (key == "trainable_fraction") {
    const std::optional<double> f = ParsePlainNumber(value);
    if (!f) {
      *status = error("value '" + value + "' is not a number (the fraction of parameters trained)");
    } else if (!(*f > 0 && *f <= 1)) {
      *status = error("value '" + value + "' is out of range (want > 0 and <= 1)");
    } else {
      facts->trainable_fraction = *f;
      *status = Status::Ok();
    }
  } else {
    return false;
  }
  return true;
}

}  // namespace gpucast
