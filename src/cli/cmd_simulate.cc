// gpucast simulate: trace-driven cluster simulation under one or every policy.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/evaluate.h"
#include "sim/cluster.h"
#include "sim/interference.h"
#include "sim/policy.h"
#include "sim/simulator.h"
#include "sim/trace.h"
#include "sim/workload.h"
#include "util/paths.h"

namespace gpucast::cli {
namespace {

struct SimulateFlags {
  std::string trace, policy, cluster, out, predictions, catalog;
  std::string predict_algo = "forest";
  int64_t jobs = -1;
  uint64_t seed = 1;
  bool skip_bad_lines = false, json = false;
  double cap = 100, max_slowdown = 0.25, profile_s = 60;
};

// Out-of-sample (leave-one-workload-out) predicted utilization for every
// workload row, from --predictions CSV or the predict layer. Never the truth.
Status LoadPredictions(const SimulateFlags& f, std::vector<sim::WorkloadProfile>* w, std::string* source) {
  if (!f.predictions.empty()) {
    *source = "csv:" + f.predictions;
    return sim::LoadPredictionsCsv(f.predictions, w);
  }
  const std::string csv = DataDir() + "/lucid/single_data.csv";
  ASSIGN_OR_RETURN(Catalog catalog, LoadCatalog(f.catalog));
  ASSIGN_OR_RETURN(Dataset data, BuildDataset(csv, catalog));
  ASSIGN_OR_RETURN(auto preds, LeaveOneWorkloadOutPredictions(data, f.predict_algo, 0));
  std::vector<bool> seen(w->size(), false);
  for (const RowPrediction& p : preds) {
    int i = sim::FindWorkload(*w, p.model, p.dataset, static_cast<int>(p.batch), p.amp ? 1 : 0);
    if (i < 0) return Status::Error("prediction for unknown workload " + p.model + "/" + p.dataset);
    (*w)[i].predicted_util = p.predicted;
    seen[i] = true;
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) return Status::Error("no leave-one-workload-out prediction for " + (*w)[i].Name());
  *source = "lowo:" + f.predict_algo;
  return Status::Ok();
}

nlohmann::ordered_json InterferenceJson(const std::vector<sim::WorkloadProfile>& w, const sim::InterferenceModel& m) {
  nlohmann::ordered_json j;
  j["coefficients"] = m.coef();
  j["measured_pairs"] = m.pairs().size();
  for (const char* g : {"pair", "model"}) {
    auto cv = sim::CrossValidate(w, DataDir() + "/lucid/colocate_info.csv", g);
    if (!cv.ok()) continue;
    j[std::string("cv_leave_one_") + g + "_out"] = {
        {"groups", cv->groups}, {"samples", cv->samples}, {"rate_mae", cv->mae}, {"rate_rmse", cv->rmse},
        {"mean_baseline_mae", cv->baseline_mae}, {"no_slowdown_mae", cv->no_slowdown_mae},
        {"combined_util_mae_pct", cv->util_mae}, {"combined_util_pairs", cv->util_pairs}};
  }
  auto g = sim::CheckAgainstGavel(m, w, DataDir() + "/gavel/simulation_throughputs.json");
  if (g.ok())
    j["gavel_v100_check"] = {{"pairs", g->pairs}, {"model_mae", g->model_mae}, {"no_slowdown_mae", g->no_slowdown_mae},
                             {"lucid_mean_mae", g->lucid_mean_mae}, {"gavel_mean_rate", g->gavel_mean_rate},
                             {"model_mean_rate", g->model_mean_rate}, {"pearson_r", g->corr}};
  return j;
}

int RunSimulate(const SimulateFlags& f) {
  const std::string data = DataDir();
  std::vector<std::string> policies;
  if (f.policy == "all") {
    for (const sim::PolicyRow& r : sim::Policies()) policies.push_back(r.name);
  } else {
    if (!sim::FindPolicy(f.policy)) {
      std::string names;
      for (const sim::PolicyRow& r : sim::Policies()) names += std::string(names.empty() ? "" : ", ") + r.name;
      return Fail("simulate", "unknown policy '" + f.policy + "': want all or one of " + names);
    }
    policies.push_back(f.policy);
  }
  if (f.cap <= 0) return Fail("simulate", "--cap must be positive");
  if (f.max_slowdown <= 0 || f.max_slowdown >= 1) return Fail("simulate", "--max-slowdown must be in (0, 1)");
  auto trace = sim::LoadTrace(f.trace, data, {f.jobs, f.skip_bad_lines});
  if (!trace.ok()) return Fail("simulate", trace.message());
  auto cluster = sim::ParseCluster(f.cluster.empty() ? trace->default_cluster : f.cluster, data);
  if (!cluster.ok()) return Fail("simulate", cluster.message());
  auto w = sim::LoadWorkloads(data + "/lucid/single_data.csv");
  if (!w.ok()) return Fail("simulate", w.message());
  bool need_pred = !f.predictions.empty();
  for (const std::string& p : policies) need_pred |= sim::FindPolicy(p)->needs_predictions;
  std::string pred_source = "none";
  if (need_pred) {
    Status s = LoadPredictions(f, &*w, &pred_source);
    if (!s.ok()) return Fail("simulate", "predicted utilization: " + s.message());
  }
  auto model = sim::InterferenceModel::Fit(*w, data + "/lucid/colocate_info.csv");
  if (!model.ok()) return Fail("simulate", model.message());

  const bool tty = ::isatty(2);
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  if (!f.json)
    std::printf("%-19s %6s %6s %10s %10s %10s %10s %11s %9s %8s\n", "policy", "util%", "work%", "jct_mean_s", "jct_p95_s",
                "queue_s", "makespan_s", "slowdown", "done", "events/s");
  for (const std::string& p : policies) {
    sim::SimConfig cfg;
    cfg.policy = p;
    cfg.seed = f.seed;
    cfg.options.cap = f.cap;
    cfg.options.max_slowdown = f.max_slowdown;
    cfg.options.profile_s = f.profile_s;
    if (tty)
      cfg.progress = [&p](double t, int64_t done, int64_t total) {
        std::fprintf(stderr, "\r%s: t=%.0f s, %lld/%lld jobs done   ", p.c_str(), t,
                     static_cast<long long>(done), static_cast<long long>(total));
      };
    auto t0 = std::chrono::steady_clock::now();
    auto r = sim::Simulate(*trace, *cluster, *w, *model, cfg);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (tty) std::fprintf(stderr, "\r%60s\r", "");
    if (!r.ok()) return Fail("simulate", r.message());
    std::string dir = policies.size() > 1 ? f.out + "/" + p : f.out;
    if (Status s = sim::WriteResult(*r, *w, dir); !s.ok()) return Fail("simulate", s.message());
    nlohmann::ordered_json s = nlohmann::ordered_json::parse(sim::SummaryJson(*r));
    s["predictions"] = pred_source;
    s["out"] = dir;
    s["wall_s"] = wall;
    all.push_back(s);
    if (!f.json)
      std::printf("%-19s %6.2f %6.2f %10.0f %10.0f %10.0f %10.0f %11.3f %4lld/%-4lld %8.0f\n", p.c_str(),
                  r->cluster_utilization, r->work_utilization, r->jct_mean_s, r->jct_p95_s, r->queue_mean_s, r->makespan_s,
                  r->mean_slowdown, static_cast<long long>(r->jobs_done), static_cast<long long>(r->jobs_total),
                  wall > 0 ? r->events / wall : 0.0);
  }
  nlohmann::ordered_json meta;
  meta["trace"] = trace->name;
  meta["jobs"] = trace->jobs.size();
  meta["trace_bad_lines"] = trace->bad_lines;
  meta["trace_filtered"] = trace->filtered;
  meta["trace_approximated"] = trace->approximated;
  meta["cluster"] = cluster->spec;
  meta["num_gpus"] = cluster->gpus.size();
  meta["seed"] = f.seed;
  meta["predictions"] = pred_source;
  meta["interference"] = InterferenceJson(*w, *model);
  meta["runs"] = all;
  if (policies.size() > 1) {
    std::ofstream(f.out + "/runs.json") << meta.dump(2) << "\n";
  } else {
    std::ofstream(f.out + "/run.json") << meta.dump(2) << "\n";
  }
  if (f.json) {
    std::cout << meta.dump(2) << "\n";
  } else {
    std::printf("trace %s: %zu jobs (%lld bad lines skipped, %lld non-GPU rows), cluster '%s' (%zu GPUs), "
                "predictions %s, seed %llu\nwrote %s\n",
                trace->name.c_str(), trace->jobs.size(), static_cast<long long>(trace->bad_lines),
                static_cast<long long>(trace->filtered), cluster->spec.c_str(), cluster->gpus.size(),
                pred_source.c_str(), static_cast<unsigned long long>(f.seed), f.out.c_str());
  }
  return 0;
}

}  // namespace

CLI::App* AddSimulate(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<SimulateFlags>();
  flags->catalog = HomeDir() + "/models/catalog.json";
  CLI::App* sub = root.add_subcommand("simulate", "Trace-driven cluster simulation of co-location policies");
  std::string pol;
  for (const sim::PolicyRow& r : sim::Policies()) pol += std::string("\n  ") + r.name + ": " + r.description;
  sub->add_option("--trace", flags->trace, "philly, alibaba2023, gavel, or a CSV path (docs/simulator.md)")->required();
  sub->add_option("--policy", flags->policy, "all, or one of:" + pol)->required();
  sub->add_option("--cluster", flags->cluster,
                  "'64x RTX3090', 'nodes=8,gpus_per_node=8[,mem_gib=24]', 'alibaba-nodes[:every=N]' "
                  "(default: per trace)");
  sub->add_option("--jobs", flags->jobs, "Keep the first N jobs by submit time");
  sub->add_option("--seed", flags->seed, "Seed of the workload assignment")->capture_default_str();
  sub->add_flag("--skip-bad-lines", flags->skip_bad_lines, "Skip and count malformed trace lines");
  sub->add_option("--cap", flags->cap, "Max sum of utilization per GPU, percent")->capture_default_str();
  sub->add_option("--max-slowdown", flags->max_slowdown, "interference-aware: max predicted slowdown per job")
      ->capture_default_str();
  sub->add_option("--profile-s", flags->profile_s, "profiling: solo run length, s")->capture_default_str();
  sub->add_option("--predictions", flags->predictions,
                  "CSV model,dataset,batchsize,amp,predicted_util (default: leave-one-workload-out "
                  "predictions of the predict layer)");
  sub->add_option("--predict-algo", flags->predict_algo, "Regressor for the LOWO predictions")->capture_default_str();
  sub->add_option("--catalog", flags->catalog, "Workload catalog (for LOWO predictions)")->capture_default_str();
  sub->add_option("--out", flags->out, "Output directory (one subdirectory per policy with --policy all)")->required();
  sub->add_flag("--json", flags->json, "Print the run summary as JSON");
  sub->callback([flags, exit_code] { *exit_code = RunSimulate(*flags); });
  return sub;
}

}  // namespace gpucast::cli
