#include "predict/evaluate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "predict/predictor.h"
#include "predict/regressor.h"

namespace gpucast {

std::string Split::ToString() const {
  char buf[64];
  switch (kind) {
    case kRandom: std::snprintf(buf, sizeof buf, "random:%g", test_fraction); return buf;
    case kLowo: return "lowo";
    case kKfold: return "kfold:" + std::to_string(k);
    case kLargestBatch: return "largest-batch";
    case kGpu: return "gpu:" + gpu;
    case kConfig: return "loco:" + gpu;
    case kLogo: return "logo";
  }
  return "?";
}

Result<Split> ParseSplit(const std::string& text) {
  Split s;
  auto bad = [&](const char* why) {
    return Status::Error("split '" + text + "': " + why + " (want random:F, lowo, logo, kfold:K, largest-batch, gpu:NAME or loco:NAME)");
  };
  if (text == "lowo") {
    s.kind = Split::kLowo;
    return s;
  }
  if (text == "logo") {
    s.kind = Split::kLogo;
    return s;
  }
  if (text == "largest-batch") {
    s.kind = Split::kLargestBatch;
    return s;
  }
  for (auto [prefix, kind] : {std::pair{"gpu:", Split::kGpu}, std::pair{"loco:", Split::kConfig}}) {
    if (text.rfind(prefix, 0) != 0) continue;
    s.kind = kind;
    s.gpu = text.substr(std::string(prefix).size());
    if (s.gpu.empty()) return bad("GPU name missing");
    return s;
  }
  if (text.rfind("random:", 0) == 0) {
    std::string v = text.substr(7);
    double f = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), f);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size() || !(f > 0 && f < 1))
      return bad("test fraction must be a number in (0, 1)");
    s.kind = Split::kRandom;
    s.test_fraction = f;
    return s;
  }
  if (text.rfind("kfold:", 0) == 0) {
    std::string v = text.substr(6);
    int k = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), k);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size() || k < 2)
      return bad("K must be an integer >= 2");
    s.kind = Split::kKfold;
    s.k = k;
    return s;
  }
  return bad("unknown kind");
}

namespace {
// Deterministic Fisher-Yates with mt19937_64 (std::shuffle's distribution is
// implementation-defined; this is the same everywhere).
void Shuffle(std::vector<size_t>* v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = v->size(); i > 1; --i) std::swap((*v)[i - 1], (*v)[rng() % i]);
}
}  // namespace

Result<std::vector<Fold>> MakeFolds(const Split& split, const std::vector<int>& group, uint64_t seed) {
  size_t n = group.size();
  if (n < 2) return Status::Error("split " + split.ToString() + ": need at least 2 rows");
  std::vector<Fold> folds;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  switch (split.kind) {
    case Split::kLowo: {
      std::vector<int> ids(group.begin(), group.end());
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      if (ids.size() < 2) return Status::Error("split lowo: need at least 2 workloads");
      for (int g : ids) {
        Fold f;
        for (size_t i = 0; i < n; ++i) (group[i] == g ? f.test : f.train).push_back(i);
        folds.push_back(std::move(f));
      }
      break;
    }
    case Split::kRandom: {
      Shuffle(&order, seed);
      size_t nt = static_cast<size_t>(std::lround(split.test_fraction * n));
      if (nt == 0 || nt >= n) return Status::Error("split " + split.ToString() + ": empty train or test set");
      Fold f;
      f.test.assign(order.begin(), order.begin() + nt);
      f.train.assign(order.begin() + nt, order.end());
      std::sort(f.test.begin(), f.test.end());
      std::sort(f.train.begin(), f.train.end());
      folds.push_back(std::move(f));
      break;
    }
    case Split::kKfold: {
      if (static_cast<size_t>(split.k) > n)
        return Status::Error("split " + split.ToString() + ": more folds than rows");
      Shuffle(&order, seed);
      for (int k = 0; k < split.k; ++k) {
        Fold f;
        for (size_t i = 0; i < n; ++i) (static_cast<int>(i % split.k) == k ? f.test : f.train).push_back(order[i]);
        std::sort(f.test.begin(), f.test.end());
        std::sort(f.train.begin(), f.train.end());
        folds.push_back(std::move(f));
      }
      break;
    }
    case Split::kLargestBatch:
    case Split::kGpu:
    case Split::kLogo:
    case Split::kConfig:
      return Status::Error("split " + split.ToString() + ": needs the dataset (MakeFolds(split, data, seed))");
  }
  return folds;
}

Result<std::vector<Fold>> MakeFolds(const Split& split, const Dataset& data, uint64_t seed) {
  size_t n = data.rows.size();
  std::vector<Fold> folds;
  auto check = [&](Fold f) -> Status {
    if (f.train.empty() || f.test.empty())
      return Status::Error("split " + split.ToString() + ": empty train or test set");
    folds.push_back(std::move(f));
    return Status::Ok();
  };
  switch (split.kind) {
    case Split::kLargestBatch: {
      std::map<int, int64_t> largest;
      for (size_t i = 0; i < n; ++i) largest[data.group[i]] = std::max(largest[data.group[i]], data.rows[i].batch);
      Fold f;
      for (size_t i = 0; i < n; ++i)
        (data.rows[i].batch == largest[data.group[i]] ? f.test : f.train).push_back(i);
      RETURN_IF_ERROR(check(std::move(f)));
      return folds;
    }
    case Split::kGpu: {
      Fold f;
      for (size_t i = 0; i < n; ++i)
        (data.RowGpu(i) == split.gpu ? f.test : f.train).push_back(i);
      if (f.test.empty()) return Status::Error("split " + split.ToString() + ": no row measured on " + split.gpu);
      RETURN_IF_ERROR(check(std::move(f)));
      return folds;
    }
    case Split::kLogo: {
      // One fold per GPU type: its rows held out, every other GPU's trained on.
      std::vector<std::string> gpus;
      for (size_t i = 0; i < n; ++i)
        if (std::find(gpus.begin(), gpus.end(), data.RowGpu(i)) == gpus.end()) gpus.push_back(data.RowGpu(i));
      if (gpus.size() < 2) return Status::Error("split logo: the rows ran on " + std::to_string(gpus.size()) + " GPU type (need 2 or more)");
      for (const std::string& g : gpus) {
        Fold f;
        for (size_t i = 0; i < n; ++i) (data.RowGpu(i) == g ? f.test : f.train).push_back(i);
        RETURN_IF_ERROR(check(std::move(f)));
      }
      return folds;
    }
    case Split::kConfig: {
      std::vector<std::string> configs;
      for (size_t i = 0; i < n; ++i)
        if (data.RowGpu(i) == split.gpu &&
            std::find(configs.begin(), configs.end(), data.RowMig(i)) == configs.end())
          configs.push_back(data.RowMig(i));
      if (configs.empty()) return Status::Error("split " + split.ToString() + ": no row measured on " + split.gpu);
      for (const std::string& c : configs) {
        Fold f;
        for (size_t i = 0; i < n; ++i)
          (data.RowGpu(i) == split.gpu && data.RowMig(i) == c ? f.test : f.train).push_back(i);
        RETURN_IF_ERROR(check(std::move(f)));
      }
      return folds;
    }
    default:
      return MakeFolds(split, data.group, seed);
  }
}

namespace {
struct FoldData {
  Matrix xtr, xte;
  std::vector<double> ytr;
  FitOptions fo;
  std::vector<std::string> gte;  // the test rows' GPU types
};
FoldData Slice(const Dataset& data, const Fold& f, bool calibrate, const RegressorOptions& regressor,
               IntervalMethod interval_method = kDefaultIntervalMethod) {
  FoldData d;
  d.fo.regressor = regressor;
  for (size_t i : f.train) {
    d.xtr.push_back(data.x[i]);
    d.ytr.push_back(data.rows[i].gpu_util);
    d.fo.step_s.push_back(i < data.step_s.size() ? data.step_s[i] : std::nan(""));
    d.fo.group.push_back(data.group[i]);
    if (data.row_gpu.size() == data.rows.size()) d.fo.row_gpu.push_back(data.row_gpu[i]);
  }
  d.fo.calibrate = calibrate;
  d.fo.interval_method = interval_method;
  for (size_t i : f.test) {
    d.xte.push_back(data.x[i]);
    d.gte.push_back(data.RowGpu(i));
  }
  return d;
}
// The intervals of x at every kTradeoffLevels, one vector per row (none when m has no calibration).
Result<std::vector<std::vector<std::pair<double, double>>>> TradeoffIntervals(const UtilModel& m, const Matrix& x,
                                                                                const std::vector<std::string>& gpus) {
  std::vector<std::vector<std::pair<double, double>>> out(x.size());
  if (m.calibration().empty()) return out;
  for (double level : kTradeoffLevels) {
    ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, m.Predict(x, level, &gpus));
    for (size_t j = 0; j < p.size(); ++j) out[j].push_back({p[j].low, p[j].high});
  }
  return out;
}
void Append(const Dataset& data, const Fold& f, const std::vector<UtilPrediction>& p,
            std::vector<std::vector<std::pair<double, double>>> tradeoff, std::vector<RowPrediction>* out) {
  for (size_t j = 0; j < f.test.size(); ++j) {
    size_t i = f.test[j];
    const Measurement& r = data.rows[i];
    RowPrediction rp;
    rp.model = r.model;
    rp.dataset = r.dataset;
    rp.batch = r.batch;
    rp.amp = r.amp;
    rp.measured = r.gpu_util;
    rp.predicted = p[j].util;
    rp.low = p[j].low;
    rp.high = p[j].high;
    rp.step_predicted_ms = p[j].step_ms;
    rp.step_low_ms = p[j].step_low_ms;
    rp.step_high_ms = p[j].step_high_ms;
    if (i < data.step_s.size() && std::isfinite(data.step_s[i])) rp.step_measured_ms = data.step_s[i] * 1e3;
    if (j < tradeoff.size()) rp.tradeoff = std::move(tradeoff[j]);
    rp.row = i;
    rp.gpu = data.RowGpu(i);
    rp.mig_profile = data.RowMig(i);
    out->push_back(std::move(rp));
  }
}
// The fold's test rows, already appended at out[first...], get their measured
// memory and the memory predicted by FoldMemoryPredictions (memory_model.h).
Status FillMemory(const Dataset& data, const Fold& f, double level, size_t first, std::vector<RowPrediction>* out) {
  ASSIGN_OR_RETURN(std::vector<MemoryPrediction> mp, FoldMemoryPredictions(data, f.train, f.test, level));
  for (size_t j = first; j < out->size(); ++j) {
    RowPrediction& rp = (*out)[j];
    rp.mem_measured = data.rows[rp.row].gmem;
    rp.mem_predicted = mp.at(j - first).mib;
    rp.mem_low = mp[j - first].low;
    rp.mem_high = mp[j - first].high;
  }
  return Status::Ok();
}
}  // namespace

Result<std::vector<RowPrediction>> CrossValidatedPredictions(const Dataset& data,
                                                             const std::vector<Fold>& folds,
                                                             const std::string& algo, uint64_t seed,
                                                             const std::string& feature_set, bool calibrate,
                                                             double level, IntervalMethod interval_method,
                                                             const RegressorOptions& regressor) {
  ASSIGN_OR_RETURN(std::vector<size_t> cols, SelectFeatures(data.feature_names, feature_set));
  std::vector<RowPrediction> out;
  for (size_t fi = 0; fi < folds.size(); ++fi) {
    const Fold& f = folds[fi];
    FoldData d = Slice(data, f, calibrate, regressor, interval_method);
    auto m = UtilModel::Fit(d.xtr, d.ytr, data.feature_names, cols, algo, nullptr, seed * 7919 + fi, d.fo);
    if (!m.ok()) return m.status().Prefixed("fold " + std::to_string(fi));
    ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, m->Predict(d.xte, level, &d.gte));
    const size_t first = out.size();
    ASSIGN_OR_RETURN(auto tradeoff, TradeoffIntervals(*m, d.xte, d.gte));
    Append(data, f, p, std::move(tradeoff), &out);
    if (Status st = FillMemory(data, f, level, first, &out); !st.ok()) return st.Prefixed("fold " + std::to_string(fi));
  }
  return out;
}

Result<std::vector<RowPrediction>> NestedPredictions(const Dataset& data, const std::vector<Fold>& folds,
                                                     const std::vector<Candidate>& candidates, uint64_t seed,
                                                     double level, std::vector<std::string>* selected,
                                                     bool select_by_pooled_rmsle, IntervalMethod interval_method,
                                                     const RegressorOptions& regressor) {
  if (candidates.empty()) return Status::Error("nested: no candidates");
  std::vector<std::vector<size_t>> cols;
  for (const Candidate& c : candidates) {
    ASSIGN_OR_RETURN(std::vector<size_t> cc, SelectFeatures(data.feature_names, c.feature_set));
    cols.push_back(std::move(cc));
  }
  std::vector<RowPrediction> out;
  for (size_t fi = 0; fi < folds.size(); ++fi) {
    const Fold& f = folds[fi];
    FoldData d = Slice(data, f, false, regressor);
    uint64_t fold_seed = seed * 7919 + fi;
    size_t best = 0;
    double best_rmsle = INFINITY;
    std::vector<double> best_res, best_step;
    std::vector<RowRisk> best_risks;
    for (size_t k = 0; k < candidates.size(); ++k) {
      std::vector<RowRisk> risks;
      std::vector<double> step_scores;
      auto res = GroupedResiduals(d.xtr, d.ytr, data.feature_names, cols[k], candidates[k].algo, nullptr,
                                  fold_seed, d.fo, nullptr, &risks, &step_scores);
      if (!res.ok()) return res.status().Prefixed("fold " + std::to_string(fi) + ": " + candidates[k].ToString());
      double score = 0;
      if (select_by_pooled_rmsle) {
        for (double r : *res) score += r * r;
        score = std::sqrt(score / res->size());
      } else {
        score = SelectionScore(*res, d.fo.group);
      }
      if (score < best_rmsle)
        best_rmsle = score, best = k, best_res = std::move(res).value(), best_risks = std::move(risks),
        best_step = std::move(step_scores);
    }
    auto m = UtilModel::Fit(d.xtr, d.ytr, data.feature_names, cols[best], candidates[best].algo, nullptr,
                            fold_seed, d.fo);
    if (!m.ok()) return m.status().Prefixed("fold " + std::to_string(fi));
    m->set_calibration(best_res, d.ytr, interval_method, &best_risks);  // the same inner pass that selected it
    m->set_step_calibration_scores(std::move(best_step));
    RETURN_IF_ERROR(m->CalibrateTransfer(d.xtr, d.ytr, data.feature_names, nullptr, fold_seed, d.fo));
    ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, m->Predict(d.xte, level, &d.gte));
    const size_t first = out.size();
    ASSIGN_OR_RETURN(auto tradeoff, TradeoffIntervals(*m, d.xte, d.gte));
    Append(data, f, p, std::move(tradeoff), &out);
    // Memory has one model (no selection): fit on the same outer training rows.
    if (Status st = FillMemory(data, f, level, first, &out); !st.ok()) return st.Prefixed("fold " + std::to_string(fi));
    if (selected) selected->push_back(candidates[best].ToString());
  }
  return out;
}

Result<std::vector<RowPrediction>> LeaveOneWorkloadOutPredictions(const Dataset& data,
                                                                  const std::string& algo,
                                                                  uint64_t seed) {
  Split s;
  s.kind = Split::kLowo;
  ASSIGN_OR_RETURN(std::vector<Fold> folds, MakeFolds(s, data.group, seed));
  std::vector<RowPrediction> p;
  if (algo == kAutoAlgo) {
    ASSIGN_OR_RETURN(p, NestedPredictions(data, folds, AutoCandidates(), seed, 0.8, nullptr));
  } else {
    // Calibrated as evaluate calibrates: each fold's interval from a leave-one-workload-out pass over
    // that fold's training rows only (the held-out workload never in it). The points are the same
    // fits as without (the calibration is computed after the fit and does not change it).
    ASSIGN_OR_RETURN(p, CrossValidatedPredictions(data, folds, algo, seed, DefaultFeatureSet(algo),
                                                  /*calibrate=*/true, kDefaultIntervalLevel));
  }
  std::sort(p.begin(), p.end(), [](const RowPrediction& a, const RowPrediction& b) { return a.row < b.row; });
  return p;
}

Result<Scores> Score(const std::vector<RowPrediction>& preds) {
  std::vector<double> y, yh, lo, hi;
  for (const auto& p : preds) {
    y.push_back(p.measured);
    yh.push_back(p.predicted);
    lo.push_back(p.low);
    hi.push_back(p.high);
  }
  Scores s;
  ASSIGN_OR_RETURN(s.rmsle, Rmsle(yh, y));
  ASSIGN_OR_RETURN(s.mae, Mae(yh, y));
  auto r2 = RSquared(yh, y);
  s.r2 = r2.ok() ? *r2 : std::nan("");
  ASSIGN_OR_RETURN(s.coverage, Coverage(lo, hi, y));
  return s;
}

MemoryScores ScoreMemory(const std::vector<RowPrediction>& preds) {
  MemoryScores s;
  double ape = 0, ae = 0, above = 0, inside = 0;
  std::vector<double> widths;
  for (const RowPrediction& p : preds) {
    if (!(std::isfinite(p.mem_measured) && p.mem_measured > 0 && std::isfinite(p.mem_predicted))) continue;
    ++s.rows;
    ape += std::fabs(p.mem_predicted - p.mem_measured) / p.mem_measured;
    ae += std::fabs(p.mem_predicted - p.mem_measured);
    above += p.mem_high >= p.mem_measured;
    inside += p.mem_low <= p.mem_measured && p.mem_measured <= p.mem_high;
    widths.push_back(p.mem_high - p.mem_low);
  }
  if (s.rows == 0) return s;
  const double n = static_cast<double>(s.rows);
  s.mape = ape / n;
  s.mae_mib = ae / n;
  s.high_above = above / n;
  s.coverage = inside / n;
  s.median_width_mib = Quantile(widths, 0.5);
  return s;
}

Interval90 BootstrapRmsle(const std::vector<double>& pred, const std::vector<double>& actual,
                          const std::vector<std::string>& unit, int resamples, uint64_t seed) {
  std::map<std::string, std::pair<double, size_t>> by_unit;  // sum of squared log errors, rows
  for (size_t i = 0; i < pred.size(); ++i) {
    double d = std::log1p(pred[i]) - std::log1p(actual[i]);
    auto& u = by_unit[unit[i]];
    u.first += d * d;
    u.second += 1;
  }
  std::vector<std::pair<double, size_t>> units;
  for (const auto& [k, v] : by_unit) units.push_back(v);
  if (units.empty() || resamples < 1) return {};
  std::mt19937_64 rng(seed);
  std::vector<double> stats;
  for (int b = 0; b < resamples; ++b) {
    double ss = 0;
    size_t n = 0;
    for (size_t k = 0; k < units.size(); ++k) {
      const auto& u = units[rng() % units.size()];
      ss += u.first;
      n += u.second;
    }
    stats.push_back(std::sqrt(ss / n));
  }
  return {Quantile(stats, 0.05), Quantile(stats, 0.95)};
}

Result<EvalResult> Evaluate(const Dataset& data, const EvalOptions& opts) {
  if (opts.repeats < 1) return Status::Error("evaluate: repeats must be >= 1");
  EvalResult res;
  res.options = opts;
  std::vector<double> rmsle, mae, r2, cov, base;
  std::vector<double> labels = data.Labels();
  std::vector<double> base_pred, base_actual;
  std::vector<size_t> base_row;
  double mem_base_ape = 0, mem_base_n = 0;
  for (int rep = 0; rep < opts.repeats; ++rep) {
    uint64_t seed = opts.seed + rep;
    ASSIGN_OR_RETURN(std::vector<Fold> folds, MakeFolds(opts.split, data, seed));
    std::vector<RowPrediction> p;
    if (!opts.nested.empty() || opts.algo == kAutoAlgo) {
      ASSIGN_OR_RETURN(p, NestedPredictions(data, folds, opts.nested.empty() ? AutoCandidates() : opts.nested,
                                            seed, opts.level, &res.selected, opts.select_by_pooled_rmsle,
                                            opts.interval_method, opts.regressor));
    } else {
      ASSIGN_OR_RETURN(p, CrossValidatedPredictions(data, folds, opts.algo, seed, opts.feature_set,
                                                    opts.calibrate, opts.level, opts.interval_method,
                                                    opts.regressor));
    }
    // Step-only rows (utilization NaN) count for the step time only.
    std::vector<RowPrediction> step_only;
    for (auto it = p.begin(); it != p.end();) {
      if (std::isnan(it->measured)) {
        step_only.push_back(*it);
        it = p.erase(it);
      } else {
        ++it;
      }
    }
    res.step_only.insert(res.step_only.end(), step_only.begin(), step_only.end());
    if (p.empty()) {  // only step-only rows held out (gpu:T4): the step time is all there is to score
      if (opts.on_repeat) opts.on_repeat(rep + 1, opts.repeats);
      continue;
    }
    ASSIGN_OR_RETURN(Scores s, Score(p));
    rmsle.push_back(s.rmsle);
    mae.push_back(s.mae);
    if (!std::isnan(s.r2)) r2.push_back(s.r2);
    cov.push_back(s.coverage);
    // Baseline: predict the training rows' mean in log1p space, same folds.
    std::vector<double> bp, by;
    for (const Fold& f : folds) {
      double m = 0, n = 0;
      for (size_t i : f.train)
        if (!std::isnan(labels[i])) m += std::log1p(labels[i]), n += 1;
      m = std::expm1(m / std::max(1.0, n));
      for (size_t i : f.test) {
        if (std::isnan(labels[i])) continue;
        bp.push_back(m);
        by.push_back(labels[i]);
        base_row.push_back(i);
      }
    }
    ASSIGN_OR_RETURN(double b, Rmsle(bp, by));
    base.push_back(b);
    // Memory baseline: the training rows' mean of log(memory), same folds.
    for (const Fold& f : folds) {
      double sum = 0, n = 0;
      for (size_t i : f.train)
        if (std::isfinite(data.rows[i].gmem) && data.rows[i].gmem > 0) sum += std::log(data.rows[i].gmem), n += 1;
      if (n == 0) continue;
      for (size_t i : f.test) {
        const double y = data.rows[i].gmem;
        if (!(std::isfinite(y) && y > 0)) continue;
        mem_base_ape += std::fabs(std::exp(sum / n) - y) / y;
        mem_base_n += 1;
      }
    }
    base_pred.insert(base_pred.end(), bp.begin(), bp.end());
    base_actual.insert(base_actual.end(), by.begin(), by.end());
    res.predictions.insert(res.predictions.end(), p.begin(), p.end());
    if (opts.on_repeat) opts.on_repeat(rep + 1, opts.repeats);
  }
  auto score_steps = [&] {
    // Step time: every held-out row with a measured and a predicted step.
    std::map<std::string, std::vector<const RowPrediction*>> by_gpu;
    for (const std::vector<RowPrediction>* v : {&res.predictions, &res.step_only})
      for (const RowPrediction& p : *v)
        if (std::isfinite(p.step_measured_ms) && std::isfinite(p.step_predicted_ms)) {
          by_gpu[p.gpu].push_back(&p);
          by_gpu[""].push_back(&p);
        }
    for (const auto& [gpu, ps] : by_gpu) {
      EvalResult::StepScore sc;
      sc.gpu = gpu;
      sc.rows = ps.size();
      std::vector<double> ape, ratio;
      double inside = 0;
      for (const RowPrediction* p : ps) {
        ape.push_back(std::fabs(p->step_predicted_ms - p->step_measured_ms) / p->step_measured_ms);
        inside += p->step_low_ms <= p->step_measured_ms && p->step_measured_ms <= p->step_high_ms;
        if (p->step_low_ms > 0) ratio.push_back(p->step_high_ms / p->step_low_ms);
      }
      sc.median_ape = Quantile(ape, 0.5);
      sc.coverage = inside / ps.size();
      if (!ratio.empty()) sc.median_width_ratio = Quantile(ratio, 0.5);
      res.step.push_back(sc);
    }
  };
  if (rmsle.empty()) {  // no utilization held out
    score_steps();
    return res;
  }
  res.rmsle = MeanAndSd(rmsle);
  res.mae = MeanAndSd(mae);
  res.r2 = MeanAndSd(r2);
  res.coverage = MeanAndSd(cov);
  res.mean_baseline_rmsle = MeanAndSd(base).mean;
  // Bootstrap units: workloads; the (GPU, MIG profile) configurations when
  // the test rows are of one workload; rows when also of one configuration.
  auto units_of = [&](const std::vector<size_t>& rows) {
    std::vector<std::string> w, c, r;
    for (size_t i : rows) {
      w.push_back(data.rows[i].Key());
      c.push_back(data.RowGpu(i) + "/" + data.RowMig(i));
      r.push_back(std::to_string(i));
    }
    auto distinct = [](std::vector<std::string> v) {
      std::sort(v.begin(), v.end());
      return std::unique(v.begin(), v.end()) - v.begin();
    };
    if (distinct(w) > 1) return w;
    if (distinct(c) > 1) return c;
    return r;
  };
  std::vector<double> yh, y, widths;
  std::vector<size_t> rows;
  for (const auto& p : res.predictions) {
    yh.push_back(p.predicted);
    y.push_back(p.measured);
    rows.push_back(p.row);
    widths.push_back(p.high - p.low);
  }
  res.rmsle_ci = BootstrapRmsle(yh, y, units_of(rows), opts.bootstrap, opts.seed + 12345);
  res.baseline_ci = BootstrapRmsle(base_pred, base_actual, units_of(base_row), opts.bootstrap, opts.seed + 12345);
  res.median_width = Quantile(widths, 0.5);
  for (size_t k = 0; k < std::size(kTradeoffLevels); ++k) {
    std::vector<double> w;
    double inside = 0;
    for (const auto& p : res.predictions) {
      if (p.tradeoff.size() != std::size(kTradeoffLevels)) break;
      w.push_back(p.tradeoff[k].second - p.tradeoff[k].first);
      inside += p.tradeoff[k].first <= p.measured && p.measured <= p.tradeoff[k].second;
    }
    if (w.size() != res.predictions.size() || w.empty()) break;
    res.interval_tradeoff.push_back({kTradeoffLevels[k], inside / w.size(), Quantile(w, 0.5)});
  }
  res.memory = ScoreMemory(res.predictions);
  if (mem_base_n > 0) res.memory_baseline_mape = mem_base_ape / mem_base_n;
  for (const std::string& w : data.groups) {
    WorkloadError e;
    e.workload = w;
    std::vector<double> wy, wyh;
    std::vector<RowPrediction> wp;
    for (const auto& p : res.predictions)
      if (p.model + "/" + p.dataset == w) {
        wy.push_back(p.measured);
        wyh.push_back(p.predicted);
        wp.push_back(p);
      }
    e.memory = ScoreMemory(wp);
    if (e.memory.rows > 0) {
      double m = 0, ph = 0;
      for (const RowPrediction& p : wp)
        if (std::isfinite(p.mem_measured) && p.mem_measured > 0 && std::isfinite(p.mem_predicted))
          m += p.mem_measured, ph += p.mem_predicted;
      e.mem_mean_measured = m / e.memory.rows;
      e.mem_mean_predicted = ph / e.memory.rows;
    }
    e.predictions = wy.size();
    if (wy.empty()) continue;  // never drawn into a test set
    e.rmsle = *Rmsle(wyh, wy);
    e.mae = *Mae(wyh, wy);
    e.mean_measured = MeanAndSd(wy).mean;
    e.mean_predicted = MeanAndSd(wyh).mean;
    res.per_workload.push_back(e);
  }
  score_steps();
  return res;
}

std::string PredictionPlotSvg(const std::vector<RowPrediction>& preds, const std::string& title) {
  const double w = 560, h = 520, left = 60, top = 40, size = 420;
  auto px = [&](double v) { return left + v / 100 * size; };
  auto py = [&](double v) { return top + size - v / 100 * size; };
  static const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"};
  std::vector<std::string> workloads;
  for (const auto& p : preds) {
    std::string k = p.model + "/" + p.dataset;
    if (std::find(workloads.begin(), workloads.end(), k) == workloads.end()) workloads.push_back(k);
  }
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '<') o += "&lt;";
      else if (c == '>') o += "&gt;";
      else if (c == '&') o += "&amp;";
      else o += c;
    }
    return o;
  };
  char buf[512];
  std::string s;
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
                "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                w + 200, h);
  s += buf;
  s += "<text x=\"" + std::to_string(int(left)) + "\" y=\"24\" font-size=\"13\">" + esc(title) + "</text>\n";
  for (int v = 0; v <= 100; v += 20) {
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>"
                  "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>"
                  "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%d</text>"
                  "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%d</text>\n",
                  px(v), py(0), px(v), py(100), px(0), py(v), px(100), py(v), px(v), py(0) + 16, v,
                  px(0) - 6, py(v) + 4, v);
    s += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n"
                "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">measured GPU utilization (%%)</text>\n"
                "<text transform=\"translate(%g,%g) rotate(-90)\" text-anchor=\"middle\">predicted (%%), bar = "
                "interval</text>\n",
                px(0), py(0), px(100), py(100), px(50), py(0) + 34, left - 38, py(50));
  s += buf;
  for (const auto& p : preds) {
    size_t wi = std::find(workloads.begin(), workloads.end(), p.model + "/" + p.dataset) - workloads.begin();
    const char* c = kColours[wi % (sizeof kColours / sizeof *kColours)];
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-opacity=\"0.35\"/>"
                  "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\" fill-opacity=\"0.8\"/>\n",
                  px(p.measured), py(p.low), px(p.measured), py(p.high), c, px(p.measured), py(p.predicted), c);
    s += buf;
  }
  for (size_t i = 0; i < workloads.size(); ++i) {
    std::snprintf(buf, sizeof buf,
                  "<circle cx=\"%g\" cy=\"%g\" r=\"4\" fill=\"%s\"/><text x=\"%g\" y=\"%g\">%s</text>\n",
                  left + size + 30, top + 10 + 18.0 * i, kColours[i % (sizeof kColours / sizeof *kColours)],
                  left + size + 40, top + 14 + 18.0 * i, esc(workloads[i]).c_str());
    s += buf;
  }
  s += "</svg>\n";
  return s;
}

}  // namespace gpucast
