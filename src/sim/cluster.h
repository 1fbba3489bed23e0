// Cluster shapes: the GPUs a simulation runs on.
//
// --cluster SPEC, one of:
//   "64x RTX3090"                     64 GPUs of a type, 8 per node
//   "nodes=8,gpus_per_node=8[,mem_gib=24][,type=RTX3090]"
//   "alibaba-nodes[:every=N]"         the Alibaba v2023 node list, every N-th node
// Memory per GPU: mem_gib if given, else by type: RTX3090/A10 24 GiB,
// P100/T4/V100M16 16 GiB, V100M32 32 GiB; other types (Alibaba's anonymised
// G2/G3) get the RTX 3090-class default of 24 GiB.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace gpucast::sim {

struct Gpu {
  int id = 0;       // 0..n-1, the ids written to jobs.csv
  int node = 0;
  std::string type;
  double mem_mib = 24576;
};

struct Cluster {
  std::string spec;  // as given
  std::vector<Gpu> gpus;
};

// Memory of a GPU type in MiB (24 GiB when the type is unknown).
double GpuTypeMemMib(const std::string& type);

// Parses SPEC; data_dir is used by "alibaba-nodes".
Result<Cluster> ParseCluster(const std::string& spec, const std::string& data_dir);

}  // namespace gpucast::sim
