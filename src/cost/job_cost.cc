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
  auto scale = [&overflow](int64_t v, double s) -> int64_t {
    double x = std::round(static_cast<double>(v) * s);
    if (!(x < 9.2e18)) {
      overflow = true;
      return 0;
    }
    return static_cast<int64_t>(x);
  };
  CostReport out = pass;
  out.forward_passes = fwd;
  out.backward_passes = repeat;
  out.updates = std::min(repeat, 1.0);
  CostTotals& t = out.totals;
  t.forward_flops = t.backward_flops = t.activation_bytes = 0;
  for (int64_t& f : t.flops_by_category) f = 0;
  Count sum_fwd, sum_bwd, sum_act, sum_cat[kNumCategories];
  for (NodeCost& n : out.nodes) {
    n.forward_flops = scale(n.forward_flops, fwd);
    n.backward_flops = scale(n.backward_flops, repeat);
    n.activation_bytes = scale(n.activation_bytes, fwd);
    n.input_bytes = scale(n.input_bytes, fwd);
    n.weight_bytes = scale(n.weight_bytes, fwd);
    n.fused_io_bytes = scale(n.fused_io_bytes, fwd);
    sum_fwd += n.forward_flops;
    sum_bwd += n.backward_flops;
    sum_act += n.activation_bytes;
    sum_cat[static_cast<int>(n.category)] += Count(n.forward_flops) + n.backward_flops;
  }
  Count all = sum_fwd + sum_bwd + sum_act;
  for (const Count& c : sum_cat) all += c;
  if (overflow || !all.ok()) return Status::Error(file + ": count per step overflows int64");
  t.forward_flops = sum_fwd.value();
  t.backward_flops = sum_bwd.value();
  t.activation_bytes = sum_act.value();
  for (int i = 0; i < kNumCategories; ++i) t.flops_by_category[i] = sum_cat[i].value();
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
