// THE GPU table (gpu_table.cc): one row per GPU model, with the names it is
// known by and its MIG profiles. Internal to gpucast_features: everything else
// reads it through gpu_specs.h (GpuSpecs, CanonicalGpuName, ResolveGpu).
#pragma once

#include <string>
#include <vector>

#include "features/gpu_specs.h"

namespace gpucast {

struct GpuTableRow {
  GpuSpec spec;                      // spec.name is the canonical key
  std::vector<std::string> aliases;  // nvidia-smi names and short names
  std::vector<MigProfile> mig;       // empty: no MIG (or none sourced, docs/features.md)
};

// Data centre, then workstation, desktop and laptop rows; each family in
// architecture order. Every number is from the source named in its row.
const std::vector<GpuTableRow>& GpuTable();

}  // namespace gpucast
