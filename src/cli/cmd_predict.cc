// gpucast predict: predictor file + job graph(s) -> GPU utilization with an interval.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cost/cost.h"
#include "cost/job_cost.h"
#include "features/features.h"
#include "graph/onnx_loader.h"
#include "predict/predictor.h"

namespace gpucast::cli {
namespace {

struct PredictFlags {
  std::string predictor;
  std::vector<std::string> models;
  int64_t batch = 0;
  bool amp = false;
  std::vector<std::string> dims;
  std::vector<std::string> attrs;
  std::string gpu;  // "" = the predictor's default GPU
  std::string mig;  // "" = whole GPU
  double level = kDefaultIntervalLevel;
  bool json = false;
};

int RunPredict(const PredictFlags& f) {
  LoadOptions lo;
  lo.batch = f.batch;
  if (Status s = ParseDimFlags(f.dims, &lo.dims); !s.ok()) return Fail("predict", s.message());
  auto predictor = Predictor::Load(f.predictor);
  if (!predictor.ok()) return Fail("predict", predictor.message());
  JobConfig job;
  job.batch = f.batch;
  job.amp = f.amp;
  job.gpu = f.gpu.empty() ? predictor->info().gpu : f.gpu;
  job.mig_profile = f.mig;
  for (const std::string& kv : f.attrs)
    if (Status s = ParseJobAttr(kv, &job.attrs); !s.ok()) return Fail("predict", s.message());
  // One network per distinct file (a repeated file: more passes, one update);
  // a graph with nodes that cannot be costed is refused (src/cost/job_cost.h).
  auto job_reports = JobStepReports(f.models, lo, CostOptions{.amp = f.amp});
  if (!job_reports.ok()) return Fail("predict", job_reports.message());
  const std::vector<CostReport>& reports = *job_reports;
  auto res = predictor->Predict(reports, job, f.level);
  if (!res.ok()) return Fail("predict", res.message());
  const UtilPrediction& p = res->prediction;
  const PredictorInfo& info = predictor->info();
  bool calibrated = !predictor->model().calibration().empty();
  double level = calibrated ? f.level : predictor->model().regressor().Params().value("interval", 0.0);
  std::string target = Predictor::TargetFor(job.mig_profile);
  const LowoAccuracy& acc = info.accuracy;
  if (f.json) {
    nlohmann::json feats = nlohmann::json::object();
    for (size_t i = 0; i < info.feature_names.size(); ++i) feats[info.feature_names[i]] = res->features[i];
    nlohmann::json used = nlohmann::json::array();
    for (size_t c : predictor->model().columns()) used.push_back(info.feature_names[c]);
    nlohmann::json j = {{"gpu_util", p.util},
                        {"interval", {{"low", p.low}, {"high", p.high}, {"level", level},
                                      {"calibrated", calibrated}}},
                        {"gpu", job.gpu},
                        {"mig_profile", job.mig_profile},
                        {"target", target},
                        {"algo", predictor->model().algo()},
                        {"models", f.models},
                        {"batch", f.batch},
                        {"amp", f.amp},
                        {"feature_schema", {{"name", info.schema_name}, {"version", info.schema_version}}},
                        {"features", feats},
                        {"features_used", used}};
    // Whether the job is a measured one (its correction applied) and the
    // error to expect for an unseen one (the model file's own lowo pass).
    j["workload"] = {{"seen", !res->seen_workload.empty()},
                     {"measured_workload", res->seen_workload.empty() ? nlohmann::json(nullptr)
                                                                      : nlohmann::json(res->seen_workload)},
                     {"measured_rows", res->seen_rows},
                     {"same_graph_workload", res->same_graph_workload.empty()
                                                 ? nlohmann::json(nullptr)
                                                 : nlohmann::json(res->same_graph_workload)},
                     {"differing_facts", res->differing_facts}};
    if (acc.workloads > 0) {
      j["expected_error_unseen"] = {{"workloads", acc.workloads},
                                    {"rows", acc.rows},
                                    {"rmsle", acc.rmsle},
                                    {"median_workload_rmsle", acc.median_workload_rmsle},
                                    {"mae_points", acc.mae_points},
                                    {"median_abs_error_points", acc.median_abs_error_points},
                                    {"interval_level", acc.level},
                                    {"interval_coverage", acc.coverage},
                                    {"interval_median_width_points", acc.median_width_points}};
    } else {
      j["expected_error_unseen"] = nullptr;
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("predicted GPU utilization on %s%s%s: %.1f%%  (%.0f%% interval %.1f-%.1f%%, %s; %s)\n",
                job.gpu.c_str(), job.mig_profile.empty() ? "" : " MIG ", job.mig_profile.c_str(), p.util,
                level * 100, p.low, p.high, predictor->model().algo().c_str(), target.c_str());
    if (!res->seen_workload.empty()) {
      std::printf("  measured workload: %s (%zu training rows); its seen-workload correction applies\n",
                  res->seen_workload.c_str(), res->seen_rows);
    } else if (!res->same_graph_workload.empty()) {
      std::string diff;
      for (const std::string& d : res->differing_facts) diff += (diff.empty() ? "" : "; ") + d;
      std::printf("  unseen job: the graph is %s's, measured with other job facts (%s); no correction\n",
                  res->same_graph_workload.c_str(), diff.c_str());
    } else {
      std::printf("  unseen workload: no measured job has this graph\n");
    }
    if (acc.workloads > 0) {
      std::printf("  expected error on an unseen workload (this model's leave-one-workload-out pass, %zu workloads): "
                  "RMSLE %.2f, median |error| %.1f points, mean %.1f; the %.0f%% interval held %.0f%% of them "
                  "(median width %.0f points)\n",
                  acc.workloads, acc.rmsle, acc.median_abs_error_points, acc.mae_points, acc.level * 100,
                  acc.coverage * 100, acc.median_width_points);
    } else {
      std::printf("  expected error: unknown (the model was trained without a leave-one-workload-out pass)\n");
    }
  }
  return 0;
}

}  // namespace

CLI::App* AddPredict(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<PredictFlags>();
  CLI::App* sub = root.add_subcommand("predict", "Predict a training job's mean GPU utilization from its graph");
  sub->add_option("--predictor,-p", flags->predictor, "Predictor file written by 'gpucast train'")->required();
  sub->add_option("--model,-m", flags->models,
                  "ONNX graph of the job; repeat for jobs of several networks (GAN G+D, actor+critic); "
                  "a file given k times is one network run k times per training step (its parameters "
                  "and optimizer step count once)")
      ->required();
  sub->add_option("--batch,-b", flags->batch, "Batch size")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 62));
  sub->add_flag("--amp", flags->amp, "Mixed precision training");
  sub->add_option("--dim", flags->dims, "Other symbolic dimension of the graph, NAME=VALUE (repeatable)");
  sub->add_option("--attr", flags->attrs,
                  "Job attribute KEY=VALUE (repeatable): loader_workers=N (0 = data loaded in the training "
                  "process), data_on_gpu=0|1, rl_env=0|1 (CPU-simulated environment in the loop); all optional");
  sub->add_option("--gpu", flags->gpu, "GPU type the job will run on (default: the predictor's training GPU)");
  sub->add_option("--mig", flags->mig, "MIG profile of --gpu the job will run in, e.g. 3g.40gb (default: whole GPU)");
  sub->add_option("--level", flags->level, "Central probability of the interval (calibrated predictors)")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 0.99));
  sub->add_flag("--json", flags->json,
                "Print one JSON object: gpu_util (0-100), interval {low, high, level, calibrated}, gpu, "
                "mig_profile, target (the counter predicted), workload {seen, measured_workload, ...}, "
                "expected_error_unseen (the model's leave-one-workload-out figures), features used");
  sub->footer("The interval is split-conformal, calibrated by leave-one-workload-out on the training rows: see "
              "docs/predictor.md.");
  sub->callback([flags, exit_code] { *exit_code = RunPredict(*flags); });
  return sub;
}

}  // namespace gpucast::cli
