// gpucast interference: the co-location physics for given utilizations, so
// anyone can inspect the model the simulator runs on, and (--validate) its
// held-out error tables on every measured pair (docs/simulator.md).
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/json_layouts.h"
#include "sim/interference.h"
#include "sim/workload.h"
#include "util/paths.h"
#include "util/json_text.h"

namespace gpucast::cli {
namespace {

struct InterferenceFlags {
  std::vector<double> utils;
  std::string gpu;
  bool json = false, validate = false;
};

std::string Fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

// "0.049 (-0.010)": MAE and bias.
std::string Cell(const sim::RateErrors& e) { return Fmt("%.3f", e.mae) + " (" + Fmt("%+.3f", e.bias) + ")"; }

std::string ParamText(const sim::PhysicsForm& f, const sim::InterferenceParams& p) {
  std::string s;
  if (f.occupancy) s += "k_occ " + Fmt("%.3g", p.occupancy);
  if (f.contention) s += std::string(s.empty() ? "" : ", ") + "beta " + Fmt("%.3f", p.beta);
  if (f.switching) s += std::string(s.empty() ? "" : ", ") + "s " + Fmt("%.3f", p.switch_cost);
  if (f.capacity)
    s += std::string(s.empty() ? "" : ", ") + "c " + Fmt("%.3f", p.capacity) + ", p " + Fmt("%.3g", p.sharpness);
  return s.empty() ? "—" : s;
}

std::string Label(const sim::SourceValidation& v) {
  return (v.source == "lucid" ? "Lucid " : "Gavel ") + v.gpu;
}

// The tables of docs/simulator.md, as markdown.
std::string Markdown(const std::vector<sim::SourceValidation>& vs) {
  std::ostringstream o;
  o << "Rate error, leave one group out (Lucid: one model; Gavel: one job family; every pair involving it is "
       "held out). Cells: MAE (bias = mean model − measured).\n\n"
    << "| source, GPU | groups | pairs used / measured | no slowdown | mean-rate control | time-slicing bound | "
       "current model | selected (nested) | chosen on all pairs |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& v : vs) {
    o << "| " << Label(v) << " | " << v.groups << " | " << v.pairs_used << " / " << v.pairs_total;
    if (v.source == "gavel") o << " (" << v.pairs_zero << " zero, " << v.pairs_unmapped << " unmapped)";
    o << " | " << Cell(v.no_slowdown) << " | " << Cell(v.mean_rate) << " | " << Cell(v.bound) << " | " << Cell(v.current) << " | "
      << Cell(v.selected) << " | " << v.chosen.Name() << (v.chosen.Name() == "time-slicing bound" ? "" : ": ")
      << (v.chosen.Name() == "time-slicing bound" ? "" : ParamText(v.chosen, v.chosen_params)) << " |\n";
  }
  o << "\nEach form with and without its terms, parameters refitted in every fold (held out), and fitted on all "
       "pairs of the source:\n\n| source, GPU | form | held-out MAE | bias | RMSE | fitted on all pairs |\n"
       "|---|---|---:|---:|---:|---|\n";
  for (const auto& v : vs)
    for (const auto& f : v.forms)
      o << "| " << Label(v) << " | " << f.form.Name() << " | " << Fmt("%.3f", f.held_out.mae) << " | "
        << Fmt("%+.3f", f.held_out.bias) << " | " << Fmt("%.3f", f.held_out.rmse) << " | "
        << ParamText(f.form, f.all) << " |\n";
  o << "\n";
  for (const auto& v : vs) {
    o << "- " << Label(v) << ": " << v.selected.samples << " held-out samples; measured mean rate "
      << Fmt("%.3f", v.measured_mean_rate);
    if (v.source == "gavel")
      o << " (every non-zero pair, mapped or not: " << Fmt("%.3f", v.all_valid_mean_rate) << ")";
    if (v.device_busy_mae >= 0)
      o << "; device busy vs measured gpu_util (all pairs): MAE " << Fmt("%.1f", v.device_busy_mae)
        << " points for the chosen model, " << Fmt("%.1f", v.device_busy_mae_current) << " for the current model";
    o << ". Chosen per fold: ";
    for (size_t i = 0; i < v.fold_choices.size(); ++i) o << (i ? "; " : "") << v.fold_choices[i];
    o << ".\n";
  }
  return o.str();
}

nlohmann::ordered_json Errors(const sim::RateErrors& e) {
  return {{"samples", e.samples}, {"mae", e.mae}, {"bias", e.bias}, {"rmse", e.rmse}};
}

nlohmann::ordered_json Params(const sim::PhysicsForm& f, const sim::InterferenceParams& p) {
  return {{"form", f.Name()},         {"beta", p.beta},         {"switch_cost", p.switch_cost},
          {"occupancy", p.occupancy}, {"capacity", p.capacity}, {"sharpness", p.sharpness}};
}

nlohmann::ordered_json ValidationJson(const std::vector<sim::SourceValidation>& vs) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& v : vs) {
    nlohmann::ordered_json r;
    r["source"] = v.source;
    r["gpu"] = v.gpu;
    r["grouping"] = v.grouping;
    r["groups"] = v.groups;
    r["pairs_total"] = v.pairs_total;
    r["pairs_zero_excluded"] = v.pairs_zero;
    r["pairs_unmapped_excluded"] = v.pairs_unmapped;
    r["pairs_used"] = v.pairs_used;
    r["measured_mean_rate"] = v.measured_mean_rate;
    if (v.source == "gavel") r["all_valid_mean_rate"] = v.all_valid_mean_rate;
    r["no_slowdown"] = Errors(v.no_slowdown);
    r["mean_rate_control"] = Errors(v.mean_rate);
    r["time_slicing_bound"] = Errors(v.bound);
    r["current_model"] = Errors(v.current);
    r["selected_nested"] = Errors(v.selected);
    r["fold_choices"] = v.fold_choices;
    r["chosen"] = Params(v.chosen, v.chosen_params);
    nlohmann::ordered_json forms = nlohmann::ordered_json::array();
    for (const auto& f : v.forms) forms.push_back({{"form", f.form.Name()}, {"held_out", Errors(f.held_out)},
                                                   {"fitted_on_all", Params(f.form, f.all)}});
    r["forms"] = forms;
    if (v.device_busy_mae >= 0) {
      r["device_busy_mae_pct"] = v.device_busy_mae;
      r["current_model_device_busy_mae_pct"] = v.device_busy_mae_current;
    }
    rows.push_back(r);
  }
  j["tables"] = rows;
  // The keys earlier readers (gpucast report, tools/sweep_tables.py) know.
  for (const auto& v : vs) {
    if (v.source == "lucid")
      j["leave_one_model_out"] = {{"groups", v.groups}, {"samples", v.selected.samples},
                                  {"rate_mae", v.selected.mae}, {"rate_rmse", v.selected.rmse},
                                  {"rate_bias", v.selected.bias}, {"time_slicing_mae", v.bound.mae},
                                  {"no_slowdown_mae", v.no_slowdown.mae}, {"device_busy_mae_pct", v.device_busy_mae},
                                  {"device_busy_pairs", v.pairs_used}};
    if (v.source == "gavel" && v.gpu == "V100")
      j["gavel_v100"] = {{"pairs", v.selected.samples}, {"model_mae", v.selected.mae}, {"bias", v.selected.bias},
                         {"time_slicing_mae", v.bound.mae}, {"no_slowdown_mae", v.no_slowdown.mae}};
  }
  j["markdown"] = Markdown(vs);
  return j;
}

int RunInterference(const InterferenceFlags& f) {
  if (f.utils.empty() && !f.validate) return Fail("interference", "give at least one --util U (percent), or --validate");
  for (double u : f.utils)
    if (!(u >= 0 && u <= 100)) return Fail("interference", "--util " + std::to_string(u) + " is not in [0, 100]");
  const std::string data = DataDir();
  const std::string gavel = data + "/gavel/simulation_throughputs.json";
  auto w = sim::LoadWorkloads(data + "/lucid/single_data.csv");
  if (!w.ok()) return Fail("interference", w.message());
  const std::string gpu = f.gpu.empty() ? "RTX3090" : f.gpu;
  auto fitted = sim::InterferenceModel::Fit(*w, data + "/lucid/colocate_info.csv", f.gpu.empty() ? "" : gavel);
  if (!fitted.ok()) return Fail("interference", fitted.message());
  if (!fitted->HasFit(gpu))
    return Fail("interference", "--gpu " + gpu + ": no co-located pairs were measured on it (have RTX3090 from "
                "lucid/colocate_info.csv; K80, P100, V100 from gavel/simulation_throughputs.json)");
  const sim::InterferenceModel m = fitted->ForGpu(gpu);
  std::vector<double> rates(f.utils.size());
  double busy = 0;
  m.Rates(f.utils.data(), static_cast<int>(f.utils.size()), rates.data(), &busy);
  double sum_ru = 0;
  for (size_t i = 0; i < rates.size(); ++i) sum_ru += rates[i] * f.utils[i];
  std::vector<sim::SourceValidation> vs;
  if (f.validate) {
    auto v = sim::Validate(*w, data + "/lucid/colocate_info.csv", gavel);
    if (!v.ok()) return Fail("interference", v.message());
    vs = std::move(*v);
  }
  if (f.json) {
    nlohmann::ordered_json j;
    j["gpu"] = gpu;
    j["utils"] = f.utils;
    j["rates"] = rates;
    j["device_busy"] = busy;
    j["sum_rate_x_util"] = sum_ru;
    j["params"] = Params(m.form(), m.params());
    if (f.validate) {
      const nlohmann::ordered_json val = ValidationJson(vs);
      for (auto& [k, v] : val.items()) j[k] = v;
    }
    j["schema"] = SchemaField("gpucast.interference");
    std::cout << JsonText(j, 2) << "\n";
    return 0;
  }
  if (f.validate) std::cout << Markdown(vs) << "\n";
  if (rates.empty()) return 0;
  std::printf("%-4s %8s %8s\n", "job", "util%", "rate");
  for (size_t i = 0; i < rates.size(); ++i) std::printf("%-4zu %8.2f %8.4f\n", i, f.utils[i], rates[i]);
  std::printf("device busy %.2f%% (sum rate x util %.2f); %s physics: %s%s%s (docs/simulator.md)\n", busy, sum_ru,
              gpu.c_str(), m.form().Name().c_str(), m.form().Name() == "time-slicing bound" ? "" : ", ",
              m.form().Name() == "time-slicing bound" ? "" : ParamText(m.form(), m.params()).c_str());
  return 0;
}

}  // namespace

CLI::App* AddInterference(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<InterferenceFlags>();
  CLI::App* sub = root.add_subcommand(
      "interference", "Progress rate of each co-located job and the device's busy percent (measured-pair physics)");
  sub->add_option("--util", flags->utils, "Utilization of one co-located job alone, percent (repeat per job)");
  sub->add_option("--gpu", flags->gpu,
                  "GPU type whose physics to use: RTX3090 (default; Lucid pairs) or K80, P100, V100 (Gavel pairs)");
  sub->add_flag("--validate", flags->validate,
                "Also print the held-out rate error tables (Lucid RTX 3090; Gavel K80, P100, V100) beside the "
                "time-slicing bound and the no-slowdown baseline");
  sub->add_flag("--json", flags->json,
                "Print {\"rates\": [...], \"device_busy\": ..., ...} as JSON (schema gpucast.interference; "
                "docs/json.md)");
  sub->callback([flags, exit_code] { *exit_code = RunInterference(*flags); });
  return sub;
}

}  // namespace gpucast::cli
