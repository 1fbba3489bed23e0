// Step time against measurements that have no utilization (docs/predictor.md
// "Step time: Pollux and Zeus"): ../shared/data/pollux-t4 (step and gradient
// synchronisation times of data-parallel training on T4 GPUs) and
// ../shared/data/zeus (epoch times of one job on A40, V100, RTX 6000 and
// P100: their ratios are step-time ratios). The predictor never trains on
// these rows, so every job and every GPU of them is held out.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "predict/catalog.h"
#include "predict/predictor.h"
#include "util/status.h"

namespace gpucast {

// A job of those data sets rebuilt from its training code (tools/export_pollux.py,
// docs/predictor.md): the graph files (names in the catalog's directory), dims,
// AMP and the job facts the code fixes.
struct StepJob {
  std::string source;  // "pollux-t4" or "zeus"
  std::string key;     // pollux: the folder ("cifar10"); zeus: "dataset/network"
  std::string name;    // "ResNet-18/CIFAR-10"
  std::vector<std::string> files;
  std::map<std::string, int64_t> dims;
  bool amp = false;
  JobAttrs attrs;
  std::string notes;   // where the sizes come from
};
// The table; jobs of the data without a graph are listed with no files and the reason in notes.
const std::vector<StepJob>& StepJobs();

// One measured run.
struct StepRun {
  const StepJob* job = nullptr;
  std::string gpu;        // spec key (T4; Zeus: A40, V100-PCIE-32GB, ...)
  std::string placement;  // pollux: digits per node ("22"); "" for scalability rows and zeus
  int gpus = 1, nodes = 1;
  int64_t batch = 0;      // per GPU
  double step_s = 0;      // pollux: measured; zeus: epoch seconds (only ratios are meaningful)
  double sync_s = -1;     // pollux: measured gradient synchronisation seconds; < 0: none
  std::string file;       // CSV it came from
  int line = 0;
};
// Reads a pollux-t4 folder (DIR/<job>/placements.csv and scalability.csv) or a
// zeus folder (DIR/summary_power_<gpu>.csv, the run at each job and batch's
// highest power limit); which one is told by what DIR holds. Rows of jobs
// with no graph are skipped (counted in `skipped`).
Result<std::vector<StepRun>> ReadStepRuns(const std::string& dir, std::map<std::string, size_t>* skipped);

struct StepEvalOptions {
  std::string models_dir;            // where the StepJob files are (the catalog's directory)
  // pollux: "" = the T4 table's PCIe and, between nodes, NCCL's socket transport
  // (tcp) at the rate fitted without the run's job (fit_network), else kPolluxNetwork.
  std::string interconnect;
  bool fit_network = true;
  double level = kDefaultIntervalLevel;
};
// Pollux' nodes (AWS, 4 T4s: g4dn.12xlarge, a 50 Gb/s network) ran NCCL over
// TCP sockets: `tcp`, the socket transport's achieved rate (kNcclSocketGbps).
inline constexpr const char* kPolluxNetwork = "tcp";

// One multi-node run as the network fit sees it: the single-GPU physics the
// data-parallel transform starts from, the job's DDP buckets, its links, and
// the measured step of the same job and batch on one GPU and on these GPUs.
struct NetworkFitRun {
  std::string job;
  DataParallelInput in;
  std::vector<GradientBucket> buckets;
  Interconnect ic;
  double one_gpu_step_s = 0;  // measured
  double step_s = 0;          // measured
};
// The achieved rate per node (Gb/s) of NCCL's socket transport that best
// explains the runs of every job but `exclude_job` ("" = none): the network
// alone, so each run's step is its measured one-GPU step plus the
// transform's added time, with the single-GPU physics scaled to that measured
// step (the predicted GPU's error stays out of the network's rate). Loss:
// each job's mean |log(predicted / measured step)|, averaged over the jobs.
// Searched on a grid of kFitGbpsLow..kFitGbpsHigh in 0.5% steps; NaN
// when no run is left.
inline constexpr double kFitGbpsLow = 0.5, kFitGbpsHigh = 50;
double FitSocketGbps(const std::vector<NetworkFitRun>& runs, const std::string& exclude_job);

// Predicts every run (pollux: each run's step time, for several GPUs one
// rank's, and the all-reduce; zeus: each job and batch on each GPU) and
// summarises: JSON with "runs" and "summary" (median absolute percentage
// error of the step per job and GPU count class, interval coverage, the
// comm_ms / exposed_comm_ms against sync_time, the Zeus ratio errors).
Result<nlohmann::json> EvaluateSteps(const Predictor& p, const std::vector<StepRun>& runs,
                                     const StepEvalOptions& opts);
// Markdown tables of EvaluateSteps' summary.
std::string StepEvalMarkdown(const nlohmann::json& result);

}  // namespace gpucast
