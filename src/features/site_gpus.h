// A site's own GPUs: rows an operator adds to gpucast's table for GPUs it does not list (A10G,
// L20, H20, ...), from a JSON file that every front end reads with --gpu-table (predict, train,
// evaluate, simulate, gpus, serve; the Slurm plugin's gpu_table setting). Their numbers are the
// site's: gpucast checks that they are complete, in range and physically consistent, never that
// they are true. A site GPU has no measured rows, so every prediction for it is an unmeasured
// GPU's (wide interval, `gpu_measured: false`) and says whose spec it is. Format and checks:
// docs/features.md "A site's GPUs".
//
//   {"gpus": [{"name": "A10G", "aliases": ["NVIDIA A10G"], "architecture": "Ampere",
//              "fp32_tflops": 31.2, "fp16_tensor_tflops": 70, "memory_gb": 24,
//              "mem_bandwidth_gbs": 600, "sms": 80, "source": "..."}]}
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "features/gpu_table.h"
#include "util/status.h"

namespace gpucast {

inline constexpr size_t kMaxSiteGpuTableBytes = 1 << 20;
inline constexpr size_t kMaxSiteGpus = 64;

// The rows of `text` (the file `path`, named in every error with the row and the field), checked:
// an object {"gpus": [...]} of at most kMaxSiteGpus rows, no key the format does not name (a
// misspelt field is an error, never a default), every required field present and in range, the
// FP16 tensor rate at least the FP32 rate, and no name or alias that is already a GPU of
// gpucast's table or of another row. Rates in TFLOP/s, bandwidths in GB/s (as datasheets give
// them; NVLink one direction, all links), memory in GB. Each row's GpuSpec::site_table is `path`.
// Does not add them (AddSiteGpuRows, InstallSiteGpuTable).
Result<std::vector<GpuTableRow>> ParseSiteGpuTable(std::string_view text, const std::string& path);

// Reads `path` (at most kMaxSiteGpuTableBytes, a regular file, within 5 s), parses it and adds
// its rows to the table for the rest of the process. Once per process, before any GPU name is
// looked up (a front end calls it first); "" does nothing.
Status InstallSiteGpuTable(const std::string& path);

}  // namespace gpucast
