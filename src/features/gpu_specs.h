// The GPUs gpucast knows: vendor datasheet / whitepaper numbers (the source
// of each row is in the row and in docs/features.md) and the MIG profiles of
// NVIDIA's Multi-Instance GPU User Guide. Peak rates are dense (no structured
// sparsity); tensor rates are with FP32 accumulate (what autocast runs). The
// table itself is gpu_table.cc: data centre, workstation, desktop and laptop
// parts from Pascal to Blackwell, each with its interconnect and power.
//
// Names (CanonicalGpuName, used by every lookup): case-insensitive, ignoring
// spaces and punctuation, the words NVIDIA / Tesla / GeForce / Quadro / GPU /
// Generation, "GB" vs "G", "Mobile" = "Laptop", "with Max-Q Design" = "Max-Q".
// So "A100-80GB", "a100_80g", "A100 80GB" and nvidia-smi's "NVIDIA
// A100-SXM4-80GB" are one GPU, and "NVIDIA GeForce RTX 3080 Laptop GPU" is
// RTX3080-Laptop, not the desktop RTX3080.
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

  // What the table says beyond the peaks (0 / "" = not stated by the source).
  std::string gpu_class;     // "datacenter", "workstation", "desktop" or "laptop"
  std::string architecture;  // "Pascal", "Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell"
  std::string form_factor;   // "SXM2", "SXM4", "SXM5", "SXM6", "PCIe" (a card), "laptop" (soldered)
  double boost_mhz = 0;      // boost clock the peaks are for (laptop: top of the vendor's range)
  double boost_mhz_min = 0;  // laptop: bottom of the vendor's boost-clock range; else = boost_mhz
  double power_w = 0;        // board power / TDP (laptop: top of the TGP range), watts
  double power_w_min = 0;    // laptop / configurable parts: bottom of the range; else = power_w
  int pcie_gen = 0;          // host link: PCIe generation (3, 4, 5) and lanes
  int pcie_lanes = 0;
  int nvlink_gen = 0;        // 0 = no NVLink
  int nvlink_links = 0;      // links of one GPU (0 = not stated)
  double nvlink_bandwidth = 0;  // bytes/s ONE direction, all links of one GPU (datasheets quote
                                // both directions added: 600 GB/s for A100 SXM is 300 here)
  bool nvlink_bridge = false;   // true: a bridge joins 2 cards; false: SXM board fabric (all GPUs)
  // The share of mem_bandwidth the roofline counts: 1 for Volta and later (the fitted eff_memory is
  // a fraction of what their memory controllers deliver); less for a die whose controller delivers
  // less of its peak at the same efficiency (GP100; the row says its source).
  double mem_bw_delivered = 1;
  // The site table this row came from (--gpu-table; site_gpus.h), its path; empty: gpucast's own row.
  std::string site_table;
};

// The whole-GPU rows, canonical names, in table order.
const std::vector<GpuSpec>& GpuSpecs();

// THE validation every front end calls for a GPU name (CLI --gpu, HTTP, Slurm,
// data rows): the canonical table name of `name` (canonical, alias, short or
// nvidia-smi name; see top), or an error naming the closest known ones by edit
// distance on the normalised names:
//   "unknown GPU 'RTX3900'; closest: RTX3090, RTX3080, ... (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)"
Result<std::string> CanonicalGpuName(const std::string& name);

// Up to `n` canonical names closest to `name` (Damerau edit distance between
// normalised names, each GPU at its nearest name or alias; ties in table order).
std::vector<std::string> ClosestGpuNames(const std::string& name, size_t n);

// The accepted names of a GPU besides its canonical one (nvidia-smi names,
// short names), as the table lists them; empty for an unknown GPU.
const std::vector<std::string>& GpuAliases(const std::string& gpu);

// The lookup key of a name: lower-case letters and digits after the rules at
// the top ("NVIDIA GeForce RTX 2080 with Max-Q Design" -> "rtx2080maxq").
std::string GpuNameKey(const std::string& name);

// The spec of the whole GPU named `name` (canonical name or alias, see top),
// or nullptr. Kept for callers that only need a whole GPU.
const GpuSpec* FindGpuSpec(const std::string& name);

// The MIG profiles of a GPU (canonical name or alias); empty if it has none.
const std::vector<MigProfile>& MigProfiles(const std::string& gpu);

// The MIG profile `profile` of GPU `gpu`, both in any spelling the table
// accepts (GPU: canonical name or alias, see top; profile: as ResolveGpu takes
// it, "3g.40gb", "MIG 3G.40GB", "3g.40g"); nullptr if the GPU is unknown or
// has no profile of that name (A100-80GB has no "3g.20gb": that is the 40GB's).
const MigProfile* FindMigProfile(const std::string& gpu, const std::string& profile);

// Slices of a GPU's MIG geometry (MIG User Guide, "Supported MIG Profiles"):
// compute in sevenths (the profile name's "Ng"), memory in eighths (the
// guide's "Fraction of Memory").
struct MigSlices {
  int compute = 0;
  int memory = 0;
};

// The slices one instance of `p` takes: {compute_slices, mem_bw_fraction * 8}.
// The table has one memory fraction per profile, mem_bw_fraction, and it IS
// the guide's "Fraction of Memory" (bandwidth and L2 go with the memory
// slices), so the memory-slice count is read from it for every MIG GPU of the
// table (A100 40/80GB SXM and PCIe, H100, H200); the instance memory of the
// -lgip listing agrees (GpuSpecsTest checks round(8 * memory_gib / the full
// profile's) against it). A100-80GB 3g.40gb: {3, 4}.
MigSlices MigSlicesOf(const MigProfile& p);

// Every slice of GPU type `gpu` (any accepted name): its full profile's
// (A100-80GB 7g.80gb: {7, 8}); {0, 0} for a GPU without MIG or an unknown name.
MigSlices GpuMigSlices(const std::string& gpu);

// THE validation every front end calls for a MIG profile name (CLI --mig,
// HTTP "mig", the Kubernetes webhook's nvidia.com/mig-<profile> resource):
// the canonical profile name ("3g.40gb") when some GPU of the table has a
// profile of that name (spelled as ResolveGpu accepts it: "MIG 3g.40gb",
// "3G.40GB"), else an error listing the profiles gpucast knows:
//   "unknown MIG profile '7g.99gb' (MIG profiles of gpucast's GPUs: 1g.5gb, ...)".
// Whether the job's GPU has the profile is ResolveGpu's question.
Result<std::string> CanonicalMigProfile(const std::string& profile);

// The EFFECTIVE spec of `gpu` or of one MIG slice of it (mig_profile "" = the
// whole GPU, no MIG): peaks scaled by the slice's SMs / the GPU's SMs,
// bandwidth by its memory fraction, memory and SMs the slice's. `name` stays
// the canonical GPU name; `mig_profile` is the canonical profile name.
// Errors: "unknown GPU 'X'; closest: ... (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)" (CanonicalGpuName),
//         "GPU 'A100-80GB' has no MIG profile 'X' (profiles: 1g.10gb, ...)",
//         "GPU 'RTX3090' has no MIG profiles (MIG-capable: A100-40GB, ...)".
Result<GpuSpec> ResolveGpu(const std::string& gpu, const std::string& mig_profile);

// The fraction of its compute peaks (which are at the boost clock) a GPU sustains on a
// compute-bound training load within its board power: min(1, ((w - w0) / (w1 - w0))^(1/3)) at
// w = power_w / the whole GPU's SMs (a MIG slice: sms / compute_fraction; the board's power is
// the slice's budget). Dynamic power grows about as the clock cubed (P ~ f V^2, V rising with f)
// above a part that does no compute; w0 = 1.12 and w1 = 2.94 W per SM are fitted on Zeus'
// power-capped runs of BERT-base and ResNet-50 on the A40, V100, Quadro RTX 6000 and P100
// (tools/zeus_power_fit.py; each GPU held out in turn, median |error| 0.029). 1 where the table
// gives no power or SMs, and for architectures outside those the fit saw (Pascal, Volta, Turing,
// Ampere: 16 to 7 nm; a later process does more per watt). The T4 (70 W, 40 SMs): 0.702.
// EstimateStep counts it only when asked (JobConfig::power_limited_clock, which a model file records:
// PredictorInfo::power_limited_clock).
inline constexpr double kPowerW0PerSm = 1.12, kPowerW1PerSm = 2.94;
double SustainedComputeFraction(const GpuSpec& gpu);

// "RTX3090, V100-16GB, ..." (canonical names, table order), for messages.
// The table is long (gpucast gpus): prefer CanonicalGpuName's message.
std::string KnownGpuNames();

}  // namespace gpucast
