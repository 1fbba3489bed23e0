// Data-parallel training (PyTorch DistributedDataParallel, NCCL): the
// gradient all-reduce of one training step, and what it does to one rank's
// step time and utilization counter (docs/predictor.md, "Data-parallel jobs").
//
// A documented, physically bounded transform of the single-GPU prediction:
//   - the single-GPU answer (utilization u1) and the fitted physics' step time
//     T1, its core (GPU + host) and loader slack are for ONE rank at --batch
//     (the per-GPU batch);
//   - gradients (fp32 unless stated: DDP all-reduces param.grad, which is fp32
//     under torch.autocast) go in DDP buckets (first 1 MiB, then 25 MiB, in
//     reverse graph order), each all-reduced by an NCCL ring as soon as its
//     last gradient is computed in the backward pass; buckets run one after
//     another on the communication stream, overlapped with the rest of the
//     backward pass;
//   - the part of the communication that ends after the backward pass
//     (exposed) delays the optimizer step; a loader-bound step hides it in
//     the loader wait up to slack_s;
//   - nvidia-smi counts a GPU busy while any kernel runs, NCCL's included (a
//     rank waiting in an all-reduce shows 100%): busy time grows by the NCCL
//     time outside compute kernels.
// N = 1 returns the single-GPU answer unchanged.
#pragma once

#include <string>
#include <vector>

#include "cost/cost.h"
#include "features/interconnect.h"
#include "util/status.h"

namespace gpucast {

// PyTorch DDP defaults: bucket_cap_mb = 25 (x 1024 x 1024 bytes) and the first
// bucket, the last layers' gradients, capped at dist._DEFAULT_FIRST_BUCKET_BYTES
// = 1 MiB (torch/nn/parallel/distributed.py, reducer.cpp).
inline constexpr double kDdpBucketCapBytes = 25.0 * 1024 * 1024;
inline constexpr double kDdpFirstBucketBytes = 1.0 * 1024 * 1024;
// Gradient element size: fp32 (AMP keeps fp32 master weights and gradients).
inline constexpr double kGradBytesFp32 = 4;

struct GradientBucket {
  double bytes = 0;
  // Fraction of the backward pass elapsed when the bucket's last gradient is
  // computed (backward runs the graph in reverse; time share = FLOP share).
  double ready = 0;
};

// DDP's buckets of one backward pass of the job's networks: per-node
// parameters (scaled to each network's parameter total, which counts shared
// tensors once) in reverse graph order, a bucket closing once it holds at
// least its cap; networks with no optimizer update contribute nothing; a
// network run backward k times per step all-reduces k times (bytes x k).
std::vector<GradientBucket> DdpBuckets(const std::vector<CostReport>& reports,
                                       double grad_bytes_per_param = kGradBytesFp32,
                                       double bucket_cap = kDdpBucketCapBytes,
                                       double first_cap = kDdpFirstBucketBytes);

// One ring all-reduce of `bytes` (NCCL's cost model, NVIDIA/nccl
// src/graph/tuning.cc, ring / Simple protocol):
//   time = 8.4 us + (2(N-1) - 2(M-1)) x intra step latency + 2(M-1) x network step latency
//          + 2(N-1)/N x bytes / min(intra bandwidth, network bandwidth of a node)
// Every rank sends and receives 2(N-1)/N x bytes; the ring crosses each node
// boundary once, so the node's network carries that too (one leg each).
struct RingTime {
  double seconds = 0;   // the whole all-reduce
  double latency_s = 0;
  double intra_s = 0;   // 2(N-1)/N x bytes over the intra-node link
  double inter_s = 0;   // the same over the node's network (0 on one node)
};
RingTime RingAllReduce(double bytes, const Interconnect& ic);

struct DataParallelInput {
  double util = 0;     // single-GPU prediction, percent (0-100)
  double step_s = 0;   // single-GPU step time (physics), > 0
  double core_s = 0;   // its GPU + host part, 0 < core_s <= step_s
  double slack_s = 0;  // loader wait overlapping the core, >= 0
  double backward_fraction = 2.0 / 3;  // share of the core that is the backward pass (FLOP share)
};

struct DataParallelResult {
  double util = 0;          // percent: one rank's counter, NCCL kernels counted busy
  double compute_util = 0;  // percent: compute kernels only, over the DP step time
  double step_s = 0;        // DP step time (per-GPU batch)
  double single_step_s = 0;
  double scaling_efficiency = 1;  // single_step_s / step_s: per-GPU throughput vs alone
  double allreduce_bytes = 0;     // gradient bytes all-reduced per step
  double wire_bytes = 0;          // bytes each rank sends per step: 2(N-1)/N x allreduce_bytes
  double comm_s = 0;              // NCCL time per step (all buckets)
  double exposed_s = 0;           // of which after the backward pass (before the loader's slack)
  double added_s = 0;             // step time added: max(0, exposed - slack)
  double link_bandwidth = 0;      // bytes/s the ring runs at: min(intra, network)
  int buckets = 0;
};

// The transform (see top). REQUIRES ic.gpus >= 1; input checked (errors name
// the field). ic.gpus == 1: util unchanged, no communication.
Result<DataParallelResult> ApplyDataParallel(const DataParallelInput& in,
                                             const std::vector<GradientBucket>& buckets,
                                             const Interconnect& ic);

// The same transform of a utilization value alone (the interval's ends):
// busy = u x T1 + NCCL outside compute; monotone in u.
double DataParallelUtil(double util, const DataParallelInput& in, const DataParallelResult& r);

}  // namespace gpucast
