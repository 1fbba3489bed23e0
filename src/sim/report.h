// Self-contained HTML report comparing simulation runs (inline SVG, no
// external assets): utilization over time per run, JCT CDFs, summary table.
#pragma once

#include <string>
#include <vector>

#include "sim/simulator.h"
#include "util/status.h"

namespace gpucast::sim {

// Time-weighted mean of a step function over `bins` equal bins of [0, end_s].
std::vector<UtilPoint> BinSeries(const std::vector<UtilPoint>& steps, double end_s, int bins);

// One run as read back from a --out directory.
struct RunData {
  std::string dir;
  std::string summary_json;      // raw text
  std::string label;             // "policy (trace, N GPUs)"
  std::vector<std::pair<std::string, double>> metrics;  // numeric summary fields, in file order
  std::vector<UtilPoint> util;   // utilization.csv
  std::vector<double> jct_s;     // done jobs' end - submit, sorted
};

Result<RunData> LoadRun(const std::string& dir);

// Renders the HTML page for runs (at least one).
std::string RenderReport(const std::vector<RunData>& runs);

}  // namespace gpucast::sim
