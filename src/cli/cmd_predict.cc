// gpucast predict: predictor file + job graph(s) -> GPU utilization with an interval.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/json_layouts.h"
#include "cost/cost.h"
#include "cost/job_cost.h"
#include "features/features.h"
#include "features/gpu_specs.h"
#include "features/memory.h"
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
  int gpus = 1;     // data-parallel ranks (--batch per GPU)
  int nodes = 1;
  std::string interconnect;
  double level = kDefaultIntervalLevel;
  double max_seconds = kDefaultMaxSeconds;
  bool json = false;
  bool quiet = false;
};

int RunPredict(const PredictFlags& f) {
  ArmDeadline("predict", f.max_seconds);
  LoadOptions lo;
  lo.batch = f.batch;
  lo.limits.max_seconds = f.max_seconds;
  if (Status s = ParseDimFlags(f.dims, &lo.dims); !s.ok()) return Fail("predict", s.message());
  auto predictor = Predictor::Load(f.predictor);
  if (!predictor.ok()) return Fail("predict", predictor.message());
  JobConfig job;
  job.batch = f.batch;
  job.amp = f.amp;
  job.gpu = f.gpu.empty() ? predictor->info().gpu : f.gpu;
  if (auto canonical = CanonicalGpuName(job.gpu); canonical.ok()) {
    job.gpu = *canonical;  // "Tesla V100-SXM2-32GB" -> V100-32GB in the output
  } else {
    return Fail("predict", "--gpu: " + canonical.message());
  }
  job.mig_profile = f.mig;
  job.gpus = f.gpus;
  job.nodes = f.nodes;
  job.interconnect = f.interconnect;
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
  // GPU memory: the point, its interval and whether it fits the GPU or slice.
  const MemoryPrediction& mem = res->memory;
  const MemoryModel* mm = predictor->memory();
  const char* fit = !mem.available() ? "unknown" : mem.will_not_fit() ? "does not fit" : mem.fits() ? "fits"
                                                                                                    : "may not fit";
  std::vector<std::string> warnings;
  for (const CostReport& r : reports) warnings.insert(warnings.end(), r.warnings.begin(), r.warnings.end());
  if (!f.quiet)
    for (const std::string& w : warnings) std::cerr << "gpucast predict: warning: " << w << "\n";
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
                        {"features_used", used},
                        {"gpus", job.gpus},
                        {"nodes", job.nodes},
                        {"warnings", warnings},
                        {"schema", SchemaField("gpucast.predict")}};
    if (res->data_parallel) {
      const DataParallelResult& dp = *res->data_parallel;
      const Interconnect& ic = *res->interconnect;
      auto link = [](const Link& l) {
        return nlohmann::json{{"name", l.name}, {"kind", l.kind}, {"gbps_per_direction", l.bandwidth / 1e9},
                              {"from", l.from}};
      };
      nlohmann::json d = {
          // Flat names: the top-level gpu_util / interval keys stay the only ones of their name.
          {"single_gpu_util", res->single_gpu->util},
          {"single_gpu_interval", {res->single_gpu->low, res->single_gpu->high}},
          {"single_gpu_step_ms", dp.single_step_s * 1e3},
          {"step_ms", dp.step_s * 1e3},
          {"scaling_efficiency", dp.scaling_efficiency},
          {"compute_util", dp.compute_util},
          {"allreduce_bytes", dp.allreduce_bytes},
          {"wire_bytes_per_rank", dp.wire_bytes},
          {"buckets", dp.buckets},
          {"link_gbps", dp.link_bandwidth / 1e9},
          {"comm_ms", dp.comm_s * 1e3},
          {"exposed_comm_ms", dp.exposed_s * 1e3},
          {"added_step_ms", dp.added_s * 1e3},
          {"intra_node", link(ic.intra)},
          {"counter", "NCCL kernels counted busy (nvidia-smi utilization.gpu counts any running kernel)"}};
      if (ic.nodes > 1) d["inter_node"] = link(ic.inter);
      j["data_parallel"] = d;
    }
    // NaN (no memory model in the predictor file) is written as null.
    j["gpu_mem_mib"] = mem.mib;
    j["gpu_mem_interval"] = {{"low", mem.low},
                             {"high", mem.high},
                             {"level", f.level},
                             {"high_level", std::max(kMemoryHighLevel, (1 + f.level) / 2)},
                             {"widened_mib", mem.widened_mib},
                             {"calibrated", mm && !mm->calibration().empty()}};
    j["gpu_mem_capacity_mib"] = mem.capacity_mib;
    j["gpu_mem_fit"] = fit;
    j["optimizer"] = OptimizerName(res->memory_estimate.optimizer);
    nlohmann::json parts = nlohmann::json::object();
    if (mm)
      for (const auto& [name, mib] :
           mm->Components(res->memory_estimate,
                          !res->seen_workload.empty() ? res->seen_workload : res->same_graph_workload))
        parts[name] = mib;
    j["gpu_mem_components_mib"] = parts;
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
    if (res->data_parallel) {
      const DataParallelResult& dp = *res->data_parallel;
      const Interconnect& ic = *res->interconnect;
      std::printf("  one rank of %d GPUs on %d node%s (%s%s%s): single GPU %.1f%%; step %.1f -> %.1f ms "
                  "(scaling efficiency %.3f); all-reduce %.1f MB in %d buckets, %.2f ms, %.2f ms exposed; "
                  "compute share %.1f%%\n",
                  ic.gpus, ic.nodes, ic.nodes == 1 ? "" : "s", ic.intra.name.c_str(), ic.nodes > 1 ? ", " : "",
                  ic.nodes > 1 ? (ic.inter.name + (ic.inter.from == "default" ? " assumed" : "")).c_str() : "",
                  res->single_gpu->util, dp.single_step_s * 1e3, dp.step_s * 1e3, dp.scaling_efficiency,
                  dp.allreduce_bytes / 1e6, dp.buckets, dp.comm_s * 1e3, dp.exposed_s * 1e3, dp.compute_util);
    }
    const std::string where = job.mig_profile.empty() ? job.gpu : job.gpu + " MIG " + job.mig_profile;
    if (mem.available())
      std::printf("predicted GPU memory (peak): %.0f MiB  (interval %.0f-%.0f MiB: low end at %.0f%%, high end a "
                  "one-sided %.1f%% bound; optimizer %s); %s the %.0f MiB of %s\n",
                  mem.mib, mem.low, mem.high, f.level * 100, 100 * std::max(kMemoryHighLevel, (1 + f.level) / 2),
                  OptimizerName(res->memory_estimate.optimizer), fit, mem.capacity_mib, where.c_str());
    else
      std::printf("predicted GPU memory: unknown (the predictor file has no memory model: its training rows had no "
                  "memory column)\n");
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
  IntIn(sub->add_option("--batch,-b", flags->batch, "Batch size")->required(), 1);
  sub->add_flag("--amp", flags->amp, "Mixed precision training");
  sub->add_option("--dim", flags->dims, "Other symbolic dimension of the graph, NAME=VALUE (repeatable)");
  sub->add_option("--attr", flags->attrs,
                  "Job attribute KEY=VALUE (repeatable): loader_workers=N (0 = data loaded in the training "
                  "process), data_on_gpu=0|1, rl_env=0|1 (CPU-simulated environment in the loop), "
                  "loader_ms_per_sample=MS, env_steps_per_update=N, optimizer=sgd|sgd_momentum|adam|adamw "
                  "(GPU memory; default adam); all optional");
  sub->add_option("--gpu", flags->gpu,
                  "GPU the job will run on: a name of 'gpucast gpus' or what nvidia-smi --query-gpu=name prints "
                  "(default: the predictor's training GPU)");
  sub->add_option("--mig", flags->mig, "MIG profile of --gpu the job will run in, e.g. 3g.40gb (default: whole GPU)");
  IntIn(sub->add_option("--gpus", flags->gpus,
                        "Data-parallel training (PyTorch DDP) on this many GPUs; --batch is per GPU; the answer is "
                        "one rank's utilization (docs/predictor.md)")
            ->capture_default_str(),
        1, 65536);
  IntIn(sub->add_option("--nodes", flags->nodes, "Nodes the --gpus are spread on evenly")->capture_default_str(), 1,
        65536);
  sub->add_option("--interconnect", flags->interconnect,
                  "Links instead of the GPU table's, comma-separated: inside a node pcie | pcie<gen>x<lanes> | "
                  "nvlink | nvlink<gen>[x<links>]; between nodes ib<Gb/s>[x<nics>] | eth<Gb/s>[x<nics>] (default "
                  "eth100), e.g. pcie4x16,ib200");
  FloatIn(sub->add_option("--level", flags->level, "Central probability of the interval (calibrated predictors)")
              ->capture_default_str(),
          0.01, 0.99);
  AddMaxSeconds(sub, &flags->max_seconds);
  sub->add_flag("--quiet,-q", flags->quiet, "No warnings on stderr (they stay in --json's \"warnings\")");
  sub->add_flag("--json", flags->json,
                "Print one JSON object (schema gpucast.predict; docs/json.md): gpu_util (0-100), interval {low, "
                "high, level, calibrated}, gpu, mig_profile, target (the counter predicted), features used, "
                "warnings; gpu_mem_mib, gpu_mem_interval {low, high, level, calibrated} (MiB; one rank's with "
                "--gpus), gpu_mem_capacity_mib, gpu_mem_fit (fits: the high end fits the GPU or slice; may not "
                "fit; does not fit: the point is above it), gpu_mem_components_mib; with --gpus > 1 data_parallel: "
                "single_gpu_util, single_gpu_interval [low, high], single_gpu_step_ms, step_ms, scaling_efficiency, "
                "compute_util, allreduce_bytes, wire_bytes_per_rank, link_gbps, comm_ms, exposed_comm_ms, "
                "intra_node / inter_node links; workload {seen, measured_workload, measured_rows, "
                "same_graph_workload, differing_facts}; expected_error_unseen (the model file's own "
                "leave-one-workload-out figures: rmsle, median_abs_error_points, interval_coverage, ...)");
  sub->footer("The intervals (utilization and GPU memory) are split-conformal, calibrated by leave-one-workload-out "
              "on the training rows: see docs/predictor.md.");
  sub->callback([flags, exit_code] { *exit_code = RunPredict(*flags); });
  return sub;
}

}  // namespace gpucast::cli
