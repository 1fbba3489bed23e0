// Self-contained HTML report comparing simulation runs (inline SVG, no
// external assets): a headline table of useful work with gains against slot
// and profiling (mean +- sd over seeds), useful work beside busy time, queue
// length and useful work over time, the load sweep, JCT CDFs, predicted vs
// true utilization per workload, and the interference model's validation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/simulator.h"
#include "util/status.h"

namespace gpucast::sim {

// Time-weighted mean of a step function over `bins` equal bins of [0, end_s]
// (every field of UtilPoint).
std::vector<UtilPoint> BinSeries(const std::vector<UtilPoint>& steps, double end_s, int bins);

// One run as read back from a --out directory.
struct RunData {
  std::string dir;
  std::string summary_json;      // raw text
  std::string label;             // "policy (trace, N GPUs)"
  std::string policy, trace, predictions;  // predictions: "oracle", "lowo:forest", "unused", ...
  std::string bound_kind;        // "capacity" or "demand" (summary.json), empty if absent
  int num_gpus = 0;
  double seed = 0;
  std::vector<std::pair<std::string, double>> metrics;  // numeric summary fields, in file order
  std::vector<UtilPoint> util;   // utilization.csv
  std::vector<double> jct_s;     // done jobs' end - submit, sorted
  // workload name -> (true, predicted) utilization, from jobs.csv
  std::map<std::string, std::pair<double, double>> workloads;

  double Metric(const std::string& key, double fallback = 0) const;
  bool oracle() const { return predictions == "oracle"; }
  // An accuracy control (--predictions noisy:SD, constant:U, shuffled[:ALGO]):
  // kept out of the headline, shown in the value-of-accuracy section.
  bool control() const {
    return predictions.rfind("noisy:", 0) == 0 || predictions.rfind("constant:", 0) == 0 ||
           predictions.rfind("shuffled", 0) == 0;
  }
};

Result<RunData> LoadRun(const std::string& dir);

// Renders the HTML page for runs (at least one). interference_json: the
// output of `gpucast interference --validate --json` (empty: section left out).
std::string RenderReport(const std::vector<RunData>& runs, const std::string& interference_json = "");

}  // namespace gpucast::sim
