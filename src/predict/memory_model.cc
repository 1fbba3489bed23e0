#include "predict/memory_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "predict/bounded_theta.h"
#include "predict/nelder_mead.h"
#include "predict/predictor.h"

namespace gpucast {
namespace {

using nlohmann::json;

struct ThetaDef {
  const char* name;
  double lo, hi;  // physical bounds; searched on a log scale (bounded_theta.h)
};
// The global parameters. Bounds were set before any fit: a context per SM
// between 0.1 and 20 MiB (the default stack gives 2); the allocator holds
// between a quarter and four times the kept bytes; up to eight transient
// tensors of the size of the largest; cuDNN between 1 MiB and 4 GiB.
constexpr ThetaDef kTheta[] = {
    {"mib_per_sm", 0.1, 20.0},
    {"activation_factor", 0.25, 4.0},
    {"transient_factor", 0.01, 8.0},
    {"cudnn_mib", 1.0, 4096.0},
};
constexpr size_t kNumTheta = 4;
using Z = std::array<double, kNumTheta>;
// Context of a GPU type, MiB: searched in [kContextLo, kContextHi] for each GPU.
constexpr double kContextLo = 50, kContextHi = 16384;

double SmDelta(const MemoryEstimate& e) { return std::max(0, e.gpu_sms - e.sms); }

double Rest(const MemoryParams& p, const MemoryEstimate& e) {
  return e.StaticMib() + p.activation_factor * e.activations_mib + p.transient_factor * e.largest_tensor_mib +
         (e.uses_cudnn ? p.cudnn_mib : 0);
}

// The context of a slice of a GPU whose whole-GPU context is `c` (at least 1 MiB).
double SliceContext(double c, double mib_per_sm, const MemoryEstimate& e) {
  return std::max(c - mib_per_sm * SmDelta(e), 1.0);
}

bool Usable(double m) { return std::isfinite(m) && m > 0; }

// Per GPU, the context minimising the squared log residuals of its rows
// (golden-section search on log c; the loss is unimodal in c for rows of one GPU).
double BestContext(const MemoryParams& p, const std::vector<const MemoryEstimate*>& est,
                   const std::vector<double>& measured, double* sse) {
  std::vector<double> rest(est.size()), less(est.size()), log_y(est.size());
  for (size_t i = 0; i < est.size(); ++i) {
    rest[i] = Rest(p, *est[i]);
    less[i] = p.mib_per_sm * SmDelta(*est[i]);
    log_y[i] = std::log(measured[i]);
  }
  auto loss = [&](double logc) {
    const double c = std::exp(logc);
    double s = 0;
    for (size_t i = 0; i < est.size(); ++i) {
      double r = log_y[i] - std::log(std::max(c - less[i], 1.0) + rest[i]);  // SliceContext + Rest
      s += r * r;
    }
    return s;
  };
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = std::log(kContextLo), b = std::log(kContextHi);
  double x1 = b - g * (b - a), x2 = a + g * (b - a), f1 = loss(x1), f2 = loss(x2);
  for (int it = 0; it < 28; ++it) {  // 0.618^28 x 5.8 ~ 1e-5 in log c
    if (f1 < f2) {
      b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a), f1 = loss(x1);
    } else {
      a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a), f2 = loss(x2);
    }
  }
  const double best = (a + b) / 2;
  *sse += loss(best);
  return std::exp(best);
}

struct Rows {
  std::vector<const MemoryEstimate*> est;
  std::vector<double> measured;
  std::vector<int> group;
};

// Fits the parameters on `rows` (all usable), uncalibrated.
MemoryParams FitParams(const Rows& rows) {
  // What the rows can tell: the per-SM slope needs one GPU at two SM counts,
  // the cuDNN part one GPU with jobs with and without cuDNN.
  std::map<std::string, std::set<int>> sms, cudnn;
  for (const MemoryEstimate* e : rows.est) {
    sms[e->gpu].insert(e->sms);
    cudnn[e->gpu].insert(e->uses_cudnn ? 1 : 0);
  }
  bool per_sm = false, with_cudnn = false;
  for (const auto& [gpu, s] : sms) per_sm = per_sm || s.size() >= 2;
  for (const auto& [gpu, s] : cudnn) with_cudnn = with_cudnn || s.size() >= 2;
  std::map<std::string, Rows> by_gpu;
  for (size_t i = 0; i < rows.est.size(); ++i) {
    Rows& r = by_gpu[rows.est[i]->gpu];
    r.est.push_back(rows.est[i]);
    r.measured.push_back(rows.measured[i]);
  }
  auto decode = [&](const Z& z) {
    MemoryParams p;
    p.mib_per_sm = per_sm ? ThetaFromZ(kTheta[0], z[0]) : kDefaultMibPerSm;
    p.mib_per_sm_fitted = per_sm;
    p.activation_factor = ThetaFromZ(kTheta[1], z[1]);
    p.transient_factor = ThetaFromZ(kTheta[2], z[2]);
    p.cudnn_mib = with_cudnn ? ThetaFromZ(kTheta[3], z[3]) : 0;
    p.cudnn_mib_fitted = with_cudnn;
    return p;
  };
  auto solve = [&](const Z& z, MemoryParams* out) {
    MemoryParams p = decode(z);
    double sse = 0;
    for (const auto& [gpu, r] : by_gpu) p.context_mib[gpu] = BestContext(p, r.est, r.measured, &sse);
    if (out) *out = p;
    return sse;
  };
  auto f = [&](const Z& z) { return solve(z, nullptr); };
  // Fixed starts (deterministic), the best refined once more.
  Z best{};
  double best_f = INFINITY;
  for (double a : {0.7, 1.5})
    for (double k : {0.3, 2.0}) {
      Z z0 = {ThetaToZ(kTheta[0], 4.0), ThetaToZ(kTheta[1], a), ThetaToZ(kTheta[2], k), ThetaToZ(kTheta[3], 300)};
      Z z = NelderMead(f, z0, 0.5, 200, 1e-10);
      double v = f(z);
      if (v < best_f) best_f = v, best = z;
    }
  best = NelderMead(f, best, 0.1, 200, 1e-12);
  MemoryParams p;
  solve(best, &p);
  return p;
}

Result<Rows> UsableRows(const std::vector<MemoryEstimate>& est, const std::vector<double>& measured_mib,
                        const std::vector<int>& group) {
  if (est.size() != measured_mib.size() || (!group.empty() && group.size() != est.size()))
    return Status::Error("memory: " + std::to_string(est.size()) + " estimates, " +
                         std::to_string(measured_mib.size()) + " measurements and " + std::to_string(group.size()) +
                         " workload ids");
  Rows rows;
  for (size_t i = 0; i < est.size(); ++i) {
    if (!Usable(measured_mib[i])) continue;
    rows.est.push_back(&est[i]);
    rows.measured.push_back(measured_mib[i]);
    rows.group.push_back(group.empty() ? 0 : group[i]);
  }
  return rows;
}

double Point(const MemoryParams& p, const MemoryEstimate& e) {
  double c = 0;
  if (auto it = p.context_mib.find(e.gpu); it != p.context_mib.end()) {
    c = it->second;
  } else if (!p.context_mib.empty()) {  // a GPU without training rows: the mean of the fitted ones
    for (const auto& [gpu, v] : p.context_mib) c += v;
    c /= static_cast<double>(p.context_mib.size());
  }
  return SliceContext(c, p.mib_per_sm, e) + Rest(p, e);
}

}  // namespace

Result<std::vector<double>> MemoryGroupedResiduals(const std::vector<MemoryEstimate>& est,
                                                   const std::vector<double>& measured_mib,
                                                   const std::vector<int>& group) {
  if (group.size() != est.size()) return Status::Error("memory: calibration needs a workload id per row");
  ASSIGN_OR_RETURN(Rows rows, UsableRows(est, measured_mib, group));
  std::set<int> ids(rows.group.begin(), rows.group.end());
  if (ids.size() < 2) return Status::Error("memory: calibration needs at least 2 workloads with a memory value");
  std::vector<double> res(est.size(), std::nan(""));
  for (int g : ids) {
    Rows train;
    for (size_t i = 0; i < rows.est.size(); ++i) {
      if (rows.group[i] == g) continue;
      train.est.push_back(rows.est[i]);
      train.measured.push_back(rows.measured[i]);
      train.group.push_back(rows.group[i]);
    }
    MemoryParams p = FitParams(train);
    for (size_t i = 0; i < est.size(); ++i)
      if (Usable(measured_mib[i]) && group[i] == g) res[i] = std::log(measured_mib[i]) - std::log(Point(p, est[i]));
  }
  return res;
}

Result<MemoryModel> MemoryModel::Fit(const std::vector<MemoryEstimate>& est, const std::vector<double>& measured_mib,
                                     const std::vector<int>& group, bool calibrate) {
  ASSIGN_OR_RETURN(Rows rows, UsableRows(est, measured_mib, group));
  if (rows.est.size() < 2)
    return Status::Error("memory: " + std::to_string(rows.est.size()) +
                         " training rows with a memory value (gmem or gmem_mib), need at least 2");
  MemoryModel m;
  m.params_ = FitParams(rows);
  m.rows_ = rows.est.size();
  std::set<int> ids(rows.group.begin(), rows.group.end());
  if (calibrate && !group.empty() && ids.size() >= 3) {
    ASSIGN_OR_RETURN(std::vector<double> res, MemoryGroupedResiduals(est, measured_mib, group));
    for (double r : res)
      if (std::isfinite(r)) m.calibration_.push_back(r);
    std::sort(m.calibration_.begin(), m.calibration_.end());
  }
  return m;
}

double MemoryModel::PointMib(const MemoryEstimate& e) const { return Point(params_, e); }

double MemoryModel::ContextMib(const MemoryEstimate& e) const {
  MemoryEstimate bare;
  bare.gpu = e.gpu;
  bare.sms = e.sms;
  bare.gpu_sms = e.gpu_sms;
  bare.uses_cudnn = e.uses_cudnn;
  return Point(params_, bare);
}

std::vector<std::pair<std::string, double>> MemoryModel::Components(const MemoryEstimate& e) const {
  return {{"context", ContextMib(e)},
          {"weights", e.weights_mib},
          {"gradients", e.gradients_mib},
          {"optimizer", e.optimizer_mib},
          {"autocast_weights", e.autocast_mib},
          {"data", e.data_mib},
          {"ddp_buckets", e.ddp_buckets_mib},
          {"activations", params_.activation_factor * e.activations_mib},
          {"transient", params_.transient_factor * e.largest_tensor_mib},
          {"rounding", e.rounding_mib}};
}

MemoryPrediction MemoryModel::Predict(const MemoryEstimate& e, double level) const {
  MemoryPrediction p;
  p.mib = PointMib(e);
  p.low = p.high = p.mib;
  if (!calibration_.empty()) {
    auto [lo, hi] = ConformalOffsets(calibration_, level);
    p.low = std::min(p.mib, p.mib * std::exp(lo));
    p.high = std::max(p.mib, p.mib * std::exp(hi));
  }
  p.capacity_mib = e.capacity_mib;
  return p;
}

json MemoryModel::Save() const {
  return json{{"context_mib", params_.context_mib},
              {"mib_per_sm", params_.mib_per_sm},
              {"mib_per_sm_fitted", params_.mib_per_sm_fitted},
              {"activation_factor", params_.activation_factor},
              {"transient_factor", params_.transient_factor},
              {"cudnn_mib", params_.cudnn_mib},
              {"cudnn_mib_fitted", params_.cudnn_mib_fitted},
              {"rows", rows_},
              {"calibration",
               {{"method", "split-conformal on leave-one-workload-out log residuals"}, {"residuals", calibration_}}}};
}

Result<MemoryModel> MemoryModel::Load(const json& j) {
  MemoryModel m;
  try {
    if (!j.is_object()) return Status::Error("memory: want an object");
    for (const auto& [gpu, v] : j.at("context_mib").items()) {
      double c = v.get<double>();
      if (!(c >= kContextLo && c <= kContextHi))
        return Status::Error("memory.context_mib." + gpu + ": " + v.dump() + " outside [50, 16384]");
      m.params_.context_mib[gpu] = c;
    }
    if (m.params_.context_mib.empty()) return Status::Error("memory.context_mib: no GPU");
    double* fields[] = {&m.params_.mib_per_sm, &m.params_.activation_factor, &m.params_.transient_factor,
                        &m.params_.cudnn_mib};
    m.params_.cudnn_mib_fitted = j.at("cudnn_mib_fitted").get<bool>();
    for (size_t i = 0; i < kNumTheta; ++i) {
      double v = j.at(kTheta[i].name).get<double>();
      if (i == 3 && !m.params_.cudnn_mib_fitted && v == 0) continue;  // not fitted: 0
      if (!(v >= kTheta[i].lo * (1 - 1e-9) && v <= kTheta[i].hi * (1 + 1e-9)))
        return Status::Error(std::string("memory.") + kTheta[i].name + ": " + j.at(kTheta[i].name).dump() +
                             " outside its bounds");
      *fields[i] = v;
    }
    m.params_.mib_per_sm_fitted = j.at("mib_per_sm_fitted").get<bool>();
    m.rows_ = j.at("rows").get<size_t>();
    m.calibration_ = j.at("calibration").at("residuals").get<std::vector<double>>();
  } catch (const json::exception& e) {
    return Status::Error(std::string("memory: ") + e.what());
  }
  for (double r : m.calibration_)
    if (!std::isfinite(r)) return Status::Error("memory.calibration.residuals: not finite");
  std::sort(m.calibration_.begin(), m.calibration_.end());
  return m;
}

Result<std::vector<MemoryPrediction>> FoldMemoryPredictions(const Dataset& data, const std::vector<size_t>& train,
                                                            const std::vector<size_t>& test, double level) {
  std::vector<MemoryPrediction> out(test.size());
  if (data.mem.size() != data.rows.size()) return out;  // no estimates: memory stays NaN
  std::vector<MemoryEstimate> est;
  std::vector<double> y;
  std::vector<int> group;
  size_t usable = 0;
  for (size_t i : train) {
    est.push_back(data.mem[i]);
    y.push_back(data.rows[i].gmem);
    group.push_back(data.group[i]);
    usable += Usable(y.back());
  }
  if (usable < 2) return out;
  ASSIGN_OR_RETURN(MemoryModel m, MemoryModel::Fit(est, y, group));
  for (size_t j = 0; j < test.size(); ++j) out[j] = m.Predict(data.mem[test[j]], level);
  return out;
}

}  // namespace gpucast
