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
// The SM-independent context of an architecture, MiB: searched in [kBaseLo, kBaseHi].
constexpr double kBaseLo = 1, kBaseHi = 16384;
constexpr double kMiB = 1024.0 * 1024.0;

bool Usable(double m) { return std::isfinite(m) && m > 0; }

// The loss of a log residual: squared within kHuberLog (10%), linear beyond,
// so that a workload whose memory moves by a GB between runs (cuDNN's
// autotuned workspaces: VGG) does not set the factors every other job gets.
constexpr double kHuberLog = 0.1;
double Huber(double d) {
  const double a = std::fabs(d);
  return a <= kHuberLog ? d * d : kHuberLog * (2 * a - kHuberLog);
}

// What the optimizer step holds beyond the state, in parameter-sized fp32
// lists: Adam and AdamW's multi-tensor (foreach) step, PyTorch's default on
// CUDA since 2.0, makes sqrt(exp_avg_sq) for every parameter at once
// (torch/optim/adam.py, _multi_tensor_adam: torch._foreach_sqrt); SGD with
// or without momentum updates in place. Tables with sparse gradients are not in
// that list (SparseAdam, or Adagrad, steps the looked-up rows).
double UpdateLists(Optimizer o) { return o == Optimizer::kAdam || o == Optimizer::kAdamW ? 1 : 0; }

// The backward-phase working set (kept tensors, transients) and the
// optimizer step's: the peak holds the larger of the two beyond what is resident.
double Working(const MemoryParams& p, const MemoryEstimate& e) {
  return p.activation_factor * e.activations_mib + p.transient_factor * e.largest_tensor_mib + e.loss_head_mib;
}
double StepExcess(const MemoryParams& p, const MemoryEstimate& e) {
  return std::max(0.0, UpdateLists(e.optimizer) * (e.trained_params - e.sparse_grad_params) * 4 / kMiB - Working(p, e));
}

double Rest(const MemoryParams& p, const MemoryEstimate& e) {
  return e.StaticMib() + Working(p, e) + StepExcess(p, e) + (e.uses_cudnn ? p.cudnn_mib : 0);
}

// The part of the point the fitted factors scale and the graph cannot count
// exactly: the working set (kept activations x activation_factor, transients,
// the loss head) and the optimizer step's excess. The rest (context, cuDNN,
// weights, gradients, optimizer state, data, buckets, workspaces, allocator
// rounding) is counted or a per-GPU constant.
double Uncertain(const MemoryParams& p, const MemoryEstimate& e) { return Working(p, e) + StepExcess(p, e); }

double ContextAt(double base, double mib_per_sm, const MemoryEstimate& e) {
  return std::max(base + mib_per_sm * e.sms, 1.0);
}

// The SM-independent context of e's chip, else of its architecture, and
// whether it was fitted (training rows on a GPU of that architecture);
// otherwise the mean of the fitted architectures'.
std::pair<double, bool> Base(const MemoryParams& p, const MemoryEstimate& e) {
  if (auto it = p.chip_context_base_mib.find(ContextChip(e)); it != p.chip_context_base_mib.end())
    return {it->second, true};
  if (auto it = p.context_base_mib.find(e.architecture); it != p.context_base_mib.end()) return {it->second, true};
  if (p.context_base_mib.empty()) return {0, false};
  double s = 0;
  for (const auto& [arch, c] : p.context_base_mib) s += c;
  return {s / static_cast<double>(p.context_base_mib.size()), false};
}

// The context of e: the published lazy one when its stack loads modules
// lazily, else the fitted one (the training rows' stack; eager).
bool Lazy(const MemoryEstimate& e) { return e.lazy_module_loading.value_or(false); }
double ContextOf(const MemoryParams& p, const MemoryEstimate& e) {
  return Lazy(e) ? e.lazy_context_mib : ContextAt(Base(p, e).first, p.mib_per_sm, e);
}

// The part of the point the high end's scale may weigh (MiB): the uncertain
// part (working set and step excess) or the graph's part (the point without a
// workload's offset, less the context; cuDNN's fitted part stays in: only jobs
// that load it pay it). One definition for Fit's choice and for prediction.
double ScalePart(const MemoryParams& p, const MemoryEstimate& e, HighScalePart part) {
  return part == HighScalePart::kUncertain ? Uncertain(p, e) : Rest(p, e);
}

double Point(const MemoryParams& p, const MemoryEstimate& e, const std::string& workload = "") {
  double mib = ContextOf(p, e) + Rest(p, e);
  if (!workload.empty())
    if (auto it = p.workload_offsets.find(workload); it != p.workload_offsets.end()) mib *= std::exp(it->second);
  return mib;
}

struct Rows {
  std::vector<const MemoryEstimate*> est;
  std::vector<double> measured;
  std::vector<int> group;
  std::vector<double> weight;  // 1 / rows of the row's workload: every workload counts alike
};

// Per architecture, the base minimising the weighted squared log residuals of
// its rows (golden-section search on log base; unimodal for rows of one
// architecture).
double BestBase(const MemoryParams& p, const Rows& r, double* sse) {
  const size_t n = r.est.size();
  std::vector<double> rest(n), sms(n), log_y(n);
  for (size_t i = 0; i < n; ++i) {
    rest[i] = Rest(p, *r.est[i]);
    sms[i] = p.mib_per_sm * r.est[i]->sms;
    log_y[i] = std::log(r.measured[i]);
  }
  auto loss = [&](double logc) {
    const double c = std::exp(logc);
    double s = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = log_y[i] - std::log(std::max(c + sms[i], 1.0) + rest[i]);
      s += r.weight[i] * Huber(d);
    }
    return s;
  };
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = std::log(kBaseLo), b = std::log(kBaseHi);
  double x1 = b - g * (b - a), x2 = a + g * (b - a), f1 = loss(x1), f2 = loss(x2);
  for (int it = 0; it < 32; ++it) {
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

// Fits the parameters on `rows` (all usable), uncalibrated, without workload offsets.
MemoryParams FitParams(const Rows& rows) {
  // What the rows can tell: the per-SM slope needs one architecture at two SM
  // counts, the cuDNN part one architecture with jobs with and without cuDNN.
  std::map<std::string, std::set<int>> sms, cudnn;
  for (const MemoryEstimate* e : rows.est) {
    if (!Lazy(*e)) sms[e->architecture].insert(e->sms);
    cudnn[e->architecture].insert(e->uses_cudnn ? 1 : 0);
  }
  bool per_sm = false, with_cudnn = false;
  for (const auto& [arch, s] : sms) per_sm = per_sm || s.size() >= 2;
  for (const auto& [arch, s] : cudnn) with_cudnn = with_cudnn || s.size() >= 2;
  // Rows stated lazy have a published context: they fit the other parameters, not a base.
  // Each chip's rows fit its own base (the residuals the other parameters
  // are fitted on); the architecture's base, for its chips without rows, is
  // fitted on all its rows with those parameters.
  std::map<std::string, Rows> by_arch, by_chip;
  Rows lazy;
  for (size_t i = 0; i < rows.est.size(); ++i) {
    const bool is_lazy = Lazy(*rows.est[i]);
    for (Rows* r : {is_lazy ? &lazy : &by_arch[rows.est[i]->architecture],
                    is_lazy ? nullptr : &by_chip[ContextChip(*rows.est[i])]}) {
      if (!r) continue;
      r->est.push_back(rows.est[i]);
      r->measured.push_back(rows.measured[i]);
      r->weight.push_back(rows.weight[i]);
    }
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
    for (const auto& [chip, r] : by_chip) p.chip_context_base_mib[chip] = BestBase(p, r, &sse);
    if (out) {
      double unused = 0;
      for (const auto& [arch, r] : by_arch) p.context_base_mib[arch] = BestBase(p, r, &unused);
    }
    for (size_t i = 0; i < lazy.est.size(); ++i)
      sse += lazy.weight[i] * Huber(std::log(lazy.measured[i]) - std::log(Point(p, *lazy.est[i])));
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
  std::map<int, int> count;
  for (size_t i = 0; i < est.size(); ++i) {
    if (!Usable(measured_mib[i])) continue;
    rows.est.push_back(&est[i]);
    rows.measured.push_back(measured_mib[i]);
    rows.group.push_back(group.empty() ? 0 : group[i]);
    ++count[rows.group.back()];
  }
  for (int g : rows.group) rows.weight.push_back(1.0 / count[g]);
  return rows;
}

Rows Without(const Rows& rows, int g) {
  Rows out;
  for (size_t i = 0; i < rows.est.size(); ++i) {
    if (rows.group[i] == g) continue;
    out.est.push_back(rows.est[i]);
    out.measured.push_back(rows.measured[i]);
    out.group.push_back(rows.group[i]);
    out.weight.push_back(rows.weight[i]);
  }
  return out;
}

}  // namespace

std::string ContextChip(const MemoryEstimate& e) {
  return e.architecture + " " + std::to_string(e.gpu_sms > 0 ? e.gpu_sms : e.sms) + " SMs";
}

const char* HighScalePartName(HighScalePart p) { return p == HighScalePart::kGraph ? "graph" : "uncertain"; }

double MemoryHighLevel(double level) { return std::max(kMemoryHighLevel, (1 + level) / 2); }
double MemoryLowAlpha(double level) { return MemoryHighLevel(level) - level; }

double MemoryAdditiveMib(const MemoryEstimate& e) { return e.uncertain_mib + (e.uses_conv ? kConvRerunMib : 0); }

double HighScale(double certain_weight, double point, double uncertain) {
  return certain_weight * point + (1 - certain_weight) * std::clamp(uncertain, 0.0, point);
}

double WeightedConformalQuantile(const std::vector<std::pair<double, double>>& sorted, double level) {
  // The smallest score whose cumulative weight, over the calibration weights
  // plus the new job's (their mean), reaches `level`; the largest when none
  // does. With equal weights: the ceil((n + 1) level)-th.
  double total = 0;
  for (const auto& [s, w] : sorted) total += w;
  total += total / static_cast<double>(sorted.size());
  double cum = 0;
  for (const auto& [s, w] : sorted) {
    cum += w;
    if (cum >= level * total * (1 - 1e-12)) return s;
  }
  return sorted.back().first;
}

const std::vector<double>& CertainWeights() {
  static const std::vector<double> grid = {1.0, 0.5, 0.3, 0.2, 0.1, 0.05};
  return grid;
}

namespace {

double WeightedMedian(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  double total = 0;
  for (const auto& [x, w] : v) total += w;
  double cum = 0;
  for (const auto& [x, w] : v) {
    cum += w;
    if (cum >= total / 2 * (1 - 1e-12)) return x;
  }
  return v.back().first;
}

// The leave-one-group-out pass: log residuals (measured - predicted), NaN
// for rows without a memory value or whose architecture had no other
// workload's rows.
// `score`, when given: the high end's conformity score of each such row,
// log((measured - MemoryAdditiveMib) / predicted) (NaN elsewhere): the high
// end is point x exp(q) + the additive widening, so the score takes out what
// the widening adds (cuDNN's run-to-run spread is not counted twice).
Status GroupedPass(const std::vector<MemoryEstimate>& est, const std::vector<double>& measured_mib,
                   const std::vector<int>& group, std::vector<double>* res, std::vector<double>* point_out = nullptr,
                   std::vector<double>* uncertain_out = nullptr, std::vector<double>* graph_out = nullptr) {
  if (group.size() != est.size()) return Status::Error("memory: calibration needs a workload id per row");
  ASSIGN_OR_RETURN(Rows rows, UsableRows(est, measured_mib, group));
  std::set<int> ids(rows.group.begin(), rows.group.end());
  if (ids.size() < 2) return Status::Error("memory: calibration needs at least 2 workloads with a memory value");
  res->assign(est.size(), std::nan(""));
  if (point_out) point_out->assign(est.size(), std::nan(""));
  if (uncertain_out) uncertain_out->assign(est.size(), std::nan(""));
  if (graph_out) graph_out->assign(est.size(), std::nan(""));
  for (int g : ids) {
    MemoryParams p = FitParams(Without(rows, g));
    for (size_t i = 0; i < est.size(); ++i)
      if (Usable(measured_mib[i]) && group[i] == g && (Lazy(est[i]) || Base(p, est[i]).second)) {
        const double point = Point(p, est[i]);
        (*res)[i] = std::log(measured_mib[i]) - std::log(point);
        if (point_out) (*point_out)[i] = point;
        if (uncertain_out) (*uncertain_out)[i] = ScalePart(p, est[i], HighScalePart::kUncertain);
        if (graph_out) (*graph_out)[i] = ScalePart(p, est[i], HighScalePart::kGraph);
      }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<double>> MemoryGroupedResiduals(const std::vector<MemoryEstimate>& est,
                                                   const std::vector<double>& measured_mib,
                                                   const std::vector<int>& group) {
  std::vector<double> res;
  RETURN_IF_ERROR(GroupedPass(est, measured_mib, group, &res));
  return res;
}

Result<MemoryModel> MemoryModel::Fit(const std::vector<MemoryEstimate>& est, const std::vector<double>& measured_mib,
                                     const std::vector<int>& group, bool calibrate,
                                     const std::vector<std::string>& group_names) {
  ASSIGN_OR_RETURN(Rows rows, UsableRows(est, measured_mib, group));
  if (rows.est.size() < 2)
    return Status::Error("memory: " + std::to_string(rows.est.size()) +
                         " training rows with a memory value (gmem or gmem_mib), need at least 2");
  MemoryModel m;
  m.params_ = FitParams(rows);
  m.rows_ = rows.est.size();
  // Each named workload's mean log residual: its own fixed part (what its
  // graph does not tell), applied to that workload's graph only.
  if (!group_names.empty()) {
    std::map<int, std::pair<double, int>> sum;
    for (size_t i = 0; i < rows.est.size(); ++i) {
      auto& [s, n] = sum[rows.group[i]];
      s += std::log(rows.measured[i]) - std::log(Point(m.params_, *rows.est[i]));
      ++n;
    }
    for (const auto& [g, sn] : sum)
      if (g >= 0 && static_cast<size_t>(g) < group_names.size())
        m.params_.workload_offsets[group_names[g]] = sn.first / sn.second;
  }
  std::set<int> ids(rows.group.begin(), rows.group.end());
  if (calibrate && !group.empty() && ids.size() >= 3) {
    std::vector<double> res, point, uncertain, graph;
    RETURN_IF_ERROR(GroupedPass(est, measured_mib, group, &res, &point, &uncertain, &graph));
    std::map<int, int> rows_of;  // calibration rows per workload
    for (size_t i = 0; i < res.size(); ++i)
      if (std::isfinite(res[i])) ++rows_of[group[i]];
    std::vector<size_t> cal;
    for (size_t i = 0; i < res.size(); ++i)
      if (std::isfinite(res[i])) {
        cal.push_back(i);
        m.calibration_.push_back(res[i]);
        m.low_scores_.push_back({res[i], 1.0 / rows_of[group[i]]});
      }
    std::sort(m.low_scores_.begin(), m.low_scores_.end());
    // The high end's scale: certain_weight x point + (1 - certain_weight) x a
    // part of it, the uncertain part (the working set) or the graph's part
    // (all but the context). Both chosen on these calibration rows only
    // (nested in whatever fold called Fit): the pair whose high end at
    // kMemoryHighLevel has the smallest workload-weighted median margin over
    // the point; certain weight 1 (the whole point) on a tie, and the
    // uncertain part before the graph's.
    auto part_of = [&](HighScalePart part, size_t i) {
      return part == HighScalePart::kUncertain ? uncertain[i] : graph[i];
    };
    double best_margin = INFINITY;
    for (HighScalePart part : {HighScalePart::kUncertain, HighScalePart::kGraph})
      for (double a : CertainWeights()) {
        if (a == 1.0 && part != HighScalePart::kUncertain) continue;  // the whole point: the same for both
        std::vector<std::pair<double, double>> sc;
        for (size_t i : cal) {
          const double scale = HighScale(a, point[i], part_of(part, i));
          // At least 1 MiB above the widening: a row the widening alone covers scores very low.
          sc.push_back({(std::max(measured_mib[i] - MemoryAdditiveMib(est[i]), 1.0) - point[i]) / scale,
                        1.0 / rows_of[group[i]]});
        }
        std::vector<std::pair<double, double>> sorted = sc;
        std::sort(sorted.begin(), sorted.end());
        const double q = WeightedConformalQuantile(sorted, kMemoryHighLevel);
        std::vector<std::pair<double, double>> margin;
        for (size_t k = 0; k < cal.size(); ++k) {
          const size_t i = cal[k];
          margin.push_back(
              {(std::max(0.0, q * HighScale(a, point[i], part_of(part, i))) + MemoryAdditiveMib(est[i])) / point[i],
               sc[k].second});
        }
        const double med = WeightedMedian(margin);
        if (med < best_margin * (1 - 1e-9)) {
          best_margin = med;
          m.high_certain_weight_ = a;
          m.high_scale_part_ = part;
          m.high_scores_ = sorted;
          // The workload whose held-out row scores the quantile: what sets every job's high end.
          for (size_t k = 0; k < cal.size(); ++k)
            if (sc[k].first == q) {
              m.high_set_by_ = group[cal[k]];
              break;
            }
        }
      }
    std::sort(m.calibration_.begin(), m.calibration_.end());
  }
  return m;
}

double MemoryModel::PointMib(const MemoryEstimate& e, const std::string& workload) const {
  return Point(params_, e, workload);
}

double MemoryModel::ContextMib(const MemoryEstimate& e) const {
  return ContextOf(params_, e) + (e.uses_cudnn ? params_.cudnn_mib : 0);
}

std::vector<std::pair<std::string, double>> MemoryModel::Components(const MemoryEstimate& e,
                                                                    const std::string& workload) const {
  const MemoryParams& p = params_;
  std::vector<std::pair<std::string, double>> parts = {
      {"context", ContextOf(p, e)},
      {"cudnn", e.uses_cudnn ? p.cudnn_mib : 0},
      {"cublas_workspace", e.cublas_workspace_mib},
      {"weights", e.weights_mib},
      {"gradients", e.gradients_mib},
      {"optimizer", e.optimizer_mib},
      {"optimizer_step", StepExcess(p, e)},
      {"autocast_weights", e.autocast_mib},
      {"data", e.data_mib},
      {"ddp_buckets", e.ddp_buckets_mib},
      {"zero_buffers", e.zero_buffers_mib},
      {"activations", p.activation_factor * e.activations_mib},
      {"transient", p.transient_factor * e.largest_tensor_mib},
      {"loss_head", e.loss_head_mib},
      {"allocator_rounding", e.rounding_mib},
      {"allocator_segments", e.segments_mib},
      {"fragmentation", e.fragmentation_mib}};
  // A measured workload's own part: the point times exp(offset) minus the sum.
  double sum = 0;
  for (const auto& [k, v] : parts) sum += v;
  parts.emplace_back("measured_workload", Point(p, e, workload) - sum);
  return parts;
}

double MemoryModel::HighScoreQuantile(double level) const {
  return WeightedConformalQuantile(high_scores_, level);
}

double MemoryModel::LowScoreQuantile(double alpha) const {
  // The mirror of the high end's quantile: the largest residual whose weight
  // counted from the top reaches 1 - alpha (with equal weights the
  // floor((n + 1) alpha)-th smallest), i.e. that quantile of the negated residuals.
  std::vector<std::pair<double, double>> negated;
  negated.reserve(low_scores_.size());
  for (auto it = low_scores_.rbegin(); it != low_scores_.rend(); ++it) negated.push_back({-it->first, it->second});
  return -WeightedConformalQuantile(negated, 1 - alpha);
}

double MemoryModel::HighScaleMib(const MemoryEstimate& e, const std::string& workload) const {
  const double point = Point(params_, e), with_offset = Point(params_, e, workload);
  return with_offset / point *
         HighScale(high_certain_weight_, point, ScalePart(params_, e, high_scale_part_));
}

MemoryPrediction MemoryModel::Predict(const MemoryEstimate& e, double level, const std::string& workload) const {
  MemoryPrediction p;
  p.mib = PointMib(e, workload);
  p.low = p.high = p.mib;
  const double low_factor = calibration_.empty() ? 1 : std::exp(LowScoreQuantile(MemoryLowAlpha(level)));
  if (!calibration_.empty()) {
    const double high_level = MemoryHighLevel(level);
    p.low = std::min(p.mib, p.mib * low_factor);
    p.high = std::max(p.mib, p.mib + HighScoreQuantile(high_level) * HighScaleMib(e, workload));
  }
  auto [base, fitted] = Base(params_, e);
  p.context_fitted = fitted;
  p.context_mib = ContextOf(params_, e);
  p.cuda_module_loading = CudaModuleLoadingName(e.lazy_module_loading);
  if (Lazy(e)) {
    // A lazily loading stack: the published idle context in the point and the
    // low end. The high end stays the measured (eager) stack's: no measured
    // row is on a lazy stack, and what a training job adds to the idle
    // context as it loads its kernels and library handles is not published
    // (PyTorch's own kernels alone are up to 362 MiB: pytorch/pytorch#86509,
    // eager - lazy; cuBLAS's and cuDNN's come on top).
    MemoryEstimate eager = e;
    eager.lazy_module_loading = false;
    const double eager_high = Predict(eager, level, workload).high;
    p.widened_mib = MemoryAdditiveMib(e);
    p.widened_mib += std::max(0.0, eager_high - (p.high + p.widened_mib));
  } else {
    // A GPU of an architecture without training rows: its context may be any
    // published one, up to the largest.
    const double context = p.context_mib + (e.uses_cudnn ? params_.cudnn_mib : 0);
    p.widened_mib = MemoryAdditiveMib(e) + (fitted ? 0 : std::max(0.0, PublishedContextMaxMib() - context));
  }
  p.high += p.widened_mib;
  if (calibration_.empty() && e.capacity_mib > p.high) {
    // Too few workloads to calibrate (fewer than 3 with a memory value): no
    // held-out error says how far another graph may be from its point, so
    // no limit below the GPU's or slice's memory is known to hold.
    p.widened_mib += e.capacity_mib - p.high;
    p.high = e.capacity_mib;
  }
  if (!e.lazy_module_loading) {
    // Unknown stack: the point and the high end are the training rows'
    // (eager: a limit set from the high end holds on either); the low end
    // reaches what the same job needs on a lazily loading stack.
    MemoryEstimate lazy = e;
    lazy.lazy_module_loading = true;
    p.low = std::min(p.low, PointMib(lazy, workload) * low_factor);
  }
  p.capacity_mib = e.capacity_mib;
  return p;
}

json MemoryModel::Save() const {
  std::vector<double> high, high_w;
  for (const auto& [sc, w] : high_scores_) high.push_back(sc), high_w.push_back(w);
  std::vector<double> residuals, residual_w;
  for (const auto& [r, w] : low_scores_) residuals.push_back(r), residual_w.push_back(w);
  return json{{"context_base_mib", params_.context_base_mib},
              {"chip_context_base_mib", params_.chip_context_base_mib},
              {"mib_per_sm", params_.mib_per_sm},
              {"mib_per_sm_fitted", params_.mib_per_sm_fitted},
              {"activation_factor", params_.activation_factor},
              {"transient_factor", params_.transient_factor},
              {"cudnn_mib", params_.cudnn_mib},
              {"cudnn_mib_fitted", params_.cudnn_mib_fitted},
              {"workload_offsets", params_.workload_offsets},
              {"rows", rows_},
              {"calibration",
               {{"method",
                 "split-conformal on leave-one-workload-out log residuals, each workload weighted alike (low end); high end one-sided on "
                 "(measured - widening - predicted) / scale, scale = high_certain_weight x predicted + (1 - "
                 "high_certain_weight) x its high_scale_part (uncertain: the working set; graph: all but the "
                 "context; both chosen on these rows), each workload weighted alike, "
                 "+ the widening (cuDNN's run-to-run spread for convolutional jobs, estimated parts)"},
                {"residuals", residuals},
                {"residual_weights", residual_w},
                {"high_scores", high}, {"high_weights", high_w},
                {"high_certain_weight", high_certain_weight_},
                {"high_scale_part", HighScalePartName(high_scale_part_)}}}};
}

Result<MemoryModel> MemoryModel::Load(const json& j) {
  MemoryModel m;
  try {
    if (!j.is_object()) return Status::Error("memory: want an object");
    if (!j.contains("context_base_mib"))
      return Status::Error("memory: a memory model of an older gpucast (contexts per GPU): retrain");
    for (const auto& [arch, v] : j.at("context_base_mib").items()) {
      double c = v.get<double>();
      if (!(c >= kBaseLo && c <= kBaseHi))
        return Status::Error("memory.context_base_mib." + arch + ": " + v.dump() + " outside [1, 16384]");
      m.params_.context_base_mib[arch] = c;
    }
    if (m.params_.context_base_mib.empty()) return Status::Error("memory.context_base_mib: no architecture");
    // A file of a gpucast before the per-chip contexts: every chip its architecture's.
    if (j.contains("chip_context_base_mib"))
      for (const auto& [chip, v] : j.at("chip_context_base_mib").items()) {
        double c = v.get<double>();
        if (!(c >= kBaseLo && c <= kBaseHi))
          return Status::Error("memory.chip_context_base_mib." + chip + ": " + v.dump() + " outside [1, 16384]");
        m.params_.chip_context_base_mib[chip] = c;
      }
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
    for (const auto& [w, v] : j.at("workload_offsets").items()) {
      double o = v.get<double>();
      if (!std::isfinite(o) || std::fabs(o) > 5) return Status::Error("memory.workload_offsets." + w + ": " + v.dump());
      m.params_.workload_offsets[w] = o;
    }
    m.params_.mib_per_sm_fitted = j.at("mib_per_sm_fitted").get<bool>();
    m.rows_ = j.at("rows").get<size_t>();
    m.calibration_ = j.at("calibration").at("residuals").get<std::vector<double>>();
    const json& cal = j.at("calibration");
    // A file of a gpucast before the weighted low end: every residual weighs alike.
    std::vector<double> rw(m.calibration_.size(), 1.0);
    if (cal.contains("residual_weights")) rw = cal.at("residual_weights").get<std::vector<double>>();
    if (rw.size() != m.calibration_.size())
      return Status::Error("memory.calibration: " + std::to_string(m.calibration_.size()) + " residuals and " +
                           std::to_string(rw.size()) + " residual_weights");
    for (size_t i = 0; i < rw.size(); ++i) {
      if (!(rw[i] > 0 && rw[i] <= 1))
        return Status::Error("memory.calibration.residual_weights: entry " + std::to_string(i) +
                             " outside (0, 1]");
      m.low_scores_.push_back({m.calibration_[i], rw[i]});
    }
    // A file of a gpucast before the scaled high end holds log scores:
    // log((measured - widening) / predicted) = log(1 + the score on the whole point).
    const bool log_scores = !cal.contains("high_certain_weight");
    if (!log_scores) {
      m.high_certain_weight_ = cal.at("high_certain_weight").get<double>();
      if (!(m.high_certain_weight_ > 0 && m.high_certain_weight_ <= 1))
        return Status::Error("memory.calibration.high_certain_weight: " + cal.at("high_certain_weight").dump() +
                             " outside (0, 1]");
    }
    // A file of a gpucast before the graph's part: the uncertain part.
    if (cal.contains("high_scale_part")) {
      const std::string part = cal.at("high_scale_part").get<std::string>();
      if (part == "graph")
        m.high_scale_part_ = HighScalePart::kGraph;
      else if (part != "uncertain")
        return Status::Error("memory.calibration.high_scale_part: " + cal.at("high_scale_part").dump() +
                             " (want uncertain or graph)");
    }
    auto from_file = [&](double s) { return log_scores ? std::expm1(s) : s; };
    if (cal.contains("high_scores")) {
      const auto sc = cal.at("high_scores").get<std::vector<double>>();
      const auto w = cal.at("high_weights").get<std::vector<double>>();
      if (sc.size() != m.calibration_.size() || w.size() != sc.size())
        return Status::Error("memory.calibration: " + std::to_string(m.calibration_.size()) + " residuals, " +
                             std::to_string(sc.size()) + " high_scores and " + std::to_string(w.size()) +
                             " high_weights");
      for (size_t i = 0; i < sc.size(); ++i) {
        if (!std::isfinite(sc[i]) || !(w[i] > 0 && w[i] <= 1))
          return Status::Error("memory.calibration.high_scores/high_weights: entry " + std::to_string(i) +
                               " not finite or a weight outside (0, 1]");
        m.high_scores_.push_back({from_file(sc[i]), w[i]});
      }
    } else {
      // A file of a gpucast before the weighted high end: its log residuals, equally weighted.
      for (double r : m.calibration_) m.high_scores_.push_back({std::expm1(r), 1.0});
    }
  } catch (const json::exception& e) {
    return Status::Error(std::string("memory: ") + e.what());
  }
  for (double r : m.calibration_)
    if (!std::isfinite(r)) return Status::Error("memory.calibration.residuals: not finite");
  std::sort(m.calibration_.begin(), m.calibration_.end());
  std::sort(m.low_scores_.begin(), m.low_scores_.end());
  std::sort(m.high_scores_.begin(), m.high_scores_.end());
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
