// The cost of one training step of a job, as a prediction sees it: the graph
// files of its networks, how often each runs per step, and the refusal of
// graphs that could not be costed completely.
#pragma once

#include <string>
#include <vector>

#include "cost/cost.h"
#include "graph/onnx_loader.h"
#include "util/status.h"

namespace gpucast {

// Costs `graph` and refuses a partial report (RequireCompleteCost): the one
// check `gpucast predict` (through CostFileForPrediction) and the service's
// engine make before a prediction.
Result<CostReport> CostForPrediction(const Graph& graph, const CostOptions& cost);

// Loads `path`, then CostForPrediction.
Result<CostReport> CostFileForPrediction(const std::string& path, const LoadOptions& load,
                                         const CostOptions& cost);

// One network's share of a training step, from `pass` (one forward+backward
// pass, as AnalyzeCost returns it). Per step the network runs `repeat`
// forward+backward passes and `forward_only` forward passes (fractions are
// averages over steps: 0.5 = every second step), and the optimizer updates
// its parameters on min(repeat, 1) of the steps:
//   node forward FLOPs and activation/input/weight bytes × (repeat + forward_only),
//   node backward FLOPs × repeat, totals recomputed from the nodes;
//   forward_passes = repeat + forward_only, backward_passes = repeat,
//   updates = min(repeat, 1);
//   node counts, params and the totals' weight_bytes unchanged (one network).
// Errors: negative or non-finite counts, no pass at all, a report that is
// already a step share, a count that overflows int64.
Result<CostReport> StepReport(const CostReport& pass, double repeat, double forward_only);

// `r` with its selection-bound nodes (NodeCost::selection_bound: computed from
// a boolean mask's selection the loader sized as every element) at `fraction`
// of that upper bound, in [0, 1]: their FLOPs, activation, input, fused and
// saved bytes × fraction (each is linear in the rows selected), the totals
// that are sums over nodes recomputed. Kernel launches, weights and the
// largest-tensor and loss-input sizes stay the upper bound's (the memory
// estimate errs high). 1, or no such node: `r` unchanged. Errors: a fraction
// outside [0, 1] or NaN.
Result<CostReport> SelectionShare(const CostReport& r, double fraction);

// One training step of a job given as model files (`gpucast predict --model`,
// the service): each distinct file is one network; a file given k times runs
// k forward+backward passes per step (GAN: G once, D three times) and is
// updated once. Every file goes through CostFileForPrediction.
Result<std::vector<CostReport>> JobStepReports(const std::vector<std::string>& files,
                                               const LoadOptions& load, const CostOptions& cost);

}  // namespace gpucast
