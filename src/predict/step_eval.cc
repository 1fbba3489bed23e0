#include "predict/step_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "cost/job_cost.h"
#include "predict/dataset.h"
#include "predict/metrics.h"

namespace gpucast {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

JobAttrs Attrs(int64_t workers, bool on_gpu) {
  JobAttrs a;
  a.loader_workers = workers;
  a.data_on_gpu = on_gpu;
  a.rl_env = false;
  return a;
}
// Zeus' runs: its Docker image (symbioticlab/zeus, the NSDI'23 artifact's environment; Zeus docs
// "Setting Up the Environment") has PyTorch 1.10.1, whose defaults run FP32 matmuls and
// convolutions on TF32 tensor cores (matters on the A40 only: the V100, RTX 6000 and P100 have none).
// An assumption: the trace's repository does not hold the training scripts.
JobAttrs ZeusAttrs() {
  JobAttrs a = Attrs(0, false);
  a.tf32 = true;
  return a;
}

// Zeus' GPUs: the file suffix, and the spec it is (the highest power limit of
// each file is the card's board power: 300 W A40, 260 W Quadro RTX 6000, 250 W
// for V100 and P100, which are their PCIe forms; the SXM2 forms draw 300 W).
struct ZeusGpu {
  const char* suffix;
  const char* gpu;
};
constexpr ZeusGpu kZeusGpus[] = {
    {"a40", "A40"}, {"v100", "V100-PCIE-32GB"}, {"rtx6000", "RTX6000"}, {"p100", "P100-PCIE-16GB"}};

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Rows of a CSV as maps from the header's names; errors name file and line.
Result<std::vector<std::pair<int, std::map<std::string, std::string>>>> ReadCsv(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBytes(path));
  std::vector<std::pair<int, std::map<std::string, std::string>>> out;
  std::stringstream ss(text);
  std::string line;
  std::vector<std::string> header;
  int n = 0;
  while (std::getline(ss, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> cells = SplitCsv(line);
    if (header.empty()) {
      header = cells;
      continue;
    }
    if (cells.size() != header.size())
      return Status::Error(path + ":" + std::to_string(n) + ": " + std::to_string(cells.size()) + " columns, want " +
                           std::to_string(header.size()));
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    out.push_back({n, std::move(row)});
  }
  if (header.empty()) return Status::Error(path + ": empty file");
  return out;
}

Result<double> Number(const std::map<std::string, std::string>& row, const std::string& col, const std::string& where) {
  auto it = row.find(col);
  if (it == row.end()) return Status::Error(where + ": no column '" + col + "'");
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !std::isfinite(v))
    return Status::Error(where + ": column '" + col + "': '" + it->second + "' is not a number");
  return v;
}

double Median(std::vector<double> v) { return v.empty() ? std::nan("") : Quantile(v, 0.5); }

}  // namespace

const std::vector<StepJob>& StepJobs() {
  static const std::vector<StepJob> jobs = {
      {"pollux-t4", "cifar10", "ResNet-18/CIFAR-10", {"pollux_resnet18_cifar.onnx"}, {}, false, Attrs(2, false),
       "cifar10/main.py --model=ResNet18 (models/resnet.py), 32x32, DataLoader num_workers=2, fp32"},
      {"pollux-t4", "imagenet", "ResNet-50/ImageNet", {"resnet50.onnx"}, {}, true, Attrs(4, false),
       "imagenet/main.py --arch=resnet50 (torchvision), 224x224 RandomResizedCrop, --workers default 4, "
       "apex amp.initialize default opt_level O1 (mixed precision)"},
      {"pollux-t4", "bert", "BERT-base/SQuAD", {"bert.onnx"}, {{"seq", 384}}, false, Attrs(0, false),
       "run_squad.py bert-base-uncased, --max_seq_length 384, AdaptiveDataLoader without workers, fp32"},
      {"pollux-t4", "ncf", "NeuMF/MovieLens-1M", {"pollux_ncf.onnx"}, {}, false, Attrs(4, false),
       "ncf/main.py NeuMF-end factor_num 32, num_layers 3 on ml-1m, num_workers=4, fp32"},
      {"pollux-t4", "yolov3", "YOLOv3/VOC", {"pollux_yolov3.onnx"}, {{"img", 448}}, true, Attrs(8, false),
       "yolov3/train.py, TRAIN_IMG_SIZE 448 (multi-scale draws 320-608 px per step, but the 8 workers keep the "
       "size of when each batch size's iterator started: the first batch size runs at 448), NUMBER_WORKERS 8, "
       "apex amp O1"},
      {"pollux-t4", "deepspeech2", "DeepSpeech2/VoxForge", {}, {}, false, Attrs(0, false),
       "not rebuilt: its input is a spectrogram as long as each utterance, a property of the data the code "
       "does not fix"},
      {"zeus", "imagenet/resnet50", "ResNet-50/ImageNet", {"resnet50.onnx"}, {}, false, ZeusAttrs(),
       "torchvision resnet50 224x224; Zeus' training script is not in the trace's repository: fp32 and the "
       "loader are assumptions (ratios between GPUs only)"},
      {"zeus", "squad/bert_base_uncased", "BERT-base/SQuAD", {"bert.onnx"}, {{"seq", 384}}, false, ZeusAttrs(),
       "bert-base-uncased QA at 384 tokens (HuggingFace's SQuAD default); the script is not in the repository"},
      {"zeus", "movielens-1m/ncf", "NeuMF/MovieLens-1M", {"pollux_ncf.onnx"}, {}, false, ZeusAttrs(),
       "NeuMF as Pollux' (factor 32, 3 MLP layers); the script is not in the repository"},
      {"zeus", "sentiment140/bert_base_uncased", "BERT-base/Sentiment140", {}, {}, false, ZeusAttrs(),
       "not rebuilt: dynamic padding (capriccio/train.py without --pad_to_max_length), so the sequence "
       "length is each batch's longest tweet"},
      {"zeus", "cifar100/shufflenetv2", "ShuffleNet-V2/CIFAR-100", {}, {}, false, ZeusAttrs(),
       "not rebuilt: the network's code is not in the trace's repository"},
      {"zeus", "librispeech/deepspeech2", "DeepSpeech2/LibriSpeech", {}, {}, false, ZeusAttrs(),
       "not rebuilt: utterance-length input, as Pollux' DeepSpeech2"},
  };
  return jobs;
}

Result<std::vector<StepRun>> ReadStepRuns(const std::string& dir, std::map<std::string, size_t>* skipped) {
  std::vector<StepRun> out;
  auto job_of = [](const std::string& source, const std::string& key) -> const StepJob* {
    for (const StepJob& j : StepJobs())
      if (j.source == source && j.key == key) return &j;
    return nullptr;
  };
  auto skip = [&](const std::string& what) {
    if (skipped) (*skipped)[what] += 1;
  };
  if (fs::exists(fs::path(dir) / "cifar10" / "placements.csv")) {
    for (const StepJob& j : StepJobs()) {
      if (j.source != "pollux-t4") continue;
      for (const char* file : {"placements.csv", "scalability.csv"}) {
        const std::string path = (fs::path(dir) / j.key / file).string();
        ASSIGN_OR_RETURN(auto rows, ReadCsv(path));
        for (const auto& [line, row] : rows) {
          if (j.files.empty()) {
            skip(j.name);
            continue;
          }
          const std::string where = path + ":" + std::to_string(line);
          StepRun r;
          r.job = &j;
          r.gpu = "T4";
          r.file = path;
          r.line = line;
          if (row.count("placement")) {
            r.placement = row.at("placement");
            r.gpus = 0;
            for (char c : r.placement) {
              if (c < '1' || c > '9') return Status::Error(where + ": placement '" + r.placement + "' is not digits 1-9");
              r.gpus += c - '0';
            }
            r.nodes = static_cast<int>(r.placement.size());
          } else {
            ASSIGN_OR_RETURN(double nn, Number(row, "num_nodes", where));
            ASSIGN_OR_RETURN(double nr, Number(row, "num_replicas", where));
            r.nodes = static_cast<int>(nn);
            r.gpus = static_cast<int>(nr);
          }
          ASSIGN_OR_RETURN(double b, Number(row, "local_bsz", where));
          ASSIGN_OR_RETURN(r.step_s, Number(row, "step_time", where));
          ASSIGN_OR_RETURN(r.sync_s, Number(row, "sync_time", where));
          r.batch = static_cast<int64_t>(b);
          if (r.batch < 1 || r.gpus < 1 || r.nodes < 1 || !(r.step_s > 0))
            return Status::Error(where + ": batch, GPUs, nodes and step_time must be positive");
          out.push_back(std::move(r));
        }
      }
    }
    return out;
  }
  bool any = false;
  for (const ZeusGpu& g : kZeusGpus) {
    const std::string path = (fs::path(dir) / (std::string("summary_power_") + g.suffix + ".csv")).string();
    if (!fs::exists(path)) continue;
    any = true;
    ASSIGN_OR_RETURN(auto rows, ReadCsv(path));
    // (job, batch) -> the row at the highest power limit (the card's own: no cap).
    std::map<std::pair<std::string, int64_t>, std::pair<double, StepRun>> best;
    for (const auto& [line, row] : rows) {
      const std::string where = path + ":" + std::to_string(line);
      const std::string key = row.count("dataset") && row.count("network") ? row.at("dataset") + "/" + row.at("network") : "";
      const StepJob* j = job_of("zeus", key);
      if (!j) return Status::Error(where + ": unknown job '" + key + "'");
      if (j->files.empty()) {
        skip(j->name);
        continue;
      }
      ASSIGN_OR_RETURN(double b, Number(row, "batch_size", where));
      ASSIGN_OR_RETURN(double pl, Number(row, "power_limit", where));
      ASSIGN_OR_RETURN(double t, Number(row, "time_per_epoch", where));
      StepRun r;
      r.job = j;
      r.gpu = g.gpu;
      r.batch = static_cast<int64_t>(b);
      r.step_s = t;
      r.file = path;
      r.line = line;
      auto k = std::make_pair(key + "/" + row.at("optimizer"), r.batch);
      auto it = best.find(k);
      if (it == best.end() || pl > it->second.first) best[k] = {pl, r};
    }
    for (auto& [k, v] : best) out.push_back(v.second);
  }
  if (!any) return Status::Error(dir + ": neither a pollux-t4 folder (cifar10/placements.csv) nor a zeus one (summary_power_*.csv)");
  return out;
}

double FitSocketGbps(const std::vector<NetworkFitRun>& runs, const std::string& exclude_job) {
  // Per job: the sum of |log(predicted / measured)| at each grid rate, and the run count.
  std::vector<double> grid;
  for (double g = kFitGbpsLow; g <= kFitGbpsHigh * (1 + 1e-12); g *= 1.005) grid.push_back(g);
  std::map<std::string, std::pair<std::vector<double>, size_t>> by_job;
  for (const NetworkFitRun& r : runs) {
    if (r.job == exclude_job || !(r.one_gpu_step_s > 0) || !(r.step_s > 0) || !(r.in.step_s > 0)) continue;
    auto& [sum, n] = by_job[r.job];
    if (sum.empty()) sum.assign(grid.size(), 0.0);
    DataParallelInput in = r.in;
    const double scale = r.one_gpu_step_s / r.in.step_s;
    in.step_s *= scale;
    in.core_s *= scale;
    in.slack_s *= scale;
    Interconnect ic = r.ic;
    for (size_t i = 0; i < grid.size(); ++i) {
      ic.inter.bandwidth = grid[i] * 1e9 / 8;
      Result<DataParallelResult> dp = ApplyDataParallel(in, r.buckets, ic);
      const double pred = dp.ok() ? dp->step_s : in.step_s;
      sum[i] += std::fabs(std::log(pred / r.step_s));
    }
    n += 1;
  }
  if (by_job.empty()) return std::nan("");
  size_t best = 0;
  double best_loss = INFINITY;
  for (size_t i = 0; i < grid.size(); ++i) {
    double loss = 0;
    for (const auto& [job, v] : by_job) loss += v.first[i] / static_cast<double>(v.second);
    if (loss < best_loss) best_loss = loss, best = i;
  }
  return grid[best];
}

Result<json> EvaluateSteps(const Predictor& p, const std::vector<StepRun>& runs, const StepEvalOptions& opts) {
  GraphCostCache cache;
  // The job's graphs at the run's batch, and its configuration.
  auto prepare = [&](const StepRun& r, JobConfig* job) -> Result<std::vector<CostReport>> {
    CatalogWorkload w;
    w.model = r.job->name;
    w.dataset = r.job->source;
    for (const std::string& f : r.job->files) w.graphs.push_back({(fs::path(opts.models_dir) / f).string(), 1, 0});
    w.dims = r.job->dims;
    w.attrs = r.job->attrs;
    auto reports = WorkloadReports(w, r.batch, r.job->amp, &cache);
    if (!reports.ok()) return reports.status().Prefixed(r.file + ":" + std::to_string(r.line));
    job->batch = r.batch;
    job->amp = r.job->amp;
    job->attrs = r.job->attrs;
    // The measured runs' memory format, unless the job states it: NCHW. Neither Pollux's training
    // code (petuum/adaptdl de25dcc, benchmark/models) nor Zeus' (ml-energy/zeus 75a8b93, examples)
    // calls channels_last or memory_format, so their intervals do not span a channels-last job.
    if (!job->attrs.channels_last) job->attrs.channels_last = false;
    job->gpu = r.gpu;
    job->gpus = r.gpus;
    job->nodes = r.nodes;
    return *reports;
  };
  // Pollux over several nodes: NCCL's socket transport at the rate fitted on
  // the other jobs' runs (FitSocketGbps), never on the run's own job.
  std::map<std::pair<const StepJob*, int64_t>, double> one_gpu_step;
  for (const StepRun& r : runs)
    if (r.job->source == "pollux-t4" && r.gpus == 1) one_gpu_step[{r.job, r.batch}] = r.step_s;
  std::map<std::string, double> fold_gbps;  // held-out job -> rate fitted without it
  // Each multi-node run predicted once on kPolluxNetwork (by run index): the
  // fit's input, and the answer that is put on the fold's rate below.
  std::map<size_t, PredictResult> on_pollux_network;
  json network_fit = nullptr;
  if (opts.interconnect.empty() && opts.fit_network) {
    std::vector<NetworkFitRun> fit;
    std::set<std::string> jobs;
    for (size_t i = 0; i < runs.size(); ++i) {
      const StepRun& r = runs[i];
      if (r.job->source != "pollux-t4" || r.nodes < 2 || r.gpus % r.nodes != 0) continue;
      JobConfig job;
      ASSIGN_OR_RETURN(std::vector<CostReport> reports, prepare(r, &job));
      job.interconnect = kPolluxNetwork;
      auto res = p.Predict(reports, job, opts.level);
      if (!res.ok()) return res.status().Prefixed(r.file + ":" + std::to_string(r.line));
      const PredictResult& q = on_pollux_network.emplace(i, *std::move(res)).first->second;
      auto one = one_gpu_step.find({r.job, r.batch});
      if (one == one_gpu_step.end() || !q.data_parallel_input || !q.interconnect) continue;
      fit.push_back({r.job->name, *q.data_parallel_input, DdpBuckets(reports), *q.interconnect, one->second,
                     r.step_s});
      jobs.insert(r.job->name);
    }
    if (!fit.empty()) {
      json folds = json::object();
      for (const std::string& j : jobs) {
        double g = FitSocketGbps(fit, j);
        if (std::isfinite(g)) fold_gbps[j] = g, folds[j] = g;
      }
      const double all = FitSocketGbps(fit, "");
      network_fit = {{"transport", "NCCL sockets (tcp)"},
                     {"runs", fit.size()},
                     {"all_jobs_gbps", std::isfinite(all) ? json(all) : json(nullptr)},
                     {"without_job_gbps", folds},
                     {"constant_gbps", kNcclSocketGbps}};
    }
  }
  json rows = json::array();
  // Per (job, class) absolute percentage errors and coverage.
  struct Acc {
    std::vector<double> ape;
    size_t covered = 0, n = 0;
    std::vector<double> comm_ratio, exposed_ratio;  // predicted / measured (sync beyond the one-GPU tail)
    std::vector<double> implied_gbps;  // one GPU a node: bytes each rank sends / measured sync beyond the tail
  };
  std::map<std::pair<std::string, std::string>, Acc> acc;
  // One-GPU sync_time of each pollux (job, batch): the tail every run has without any all-reduce.
  std::map<std::pair<const StepJob*, int64_t>, double> one_gpu_sync;
  for (const StepRun& r : runs)
    if (r.gpus == 1 && r.sync_s >= 0) one_gpu_sync[{r.job, r.batch}] = r.sync_s;
  // zeus: predicted and measured per (job, optimizer-free batch, gpu) for the ratios.
  std::map<std::pair<const StepJob*, int64_t>, std::map<std::string, std::pair<double, double>>> zeus;
  size_t skipped_uneven = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const StepRun& r = runs[i];
    if (r.job->source == "pollux-t4" && r.gpus % r.nodes != 0) {  // uneven: ResolveInterconnect spreads GPUs evenly
      ++skipped_uneven;
      continue;
    }
    JobConfig job;
    ASSIGN_OR_RETURN(std::vector<CostReport> reports, prepare(r, &job));
    double network_gbps = std::nan("");
    if (r.job->source == "pollux-t4" && r.nodes > 1)
      job.interconnect = opts.interconnect.empty() ? kPolluxNetwork : opts.interconnect;
    Result<PredictResult> res = Status::Error("not predicted");
    if (auto known = on_pollux_network.find(i); known != on_pollux_network.end()) {
      res = known->second;  // kPolluxNetwork, predicted for the fit
      auto fold = fold_gbps.find(r.job->name);
      if (fold != fold_gbps.end() && known->second.interconnect) {
        // The fold's rate to 4 decimals (0.1 Mb/s), the precision it has always been applied at.
        network_gbps = fold->second;
        Interconnect ic = *known->second.interconnect;
        ic.inter = TcpLink(std::round(network_gbps * 1e4) / 1e4, "fitted without the job");
        res = p.PredictOnLinks(known->second, reports, ic, opts.level);
      }
    } else {
      res = p.Predict(reports, job, opts.level);
    }
    if (!res.ok()) return res.status().Prefixed(r.file + ":" + std::to_string(r.line));
    const UtilPrediction& q = res->prediction;
    json row = {{"source", r.job->source}, {"job", r.job->name}, {"gpu", r.gpu}, {"gpus", r.gpus},
                {"nodes", r.nodes},       {"placement", r.placement}, {"batch", r.batch},
                {"step_ms", r.step_s * 1e3}, {"predicted_step_ms", q.step_ms},
                {"step_low_ms", q.step_low_ms}, {"step_high_ms", q.step_high_ms},
                {"gpu_measured", res->gpu_measured}};
    if (std::isfinite(network_gbps)) row["network_gbps_fitted_without_job"] = network_gbps;
    if (r.job->source == "zeus") {
      zeus[{r.job, r.batch}][r.gpu] = {r.step_s, q.step_ms};
      row["epoch_s"] = r.step_s;
      row.erase("step_ms");
      rows.push_back(row);
      continue;
    }
    const std::string cls = r.gpus == 1 ? "1 GPU" : r.nodes == 1 ? "2-4 GPUs, 1 node" : "several nodes";
    Acc& a = acc[{r.job->name, cls}];
    const double measured_ms = r.step_s * 1e3;
    a.ape.push_back(std::fabs(q.step_ms - measured_ms) / measured_ms);
    a.n += 1;
    a.covered += q.step_low_ms <= measured_ms && measured_ms <= q.step_high_ms;
    if (res->data_parallel && r.sync_s >= 0) {
      const DataParallelResult& dp = *res->data_parallel;
      auto tail = one_gpu_sync.find({r.job, r.batch});
      const double sync_beyond = r.sync_s - (tail == one_gpu_sync.end() ? 0.0 : tail->second);
      row["sync_ms"] = r.sync_s * 1e3;
      row["sync_beyond_one_gpu_ms"] = sync_beyond * 1e3;
      row["comm_ms"] = dp.comm_s * 1e3;
      row["exposed_comm_ms"] = dp.exposed_s * 1e3;
      if (sync_beyond > 1e-4) {
        a.comm_ratio.push_back(dp.comm_s / sync_beyond);
        a.exposed_ratio.push_back(dp.exposed_s / sync_beyond);
        // With one GPU a node every ring step crosses the network: the rate the measured sync implies.
        if (r.nodes > 1 && r.gpus == r.nodes) a.implied_gbps.push_back(dp.wire_bytes * 8 / sync_beyond / 1e9);
      }
    }
    rows.push_back(row);
  }
  json summary = json::array();
  // Every predicted pollux run together, and by GPU count class.
  json overall = json::array();
  {
    std::map<std::string, std::pair<std::vector<double>, size_t>> all;  // class -> errors, covered
    for (const auto& [k, a] : acc)
      for (const std::string& cls : {std::string("all"), k.second == "1 GPU" ? std::string("1 GPU") : std::string("several GPUs")}) {
        auto& [e, covered] = all[cls];
        e.insert(e.end(), a.ape.begin(), a.ape.end());
        covered += a.covered;
      }
    for (const auto& [cls, v] : all)
      overall.push_back({{"class", cls},
                         {"runs", v.first.size()},
                         {"median_ape", Median(v.first)},
                         {"coverage", v.first.empty() ? 0.0 : static_cast<double>(v.second) / v.first.size()}});
  }
  for (const auto& [k, a] : acc) {
    summary.push_back({{"job", k.first},
                       {"class", k.second},
                       {"runs", a.n},
                       {"median_ape", Median(a.ape)},
                       {"coverage", a.n ? static_cast<double>(a.covered) / a.n : 0.0},
                       {"comm_over_sync_median", Median(a.comm_ratio)},
                       {"exposed_over_sync_median", Median(a.exposed_ratio)},
                       {"sync_runs", a.comm_ratio.size()},
                       {"implied_network_gbps_median", Median(a.implied_gbps)},
                       {"implied_network_runs", a.implied_gbps.size()}});
  }
  // Zeus: for each job and batch measured on two GPUs, the ratio of their epoch
  // times against the ratio of the predicted step times (GPU pairs in table order).
  json zsum = json::array();
  std::map<std::string, std::vector<double>> ratio_err;       // job -> |pred ratio / measured ratio - 1|
  std::map<std::string, std::vector<double>> ratio_err_pair;  // "A/B" -> same
  for (const auto& [k, by_gpu] : zeus) {
    for (size_t i = 0; i < std::size(kZeusGpus); ++i)
      for (size_t j = i + 1; j < std::size(kZeusGpus); ++j) {
        auto a = by_gpu.find(kZeusGpus[i].gpu), b = by_gpu.find(kZeusGpus[j].gpu);
        if (a == by_gpu.end() || b == by_gpu.end()) continue;
        const double measured = a->second.first / b->second.first;
        const double predicted = a->second.second / b->second.second;
        const double e = std::fabs(predicted / measured - 1);
        ratio_err[k.first->name].push_back(e);
        ratio_err_pair[std::string(kZeusGpus[i].gpu) + " / " + kZeusGpus[j].gpu].push_back(e);
      }
  }
  for (const auto& [name, e] : ratio_err) zsum.push_back({{"job", name}, {"pairs", e.size()}, {"median_ratio_error", Median(e)}});
  json zpairs = json::array();
  for (const auto& [name, e] : ratio_err_pair)
    zpairs.push_back({{"gpus", name}, {"pairs", e.size()}, {"median_ratio_error", Median(e)}});
  std::vector<double> all_ratio;
  for (const auto& [name, e] : ratio_err) all_ratio.insert(all_ratio.end(), e.begin(), e.end());
  return json{{"runs", rows},
              {"summary", summary},
              {"zeus_ratios", zsum},
              {"zeus_ratio_pairs", zpairs},
              {"zeus_median_ratio_error", all_ratio.empty() ? json(nullptr) : json(Median(all_ratio))},
              {"skipped_uneven_placements", skipped_uneven},
              {"network_fit", network_fit},
              {"overall", overall},
              {"level", opts.level}};
}

std::string StepEvalMarkdown(const json& r) {
  std::string out;
  char b[512];
  const auto num = [](const json& v, const char* fmt) {
    char s[64];
    if (!v.is_number()) return std::string("-");
    std::snprintf(s, sizeof s, fmt, v.get<double>());
    return std::string(s);
  };
  if (!r.at("summary").empty()) {
    out += "| job | runs | GPUs | median abs. error of the step | coverage of the " +
           num(r.at("level").get<double>() * 100, "%.0f") +
           "% interval | comm_ms / (sync - 1-GPU sync), median | exposed_comm_ms / (sync - 1-GPU sync), median |\n";
    out += "|---|---|---|---|---|---|---|\n";
    for (const json& s : r.at("summary")) {
      std::snprintf(b, sizeof b, "| %s | %zu | %s | %s | %s | %s | %s |\n", s.at("job").get<std::string>().c_str(),
                    s.at("runs").get<size_t>(), s.at("class").get<std::string>().c_str(),
                    (num(s.at("median_ape").get<double>() * 100, "%.1f") + "%").c_str(),
                    num(s.at("coverage"), "%.2f").c_str(), num(s.at("comm_over_sync_median"), "%.2f").c_str(),
                    num(s.at("exposed_over_sync_median"), "%.2f").c_str());
      out += b;
    }
  }
  if (!r.at("zeus_ratios").empty()) {
    out += "| job | GPU pairs x batches | median error of the step-time ratio between two GPUs |\n|---|---|---|\n";
    for (const json& s : r.at("zeus_ratios")) {
      std::snprintf(b, sizeof b, "| %s | %zu | %s |\n", s.at("job").get<std::string>().c_str(), s.at("pairs").get<size_t>(),
                    (num(s.at("median_ratio_error").get<double>() * 100, "%.1f") + "%").c_str());
      out += b;
    }
  }
  return out;
}

}  // namespace gpucast
