// The GPUs gpucast knows: vendor datasheet / whitepaper numbers (the source
// of each row is in the row and in docs/features.md) and the MIG profiles of
// NVIDIA's Multi-Instance GPU User Guide. Peak rates are dense (no structured
// sparsity); tensor rates are with FP32 accumulate (what autocast runs).
//
// Lookups are by canonical name or alias, case-insensitive, ignoring spaces,
// '-', '_' and '.', a leading "NVIDIA"/"Tesla"/"GeForce", and "GB" vs "G":
// "A100-80GB", "a100_80g", "A100 80GB" and "NVIDIA A100-SXM4-80GB" are one GPU.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace gpucast {

// One MIG GPU-instance profile (MIG User Guide, "Supported MIG Profiles" and
// the `nvidia-smi mig -lgip` listings). The SM count is the profile's, not
// slices/7 of the whole GPU: e.g. A100 3g.40gb has 42 SMs, the whole A100 108
// and its 7g.80gb instance 98 (MIG leaves some SMs unused).
struct MigProfile {
  std::string name;        // canonical, e.g. "3g.40gb"
  int compute_slices = 0;  // the "Ng" of the name: sevenths of the compute
  int sms = 0;             // streaming multiprocessors of the instance
  double memory_gib = 0;   // instance memory (nvidia-smi mig -lgip "Memory GiB")
  double mem_bw_fraction = 0;  // memory slices / 8 (the guide's "Fraction of Memory"): DRAM
                               // bandwidth and L2 go with the memory slices
};

struct GpuSpec {
  std::string name;          // canonical key (JobConfig::gpu, --gpu, data rows' `gpu`)
  double fp32_flops = 0;         // peak FP32 FLOP/s (non-tensor)
  double fp16_tensor_flops = 0;  // peak FP16 tensor FLOP/s, FP32 accumulate (what AMP uses)
  double mem_bandwidth = 0;      // peak DRAM bandwidth, bytes/s
  std::string source;            // datasheet / whitepaper the numbers come from
  double bf16_tensor_flops = 0;  // peak BF16 tensor FLOP/s, FP32 accumulate; 0 = no BF16 tensor math
  double tf32_tensor_flops = 0;  // peak TF32 tensor FLOP/s; 0 = no TF32 (pre-Ampere)
  double memory_gib = 0;         // memory size (datasheet "GB"; MIG: the instance's GiB)
  int sms = 0;                   // streaming multiprocessors (MIG: the instance's)
  // Set on the EFFECTIVE spec that ResolveGpu returns for a MIG slice; empty /
  // 1.0 for a whole GPU. compute_fraction = sms / whole-GPU SMs (peaks are
  // scaled by it); mem_bw_fraction scales mem_bandwidth.
  std::string mig_profile;
  double compute_fraction = 1;
  double mem_bw_fraction = 1;
};

// The whole-GPU rows, canonical names, in table order.
const std::vector<GpuSpec>& GpuSpecs();

// The spec of the whole GPU named `name` (canonical name or alias, see top),
// or nullptr. Kept for callers that only need a whole GPU.
const GpuSpec* FindGpuSpec(const std::string& name);

// The MIG profiles of a GPU (canonical name or alias); empty if it has none.
const std::vector<MigProfile>& MigProfiles(const std::string& gpu);

// The EFFECTIVE spec of `gpu` or of one MIG slice of it (mig_profile "" = the
// whole GPU, no MIG): peaks scaled by the slice's SMs / the GPU's SMs,
// bandwidth by its memory fraction, memory and SMs the slice's. `name` stays
// the canonical GPU name; `mig_profile` is the canonical profile name.
// Errors: "unknown GPU 'X' (known: RTX3090, ...)",
//         "GPU 'A100-80GB' has no MIG profile 'X' (profiles: 1g.10gb, ...)",
//         "GPU 'RTX3090' has no MIG profiles (MIG-capable: A100-40GB, ...)".
Result<GpuSpec> ResolveGpu(const std::string& gpu, const std::string& mig_profile);

// "RTX3090, V100-16GB, ..." (canonical names, table order), for messages.
std::string KnownGpuNames();

}  // namespace gpucast
