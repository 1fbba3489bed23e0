// gpucast train: measured CSV + catalog graphs -> predictor file.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/progress.h"
#include "cli/observations_cli.h"
#include "features/site_gpus.h"
#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/physics.h"
#include "predict/predictor.h"
#include "predict/regressor.h"

namespace gpucast::cli {
namespace {

struct TrainFlags {
  std::string gpu_table;  // --gpu-table
  std::vector<std::string> data;
  std::string gpu;  // GPU of rows without a gpu column ("" = the catalog's)
  std::string mig;
  std::string out;
  std::string catalog;
  std::string algo = kDefaultAlgo;
  uint64_t seed = 0;
  std::string features;  // empty: the algorithm's default (DefaultFeatureSet)
  std::string observations;  // service database whose observed jobs are added as rows
  bool power_limited_clock = kDefaultPowerLimitedClock;
  bool tensor_core_split = false;  // physics' tensor_core_split in every model fitted (predict/physics.h)
  bool quiet = false;
};

int RunTrain(TrainFlags f) {
  if (Status t = InstallSiteGpuTable(f.gpu_table); !t.ok()) return Fail("train", t.message());
  if (f.data.empty()) f.data = DefaultDataCsvs();
  if (f.catalog.empty()) f.catalog = DefaultCatalog();
  auto catalog = LoadCatalog(f.catalog);
  if (!catalog.ok()) return Fail("train", catalog.message());
  auto data = BuildDataset(f.data, *catalog, DatasetOptions{f.gpu, f.mig, f.power_limited_clock});
  if (!data.ok()) return Fail("train", data.message());
  if (!f.observations.empty()) {
    auto added = AddObservedJobs("train", f.observations, *catalog, &*data);
    if (!added.ok()) return Fail("train", added.message());
    std::cout << "observed jobs from " << f.observations << ": " << *added << " rows\n";
  }
  std::string features = f.features.empty() ? DefaultFeatureSet(f.algo) : f.features;
  Progress progress("train", f.quiet);
  progress.Result(std::to_string(data->rows.size()) + " rows of " + std::to_string(data->groups.size()) +
                  " workloads loaded and costed; fitting " + f.algo);
  RegressorOptions regressor;
  regressor.tensor_core_split = f.tensor_core_split;
  auto p = Predictor::Train(*data, f.algo, f.seed, features, [&progress](const std::string& c, double rmsle) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", rmsle);
    progress.Result("auto: " + c + " scored " + buf + " (median per-workload RMSLE, leave-one-workload-out)");
  }, regressor);
  if (!p.ok()) return Fail("train", p.message());
  if (Status s = p->Save(f.out); !s.ok()) return Fail("train", s.message());
  for (const auto& [c, r] : p->info().selection)
    std::cout << "auto: " << c << " median per-workload RMSLE (leave-one-workload-out over the training rows) " << r << "\n";
  std::string labels;  // the GPU types of the rows with a measured utilization
  for (const std::string& g : p->model().measured_gpus()) labels += (labels.empty() ? "" : "+") + g;
  if (labels.empty()) labels = data->gpu;
  std::cout << "trained " << p->model().algo() << " (features " << p->info().feature_set << ") on " << data->rows.size() << " rows (" << data->groups.size()
            << " workloads, " << data->feature_names.size() << " features, " << data->schema_name << " v"
            << data->schema_version << ", labels from " << labels << ", data " << data->digest
            << ") -> " << f.out << "\n";
  if (const MemoryModel* m = p->memory()) {
    const MemoryParams& mp = m->params();
    std::printf("GPU memory model on %zu rows with a memory column: context", m->rows());
    for (const auto& [arch, mib] : mp.context_base_mib) std::printf(" %s %.0f MiB + per SM", arch.c_str(), mib);
    // Chips apart from their architecture's only when an architecture has rows of several.
    if (mp.chip_context_base_mib.size() > mp.context_base_mib.size())
      for (const auto& [chip, mib] : mp.chip_context_base_mib) std::printf(" (%s %.0f)", chip.c_str(), mib);
    std::printf("; cuDNN %.0f MiB%s; %.2f MiB per SM%s; activations x%.3f; largest tensor x%.3f; %s\n", mp.cudnn_mib,
                mp.cudnn_mib_fitted ? "" : " (not fitted)", mp.mib_per_sm, mp.mib_per_sm_fitted ? "" : " (default)",
                mp.activation_factor, mp.transient_factor,
                m->calibration().empty() ? "uncalibrated (fewer than 3 workloads)" : "calibrated (leave one workload out)");
  } else {
    std::printf("no GPU memory model: no training row has a memory column (gmem, gmem_mib)\n");
  }
  return 0;
}

}  // namespace

CLI::App* AddTrain(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* sub = root.add_subcommand(
      "train", "Fit a utilization predictor on measured jobs joined with their graphs; write a model file");
  AddGpuTable(sub, &flags->gpu_table);
  sub->add_option("--data", flags->data,
                  "Measurement CSV, repeatable: Lucid's (model,dataset,batchsize,amp,speed,gpu_util,...) or "
                  "MIGProfiler's (gpu,mig_profile,model,dataset,batchsize,seq_length,...,step_ms,gpu_util,...)")
      ->default_str(kDefaultDataCsvShown);
  sub->add_option("--gpu", flags->gpu,
                  "GPU the rows without a gpu column ran on (default: the catalog's, RTX3090)");
  sub->add_option("--mig", flags->mig, "MIG profile of the rows without a mig_profile column (default: whole GPU)");
  sub->add_option("--out,-o", flags->out, "Predictor file to write (JSON)")->required();
  sub->add_option("--catalog", flags->catalog, "Workload catalog mapping CSV workloads to ONNX graphs")
      ->default_str(kDefaultCatalogShown);
  std::string algos;
  for (const AlgoRow& a : Algorithms()) algos += std::string("\n  ") + a.name + ": " + a.description;
  sub->add_option("--algo", flags->algo,
                  "Regressor:" + algos +
                      "\n  auto: each of the above on its own feature set scored by leave-one-workload-out over "
                      "the training rows; the best is fit (docs/predictor.md)")
      ->capture_default_str();
  std::string sets;
  for (const std::string& s : FeatureSetNames()) sets += (sets.empty() ? "" : ", ") + s;
  sub->add_option("--features", flags->features,
                  "Feature subset the model reads: " + sets +
                      " (default: the algorithm's own, chosen by the lowo evaluation; docs/predictor.md)");
  sub->add_option("--seed", flags->seed, "Random seed of the regressor (reproducible)")->capture_default_str();
  sub->add_option("--observations", flags->observations,
                  "Service database (gpucast serve --db): also train on its observed jobs, one row per job "
                  "and GPU, labelled with the sample-weighted mean of its observations (docs/predictor.md)");
  AddPowerLimitedClock(sub, &flags->power_limited_clock,
                      "recorded in the predictor file: every front end that loads it computes features the same way");
  AddTensorCoreSplit(sub, &flags->tensor_core_split, "recorded in the predictor file (the physics model's tensor_core_split)");
  sub->add_flag("--quiet,-q", flags->quiet, "No progress on stderr (each selection candidate's score as it is done)");
  sub->footer(std::string("See docs/predictor.md for the features, the algorithms and their evaluation. ") +
              kPathsFooter);
  sub->callback([flags, exit_code] { *exit_code = RunTrain(*flags); });
  return sub;
}

}  // namespace gpucast::cli
