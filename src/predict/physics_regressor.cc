// `physics`: a physical step-time model fitted on utilization, step time and
// GPU-busy time per step (docs/predictor.md). Per training step, in seconds
// (feature names from gpucast-features; the est_* times are computed on the
// row's GPU spec, or on its MIG slice's effective spec):
//
//   gpu    = est_compute_ms/1e3 / eff_compute + est_memory_ms/1e3 / eff_memory
//            + kernel_count * gpu_s_per_kernel                      (busy time)
//            (tensor_core_split = 1, an experiment: a row with amp = 1 divides its
//            compute term by an eighth parameter eff_tensor_core instead)
//   launch = kernel_count * host_s_per_kernel * (1 + amp * amp_host_factor)
//   core   = max(gpu, launch) + host_s_per_step
//            kernel launches are asynchronous: the host issues them while the
//            GPU runs earlier ones, so over a step the slower of the two
//            binds; host_s_per_step is the per-step host work done while the
//            GPU waits (after a synchronisation: loss.item(), fetching the
//            next batch, GradScaler's inf check), in series
//   loader = (1 - data_on_gpu) * batch_size * per_sample / max(1, loader_workers)
//            per_sample = loader_ms_per_sample/1e3 when given; else, for a job
//            with an input pipeline (data not on the GPU, no RL environment),
//            the median of the training workloads' fitted per-sample times
//   step   = max(core, loader) if loader_workers > 0 else core + loader
//            + rl_env * rl_s_per_env_step * (env_steps_per_update when given, else 1)
//   util % = 100 * gpu / step                 in [0, 100] by construction (step >= gpu)
//
// The input pipeline of a measured workload is a fact of that job which no
// feature shows (PointNet parses text files per sample): in fitting, each
// training workload whose rows have an input pipeline of unknown cost gets
// its own per-sample time, profiled out on a fixed grid (kLoaderGrid) inside
// the loss, so that such a workload is explained by its loader instead of
// bending the global parameters. Its batch-linear signature separates it from
// the host terms, which do not grow with the batch.
//
// Each measured workload's implied per-step host work (its measured idle time
// less the model's other idle terms, median over its rows) gives the central
// `interval` range across workloads (HostStepRange): the host_s_per_step of a
// script without measured rows lies there (the predictor's risk band).
//
// Utilization rises with the batch (the per-kernel and host terms do not
// grow with it) until the GPU or the input pipeline binds; it never exceeds
// 100 whatever the inputs. Seven global parameters, fitted by a robust
// (soft-L1) loss on the residuals of log1p(util), log(step) and log(busy) of
// every training row that has them (busy = util/100 * step), by Nelder-Mead
// in bounded log coordinates from a fixed set of starts (deterministic; the
// seed is unused). Its own interval: the point plus the central quantiles of
// the training residuals (the predictor replaces it by a calibrated one).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <type_traits>

#include "predict/physics.h"
#include "predict/bounded_theta.h"
#include "predict/nelder_mead.h"
#include "predict/regressor.h"

namespace gpucast {
namespace {

using nlohmann::json;

struct ThetaDef {
  const char* name;
  double lo, hi;  // physical bounds; searched on a log scale
  double start;   // order-of-magnitude starting guess
};
constexpr ThetaDef kTheta[] = {
    {"eff_compute", 0.02, 1.0, 0.4},            // achieved fraction of peak FLOP/s
    {"eff_memory", 0.02, 1.0, 0.5},             // achieved fraction of peak bandwidth
    {"gpu_s_per_kernel", 1e-7, 1e-4, 3e-6},     // launch latency + tail of a tiny kernel
    {"host_s_per_kernel", 1e-6, 1e-3, 2e-5},    // eager dispatch + autograd + launch
    {"amp_host_factor", 1e-3, 10.0, 0.5},       // extra host work per kernel under autocast
    {"rl_s_per_env_step", 1e-6, 10.0, 1e-2},    // CPU environment per env step
    {"host_s_per_step", 1e-6, 0.1, 1e-3},       // per-step host work while the GPU waits (in series)
};
// Per-sample input-pipeline times a training workload's latent loader is
// chosen from: 0, then 1 us to 100 ms in 31 log steps (a factor 1.47 apart).
constexpr int kLoaderGridSize = 32;
double LoaderGrid(int k) { return k == 0 ? 0.0 : std::pow(10.0, -6.0 + 5.0 * (k - 1) / 30.0); }
constexpr double kMaxLoaderSPerSample = 0.1;
constexpr int kNumTheta = sizeof kTheta / sizeof *kTheta;
using Theta = std::array<double, kNumTheta>;
// With tensor_core_split: the seven and the efficiency of a mixed-precision (amp) row's compute.
constexpr ThetaDef kThetaSplit[] = {kTheta[0], kTheta[1], kTheta[2], kTheta[3], kTheta[4], kTheta[5], kTheta[6],
                                    {"eff_tensor_core", 0.02, 1.0, 0.4}};
constexpr int kNumThetaSplit = kNumTheta + 1;

// Columns the model reads; the optional ones may be absent from the schema.
enum Col {
  kCompute, kMemory, kKernels, kAmp, kBatch, kWorkers, kOnGpu, kRl,
  kLoaderMs, kLoaderMsKnown, kEnvSteps, kEnvStepsKnown, kParams, kNumCols
};
constexpr const char* kColumns[kNumCols] = {
    "est_compute_ms", "est_memory_ms", "kernel_count", "amp", "batch_size", "loader_workers",
    "data_on_gpu", "rl_env", "loader_ms_per_sample", "loader_ms_per_sample_known",
    "env_steps_per_update", "env_steps_per_update_known", "params"};
constexpr int kNumRequired = kLoaderMs;
using Row = std::array<double, kNumCols>;

// A row with an input pipeline whose cost was not given: its loader time is
// the model's (fitted per workload in training, the median at prediction).
bool UnknownPipeline(const Row& r) { return r[kOnGpu] == 0 && r[kRl] == 0 && !(r[kLoaderMsKnown] > 0); }

// The step of a row; `per_sample`: the loader's seconds per sample per worker
// when the row does not give its own.
// `host`: the host's speed factor (StepVariation::host_factor; 1 in fitting).
// `per_step`: the per-step host seconds in series (NaN: t's host_s_per_step).
// `eff_tc`: the compute efficiency of an amp row (tensor_core_split); NaN: eff_compute's.
PhysicsStep Step(const Theta& t, const Row& r, double per_sample, double host = 1, double per_step = std::nan(""),
                 double eff_tc = std::nan("")) {
  PhysicsStep s;
  const double eff_compute = r[kAmp] > 0 && !std::isnan(eff_tc) ? eff_tc : t[0];
  s.gpu_s = r[kCompute] * 1e-3 / eff_compute + r[kMemory] * 1e-3 / t[1] + r[kKernels] * t[2];
  double launch = host * r[kKernels] * t[3] * (1 + r[kAmp] * t[4]);
  if (r[kLoaderMsKnown] > 0) {
    per_sample = r[kLoaderMs] * 1e-3;  // stated: measured on the job's own host
  } else if (!UnknownPipeline(r)) {
    per_sample = 0;  // data on the GPU, or an RL environment (its own term): as in the fit
  } else {
    per_sample *= host;
    s.unknown_pipeline = true;
  }
  double loader = (1 - r[kOnGpu]) * r[kBatch] * per_sample / std::max(1.0, r[kWorkers]);
  double core = std::max(s.gpu_s, launch) + host * (std::isnan(per_step) ? t[6] : per_step);
  double step = r[kWorkers] > 0 ? std::max(core, loader) : core + loader;
  s.core_s = core;
  s.slack_s = r[kWorkers] > 0 ? std::max(0.0, loader - core) : 0.0;
  step += host * r[kRl] * t[5] * (r[kEnvStepsKnown] > 0 ? r[kEnvSteps] : 1.0);
  s.step_s = step;
  s.util = step > 0 ? std::min(100.0, 100 * s.gpu_s / step) : 0;
  return s;
}

class Physics : public PhysicsModel {
 public:
  explicit Physics(const RegressorOptions& options) : split_(options.tensor_core_split ? 1 : 0) {}
  std::string Algo() const override { return "physics"; }
  Status Configure(const json& p) override { return ApplyParams(Algo(), p, Specs()); }
  json Params() const override {
    json j = ParamsJson(const_cast<Physics*>(this)->Specs());
    if (!(split_ > 0)) j.erase("tensor_core_split");  // off: the files as before the setting
    return j;
  }
  std::vector<std::string> RequiredFeatures() const override {
    return std::vector<std::string>(kColumns, kColumns + kNumRequired);
  }
  void SetStepTimes(const std::vector<double>& step_s) override { step_s_ = step_s; }
  void SetGroups(const std::vector<int>& group) override { group_ = group; }

  Status SetFeatureNames(const std::vector<std::string>& names) override {
    for (int c = 0; c < kNumCols; ++c) {
      auto it = std::find(names.begin(), names.end(), kColumns[c]);
      if (it == names.end()) {
        if (c < kNumRequired)
          return Status::Error(std::string("physics: needs feature '") + kColumns[c] +
                               "' (use feature set 'all' or 'paper+physical')");
        index_[c] = -1;
      } else {
        index_[c] = static_cast<int>(it - names.begin());
      }
    }
    cols_ = names.size();
    named_ = true;
    return Status::Ok();
  }

  Status Fit(const Matrix& x, const std::vector<double>& y, uint64_t /*seed*/) override {
    // A NaN target is a step-only row (no utilization measured): its step time is fitted.
    std::vector<double> y_checked = y;
    for (size_t i = 0; i < y_checked.size(); ++i)
      if (std::isnan(y_checked[i]) && i < step_s_.size() && step_s_[i] > 0) y_checked[i] = 0;
    RETURN_IF_ERROR(CheckTrainingSet(Algo(), x, y_checked));
    if (!named_) return Status::Error("physics: feature names not set");
    RETURN_IF_ERROR(CheckColumns(Algo(), x, cols_));
    if (!step_s_.empty() && step_s_.size() != y.size())
      return Status::Error("physics: " + std::to_string(step_s_.size()) + " step times for " +
                           std::to_string(y.size()) + " rows");
    std::vector<Row> rows = Rows(x);
    std::vector<double> log_step(y.size(), std::nan("")), log_busy(y.size(), std::nan(""));
    for (size_t i = 0; i < y.size() && !step_s_.empty(); ++i) {
      double s = step_s_[i], util = std::expm1(y[i]);
      if (std::isfinite(s) && s > 0) {
        log_step[i] = std::log(s);
        if (util > 0) log_busy[i] = std::log(util / 100 * s);
      }
    }
    auto rho = [&](double d) { return 2 * delta_ * delta_ * (std::sqrt(1 + d * d / (delta_ * delta_)) - 1); };
    // Rows of unknown input pipelines, by workload: each workload's loader
    // time is profiled out (the grid value of least loss for its rows).
    std::map<int, std::vector<size_t>> latent;
    for (size_t i = 0; i < rows.size(); ++i)
      if (UnknownPipeline(rows[i])) latent[group_.size() == rows.size() ? group_[i] : 0].push_back(i);
    auto row_loss = [&](const Theta& t, double eff_tc, size_t i, double per_sample) {
      PhysicsStep p = Step(t, rows[i], per_sample, 1, std::nan(""), eff_tc);
      double s = std::isnan(y[i]) ? 0.0 : rho(std::log1p(p.util) - y[i]);
      if (std::isfinite(log_step[i]) && p.step_s > 0) s += rho(std::log(p.step_s) - log_step[i]);
      if (std::isfinite(log_busy[i]) && p.gpu_s > 0) s += rho(std::log(p.gpu_s) - log_busy[i]);
      return s;
    };
    // Loss and, per latent workload, its loader seconds per sample.
    auto profile = [&](const Theta& t, double eff_tc, std::vector<double>* loaders) {
      double s = 0;
      for (size_t i = 0; i < rows.size(); ++i)
        if (!UnknownPipeline(rows[i])) s += row_loss(t, eff_tc, i, 0);
      for (const auto& [g, idx] : latent) {
        double best = INFINITY, best_l = 0;
        for (int k = 0; k < kLoaderGridSize; ++k) {
          double l = 0;
          for (size_t i : idx) l += row_loss(t, eff_tc, i, LoaderGrid(k));
          if (l < best) best = l, best_l = LoaderGrid(k);
        }
        s += best;
        if (loaders) loaders->push_back(best_l);
      }
      return s / rows.size();
    };
    // The parameters from a point of the search (N = 7, or 8 with the tensor-core split).
    auto unpack = [](const auto& full, Theta* t, double* eff_tc) {
      for (int i = 0; i < kNumTheta; ++i) (*t)[i] = full[i];
      *eff_tc = full.size() > static_cast<size_t>(kNumTheta) ? full[kNumTheta] : std::nan("");
    };
    auto search = [&](const auto& defs) {
      using Z = std::array<double, std::extent_v<std::remove_reference_t<decltype(defs)>>>;
      auto loss = [&](const Z& z) {
        Theta t;
        double eff_tc;
        unpack(ThetaFromZ(defs, z), &t, &eff_tc);
        return profile(t, eff_tc, nullptr);
      };
      // Fixed starts: the guesses, and each parameter moved to either end of a
      // central band in turn (2 * N + 1 starts); short runs, best 3 refined.
      std::vector<Z> starts;
      Z z0;
      for (size_t i = 0; i < z0.size(); ++i) z0[i] = ThetaToZ(defs[i], defs[i].start);
      starts.push_back(z0);
      for (size_t i = 0; i < z0.size(); ++i)
        for (double d : {-2.0, 2.0}) {
          Z z = z0;
          z[i] += d;
          starts.push_back(z);
        }
      std::vector<std::pair<double, Z>> runs;
      for (const Z& z : starts) {
        Z zf = NelderMead(loss, z, 1.0, static_cast<int>(evals_ / 4), 1e-10);
        runs.push_back({loss(zf), zf});
      }
      std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      Z best = runs[0].second;
      double best_loss = runs[0].first;
      for (size_t k = 0; k < 3 && k < runs.size(); ++k) {
        Z z = runs[k].second;
        for (int round = 0; round < 3; ++round) z = NelderMead(loss, z, 0.3, static_cast<int>(evals_), 1e-10);
        if (double l = loss(z); l < best_loss) best_loss = l, best = z;
      }
      unpack(ThetaFromZ(defs, best), &theta_, &eff_tc_);
    };
    // eff_tensor_core is fitted only where the training rows can tell it: an amp row with a measured
    // utilization (its busy time apart from its host time). An amp step alone cannot tell tensor
    // cores slower than the model from more host work per kernel under autocast (amp_host_factor):
    // both lengthen it (as a step-only workload's loader and a slower GPU, below). Without such a row
    // (no amp rows, or only step-only ones: Pollux) the fit is the one-efficiency fit and
    // eff_tensor_core is eff_compute (tc_identified_ false; docs/predictor.md).
    tc_identified_ = false;
    for (size_t i = 0; i < rows.size(); ++i) tc_identified_ = tc_identified_ || (rows[i][kAmp] > 0 && !std::isnan(y[i]));
    if (split_ > 0 && tc_identified_) {
      search(kThetaSplit);
    } else {
      search(kTheta);
      if (split_ > 0) eff_tc_ = theta_[0];
    }
    workload_loaders_.clear();
    profile(theta_, eff_tc_, &workload_loaders_);
    // Which latent workloads are identified: a workload of step-only rows
    // (Pollux) cannot tell its loader from a GPU slower than the model says
    // (both lengthen its step linearly in the batch; utilization is what
    // separates them), so its fitted loader stays its own (reported) and is
    // neither carried to its graph on other GPUs nor part of the median below.
    // If no workload has a utilization, every one counts.
    std::vector<bool> identified;
    for (const auto& [g, idx] : latent) {
      bool util = false;
      for (size_t i : idx) util = util || !std::isnan(y[i]);
      identified.push_back(util);
    }
    if (std::none_of(identified.begin(), identified.end(), [](bool b) { return b; }))
      identified.assign(identified.size(), true);
    // Each identified latent workload's loader, keyed by its graph (the params feature, the same on
    // all its rows): a job of that graph with an unstated pipeline gets it on any GPU (its CPU work
    // per sample is the job's, not the GPU's).
    loader_by_params_.clear();
    if (index_[kParams] >= 0) {
      size_t k = 0;
      for (const auto& [g, idx] : latent) {
        const double p = rows[idx[0]][kParams];
        bool one_graph = true;
        for (size_t i : idx) one_graph = one_graph && rows[i][kParams] == p;
        if (one_graph && k < workload_loaders_.size() && identified[k]) loader_by_params_[p] = workload_loaders_[k];
        ++k;
      }
    }
    // An unseen job with an input pipeline of unknown cost: the median
    // identified training workload's (one like PointNet cannot decide it).
    {
      std::vector<double> pool;
      for (size_t k = 0; k < workload_loaders_.size() && k < identified.size(); ++k)
        if (identified[k]) pool.push_back(workload_loaders_[k]);
      loader_s_per_sample_ = pool.empty() ? 0.0 : Quantile(pool, 0.5);
    }
    // Each measured workload's per-step host work: what its rows' measured
    // idle time (step - busy, both measured) leaves after the model's other
    // idle terms (launches beyond the busy time, an in-series loader, the RL
    // environment), median over its rows, at least 0. host_s_per_step is one
    // global value; these show how far a script's own per-step work
    // (logging, metrics, a worker's batch hand-over) spreads around it.
    {
      std::map<int, size_t> latent_index;
      {
        size_t k = 0;
        for (const auto& [g, idx] : latent) latent_index[g] = k++;
      }
      std::map<int, std::vector<double>> implied;
      for (size_t i = 0; i < rows.size(); ++i) {
        if (std::isnan(y[i]) || !(i < step_s_.size() && std::isfinite(step_s_[i]) && step_s_[i] > 0)) continue;
        const Row& r = rows[i];
        const int g = group_.size() == rows.size() ? group_[i] : 0;
        double per_sample = 0;
        if (UnknownPipeline(r)) {
          auto k = latent_index.find(g);
          per_sample = k != latent_index.end() && k->second < workload_loaders_.size() ? workload_loaders_[k->second] : 0;
        }
        const PhysicsStep p = Step(theta_, r, per_sample, 1, 0.0, eff_tc_);  // the model's step without per-step host work
        const double busy = std::expm1(y[i]) / 100 * step_s_[i];
        const double idle = step_s_[i] - busy, model_idle = std::max(0.0, p.step_s - p.gpu_s);
        implied[g].push_back(std::max(0.0, idle - model_idle));
      }
      std::vector<double> per_workload;
      for (auto& [g, v] : implied) per_workload.push_back(Quantile(v, 0.5));
      host_step_low_ = host_step_high_ = std::nan("");
      if (per_workload.size() >= 3) {
        host_step_low_ = Quantile(per_workload, (1 - interval_) / 2);
        host_step_high_ = Quantile(per_workload, (1 + interval_) / 2);
      }
    }
    std::vector<double> resid;
    for (size_t i = 0; i < rows.size(); ++i)
      if (!std::isnan(y[i]))
        resid.push_back(y[i] - std::log1p(Step(theta_, rows[i], loader_s_per_sample_, 1, std::nan(""), eff_tc_).util));
    resid_low_ = Quantile(resid, (1 - interval_) / 2);
    resid_high_ = Quantile(resid, (1 + interval_) / 2);
    fitted_ = true;
    return Status::Ok();
  }

  Result<std::vector<Estimate>> Predict(const Matrix& x) const override {
    ASSIGN_OR_RETURN(std::vector<PhysicsStep> steps, PredictSteps(x));
    std::vector<Estimate> out;
    for (const PhysicsStep& s : steps) {
      Estimate e;
      e.mean = std::log1p(s.util);
      e.low = std::min(e.mean, e.mean + resid_low_);
      e.high = std::max(e.mean, e.mean + resid_high_);
      out.push_back(e);
    }
    return out;
  }

  Result<std::vector<PhysicsStep>> PredictSteps(const Matrix& x) const override {
    return PredictSteps(x, StepVariation{});
  }

  Result<std::vector<PhysicsStep>> PredictSteps(const Matrix& x, const StepVariation& v) const override {
    if (!fitted_) return Status::Error("physics: not fitted");
    RETURN_IF_ERROR(CheckColumns(Algo(), x, cols_));
    if (!(v.host_factor > 0)) return Status::Error("physics: host factor must be > 0");
    const double loader = std::isnan(v.unknown_loader_s_per_sample) ? loader_s_per_sample_ : v.unknown_loader_s_per_sample;
    std::vector<PhysicsStep> out;
    for (const Row& r : Rows(x)) {
      double l = loader;
      // A graph of a measured workload (own_loaders): its fitted loader, also in the what-if
      // scenarios (it is measured, not unknown; only the host's speed scales it).
      auto own = v.own_loaders && index_[kParams] >= 0 ? loader_by_params_.find(r[kParams]) : loader_by_params_.end();
      if (own != loader_by_params_.end()) l = own->second;
      PhysicsStep s = Step(theta_, r, l, v.host_factor, v.host_s_per_step, eff_tc_);
      if (own != loader_by_params_.end() && s.unknown_pipeline) {
        s.own_loader_s_per_sample = own->second;
        s.unknown_pipeline = false;
      }
      out.push_back(s);
    }
    return out;
  }

  Result<json> Save() const override {
    if (!fitted_) return Status::Error("physics: not fitted");
    json j = SaveTheta(kTheta, theta_, resid_low_, resid_high_);
    if (split_ > 0) {
      j["theta"]["eff_tensor_core"] = eff_tc_;
      j["eff_tensor_core_identified"] = tc_identified_;  // reported; false: eff_compute's (Fit)
    }
    j["loader_s_per_sample"] = loader_s_per_sample_;
    j["workload_loader_s_per_sample"] = workload_loaders_;
    json by = json::array();
    for (const auto& [p, l] : loader_by_params_) by.push_back({p, l});
    j["loader_by_params"] = by;
    if (std::isfinite(host_step_low_) && std::isfinite(host_step_high_))
      j["host_s_per_step_range"] = {host_step_low_, host_step_high_};
    return j;
  }

  Status Load(const json& j) override {
    if (!named_) return Status::Error("physics: feature names not set");
    RETURN_IF_ERROR(LoadTheta(Algo(), j, kTheta, &theta_, &resid_low_, &resid_high_));
    try {
      // The split is on where the file has its efficiency (files before the setting, or fitted
      // without it, have none: eff_compute for every row, whatever the process default).
      eff_tc_ = std::nan("");
      split_ = j.at("theta").contains("eff_tensor_core") ? 1 : 0;
      if (split_ > 0) {
        eff_tc_ = j.at("theta").at("eff_tensor_core").get<double>();
        tc_identified_ = j.value("eff_tensor_core_identified", true);  // files before it: fitted
        if (!(eff_tc_ >= kThetaSplit[kNumTheta].lo && eff_tc_ <= kThetaSplit[kNumTheta].hi))
          return Status::Error("physics: theta 'eff_tensor_core' outside its bounds");
      }
      loader_s_per_sample_ = j.at("loader_s_per_sample").get<double>();
      workload_loaders_ = j.at("workload_loader_s_per_sample").get<std::vector<double>>();
      loader_by_params_.clear();
      if (j.contains("loader_by_params"))  // optional: files before it carry no loader per graph
        for (const json& e : j.at("loader_by_params")) {
          const double l = e.at(1).get<double>();
          if (!(l >= 0 && l <= kMaxLoaderSPerSample)) return Status::Error("physics: loader_by_params outside [0, 0.1] s");
          loader_by_params_[e.at(0).get<double>()] = l;
        }
      host_step_low_ = host_step_high_ = std::nan("");
      if (j.contains("host_s_per_step_range")) {  // optional: files before it carry none
        const auto range = j.at("host_s_per_step_range").get<std::vector<double>>();
        if (range.size() != 2 || !(range[0] >= 0 && range[0] <= range[1] && range[1] <= 1))
          return Status::Error("physics: host_s_per_step_range must be [low, high] in [0, 1] s");
        host_step_low_ = range[0], host_step_high_ = range[1];
      }
    } catch (const json::exception& e) {
      return Status::Error(std::string("physics: state: ") + e.what());
    }
    if (!(loader_s_per_sample_ >= 0 && loader_s_per_sample_ <= kMaxLoaderSPerSample))
      return Status::Error("physics: loader_s_per_sample outside [0, 0.1] s");
    fitted_ = true;
    return Status::Ok();
  }

  std::pair<double, double> HostStepRange() const override { return {host_step_low_, host_step_high_}; }

  std::vector<std::pair<std::string, double>> Parameters() const override {
    std::vector<std::pair<std::string, double>> out;
    for (int i = 0; i < kNumTheta; ++i) out.push_back({kTheta[i].name, theta_[i]});
    if (split_ > 0) out.push_back({"eff_tensor_core", eff_tc_});
    out.push_back({"loader_s_per_sample", loader_s_per_sample_});
    return out;
  }

 private:
  std::vector<ParamSpec> Specs() {
    return {{"max_evals", &evals_, 100, 1e6, true},
            {"robust_scale", &delta_, 0.01, 10, false},
            {"interval", &interval_, 0.01, 1, false},
            {"tensor_core_split", &split_, 0, 1, true}};
  }
  std::vector<Row> Rows(const Matrix& x) const {
    std::vector<Row> rows;
    for (const auto& xr : x) {
      Row r{};
      for (int c = 0; c < kNumCols; ++c) r[c] = index_[c] >= 0 ? xr[index_[c]] : 0.0;
      rows.push_back(r);
    }
    return rows;
  }

  double evals_ = 1500, delta_ = 0.3, interval_ = 0.8;
  double split_ = 0;                                    // tensor_core_split (0 or 1; RegressorOptions)
  double eff_tc_ = std::nan("");                        // eff_tensor_core; NaN: off (eff_compute's)
  bool tc_identified_ = false;                          // an amp row with a utilization was fitted
  std::array<int, kNumCols> index_{};
  size_t cols_ = 0;
  bool named_ = false, fitted_ = false;
  std::vector<double> step_s_;
  std::vector<int> group_;
  Theta theta_{};
  double loader_s_per_sample_ = 0;          // unseen jobs with an input pipeline of unknown cost
  std::vector<double> workload_loaders_;    // fitted per training workload (reported)
  std::map<double, double> loader_by_params_;  // the same, by graph (params feature): carried to any GPU
  double resid_low_ = 0, resid_high_ = 0;
  // The central range of the measured workloads' implied per-step host work (NaN: unknown).
  double host_step_low_ = std::nan(""), host_step_high_ = std::nan("");
};

}  // namespace

std::unique_ptr<PhysicsModel> MakePhysicsModel(const RegressorOptions& options) {
  return std::make_unique<Physics>(options);
}
std::unique_ptr<Regressor> MakePhysics(const RegressorOptions& options) { return MakePhysicsModel(options); }

}  // namespace gpucast
