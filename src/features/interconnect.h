// The links a data-parallel job's gradients travel on (docs/predictor.md,
// "Data-parallel jobs"): between the GPUs of one node (NVLink or PCIe, from
// the GPU table) and between nodes (a network), each overridable with
// --interconnect. Bandwidths are ONE direction, bytes/s.
#pragma once

#include <string>

#include "features/gpu_specs.h"
#include "util/status.h"

namespace gpucast {

// NCCL's own cost model of a ring all-reduce step (Simple protocol, the one it
// picks for the MB-sized DDP buckets): NVIDIA/nccl src/graph/tuning.cc,
// baseLat[Ring][Simple] and hwLat[hw][Ring][Simple], microseconds.
inline constexpr double kNcclRingBaseLatencyS = 8.4e-6;
inline constexpr double kNcclRingNvlinkStepS = 3.4e-6;
inline constexpr double kNcclRingPcieStepS = 5.7e-6;
inline constexpr double kNcclRingNetStepS = 9.6e-6;

// Per-direction data rate of one PCIe lane after line coding (GT/s x 128/130 / 8):
// gen 3 8 GT/s, gen 4 16, gen 5 32 (PCI-SIG base specifications).
double PcieLaneBytesPerSecond(int gen);
// Per-direction rate of one NVLink link: 1.0 20 GB/s, 2.0-4.0 25 GB/s, 5.0 50 GB/s
// (NVIDIA P100, V100, A100, H100 whitepapers; Blackwell: 18 links = 1.8 TB/s both ways).
double NvlinkLinkBytesPerSecond(int gen);

struct Link {
  std::string name;        // canonical spec token: "pcie4x16", "nvlink3x12", "ib200", "eth100x2"
  std::string kind;        // "pcie", "nvlink", "infiniband", "ethernet", "tcp" (NCCL sockets)
  double bandwidth = 0;    // bytes/s one direction: per GPU (intra-node), per node (network)
  double step_latency_s = 0;  // NCCL hwLat of one ring step on this hardware
  std::string from;        // where it came from: "GPU table", "--interconnect", "default"
};

struct Interconnect {
  int gpus = 1;            // ranks in all
  int nodes = 1;
  int gpus_per_node = 1;
  Link intra;              // GPU to GPU in a node (unused when gpus_per_node == 1)
  Link inter;              // node to node (kind "" when nodes == 1)
};

// Network bandwidth assumed between nodes when --interconnect names none:
// one 100 Gb/s link per node (InfiniBand EDR / 100 GbE). An assumption, stated
// in every multi-node answer (`from` = "default").
inline constexpr double kDefaultNetworkGbps = 100;

// NCCL over Ethernet without RDMA (its socket transport, `--interconnect tcp`):
// each ring connection between two nodes is TCP through the hosts, and the
// rate it achieves, not the link's line rate, sets the all-reduce time. The
// achieved rate per node, fitted on Pollux' multi-node T4 runs (AWS nodes,
// PyTorch DDP over NCCL sockets; docs/predictor.md, "Several nodes over
// TCP"): the rate that best explains each run's step time beyond the same
// job and batch's one-GPU step, over all five rebuilt jobs, printed by
// `gpucast evaluate --steps ../shared/data/pollux-t4` as `network_fit`
// (its held-out check fits it without each job in turn): under a tenth of those
// nodes' 50 Gb/s line rate.
inline constexpr double kNcclSocketGbps = 4.31;

// NCCL's socket transport between nodes at `gbps` achieved per node (what the
// token tcp<gbps> gives, `from` aside): a typed rate for callers that hold a
// number (evaluate --steps' fitted rate), not a spec string. REQUIRES: gbps > 0.
Link TcpLink(double gbps, const std::string& from);

// Whose names errors give the job's inputs: the command line's flags
// ("--interconnect 'nvlink2'", "--gpus 6") or the HTTP API's JSON fields and
// query parameters ("interconnect 'nvlink2'", "gpus 6"), so that a reply of
// the service never tells a client to set a flag it does not have.
enum class InputWording { kCli, kApi };
// "--<name>" (kCli) or "<name>" (kApi).
std::string InputName(InputWording wording, const std::string& name);

// The links of `gpus` GPUs of `gpu` spread evenly on `nodes` nodes. `spec` is
// --interconnect: "" or comma-separated tokens, at most one per leg:
//   pcie | pcie<gen>x<lanes>         (gen 3-5; lanes 1, 2, 4, 8, 16)
//   nvlink | nvlink<gen> | nvlink<gen>x<links>
//   ib<Gbps>[x<nics>] | eth<Gbps>[x<nics>]   (per-node network; nics parallel links)
//   tcp | tcp<Gbps>     (NCCL's socket transport over Ethernet: the achieved
//                        rate per node, kNcclSocketGbps or the one given, 0.1-100000)
// Defaults: SXM parts NVLink (their board fabric), other parts their PCIe host
// link (an NVLink bridge joins only 2 cards and is an accessory: ask for it);
// between nodes kDefaultNetworkGbps. Errors name the token or the count, in
// `wording`'s names:
//   "--interconnect 'nvlink2': GPU 'A100-80GB' has NVLink 3, not 2"
//   "--gpus 6 --nodes 4: GPUs must divide evenly over nodes"
//   kApi: "interconnect 'nvlink2': ...", "gpus 6 nodes 4: ..."
Result<Interconnect> ResolveInterconnect(const GpuSpec& gpu, int gpus, int nodes, const std::string& spec,
                                         InputWording wording = InputWording::kCli);

// The checks of ResolveInterconnect that need no GPU, with its messages: the
// GPU and node counts, each token's syntax and ranges, one link per leg, a
// network only across nodes. What it passes, ResolveInterconnect refuses only
// for the GPU (no NVLink or another generation, a bridge of more than 2 cards,
// a PCIe link the table does not state). The service answers these 400, as
// any malformed field, and the GPU's 422 (docs/api.md).
Status CheckInterconnectSpec(int gpus, int nodes, const std::string& spec,
                             InputWording wording = InputWording::kCli);

}  // namespace gpucast
