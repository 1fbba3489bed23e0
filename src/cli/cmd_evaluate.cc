// gpucast evaluate: cross-validated error of the predictors on measured jobs.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/evaluate_memory.h"
#include "cli/flags.h"
#include "cli/json_layouts.h"
#include "cli/observations_cli.h"
#include "cli/progress.h"
#include "features/site_gpus.h"
#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/evaluate.h"
#include "predict/physics.h"
#include "predict/predictor.h"
#include "predict/step_eval.h"
#include "predict/regressor.h"
#include "util/json_text.h"

namespace gpucast::cli {
namespace {

struct EvaluateFlags {
  std::string gpu_table;  // --gpu-table
  std::vector<std::string> data;
  std::string gpu, mig;
  bool nested = false;
  bool select_pooled = false;
  bool no_calibrate = false;
  double level = 0.8;
  std::string interval = "normalized";
  int bootstrap = 2000;
  std::string catalog;
  std::vector<std::string> splits = {"random:0.2"};
  int repeats = 20;
  std::vector<std::string> algos = {"all"};
  std::vector<std::string> feature_sets = {"default"};
  uint64_t seed = 0;
  bool json = false;
  bool quiet = false;
  bool per_workload = false;
  bool each_set = false;  // set by RunEvaluate when --features each
  bool power_limited_clock = kDefaultPowerLimitedClock;
  bool tensor_core_split = false;  // physics' tensor_core_split in every model fitted (predict/physics.h)
  std::string plot;
  std::string observations;  // service database: print the learning curve of its observed jobs
  std::vector<std::string> steps;  // pollux-t4 / zeus folders: step-time evaluation (predict/step_eval.h)
  bool memory_only = false;  // the GPU memory model alone (cli/evaluate_memory.h)
};

std::string Name(const EvalResult& r) {
  if (r.options.nested.empty()) return r.options.algo == kAutoAlgo ? "auto (nested selection)" : r.options.algo;
  std::string n = "nested(";
  for (size_t i = 0; i < r.options.nested.size(); ++i) n += (i ? " " : "") + r.options.nested[i].ToString();
  return n + ")";
}

// Memory scores as JSON (NaN: null).
nlohmann::json MemoryJson(const MemoryScores& m) {
  return {{"rows", m.rows}, {"mape", m.mape}, {"mae_mib", m.mae_mib}, {"high_above_measured", m.high_above},
          {"coverage", m.coverage}, {"median_width_mib", m.median_width_mib}};
}

nlohmann::json ToJson(const EvalResult& r) {
  auto ms = [](const MeanSd& m) { return nlohmann::json{{"mean", m.mean}, {"sd", m.sd}}; };
  nlohmann::json pw = nlohmann::json::array();
  for (const WorkloadError& w : r.per_workload)
    pw.push_back({{"workload", w.workload}, {"predictions", w.predictions}, {"rmsle", w.rmsle},
                  {"mae", w.mae}, {"mean_measured", w.mean_measured}, {"mean_predicted", w.mean_predicted},
                  {"memory", MemoryJson(w.memory)}, {"mem_mean_measured_mib", w.mem_mean_measured},
                  {"mem_mean_predicted_mib", w.mem_mean_predicted}});
  nlohmann::json rows = nlohmann::json::array();
  for (const RowPrediction& p : r.predictions)
    rows.push_back({{"workload", p.model + "/" + p.dataset}, {"batch", p.batch}, {"amp", p.amp}, {"gpu", p.gpu},
                    {"mig_profile", p.mig_profile}, {"measured", p.measured}, {"predicted", p.predicted},
                    {"low", p.low}, {"high", p.high}, {"mem_measured_mib", p.mem_measured},
                    {"mem_predicted_mib", p.mem_predicted}, {"mem_low_mib", p.mem_low}, {"mem_high_mib", p.mem_high},
                    {"step_measured_ms", p.step_measured_ms}, {"step_predicted_ms", p.step_predicted_ms},
                    {"step_low_ms", p.step_low_ms}, {"step_high_ms", p.step_high_ms}});
  nlohmann::json step = nlohmann::json::array();
  for (const EvalResult::StepScore& sc : r.step)
    step.push_back({{"gpu", sc.gpu.empty() ? nlohmann::json("all") : nlohmann::json(sc.gpu)}, {"rows", sc.rows},
                    {"median_ape", sc.median_ape}, {"coverage", sc.coverage},
                    {"median_high_over_low", sc.median_width_ratio}});
  nlohmann::json step_only = nlohmann::json::array();
  for (const RowPrediction& p : r.step_only)
    step_only.push_back({{"workload", p.model + "/" + p.dataset}, {"batch", p.batch}, {"amp", p.amp}, {"gpu", p.gpu},
                         {"step_measured_ms", p.step_measured_ms}, {"step_predicted_ms", p.step_predicted_ms},
                         {"step_low_ms", p.step_low_ms}, {"step_high_ms", p.step_high_ms}});
  auto ci = [](const Interval90& i) { return nlohmann::json{{"low", i.low}, {"high", i.high}}; };
  nlohmann::json tradeoff = nlohmann::json::array();
  for (const TradeoffPoint& t : r.interval_tradeoff)
    tradeoff.push_back({{"level", t.level}, {"coverage", t.coverage}, {"median_width", t.median_width}});
  return {{"algo", Name(r)}, {"split", r.options.split.ToString()},
          {"features", r.options.nested.empty() ? r.options.feature_set : "selected"},
          {"nested", !r.options.nested.empty()}, {"selected", r.selected},
          {"repeats", r.options.repeats}, {"rmsle", ms(r.rmsle)}, {"rmsle_ci90", ci(r.rmsle_ci)},
          {"mae", ms(r.mae)}, {"r2", ms(r.r2)},
          {"interval_level", r.options.level}, {"interval_method", IntervalMethodName(r.options.interval_method)},
          {"interval_coverage", ms(r.coverage)},
          {"interval_median_width", r.median_width}, {"interval_tradeoff", tradeoff},
          {"mean_baseline_rmsle", r.mean_baseline_rmsle},
          {"mean_baseline_rmsle_ci90", ci(r.baseline_ci)}, {"memory", MemoryJson(r.memory)},
          {"memory_mean_baseline_mape", r.memory_baseline_mape}, {"per_workload", pw}, {"predictions", rows},
          {"step", step}, {"step_only_predictions", step_only}};
}

// "lowo forest (default features): RMSLE 0.826 +- 0.000 [0.61, 1.04], MAE 21.3, coverage 0.80 (mean baseline 0.952)"
std::string ResultLine(const EvalResult& r) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s %s (features %s, %d repeats): RMSLE %.3f +- %.3f [90%% CI %.3f, %.3f], MAE %.1f points, "
                "coverage %.2f, median width %.1f (mean-baseline RMSLE %.3f)",
                r.options.split.ToString().c_str(), Name(r).c_str(),
                r.options.nested.empty() ? r.options.feature_set.c_str() : "selected", r.options.repeats,
                r.rmsle.mean, r.rmsle.sd, r.rmsle_ci.low, r.rmsle_ci.high, r.mae.mean, r.coverage.mean,
                r.median_width, r.mean_baseline_rmsle);
  std::string out = buf;
  for (const EvalResult::StepScore& sc : r.step) {
    if (!sc.gpu.empty()) continue;
    std::snprintf(buf, sizeof buf, "; step time (%zu rows): median error %.1f%%, coverage %.2f", sc.rows,
                  sc.median_ape * 100, sc.coverage);
    out += buf;
  }
  return out;
}

int RunEvaluate(EvaluateFlags f) {
  if (Status t = InstallSiteGpuTable(f.gpu_table); !t.ok()) return Fail("evaluate", t.message());
  if (f.data.empty()) f.data = DefaultDataCsvs();
  if (f.catalog.empty()) f.catalog = DefaultCatalog();
  Progress progress("evaluate", f.quiet);
  std::vector<std::string> algos;
  for (const std::string& a : f.algos) {
    if (a == "all") {
      for (const AlgoRow& row : Algorithms()) algos.push_back(row.name);
    } else {
      if (a != kAutoAlgo)
        if (auto r = MakeRegressor(a); !r.ok()) return Fail("evaluate", r.message() + " or auto");
      algos.push_back(a);
    }
  }
  std::vector<Split> splits;
  for (const std::string& s : f.splits) {
    auto sp = ParseSplit(s);
    if (!sp.ok()) return Fail("evaluate", sp.message());
    splits.push_back(*sp);
  }
  std::vector<std::string> sets;
  for (const std::string& s : f.feature_sets) {
    if (s == "each") {
      for (const std::string& n : FeatureSetNames()) sets.push_back(n);
      f.each_set = true;
    } else {
      sets.push_back(s);
    }
  }
  auto catalog = LoadCatalog(f.catalog);
  if (!catalog.ok()) return Fail("evaluate", catalog.message());
  RegressorOptions regressor;  // every model fitted is made with it
  regressor.tensor_core_split = f.tensor_core_split;
  auto data = BuildDataset(f.data, *catalog, DatasetOptions{f.gpu, f.mig, f.power_limited_clock});
  if (!data.ok()) return Fail("evaluate", data.message());
  if (f.memory_only) return RunMemoryEvaluation(*data, splits, f.level, f.json);
  if (!f.observations.empty()) {
    const std::string set = f.feature_sets.empty() ? "default" : f.feature_sets.front();
    // Without --algo: the default algorithm only (a curve costs one fit per observed job).
    const bool all = f.algos.size() == 1 && f.algos[0] == "all";
    return RunLearningCurve(*data, f.observations, *catalog, all ? std::vector<std::string>{kDefaultAlgo} : algos,
                            set, f.seed, f.json, regressor);
  }
  if (!f.steps.empty()) {
    // One predictor trained on the --data rows (none of the step-only rows): every job and GPU of them held out.
    const std::string algo = f.algos.size() == 1 && f.algos[0] != "all" ? f.algos[0] : std::string(kDefaultAlgo);
    progress.Result("training " + algo + " on " + std::to_string(data->rows.size()) + " rows");
    auto p = Predictor::Train(*data, algo, f.seed, DefaultFeatureSet(algo), {}, regressor);
    if (!p.ok()) return Fail("evaluate", p.message());
    StepEvalOptions so;
    so.models_dir = std::filesystem::path(catalog->path).parent_path().string();
    so.level = f.level;
    nlohmann::json all = nlohmann::json::array();
    for (const std::string& dir : f.steps) {
      std::map<std::string, size_t> skipped;
      auto runs = ReadStepRuns(dir, &skipped);
      if (!runs.ok()) return Fail("evaluate", runs.message());
      progress.Result(dir + ": " + std::to_string(runs->size()) + " runs");
      auto r = EvaluateSteps(*p, *runs, so);
      if (!r.ok()) return Fail("evaluate", r.message());
      (*r)["data"] = dir;
      (*r)["algo"] = p->model().algo();
      (*r)["skipped_jobs"] = skipped;
      if (!f.json) std::printf("%s (%s)\n%s\n", dir.c_str(), p->model().algo().c_str(), StepEvalMarkdown(*r).c_str());
      all.push_back(std::move(*r));
    }
    if (f.json) std::printf("%s\n", JsonText(nlohmann::json{{"steps", all}, {"schema", SchemaField("gpucast.evaluate.steps")}}, 2).c_str());
    return 0;
  }
  for (const std::string& s : sets)
    if (s != "default")
      if (auto c = SelectFeatures(data->feature_names, s); !c.ok()) return Fail("evaluate", c.message());

  // "default" = each algorithm's own default set; "each" skips the sets that
  // lack features an algorithm needs (roofline on "paper").
  auto usable = [&](const std::string& algo, const std::string& set) {
    if (algo == kAutoAlgo) return !f.nested;  // auto is a selection itself
    auto cols = SelectFeatures(data->feature_names, set);
    auto r = MakeRegressor(algo);
    if (!cols.ok() || !r.ok()) return false;
    for (const std::string& need : (*r)->RequiredFeatures()) {
      bool found = false;
      for (size_t c : *cols) found = found || data->feature_names[c] == need;
      if (!found) return false;
    }
    return true;
  };
  std::vector<EvalResult> results;
  auto base_options = [&](const Split& sp) {
    EvalOptions o;
    o.split = sp;
    o.repeats = f.repeats;
    o.seed = f.seed;
    o.calibrate = !f.no_calibrate;
    o.level = f.level;
    o.interval_method = *ParseIntervalMethod(f.interval);  // checked by the flag
    o.bootstrap = f.bootstrap;
    o.select_by_pooled_rmsle = f.select_pooled;
    o.regressor = regressor;
    return o;
  };
  if (f.nested) {
    // One evaluation per split of the selection among every (algo, feature set) asked for.
    std::vector<Candidate> cands;
    for (const std::string& fs : sets)
      for (const std::string& a : algos) {
        std::string set = fs == "default" ? DefaultFeatureSet(a) : fs;
        if (!usable(a, set)) continue;
        cands.push_back({a, set});
      }
    for (const Split& sp : splits) {
      EvalOptions o = base_options(sp);
      o.nested = cands;
      const std::string what = "nested " + sp.ToString() + " over " + std::to_string(cands.size()) + " candidates";
      o.on_repeat = [&progress, what](int done, int repeats) {
        progress.Update(what + ": repeat " + std::to_string(done) + "/" + std::to_string(repeats) + " done");
      };
      auto r = Evaluate(*data, o);
      if (!r.ok()) return Fail("evaluate", r.message());
      progress.Result(ResultLine(*r));
      results.push_back(std::move(r).value());
    }
  }
  // Each evaluation's result on stderr as it finishes (the table on stdout comes at the end).
  std::vector<EvalOptions> plain;
  for (const Split& sp : splits)
    for (const std::string& fs : f.nested ? std::vector<std::string>{} : sets)
      for (const std::string& a : algos) {
        std::string set = fs == "default" ? DefaultFeatureSet(a) : fs;
        if (f.each_set && !usable(a, set)) continue;
        EvalOptions o = base_options(sp);
        o.algo = a;
        o.feature_set = set;
        plain.push_back(std::move(o));
      }
  for (size_t i = 0; i < plain.size(); ++i) {
    EvalOptions& o = plain[i];
    const std::string n = "[" + std::to_string(i + 1) + "/" + std::to_string(plain.size()) + "] ";
    const std::string what = n + o.split.ToString() + " " + o.algo + " (features " + o.feature_set + ")";
    o.on_repeat = [&progress, what](int done, int repeats) {
      progress.Update(what + ": repeat " + std::to_string(done) + "/" + std::to_string(repeats) + " done");
    };
    auto r = Evaluate(*data, o);
    if (!r.ok()) return Fail("evaluate", r.message());
    progress.Result(n + ResultLine(*r));
    results.push_back(std::move(r).value());
  }

  if (!f.plot.empty()) {
    const EvalResult& r = results.front();
    char title[256];
    std::snprintf(title, sizeof title, "%s, %s split, features %s: RMSLE %.3f (%zu predictions, %d repeats)",
                  Name(r).c_str(), r.options.split.ToString().c_str(), r.options.feature_set.c_str(),
                  r.rmsle.mean, r.predictions.size(), r.options.repeats);
    std::ofstream out(f.plot, std::ios::binary | std::ios::trunc);
    out << PredictionPlotSvg(r.predictions, title);
    out.close();
    if (!out) return Fail("evaluate", f.plot + ": cannot write");
  }
  if (f.json) {
    nlohmann::json j = {{"data", f.data}, {"digest", data->digest}, {"rows", data->rows.size()},
                        {"workloads", data->groups.size()}, {"gpu", data->gpu},
                        {"feature_schema", {{"name", data->schema_name}, {"version", data->schema_version}}},
                        {"results", nlohmann::json::array()},
                        {"schema", SchemaField("gpucast.evaluate")}};
    for (const EvalResult& r : results) j["results"].push_back(ToJson(r));
    std::cout << JsonText(j, 2) << "\n";
    return 0;
  }
  std::printf("%zu rows, %zu workloads, %s v%d, labels %s, data %s\n\n", data->rows.size(), data->groups.size(),
              data->schema_name.c_str(), data->schema_version, data->gpu.c_str(), data->digest.c_str());
  std::printf("| split | features | algo | RMSLE | 90%% CI | MAE (points) | R² | coverage (%g) | median width | "
              "mean-baseline RMSLE [90%% CI] |\n",
              f.level);
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (const EvalResult& r : results)
    std::printf("| %s | %s | %s | %.3f ± %.3f | [%.3f, %.3f] | %.1f ± %.1f | %.2f ± %.2f | %.2f | %.1f | %.3f [%.3f, %.3f] |\n",
                r.options.split.ToString().c_str(), r.options.nested.empty() ? r.options.feature_set.c_str() : "selected",
                Name(r).c_str(), r.rmsle.mean, r.rmsle.sd, r.rmsle_ci.low, r.rmsle_ci.high, r.mae.mean, r.mae.sd,
                r.r2.mean, r.r2.sd, r.coverage.mean, r.median_width, r.mean_baseline_rmsle, r.baseline_ci.low,
                r.baseline_ci.high);
  bool memory = false;
  for (const EvalResult& r : results) memory = memory || r.memory.rows > 0;
  if (memory) {
    std::printf("\nGPU memory (one physical model per fold, no selection: nested and plain give the same)\n\n"
                "| split | algo | rows | MAPE | MAE (MiB) | high end >= measured | coverage (%g) | median width (MiB) | "
                "mean-baseline MAPE |\n|---|---|---|---|---|---|---|---|---|\n",
                f.level);
    for (const EvalResult& r : results)
      std::printf("| %s | %s | %zu | %.3f | %.0f | %.2f | %.2f | %.0f | %.3f |\n", r.options.split.ToString().c_str(),
                  Name(r).c_str(), r.memory.rows, r.memory.mape, r.memory.mae_mib, r.memory.high_above,
                  r.memory.coverage, r.memory.median_width_mib, r.memory_baseline_mape);
  }
  for (const EvalResult& r : results) {
    if (r.selected.empty()) continue;
    std::map<std::string, int> count;
    for (const std::string& s : r.selected) ++count[s];
    std::printf("\nselected in the %zu outer folds of %s:", r.selected.size(), r.options.split.ToString().c_str());
    for (const auto& [k, v] : count) std::printf(" %s x%d", k.c_str(), v);
    std::printf("\n");
  }
  if (f.per_workload) {
    for (const EvalResult& r : results) {
      std::printf("\nper workload: %s, %s, %s\n\n| workload | n | RMSLE | MAE | measured | predicted |\n"
                  "|---|---|---|---|---|---|\n",
                  r.options.split.ToString().c_str(), r.options.feature_set.c_str(), Name(r).c_str());
      for (const WorkloadError& w : r.per_workload)
        std::printf("| %s | %zu | %.3f | %.1f | %.1f | %.1f |\n", w.workload.c_str(), w.predictions, w.rmsle,
                    w.mae, w.mean_measured, w.mean_predicted);
      if (r.memory.rows == 0) continue;
      std::printf("\nGPU memory per workload: %s, %s\n\n| workload | n | measured (MiB) | predicted (MiB) | MAPE | "
                  "high end >= measured |\n|---|---|---|---|---|---|\n",
                  r.options.split.ToString().c_str(), Name(r).c_str());
      for (const WorkloadError& w : r.per_workload)
        if (w.memory.rows > 0)
          std::printf("| %s | %zu | %.0f | %.0f | %.3f | %.2f |\n", w.workload.c_str(), w.memory.rows,
                      w.mem_mean_measured, w.mem_mean_predicted, w.memory.mape, w.memory.high_above);
    }
  }
  return 0;
}

}  // namespace

CLI::App* AddEvaluate(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<EvaluateFlags>();
  CLI::App* sub = root.add_subcommand("evaluate", "Cross-validated error (RMSLE, MAE, R², interval coverage) of the predictors");
  AddGpuTable(sub, &flags->gpu_table);
  sub->add_option("--data", flags->data, "Measurement CSV, repeatable (Lucid or MIGProfiler format)")
      ->default_str(kDefaultDataCsvShown);
  sub->add_option("--gpu", flags->gpu, "GPU the rows without a gpu column ran on (default: the catalog's)");
  sub->add_option("--mig", flags->mig, "MIG profile of the rows without a mig_profile column (default: whole GPU)");
  sub->add_flag("--nested", flags->nested,
                "Evaluate the SELECTION among every --algo x --features combination: in each outer fold the "
                "candidate with the lowest leave-one-workload-out RMSLE over the training rows only is fit "
                "and tested");
  sub->add_flag("--select-by-pooled-rmsle", flags->select_pooled,
                "Nested and auto selection by the pooled inner RMSLE instead of the median per-workload RMSLE");
  FloatIn(sub->add_option("--level", flags->level, "Interval level (central probability)")->capture_default_str(),
          0.01, 0.99);
  sub->add_option("--interval", flags->interval,
                  "Calibrated interval: normalized (residuals scaled by the prediction's idle fraction, shortest "
                  "window), central (raw log1p residuals, central quantiles: the former method) or logit (residuals of "
                  "log(busy/idle), shortest window); docs/predictor.md")
      ->capture_default_str()
      ->check(CLI::IsMember({"normalized", "central", "logit"}));
  sub->add_flag("--no-calibrate", flags->no_calibrate,
                "Use each regressor's own member spread as the interval instead of the conformal calibration");
  IntIn(sub->add_option("--bootstrap", flags->bootstrap, "Workload-bootstrap resamples for the RMSLE 90% intervals")
            ->capture_default_str(),
        1, 1000000);
  sub->add_option("--catalog", flags->catalog, "Workload catalog mapping CSV workloads to ONNX graphs")
      ->default_str(kDefaultCatalogShown);
  sub->add_option("--split", flags->splits,
                  "random:F (hold out a random fraction F, repeated), lowo (leave one workload out: all rows "
                  "of a workload held out together), kfold:K, largest-batch (each workload's largest batch held "
                  "out), gpu:NAME (rows of GPU NAME held out), logo (each GPU type held out in turn), loco:NAME (each MIG "
                  "configuration of GPU NAME held "
                  "out in turn); repeatable")
      ->capture_default_str();
  IntIn(sub->add_option("--repeats", flags->repeats, "Seeds per split (random shuffles and model seeds); mean ± sd")
            ->capture_default_str(),
        1, 10000);
  std::string algos;
  for (const AlgoRow& a : Algorithms()) algos += std::string(", ") + a.name;
  sub->add_option("--algo", flags->algos,
                  "Regressor: all" + algos +
                      ", auto (the selection 'gpucast train' makes by default, evaluated nested); repeatable")
      ->capture_default_str();
  std::string sets;
  for (const std::string& s : FeatureSetNames()) sets += ", " + s;
  sub->add_option("--features", flags->feature_sets,
                  "Feature subset (ablation): default (each algorithm's own), each" + sets +
                      "; repeatable (see docs/predictor.md)")
      ->capture_default_str();
  sub->add_option("--seed", flags->seed, "First seed")->capture_default_str();
  sub->add_flag("--per-workload", flags->per_workload, "Also print the error of each workload");
  sub->add_option("--steps", flags->steps,
                  "Step-time evaluation instead of the splits (repeatable): a folder of ../shared/data/pollux-t4 or "
                  "zeus layout; a predictor trained on the --data rows (--algo, default auto) predicts every run's "
                  "step time and, on several GPUs, its all-reduce against the measured sync_time (docs/predictor.md)");
  sub->add_option("--observations", flags->observations,
                  "Service database (gpucast serve --db): print the learning curve instead, the error on each "
                  "observed workload against the number of its observed jobs trained on (its shipped rows "
                  "never are)");
  sub->add_flag("--json", flags->json,
                "Print one JSON object with every result and per-workload errors (schema gpucast.evaluate; "
                "docs/json.md)");
  sub->add_flag("--quiet,-q", flags->quiet,
                "No progress on stderr (by default each evaluation's result is printed there as it finishes, "
                "and where a long one is every 5 s)");
  sub->add_flag("--memory-only", flags->memory_only,
                "Evaluate the GPU memory model alone on each --split (fast: no utilization fits): MAPE, the "
                "fraction of rows whose high end holds, interval widths, per workload, per GPU and per component "
                "(--json: schema gpucast.memory-evaluation)");
  sub->add_option("--plot", flags->plot, "Write a predicted-vs-measured SVG of the first result");
  AddPowerLimitedClock(sub, &flags->power_limited_clock,
                      "in every model evaluate trains, as train's option of the same name does");
  AddTensorCoreSplit(sub, &flags->tensor_core_split, "in every model evaluate trains");
  sub->footer(std::string("RMSLE = sqrt(mean((ln(1+pred) - ln(1+measured))^2)), utilization in percent. GPU memory "
                          "(rows with a gmem or gmem_mib column): MAPE, MAE in MiB, the fraction of rows whose "
                          "interval high end is at or above the measured value. ") +
              kPathsFooter);
  sub->callback([flags, exit_code] { *exit_code = RunEvaluate(*flags); });
  return sub;
}

}  // namespace gpucast::cli
