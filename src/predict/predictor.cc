#include "predict/predictor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <tuple>

#include "features/gpu_specs.h"
#include "predict/model_file.h"
#include "predict/physics.h"

namespace gpucast {
namespace {

// Which ablation group a schema feature belongs to (see docs/predictor.md).
enum class Group { kPaper, kPhysical, kJob };

// The paper's graph features (plus the AMP flag, part of every job's
// configuration) and the job attributes of gpucast-features; every other
// schema feature (per-category FLOPs, bytes, the roofline step estimate, log
// scales) counts as "physical".
constexpr const char* kPaperFeatures[] = {"total_flops", "params", "n_conv_layers", "n_linear_layers",
                                          "n_activation_layers", "n_other_layers", "batch_size", "amp"};
constexpr const char* kJobFeatures[] = {"loader_workers", "loader_workers_known", "data_on_gpu",
                                        "data_on_gpu_known", "rl_env", "rl_env_known",
                                        "loader_ms_per_sample", "loader_ms_per_sample_known",
                                        "env_steps_per_update", "env_steps_per_update_known"};

Group GroupOf(const std::string& name) {
  for (const char* n : kPaperFeatures)
    if (name == n) return Group::kPaper;
  for (const char* n : kJobFeatures)
    if (name == n) return Group::kJob;
  return Group::kPhysical;
}

struct FeatureSetRow {
  const char* name;
  bool paper, physical, job;
};
constexpr FeatureSetRow kFeatureSets[] = {
    {"paper", true, false, false},
    {"paper+job", true, false, true},  // + job attributes, no physical features
    {"paper+physical", true, true, false},
    {"all", true, true, true},  // + job attributes
};

double ToTarget(double util) { return std::log1p(util); }
double FromTarget(double t) { return std::clamp(std::expm1(t), 0.0, 100.0); }
size_t CountGroups(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  return static_cast<size_t>(std::unique(ids.begin(), ids.end()) - ids.begin());
}

}  // namespace

const std::vector<std::string>& JobFactNames() {
  // The optional quantities a job states (0 = not stated): a job stating a
  // loader or environment cost its workload's rows did not is another job.
  // loader_workers, data_on_gpu and rl_env are not keys: a job submitted
  // without them (Slurm, the service) is still its measured workload.
  static const std::vector<std::string> names = {"loader_ms_per_sample", "env_steps_per_update"};
  return names;
}

std::vector<std::string> JobFactsIn(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : JobFactNames())
    if (std::find(names.begin(), names.end(), n) != names.end()) out.push_back(n);
  return out;
}

std::vector<std::string> FeatureSetNames() {
  std::vector<std::string> out;
  for (const auto& r : kFeatureSets) out.push_back(r.name);
  return out;
}

Result<std::vector<size_t>> SelectFeatures(const std::vector<std::string>& names, const std::string& set) {
  for (const auto& r : kFeatureSets) {
    if (set != r.name) continue;
    std::vector<size_t> cols;
    for (size_t i = 0; i < names.size(); ++i) {
      Group g = GroupOf(names[i]);
      if ((g == Group::kPaper && r.paper) || (g == Group::kPhysical && r.physical) ||
          (g == Group::kJob && r.job))
        cols.push_back(i);
    }
    if (cols.empty()) return Status::Error("feature set '" + set + "' selects no feature of the schema");
    return cols;
  }
  std::string known;
  for (const auto& r : kFeatureSets) known += (known.empty() ? "" : ", ") + std::string(r.name);
  return Status::Error("unknown feature set '" + set + "' (known: " + known + ")");
}

namespace {
Matrix SelectColumns(const Matrix& x, const std::vector<size_t>& cols) {
  Matrix out;
  out.reserve(x.size());
  for (const auto& row : x) {
    std::vector<double> r;
    r.reserve(cols.size());
    for (size_t c : cols) r.push_back(c < row.size() ? row[c] : std::nan(""));
    out.push_back(std::move(r));
  }
  return out;
}
}  // namespace

Result<UtilModel> UtilModel::Fit(const Matrix& x, const std::vector<double>& util,
                                 const std::vector<std::string>& names, const std::vector<size_t>& columns,
                                 const std::string& algo, const nlohmann::json& params, uint64_t seed,
                                 const FitOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Regressor> r, MakeRegressor(algo));
  RETURN_IF_ERROR(r->Configure(params));
  std::vector<std::string> used;
  for (size_t c : columns) {
    if (c >= names.size()) return Status::Error(algo + ": column " + std::to_string(c) + " outside the schema");
    used.push_back(names[c]);
  }
  RETURN_IF_ERROR(r->SetFeatureNames(used));
  std::vector<double> y;
  for (double u : util) {
    if (!(u >= 0 && u <= 100)) return Status::Error(algo + ": label outside 0-100");
    y.push_back(ToTarget(u));
  }
  if (!options.step_s.empty()) {
    if (options.step_s.size() != util.size())
      return Status::Error(algo + ": " + std::to_string(options.step_s.size()) + " step times for " +
                           std::to_string(util.size()) + " rows");
    r->SetStepTimes(options.step_s);
  }
  if (options.group.size() == util.size()) r->SetGroups(options.group);
  RETURN_IF_ERROR(r->Fit(SelectColumns(x, columns), y, seed));
  UtilModel m(algo, columns, std::shared_ptr<Regressor>(std::move(r)));
  if (auto it = std::find(names.begin(), names.end(), "params"); it != names.end()) {
    size_t pc = static_cast<size_t>(it - names.begin());
    std::vector<size_t> fc;
    for (const std::string& n : JobFactsIn(names)) fc.push_back(std::find(names.begin(), names.end(), n) - names.begin());
    ASSIGN_OR_RETURN(std::vector<UtilPrediction> fitted, m.Predict(x));
    // Key: params, then the job facts; sum of residuals, rows, first group.
    std::map<std::vector<double>, std::tuple<double, size_t, int>> by;
    for (size_t i = 0; i < x.size(); ++i) {
      std::vector<double> key = {x[i][pc]};
      for (size_t c : fc) key.push_back(x[i][c]);
      auto [e, fresh] = by.try_emplace(key, 0.0, 0, i < options.group.size() ? options.group[i] : -1);
      std::get<0>(e->second) += ToTarget(util[i]) - ToTarget(fitted[i].util);
      std::get<1>(e->second) += 1;
    }
    std::vector<WorkloadOffset> offsets;
    for (const auto& [k, v] : by) {
      WorkloadOffset o;
      o.params = k[0];
      o.facts.assign(k.begin() + 1, k.end());
      auto [sum, n, g] = v;
      o.offset = sum / (n + 1);
      o.rows = n;
      if (g >= 0 && static_cast<size_t>(g) < options.group_names.size()) o.workload = options.group_names[g];
      offsets.push_back(std::move(o));
    }
    RETURN_IF_ERROR(m.set_offsets(std::move(offsets), names));
  }
  if (options.calibrate && options.group.size() == util.size()) {
    std::vector<int> ids = options.group;
    std::sort(ids.begin(), ids.end());
    if (std::unique(ids.begin(), ids.end()) - ids.begin() >= 3) {
      ASSIGN_OR_RETURN(std::vector<double> res,
                       GroupedResiduals(x, util, names, columns, algo, params, seed, options));
      m.set_calibration(res, util, options.interval_method);
    }
  }
  return m;
}

Status UtilModel::set_offsets(std::vector<WorkloadOffset> offsets, const std::vector<std::string>& names) {
  auto pc = std::find(names.begin(), names.end(), "params");
  if (pc == names.end()) {
    if (!offsets.empty()) return Status::Error("workload offsets: the schema has no 'params' feature");
    params_column_ = static_cast<size_t>(-1);
    offsets_.clear();
    return Status::Ok();
  }
  std::vector<std::string> fn = JobFactsIn(names);
  std::vector<size_t> fc;
  for (const std::string& n : fn) fc.push_back(std::find(names.begin(), names.end(), n) - names.begin());
  for (const WorkloadOffset& o : offsets)
    if (o.facts.size() != fc.size())
      return Status::Error("workload offsets: " + std::to_string(o.facts.size()) + " job facts, the schema has " +
                           std::to_string(fc.size()));
  params_column_ = static_cast<size_t>(pc - names.begin());
  fact_columns_ = std::move(fc);
  fact_names_ = std::move(fn);
  offsets_ = std::move(offsets);
  return Status::Ok();
}

SeenMatch UtilModel::Match(const std::vector<double>& row) const {
  SeenMatch m;
  if (params_column_ >= row.size()) return m;
  for (const WorkloadOffset& o : offsets_) {
    if (row[params_column_] != o.params) continue;
    bool same = true;
    for (size_t k = 0; k < fact_columns_.size(); ++k)
      same = same && fact_columns_[k] < row.size() && row[fact_columns_[k]] == o.facts[k];
    if (same) {
      m.seen = &o;
      return m;
    }
    if (!m.same_graph) m.same_graph = &o;
  }
  return m;
}

const char* IntervalMethodName(IntervalMethod m) {
  switch (m) {
    case IntervalMethod::kCentral: return "central";
    case IntervalMethod::kLogit: return "logit-shortest";
    case IntervalMethod::kNormalized: break;
  }
  return "normalized-shortest";
}

Result<IntervalMethod> ParseIntervalMethod(const std::string& name) {
  if (name == "normalized" || name == "normalized-shortest") return IntervalMethod::kNormalized;
  if (name == "central") return IntervalMethod::kCentral;
  if (name == "logit" || name == "logit-shortest") return IntervalMethod::kLogit;
  return Status::Error("unknown interval method '" + name + "' (known: normalized, central, logit)");
}

double Difficulty(double util) { return 1 - std::clamp(util, 0.0, 100.0) / 100 + kDifficultyFloor; }

double UtilLogit(double util) {
  const double u = std::clamp(util, 0.0, 100.0);
  return std::log((u + kLogitPadPoints) / (100 - u + kLogitPadPoints));
}

double LogitToUtil(double z) {
  // (u + c) / (100 - u + c) = e^z  =>  u = (e^z (100 + c) - c) / (1 + e^z); e^z bounded first.
  const double e = std::exp(std::clamp(z, -50.0, 50.0));
  return std::clamp((e * (100 + kLogitPadPoints) - kLogitPadPoints) / (1 + e), 0.0, 100.0);
}

std::vector<double> CalibrationScores(const std::vector<double>& residuals, const std::vector<double>& util,
                                      IntervalMethod method) {
  std::vector<double> out;
  for (size_t i = 0; i < residuals.size(); ++i) {
    if (method == IntervalMethod::kCentral || i >= util.size()) {
      out.push_back(residuals[i]);
      continue;
    }
    double predicted = FromTarget(ToTarget(util[i]) - residuals[i]);  // the pass's prediction
    if (method == IntervalMethod::kLogit) {
      out.push_back(UtilLogit(util[i]) - UtilLogit(predicted));
      continue;
    }
    out.push_back(residuals[i] / Difficulty(predicted));
  }
  return out;
}

void UtilModel::set_calibration(const std::vector<double>& residuals, const std::vector<double>& util,
                                IntervalMethod method) {
  set_calibration_scores(CalibrationScores(residuals, util, method), method);
}

void UtilModel::set_calibration_scores(std::vector<double> scores, IntervalMethod method) {
  std::sort(scores.begin(), scores.end());
  calibration_ = std::move(scores);
  interval_method_ = method;
}

std::pair<double, double> ShortestWindow(const std::vector<double>& sorted, double level) {
  if (sorted.empty()) return {0, 0};
  const size_t n = sorted.size();
  size_t k = static_cast<size_t>(std::clamp(std::ceil((n + 1) * level), 1.0, static_cast<double>(n)));
  size_t best = 0;
  for (size_t i = 1; i + k <= n; ++i)
    if (sorted[i + k - 1] - sorted[i] < sorted[best + k - 1] - sorted[best]) best = i;
  return {sorted[best], sorted[best + k - 1]};
}

std::pair<double, double> ConformalOffsets(const std::vector<double>& sorted, double level) {
  if (sorted.empty()) return {0, 0};
  const double n = static_cast<double>(sorted.size());
  auto at = [&](double k) {  // k-th order statistic, 1-based, clamped to the sample
    return sorted[static_cast<size_t>(std::clamp(k, 1.0, n)) - 1];
  };
  return {at(std::floor((n + 1) * (1 - level) / 2)), at(std::ceil((n + 1) * (1 + level) / 2))};
}

UtilPrediction CalibratedInterval(double util, const std::vector<double>& sorted, double level,
                                  IntervalMethod method) {
  auto [lo_off, hi_off] = method == IntervalMethod::kCentral ? ConformalOffsets(sorted, level)
                                                              : ShortestWindow(sorted, level);
  if (method == IntervalMethod::kLogit) {
    const double z = UtilLogit(util);
    return {util, std::min(util, LogitToUtil(z + lo_off)), std::max(util, LogitToUtil(z + hi_off))};
  }
  if (method == IntervalMethod::kNormalized) {
    lo_off *= Difficulty(util);
    hi_off *= Difficulty(util);
  }
  double t = ToTarget(util);
  // The contract of UtilPrediction: low <= util <= high.
  return {util, std::min(util, FromTarget(t + lo_off)), std::max(util, FromTarget(t + hi_off))};
}

Result<std::vector<UtilPrediction>> UtilModel::Predict(const Matrix& x, double level) const {
  if (!(level > 0 && level < 1)) return Status::Error("interval level must be in (0, 1)");
  ASSIGN_OR_RETURN(std::vector<Estimate> est, regressor_->Predict(SelectColumns(x, columns_)));
  std::vector<UtilPrediction> out;
  for (size_t i = 0; i < est.size(); ++i) {
    Estimate e = est[i];
    if (const WorkloadOffset* o = Match(x[i]).seen) e.mean += o->offset, e.low += o->offset, e.high += o->offset;
    double u = FromTarget(e.mean);
    if (!calibration_.empty()) {
      out.push_back(CalibratedInterval(u, calibration_, level, interval_method_));
    } else {
      out.push_back({u, std::min(u, FromTarget(e.low)), std::max(u, FromTarget(e.high))});
    }
  }
  return out;
}

Result<std::vector<double>> GroupedResiduals(const Matrix& x, const std::vector<double>& util,
                                             const std::vector<std::string>& names,
                                             const std::vector<size_t>& columns, const std::string& algo,
                                             const nlohmann::json& params, uint64_t seed,
                                             const FitOptions& options, std::vector<double>* predicted) {
  std::vector<int> ids = options.group;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.size() < 2) return Status::Error(algo + ": calibration needs at least 2 workloads");
  std::vector<double> res(util.size(), 0);
  if (predicted) predicted->assign(util.size(), 0);
  for (int g : ids) {
    Matrix xtr, xte;
    std::vector<double> ytr;
    FitOptions fo;
    fo.calibrate = false;
    std::vector<size_t> test;
    for (size_t i = 0; i < util.size(); ++i) {
      if (options.group[i] == g) {
        xte.push_back(x[i]);
        test.push_back(i);
      } else {
        xtr.push_back(x[i]);
        ytr.push_back(util[i]);
        fo.group.push_back(options.group[i]);
        if (!options.step_s.empty()) fo.step_s.push_back(options.step_s[i]);
      }
    }
    auto m = UtilModel::Fit(xtr, ytr, names, columns, algo, params, seed * 31 + g, fo);
    if (!m.ok()) return m.status().Prefixed("calibration");
    ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, m->Predict(xte));
    for (size_t j = 0; j < test.size(); ++j) {
      res[test[j]] = ToTarget(util[test[j]]) - ToTarget(p[j].util);
      if (predicted) (*predicted)[test[j]] = p[j].util;
    }
  }
  return res;
}

LowoAccuracy SummariseLowo(const std::vector<double>& residuals, const std::vector<double>& util,
                           const std::vector<int>& group, double level, IntervalMethod method) {
  LowoAccuracy a;
  size_t n = residuals.size();
  if (n == 0 || util.size() != n || group.size() != n) return a;
  std::vector<int> ids = group;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  a.workloads = ids.size();
  a.rows = n;
  a.level = level;
  a.median_workload_rmsle = SelectionScore(residuals, group);
  double ss = 0;
  std::vector<double> abs_err, widths;
  size_t covered = 0;
  std::vector<double> scores = CalibrationScores(residuals, util, method);
  for (int g : ids) {
    std::vector<double> others;
    for (size_t i = 0; i < n; ++i)
      if (group[i] != g) others.push_back(scores[i]);
    std::sort(others.begin(), others.end());
    for (size_t i = 0; i < n; ++i) {
      if (group[i] != g) continue;
      double pred = FromTarget(ToTarget(util[i]) - residuals[i]);
      ss += residuals[i] * residuals[i];
      abs_err.push_back(std::fabs(pred - util[i]));
      UtilPrediction iv = CalibratedInterval(pred, others, level, method);
      covered += iv.low <= util[i] && util[i] <= iv.high;
      widths.push_back(iv.high - iv.low);
    }
  }
  a.rmsle = std::sqrt(ss / n);
  double sum = 0;
  for (double e : abs_err) sum += e;
  a.mae_points = sum / n;
  a.median_abs_error_points = Quantile(abs_err, 0.5);
  a.coverage = static_cast<double>(covered) / n;
  a.median_width_points = Quantile(widths, 0.5);
  return a;
}

double SelectionScore(const std::vector<double>& residuals, const std::vector<int>& group) {
  std::map<int, std::pair<double, size_t>> by;
  for (size_t i = 0; i < residuals.size() && i < group.size(); ++i) {
    by[group[i]].first += residuals[i] * residuals[i];
    by[group[i]].second += 1;
  }
  std::vector<double> per;
  for (const auto& [g, v] : by) per.push_back(std::sqrt(v.first / v.second));
  return Quantile(per, 0.5);
}

std::vector<Candidate> AutoCandidates() {
  std::vector<Candidate> out;
  for (const AlgoRow& row : Algorithms()) out.push_back({row.name, row.feature_set});
  return out;
}

// The stored lowo pass (LowoRowPrediction): each row's utilization from `pred`
// (row order), its memory from FoldMemoryPredictions (memory_model.h) fit on the
// other workloads' rows, in row order, at the 80% level: what the simulator's
// lowo predictions (evaluate.cc) compute.
Result<std::vector<LowoRowPrediction>> Predictor::LowoRows(const Dataset& data, const std::vector<double>& pred) {
  std::vector<LowoRowPrediction> out(data.rows.size());
  for (size_t i = 0; i < data.rows.size(); ++i) {
    const Measurement& r = data.rows[i];
    LowoRowPrediction& o = out[i];
    o.model = r.model;
    o.dataset = r.dataset;
    o.batch = r.batch;
    o.amp = r.amp;
    o.gpu = data.RowGpu(i);
    o.mig_profile = data.RowMig(i);
    o.predicted = pred.at(i);
  }
  if (data.mem.size() != data.rows.size()) return out;
  std::vector<int> ids = data.group;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int g : ids) {
    std::vector<size_t> train, test;
    for (size_t i = 0; i < data.rows.size(); ++i) (data.group[i] == g ? test : train).push_back(i);
    ASSIGN_OR_RETURN(std::vector<MemoryPrediction> mp, FoldMemoryPredictions(data, train, test, kDefaultIntervalLevel));
    for (size_t j = 0; j < test.size(); ++j) {
      out[test[j]].mem_predicted = mp[j].mib;
      out[test[j]].mem_high = mp[j].high;
    }
  }
  return out;
}

namespace {
// "ResNet18/cifar10 batch 32 AMP on A100-80GB 1g.10gb": a training row as
// StoredLowoApplies names it.
std::string LowoRowName(const std::string& model, const std::string& dataset, int64_t batch, bool amp,
                        const std::string& gpu, const std::string& mig) {
  std::string s = model + "/" + dataset + " batch " + std::to_string(batch) + (amp ? " AMP" : "");
  if (!gpu.empty()) s += " on " + gpu;
  if (!mig.empty()) s += " " + mig;
  return s;
}
}  // namespace

Status Predictor::StoredLowoApplies(const Dataset& data) const {
  const PredictorInfo& i = info_;
  const std::string algo = model_.algo();
  if (i.lowo_predictions.empty())
    return Status::Error("it holds no leave-one-workload-out predictions (written by an older gpucast, or trained on "
                         "fewer than 3 workloads)");
  if (i.schema_name != data.schema_name || i.schema_version != data.schema_version || i.feature_names != data.feature_names)
    return Status::Error("its feature schema is not this build's");
  if (i.training_digest != data.digest)
    return Status::Error("it was trained on data " + i.training_digest + ", the simulator's rows are " + data.digest);
  if (i.lowo_predictions.size() != data.rows.size())
    return Status::Error("it was trained on " + std::to_string(i.lowo_predictions.size()) +
                         " rows, the simulator's data has " + std::to_string(data.rows.size()) +
                         " (rows added by --observations or --data?)");
  for (size_t r = 0; r < data.rows.size(); ++r) {
    const LowoRowPrediction& s = i.lowo_predictions[r];
    const Measurement& m = data.rows[r];
    const std::string gpu = data.RowGpu(r);
    const std::string mig = data.RowMig(r);
    if (s.model != m.model || s.dataset != m.dataset || s.batch != m.batch || s.amp != m.amp || s.gpu != gpu ||
        s.mig_profile != mig)
      return Status::Error("its training row " + std::to_string(r + 1) + " is " +
                           LowoRowName(s.model, s.dataset, s.batch, s.amp, s.gpu, s.mig_profile) +
                           ", the simulator's is " + LowoRowName(m.model, m.dataset, m.batch, m.amp, gpu, mig));
  }
  if (i.feature_set != DefaultFeatureSet(algo))
    return Status::Error("it was trained with --features " + i.feature_set + "; the simulator's " + algo +
                         " predictions use " + DefaultFeatureSet(algo));
  if (i.seed != 0) return Status::Error("it was trained with --seed " + std::to_string(i.seed) + "; the simulator's use seed 0");
  return Status::Ok();
}

Result<Predictor> Predictor::Train(const Dataset& data, const std::string& algo, uint64_t seed,
                                   const std::string& feature_set,
                                   const std::function<void(const std::string&, double)>& on_candidate) {
  FitOptions fo;
  fo.step_s = data.step_s;
  fo.group = data.group;
  fo.group_names = data.groups;
  std::vector<double> labels = data.Labels();
  std::string chosen_algo = algo, chosen_set = feature_set;
  std::vector<std::pair<std::string, double>> selection;
  std::vector<double> chosen_res, chosen_pred;
  if (algo == kAutoAlgo) {
    double best = INFINITY;
    for (const Candidate& c : AutoCandidates()) {
      ASSIGN_OR_RETURN(std::vector<size_t> cc, SelectFeatures(data.feature_names, c.feature_set));
      std::vector<double> pred;
      auto res = GroupedResiduals(data.x, labels, data.feature_names, cc, c.algo, nullptr, seed, fo, &pred);
      if (!res.ok()) return res.status().Prefixed("auto: " + c.ToString());
      double rmsle = SelectionScore(*res, data.group);
      selection.push_back({c.ToString(), rmsle});
      if (on_candidate) on_candidate(c.ToString(), rmsle);
      if (rmsle < best)
        best = rmsle, chosen_algo = c.algo, chosen_set = c.feature_set, chosen_res = *res, chosen_pred = std::move(pred);
    }
  }
  ASSIGN_OR_RETURN(std::vector<size_t> cols, SelectFeatures(data.feature_names, chosen_set));
  if (algo != kAutoAlgo && fo.calibrate && CountGroups(fo.group) >= 3) {
    // The calibration pass, done once here so that its residuals also give the accuracy.
    ASSIGN_OR_RETURN(chosen_res, GroupedResiduals(data.x, labels, data.feature_names, cols, chosen_algo, nullptr,
                                                  seed, fo, &chosen_pred));
  }
  fo.calibrate = false;
  ASSIGN_OR_RETURN(UtilModel m,
                   UtilModel::Fit(data.x, labels, data.feature_names, cols, chosen_algo, nullptr, seed, fo));
  if (!chosen_res.empty()) m.set_calibration(chosen_res, labels, fo.interval_method);
  // Data-parallel predictions need step and busy time: a physics model beside any other.
  // Rows without the physics features (a test schema) get none: data-parallel predictions then fail.
  std::optional<UtilModel> step_model;
  bool has_physics_features = true;
  for (const std::string& need : MakePhysicsModel()->RequiredFeatures())
    if (std::find(data.feature_names.begin(), data.feature_names.end(), need) == data.feature_names.end())
      has_physics_features = false;
  if (has_physics_features && !dynamic_cast<const PhysicsModel*>(&m.regressor())) {
    ASSIGN_OR_RETURN(std::vector<size_t> pcols, SelectFeatures(data.feature_names, DefaultFeatureSet("physics")));
    FitOptions pfo = fo;
    pfo.calibrate = false;
    auto pm = UtilModel::Fit(data.x, labels, data.feature_names, pcols, "physics", nullptr, seed, pfo);
    if (!pm.ok()) return pm.status().Prefixed("step model");
    step_model = std::move(*pm);
  }
  PredictorInfo info;
  if (!chosen_res.empty()) info.accuracy = SummariseLowo(chosen_res, labels, data.group);
  info.selection = std::move(selection);
  info.schema_name = data.schema_name;
  info.schema_version = data.schema_version;
  info.feature_names = data.feature_names;
  info.feature_set = chosen_set;
  info.training_digest = data.digest;
  info.training_csv = data.csv_path;
  info.training_rows = data.rows.size();
  info.gpu = data.gpu;
  info.seed = seed;
  for (const Measurement& r : data.rows)
    if (!r.target.empty() && std::find(info.targets.begin(), info.targets.end(), r.target) == info.targets.end())
      info.targets.push_back(r.target);
  Predictor out(std::move(info), std::move(m));
  if (step_model) out.set_step_model(std::move(*step_model));
  // The memory model, on the rows that have a memory column (none: no model).
  std::vector<double> gmem = data.MemoryLabels();
  if (data.mem.size() == data.rows.size() &&
      std::count_if(gmem.begin(), gmem.end(), [](double v) { return std::isfinite(v) && v > 0; }) >= 2) {
    auto mm = MemoryModel::Fit(data.mem, gmem, data.group, /*calibrate=*/true, data.groups);
    if (!mm.ok()) return mm.status();
    out.set_memory(std::move(mm).value());
  }
  if (!chosen_pred.empty()) {
    ASSIGN_OR_RETURN(out.info_.lowo_predictions, LowoRows(data, chosen_pred));
  }
  return out;
}

std::string Predictor::TargetFor(const std::string& mig_profile) {
  // nvidia-smi reports no utilization.gpu for a MIG instance; DCGM's
  // GR-engine-active is the per-instance counter.
  return mig_profile.empty() ? kTargetNvidiaSmi : kTargetDcgmGrActive;
}

Result<PredictResult> Predictor::Predict(const std::vector<CostReport>& reports, const JobConfig& job,
                                         double level) const {
  if (reports.empty()) return Status::Error("predict: no graph");
  ASSIGN_OR_RETURN(std::vector<double> f, ComputeFeatures(reports, job));
  if (f.size() != info_.feature_names.size())
    return Status::Error("predict: features have " + std::to_string(f.size()) + " values, model wants " +
                         std::to_string(info_.feature_names.size()));
  ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, model_.Predict({f}, level));
  PredictResult out;
  out.prediction = p[0];
  out.features = f;
  SeenMatch seen = model_.Match(f);
  auto name = [](const WorkloadOffset* o) { return o->workload.empty() ? std::string("a measured workload") : o->workload; };
  if (seen.seen) {
    out.seen_workload = name(seen.seen);
    out.seen_rows = seen.seen->rows;
  } else if (seen.same_graph) {
    out.same_graph_workload = name(seen.same_graph);
    const std::vector<std::string>& facts = model_.fact_names();
    for (size_t k = 0; k < facts.size() && k < seen.same_graph->facts.size(); ++k) {
      auto it = std::find(info_.feature_names.begin(), info_.feature_names.end(), facts[k]);
      if (it == info_.feature_names.end()) continue;
      double mine = out.features[it - info_.feature_names.begin()], theirs = seen.same_graph->facts[k];
      if (mine == theirs) continue;
      // 0 is "not stated" for the two optional quantities (ComputeFeatures).
      bool optional = facts[k] == "loader_ms_per_sample" || facts[k] == "env_steps_per_update";
      auto show = [&](double v) {
        char b[48];
        std::snprintf(b, sizeof b, "%g", v);
        return optional && v == 0 ? std::string("not stated") : std::string(b);
      };
      out.differing_facts.push_back(facts[k] + ": measured " + show(theirs) + ", this job " + show(mine));
    }
  }
  // GPU memory of one rank (data-parallel ranks add DDP's gradient buckets, features/memory.h).
  ASSIGN_OR_RETURN(MemoryEstimate mem, EstimateMemory(reports, job, /*ranks=*/job.gpus));
  if (memory_) {
    // A measured workload's graph (seen, or the same graph with other facts): its own fixed part.
    out.memory = memory_->Predict(mem, level, !out.seen_workload.empty() ? out.seen_workload : out.same_graph_workload);
  } else {
    out.memory.capacity_mib = mem.capacity_mib;
  }
  out.memory_estimate = std::move(mem);
  if (job.gpus == 1 && job.nodes == 1 && job.interconnect.empty()) return out;
  // Data-parallel: one rank's answer (predict/data_parallel.h).
  ASSIGN_OR_RETURN(GpuSpec spec, ResolveGpu(job.gpu, job.mig_profile));
  if (!job.mig_profile.empty() && job.gpus > 1)
    return Status::Error("predict: data-parallel jobs on MIG slices are not modelled (--mig " + job.mig_profile +
                         " with --gpus " + std::to_string(job.gpus) + ")");
  ASSIGN_OR_RETURN(Interconnect ic, ResolveInterconnect(spec, job.gpus, job.nodes, job.interconnect));
  const UtilModel* sm = StepModel();
  const PhysicsModel* physics = sm ? dynamic_cast<const PhysicsModel*>(&sm->regressor()) : nullptr;
  if (!physics)
    return Status::Error("predict: --gpus " + std::to_string(job.gpus) +
                         " needs the physics step-time model, which this predictor file lacks (written before "
                         "data-parallel support): retrain with 'gpucast train'");
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> steps, physics->PredictSteps(SelectColumns({f}, sm->columns())));
  double fwd = 0, bwd = 0;
  for (const CostReport& r : reports)
    for (const NodeCost& n : r.nodes) fwd += static_cast<double>(n.forward_flops), bwd += static_cast<double>(n.backward_flops);
  DataParallelInput in;
  in.util = p[0].util;
  in.step_s = steps[0].step_s;
  in.core_s = std::min(steps[0].core_s, steps[0].step_s);
  in.slack_s = steps[0].slack_s;
  if (fwd + bwd > 0 && bwd > 0) in.backward_fraction = bwd / (fwd + bwd);
  ASSIGN_OR_RETURN(DataParallelResult dp, ApplyDataParallel(in, DdpBuckets(reports), ic));
  out.single_gpu = p[0];
  out.prediction = {dp.util, DataParallelUtil(p[0].low, in, dp), DataParallelUtil(p[0].high, in, dp)};
  out.prediction.low = std::min(out.prediction.low, out.prediction.util);
  out.prediction.high = std::max(out.prediction.high, out.prediction.util);
  out.interconnect = ic;
  out.data_parallel = dp;
  return out;
}

const UtilModel* Predictor::StepModel() const {
  if (dynamic_cast<const PhysicsModel*>(&model_.regressor())) return &model_;
  return step_model_ ? &*step_model_ : nullptr;
}

Result<Predictor> Predictor::Load(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBytes(path));
  return ParseModelFile(text, path, CurrentFeatureSchema());
}

Status Predictor::Save(const std::string& path) const {
  ASSIGN_OR_RETURN(nlohmann::json j, ModelFileJson(*this));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::Error(path + ": cannot write");
  out << j.dump() << "\n";
  out.close();
  if (!out) return Status::Error(path + ": write failed");
  return Status::Ok();
}

}  // namespace gpucast
