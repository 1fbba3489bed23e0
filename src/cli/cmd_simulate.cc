// gpucast simulate: trace-driven cluster simulation under one or every policy.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/json_layouts.h"
#include "cli/progress.h"
#include "features/site_gpus.h"
#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/evaluate.h"
#include "predict/predictor.h"
#include "sim/cluster.h"
#include "sim/interference.h"
#include "sim/policy.h"
#include "sim/simulator.h"
#include "sim/trace.h"
#include "sim/workload.h"
#include "util/paths.h"
#include "util/json_text.h"
#include "util/fnv1a.h"

namespace gpucast::cli {
namespace {

struct SimulateFlags {
  std::string gpu_table;  // --gpu-table
  std::string trace, policy, cluster, out, predictions, catalog;
  std::string predictor;  // --predictor: a train file whose stored lowo predictions stand in for recomputing them
  std::string arrivals = "bootstrap";
  std::vector<std::string> load_factors;  // --load-factor, repeatable, each "F" or "F1,F2,..."
  int64_t jobs = -1;
  uint64_t seed = 1;
  std::string seeds;  // "1-5" or "1,3,7": one run per seed under OUT/seed-S
  bool skip_bad_lines = false, json = false, quiet = false;
  double cap = 100, max_slowdown = 0.25, profile_s = 60, profile_warmup_s = 10, profile_pool = 0.05;
  double measure_noise = 5, observe_after_s = 70, migrate_z = 2, checkpoint_s = 1800, oom_after_s = 10;
  double restart_s = 0, recurring = 0, confident_sd = -1, rate_noise = 0.05, interval_z = 0;
  bool admit_by_physics = false;
  std::string workload_mix = "size-aware";
  std::string cap_rule = "sum";  // --cap-rule: sum (the paper's, --cap) or capacity
  CLI::Option* cap_given = nullptr;  // --cap, to refuse it beside --cap-rule capacity
  int threads = 0;  // policy runs of one load point and seed at once; 0 = the machine's cores
  int max_jobs_per_gpu = sim::kMeasuredJobsPerGpu;  // --max-jobs-per-gpu; 0: no limit
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

// --load-factor values: each flag "F" or a comma list; every F in [0.001, 1000].
Result<std::vector<double>> ParseLoadFactors(const std::vector<std::string>& flags) {
  std::vector<double> out;
  for (const std::string& f : flags) {
    size_t pos = 0;
    while (true) {
      size_t comma = f.find(',', pos);
      std::string part = f.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      char* end = nullptr;
      double v = std::strtod(part.c_str(), &end);
      // Below 0.001 the divided submit times leave double's range (1e-308: inf, 'nan' in the output).
      if (part.empty() || end != part.c_str() + part.size() || !(v >= 0.001) || v > 1000)
        return Status::Error("--load-factor '" + f + "': want a number in [0.001, 1000] or a comma list of them");
      out.push_back(v);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  if (out.empty()) out.push_back(1.0);
  return out;
}

std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Where leave-one-workload-out predictions are kept between runs: they depend
// only on the algorithm, the dataset (features, labels, groups) and the
// binary, so the key hashes those ($GPUCAST_CACHE_DIR, else
// $XDG_CACHE_HOME/gpucast, else ~/.cache/gpucast; "" = no cache).
std::string CacheFile(const std::string& algo, const Dataset& data, const char* kind = "lowo", const char* ext = "csv") {
  std::string dir;
  if (const char* d = std::getenv("GPUCAST_CACHE_DIR")) dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) dir = std::string(x) + "/gpucast";
  else if (const char* h = std::getenv("HOME"); h && *h) dir = std::string(h) + "/.cache/gpucast";
  if (dir.empty() || dir == "off") return "";
  std::string key = algo + "\n" + data.digest + "\n" + data.schema_name + std::to_string(data.schema_version) + "\n";
  for (const std::string& n : data.feature_names) key += n + ",";
  for (size_t i = 0; i < data.x.size(); ++i) {
    key.append(reinterpret_cast<const char*>(data.x[i].data()), data.x[i].size() * sizeof(double));
    key.append(reinterpret_cast<const char*>(&data.step_s[i]), sizeof(double));
    key += std::to_string(data.group[i]) + data.rows[i].Key() + ";";
  }
  // The binary: any rebuild (a changed regressor) gets a new key.
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return "";
  key += std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  char name[64];
  std::snprintf(name, sizeof name, "/%s-%016llx.%s", kind, static_cast<unsigned long long>(Fnv1a64(key)), ext);
  return dir + name;
}

// Writes a cache file (CacheFile) through a temporary file and a rename, so
// that a reader never sees half of it; `write` fills the temporary path.
// Best effort: a cache that cannot be written only makes the next run slower.
void WriteCacheFile(const std::string& path, const std::function<bool(const std::string&)>& write) {
  if (path.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  if (write(tmp)) std::filesystem::rename(tmp, path, ec);
  else ec = std::make_error_code(std::errc::io_error);
  if (ec) std::filesystem::remove(tmp, ec);
}

// The measured rows the simulator's predictions learn from: Lucid's
// single-job runs under the catalog's graphs.
Result<Dataset> SimulatorDataset(const SimulateFlags& f) {
  ASSIGN_OR_RETURN(Catalog catalog, LoadCatalog(f.catalog.empty() ? DefaultCatalog() : f.catalog));
  return BuildDataset(DataDir() + "/lucid/single_data.csv", catalog);
}

// The predictor `gpucast train --data <data>/lucid/single_data.csv` makes on
// the simulator's rows (the default algorithm, auto: its selection made on all
// workloads, seed 0; train's default data also has MIGProfiler's A100 rows), kept in the
// cache beside the lowo predictions (about 40 CPU-s to train). Its stored
// training pass (lowo_predictions: the chosen algorithm fitted without each
// workload) is the default predictions: "the predictor train ships,
// evaluated leave one workload out". `--predictions auto` is the nested
// evaluation of the selection instead (docs/simulator.md).
Result<Predictor> ShippedPredictor(const SimulateFlags& f, const Dataset& data, std::string* where) {
  const std::string cache = CacheFile(kDefaultAlgo, data, "train", "json");
  if (!cache.empty() && std::filesystem::exists(cache)) {
    auto p = Predictor::Load(cache);
    if (p.ok() && p->info().training_digest == data.digest) {
      *where = "train's predictor (cached in " + cache + ")";
      return p;
    }
  }
  if (!f.quiet)
    std::cerr << "gpucast simulate: training the default predictor on the simulator's " << data.rows.size()
              << " rows, as gpucast train --data <data>/lucid/single_data.csv does (about a minute)" << (cache.empty() ? "" : "; cached in " + cache)
              << "\n";
  Result<Predictor> trained = [&] {
    Heartbeat beat("simulate", "training the default predictor on the simulator's rows", f.quiet);
    return Predictor::Train(data, kDefaultAlgo, 0, kDefaultFeatureSet);
  }();
  ASSIGN_OR_RETURN(Predictor p, std::move(trained));
  *where = "train's predictor";
  WriteCacheFile(cache, [&p](const std::string& tmp) { return p.Save(tmp).ok(); });
  return p;
}

// One workload row's prediction (utilization %, memory MiB and its high end;
// NaN memory: none), rounded as the cache stores them (sim::CsvRounded), so
// that the run that fills the cache, the runs that read it and --predictor's
// stored predictions decide by the same numbers (unrounded, the first run of
// a build packed differently at the cap's edge: Philly x2 seed 1, useful work
// 59.56% against 58.28% from the cache).
// The utilization interval comes with the row when the row carries one
// (RowPrediction's low/high; whatever interval the predictor states flows in).
template <class Row>
void SetPrediction(sim::WorkloadProfile* w, const Row& p) {
  w->predicted_util = sim::CsvRounded(p.predicted);
  if (!std::isnan(p.mem_predicted)) {
    w->pred_mem_mib = sim::CsvRounded(p.mem_predicted);
    w->pred_mem_high_mib = sim::CsvRounded(std::isnan(p.mem_high) ? p.mem_predicted : p.mem_high);
  }
  w->pred_util_low = w->pred_util_high = NAN;
  if constexpr (requires { p.low; p.high; }) {
    if (!std::isnan(p.low) && !std::isnan(p.high)) {
      w->pred_util_low = std::min(w->predicted_util, sim::CsvRounded(p.low));
      w->pred_util_high = std::max(w->predicted_util, sim::CsvRounded(p.high));
    }
  }
}

// Sets every workload row's prediction from `rows` (LowoRowPrediction or
// RowPrediction: the same field names), each row matched by model, dataset,
// batch and AMP; a row of no workload, or a workload without a row, is an
// error prefixed by `what`.
template <class Row>
Status ApplyRowPredictions(const std::vector<Row>& rows, const std::string& what, std::vector<sim::WorkloadProfile>* w) {
  std::vector<sim::WorkloadProfile> copy = *w;
  std::vector<bool> seen(copy.size(), false);
  const sim::WorkloadIndex index(copy);
  for (const Row& p : rows) {
    int i = index.Find(p.model, p.dataset, p.batch, p.amp ? 1 : 0);
    if (i < 0) return Status::Error(what + ": unknown workload " + p.model + "/" + p.dataset);
    SetPrediction(&copy[i], p);
    seen[i] = true;
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) return Status::Error(what + ": none for " + copy[i].Name());
  *w = std::move(copy);
  return Status::Ok();
}

// Every workload row's utilization predicted by `algo` trained on the other
// workloads (leave one workload out; the predict layer), into predicted_util
// (and the memory fields once the predict layer gives them). Never the truth.
// `file` (--predictor), when its algorithm is `algo` and its stored predictions
// are valid for these rows (Predictor::StoredLowoApplies), gives them without
// recomputing; otherwise they are computed (the reason on stderr).
// `file_name` names `file` in messages.
Status ModelPredictions(const SimulateFlags& f, const Dataset& data, const std::string& algo,
                        std::vector<sim::WorkloadProfile>* w, const Predictor* file = nullptr,
                        const std::string& file_name = "") {
  if (file && file->model().algo() == algo) {
    const Status applies = file->StoredLowoApplies(data);
    if (applies.ok()) {
      RETURN_IF_ERROR(ApplyRowPredictions(file->info().lowo_predictions, file_name + ": lowo_predictions", w));
      if (!f.quiet)
        std::cerr << "gpucast simulate: lowo:" << algo << " predictions of " << data.rows.size() << " rows from "
                  << file_name << " (its training pass), not recomputed\n";
      bool intervals = true;
      for (const sim::WorkloadProfile& x : *w) intervals = intervals && x.HasInterval();
      if (intervals) return Status::Ok();
      // The stored rows carry no utilization interval: take each row's from the
      // same computation (the same fits: the same predictions), when it agrees.
      // Only the intervals are taken; the predictions stay the stored ones.
      if (!f.quiet)
        std::cerr << "gpucast simulate: " << file_name << ": its stored rows carry no utilization interval; "
                  << "taking each row's from lowo:" << algo << " (cached per build)\n";
      SimulateFlags quiet = f;
      quiet.quiet = true;
      std::vector<sim::WorkloadProfile> computed = *w;
      RETURN_IF_ERROR(ModelPredictions(quiet, data, algo, &computed));
      for (size_t i = 0; i < w->size(); ++i)
        if (std::fabs(computed[i].predicted_util - (*w)[i].predicted_util) <= 1e-9 * std::max(1.0, (*w)[i].predicted_util)) {
          (*w)[i].pred_util_low = computed[i].pred_util_low;
          (*w)[i].pred_util_high = computed[i].pred_util_high;
        } else {
          std::cerr << "gpucast simulate: " << (*w)[i].Name() << ": the stored prediction " << (*w)[i].predicted_util
                    << " differs from the computed " << computed[i].predicted_util << "; no interval for it\n";
        }
      return Status::Ok();
    }
    // train's default data (Lucid's and MIGProfiler's rows) is more than the simulator's rows:
    // the commonest reason, so the message says which predictor's would apply.
    const bool other_data = file->info().training_digest != data.digest;
    std::cerr << "gpucast simulate: " << file_name << ": its stored predictions do not apply: " << applies.message()
              << "; computing lowo:" << algo
              << (other_data ? " (the simulator's rows are Lucid's RTX 3090 jobs: a predictor trained with --data "
                               "<data>/lucid/single_data.csv alone holds predictions that apply)"
                             : "")
              << "\n";
  }
  const std::string cache = CacheFile(algo, data);
  if (!cache.empty()) {
    std::vector<sim::WorkloadProfile> copy = *w;
    if (std::filesystem::exists(cache) && sim::LoadPredictionsCsv(cache, &copy).ok()) {
      bool intervals = true;
      for (const sim::WorkloadProfile& x : copy) intervals = intervals && x.HasInterval();
      if (intervals) {  // an older cache without the intervals is recomputed
        *w = std::move(copy);
        return Status::Ok();
      }
    }
  }
  if (!f.quiet)
    std::cerr << "gpucast simulate: computing the leave-one-workload-out predictions of " << algo << " on "
              << data.rows.size() << " rows ("
              << (algo == std::string(kAutoAlgo) ? "minutes: nested selection" : "about a minute: each fold calibrated")
              << ")" << (cache.empty() ? "" : "; cached in " + cache) << "\n";
  Result<std::vector<RowPrediction>> computed = [&] {
    Heartbeat beat("simulate", "computing lowo:" + algo + " predictions", f.quiet);
    return LeaveOneWorkloadOutPredictions(data, algo, 0);
  }();
  ASSIGN_OR_RETURN(auto preds, std::move(computed));
  RETURN_IF_ERROR(ApplyRowPredictions(preds, "lowo:" + algo + " predictions", w));
  WriteCacheFile(cache, [w](const std::string& tmp) { return static_cast<bool>(std::ofstream(tmp) << sim::PredictionsCsv(*w)); });
  return Status::Ok();
}

nlohmann::ordered_json InterferenceJson(const sim::InterferenceModel& m) {
  nlohmann::ordered_json j;
  j["form"] = m.form().Name();
  j["beta"] = m.params().beta;
  j["switch_cost"] = m.params().switch_cost;
  j["occupancy"] = m.params().occupancy;
  j["capacity"] = m.params().capacity;
  j["sharpness"] = m.params().sharpness;
  j["measured_pairs"] = m.pairs().size();
  nlohmann::ordered_json fits = nlohmann::ordered_json::array();
  for (const auto& f : m.gpu_fits())
    fits.push_back({{"gpu", f.gpu}, {"form", f.form.Name()}, {"beta", f.params.beta},
                    {"switch_cost", f.params.switch_cost}, {"occupancy", f.params.occupancy}});
  j["gpu_fits"] = fits;
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
  if (Status t = InstallSiteGpuTable(f.gpu_table); !t.ok()) return Fail("simulate", t.message());
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
  auto loads = ParseLoadFactors(f.load_factors);
  if (!loads.ok()) return Fail("simulate", loads.message());
  // Each number flag must be finite: NaN and inf passed every `x <= 0` test below and ran.
  auto positive = [](double x) { return x > 0 && std::isfinite(x); };
  auto non_negative = [](double x) { return x >= 0 && std::isfinite(x); };
  if (!positive(f.cap)) return Fail("simulate", "--cap must be a positive number");
  const std::optional<bool> by_capacity = sim::ParseCapRule(f.cap_rule);
  if (!by_capacity) return Fail("simulate", "--cap-rule '" + f.cap_rule + "': want sum or capacity");
  if (*by_capacity && f.cap_given && f.cap_given->count() > 0)
    return Fail("simulate", "--cap applies to --cap-rule sum; --cap-rule capacity takes the cap from the physics");
  if (!positive(f.profile_s) || !non_negative(f.profile_warmup_s))
    return Fail("simulate", "--profile-s must be positive, --profile-warmup-s >= 0");
  if (!(f.profile_pool > 0 && f.profile_pool <= 0.5)) return Fail("simulate", "--profile-pool must be in (0, 0.5]");
  if (!non_negative(f.measure_noise)) return Fail("simulate", "--measure-noise must be >= 0");
  if (!positive(f.observe_after_s)) return Fail("simulate", "--observe-after-s must be positive");
  if (!positive(f.checkpoint_s)) return Fail("simulate", "--checkpoint-s must be positive");
  if (!non_negative(f.oom_after_s)) return Fail("simulate", "--oom-after-s must be >= 0");
  if (!non_negative(f.restart_s)) return Fail("simulate", "--restart-s must be >= 0");
  if (!(f.recurring >= 0 && f.recurring <= 1)) return Fail("simulate", "--recurring must be in [0, 1]");
  if (!(non_negative(f.confident_sd) || f.confident_sd == -1))
    return Fail("simulate", "--confident-sd must be >= 0");
  if (!(f.interval_z >= 0 && f.interval_z <= 10)) return Fail("simulate", "--interval-z must be in [0, 10]");
  if (!(f.rate_noise >= 0 && f.rate_noise < 1)) return Fail("simulate", "--rate-noise must be in [0, 1)");
  if (f.workload_mix != "size-aware" && f.workload_mix != "uniform")
    return Fail("simulate", "--workload-mix '" + f.workload_mix + "': want size-aware or uniform");
  if (!(f.max_slowdown > 0 && f.max_slowdown < 1)) return Fail("simulate", "--max-slowdown must be in (0, 1)");
  if (f.jobs == 0 || f.jobs < -1) return Fail("simulate", "--jobs must be a positive number of jobs");
  if (f.arrivals != "trace" && f.arrivals != "bootstrap")
    return Fail("simulate", "--arrivals '" + f.arrivals + "': want trace or bootstrap");
  bool need_pred = !f.predictions.empty();
  for (const std::string& p : policies) need_pred |= sim::FindPolicy(p)->needs_predictions;
  // --predictor: the file's algorithm replaces the default and its stored
  // lowo predictions stand in for computing them, when valid. A file that
  // does not load is an error: the user named it. Without one, the default
  // is the predictor train makes on these rows (ShippedPredictor), used the
  // same way: for the default predictions, `shuffled` and the memory of the
  // utilization controls (noisy, constant, a CSV without memory).
  std::string default_algo = kDefaultAlgo, file_name = f.predictor;
  std::optional<Predictor> file_model;
  if (!f.predictor.empty()) {
    auto p = Predictor::Load(f.predictor);
    if (!p.ok()) return Fail("simulate", "--predictor: " + p.message());
    file_model = std::move(*p);
    default_algo = file_model->model().algo();
  }
  auto src = sim::ParsePredictionSource(f.predictions, default_algo);
  if (!src.ok()) return Fail("simulate", src.message());
  const bool uses_default = f.predictions.empty() || f.predictions == "shuffled" ||
                            src->kind == sim::PredictionSource::kNoisy ||
                            src->kind == sim::PredictionSource::kConstant || src->kind == sim::PredictionSource::kCsv;
  // The measured rows, built once (they load every catalog graph) when a
  // model's predictions are needed: the default predictor, computed lowo
  // predictions or the controls' memory. Oracle runs never need them.
  std::optional<Dataset> rows;
  if (need_pred && src->kind != sim::PredictionSource::kOracle) {
    auto d = SimulatorDataset(f);
    if (!d.ok()) return Fail("simulate", "the predictions' training rows: " + d.message());
    rows = std::move(*d);
  }
  if (!file_model && need_pred && uses_default) {
    auto p = ShippedPredictor(f, *rows, &file_name);
    if (!p.ok()) return Fail("simulate", "the default predictor: " + p.message());
    file_model = std::move(*p);
    default_algo = file_model->model().algo();
    src = sim::ParsePredictionSource(f.predictions, default_algo);
    if (!src.ok()) return Fail("simulate", src.message());
  }
  const Predictor* file = file_model ? &*file_model : nullptr;
  auto trace = sim::LoadTrace(f.trace, data, {f.jobs, f.skip_bad_lines});
  if (!trace.ok()) return Fail("simulate", trace.message());
  auto cluster = sim::ParseCluster(f.cluster.empty() ? trace->default_cluster : f.cluster, data);
  if (!cluster.ok()) return Fail("simulate", cluster.message());
  auto w = sim::LoadWorkloads(data + "/lucid/single_data.csv");
  if (!w.ok()) return Fail("simulate", w.message());
  std::string pred_label = "none";
  if (need_pred) {
    Status s = Status::Ok();
    if (src->NeedsModel()) s = ModelPredictions(f, *rows, src->name, &*w, file, file_name);
    else if (src->kind == sim::PredictionSource::kCsv) s = sim::LoadPredictionsCsv(src->name, &*w);
    if (!s.ok()) return Fail("simulate", "predicted utilization: " + s.message());
    pred_label = src->Label();
    // The utilization controls (noisy, constant, a CSV without memory) keep
    // the default model's memory predictions, so that they vary utilization only.
    bool missing = false;
    for (const sim::WorkloadProfile& x : *w) missing = missing || !x.HasMemPrediction();
    if (missing && src->kind != sim::PredictionSource::kOracle &&
        !(src->NeedsModel() && src->name == default_algo)) {
      std::vector<sim::WorkloadProfile> model_w = *w;
      Status m = ModelPredictions(f, *rows, default_algo, &model_w, file, file_name);
      if (!m.ok()) return Fail("simulate", "predicted memory: " + m.message());
      for (size_t i = 0; i < w->size(); ++i)
        if (!(*w)[i].HasMemPrediction() && model_w[i].HasMemPrediction()) {
          (*w)[i].pred_mem_mib = model_w[i].pred_mem_mib;
          (*w)[i].pred_mem_high_mib = model_w[i].pred_mem_high_mib;
        }
    }
  }
  // Memory: policies pack by the predicted high end. Oracle predictions know
  // the true memory; without a memory prediction the measured memory stands
  // in, labelled so. Policies that decide without predictions always pack by
  // the measured memory (sim::Simulate hides predictions from them).
  std::string mem_label = need_pred ? "predicted" : "none (measured memory)";
  if (need_pred && src->kind == sim::PredictionSource::kOracle) {
    for (sim::WorkloadProfile& x : *w) x.pred_mem_mib = x.pred_mem_high_mib = x.gmem_mib;
    mem_label = "oracle";
  } else {
    for (sim::WorkloadProfile& x : *w)
      if (!x.HasMemPrediction()) {
        x.pred_mem_mib = x.pred_mem_high_mib = x.gmem_mib;
        if (need_pred) mem_label = "oracle (measured; no memory prediction available)";
      }
  }
  // The RTX 3090 physics from Lucid's pairs, and the K80/P100/V100 physics
  // from Gavel's for clusters of those types (ForGpu).
  auto model = sim::InterferenceModel::Fit(*w, data + "/lucid/colocate_info.csv",
                                           data + "/gavel/simulation_throughputs.json");
  if (!model.ok()) return Fail("simulate", model.message());

  Progress progress("simulate", f.quiet);
  const bool multi_seed = seeds.size() > 1, multi_load = loads->size() > 1;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  if (!f.json)
    std::printf("%-20s %5s %4s %8s %7s %7s %7s %10s %10s %8s %9s %8s %8s\n", "policy", "load", "seed", "bound",
                "useful%", "ideal%", "busy%", "jct_mean_h", "jct_p95_h", "slowdown", "done", "ooms", "events/s");
  for (double load : *loads)
  for (uint64_t seed : seeds) {
    // This seed's arrivals (resampled) at this load, and its predictions.
    sim::Trace t = f.arrivals == "bootstrap" ? sim::ResampleArrivals(*trace, seed) : *trace;
    sim::ScaleArrivals(&t, load);
    std::vector<sim::WorkloadProfile> ws = *w;
    if (need_pred) {
      Status s = sim::ApplyPredictionSource(*src, seed, &ws);
      if (!s.ok()) return Fail("simulate", "predicted utilization: " + s.message());
    }
    // The policies' runs are independent (each its own simulator over the same
    // read-only trace, workloads and physics): `threads` of them at once; their
    // results are written and printed in the policies' order, so the output is
    // the same for any --threads.
    const size_t n_runs = policies.size();
    std::vector<std::optional<Result<sim::SimResult>>> results(n_runs);
    std::vector<double> walls(n_runs, 0.0);
    std::mutex progress_mu;
    std::atomic<size_t> next_run{0};
    auto run_policies = [&] {
      for (size_t i = next_run++; i < n_runs; i = next_run++) {
        const std::string& p = policies[i];
        sim::SimConfig cfg;
        cfg.policy = p;
        cfg.seed = seed;
        cfg.predictions = pred_label;
        cfg.memory_predictions = mem_label;
        cfg.arrivals = f.arrivals == "bootstrap" ? "bootstrap:days,radius=3" : "trace";
        cfg.load_scale = load;
        cfg.options.cap = f.cap;
        cfg.options.cap_by_capacity = *by_capacity;
        cfg.options.max_jobs_per_gpu = f.max_jobs_per_gpu;
        cfg.options.max_slowdown = f.max_slowdown;
        cfg.options.profile_s = f.profile_s;
        cfg.options.profile_warmup_s = f.profile_warmup_s;
        cfg.options.profile_pool_fraction = f.profile_pool;
        cfg.measure_noise_pct = f.measure_noise;
        cfg.options.observe_noise_pct = f.measure_noise;  // the observer knows its instrument
        cfg.options.migrate_z = f.migrate_z;
        cfg.observe_after_s = f.observe_after_s;
        cfg.checkpoint_s = f.checkpoint_s;
        cfg.oom_after_s = f.oom_after_s;
        cfg.restart_s = f.restart_s;
        cfg.recurring = f.recurring;
        cfg.workload_mix = f.workload_mix;
        cfg.rate_noise = f.rate_noise;
        cfg.options.confident_sd = f.confident_sd >= 0 ? f.confident_sd : f.measure_noise;
        cfg.options.interval_z = f.interval_z;
        cfg.options.admit_by_physics = f.admit_by_physics;
        const std::string run = p + (multi_load ? " load " + Short(load) : "") + " seed " + std::to_string(seed);
        cfg.progress = [&progress, &progress_mu, run](double t, int64_t done, int64_t total) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "%s: simulated time %.1f days, %lld/%lld jobs done", run.c_str(), t / 86400,
                        static_cast<long long>(done), static_cast<long long>(total));
          std::lock_guard<std::mutex> lock(progress_mu);
          progress.Update(buf);
        };
        const auto t0 = std::chrono::steady_clock::now();
        Result<sim::SimResult> r = sim::Simulate(t, *cluster, ws, *model, cfg);
        walls[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r.ok()) {
          char buf[256];
          std::snprintf(buf, sizeof buf, "%s done in %.1f s: useful work %.2f%%, busy %.2f%%, JCT mean %.0f s, %lld jobs",
                        run.c_str(), walls[i], r->useful_work_utilization, r->cluster_utilization, r->jct_mean_s,
                        static_cast<long long>(r->jobs_done));
          std::lock_guard<std::mutex> lock(progress_mu);
          progress.Result(buf);
        }
        results[i] = std::move(r);
      }
    };
    const size_t threads = std::min<size_t>(
        n_runs, f.threads > 0 ? static_cast<size_t>(f.threads) : std::max(1u, std::thread::hardware_concurrency()));
    {
      std::vector<std::jthread> pool;
      for (size_t k = 1; k < threads; ++k) pool.emplace_back(run_policies);
      run_policies();
    }  // joined
    for (size_t i = 0; i < n_runs; ++i) {
      const std::string& p = policies[i];
      const Result<sim::SimResult>& r = *results[i];
      const double wall = walls[i];
      if (!r.ok()) return Fail("simulate", r.message());
      std::string dir = f.out;
      if (multi_load) dir += "/load-" + Short(load);
      if (multi_seed) dir += "/seed-" + std::to_string(seed);
      if (policies.size() > 1) dir += "/" + p;
      if (Status s = sim::WriteResult(*r, ws, dir); !s.ok()) return Fail("simulate", s.message());
      nlohmann::ordered_json s = nlohmann::ordered_json::parse(sim::SummaryJson(*r));
      s["out"] = dir;
      s["wall_s"] = wall;
      all.push_back(s);
      if (!f.json)
        std::printf("%-20s %5s %4llu %8s %7.2f %7.2f %7.2f %10.1f %10.1f %8.2f %9lld %8lld %8.0f\n", p.c_str(),
                    Short(load).c_str(), static_cast<unsigned long long>(seed), r->bound_kind.c_str(),
                    r->useful_work_utilization, r->ideal_work_utilization, r->cluster_utilization,
                    r->jct_mean_s / 3600, r->jct_p95_s / 3600, r->mean_slowdown, static_cast<long long>(r->jobs_done),
                    static_cast<long long>(r->oom_events), wall > 0 ? r->events / wall : 0.0);
    }
  }
  // Per load point and policy: mean and sd over seeds of the headline metrics.
  const char* keys[] = {"useful_work_utilization", "ideal_work_utilization", "cluster_utilization", "jct_mean_s",
                        "jct_p50_s", "jct_p95_s", "jct_p99_s", "mean_slowdown", "queue_mean_s", "makespan_s",
                        "load_factor", "window_s", "useful_work_trace_window", "ideal_work_trace_window",
                        "profiling_gpu_s", "migrations", "lost_progress_s", "oom_events", "oom_lost_gpu_h",
                        "prediction_mae", "jobs_total", "restart_work_utilization"};
  nlohmann::ordered_json per_load = nlohmann::ordered_json::array();
  nlohmann::ordered_json agg = nlohmann::ordered_json::object();
  if (!f.json && (multi_seed || multi_load)) std::printf("\nper load point (mean +- sd over seeds %s):\n", f.seeds.empty() ? std::to_string(f.seed).c_str() : f.seeds.c_str());
  for (double load : *loads)
  for (const std::string& p : policies) {
    nlohmann::ordered_json e;
    e["load_scale"] = load;
    e["policy"] = p;
    int capacity = 0, n = 0;
    for (const auto& r : all)
      if (r["policy"] == p && r["load_scale"].get<double>() == load) {
        ++n;
        capacity += r["bound_kind"] == "capacity";
      }
    e["runs"] = n;
    e["capacity_bound_runs"] = capacity;
    for (const char* k : keys) {
      std::vector<double> v;
      for (const auto& r : all)
        if (r["policy"] == p && r["load_scale"].get<double>() == load && r[k].is_number()) v.push_back(r[k].get<double>());
      if (v.empty()) continue;
      auto [m, sd] = MeanSd(v);
      e[k] = {{"mean", m}, {"sd", sd}, {"n", v.size()}};
    }
    if (!multi_load) {
      nlohmann::ordered_json o = e;
      o.erase("load_scale");
      o.erase("policy");
      agg[p] = o;
    }
    if (!f.json && (multi_seed || multi_load))
      std::printf("%-20s load %-5s %d/%d capacity-bound  useful %.2f +- %.2f %%  JCT mean %.1f +- %.1f h  p95 %.1f h  "
                  "slowdown %.2f\n",
                  p.c_str(), Short(load).c_str(), capacity, n, e["useful_work_utilization"]["mean"].get<double>(),
                  e["useful_work_utilization"]["sd"].get<double>(), e["jct_mean_s"]["mean"].get<double>() / 3600,
                  e["jct_mean_s"]["sd"].get<double>() / 3600, e["jct_p95_s"]["mean"].get<double>() / 3600,
                  e["mean_slowdown"]["mean"].get<double>());
    per_load.push_back(e);
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
  meta["gpu_types"] = [&] {
    std::vector<std::string> types;
    for (const sim::Gpu& g : cluster->gpus)
      if (std::find(types.begin(), types.end(), g.type) == types.end()) types.push_back(g.type);
    return types;
  }();
  meta["seed"] = f.seed;
  if (multi_seed) meta["seeds"] = seeds;
  meta["load_factors"] = *loads;
  meta["arrivals"] = f.arrivals;
  meta["predictions"] = pred_label;
  meta["memory_predictions"] = mem_label;
  meta["measure_noise_pct"] = f.measure_noise;
  meta["migrate_z"] = f.migrate_z;
  meta["profile_warmup_s"] = f.profile_warmup_s;
  meta["profile_s"] = f.profile_s;
  meta["profile_pool"] = f.profile_pool;
  meta["observe_after_s"] = f.observe_after_s;
  meta["checkpoint_s"] = f.checkpoint_s;
  meta["oom_after_s"] = f.oom_after_s;
  meta["cap_rule"] = sim::CapRuleName(*by_capacity);
  sim::PolicyOptions cap_options;
  cap_options.cap = f.cap;
  cap_options.cap_by_capacity = *by_capacity;
  meta["cap"] = sim::EffectiveCap(cap_options, *model);
  meta["max_jobs_per_gpu"] = f.max_jobs_per_gpu;
  meta["restart_s"] = f.restart_s;
  meta["recurring"] = f.recurring;
  meta["workload_mix"] = f.workload_mix;
  meta["confident_sd"] = f.confident_sd >= 0 ? f.confident_sd : f.measure_noise;
  meta["rate_noise"] = f.rate_noise;
  if (f.interval_z > 0) meta["interval_z"] = f.interval_z;
  if (f.admit_by_physics) meta["admit_by_physics"] = true;
  meta["interference"] = InterferenceJson(*model);
  meta["runs"] = all;
  meta["per_load"] = per_load;
  if (multi_seed && !multi_load) meta["over_seeds"] = agg;
  std::error_code ec;
  std::filesystem::create_directories(f.out, ec);
  const bool several = policies.size() > 1 || multi_seed || multi_load;
  const std::string meta_path = f.out + (several ? "/runs.json" : "/run.json");
  std::ofstream(meta_path) << JsonText(meta, 2) << "\n";
  if (f.json) {
    std::cout << JsonText(meta, 2) << "\n";
  } else {
    std::printf("trace %s: %zu jobs (%lld bad lines skipped, %lld non-GPU rows), cluster '%s' (%zu GPUs), "
                "predictions %s, memory %s, arrivals %s, seed %llu\nwrote %s (placements.csv has every job's GPU "
                "intervals)\n",
                trace->name.c_str(), trace->jobs.size(), static_cast<long long>(trace->bad_lines),
                static_cast<long long>(trace->filtered), cluster->spec.c_str(), cluster->gpus.size(),
                pred_label.c_str(), mem_label.c_str(), f.arrivals.c_str(), static_cast<unsigned long long>(f.seed),
                f.out.c_str());
  }
  return 0;
}

}  // namespace

CLI::App* AddSimulate(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* sub = root.add_subcommand("simulate", "Trace-driven cluster simulation of co-location policies");
  AddGpuTable(sub, &flags->gpu_table);
  std::string pol;
  for (const sim::PolicyRow& r : sim::Policies()) pol += std::string("\n  ") + r.name + ": " + r.description;
  sub->add_option("--trace", flags->trace, "philly, alibaba2023, gavel, or a CSV path (docs/simulator.md)")->required();
  sub->add_option("--policy", flags->policy, "all, or one or a comma list of:" + pol)->required();
  sub->add_option("--cluster", flags->cluster,
                  "'64x RTX3090' (a GPU type of the GPU table), 'nodes=8,gpus_per_node=8[,mem_gib=24][,type=T]', several "
                  "such node groups separated by ';' (a mixed cluster), "
                  "'alibaba-nodes[:every=N][:G2=T][:G3=T]' (default: per trace)");
  sub->add_option("--jobs", flags->jobs, "Keep the first N jobs by submit time");
  sub->add_option("--load-factor", flags->load_factors,
                  "Compress inter-arrival times by F (repeatable, or a comma list: one run per F under OUT/load-F); "
                  "default 1");
  sub->add_option("--arrivals", flags->arrivals,
                  "bootstrap: each seed resamples the arrivals (a local block bootstrap of days, docs/simulator.md); "
                  "trace: the trace's own arrivals")
      ->capture_default_str();
  sub->add_option("--seed", flags->seed, "Seed of the arrivals, workload assignment, predictions' noise and "
                  "measurement noise")->capture_default_str();
  sub->add_option("--seeds", flags->seeds, "Several seeds, e.g. 1-5 or 1,3,7: one run each under OUT/seed-S, "
                  "mean +- sd per load point in runs.json (per_load)");
  sub->add_option("--threads", flags->threads,
                  "policy runs of one load point and seed simulated at once (each run is independent; the "
                  "results and files are the same for any value); 0: one per CPU core")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  sub->add_flag("--skip-bad-lines", flags->skip_bad_lines, "Skip and count malformed trace lines");
  auto* cap_opt = sub->add_option("--cap", flags->cap, "Max sum of utilization per GPU, percent (--cap-rule sum)")
                      ->capture_default_str();
  sub->add_option("--cap-rule", flags->cap_rule,
                  "The capped policies' rule: sum (the paper's: a GPU's summed utilization <= --cap) or capacity "
                  "(<= 100 x the fitted physics' work capacity c, 120 on the RTX 3090: the corner of the GPU's "
                  "work curve, as 100 is time-slicing's)")
      ->capture_default_str();
  flags->cap_given = cap_opt;
  sub->add_option("--max-jobs-per-gpu", flags->max_jobs_per_gpu,
                  "The most jobs any policy co-locates on one GPU; 0: no limit. The default is the most jobs "
                  "the interference physics was measured on (pairs: Lucid's colocate_info.csv and Gavel's "
                  "throughputs); beyond it the physics is extrapolated (docs/simulator.md, Co-location degree)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--max-slowdown", flags->max_slowdown, "interference-aware: max predicted slowdown per job")
      ->capture_default_str();
  sub->add_option("--profile-s", flags->profile_s, "profiling: measured window of the solo run, s")->capture_default_str();
  sub->add_option("--profile-warmup-s", flags->profile_warmup_s, "profiling: solo warm-up before the window, s")
      ->capture_default_str();
  sub->add_option("--profile-pool", flags->profile_pool, "profiling-pool: share of the GPUs kept for profiling")
      ->capture_default_str();
  sub->add_option("--measure-noise", flags->measure_noise,
                  "sd of a utilization counter reading (profiling window, feedback observation), percent points")
      ->capture_default_str();
  sub->add_option("--observe-after-s", flags->observe_after_s,
                  "predictive-feedback: read a running job's utilization counter after this long, s")
      ->capture_default_str();
  FloatIn(sub->add_option("--migrate-z", flags->migrate_z,
                  "predictive-feedback, predictive-hybrid: migrate off a GPU only when its estimated "
                  "sum exceeds the cap by more than this many sd of that sum (the residents' estimates' own sd: "
                  "observations and predictions); 0: at any excess")
              ->capture_default_str(),
          0.0, 10.0);
  sub->add_option("--restart-s", flags->restart_s,
                  "Restart cost: a job restarting from a checkpoint (a migration, profiling-exclusive's re-queue "
                  "after its window, an out-of-memory re-queue) spends this long before it progresses again, s")
      ->capture_default_str();
  sub->add_option("--recurring", flags->recurring,
                  "Share of jobs whose graph ran before: the prediction-driven policies know their utilization "
                  "from that observation (true + measurement noise, interval +-2 sd) and their memory")
      ->capture_default_str();
  sub->add_option("--workload-mix", flags->workload_mix,
                  "size-aware: a multi-GPU job draws only workloads trained data parallel in the measured sources "
                  "(docs/simulator.md); uniform: every job draws from every workload row")
      ->capture_default_str();
  sub->add_option("--confident-sd", flags->confident_sd,
                  "predictive-hybrid: place a job at once when its prediction's sd (its interval's) is at most "
                  "this many points, else measure it first in place (default: --measure-noise: a prediction at "
                  "least as precise as the measurement it replaces)")
      ->default_str("--measure-noise");
  sub->add_flag("--admit-by-physics", flags->admit_by_physics,
               "predictive: admit a job to an occupied GPU when the fitted physics keeps every job there at rate >= "
               "1 - --max-slowdown (interference-aware's admission) instead of by the cap; packing stays best fit");
  sub->add_option("--interval-z", flags->interval_z,
                  "predictive, predictive-spread: a job joins an occupied GPU only when the sum of predictions "
                  "plus Z x the root of their summed variances (each prediction's sd as its interval states it) "
                  "stays within the cap; 0: the point predictions (the paper's)")
      ->capture_default_str();
  sub->add_option("--rate-noise", flags->rate_noise,
                  "relative sd of a running job's progress rate as the observer sees it (step counts)")
      ->capture_default_str();
  sub->add_option("--checkpoint-s", flags->checkpoint_s,
                  "A job checkpoints every this many solo-seconds of progress; a migrated or out-of-memory job "
                  "restarts from its last checkpoint")
      ->capture_default_str();
  sub->add_option("--oom-after-s", flags->oom_after_s,
                  "A job that over-commits a GPU's memory crashes this long after it starts there, s")
      ->capture_default_str();
  sub->add_option("--predictions", flags->predictions,
                  std::string("oracle | noisy:SD[@DRAW] | constant:U | shuffled[:ALGO] | ALGO | a CSV "
                              "model,dataset,batchsize,amp,predicted_util[,pred_mem_mib,pred_mem_high_mib] "
                              "(default: the predictor `gpucast train` makes on the simulator's rows, Lucid's, evaluated leave one workload "
                              "out: its algorithm (") + kDefaultAlgo + "'s pick on all workloads) fitted without each "
                              "workload; `auto`: the selection itself evaluated nested, slower)");
  sub->add_option("--predictor", flags->predictor,
                  "Predictor file (gpucast train): its algorithm replaces the default, and the leave-one-workload-out "
                  "predictions its training stored are used instead of recomputed when they are valid for the "
                  "simulator's rows (same data, schema, default feature set, seed 0); else computed, the reason on "
                  "stderr. Without it, the default is the predictor train would ship on these rows (docs/simulator.md)");
  sub->add_option("--catalog", flags->catalog, "Workload catalog (for the model's predictions)")
      ->default_str(kDefaultCatalogShown);
  sub->add_option("--out", flags->out, "Output directory (one subdirectory per load, seed and policy when several)")
      ->required();
  sub->add_flag("--json", flags->json, "Print the run summary as JSON (schema gpucast.simulate; docs/json.md)");
  sub->add_flag("--quiet,-q", flags->quiet,
                "No progress on stderr (by default each run's result is printed there as it finishes, and "
                "where a long one is every 5 s)");
  sub->footer(kPathsFooter);
  sub->callback([flags, exit_code] { *exit_code = RunSimulate(*flags); });
  return sub;
}

}  // namespace gpucast::cli
