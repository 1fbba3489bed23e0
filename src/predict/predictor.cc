#include "predict/predictor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "features/gpu_specs.h"
#include "predict/model_file.h"
#include "predict/physics.h"
#include "util/json_text.h"

namespace gpucast {
namespace {
// A residual beyond the risk band [-low, +high] (0 inside it).
double BeyondRisk(double r, double low, double high) { return r < -low ? r + low : r > high ? r - high : 0.0; }

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
  // Step-only rows (utilization NaN: Pollux' runs): physics fits their step
  // time; every other regressor is fitted without them.
  if (algo != "physics" && std::any_of(util.begin(), util.end(), [](double u) { return std::isnan(u); })) {
    Matrix xs;
    std::vector<double> us;
    FitOptions fo = options;
    fo.step_s.clear(), fo.group.clear(), fo.row_gpu.clear();
    for (size_t i = 0; i < util.size(); ++i) {
      if (std::isnan(util[i])) continue;
      xs.push_back(x[i]);
      us.push_back(util[i]);
      if (i < options.step_s.size()) fo.step_s.push_back(options.step_s[i]);
      if (i < options.group.size()) fo.group.push_back(options.group[i]);
      if (i < options.row_gpu.size()) fo.row_gpu.push_back(options.row_gpu[i]);
    }
    if (fo.step_s.size() != us.size()) fo.step_s.clear();
    if (fo.group.size() != us.size()) fo.group.clear();
    if (fo.row_gpu.size() != us.size()) fo.row_gpu.clear();
    return Fit(xs, us, names, columns, algo, params, seed, fo);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Regressor> r, MakeRegressor(algo, options.regressor));
  RETURN_IF_ERROR(r->Configure(params));
  std::vector<std::string> used;
  for (size_t c : columns) {
    if (c >= names.size()) return Status::Error(algo + ": column " + std::to_string(c) + " outside the schema");
    used.push_back(names[c]);
  }
  RETURN_IF_ERROR(r->SetFeatureNames(used));
  std::vector<double> y;
  for (size_t i = 0; i < util.size(); ++i) {
    const double u = util[i];
    const bool step_only = std::isnan(u) && i < options.step_s.size() && options.step_s[i] > 0;
    if (!step_only && !(u >= 0 && u <= 100)) return Status::Error(algo + ": label outside 0-100");
    y.push_back(step_only ? u : ToTarget(u));
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
  const bool have_gpus = options.row_gpu.size() == util.size();
  if (have_gpus) {
    // A GPU type counts as measured by its utilization rows: step-only rows
    // (Pollux, Zeus) never showed how busy that GPU's host kept it.
    std::vector<std::string> g;
    for (size_t i = 0; i < util.size(); ++i)
      if (!std::isnan(util[i])) g.push_back(options.row_gpu[i]);
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
    g.erase(std::remove(g.begin(), g.end(), std::string()), g.end());
    m.set_measured_gpus(std::move(g));
  }
  if (auto it = std::find(names.begin(), names.end(), "params"); it != names.end()) {
    size_t pc = static_cast<size_t>(it - names.begin());
    std::vector<size_t> fc;
    for (const std::string& n : JobFactsIn(names)) fc.push_back(std::find(names.begin(), names.end(), n) - names.begin());
    // The regressor's own in-sample estimates (a correction applies to them; no carried loader).
    ASSIGN_OR_RETURN(std::vector<Estimate> raw, m.regressor().Predict(SelectColumns(x, columns)));
    std::vector<UtilPrediction> fitted;
    for (const Estimate& e : raw) fitted.push_back({FromTarget(e.mean), 0, 0});
    // Key: params, then the job facts; sum of residuals, rows, first group.
    std::map<std::vector<double>, std::tuple<double, size_t, int>> by;
    std::map<std::vector<double>, std::vector<std::string>> gpus_of;
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(util[i])) continue;  // a step-only row: no utilization to correct
      std::vector<double> key = {x[i][pc]};
      for (size_t c : fc) key.push_back(x[i][c]);
      auto [e, fresh] = by.try_emplace(key, 0.0, 0, i < options.group.size() ? options.group[i] : -1);
      std::get<0>(e->second) += ToTarget(util[i]) - ToTarget(fitted[i].util);
      std::get<1>(e->second) += 1;
      std::vector<std::string>& gl = gpus_of[key];
      if (have_gpus && !options.row_gpu[i].empty() &&
          std::find(gl.begin(), gl.end(), options.row_gpu[i]) == gl.end())
        gl.push_back(options.row_gpu[i]);
    }
    std::vector<WorkloadOffset> offsets;
    for (const auto& [k, v] : by) {
      WorkloadOffset o;
      o.params = k[0];
      o.facts.assign(k.begin() + 1, k.end());
      o.gpus = gpus_of[k];
      std::sort(o.gpus.begin(), o.gpus.end());
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
      std::vector<RowRisk> risks;
      std::vector<double> step_scores;
      ASSIGN_OR_RETURN(std::vector<double> res, GroupedResiduals(x, util, names, columns, algo, params, seed, options,
                                                                 nullptr, &risks, &step_scores));
      m.set_calibration(res, util, options.interval_method, &risks);
      m.set_step_calibration_scores(std::move(step_scores));
      RETURN_IF_ERROR(m.CalibrateTransfer(x, util, names, params, seed, options));
    }
  }
  return m;
}

double TransferUtilScore(double measured, double predicted, double band_low, double band_high) {
  const double z = UtilLogit(predicted);
  return BeyondRisk(UtilLogit(measured) - z, std::max(0.0, z - UtilLogit(band_low)),
                    std::max(0.0, UtilLogit(band_high) - z));
}

Result<std::vector<double>> TransferScores(const Matrix& x, const std::vector<double>& util,
                                           const std::vector<std::string>& names, const std::vector<size_t>& columns,
                                           const std::string& algo, const nlohmann::json& params, uint64_t seed,
                                           const FitOptions& options, std::vector<std::string>* skipped,
                                           std::vector<std::pair<double, double>>* util_scores,
                                           std::vector<std::string>* step_gpus, std::vector<std::string>* util_gpus) {
  const size_t n = util.size();
  if (util_scores) util_scores->clear();
  if (step_gpus) step_gpus->clear();
  if (util_gpus) util_gpus->clear();
  if (options.row_gpu.size() != n || options.step_s.size() != n) return std::vector<double>{};
  auto has_step = [&](size_t i) { return options.step_s[i] > 0; };
  auto has_util = [&](size_t i) { return util[i] >= 0 && util[i] <= 100; };
  // GPU types with a measured step time or utilization; at least two types with either.
  std::set<std::string> type_set, step_type_set;
  for (size_t i = 0; i < n; ++i) {
    if (options.row_gpu[i].empty()) continue;
    if (has_step(i) || has_util(i)) type_set.insert(options.row_gpu[i]);
    if (has_step(i)) step_type_set.insert(options.row_gpu[i]);
  }
  const std::vector<std::string> types(type_set.begin(), type_set.end());  // sorted
  const size_t step_types = step_type_set.size();
  if (types.size() < 2) return std::vector<double>{};
  std::vector<double> step_out;
  std::vector<std::string> step_out_gpus;
  std::vector<std::pair<double, double>> util_out;
  std::vector<std::string> util_out_gpus;
  for (size_t t = 0; t < types.size(); ++t) {
    Matrix xtr, xte;
    std::vector<double> ytr, ste, ute;
    std::vector<std::string> gte;
    FitOptions fo;
    fo.calibrate = false;
    fo.regressor = options.regressor;
    for (size_t i = 0; i < n; ++i) {
      if (options.row_gpu[i] == types[t]) {
        if (!has_step(i) && !has_util(i)) continue;
        xte.push_back(x[i]);
        ste.push_back(has_step(i) ? options.step_s[i] : std::nan(""));
        ute.push_back(has_util(i) ? util[i] : std::nan(""));
        gte.push_back(types[t]);
        continue;
      }
      xtr.push_back(x[i]);
      ytr.push_back(util[i]);
      fo.step_s.push_back(options.step_s[i]);
      fo.row_gpu.push_back(options.row_gpu[i]);
      if (options.group.size() == n) fo.group.push_back(options.group[i]);
    }
    auto m = UtilModel::Fit(xtr, ytr, names, columns, algo, params, seed * 37 + t, fo);
    if (!m.ok()) {
      if (skipped) skipped->push_back(types[t] + ": " + m.status().message());
      continue;
    }
    std::vector<RowRisk> rk;
    ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, m->Predict(xte, kDefaultIntervalLevel, &gte, &rk));
    std::vector<double> sc;
    std::vector<std::pair<double, double>> us;
    for (size_t j = 0; j < p.size(); ++j) {
      if (ste[j] > 0 && p[j].step_ms > 0)
        sc.push_back(BeyondRisk(std::log(ste[j] * 1e3 / p[j].step_ms), rk[j].step_low, rk[j].step_high));
      // util = busy / (busy + idle): the utilization error is log(busy error) - log(idle error), the
      // logit's; beyond the row's band (its host and loader scenarios), whose ends are utilizations.
      if (ute[j] >= 0) {
        const double z = std::log1p(p[j].util);
        us.push_back({p[j].util,
                      TransferUtilScore(ute[j], p[j].util, FromTarget(z - rk[j].low), FromTarget(z + rk[j].high))});
      }
    }
    step_out.insert(step_out.end(), sc.begin(), sc.end());
    step_out_gpus.insert(step_out_gpus.end(), sc.size(), types[t]);
    util_out.insert(util_out.end(), us.begin(), us.end());
    util_out_gpus.insert(util_out_gpus.end(), us.size(), types[t]);
  }
  // Step scores need two types with step times; utilization scores come from
  // every type with utilization rows predicted by a model fitted on the others.
  // Each score once, with its GPU type: the window is over types (GroupedWindow).
  if (util_scores) *util_scores = std::move(util_out);
  if (util_gpus) *util_gpus = std::move(util_out_gpus);
  if (step_types < 2) return std::vector<double>{};
  if (step_gpus) *step_gpus = std::move(step_out_gpus);
  return step_out;
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

SeenMatch UtilModel::Match(const std::vector<double>& row, const std::string& gpu) const {
  SeenMatch m;
  if (params_column_ >= row.size()) return m;
  for (const WorkloadOffset& o : offsets_) {
    if (row[params_column_] != o.params) continue;
    bool same = true;
    for (size_t k = 0; k < fact_columns_.size(); ++k)
      same = same && fact_columns_[k] < row.size() && row[fact_columns_[k]] == o.facts[k];
    const bool here = gpu.empty() || o.gpus.empty() || std::find(o.gpus.begin(), o.gpus.end(), gpu) != o.gpus.end();
    if (same && here) {
      m.seen = &o;
      m.same_graph = nullptr;
      m.other_gpu = false;
      return m;
    }
    if (same && (!m.same_graph || !m.other_gpu)) {
      m.same_graph = &o;
      m.other_gpu = true;
    } else if (!m.same_graph) {
      m.same_graph = &o;
    }
  }
  return m;
}

bool UtilModel::GpuMeasured(const std::string& gpu) const {
  return gpu.empty() || !gpus_known_ ||
         std::find(measured_gpus_.begin(), measured_gpus_.end(), gpu) != measured_gpus_.end();
}

void UtilModel::set_step_calibration_scores(std::vector<double> scores) {
  std::sort(scores.begin(), scores.end());
  step_calibration_ = std::move(scores);
}

Status UtilModel::CalibrateTransfer(const Matrix& x, const std::vector<double>& util,
                                    const std::vector<std::string>& names, const nlohmann::json& params,
                                    uint64_t seed, const FitOptions& options) {
  if (!dynamic_cast<const PhysicsModel*>(regressor_.get())) return Status::Ok();
  std::vector<std::pair<double, double>> util_scores;
  std::vector<std::string> step_gpus, util_gpus;
  ASSIGN_OR_RETURN(std::vector<double> transfer, TransferScores(x, util, names, columns_, algo_, params, seed, options,
                                                                nullptr, &util_scores, &step_gpus, &util_gpus));
  set_transfer_calibration_scores(std::move(transfer), std::move(step_gpus));
  set_transfer_util_calibration_scores(std::move(util_scores), std::move(util_gpus));
  return Status::Ok();
}

namespace {

// The finite scores (`finite`), stably sorted by `key`, into *sorted with each one's GPU type
// (`gpus`: one per score, else every one "") into *sorted_gpus; the same scores grouped by GPU type
// (the types in name order), each group in that order, into *groups.
template <typename Score, typename Finite, typename Key>
void SortScoresByGpu(const std::vector<Score>& scores, std::vector<std::string> gpus, Finite finite, Key key,
                     std::vector<Score>* sorted, std::vector<std::string>* sorted_gpus,
                     std::vector<std::vector<Score>>* groups) {
  if (gpus.size() != scores.size()) gpus.assign(scores.size(), "");
  std::vector<size_t> order;
  for (size_t i = 0; i < scores.size(); ++i)
    if (finite(scores[i])) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(scores[a]) < key(scores[b]); });
  sorted->clear();
  sorted_gpus->clear();
  std::map<std::string, std::vector<Score>> by_gpu;
  for (size_t i : order) {
    sorted->push_back(scores[i]);
    sorted_gpus->push_back(gpus[i]);
    by_gpu[gpus[i]].push_back(scores[i]);
  }
  groups->clear();
  for (auto& [gpu, v] : by_gpu) groups->push_back(std::move(v));
}

}  // namespace

void UtilModel::set_transfer_util_calibration_scores(std::vector<std::pair<double, double>> scores,
                                                     std::vector<std::string> gpus) {
  SortScoresByGpu(
      scores, std::move(gpus),
      [](const std::pair<double, double>& s) { return std::isfinite(s.first) && std::isfinite(s.second); },
      [](const std::pair<double, double>& s) { return s.second; }, &transfer_util_calibration_,
      &transfer_util_gpus_, &transfer_util_groups_);
}

std::vector<std::vector<double>> UtilModel::TransferUtilGroupsFor(double util) const {
  std::vector<std::vector<double>> out;
  for (const std::vector<std::pair<double, double>>& group : transfer_util_groups_) {
    std::vector<double> v;
    for (const auto& [predicted, score] : group)
      if (predicted <= util) v.push_back(score);  // sorted by score
    if (v.size() >= kMinGroupScores) out.push_back(std::move(v));
  }
  return out;
}

void UtilModel::set_transfer_calibration_scores(std::vector<double> scores, std::vector<std::string> gpus) {
  SortScoresByGpu(
      scores, std::move(gpus), [](double s) { return std::isfinite(s); }, [](double s) { return s; },
      &transfer_calibration_, &transfer_gpus_, &transfer_step_groups_);
}

std::pair<double, double> UtilModel::TransferStepWindow(double level) const {
  return GroupedWindow(transfer_step_groups_, level);
}

Result<std::vector<RowRisk>> UtilModel::Risks(const Matrix& x, const std::vector<std::string>* gpus,
                                              double level) const {
  std::vector<RowRisk> out(x.size());
  const auto* physics = dynamic_cast<const PhysicsModel*>(regressor_.get());
  if (!physics) return out;
  Matrix xs = SelectColumns(x, columns_);
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> base, physics->PredictSteps(xs));
  // The scenarios, with and without an unknown host.
  // Rows no seen-workload correction applies to: a measured graph's own loader (carried).
  StepVariation own;
  own.own_loaders = true;
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> base_own, physics->PredictSteps(xs, own));
  std::vector<bool> use_own(x.size(), false);
  for (size_t i = 0; i < x.size(); ++i) {
    const std::string gpu = gpus && i < gpus->size() ? (*gpus)[i] : std::string();
    use_own[i] = base_own[i].own_loader_s_per_sample > 0 && !Match(x[i], gpu).seen;
    if (use_own[i]) base[i] = base_own[i];
  }
  StepVariation low_known, high_known, low_unm, high_unm;
  low_known.unknown_loader_s_per_sample = low_unm.unknown_loader_s_per_sample = kRiskLoaderMsPerSample * 1e-3;
  high_known.unknown_loader_s_per_sample = high_unm.unknown_loader_s_per_sample = 0;
  low_unm.host_factor = kRiskHostFactor;
  high_unm.host_factor = 1 / kRiskHostFactor;
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> lk, physics->PredictSteps(xs, low_known));
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> hk, physics->PredictSteps(xs, high_known));
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> lu, physics->PredictSteps(xs, low_unm));
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> hu, physics->PredictSteps(xs, high_unm));
  for (StepVariation* v : {&low_known, &high_known, &low_unm, &high_unm}) v->own_loaders = true;
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> lko, physics->PredictSteps(xs, low_known));
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> hko, physics->PredictSteps(xs, high_known));
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> luo, physics->PredictSteps(xs, low_unm));
  ASSIGN_OR_RETURN(std::vector<PhysicsStep> huo, physics->PredictSteps(xs, high_unm));
  for (size_t i = 0; i < x.size(); ++i)
    if (use_own[i]) lk[i] = lko[i], hk[i] = hko[i], lu[i] = luo[i], hu[i] = huo[i];
  // A script's per-step host work in series (logging, metrics, fetching the
  // batch) spreads across the training workloads around the one fitted value
  // (HostStepRange): the low scenario takes the range's high end (when above
  // the fitted value), the high scenario its low end (when below). Every row,
  // as the loader band: a measured workload's correction is one offset, not
  // a measured per-step host time, and the calibration residuals (held-out
  // workloads) were all computed with the band.
  const auto [hs_lo, hs_hi] = physics->HostStepRange();
  double hs_fit = std::nan("");
  for (const auto& [name, value] : physics->Parameters())
    if (name == "host_s_per_step") hs_fit = value;
  if (std::isfinite(hs_lo) && std::isfinite(hs_hi) && std::isfinite(hs_fit)) {
    const double longer = std::max(hs_fit, hs_hi), shorter = std::min(hs_fit, hs_lo);
    StepVariation* vs[4] = {&low_known, &high_known, &low_unm, &high_unm};
    std::vector<PhysicsStep>* dst[4] = {&lk, &hk, &lu, &hu};
    for (int k = 0; k < 4; ++k) {
      StepVariation with = *vs[k];
      with.host_s_per_step = k % 2 == 0 ? longer : shorter;
      with.own_loaders = false;
      ASSIGN_OR_RETURN(std::vector<PhysicsStep> a, physics->PredictSteps(xs, with));
      with.own_loaders = true;
      ASSIGN_OR_RETURN(std::vector<PhysicsStep> b, physics->PredictSteps(xs, with));
      for (size_t i = 0; i < x.size(); ++i) (*dst[k])[i] = use_own[i] ? b[i] : a[i];
    }
    for (RowRisk& r : out) r.host_step_long_ms = longer * 1e3, r.host_step_short_ms = shorter * 1e3;
  }
  // An unmeasured GPU's step may be off beyond the host scenario by the
  // transfer window [a, b] of the step scores: longer by e^b, shorter by e^-a.
  // The window is over the training GPU types, each type's own (GroupedWindow: with fewer than 4
  // types at 0.8, the widest type's ends), not pooled over their rows.
  auto [t_lo, t_hi] = TransferStepWindow(level);  // {0, 0} when none
  const double longer = std::max(0.0, t_hi), shorter = std::max(0.0, -t_lo);
  // Its utilization: util = busy / (busy + idle), so an error e_b in log busy
  // and e_i in log idle moves logit(util) by e_b - e_i, by whichever of the two
  // times is wrong; a GPU-bound row (idle small) moves little in points. The
  // window [c, d] of the training GPUs' utilization scores (TransferUtilScore)
  // of rows at least as idle as this one, over GPU types (TransferUtilGroupsFor,
  // GroupedWindow), moves the band's ends in UtilLogit. Without enough such
  // scores (a model file from before them, no training GPU type with
  // utilization predicted from the others, or none as idle as this row) the
  // worst case: all the step error is idle time, the busy time held, so util
  // moves by e^-b and e^-a.
  for (size_t i = 0; i < x.size(); ++i) {
    RowRisk& r = out[i];
    r.gpu_measured = !gpus || i >= gpus->size() || GpuMeasured((*gpus)[i]);
    r.unknown_pipeline = base[i].unknown_pipeline;
    // A measured workload's loader carried to another GPU type ran on that workload's machine, not
    // on the measured machine of this GPU type (each measured GPU type is one data set, one host):
    // the host scenario is the unknown host's there too; the GPU's transfer windows stay off.
    const bool host_unknown = !r.gpu_measured || use_own[i];
    const PhysicsStep& lo = host_unknown ? lu[i] : lk[i];
    const PhysicsStep& hi = host_unknown ? hu[i] : hk[i];
    double lo_util = lo.util, hi_util = hi.util;
    if (!r.gpu_measured) {
      const std::vector<std::vector<double>> z = TransferUtilGroupsFor(base[i].util);
      if (!z.empty()) {
        auto [z_lo, z_hi] = GroupedWindow(z, level);
        const double fall = std::max(0.0, -z_lo), rise = std::max(0.0, z_hi);
        lo_util = LogitToUtil(UtilLogit(lo_util) - fall), hi_util = LogitToUtil(UtilLogit(hi_util) + rise);
        r.transfer_util_fall = fall, r.transfer_util_rise = rise;
      } else {
        lo_util *= std::exp(-longer), hi_util = std::min(100.0, hi_util * std::exp(shorter));
      }
      r.transfer_longer = longer, r.transfer_shorter = shorter;
    }
    const double u = std::log1p(base[i].util);
    r.low = std::max(0.0, u - std::log1p(lo_util));
    r.high = std::max(0.0, std::log1p(hi_util) - u);
    if (base[i].step_s > 0 && lo.step_s > 0 && hi.step_s > 0) {
      r.step_high = std::max(0.0, std::log(lo.step_s / base[i].step_s));
      r.step_low = std::max(0.0, std::log(base[i].step_s / hi.step_s));
      if (!r.gpu_measured) r.step_high += longer, r.step_low += shorter;
    }
  }
  return out;
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
                                      IntervalMethod method, const std::vector<RowRisk>* risks) {
  std::vector<double> out;
  for (size_t i = 0; i < residuals.size(); ++i) {
    double r = residuals[i];
    if (risks && i < risks->size() && method != IntervalMethod::kLogit)
      r = BeyondRisk(r, (*risks)[i].low, (*risks)[i].high);
    if (method == IntervalMethod::kCentral || i >= util.size()) {
      out.push_back(r);
      continue;
    }
    double predicted = FromTarget(ToTarget(util[i]) - residuals[i]);  // the pass's prediction
    if (method == IntervalMethod::kLogit) {
      out.push_back(UtilLogit(util[i]) - UtilLogit(predicted));
      continue;
    }
    out.push_back(r / Difficulty(predicted));
  }
  return out;
}

std::vector<double> GroupScores(const std::vector<double>& scores, const std::vector<RowRisk>& risks, bool band) {
  std::vector<double> out;
  for (size_t i = 0; i < scores.size() && i < risks.size(); ++i)
    if (risks[i].Any() == band && std::isfinite(scores[i])) out.push_back(scores[i]);
  std::sort(out.begin(), out.end());
  return out;
}

void UtilModel::set_calibration(const std::vector<double>& residuals, const std::vector<double>& util,
                                IntervalMethod method, const std::vector<RowRisk>* risks) {
  std::vector<double> scores = CalibrationScores(residuals, util, method, risks);
  if (risks && risks->size() == scores.size())
    set_group_calibration_scores(GroupScores(scores, *risks, false), GroupScores(scores, *risks, true));
  else
    set_group_calibration_scores({}, {});
  set_calibration_scores(std::move(scores), method);
}

void UtilModel::set_group_calibration_scores(std::vector<double> plain, std::vector<double> band) {
  std::sort(plain.begin(), plain.end());
  std::sort(band.begin(), band.end());
  plain_calibration_ = std::move(plain);
  band_calibration_ = std::move(band);
}

const std::vector<double>& UtilModel::CalibrationFor(const RowRisk& risk, const std::vector<double>** also) const {
  const std::vector<double>& plain = plain_calibration_.size() >= kMinGroupScores ? plain_calibration_ : calibration_;
  if (also) *also = nullptr;
  if (!risk.Any()) return plain;
  if (band_calibration_.size() < kMinGroupScores) return calibration_;
  if (also) *also = &plain;
  return band_calibration_;
}

void UtilModel::set_calibration_scores(std::vector<double> scores, IntervalMethod method) {
  // Step-only rows have no utilization residual (NaN): not scores.
  scores.erase(std::remove_if(scores.begin(), scores.end(), [](double v) { return !std::isfinite(v); }), scores.end());
  std::sort(scores.begin(), scores.end());
  calibration_ = std::move(scores);
  interval_method_ = method;
}

std::pair<double, double> ShortestWindow(const std::vector<double>& sorted, double level) {
  // The chain's anchor levels (predictor.h): the default level and the trade-off table's lowest.
  constexpr double kWindowAnchorHigh = 0.8, kWindowAnchorLow = 0.5;
  if (sorted.empty()) return {0, 0};
  const size_t n = sorted.size();
  auto scores_at = [&](double l) {
    return static_cast<size_t>(std::clamp(std::ceil((n + 1) * l), 1.0, static_cast<double>(n)));
  };
  const size_t k = scores_at(level), m_high = scores_at(kWindowAnchorHigh), m_low = scores_at(kWindowAnchorLow);
  // The start of the shortest window of m scores among sorted[from..to] (ties: the lowest).
  auto shortest = [&](size_t m, size_t from, size_t to) {
    size_t best = from;
    for (size_t i = from + 1; i + m - 1 <= to; ++i)
      if (sorted[i + m - 1] - sorted[i] < sorted[best + m - 1] - sorted[best]) best = i;
    return best;
  };
  // One chain of windows [sorted[lo], sorted[hi]], one of each size 1..n, each inside the next
  // (so a higher level's window contains a lower one's, for every input): through the shortest
  // window of m_high scores [top_lo, top_hi] and the shortest of m_low scores inside it. Below
  // m_low it is peeled one score at a time, dropping the end whose removal shortens it more (ties:
  // the high end); above it grows by the nearer neighbouring score (ties: the low one), inside
  // [top_lo, top_hi] up to m_high scores (it reaches exactly that window), then over all n.
  const size_t top_lo = shortest(m_high, 0, n - 1), top_hi = top_lo + m_high - 1;
  size_t lo = top_lo, hi = top_hi, first = 0, last = n - 1;
  if (k < m_high) {
    lo = shortest(m_low, top_lo, top_hi), hi = lo + m_low - 1;
    first = top_lo, last = top_hi;
  }
  while (hi - lo + 1 > k) {
    if (sorted[lo + 1] - sorted[lo] > sorted[hi] - sorted[hi - 1]) ++lo;
    else --hi;
  }
  while (hi - lo + 1 < k) {
    if (hi == last || (lo > first && sorted[lo] - sorted[lo - 1] <= sorted[hi + 1] - sorted[hi])) --lo;
    else ++hi;
  }
  return {sorted[lo], sorted[hi]};
}

std::pair<double, double> GroupedWindow(const std::vector<std::vector<double>>& sorted_groups, double level) {
  std::vector<double> lows, highs;
  for (const std::vector<double>& g : sorted_groups) {
    if (g.empty()) continue;
    auto [lo, hi] = ShortestWindow(g, level);
    lows.push_back(lo), highs.push_back(hi);
  }
  if (lows.empty()) return {0, 0};
  const size_t n = lows.size();
  const size_t k = static_cast<size_t>(std::clamp(std::ceil((n + 1) * level), 1.0, static_cast<double>(n)));
  std::sort(lows.begin(), lows.end(), std::greater<double>());
  std::sort(highs.begin(), highs.end());
  return {lows[k - 1], highs[k - 1]};
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
                                  IntervalMethod method, const RowRisk& risk, const std::vector<double>* also) {
  auto window = [&](const std::vector<double>& v) {
    return method == IntervalMethod::kCentral ? ConformalOffsets(v, level) : ShortestWindow(v, level);
  };
  auto [lo_off, hi_off] = window(sorted);
  if (also && !also->empty()) {
    auto [a, b] = window(*also);
    lo_off = std::min(lo_off, a);
    hi_off = std::max(hi_off, b);
  }
  if (method == IntervalMethod::kLogit) {
    const double z = UtilLogit(util);
    return {util, std::min(util, LogitToUtil(z + lo_off)), std::max(util, LogitToUtil(z + hi_off))};
  }
  if (method == IntervalMethod::kNormalized) {
    lo_off *= Difficulty(util);
    hi_off *= Difficulty(util);
  }
  // The risk band is always inside; the calibrated error beyond it is added.
  auto widen = [&](double off) { return off < 0 ? off - risk.low : off > 0 ? off + risk.high : off; };
  lo_off = std::min(widen(lo_off), -risk.low);
  hi_off = std::max(widen(hi_off), risk.high);
  double t = ToTarget(util);
  // The contract of UtilPrediction: low <= util <= high.
  return {util, std::min(util, FromTarget(t + lo_off)), std::max(util, FromTarget(t + hi_off))};
}

std::pair<double, double> StepInterval(double step_ms, const std::vector<double>& sorted, double level,
                                       const RowRisk& risk) {
  if (!(step_ms > 0)) return {std::nan(""), std::nan("")};
  auto [a, b] = ShortestWindow(sorted, level);  // {0, 0} when uncalibrated: the risk band alone
  double lo = std::min(a < 0 ? a - risk.step_low : a, -risk.step_low);
  double hi = std::max(b > 0 ? b + risk.step_high : b, risk.step_high);
  return {std::min(step_ms, step_ms * std::exp(lo)), std::max(step_ms, step_ms * std::exp(hi))};
}

Result<std::vector<UtilPrediction>> UtilModel::Predict(const Matrix& x, double level,
                                                       const std::vector<std::string>* gpus,
                                                       std::vector<RowRisk>* risks_out) const {
  if (!(level > 0 && level < 1)) return Status::Error("interval level must be in (0, 1)");
  ASSIGN_OR_RETURN(std::vector<Estimate> est, regressor_->Predict(SelectColumns(x, columns_)));
  ASSIGN_OR_RETURN(std::vector<RowRisk> risks, Risks(x, gpus, level));
  std::vector<PhysicsStep> steps;
  if (const auto* physics = dynamic_cast<const PhysicsModel*>(regressor_.get())) {
    ASSIGN_OR_RETURN(steps, physics->PredictSteps(SelectColumns(x, columns_)));
    StepVariation own;
    own.own_loaders = true;
    ASSIGN_OR_RETURN(std::vector<PhysicsStep> own_steps, physics->PredictSteps(SelectColumns(x, columns_), own));
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::string gpu = gpus && i < gpus->size() ? (*gpus)[i] : std::string();
      if (own_steps[i].own_loader_s_per_sample > 0 && !Match(x[i], gpu).seen) {
        // A measured graph off its GPU types: its own loader time is carried (physics, RowRisk).
        const double shift = std::log1p(own_steps[i].util) - est[i].mean;
        est[i].mean += shift, est[i].low += shift, est[i].high += shift;
        steps[i] = own_steps[i];
      }
    }
  }
  std::vector<UtilPrediction> out;
  for (size_t i = 0; i < est.size(); ++i) {
    Estimate e = est[i];
    const std::string gpu = gpus && i < gpus->size() ? (*gpus)[i] : std::string();
    if (const WorkloadOffset* o = Match(x[i], gpu).seen) e.mean += o->offset, e.low += o->offset, e.high += o->offset;
    double u = FromTarget(e.mean);
    UtilPrediction p;
    if (!calibration_.empty()) {
      const std::vector<double>* also = nullptr;
      const std::vector<double>& scores = CalibrationFor(risks[i], &also);
      p = CalibratedInterval(u, scores, level, interval_method_, risks[i], also);
    } else {
      p = {u, std::min(u, FromTarget(e.low - risks[i].low)), std::max(u, FromTarget(e.high + risks[i].high))};
    }
    if (i < steps.size() && steps[i].step_s > 0) {
      p.step_ms = steps[i].step_s * 1e3;
      std::tie(p.step_low_ms, p.step_high_ms) = StepInterval(p.step_ms, step_calibration_, level, risks[i]);
    }
    out.push_back(p);
  }
  if (risks_out) *risks_out = std::move(risks);
  return out;
}

Result<std::vector<double>> GroupedResiduals(const Matrix& x, const std::vector<double>& util,
                                             const std::vector<std::string>& names,
                                             const std::vector<size_t>& columns, const std::string& algo,
                                             const nlohmann::json& params, uint64_t seed,
                                             const FitOptions& options, std::vector<double>* predicted,
                                             std::vector<RowRisk>* risks, std::vector<double>* step_scores) {
  std::vector<int> ids = options.group;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.size() < 2) return Status::Error(algo + ": calibration needs at least 2 workloads");
  std::vector<double> res(util.size(), 0);
  if (predicted) predicted->assign(util.size(), 0);
  if (risks) risks->assign(util.size(), RowRisk{});
  if (step_scores) step_scores->clear();
  const bool have_gpus = options.row_gpu.size() == util.size();
  for (int g : ids) {
    Matrix xtr, xte;
    std::vector<double> ytr;
    FitOptions fo;
    fo.calibrate = false;
    fo.regressor = options.regressor;
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
        if (have_gpus) fo.row_gpu.push_back(options.row_gpu[i]);
      }
    }
    auto m = UtilModel::Fit(xtr, ytr, names, columns, algo, params, seed * 31 + g, fo);
    if (!m.ok()) return m.status().Prefixed("calibration");
    std::vector<std::string> gte;
    for (size_t i : test) gte.push_back(have_gpus ? options.row_gpu[i] : std::string());
    std::vector<RowRisk> rk;
    ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, m->Predict(xte, kDefaultIntervalLevel, &gte, &rk));
    for (size_t j = 0; j < test.size(); ++j) {
      const size_t i = test[j];
      res[i] = ToTarget(util[i]) - ToTarget(p[j].util);
      if (predicted) (*predicted)[i] = p[j].util;
      if (risks) (*risks)[i] = rk[j];
      if (step_scores && i < options.step_s.size() && std::isfinite(options.step_s[i]) && options.step_s[i] > 0 &&
          p[j].step_ms > 0)
        step_scores->push_back(
            BeyondRisk(std::log(options.step_s[i] * 1e3 / p[j].step_ms), rk[j].step_low, rk[j].step_high));
    }
  }
  return res;
}

LowoAccuracy SummariseLowo(const std::vector<double>& residuals, const std::vector<double>& util,
                           const std::vector<int>& group, double level, IntervalMethod method,
                           const std::vector<RowRisk>* risks) {
  LowoAccuracy a;
  size_t n = residuals.size();
  if (n == 0 || util.size() != n || group.size() != n) return a;
  if (std::any_of(residuals.begin(), residuals.end(), [](double r) { return std::isnan(r); })) {
    // Step-only rows have no utilization: the figures are of the others.
    std::vector<double> r2, u2;
    std::vector<int> g2;
    std::vector<RowRisk> k2;
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(residuals[i])) continue;
      r2.push_back(residuals[i]);
      u2.push_back(util[i]);
      g2.push_back(group[i]);
      if (risks && i < risks->size()) k2.push_back((*risks)[i]);
    }
    return SummariseLowo(r2, u2, g2, level, method, risks ? &k2 : nullptr);
  }
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
  std::vector<double> scores = CalibrationScores(residuals, util, method, risks);
  const bool grouped = risks && risks->size() == n;
  for (int g : ids) {
    // The other workloads' scores, pooled and by band group (as UtilModel::CalibrationFor picks them).
    std::vector<double> others, other_plain, other_band;
    for (size_t i = 0; i < n; ++i) {
      if (group[i] == g) continue;
      others.push_back(scores[i]);
      if (grouped) ((*risks)[i].Any() ? other_band : other_plain).push_back(scores[i]);
    }
    std::sort(others.begin(), others.end());
    std::sort(other_plain.begin(), other_plain.end());
    std::sort(other_band.begin(), other_band.end());
    for (size_t i = 0; i < n; ++i) {
      if (group[i] != g) continue;
      double pred = FromTarget(ToTarget(util[i]) - residuals[i]);
      ss += residuals[i] * residuals[i];
      abs_err.push_back(std::fabs(pred - util[i]));
      const RowRisk risk = grouped ? (*risks)[i] : RowRisk{};
      // As UtilModel::CalibrationFor.
      const std::vector<double>& plain = grouped && other_plain.size() >= kMinGroupScores ? other_plain : others;
      const bool band = risk.Any() && grouped && other_band.size() >= kMinGroupScores;
      UtilPrediction iv = CalibratedInterval(pred, band ? other_band : risk.Any() ? others : plain, level, method,
                                             risk, band ? &plain : nullptr);
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
    if (std::isnan(residuals[i])) continue;  // a step-only row
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
  if (i.power_limited_clock != data.power_limited_clock)
    return Status::Error(std::string("it was trained with") + (i.power_limited_clock ? "" : "out") +
                         " the power-limited clock; the simulator's rows are " +
                         (data.power_limited_clock ? "with" : "without") + " it");
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
                                   const std::function<void(const std::string&, double)>& on_candidate,
                                   const RegressorOptions& regressor) {
  FitOptions fo;
  fo.regressor = regressor;
  fo.step_s = data.step_s;
  fo.group = data.group;
  fo.group_names = data.groups;
  if (data.row_gpu.size() == data.rows.size()) fo.row_gpu = data.row_gpu;
  std::vector<double> labels = data.Labels();
  std::string chosen_algo = algo, chosen_set = feature_set;
  std::vector<std::pair<std::string, double>> selection;
  std::vector<double> chosen_res, chosen_pred, chosen_step_scores, physics_step_scores;
  std::vector<RowRisk> chosen_risks;
  bool have_physics_pass = false;
  if (algo == kAutoAlgo) {
    double best = INFINITY;
    for (const Candidate& c : AutoCandidates()) {
      ASSIGN_OR_RETURN(std::vector<size_t> cc, SelectFeatures(data.feature_names, c.feature_set));
      std::vector<double> pred, step_scores;
      std::vector<RowRisk> risks;
      auto res = GroupedResiduals(data.x, labels, data.feature_names, cc, c.algo, nullptr, seed, fo, &pred, &risks,
                                  &step_scores);
      if (!res.ok()) return res.status().Prefixed("auto: " + c.ToString());
      if (c.algo == "physics" && c.feature_set == DefaultFeatureSet("physics"))
        physics_step_scores = step_scores, have_physics_pass = true;
      double rmsle = SelectionScore(*res, data.group);
      selection.push_back({c.ToString(), rmsle});
      if (on_candidate) on_candidate(c.ToString(), rmsle);
      if (rmsle < best)
        best = rmsle, chosen_algo = c.algo, chosen_set = c.feature_set, chosen_res = *res,
        chosen_pred = std::move(pred), chosen_risks = std::move(risks), chosen_step_scores = std::move(step_scores);
    }
  }
  ASSIGN_OR_RETURN(std::vector<size_t> cols, SelectFeatures(data.feature_names, chosen_set));
  if (algo != kAutoAlgo && fo.calibrate && CountGroups(fo.group) >= 3) {
    // The calibration pass, done once here so that its residuals also give the accuracy.
    ASSIGN_OR_RETURN(chosen_res, GroupedResiduals(data.x, labels, data.feature_names, cols, chosen_algo, nullptr,
                                                  seed, fo, &chosen_pred, &chosen_risks, &chosen_step_scores));
  }
  fo.calibrate = false;
  ASSIGN_OR_RETURN(UtilModel m,
                   UtilModel::Fit(data.x, labels, data.feature_names, cols, chosen_algo, nullptr, seed, fo));
  if (!chosen_res.empty()) {
    m.set_calibration(chosen_res, labels, fo.interval_method, &chosen_risks);
    m.set_step_calibration_scores(chosen_step_scores);
  }
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
    // Its step-time interval: the physics pass of the selection, else its own lowo pass.
    if (!have_physics_pass && CountGroups(fo.group) >= 3) {
      auto pass = GroupedResiduals(data.x, labels, data.feature_names, pcols, "physics", nullptr, seed, fo, nullptr,
                                   nullptr, &physics_step_scores);
      if (!pass.ok()) return pass.status().Prefixed("step model calibration");
    }
    step_model->set_step_calibration_scores(physics_step_scores);
  }
  // How wrong the physics' step time is on a GPU type it has no rows of (the
  // widening of an unmeasured GPU's risk band): the physics model's, chosen or beside.
  if (CountGroups(data.group) >= 3) {
    RETURN_IF_ERROR(m.CalibrateTransfer(data.x, labels, data.feature_names, nullptr, seed, fo));
    if (step_model) RETURN_IF_ERROR(step_model->CalibrateTransfer(data.x, labels, data.feature_names, nullptr, seed, fo));
  }
  PredictorInfo info;
  if (!chosen_res.empty()) info.accuracy = SummariseLowo(chosen_res, labels, data.group, kDefaultIntervalLevel,
                                                         fo.interval_method, &chosen_risks);
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
  info.power_limited_clock = data.power_limited_clock;
  for (const Measurement& r : data.rows)
    if (!r.target.empty() && !std::isnan(r.gpu_util) && std::find(info.targets.begin(), info.targets.end(), r.target) == info.targets.end())
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

namespace {

// The interval's width as a reason to be unsure ("" when not wider than kUnsureWidthPoints).
std::string WidthReason(const UtilPrediction& q, double level) {
  if (!(q.high - q.low > kUnsureWidthPoints)) return "";
  char b[96];
  std::snprintf(b, sizeof b, "the %.0f%% interval is %.0f points wide (over %.0f)", level * 100, q.high - q.low,
                kUnsureWidthPoints);
  return b;
}

// The last step of every answer: the interval's width as a reason to be unsure, and the flag.
void FinishUnsure(PredictResult* out, double level) {
  if (std::string w = WidthReason(out->prediction, level); !w.empty()) out->unsure_reasons.push_back(std::move(w));
  out->unsure = !out->unsure_reasons.empty();
}

// One rank's answer of a data-parallel job on the links `ic`: the all-reduce
// model (predict/data_parallel.h) applied to out->single_gpu and out->data_parallel_input.
Status ApplyLinks(PredictResult* out, const std::vector<CostReport>& reports, const Interconnect& ic) {
  const UtilPrediction& one = *out->single_gpu;
  const DataParallelInput& in = *out->data_parallel_input;
  ASSIGN_OR_RETURN(DataParallelResult dp, ApplyDataParallel(in, DdpBuckets(reports), ic));
  out->prediction = {dp.util, DataParallelUtil(one.low, in, dp), DataParallelUtil(one.high, in, dp)};
  out->prediction.low = std::min(out->prediction.low, out->prediction.util);
  out->prediction.high = std::max(out->prediction.high, out->prediction.util);
  // One rank's step: the data-parallel step, its interval the single-GPU one scaled by T_N / T_1.
  out->prediction.step_ms = dp.step_s * 1e3;
  const double grow = dp.single_step_s > 0 ? dp.step_s / dp.single_step_s : 1.0;
  out->prediction.step_low_ms = std::min(out->prediction.step_ms, one.step_low_ms * grow);
  out->prediction.step_high_ms = std::max(out->prediction.step_ms, one.step_high_ms * grow);
  out->interconnect = ic;
  out->data_parallel = dp;
  return Status::Ok();
}

}  // namespace

Result<PredictResult> Predictor::Predict(const std::vector<CostReport>& reports, const JobConfig& job_in,
                                         double level) const {
  if (reports.empty()) return Status::Error("predict: no graph");
  // The features the model was fitted on: its own power-limited-clock setting, whatever the caller's.
  JobConfig job = job_in;
  job.power_limited_clock = info_.power_limited_clock;
  ASSIGN_OR_RETURN(std::vector<double> f, ComputeFeatures(reports, job));
  if (f.size() != info_.feature_names.size())
    return Status::Error("predict: features have " + std::to_string(f.size()) + " values, model wants " +
                         std::to_string(info_.feature_names.size()));
  const std::vector<std::string> gpus = {job.gpu};
  std::vector<RowRisk> risks;
  ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, model_.Predict({f}, level, &gpus, &risks));
  PredictResult out;
  out.risk = risks.at(0);
  if (const UtilModel* sm = StepModel()) {
    if (const auto* ph = dynamic_cast<const PhysicsModel*>(&sm->regressor())) {
      StepVariation v;
      v.own_loaders = true;
      ASSIGN_OR_RETURN(std::vector<PhysicsStep> own, ph->PredictSteps(SelectColumns({f}, sm->columns()), v));
      if (!model_.Match(f, job.gpu).seen) out.carried_loader_ms_per_sample = own.at(0).own_loader_s_per_sample * 1e3;
    }
  }
  // Step time: the model's own (physics), else its step model's.
  auto fill_step = [&](const std::vector<double>& feats, UtilPrediction* u) -> Status {
    if (u->step_ms > 0) return Status::Ok();
    if (const UtilModel* sm = StepModel(); sm && sm != &model_) {
      ASSIGN_OR_RETURN(std::vector<UtilPrediction> sp, sm->Predict({feats}, level, &gpus));
      u->step_ms = sp[0].step_ms;
      u->step_low_ms = sp[0].step_low_ms;
      u->step_high_ms = sp[0].step_high_ms;
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(fill_step(f, &p[0]));
  // Job facts left unstated whose other values change the features: the interval also holds the
  // job with any combination of their other values (each end the farther; the calibrated error is
  // added to each alike). The point stays the defaults'. A fact counts as unknown when some
  // combination changes with it (channels-last matters to an FP32 job only where TF32 puts its
  // convolutions on tensor cores).
  //  - selected_fraction: a boolean mask's selection costed at its upper bound (every element);
  //    the other value selects none of it (those nodes' FLOPs and bytes 0; the same kernels).
  //  - channels_last: the point is PyTorch's default NCHW, whose tensors cuDNN transposes around
  //    each convolution on tensor cores (EstimateStep); the other value is channels-last, which has
  //    none of those transposes (NVIDIA's recipes offer it, TensorFlow's convolutions are NHWC).
  //  - tf32: the point is PyTorch's default since 1.12 (Tf32For: cuDNN's convolutions and
  //    recurrent layers on TF32, matmuls in FP32); the other values are every FP32 FLOP on CUDA
  //    cores (tf32 0) and matmuls on TF32 too (1, PyTorch 1.7-1.11's default), on GPUs whose
  //    TF32 rate exceeds the FP32 one (elsewhere the point is tf32 0's and nothing changes).
  struct UnstatedFact {
    bool* flag;
    std::vector<void (*)(JobAttrs*)> others;  // the fact's other values
  };
  for (const CostReport& r : reports) out.selection_bound_nodes += r.SelectionBoundNodes();
  std::vector<UnstatedFact> facts;
  if (out.selection_bound_nodes > 0 && !job.attrs.selected_fraction)
    facts.push_back({&out.unknown_selection, {[](JobAttrs* a) { a->selected_fraction = 0.0; }}});
  if (!job.attrs.channels_last)
    facts.push_back({&out.unknown_channels_last, {[](JobAttrs* a) { a->channels_last = true; }}});
  Result<GpuSpec> gpu_spec = ResolveGpu(job.gpu, job.mig_profile);
  if (!job.attrs.tf32 && gpu_spec.ok() && Tf32For(std::nullopt, *gpu_spec) != Tf32::kNone)
    facts.push_back({&out.unknown_tf32, {[](JobAttrs* a) { a->tf32 = false; }, [](JobAttrs* a) { a->tf32 = true; }}});
  // Every combination, as mixed-radix digits: digit k is 0 for fact k's default, j for its j-th
  // other value. variant[0] is the point's features.
  size_t combos = 1;
  for (const UnstatedFact& fact : facts) combos *= fact.others.size() + 1;
  auto digits = [&](size_t m) {
    std::vector<size_t> d;
    for (const UnstatedFact& fact : facts) {
      d.push_back(m % (fact.others.size() + 1));
      m /= fact.others.size() + 1;
    }
    return d;
  };
  auto index = [&](const std::vector<size_t>& d) {
    size_t m = 0;
    for (size_t k = facts.size(); k-- > 0;) m = m * (facts[k].others.size() + 1) + d[k];
    return m;
  };
  std::vector<std::vector<double>> variant(combos);
  variant[0] = f;
  for (size_t m = 1; m < combos; ++m) {
    const std::vector<size_t> d = digits(m);
    JobConfig v = job;
    for (size_t k = 0; k < facts.size(); ++k)
      if (d[k] > 0) facts[k].others[d[k] - 1](&v.attrs);
    ASSIGN_OR_RETURN(variant[m], ComputeFeatures(reports, v));
    for (size_t k = 0; k < facts.size(); ++k) {
      if (d[k] == 0) continue;
      std::vector<size_t> without = d;
      without[k] = 0;  // the same combination with fact k at its default: computed before m
      if (variant[m] != variant[index(without)]) *facts[k].flag = true;
    }
  }
  for (size_t m = 1; m < combos; ++m) {
    // A combination whose features another one has (the point's included) predicts the same.
    if (std::find(variant.begin(), variant.begin() + m, variant[m]) != variant.begin() + m) continue;
    ASSIGN_OR_RETURN(std::vector<UtilPrediction> q, model_.Predict({variant[m]}, level, &gpus));
    RETURN_IF_ERROR(fill_step(variant[m], &q[0]));
    p[0].low = std::min(p[0].low, q[0].low);
    p[0].high = std::max(p[0].high, q[0].high);
    if (q[0].step_low_ms >= 0) p[0].step_low_ms = std::min(p[0].step_low_ms, q[0].step_low_ms);
    if (q[0].step_high_ms >= 0) p[0].step_high_ms = std::max(p[0].step_high_ms, q[0].step_high_ms);
  }
  const bool api = job.wording == InputWording::kApi;
  if (out.unknown_selection)
    out.warnings.push_back(std::to_string(out.selection_bound_nodes) +
                           " nodes compute on a boolean mask's selection, costed as if it selected every element "
                           "(the point and the memory are that upper bound): the interval spans a selection of none "
                           "to all (state it: " + (api ? "attrs.selected_fraction" : "--attr selected_fraction=F") +
                           ", the share of the elements the mask selects, e.g. 0.15 for a masked LM's masked "
                           "tokens)");
  if (out.unknown_tf32)
    out.warnings.push_back(std::string("TF32 is not stated: the point is PyTorch's default since 1.12, convolutions on "
                                       "TF32 tensor cores and matmuls in FP32; the interval also holds the job with "
                                       "every FP32 operation on CUDA cores and the one with matmuls on TF32 too "
                                       "(PyTorch 1.7-1.11's default) (state it: ") +
                           (api ? "attrs.tf32: true or false" : "--attr tf32=1 or 0") + ")");
  if (out.unknown_channels_last)
    out.warnings.push_back(std::string("the memory format is not stated: the point assumes PyTorch's default NCHW "
                                       "tensors, which cuDNN transposes around every convolution it runs on tensor "
                                       "cores; the interval also holds the channels-last job (state it: ") +
                           (api ? "attrs.channels_last: true or false" : "--attr channels_last=1 or 0") + ")");
  out.prediction = p[0];
  out.features = f;
  out.gpu_measured = model_.GpuMeasured(job.gpu);
  out.measured_gpus = model_.measured_gpus();
  SeenMatch seen = model_.Match(f, job.gpu);
  auto name = [](const WorkloadOffset* o) { return o->workload.empty() ? std::string("a measured workload") : o->workload; };
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& e : v) s += (s.empty() ? "" : ", ") + e;
    return s;
  };
  if (seen.seen) {
    out.seen_workload = name(seen.seen);
    out.seen_rows = seen.seen->rows;
  } else if (seen.same_graph && seen.other_gpu) {
    out.same_graph_workload = name(seen.same_graph);
    out.measured_on = seen.same_graph->gpus;
    char carried[160] = "";
    if (out.carried_loader_ms_per_sample > 0)
      std::snprintf(carried, sizeof carried, "; its input-pipeline time fitted on those rows (%.3g ms per sample per worker) is",
                    out.carried_loader_ms_per_sample);
    out.warnings.push_back(out.same_graph_workload + " was measured on " + joined(out.measured_on) + " only: its " +
                           "seen-workload correction is not carried to " + job.gpu + std::string(carried) +
                           (out.carried_loader_ms_per_sample > 0 ? " (carried: a CPU cost of the job)" : " (predicted by the model alone)"));
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
  if (!out.gpu_measured) {
    char transfer[400] = "";
    const RowRisk& k = out.risk;
    if (k.transfer_util_fall > 0 || k.transfer_util_rise > 0)
      std::snprintf(transfer, sizeof transfer,
                    ", a step %.2fx longer or %.2fx shorter than predicted and a busy/idle time ratio %.2fx lower "
                    "or %.2fx higher (the step-time and utilization errors of the training GPUs predicted from "
                    "each other)",
                    std::exp(k.transfer_longer), std::exp(k.transfer_shorter), std::exp(k.transfer_util_fall),
                    std::exp(k.transfer_util_rise));
    else if (k.transfer_longer > 0 || k.transfer_shorter > 0)
      std::snprintf(transfer, sizeof transfer,
                    " and a step %.2fx longer or %.2fx shorter than predicted (the step-time error of the training "
                    "GPUs predicted from each other; utilization as if all of it were idle time)",
                    std::exp(k.transfer_longer), std::exp(k.transfer_shorter));
    out.warnings.push_back("GPU " + job.gpu + " has no measured utilization rows (measured: " + joined(out.measured_gpus) +
                           "): its host is unknown, so the interval spans a host " +
                           std::to_string(static_cast<int>(kRiskHostFactor)) + "x slower or faster" + transfer +
                           " (docs/predictor.md)");
    out.unsure_reasons.push_back("no measured utilization rows of GPU " + job.gpu);
  }
  // A GPU of the site's table (--gpu-table): whatever its rows, its numbers are the site's.
  if (const GpuSpec* g = FindGpuSpec(job.gpu); g && !g->site_table.empty())
    out.warnings.push_back("GPU " + job.gpu + " is the site's, from " + g->site_table +
                           ", not gpucast's table: its peaks, memory and links are the site's numbers (source: " +
                           g->source.substr(0, 200) + ")");
  if (out.risk.unknown_pipeline && out.risk.low > 0) {
    char b[64];
    std::snprintf(b, sizeof b, "%g", kRiskLoaderMsPerSample);
    // Only loader_ms_per_sample (or data on the GPU) states the cost; loader_workers says how many
    // workers share it. The service's users are told the request's JSON field, not the CLI flag (api).
    out.warnings.push_back(std::string("the input pipeline's cost is not stated: the interval spans a loader of 0 to ") +
                           b + " CPU ms per sample per worker (state it: " +
                           (api ? "attrs.loader_ms_per_sample" : "--attr loader_ms_per_sample=MS") +
                           ", one worker's CPU time per sample, or " +
                           (api ? "attrs.data_on_gpu: true" : "--attr data_on_gpu=1") +
                           "; loader_workers is how many workers share that cost, not the cost)");
  }
  // GPU memory of one rank (data-parallel ranks add DDP's gradient buckets, features/memory.h).
  ASSIGN_OR_RETURN(MemoryEstimate mem, EstimateMemory(reports, job, /*ranks=*/job.gpus));
  if (memory_) {
    // A measured workload's graph (seen, or the same graph with other facts): its own fixed part.
    out.memory = memory_->Predict(mem, level, !out.seen_workload.empty() ? out.seen_workload : out.same_graph_workload);
    if (memory_->calibration().empty())
      out.warnings.push_back("the memory model is not calibrated (its training rows hold fewer than 3 workloads with a "
                             "memory value): the memory high end is the GPU's whole memory (" +
                             std::to_string(static_cast<int64_t>(mem.capacity_mib)) + " MiB)");
  } else {
    out.memory.capacity_mib = mem.capacity_mib;
  }
  out.memory_estimate = std::move(mem);
  if (job.gpus == 1 && job.nodes == 1 && job.interconnect.empty()) {
    FinishUnsure(&out, level);
    return out;
  }
  // Data-parallel: one rank's answer (predict/data_parallel.h).
  ASSIGN_OR_RETURN(GpuSpec spec, ResolveGpu(job.gpu, job.mig_profile));
  if (!job.mig_profile.empty() && job.gpus > 1)
    return Status::Error("predict: data-parallel jobs on MIG slices are not modelled (" +
                         InputName(job.wording, "mig") + " " + job.mig_profile + " with " +
                         InputName(job.wording, "gpus") + " " + std::to_string(job.gpus) + ")");
  ASSIGN_OR_RETURN(Interconnect ic, ResolveInterconnect(spec, job.gpus, job.nodes, job.interconnect, job.wording));
  const UtilModel* sm = StepModel();
  const PhysicsModel* physics = sm ? dynamic_cast<const PhysicsModel*>(&sm->regressor()) : nullptr;
  if (!physics)
    return Status::Error("predict: " + InputName(job.wording, "gpus") + " " + std::to_string(job.gpus) +
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
  out.single_gpu = p[0];
  out.data_parallel_input = in;
  RETURN_IF_ERROR(ApplyLinks(&out, reports, ic));
  FinishUnsure(&out, level);
  return out;
}

Result<PredictResult> Predictor::PredictOnLinks(const PredictResult& base, const std::vector<CostReport>& reports,
                                                const Interconnect& ic, double level) const {
  if (!base.single_gpu || !base.data_parallel_input || !base.interconnect)
    return Status::Error("predict: not a data-parallel answer to put on other links");
  if (ic.gpus != base.interconnect->gpus || ic.nodes != base.interconnect->nodes)
    return Status::Error("predict: other links must join the same GPUs and nodes");
  PredictResult out = base;
  // `base`'s width reason is of the links it had: removed by its text, wherever it stands among the
  // reasons; FinishUnsure adds the new links' own.
  if (const std::string stale = WidthReason(base.prediction, level); !stale.empty()) {
    auto it = std::find(out.unsure_reasons.begin(), out.unsure_reasons.end(), stale);
    if (it == out.unsure_reasons.end()) {
      char b[64];
      std::snprintf(b, sizeof b, "%g", level);
      return Status::Error(std::string("predict: the data-parallel answer has no width reason at level ") + b +
                           " (was it predicted at another level?)");
    }
    out.unsure_reasons.erase(it);
  }
  RETURN_IF_ERROR(ApplyLinks(&out, reports, ic));
  FinishUnsure(&out, level);
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
  out << JsonText(j) << "\n";
  out.close();
  if (!out) return Status::Error(path + ": write failed");
  return Status::Ok();
}

}  // namespace gpucast
