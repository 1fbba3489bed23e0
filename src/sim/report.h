// Self-contained HTML report comparing simulation runs (inline SVG, no
// external assets, no script): a one-line verdict computed from the runs, a
// headline table of useful work with gains against slot and the best
// profiling baseline (mean +- sd only over more than one seed), useful work
// beside busy time, the load sweep, the value of accuracy, useful work and
// queue length over time (mean and range over every seed), JCT CDFs,
// predicted vs true utilization per workload, the interference model's
// validation and every run. Times in hours throughout.
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

// The verdict, plain text (one line): at each load point (GPUs,
// --load-factor) of `runs` (one trace; oracle runs and accuracy controls are
// ignored), the prediction-driven policy with the default predictions that
// has the most useful work (mean over seeds) against the best profiling
// baseline (profiling*, most useful work; slot when none ran), paired by seed:
// useful work in percent of the baseline's, mean JCT difference in hours. A
// difference whose per-seed values disagree in sign ties "within the seeds'
// spread"; one seed is said to have no spread. Points in the order
// (head_gpus, head_load_scale) first, then by GPUs and --load-factor. Empty
// when no point has both sides.
std::string Verdict(const std::vector<const RunData*>& runs, int head_gpus, double head_load_scale);

// "45.0 &plusmn; 7.1" over n > 1 values, "45.0" for one (no spread to show),
// "" for none; mean and sample sd of the values / scale.
std::string PlusMinus(const std::vector<double>& values, double scale, int prec);

// The policy palette (one colour per row of the policy table, in order) and
// the palette of everything that is not a policy (true vs predicted
// utilization, useful work vs busy time): disjoint, so a colour always means
// one policy.
const std::vector<std::string>& PolicyPalette();
const std::vector<std::string>& MeasurePalette();

// The report treats every run that is neither oracle, an accuracy control nor
// without predictions ("unused") as the default predictions. Runs of two such
// sources (the default lowo:physics beside an explicit --predictions auto,
// lowo:auto) would be averaged as one: an error naming both sources and a
// directory of each.
Status CheckOneDefaultSource(const std::vector<RunData>& runs);

// Renders the HTML page for runs (at least one). interference_json: the
// output of `gpucast interference --validate --json` (empty: section left out).
std::string RenderReport(const std::vector<RunData>& runs, const std::string& interference_json = "");

}  // namespace gpucast::sim
