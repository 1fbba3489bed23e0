// THE GPU table (gpu_table.cc): one row per GPU model, with the names it is
// known by and its MIG profiles: gpucast's own rows, then a site's (site_gpus.h,
// added once at start-up). Internal to gpucast_features: everything else reads
// it through gpu_specs.h (GpuSpecs, CanonicalGpuName, ResolveGpu).
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

// gpucast's own rows: data centre, then workstation, desktop and laptop; each
// family in architecture order. Every number is from the source named in its row.
const std::vector<GpuTableRow>& BuiltinGpuTable();

// The table every lookup reads: BuiltinGpuTable() then the site's rows, if any were
// added (AddSiteGpuRows) before this was first called. Fixed from that call on.
const std::vector<GpuTableRow>& GpuTable();

// Adds a site's rows (checked by ParseSiteGpuTable) after gpucast's own. An error if
// GpuTable() was read already (lookups have handed out pointers into it) or if rows
// were added before: a process has one table.
Status AddSiteGpuRows(std::vector<GpuTableRow> rows);

}  // namespace gpucast
