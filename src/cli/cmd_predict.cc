// gpucast predict: predictor file + job graph(s) -> GPU utilization with an interval.
#include <cmath>
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
#include "features/site_gpus.h"
#include "graph/onnx_loader.h"
#include "predict/predict_json.h"
#include "predict/predictor.h"
#include "util/job_limits.h"
#include "util/json_text.h"

namespace gpucast::cli {
namespace {

struct PredictFlags {
  std::string gpu_table;  // --gpu-table
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
  if (Status t = InstallSiteGpuTable(f.gpu_table); !t.ok()) return Fail("predict", t.message());
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
  // A slice the GPU does not have is the flag's error, found before any graph is read (it came
  // from the features layer after the analysis, as "features: GPU ... has no MIG profile ...").
  // A name no GPU has is told as such first (POST /v1/predict's 400 "field 'mig': unknown MIG
  // profile ..."), then a profile this GPU lacks (its 422).
  if (!f.mig.empty()) {
    if (auto known = CanonicalMigProfile(f.mig); !known.ok()) return Fail("predict", "--mig: " + known.message());
    if (auto slice = ResolveGpu(job.gpu, f.mig); !slice.ok()) return Fail("predict", "--mig: " + slice.message());
  }
  job.gpus = f.gpus;
  job.nodes = f.nodes;
  job.interconnect = f.interconnect;
  if (Status s = CheckAttrKeysOnce(f.attrs); !s.ok()) return Fail("predict", s.message());
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
  const char* fit = !mem.available() ? "unknown" : mem.will_not_fit() ? "does not fit" : mem.fits() ? "fits"
                                                                                                    : "may not fit";
  std::vector<std::string> warnings;
  for (const CostReport& r : reports) warnings.insert(warnings.end(), r.warnings.begin(), r.warnings.end());
  warnings.insert(warnings.end(), res->warnings.begin(), res->warnings.end());
  if (!f.quiet)
    for (const std::string& w : warnings) std::cerr << "gpucast predict: warning: " << w << "\n";
  if (f.json) {
    // The prediction's fields as every front end gives them (predict/predict_json.h), and the inputs.
    nlohmann::json j = PredictionJson(*predictor, *res, job, f.level);
    j["models"] = f.models;
    j["warnings"] = warnings;
    j["schema"] = SchemaField("gpucast.predict");
    std::cout << JsonText(j, 2) << "\n";
  } else {
    std::printf("predicted GPU utilization on %s%s%s: %.1f%%  (%.0f%% interval %.1f-%.1f%%, %s; %s)\n",
                job.gpu.c_str(), job.mig_profile.empty() ? "" : " MIG ", job.mig_profile.c_str(), p.util,
                level * 100, p.low, p.high, predictor->model().algo().c_str(), target.c_str());
    if (std::isfinite(p.step_ms))
      std::printf("  step time: %.1f ms (%.0f%% interval %.1f-%.1f ms)%s\n", p.step_ms, level * 100, p.step_low_ms,
                  p.step_high_ms, job.gpus > 1 ? ", one rank's" : "");
    // Only when the model departs from the default (--json's power_limited_clock says it always).
    if (!info.power_limited_clock)
      std::printf("  boost clock: the model counts every GPU's compute peaks at its boost clock, not the "
                  "power-limited clock (docs/predictor.md)\n");
    if (!res->gpu_measured) {
      std::string m;
      for (const std::string& g : res->measured_gpus) m += (m.empty() ? "" : ", ") + g;
      std::printf("  GPU not measured: no training row ran on %s (measured: %s); the interval spans its unknown host\n",
                  job.gpu.c_str(), m.c_str());
    }
    if (res->unsure) {
      std::string why;
      for (const std::string& r : res->unsure_reasons) why += (why.empty() ? "" : "; ") + r;
      std::printf("  unsure: %s\n", why.c_str());
    }
    if (!res->seen_workload.empty()) {
      std::printf("  measured workload: %s (%zu training rows on this GPU type); its seen-workload correction applies\n",
                  res->seen_workload.c_str(), res->seen_rows);
    } else if (!res->measured_on.empty()) {
      std::string on;
      for (const std::string& g : res->measured_on) on += (on.empty() ? "" : ", ") + g;
      std::printf("  unseen here: the graph and job facts are %s's, measured on %s only; its correction is not carried "
                  "to %s\n",
                  res->same_graph_workload.c_str(), on.c_str(), job.gpu.c_str());
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
      std::printf("predicted GPU memory (peak): %.0f MiB  (interval %.0f-%.0f MiB at %.0f%%: low end a one-sided "
                  "%.1f%% bound, high end a one-sided %.1f%% bound; optimizer %s); %s the %.0f MiB of %s\n",
                  mem.mib, mem.low, mem.high, f.level * 100, 100 * (1 - MemoryLowAlpha(f.level)),
                  100 * MemoryHighLevel(f.level),
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
  AddGpuTable(sub, &flags->gpu_table);
  sub->add_option("--predictor,-p", flags->predictor, "Predictor file written by 'gpucast train'")->required();
  sub->add_option("--model,-m", flags->models,
                  "ONNX graph of the job; repeat for jobs of several networks (GAN G+D, actor+critic); "
                  "a file given k times is one network run k times per training step (its parameters "
                  "and optimizer step count once)")
      ->required();
  IntIn(sub->add_option("--batch,-b", flags->batch, "Batch size")->required(), 1, kMaxJobBatch);
  sub->add_flag("--amp", flags->amp, "Mixed precision training");
  sub->add_option("--dim", flags->dims, "Other symbolic dimension of the graph, NAME=VALUE (repeatable)");
  sub->add_option("--attr", flags->attrs, kJobAttrHelp);
  CLI::Option* gpu = sub->add_option("--gpu", flags->gpu,
                                     "GPU the job will run on: a name of 'gpucast gpus' or what nvidia-smi "
                                     "--query-gpu=name prints (default: the predictor's training GPU)");
  // `--gpu ""` (an unset variable in a script) is an error, as "gpu": "" is in the service's
  // request, not the predictor's default GPU.
  gpu->check(CLI::Validator(
      [](std::string& name) -> std::string {
        return name.empty() ? "unknown GPU '': want a name of 'gpucast gpus' (omit --gpu for the predictor's GPU)"
                            : "";
      },
      ""));
  sub->add_option("--mig", flags->mig, "MIG profile of --gpu the job will run in, e.g. 3g.40gb (default: whole GPU)");
  IntIn(sub->add_option("--gpus", flags->gpus,
                        "Data-parallel training (PyTorch DDP) on this many GPUs; --batch is per GPU; the answer is "
                        "one rank's utilization (docs/predictor.md)")
            ->capture_default_str(),
        1, kMaxJobGpus);
  IntIn(sub->add_option("--nodes", flags->nodes, "Nodes the --gpus are spread on evenly")->capture_default_str(), 1,
        kMaxJobGpus);
  sub->add_option("--interconnect", flags->interconnect,
                  "Links instead of the GPU table's, comma-separated: inside a node pcie | pcie<gen>x<lanes> | "
                  "nvlink | nvlink<gen>[x<links>]; between nodes ib<Gb/s>[x<nics>] | eth<Gb/s>[x<nics>] (default "
                  "eth100) | tcp[<Gb/s>] (NCCL over sockets, without RDMA: its achieved rate), e.g. pcie4x16,ib200");
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
