#include "cost/job_cost.h"

#include <cmath>
#include <algorithm>
#include <map>

#include "cost/count.h"

namespace gpucast {

Result<CostReport> CostForPrediction(const Graph& graph, const CostOptions& cost) {
  ASSIGN_OR_RETURN(CostReport report, AnalyzeCost(graph, cost));
  RETURN_IF_ERROR(RequireCompleteCost(report));
  return report;
}

Result<CostReport> CostFileForPrediction(const std::string& path, const LoadOptions& load,
                                         const CostOptions& cost) {
  ASSIGN_OR_RETURN(Graph graph, LoadOnnxGraph(path, load));
  return CostForPrediction(graph, cost);
}

namespace {

// Rounds v * s to int64; sets *overflow instead beyond it.
int64_t Scaled(int64_t v, double s, bool* overflow) {
  const double x = std::round(static_cast<double>(v) * s);
  if (!(x < 9.2e18)) {
    *overflow = true;
    return 0;
  }
  return static_cast<int64_t>(x);
}

// The totals that are sums over the nodes, from the nodes (FLOPs, FLOPs by category,
// activation bytes; saved bytes when `saved`). Errors: a sum that overflows int64.
Status ResumTotals(CostReport* r, bool saved) {
  const std::string file = r->path.empty() ? "<graph>" : r->path;
  Count sum_fwd, sum_bwd, sum_act, sum_saved, sum_sparse, sum_cat[kNumCategories];
  for (const NodeCost& n : r->nodes) {
    sum_fwd += n.forward_flops;
    sum_bwd += n.backward_flops;
    sum_act += n.activation_bytes;
    sum_saved += n.saved_bytes;
    sum_sparse += n.sparse_grad_bytes;
    sum_cat[static_cast<int>(n.category)] += Count(n.forward_flops) + n.backward_flops;
  }
  Count all = sum_fwd + sum_bwd + sum_act + sum_saved + sum_sparse;
  for (const Count& c : sum_cat) all += c;
  if (!all.ok()) return Status::Error(file + ": count per step overflows int64");
  CostTotals& t = r->totals;
  t.forward_flops = sum_fwd.value();
  t.backward_flops = sum_bwd.value();
  t.activation_bytes = sum_act.value();
  t.sparse_grad_bytes = sum_sparse.value();
  if (saved) t.saved_bytes = sum_saved.value();
  for (int i = 0; i < kNumCategories; ++i) t.flops_by_category[i] = sum_cat[i].value();
  return Status::Ok();
}

}  // namespace

Result<CostReport> StepReport(const CostReport& pass, double repeat, double forward_only) {
  const std::string file = pass.path.empty() ? "<graph>" : pass.path;
  if (!std::isfinite(repeat) || !std::isfinite(forward_only) || repeat < 0 || forward_only < 0)
    return Status::Error(file + ": passes per step must be finite and >= 0, got repeat " +
                         std::to_string(repeat) + ", forward_only " + std::to_string(forward_only));
  if (repeat + forward_only <= 0) return Status::Error(file + ": a network must run at least part of a pass per step");
  if (pass.forward_passes != 1 || pass.backward_passes != 1 || pass.updates != 1)
    return Status::Error(file + ": report is already a step share; scale a single pass");
  const double fwd = repeat + forward_only;
  bool overflow = false;
  CostReport out = pass;
  out.forward_passes = fwd;
  out.backward_passes = repeat;
  out.updates = std::min(repeat, 1.0);
  for (NodeCost& n : out.nodes) {
    n.forward_flops = Scaled(n.forward_flops, fwd, &overflow);
    n.backward_flops = Scaled(n.backward_flops, repeat, &overflow);
    n.activation_bytes = Scaled(n.activation_bytes, fwd, &overflow);
    n.input_bytes = Scaled(n.input_bytes, fwd, &overflow);
    n.weight_bytes = Scaled(n.weight_bytes, fwd, &overflow);
    n.lookup_bytes = Scaled(n.lookup_bytes, fwd, &overflow);
    n.fused_io_bytes = Scaled(n.fused_io_bytes, fwd, &overflow);
    n.sparse_grad_bytes = Scaled(n.sparse_grad_bytes, repeat, &overflow);  // one per backward
  }
  if (overflow) return Status::Error(file + ": count per step overflows int64");
  // Saved bytes are one pass's memory (NodeCost::saved_bytes): not scaled, not re-summed.
  RETURN_IF_ERROR(ResumTotals(&out, /*saved=*/false));
  return out;
}

Result<CostReport> SelectionShare(const CostReport& r, double fraction) {
  const std::string file = r.path.empty() ? "<graph>" : r.path;
  if (!(fraction >= 0 && fraction <= 1))
    return Status::Error(file + ": selected fraction must be in [0, 1], got " + std::to_string(fraction));
  CostReport out = r;
  if (fraction == 1 || r.SelectionBoundNodes() == 0) return out;
  bool overflow = false;
  for (NodeCost& n : out.nodes) {
    if (!n.selection_bound) continue;
    n.forward_flops = Scaled(n.forward_flops, fraction, &overflow);
    n.backward_flops = Scaled(n.backward_flops, fraction, &overflow);
    n.activation_bytes = Scaled(n.activation_bytes, fraction, &overflow);
    n.input_bytes = Scaled(n.input_bytes, fraction, &overflow);
    n.lookup_bytes = Scaled(n.lookup_bytes, fraction, &overflow);  // rows looked up, not the table
    n.fused_io_bytes = Scaled(n.fused_io_bytes, fraction, &overflow);
    // Each kept allocation scales; saved_bytes stays their sum (NodeCost::saved_tensors).
    int64_t saved = 0;
    for (int64_t& b : n.saved_tensors) saved += (b = Scaled(b, fraction, &overflow));
    n.saved_bytes = saved;
    n.sparse_grad_bytes = Scaled(n.sparse_grad_bytes, fraction, &overflow);
  }
  if (overflow) return Status::Error(file + ": count overflows int64");  // unreachable: fraction <= 1
  RETURN_IF_ERROR(ResumTotals(&out, /*saved=*/true));
  return out;
}

Result<std::vector<CostReport>> JobStepReports(const std::vector<std::string>& files,
                                               const LoadOptions& load, const CostOptions& cost) {
  if (files.empty()) return Status::Error("no model file given");
  std::vector<std::string> order;
  std::map<std::string, int> passes;
  for (const std::string& f : files)
    if (passes[f]++ == 0) order.push_back(f);
  std::vector<CostReport> reports;
  for (const std::string& f : order) {
    ASSIGN_OR_RETURN(CostReport pass, CostFileForPrediction(f, load, cost));
    if (passes[f] == 1) {
      reports.push_back(std::move(pass));
      continue;
    }
    ASSIGN_OR_RETURN(CostReport step, StepReport(pass, passes[f], 0));
    reports.push_back(std::move(step));
  }
  return reports;
}

}  // namespace gpucast
