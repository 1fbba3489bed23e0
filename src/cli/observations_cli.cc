#include "cli/observations_cli.h"

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_layouts.h"
#include "predict/observations.h"
#include "predict/predictor.h"
#include "predict/regressor.h"
#include "util/json_text.h"

namespace gpucast::cli {

Result<size_t> AddObservedJobs(const std::string& command, const std::string& db, const Catalog& catalog,
                               Dataset* data) {
  ASSIGN_OR_RETURN(std::vector<ObservedJob> jobs, ReadObservedJobs(db));
  const size_t before = data->rows.size();
  std::vector<std::string> skipped;
  RETURN_IF_ERROR(AppendObservedRows(jobs, db, catalog, data, &skipped));
  for (const std::string& s : skipped) std::fprintf(stderr, "gpucast %s: skipped %s\n", command.c_str(), s.c_str());
  return data->rows.size() - before;
}

int RunLearningCurve(const Dataset& shipped, const std::string& db, const Catalog& catalog,
                     const std::vector<std::string>& algos, const std::string& feature_set, uint64_t seed,
                     bool json, const RegressorOptions& regressor) {
  Dataset data = shipped;
  auto added = AddObservedJobs("evaluate", db, catalog, &data);
  if (!added.ok()) return Fail("evaluate", added.message());
  std::vector<bool> observed(data.rows.size(), false);
  for (size_t i = shipped.rows.size(); i < data.rows.size(); ++i) observed[i] = true;
  nlohmann::json out = {{"observations", db}, {"observed_rows", *added}, {"shipped_rows", shipped.rows.size()},
                        {"curves", nlohmann::json::array()},
                        {"schema", SchemaField("gpucast.learning-curve")}};
  if (!json) {
    std::printf("%zu shipped rows, %zu observed jobs from %s\n\n", shipped.rows.size(), *added, db.c_str());
    std::printf("| algo | workload | observed jobs trained on | held-out jobs | MAE (points) | mean signed error |\n");
    std::printf("|---|---|---|---|---|---|\n");
  }
  for (std::string algo : algos) {
    std::string set = feature_set == "default" ? DefaultFeatureSet(algo) : feature_set;
    if (!MakeRegressor(algo).ok()) {
      // A selection ("auto"): the algorithm and feature set it picks on the shipped rows.
      auto picked = Predictor::Train(shipped, algo, seed, set, {}, regressor);
      if (!picked.ok()) return Fail("evaluate", picked.message());
      algo = picked->model().algo();
      if (feature_set == "default") set = picked->info().feature_set;
    }
    auto curve = ObservationLearningCurve(data, observed, algo, set, seed, regressor);
    if (!curve.ok()) return Fail("evaluate", curve.message());
    for (const CurvePoint& c : *curve) {
      if (json) {
        out["curves"].push_back({{"algo", algo}, {"features", set}, {"workload", c.group},
                                 {"observed_in_training", c.observed_in_training}, {"held_out", c.held_out},
                                 {"mae", c.mae}, {"mean_signed_error", c.mean_signed}});
      } else {
        std::printf("| %s | %s | %d | %d | %.1f | %+.1f |\n", algo.c_str(), c.group.c_str(),
                    c.observed_in_training, c.held_out, c.mae, c.mean_signed);
      }
    }
    if (curve->empty() && !json) {
      std::printf("| %s | (no workload with 2 or more observed jobs) | | | | |\n", algo.c_str());
    }
  }
  if (json) std::cout << JsonText(out, 2) << "\n";
  return 0;
}

}  // namespace gpucast::cli
