// gpucast interference: the fitted co-location physics for given utilizations,
// so anyone can inspect the model the simulator runs on.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_layouts.h"
#include "sim/interference.h"
#include "sim/workload.h"
#include "util/paths.h"

namespace gpucast::cli {
namespace {

struct InterferenceFlags {
  std::vector<double> utils;
  bool json = false, validate = false;
};

// Held-out error on the Lucid pairs and the bias on Gavel's V100 pairs.
Result<nlohmann::ordered_json> Validation(const std::vector<sim::WorkloadProfile>& w, const sim::InterferenceModel& m) {
  const std::string data = DataDir();
  nlohmann::ordered_json j;
  for (const char* g : {"pair", "model"}) {
    ASSIGN_OR_RETURN(sim::CvReport cv, sim::CrossValidate(w, data + "/lucid/colocate_info.csv", g));
    j[std::string("leave_one_") + g + "_out"] = {
        {"groups", cv.groups}, {"samples", cv.samples}, {"rate_mae", cv.mae}, {"rate_rmse", cv.rmse},
        {"rate_bias", cv.bias}, {"mean_baseline_mae", cv.baseline_mae}, {"no_slowdown_mae", cv.no_slowdown_mae},
        {"device_busy_mae_pct", cv.util_mae}, {"device_busy_pairs", cv.util_pairs}};
  }
  ASSIGN_OR_RETURN(sim::GavelCheck g, sim::CheckAgainstGavel(m, w, data + "/gavel/simulation_throughputs.json"));
  j["gavel_v100"] = {{"pairs", g.pairs}, {"model_mae", g.model_mae}, {"bias", g.bias},
                     {"no_slowdown_mae", g.no_slowdown_mae}, {"lucid_mean_mae", g.lucid_mean_mae},
                     {"gavel_mean_rate", g.gavel_mean_rate}, {"model_mean_rate", g.model_mean_rate},
                     {"pearson_r", g.corr}};
  return j;
}

int RunInterference(const InterferenceFlags& f) {
  if (f.utils.empty() && !f.validate) return Fail("interference", "give at least one --util U (percent), or --validate");
  for (double u : f.utils)
    if (!(u >= 0 && u <= 100)) return Fail("interference", "--util " + std::to_string(u) + " is not in [0, 100]");
  const std::string data = DataDir();
  auto w = sim::LoadWorkloads(data + "/lucid/single_data.csv");
  if (!w.ok()) return Fail("interference", w.message());
  auto m = sim::InterferenceModel::Fit(*w, data + "/lucid/colocate_info.csv");
  if (!m.ok()) return Fail("interference", m.message());
  std::vector<double> rates(f.utils.size());
  double busy = 0;
  m->Rates(f.utils.data(), static_cast<int>(f.utils.size()), rates.data(), &busy);
  double sum_ru = 0;
  for (size_t i = 0; i < rates.size(); ++i) sum_ru += rates[i] * f.utils[i];
  nlohmann::ordered_json val;
  if (f.validate) {
    auto v = Validation(*w, *m);
    if (!v.ok()) return Fail("interference", v.message());
    val = *v;
  }
  if (f.json) {
    nlohmann::ordered_json j;
    j["utils"] = f.utils;
    j["rates"] = rates;
    j["device_busy"] = busy;
    j["sum_rate_x_util"] = sum_ru;
    j["params"] = {{"beta", m->params().beta}, {"switch_cost", m->params().switch_cost}};
    for (auto& [k, v] : val.items()) j[k] = v;
    j["schema"] = SchemaField("gpucast.interference");
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (f.validate) {
    for (const char* k : {"leave_one_pair_out", "leave_one_model_out"})
      std::printf("%s: %d samples, rate MAE %.3f (bias %+.3f; mean-rate baseline %.3f, no-slowdown %.3f), "
                  "device busy MAE %.1f points\n",
                  k, val[k]["samples"].get<int>(), val[k]["rate_mae"].get<double>(), val[k]["rate_bias"].get<double>(),
                  val[k]["mean_baseline_mae"].get<double>(), val[k]["no_slowdown_mae"].get<double>(),
                  val[k]["device_busy_mae_pct"].get<double>());
    const auto& g = val["gavel_v100"];
    std::printf("gavel_v100: %d pairs, rate MAE %.3f, bias %+.3f (model mean %.3f vs measured %.3f), r = %.2f; "
                "no-slowdown MAE %.3f\n",
                g["pairs"].get<int>(), g["model_mae"].get<double>(), g["bias"].get<double>(),
                g["model_mean_rate"].get<double>(), g["gavel_mean_rate"].get<double>(), g["pearson_r"].get<double>(),
                g["no_slowdown_mae"].get<double>());
  }
  if (rates.empty()) return 0;
  std::printf("%-4s %8s %8s\n", "job", "util%", "rate");
  for (size_t i = 0; i < rates.size(); ++i) std::printf("%-4zu %8.2f %8.4f\n", i, f.utils[i], rates[i]);
  std::printf("device busy %.2f%% (sum rate x util %.2f); model beta %.4f, switching cost %.4f "
              "(fitted to lucid/colocate_info.csv, docs/simulator.md)\n",
              busy, sum_ru, m->params().beta, m->params().switch_cost);
  return 0;
}

}  // namespace

CLI::App* AddInterference(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<InterferenceFlags>();
  CLI::App* sub = root.add_subcommand(
      "interference", "Progress rate of each co-located job and the device's busy percent (fitted physics)");
  sub->add_option("--util", flags->utils, "Utilization of one co-located job alone, percent (repeat per job)");
  sub->add_flag("--validate", flags->validate,
                "Also report the model's held-out error on the Lucid pairs and its bias on Gavel's V100 pairs");
  sub->add_flag("--json", flags->json,
                "Print {\"rates\": [...], \"device_busy\": ...} as JSON (schema gpucast.interference; docs/json.md)");
  sub->callback([flags, exit_code] { *exit_code = RunInterference(*flags); });
  return sub;
}

}  // namespace gpucast::cli
