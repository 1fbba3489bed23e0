#include "features/memory.h"

#include <algorithm>
#include <cmath>

#include "features/gpu_specs.h"

namespace gpucast {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kParamBytes = 4;  // fp32 parameters, gradients and optimizer state

}  // namespace

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

double MemoryEstimate::StaticMib() const {
  return weights_mib + gradients_mib + optimizer_mib + autocast_mib + data_mib + ddp_buckets_mib + rounding_mib;
}

Result<MemoryEstimate> EstimateMemory(const std::vector<CostReport>& reports, const JobConfig& job,
                                      int64_t ranks) {
  if (reports.empty()) return Status::Error("memory: no cost reports given");
  if (job.batch < 1) return Status::Error("memory: batch " + std::to_string(job.batch) + " < 1");
  if (ranks < 1) return Status::Error("memory: data-parallel ranks " + std::to_string(ranks) + " < 1");
  Result<GpuSpec> gpu = ResolveGpu(job.gpu, job.mig_profile);
  if (!gpu.ok()) return Status::Error("memory: " + gpu.message());
  const GpuSpec* whole = FindGpuSpec(job.gpu);
  MemoryEstimate e;
  e.gpu = gpu->name;
  e.sms = gpu->sms;
  e.gpu_sms = whole ? whole->sms : gpu->sms;
  e.capacity_mib = gpu->memory_gib * 1024;
  e.optimizer = job.attrs.optimizer.value_or(kDefaultOptimizer);
  e.ranks = ranks;
  const double states = OptimizerStates(e.optimizer);
  double largest = 0, rounding = 0;
  for (const CostReport& r : reports) {
    const CostTotals& t = r.totals;
    const double params = static_cast<double>(t.params);
    e.weights_mib += static_cast<double>(t.weight_bytes) / kMiB;
    e.data_mib += static_cast<double>(t.data_input_bytes) / kMiB;
    e.autocast_mib += static_cast<double>(t.autocast_weight_bytes) / kMiB;
    if (r.backward_passes > 0) {
      // One pass's kept tensors: the passes of a network run one after another
      // (DCGAN's three D passes each end in their backward).
      e.gradients_mib += params * kParamBytes / kMiB;
      e.activations_mib += static_cast<double>(t.saved_bytes) / kMiB;
      for (const NodeCost& n : r.nodes)
        rounding += static_cast<double>(AllocatorBlockBytes(n.saved_bytes) - n.saved_bytes);
    }
    if (r.updates > 0) e.optimizer_mib += states * params * kParamBytes / kMiB;
    largest = std::max(largest, static_cast<double>(t.largest_tensor_bytes));
    for (const NodeCost& n : r.nodes)
      e.uses_cudnn = e.uses_cudnn || n.category == Category::kConvolution || n.category == Category::kRecurrent ||
                     n.op_type == "BatchNormalization" || n.op_type == "InstanceNormalization";
  }
  e.largest_tensor_mib = largest / kMiB;
  e.rounding_mib = rounding / kMiB;
  if (ranks > 1) e.ddp_buckets_mib = e.gradients_mib;
  return e;
}

}  // namespace gpucast
