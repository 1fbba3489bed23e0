// Vendor datasheet numbers of the GPUs gpucast knows (sources in
// docs/features.md). Peak rates are dense (no structured sparsity).
#pragma once

#include <string>
#include <vector>

namespace gpucast {

struct GpuSpec {
  const char* name;           // key used by JobConfig::gpu and --gpu
  double fp32_flops;          // peak FP32 FLOP/s (non-tensor)
  double fp16_tensor_flops;   // peak FP16 tensor FLOP/s with FP32 accumulate (what AMP uses)
  double mem_bandwidth;       // peak memory bandwidth, bytes/s
  const char* source;         // datasheet the numbers come from
};

const std::vector<GpuSpec>& GpuSpecs();

// The spec named `name` (exact match), or nullptr.
const GpuSpec* FindGpuSpec(const std::string& name);

}  // namespace gpucast
