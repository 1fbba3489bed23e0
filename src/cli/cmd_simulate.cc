// gpucast simulate: trace-driven cluster simulation under one or every policy.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/json_layouts.h"
#include "cli/progress.h"
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
  std::string seeds;  // "1-5" or "1,3,7": one run per seed under OUT/seed-S
  bool skip_bad_lines = false, json = false, quiet = false;
  double cap = 100, max_slowdown = 0.25, profile_s = 60, profile_warmup_s = 10;
  double measure_noise = 5, observe_after_s = 70, migrate_cost_s = 60, migrate_z = 2;
};

// "1-5" / "1,3,7" / "4" -> seeds.
Result<std::vector<uint64_t>> ParseSeeds(const std::string& text) {
  std::vector<uint64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t dash = part.find('-');
    try {
      size_t used = 0;
      if (dash == std::string::npos) {
        uint64_t v = std::stoull(part, &used);
        if (used != part.size()) throw std::invalid_argument(part);
        out.push_back(v);
      } else {
        std::string a = part.substr(0, dash), b = part.substr(dash + 1);
        size_t ua = 0, ub = 0;
        uint64_t lo = std::stoull(a, &ua), hi = std::stoull(b, &ub);
        if (ua != a.size() || ub != b.size() || hi < lo || hi - lo > 1000) throw std::invalid_argument(part);
        for (uint64_t v = lo; v <= hi; ++v) out.push_back(v);
      }
    } catch (const std::exception&) {
      return Status::Error("--seeds '" + text + "': want N, A-B or a comma list of them");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (out.empty()) return Status::Error("--seeds '" + text + "': no seeds");
  return out;
}

// Out-of-sample (leave-one-workload-out) predicted utilization for every
// workload row, from --predictions CSV or the predict layer. Never the truth.
Status LoadPredictions(const SimulateFlags& f, std::vector<sim::WorkloadProfile>* w, std::string* source) {
  if (f.predictions == "oracle") {
    // The upper line of what prediction can give: the true utilization.
    for (sim::WorkloadProfile& x : *w) x.predicted_util = x.true_util;
    *source = "oracle";
    return Status::Ok();
  }
  if (!f.predictions.empty()) {
    *source = "csv:" + f.predictions;
    return sim::LoadPredictionsCsv(f.predictions, w);
  }
  const std::string csv = DataDir() + "/lucid/single_data.csv";
  ASSIGN_OR_RETURN(Catalog catalog, LoadCatalog(f.catalog.empty() ? DefaultCatalog() : f.catalog));
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

nlohmann::ordered_json InterferenceJson(const sim::InterferenceModel& m) {
  nlohmann::ordered_json j;
  j["beta"] = m.params().beta;
  j["switch_cost"] = m.params().switch_cost;
  j["measured_pairs"] = m.pairs().size();
  j["validation"] = "gpucast interference --validate --json";
  return j;
}

// Mean and sample standard deviation.
std::pair<double, double> MeanSd(const std::vector<double>& v) {
  double m = 0, ss = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) ss += (x - m) * (x - m);
  return {m, v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0};
}

int RunSimulate(const SimulateFlags& f) {
  const std::string data = DataDir();
  std::vector<std::string> policies;
  if (f.policy == "all") {
    for (const sim::PolicyRow& r : sim::Policies()) policies.push_back(r.name);
  } else {
    size_t pos = 0;
    while (true) {
      size_t comma = f.policy.find(',', pos);
      std::string name = f.policy.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      if (!sim::FindPolicy(name)) {
        std::string names;
        for (const sim::PolicyRow& r : sim::Policies()) names += std::string(names.empty() ? "" : ", ") + r.name;
        return Fail("simulate", "unknown policy '" + name + "': want all or a comma list of " + names);
      }
      policies.push_back(name);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  std::vector<uint64_t> seeds{f.seed};
  if (!f.seeds.empty()) {
    auto s = ParseSeeds(f.seeds);
    if (!s.ok()) return Fail("simulate", s.message());
    seeds = *s;
  }
  if (f.cap <= 0) return Fail("simulate", "--cap must be positive");
  if (f.profile_s <= 0 || f.profile_warmup_s < 0) return Fail("simulate", "--profile-s must be positive, --profile-warmup-s >= 0");
  if (f.measure_noise < 0) return Fail("simulate", "--measure-noise must be >= 0");
  if (f.observe_after_s <= 0) return Fail("simulate", "--observe-after-s must be positive");
  if (f.migrate_cost_s < 0) return Fail("simulate", "--migrate-cost-s must be >= 0");
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

  Progress progress("simulate", f.quiet);
  const bool multi_seed = seeds.size() > 1;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  if (!f.json)
    std::printf("%-20s %4s %7s %7s %7s %7s %10s %10s %10s %10s %9s %8s\n", "policy", "seed", "useful%", "ideal%",
                "busy%", "load", "jct_mean_s", "jct_p95_s", "queue_s", "makespan_s", "done", "events/s");
  for (uint64_t seed : seeds)
  for (const std::string& p : policies) {
    sim::SimConfig cfg;
    cfg.policy = p;
    cfg.seed = seed;
    cfg.predictions = pred_source;
    cfg.options.cap = f.cap;
    cfg.options.max_slowdown = f.max_slowdown;
    cfg.options.profile_s = f.profile_s;
    cfg.options.profile_warmup_s = f.profile_warmup_s;
    cfg.measure_noise_pct = f.measure_noise;
    cfg.options.observe_noise_pct = f.measure_noise;  // the observer knows its instrument
    cfg.options.migrate_z = f.migrate_z;
    cfg.observe_after_s = f.observe_after_s;
    cfg.migrate_cost_s = f.migrate_cost_s;
    const std::string run = p + " seed " + std::to_string(seed);
    cfg.progress = [&progress, &run](double t, int64_t done, int64_t total) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s: simulated time %.1f days, %lld/%lld jobs done", run.c_str(), t / 86400,
                    static_cast<long long>(done), static_cast<long long>(total));
      progress.Update(buf);
    };
    auto t0 = std::chrono::steady_clock::now();
    auto r = sim::Simulate(*trace, *cluster, *w, *model, cfg);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) return Fail("simulate", r.message());
    {
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s done in %.1f s: useful work %.2f%%, busy %.2f%%, JCT mean %.0f s, %lld jobs",
                    run.c_str(), wall, r->useful_work_utilization, r->cluster_utilization, r->jct_mean_s,
                    static_cast<long long>(r->jobs_done));
      progress.Result(buf);
    }
    std::string dir = f.out;
    if (multi_seed) dir += "/seed-" + std::to_string(seed);
    if (policies.size() > 1) dir += "/" + p;
    if (Status s = sim::WriteResult(*r, *w, dir); !s.ok()) return Fail("simulate", s.message());
    nlohmann::ordered_json s = nlohmann::ordered_json::parse(sim::SummaryJson(*r));
    s["out"] = dir;
    s["wall_s"] = wall;
    all.push_back(s);
    if (!f.json)
      std::printf("%-20s %4llu %7.2f %7.2f %7.2f %7.3f %10.0f %10.0f %10.0f %10.0f %9lld %8.0f\n", p.c_str(),
                  static_cast<unsigned long long>(seed), r->useful_work_utilization, r->ideal_work_utilization,
                  r->cluster_utilization, r->load_factor, r->jct_mean_s, r->jct_p95_s, r->queue_mean_s, r->makespan_s,
                  static_cast<long long>(r->jobs_done), wall > 0 ? r->events / wall : 0.0);
    std::fflush(stdout);  // each row as it finishes, also into a pipe
  }
  // Over seeds: mean and sd per policy of the headline metrics.
  nlohmann::ordered_json agg = nlohmann::ordered_json::object();
  if (multi_seed) {
    const char* keys[] = {"useful_work_utilization", "ideal_work_utilization", "cluster_utilization", "jct_mean_s",
                          "jct_p50_s", "jct_p95_s", "jct_p99_s", "queue_mean_s", "makespan_s", "load_factor",
                          "profiling_gpu_s", "migrations", "prediction_mae"};
    if (!f.json) std::printf("\nover seeds %s (mean +- sd):\n", f.seeds.c_str());
    for (const std::string& p : policies) {
      nlohmann::ordered_json e;
      for (const char* k : keys) {
        std::vector<double> v;
        for (const auto& r : all)
          if (r["policy"] == p && r[k].is_number()) v.push_back(r[k].get<double>());
        if (v.empty()) continue;
        auto [m, sd] = MeanSd(v);
        e[k] = {{"mean", m}, {"sd", sd}, {"n", v.size()}};
      }
      agg[p] = e;
      if (!f.json)
        std::printf("%-20s useful %.2f +- %.2f %%  busy %.2f +- %.2f %%  JCT mean %.1f +- %.1f h  queue %.1f +- %.1f h\n",
                    p.c_str(), e["useful_work_utilization"]["mean"].get<double>(),
                    e["useful_work_utilization"]["sd"].get<double>(), e["cluster_utilization"]["mean"].get<double>(),
                    e["cluster_utilization"]["sd"].get<double>(), e["jct_mean_s"]["mean"].get<double>() / 3600,
                    e["jct_mean_s"]["sd"].get<double>() / 3600, e["queue_mean_s"]["mean"].get<double>() / 3600,
                    e["queue_mean_s"]["sd"].get<double>() / 3600);
    }
  }
  nlohmann::ordered_json meta;
  meta["schema"] = SchemaField("gpucast.simulate");
  meta["trace"] = trace->name;
  meta["jobs"] = trace->jobs.size();
  meta["trace_bad_lines"] = trace->bad_lines;
  meta["trace_filtered"] = trace->filtered;
  meta["trace_approximated"] = trace->approximated;
  meta["cluster"] = cluster->spec;
  meta["num_gpus"] = cluster->gpus.size();
  meta["seed"] = f.seed;
  if (multi_seed) meta["seeds"] = seeds;
  meta["predictions"] = pred_source;
  meta["measure_noise_pct"] = f.measure_noise;
  meta["migrate_z"] = f.migrate_z;
  meta["profile_warmup_s"] = f.profile_warmup_s;
  meta["profile_s"] = f.profile_s;
  meta["observe_after_s"] = f.observe_after_s;
  meta["migrate_cost_s"] = f.migrate_cost_s;
  meta["interference"] = InterferenceJson(*model);
  meta["runs"] = all;
  if (multi_seed) meta["over_seeds"] = agg;
  std::error_code ec;
  std::filesystem::create_directories(f.out, ec);
  if (policies.size() > 1 || multi_seed) {
    std::ofstream(f.out + "/runs.json") << meta.dump(2) << "\n";
  } else {
    std::ofstream(f.out + "/run.json") << meta.dump(2) << "\n";
  }
  if (f.json) {
    std::cout << meta.dump(2) << "\n";
  } else {
    std::printf("trace %s: %zu jobs (%lld bad lines skipped, %lld non-GPU rows), cluster '%s' (%zu GPUs), "
                "predictions %s, seed %llu\nwrote %s (placements.csv has every job's GPU intervals)\n",
                trace->name.c_str(), trace->jobs.size(), static_cast<long long>(trace->bad_lines),
                static_cast<long long>(trace->filtered), cluster->spec.c_str(), cluster->gpus.size(),
                pred_source.c_str(), static_cast<unsigned long long>(f.seed), f.out.c_str());
  }
  return 0;
}

}  // namespace

CLI::App* AddSimulate(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* sub = root.add_subcommand("simulate", "Trace-driven cluster simulation of co-location policies");
  std::string pol;
  for (const sim::PolicyRow& r : sim::Policies()) pol += std::string("\n  ") + r.name + ": " + r.description;
  sub->add_option("--trace", flags->trace, "philly, alibaba2023, gavel, or a CSV path (docs/simulator.md)")->required();
  sub->add_option("--policy", flags->policy, "all, or one or a comma list of:" + pol)->required();
  sub->add_option("--cluster", flags->cluster,
                  "'64x RTX3090', 'nodes=8,gpus_per_node=8[,mem_gib=24]', 'alibaba-nodes[:every=N]' "
                  "(default: per trace)");
  sub->add_option("--jobs", flags->jobs, "Keep the first N jobs by submit time");
  sub->add_option("--seed", flags->seed, "Seed of the workload assignment and measurement noise")->capture_default_str();
  sub->add_option("--seeds", flags->seeds, "Several seeds, e.g. 1-5 or 1,3,7: one run each under OUT/seed-S, "
                  "mean +- sd in runs.json (over_seeds)");
  sub->add_flag("--skip-bad-lines", flags->skip_bad_lines, "Skip and count malformed trace lines");
  sub->add_option("--cap", flags->cap, "Max sum of utilization per GPU, percent")->capture_default_str();
  sub->add_option("--max-slowdown", flags->max_slowdown, "interference-aware: max predicted slowdown per job")
      ->capture_default_str();
  sub->add_option("--profile-s", flags->profile_s, "profiling: measured window of the solo run, s")->capture_default_str();
  sub->add_option("--profile-warmup-s", flags->profile_warmup_s, "profiling: solo warm-up before the window, s")
      ->capture_default_str();
  sub->add_option("--measure-noise", flags->measure_noise,
                  "sd of a utilization measurement (profiling window, feedback observation), percent points")
      ->capture_default_str();
  sub->add_option("--observe-after-s", flags->observe_after_s,
                  "predictive-feedback: observe a running job's utilization after this long, s")
      ->capture_default_str();
  FloatIn(sub->add_option("--migrate-z", flags->migrate_z,
                  "predictive-feedback: migrate off a GPU only when its estimated sum exceeds the cap by more "
                  "than this many sd of the observations' noise (--measure-noise x sqrt(observed jobs)); 0: at any excess")
              ->capture_default_str(),
          0.0, 10.0);
  sub->add_option("--migrate-cost-s", flags->migrate_cost_s,
                  "predictive-feedback: progress a migrated job loses (checkpoint-restart), s")
      ->capture_default_str();
  sub->add_option("--predictions", flags->predictions,
                  "oracle (the true utilization: the upper line of prediction), or a CSV "
                  "model,dataset,batchsize,amp,predicted_util (default: leave-one-workload-out "
                  "predictions of the predict layer)");
  sub->add_option("--predict-algo", flags->predict_algo, "Regressor for the LOWO predictions")->capture_default_str();
  sub->add_option("--catalog", flags->catalog, "Workload catalog (for LOWO predictions)")
      ->default_str(kDefaultCatalogShown);
  sub->add_option("--out", flags->out, "Output directory (one subdirectory per policy with --policy all)")->required();
  sub->add_flag("--json", flags->json, "Print the run summary as JSON (schema gpucast.simulate; docs/json.md)");
  sub->add_flag("--quiet,-q", flags->quiet,
                "No progress on stderr (by default each run's result is printed there as it finishes, and "
                "where a long one is every 5 s)");
  sub->footer(kPathsFooter);
  sub->callback([flags, exit_code] { *exit_code = RunSimulate(*flags); });
  return sub;
}

}  // namespace gpucast::cli
