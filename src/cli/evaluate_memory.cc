#include "cli/evaluate_memory.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_layouts.h"
#include "features/memory.h"
#include "predict/memory_eval.h"
#include "util/json_text.h"

namespace gpucast::cli {
namespace {

void ScoreRow(const std::string& name, const MemoryEvalScores& s) {
  std::printf("| %s | %zu | %.3f | %.0f | %.2f | %.2f | %.0f | %.2f | %+.3f |\n", name.c_str(), s.rows, s.mape,
              s.mae_mib, s.high_above, s.coverage, s.median_width_mib, s.median_rel_width, s.worst_under);
}

void PrintTables(const MemoryEvaluation& e) {
  const char* head =
      "| %s | rows | MAPE | MAE (MiB) | high end >= measured | coverage | median width (MiB) | median width / "
      "point | worst (measured - high) / measured |\n|---|---|---|---|---|---|---|---|---|\n";
  std::printf("\nGPU memory, split %s (level %.2f; high end: the one-sided bound a limit is set from)\n\n", e.split.c_str(),
              e.level);
  std::printf(head, "split");
  ScoreRow(e.split, e.overall);
  std::printf("\nper workload\n\n");
  std::printf(head, "workload");
  for (const auto& [k, s] : e.per_workload) ScoreRow(k, s);
  std::printf("\nper GPU\n\n");
  std::printf(head, "GPU");
  for (const auto& [k, s] : e.per_gpu) ScoreRow(k, s);
  // What set the high ends: the training workload whose held-out error is each fold's quantile.
  std::map<std::string, int> set_by;
  for (const MemoryRowPrediction& r : e.rows) ++set_by[r.high_set_by.empty() ? "(uncalibrated)" : r.high_set_by];
  std::printf("\nthe high end's quantile set by (the training workload whose held-out error it is; held-out rows)\n\n"
              "| workload | rows |\n|---|---|\n");
  for (const auto& [k, c] : set_by) std::printf("| %s | %d |\n", k.c_str(), c);
  // Components: the mean of each over the held-out rows of a workload, MiB.
  std::map<std::string, std::map<std::string, double>> sum;
  std::map<std::string, int> n;
  std::vector<std::string> names;
  for (const MemoryRowPrediction& r : e.rows) {
    ++n[r.workload];
    for (const auto& [k, v] : r.components) {
      if (n.size() == 1 && n[r.workload] == 1) names.push_back(k);
      sum[r.workload][k] += v;
    }
    sum[r.workload]["measured"] += r.measured;
    sum[r.workload]["predicted"] += r.prediction.mib;
  }
  if (e.rows.empty()) return;
  std::printf("\nper component (mean over the held-out rows of each workload, MiB)\n\n| workload |");
  for (const std::string& k : names) std::printf(" %s |", k.c_str());
  std::printf(" predicted | measured |\n|---|");
  for (size_t i = 0; i < names.size() + 2; ++i) std::printf("---|");
  std::printf("\n");
  for (const auto& [w, parts] : sum) {
    std::printf("| %s |", w.c_str());
    for (const std::string& k : names) {
      const double v = parts.count(k) ? parts.at(k) / n[w] : 0.0;
      std::printf(" %.0f |", std::fabs(v) < 0.5 ? 0.0 : v);  // no "-0"
    }
    std::printf(" %.0f | %.0f |\n", parts.at("predicted") / n[w], parts.at("measured") / n[w]);
  }
}

// The published CUDA contexts the model bounds an unfitted architecture by (features/memory.h).
void PrintContextSources() {
  std::printf("Published CUDA contexts (ContextSources; the high end of a GPU architecture without training rows "
              "covers the largest, %.0f MiB with a cuDNN handle's %.0f)\n\n| GPU | software | context (MiB) | "
              "source |\n|---|---|---|---|\n",
              PublishedContextMaxMib(), kCudnnHandleMib);
  for (const ContextSource& c : ContextSources())
    std::printf("| %s | %s | %.0f | %s |\n", c.gpu, c.software, c.mib, c.source);
}

}  // namespace

int RunMemoryEvaluation(const Dataset& data, const std::vector<Split>& splits, double level, bool json) {
  if (!json) PrintContextSources();
  nlohmann::json out = {{"rows", data.rows.size()}, {"digest", data.digest}, {"evaluations", nlohmann::json::array()},
                        {"schema", SchemaField("gpucast.memory-evaluation")}};
  for (const Split& sp : splits) {
    Result<MemoryEvaluation> e = EvaluateMemory(data, sp, level);
    if (!e.ok()) return Fail("evaluate", e.message());
    if (json) {
      out["evaluations"].push_back(MemoryEvaluationJson(*e));
    } else {
      PrintTables(*e);
    }
  }
  if (json) std::cout << JsonText(out, 2) << "\n";
  return 0;
}

}  // namespace gpucast::cli
