// Cluster shapes: the GPUs a simulation runs on.
//
// --cluster SPEC, one of:
//   "64x RTX3090"                     64 GPUs of a type, 8 per node
//   "nodes=8,gpus_per_node=8[,mem_gib=24][,type=RTX3090]"   (or gpus=N instead of nodes)
//   several such node groups separated by ';', each with its own GPU type, on
//     nodes of their own in the order given (a mixed cluster):
//     "nodes=2,gpus_per_node=8,type=A100-80GB;nodes=2,gpus_per_node=8,type=H100"
//   "alibaba-nodes[:every=N][:G2=TYPE][:G3=TYPE]"   the Alibaba v2023 node list, every N-th node
// Anything else is an error naming the node group and the part that does not
// parse ("--cluster '...': node group 2 'nodes=2,gpus_per_node=x': gpus_per_node
// must be a positive integer"); a key given twice in a group is an error.
// Every GPU type must be a GPU of the features layer's table (src/features/gpu_specs.h,
// names or aliases, e.g. RTX3090, V100M32, A100-80GB); an unknown name is an error
// naming the closest known ones. Memory per GPU: mem_gib if given, else the
// table's memory. Alibaba's anonymised G2 and G3 have no known model: they
// stand in as RTX3090 unless mapped (docs/simulator.md, "Cluster").
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace gpucast::sim {

struct Gpu {
  int id = 0;       // 0..n-1, the ids written to jobs.csv
  int node = 0;
  std::string type;  // canonical name in the GPU table (gpu_specs.h)
  double mem_mib = 24576;
};

struct Cluster {
  std::string spec;  // as given
  std::vector<Gpu> gpus;
};

// The canonical name and memory (MiB) of a known GPU type (CanonicalGpuName of
// the features layer; its error names the closest known names: "unknown GPU
// 'RTX3900'; closest: RTX3090, ... (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)").
struct GpuType {
  std::string name;
  double mem_mib = 0;
};
Result<GpuType> ResolveGpuType(const std::string& type);

// Parses SPEC; data_dir is used by "alibaba-nodes".
Result<Cluster> ParseCluster(const std::string& spec, const std::string& data_dir);

// Runs of consecutive nodes with the same GPUs: a spec's node groups
// ("nodes=2,gpus_per_node=8,type=A100-80GB" is one), as GET /v1/cluster lists them.
struct NodeGroup {
  std::string type;
  double mem_mib = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  int first_node = 0;  // node index of its first node
  int first_gpu = 0;   // GPU id of its first GPU
};
std::vector<NodeGroup> NodeGroups(const Cluster& c);

// The cluster's GPU types, in first-appearance order.
std::vector<std::string> GpuTypes(const Cluster& c);

}  // namespace gpucast::sim
