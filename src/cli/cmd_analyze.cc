// gpucast analyze: per-node training cost and the feature vector of one graph.
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/json_layouts.h"
#include "cost/cost.h"
#include "cost/cost_json.h"
#include "features/features.h"
#include "graph/onnx_loader.h"
#include "util/job_limits.h"
#include "util/json_text.h"

namespace gpucast::cli {
namespace {

struct AnalyzeFlags {
  std::string model;
  int64_t batch = 0;
  std::vector<std::string> dims;
  std::vector<std::string> attrs;
  bool amp = false;
  bool json = false;
  bool csv = false;
  bool strict = false;
  bool nodes = false;     // the per-node table
  bool features = false;  // the feature vector
  bool quiet = false;     // no warnings on stderr
  double max_seconds = kDefaultMaxSeconds;
};

std::string ShapesString(const std::vector<std::vector<int64_t>>& shapes) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? " " : "") + DimsString(shapes[i]);
  return s;
}

// RFC 4180 quoting where needed.
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void PrintCsv(const CostReport& r) {
  std::cout << "name,op_type,category,input_shapes,output_shapes,forward_flops,backward_flops,"
               "params,activation_bytes,weight_bytes\n";
  for (const NodeCost& n : r.nodes) {
    std::cout << CsvField(n.name) << ',' << CsvField(n.op_type) << ',' << CategoryName(n.category)
              << ',' << CsvField(ShapesString(n.input_shapes)) << ','
              << CsvField(ShapesString(n.output_shapes)) << ',' << n.forward_flops << ','
              << n.backward_flops << ',' << n.params << ',' << n.activation_bytes << ','
              << n.weight_bytes << '\n';
  }
}

void PrintNodes(const CostReport& r) {
  std::printf("%-40s %-20s %-14s %14s %14s %12s\n", "node", "op_type", "category", "fwd_FLOPs",
              "bwd_FLOPs", "params");
  for (const NodeCost& n : r.nodes) {
    if (n.category == Category::kDataMovement) continue;  // free ops: see --json/--csv
    std::printf("%-40.40s %-20.20s %-14s %14lld %14lld %12lld\n", n.name.c_str(),
                n.op_type.c_str(), CategoryName(n.category), (long long)n.forward_flops,
                (long long)n.backward_flops, (long long)n.params);
  }
  std::printf("\n");
}

// The default output: totals, where the FLOPs go, what could not be costed.
void PrintSummary(const CostReport& r) {
  const CostTotals& t = r.totals;
  std::printf("%s at batch %lld%s: %lld nodes\n", r.path.c_str(), (long long)r.batch,
              r.amp ? " (AMP)" : "", (long long)t.num_nodes);
  std::printf("  forward  %.4g GFLOPs   backward %.4g GFLOPs   params %.4g M\n",
              t.forward_flops / 1e9, t.backward_flops / 1e9, t.params / 1e6);
  std::printf("  activations %.4g MB written   weights %.4g MB\n", t.activation_bytes / 1e6,
              t.weight_bytes / 1e6);
  // What the file's metadata says of the parameters (gpucast-export writes it): shown only when
  // it says something.
  if (t.frozen_params > 0)
    std::printf("  frozen %.4g M of the params (no gradient, no optimizer state)\n", t.frozen_params / 1e6);
  if (t.sparse_grad_params > 0)
    std::printf("  sparse gradients: tables of %.4g M params, %.4g MB of looked-up rows a step\n",
                t.sparse_grad_params / 1e6, t.sparse_grad_bytes / 1e6);
  const double all = static_cast<double>(t.forward_flops) + static_cast<double>(t.backward_flops);
  std::printf("  FLOPs (forward + backward) by category:");
  for (int i = 0; i < kNumCategories; ++i)
    if (t.flops_by_category[i] > 0 && all > 0)
      std::printf(" %s %.1f%%", CategoryName(static_cast<Category>(i)), 100.0 * t.flops_by_category[i] / all);
  std::printf("\n");
  for (const Unsupported& u : r.unsupported)
    std::printf("  UNSUPPORTED %s x%lld: %s\n", u.op_type.c_str(), (long long)u.count,
                u.reason.c_str());
}

void PrintFeatures(const std::vector<double>& features) {
  const FeatureSchema& schema = CurrentFeatureSchema();
  std::printf("features (%s v%d):\n", schema.name.c_str(), schema.version);
  for (size_t i = 0; i < schema.names.size() && i < features.size(); ++i)
    std::printf("  %-36s %.6g\n", schema.names[i].c_str(), features[i]);
}

int RunAnalyze(const AnalyzeFlags& f) {
  ArmDeadline("analyze", f.max_seconds);
  LoadOptions lo;
  lo.batch = f.batch;
  lo.limits.max_seconds = f.max_seconds;
  if (Status s = ParseDimFlags(f.dims, &lo.dims); !s.ok()) return Fail("analyze", s.message());
  JobConfig job;
  job.batch = f.batch;
  job.amp = f.amp;
  job.power_limited_clock = kDefaultPowerLimitedClock;  // as train computes a model's features by default
  if (Status s = CheckAttrKeysOnce(f.attrs); !s.ok()) return Fail("analyze", s.message());
  for (const std::string& kv : f.attrs)
    if (Status s = ParseJobAttr(kv, &job.attrs); !s.ok()) return Fail("analyze", s.message());

  Result<Graph> graph = LoadOnnxGraph(f.model, lo);
  if (!graph.ok()) return Fail("analyze", graph.message());
  Result<CostReport> report = AnalyzeCost(*graph, CostOptions{.amp = f.amp});
  if (!report.ok()) return Fail("analyze", report.message());
  Result<std::vector<double>> features = ComputeFeatures({*report}, job);
  if (!features.ok()) return Fail("analyze", features.message());

  // A partial report is shown, marked, and (with --strict) an error; predict refuses it.
  Status complete = RequireCompleteCost(*report);
  if (!complete.ok() && !f.json && !f.csv)
    std::printf("PARTIAL REPORT: %lld of %lld nodes could not be costed; the totals and features below "
                "leave them out (gpucast predict refuses this graph). First: %s\n\n",
                (long long)report->UncostedNodes(), (long long)report->totals.num_nodes,
                report->first_uncosted.c_str());
  if (f.csv) {
    PrintCsv(*report);
  } else if (f.json) {
    nlohmann::json j = CostReportToJson(*report);
    const FeatureSchema& schema = CurrentFeatureSchema();
    nlohmann::json fj = nlohmann::json::object();
    for (size_t i = 0; i < schema.names.size(); ++i) fj[schema.names[i]] = (*features)[i];
    j["features"] = fj;
    j["feature_schema"] = {{"name", schema.name}, {"version", schema.version}};
    j["unknown_shapes"] = graph->unknown_shapes;
    j["warnings"] = graph->warnings;
    j["schema"] = SchemaField("gpucast.analyze");
    std::cout << JsonText(j, 2) << "\n";
  } else {
    if (f.nodes) PrintNodes(*report);
    PrintSummary(*report);
    if (f.features) PrintFeatures(*features);
  }
  if (!f.quiet)
    for (const std::string& w : graph->warnings) std::cerr << "gpucast analyze: warning: " << w << "\n";
  if (!complete.ok()) {
    std::string partial = report->path + ": partial cost report: " + std::to_string(report->UncostedNodes()) +
                          " of " + std::to_string(report->totals.num_nodes) +
                          " nodes could not be costed; first: " + report->first_uncosted;
    if (f.strict) return Fail("analyze", partial);
    if (!f.quiet) std::cerr << "gpucast analyze: warning: " << partial << "\n";
  }
  return 0;
}

}  // namespace

CLI::App* AddAnalyze(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<AnalyzeFlags>();
  CLI::App* sub = root.add_subcommand(
      "analyze", "Per-operation training cost (FLOPs, params, bytes) and features of an ONNX graph");
  sub->add_option("model", flags->model, "ONNX model file (weights embedded, external or absent)")
      ->required();
  IntIn(sub->add_option("--batch,-b", flags->batch, "Batch size substituted into the data inputs")->required(), 1,
        kMaxJobBatch);
  sub->add_option("--dim", flags->dims, "Other symbolic dimension, NAME=VALUE (repeatable)");
  sub->add_option("--attr", flags->attrs, kJobAttrHelp);
  sub->add_flag("--amp", flags->amp, "Mixed precision (fp16 activations and tensor-core peak)");
  sub->add_flag("--nodes", flags->nodes, "Also print the per-node table (FLOPs and params of every costed node)");
  sub->add_flag("--features", flags->features, "Also print the feature vector the predictor reads");
  AddMaxSeconds(sub, &flags->max_seconds);
  sub->add_flag("--quiet,-q", flags->quiet, "No warnings on stderr (they stay in --json's \"warnings\")");
  auto* json = sub->add_flag("--json", flags->json,
                             "Print one JSON object, every node included (schema gpucast.analyze; docs/json.md)");
  auto* csv = sub->add_flag("--csv", flags->csv, "Print the per-node table as CSV");
  json->excludes(csv);
  sub->add_flag("--strict", flags->strict,
                "Exit 1 when some node could not be costed (the report is still printed)");
  sub->footer(
      "Units: 1 multiply-add = 2 FLOPs. See docs/cost-rules.md. A graph with nodes that cannot be costed "
      "is shown as a PARTIAL REPORT (JSON: \"complete\": false) with a warning on stderr; --strict makes "
      "that exit 1.");
  sub->callback([flags, exit_code] { *exit_code = RunAnalyze(*flags); });
  return sub;
}

}  // namespace gpucast::cli
