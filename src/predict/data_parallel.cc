#include "predict/data_parallel.h"

#include <algorithm>
#include <cmath>

namespace gpucast {

std::vector<GradientBucket> DdpBuckets(const std::vector<CostReport>& reports, double grad_bytes_per_param,
                                       double bucket_cap, double first_cap) {
  // Backward FLOPs of every network time the backward pass (those without an
  // update still run their backward, e.g. D when the loss trains G).
  double total_bwd = 0;
  for (const CostReport& r : reports)
    for (const NodeCost& n : r.nodes) total_bwd += static_cast<double>(n.backward_flops);
  std::vector<GradientBucket> out;
  double done_bwd = 0;  // backward FLOPs finished so far (reverse order)
  for (auto r = reports.rbegin(); r != reports.rend(); ++r) {
    double node_params = 0;
    for (const NodeCost& n : r->nodes) node_params += static_cast<double>(n.params);
    const bool trainable = r->updates > 0 && r->backward_passes > 0 && node_params > 0;
    // Shared tensors count once in the network's total; each backward pass all-reduces once.
    const double scale = trainable ? static_cast<double>(r->totals.params) / node_params : 0;
    const double passes = r->backward_passes;
    double cap = first_cap, bucket = 0;
    for (auto n = r->nodes.rbegin(); n != r->nodes.rend(); ++n) {
      done_bwd += static_cast<double>(n->backward_flops);
      if (!trainable || n->params <= 0) continue;
      bucket += static_cast<double>(n->params) * scale * grad_bytes_per_param;
      if (bucket >= cap) {
        out.push_back({bucket * passes, total_bwd > 0 ? done_bwd / total_bwd : 1});
        bucket = 0;
        cap = bucket_cap;
      }
    }
    if (bucket > 0) out.push_back({bucket * passes, total_bwd > 0 ? done_bwd / total_bwd : 1});
  }
  // Ready times in order (networks run their backward one after another).
  std::stable_sort(out.begin(), out.end(),
                   [](const GradientBucket& a, const GradientBucket& b) { return a.ready < b.ready; });
  return out;
}

RingTime RingAllReduce(double bytes, const Interconnect& ic) {
  RingTime t;
  const int n = ic.gpus, m = ic.nodes;
  if (n <= 1 || bytes <= 0) return t;
  const int steps = 2 * (n - 1), inter_steps = 2 * (m - 1);
  t.latency_s = kNcclRingBaseLatencyS + (steps - inter_steps) * ic.intra.step_latency_s +
                inter_steps * (m > 1 ? ic.inter.step_latency_s : 0);
  // NCCL's "plateau effect of ring" on several nodes for large messages.
  if (m > 1 && bytes >= n / 16.0 * 65536) t.latency_s *= 1.9;
  const double wire = 2.0 * (n - 1) / n * bytes;
  if (ic.gpus_per_node > 1) t.intra_s = wire / ic.intra.bandwidth;
  if (m > 1) t.inter_s = wire / ic.inter.bandwidth;
  t.seconds = t.latency_s + std::max(t.intra_s, t.inter_s);
  return t;
}

namespace {

// Busy time of one rank: compute (u x T1) plus NCCL time outside compute
// kernels: the in-window part where the GPU computes a fraction u_c of the
// time, and all of the exposed part (only NCCL runs then).
double BusyS(double util, const DataParallelInput& in, double comm_s, double exposed_s) {
  double compute = util / 100 * in.step_s;
  double u_c = std::min(1.0, compute / in.core_s);
  return compute + (comm_s - exposed_s) * (1 - u_c) + exposed_s;
}

}  // namespace

Result<DataParallelResult> ApplyDataParallel(const DataParallelInput& in, const std::vector<GradientBucket>& buckets,
                                             const Interconnect& ic) {
  auto finite = [](double v) { return std::isfinite(v); };
  if (!finite(in.util) || in.util < 0 || in.util > 100)
    return Status::Error("data-parallel: util " + std::to_string(in.util) + " outside 0-100");
  if (!finite(in.step_s) || in.step_s <= 0)
    return Status::Error("data-parallel: step time " + std::to_string(in.step_s) + " s is not positive");
  if (!finite(in.core_s) || in.core_s <= 0 || in.core_s > in.step_s * (1 + 1e-9))
    return Status::Error("data-parallel: core time " + std::to_string(in.core_s) + " s outside (0, step time]");
  if (!finite(in.slack_s) || in.slack_s < 0)
    return Status::Error("data-parallel: loader slack " + std::to_string(in.slack_s) + " s is negative");
  if (!finite(in.backward_fraction) || in.backward_fraction <= 0 || in.backward_fraction > 1)
    return Status::Error("data-parallel: backward fraction outside (0, 1]");
  DataParallelResult r;
  r.util = in.util;
  r.compute_util = in.util;
  r.step_s = r.single_step_s = in.step_s;
  if (ic.gpus <= 1 || buckets.empty()) return r;  // nothing to reduce: the single-GPU answer
  // Buckets on one communication stream, each started when ready and when the previous one ended.
  const double window = in.backward_fraction * in.core_s;
  double finish = 0;
  for (const GradientBucket& b : buckets) {
    if (!finite(b.bytes) || b.bytes < 0 || !finite(b.ready) || b.ready < 0 || b.ready > 1)
      return Status::Error("data-parallel: bucket of " + std::to_string(b.bytes) + " bytes ready at " +
                           std::to_string(b.ready) + " is not a bucket");
    RingTime t = RingAllReduce(b.bytes, ic);
    finish = std::max(finish, b.ready * window) + t.seconds;
    r.comm_s += t.seconds;
    r.allreduce_bytes += b.bytes;
  }
  r.buckets = static_cast<int>(buckets.size());
  r.wire_bytes = 2.0 * (ic.gpus - 1) / ic.gpus * r.allreduce_bytes;
  r.link_bandwidth = ic.gpus_per_node > 1 ? ic.intra.bandwidth : ic.inter.bandwidth;
  if (ic.nodes > 1) r.link_bandwidth = std::min(r.link_bandwidth, ic.inter.bandwidth);
  r.exposed_s = std::max(0.0, finish - window);
  r.added_s = std::max(0.0, r.exposed_s - in.slack_s);
  r.step_s = in.step_s + r.added_s;
  r.scaling_efficiency = in.step_s / r.step_s;
  r.util = DataParallelUtil(in.util, in, r);
  r.compute_util = in.util * in.step_s / r.step_s;
  return r;
}

double DataParallelUtil(double util, const DataParallelInput& in, const DataParallelResult& r) {
  if (r.comm_s <= 0) return util;
  return std::clamp(100 * BusyS(util, in, r.comm_s, r.exposed_s) / r.step_s, 0.0, 100.0);
}

}  // namespace gpucast
