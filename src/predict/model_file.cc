#include "predict/model_file.h"

#include <algorithm>
#include <cmath>

#include "util/json_text.h"

namespace gpucast {

using nlohmann::json;

namespace {
// UtilModel::transfer_util_calibration: [{"predicted_util": percent, "score": logit, "gpu": type}, ...]
// ("gpu" where known: UtilModel::transfer_util_gpus).
json TransferUtilJson(const std::vector<std::pair<double, double>>& scores, const std::vector<std::string>& gpus) {
  json out = json::array();
  for (size_t i = 0; i < scores.size(); ++i) {
    json e = {{"predicted_util", scores[i].first}, {"score", scores[i].second}};
    if (i < gpus.size() && !gpus[i].empty()) e["gpu"] = gpus[i];
    out.push_back(std::move(e));
  }
  return out;
}

// Each transfer score's GPU type (UtilModel::transfer_gpus), null where none is known (one group).
json TransferGpusJson(const std::vector<std::string>& gpus) {
  if (std::all_of(gpus.begin(), gpus.end(), [](const std::string& g) { return g.empty(); })) return json(nullptr);
  return json(gpus);
}
}  // namespace

Result<json> ModelFileJson(const Predictor& p) {
  const PredictorInfo& info = p.info();
  ASSIGN_OR_RETURN(json state, p.model().regressor().Save());
  json offsets = json::array();
  for (const WorkloadOffset& o : p.model().offsets()) {
    json facts = json::object();
    const std::vector<std::string>& names = p.model().fact_names();
    for (size_t k = 0; k < o.facts.size() && k < names.size(); ++k) facts[names[k]] = o.facts[k];
    offsets.push_back({{"params", o.params}, {"facts", facts}, {"offset", o.offset}, {"workload", o.workload},
                       {"rows", o.rows}, {"gpus", o.gpus}});
  }
  json selection = json::array();
  for (const auto& [c, r] : info.selection) selection.push_back({{"candidate", c}, {"lowo_median_workload_rmsle", r}});
  json used = json::array();
  for (size_t c : p.model().columns()) used.push_back(info.feature_names.at(c));
  json j = json{
      {"format", kModelFormat},
      {"format_version", kModelFormatVersion},
      {"feature_schema",
       {{"name", info.schema_name}, {"version", info.schema_version}, {"names", info.feature_names}}},
      {"feature_set", info.feature_set},
      {"features_used", used},
      {"training",
       {{"csv", info.training_csv},
        {"digest", info.training_digest},
        {"rows", info.training_rows},
        {"gpu", info.gpu},
        {"seed", info.seed}}},
      // Features: each GPU's compute peaks at the clock its board power sustains (features.h
      // JobConfig::power_limited_clock); predictions compute features with it. Absent: false.
      {"power_limited_clock", info.power_limited_clock},
      {"target", "log1p_gpu_util_percent"},
      {"targets", info.targets},
      {"selection", selection},
      {"algo", p.model().algo()},
      {"params", p.model().regressor().Params()},
      {"regressor", state},
      {"workload_offsets", offsets},
      {"calibration",
       {{"method", IntervalMethodName(p.model().interval_method())},
        {"pass", "leave-one-workload-out over the training rows"},
        {"scores", p.model().calibration()},
        {"step_scores", p.model().step_calibration()},
        {"transfer_scores", p.model().transfer_calibration()},
        {"transfer_score_gpus", TransferGpusJson(p.model().transfer_gpus())},
        {"transfer_util_scores",
         TransferUtilJson(p.model().transfer_util_calibration(), p.model().transfer_util_gpus())},
        {"plain_scores", p.model().plain_calibration()},
        {"band_scores", p.model().band_calibration()}}},
      {"measured_gpus", p.model().measured_gpus()},
      {"accuracy",
       {{"method", "leave-one-workload-out over the training rows (the calibration pass): unseen workloads; one level: each "
                  "workload's interval from the other workloads' residuals of that pass, whose models saw it "
                  "(evaluate calibrates nested, without it)"},
        {"workloads", info.accuracy.workloads},
        {"rows", info.accuracy.rows},
        {"rmsle", info.accuracy.rmsle},
        {"median_workload_rmsle", info.accuracy.median_workload_rmsle},
        {"mae_points", info.accuracy.mae_points},
        {"median_abs_error_points", info.accuracy.median_abs_error_points},
        {"interval_level", info.accuracy.level},
        {"interval_coverage", info.accuracy.coverage},
        {"interval_median_width_points", info.accuracy.median_width_points}}},
      {"memory", p.memory() ? p.memory()->Save() : json(nullptr)},
  };
  // The calibration pass's prediction of each training row (simulate --predictor; optional).
  if (!info.lowo_predictions.empty()) {
    auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
    json rows = json::array();
    for (const LowoRowPrediction& r : info.lowo_predictions)
      rows.push_back({{"model", r.model}, {"dataset", r.dataset}, {"batch", r.batch}, {"amp", r.amp}, {"gpu", r.gpu},
                      {"mig_profile", r.mig_profile}, {"predicted_util", r.predicted},
                      {"pred_mem_mib", num(r.mem_predicted)}, {"pred_mem_high_mib", num(r.mem_high)}});
    j["lowo_predictions"] = {
        {"method", "the calibration pass: each row predicted by the model's algorithm and feature set fitted "
                   "without its workload (seed * 31 + workload id); memory by the memory model fitted without it"},
        {"rows", rows}};
  }
  // The physics step-time model beside a non-physics model (data-parallel jobs; optional).
  if (const auto& sm = p.step_model()) {
    ASSIGN_OR_RETURN(json sstate, sm->regressor().Save());
    json sused = json::array();
    for (size_t c : sm->columns()) sused.push_back(info.feature_names.at(c));
    j["step_model"] = {{"algo", sm->algo()}, {"features_used", sused}, {"params", sm->regressor().Params()},
                       {"regressor", sstate}, {"step_scores", sm->step_calibration()},
                       {"transfer_scores", sm->transfer_calibration()},
                       {"transfer_score_gpus", TransferGpusJson(sm->transfer_gpus())}};
  }
  return j;
}

Result<Predictor> ParseModelFile(const std::string& text, const std::string& path,
                                 const FeatureSchema& schema) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // where and why: a truncated file, a number past double's range
    return Status::Error(path + ": not a JSON object (malformed JSON: " + JsonErrorReason(e) + ")");
  }
  if (!j.is_object()) return Status::Error(path + ": not a JSON object");
  if (j.value("format", "") != kModelFormat)
    return Status::Error(path + ": not a gpucast predictor file (format is not '" + kModelFormat + "')");
  if (!j.contains("format_version") || !j["format_version"].is_number_integer())
    return Status::Error(path + ": format_version: want " + std::to_string(kModelFormatVersion));
  if (int v = j["format_version"].get<int>(); v != kModelFormatVersion)
    return Status::Error(path + ": format_version " + std::to_string(v) + ": this build reads " +
                         std::to_string(kModelFormatVersion) +
                         (v < kModelFormatVersion ? " (4 adds the GPU memory model, 5 the lowo accuracy and job-fact offsets); retrain with 'gpucast train'"
                                                  : " (the file is from a newer gpucast)"));
  PredictorInfo info;
  std::vector<std::string> used;
  std::string algo, target;
  json params, state;
  std::vector<double> calibration;
  std::string method_name;
  std::vector<WorkloadOffset> offsets;
  std::vector<double> step_scores, sm_step_scores, plain_scores, band_scores, transfer_scores, sm_transfer_scores;
  std::vector<std::pair<double, double>> transfer_util_scores;
  // Each transfer score's GPU type (optional: files before them, one group).
  std::vector<std::string> transfer_gpus, transfer_util_gpus, sm_transfer_gpus;
  auto gpus_of = [](const json& obj) {
    return obj.contains("transfer_score_gpus") && !obj.at("transfer_score_gpus").is_null()
               ? obj.at("transfer_score_gpus").get<std::vector<std::string>>()
               : std::vector<std::string>{};
  };
  std::vector<std::string> measured_gpus;
  json memory;
  try {
    const json& fs = j.at("feature_schema");
    info.schema_name = fs.at("name").get<std::string>();
    info.schema_version = fs.at("version").get<int>();
    info.feature_names = fs.at("names").get<std::vector<std::string>>();
    info.feature_set = j.at("feature_set").get<std::string>();
    used = j.at("features_used").get<std::vector<std::string>>();
    const json& t = j.at("training");
    info.training_csv = t.at("csv").get<std::string>();
    info.training_digest = t.at("digest").get<std::string>();
    info.training_rows = t.at("rows").get<size_t>();
    info.gpu = t.at("gpu").get<std::string>();
    info.seed = t.at("seed").get<uint64_t>();
    // Optional (files before the power-limited clock was a model setting: off, as they were trained).
    if (j.contains("power_limited_clock")) info.power_limited_clock = j.at("power_limited_clock").get<bool>();
    target = j.at("target").get<std::string>();
    info.targets = j.at("targets").get<std::vector<std::string>>();
    for (const json& e : j.at("selection"))
      info.selection.push_back({e.at("candidate").get<std::string>(), e.at("lowo_median_workload_rmsle").get<double>()});
    calibration = j.at("calibration").at("scores").get<std::vector<double>>();
    method_name = j.at("calibration").at("method").get<std::string>();
    // Optional (files before step intervals and measured GPUs: none, every GPU counts as measured).
    if (j.at("calibration").contains("step_scores"))
      step_scores = j.at("calibration").at("step_scores").get<std::vector<double>>();
    // Optional (files before the GPU-transfer widening: none, the host scenario alone).
    if (j.at("calibration").contains("transfer_scores"))
      transfer_scores = j.at("calibration").at("transfer_scores").get<std::vector<double>>();
    transfer_gpus = gpus_of(j.at("calibration"));
    // Optional (files before the utilization transfer scores: the busy-held rule).
    if (j.at("calibration").contains("transfer_util_scores")) {
      for (const json& e : j.at("calibration").at("transfer_util_scores")) {
        transfer_util_scores.push_back({e.at("predicted_util").get<double>(), e.at("score").get<double>()});
        transfer_util_gpus.push_back(e.value("gpu", std::string()));
      }
    }
    if (j.contains("step_model") && j.at("step_model").contains("transfer_scores"))
      sm_transfer_scores = j.at("step_model").at("transfer_scores").get<std::vector<double>>();
    if (j.contains("step_model")) sm_transfer_gpus = gpus_of(j.at("step_model"));
    if (j.at("calibration").contains("plain_scores"))
      plain_scores = j.at("calibration").at("plain_scores").get<std::vector<double>>();
    if (j.at("calibration").contains("band_scores"))
      band_scores = j.at("calibration").at("band_scores").get<std::vector<double>>();
    if (j.contains("measured_gpus")) measured_gpus = j.at("measured_gpus").get<std::vector<std::string>>();
    if (j.contains("step_model") && j.at("step_model").contains("step_scores"))
      sm_step_scores = j.at("step_model").at("step_scores").get<std::vector<double>>();
    for (const json& e : j.at("workload_offsets")) {
      WorkloadOffset o;
      o.params = e.at("params").get<double>();
      o.offset = e.at("offset").get<double>();
      o.workload = e.at("workload").get<std::string>();
      o.rows = e.at("rows").get<size_t>();
      if (e.contains("gpus")) o.gpus = e.at("gpus").get<std::vector<std::string>>();
      const json& facts = e.at("facts");
      std::vector<std::string> want = JobFactsIn(info.feature_names);
      for (const std::string& n : want) o.facts.push_back(facts.at(n).get<double>());
      if (facts.size() != want.size())
        return Status::Error(path + ": workload_offsets: facts has " + std::to_string(facts.size()) +
                             " entries, want " + std::to_string(want.size()));
      if (!std::isfinite(o.offset) || !std::isfinite(o.params))
        return Status::Error(path + ": workload_offsets: not finite");
      offsets.push_back(std::move(o));
    }
    const json& acc = j.at("accuracy");
    info.accuracy.workloads = acc.at("workloads").get<size_t>();
    info.accuracy.rows = acc.at("rows").get<size_t>();
    info.accuracy.rmsle = acc.at("rmsle").get<double>();
    info.accuracy.median_workload_rmsle = acc.at("median_workload_rmsle").get<double>();
    info.accuracy.mae_points = acc.at("mae_points").get<double>();
    info.accuracy.median_abs_error_points = acc.at("median_abs_error_points").get<double>();
    info.accuracy.level = acc.at("interval_level").get<double>();
    info.accuracy.coverage = acc.at("interval_coverage").get<double>();
    info.accuracy.median_width_points = acc.at("interval_median_width_points").get<double>();
    algo = j.at("algo").get<std::string>();
    params = j.at("params");
    state = j.at("regressor");
    memory = j.at("memory");
    if (j.contains("lowo_predictions")) {
      auto num = [](const json& v) { return v.is_null() ? std::nan("") : v.get<double>(); };
      for (const json& e : j.at("lowo_predictions").at("rows")) {
        LowoRowPrediction r;
        r.model = e.at("model").get<std::string>();
        r.dataset = e.at("dataset").get<std::string>();
        r.batch = e.at("batch").get<int64_t>();
        r.amp = e.at("amp").get<bool>();
        r.gpu = e.at("gpu").get<std::string>();
        r.mig_profile = e.at("mig_profile").get<std::string>();
        r.predicted = e.at("predicted_util").get<double>();
        r.mem_predicted = num(e.at("pred_mem_mib"));
        r.mem_high = num(e.at("pred_mem_high_mib"));
        if (!(r.predicted >= 0 && r.predicted <= 100) || r.batch <= 0 ||
            !(std::isnan(r.mem_predicted) || (r.mem_predicted >= 0 && r.mem_predicted < 1e9)) ||
            !(std::isnan(r.mem_high) || (r.mem_high >= 0 && r.mem_high < 1e9)))
          return Status::Error(path + ": lowo_predictions: row " + std::to_string(info.lowo_predictions.size() + 1) +
                               " (" + r.model + "/" + r.dataset + "): predicted_util outside 0-100, batch <= 0 or "
                               "a memory value not a finite number >= 0");
        info.lowo_predictions.push_back(std::move(r));
      }
    }
  } catch (const json::exception& e) {
    return Status::Error(path + ": " + e.what());
  }
  if (info.schema_name != schema.name || info.schema_version != schema.version ||
      info.feature_names != schema.names)
    return Status::Error(path + ": feature schema " + info.schema_name + " v" +
                         std::to_string(info.schema_version) + " (" +
                         std::to_string(info.feature_names.size()) +
                         " features) does not match this build's " + schema.name + " v" +
                         std::to_string(schema.version) + " (" + std::to_string(schema.names.size()) +
                         " features); retrain with 'gpucast train'");
  if (target != "log1p_gpu_util_percent") return Status::Error(path + ": target: unknown '" + target + "'");
  std::vector<size_t> cols;
  for (const std::string& name : used) {
    auto it = std::find(info.feature_names.begin(), info.feature_names.end(), name);
    if (it == info.feature_names.end())
      return Status::Error(path + ": features_used: '" + name + "' is not in the schema");
    cols.push_back(it - info.feature_names.begin());
  }
  auto r = MakeRegressor(algo);
  if (!r.ok()) return r.status().Prefixed(path);
  Status st = (*r)->Configure(params);
  if (st.ok()) st = (*r)->SetFeatureNames(used);
  if (st.ok()) st = (*r)->Load(state);
  if (!st.ok()) return st.Prefixed(path);
  for (double v : calibration)
    if (!std::isfinite(v)) return Status::Error(path + ": calibration.scores: not finite");
  auto method = ParseIntervalMethod(method_name);
  if (!method.ok()) return method.status().Prefixed(path + ": calibration.method");
  const LowoAccuracy& a = info.accuracy;
  for (double v : {a.rmsle, a.median_workload_rmsle, a.mae_points, a.median_abs_error_points, a.median_width_points})
    if (!(v >= 0 && v < 1e6)) return Status::Error(path + ": accuracy: a value is not a finite number >= 0");
  if (!(a.coverage >= 0 && a.coverage <= 1) || !(a.level > 0 && a.level < 1))
    return Status::Error(path + ": accuracy: interval_coverage or interval_level outside [0, 1]");
  UtilModel m(algo, std::move(cols), std::shared_ptr<Regressor>(std::move(*r)));
  for (const auto& [u, z] : transfer_util_scores)
    if (!std::isfinite(u) || !std::isfinite(z)) return Status::Error(path + ": calibration: a score is not finite");
  for (const auto* v : {&step_scores, &plain_scores, &band_scores, &transfer_scores, &sm_transfer_scores})
    for (double x : *v)
      if (!std::isfinite(x)) return Status::Error(path + ": calibration: a score is not finite");
  for (double v : sm_step_scores)
    if (!std::isfinite(v)) return Status::Error(path + ": step_model.step_scores: not finite");
  m.set_calibration_scores(std::move(calibration), *method);
  m.set_step_calibration_scores(std::move(step_scores));
  if (!transfer_gpus.empty() && transfer_gpus.size() != transfer_scores.size())
    return Status::Error(path + ": calibration.transfer_score_gpus: not one per transfer score");
  if (!sm_transfer_gpus.empty() && sm_transfer_gpus.size() != sm_transfer_scores.size())
    return Status::Error(path + ": step_model.transfer_score_gpus: not one per transfer score");
  m.set_transfer_calibration_scores(std::move(transfer_scores), std::move(transfer_gpus));
  m.set_transfer_util_calibration_scores(std::move(transfer_util_scores), std::move(transfer_util_gpus));
  m.set_group_calibration_scores(std::move(plain_scores), std::move(band_scores));
  if (!measured_gpus.empty()) m.set_measured_gpus(measured_gpus);  // [] or absent: not recorded
  if (Status so = m.set_offsets(std::move(offsets), info.feature_names); !so.ok()) return so.Prefixed(path);
  Predictor out(std::move(info), std::move(m));
  if (j.contains("step_model")) {
    const json& sj = j["step_model"];
    std::vector<std::string> sused;
    std::string salgo;
    try {
      salgo = sj.at("algo").get<std::string>();
      sused = sj.at("features_used").get<std::vector<std::string>>();
    } catch (const json::exception& e) {
      return Status::Error(path + ": step_model: " + e.what());
    }
    if (salgo != "physics") return Status::Error(path + ": step_model: algo '" + salgo + "', want 'physics'");
    std::vector<size_t> scols;
    for (const std::string& name : sused) {
      auto it = std::find(out.info().feature_names.begin(), out.info().feature_names.end(), name);
      if (it == out.info().feature_names.end())
        return Status::Error(path + ": step_model: features_used: '" + name + "' is not in the schema");
      scols.push_back(it - out.info().feature_names.begin());
    }
    auto sr = MakeRegressor(salgo);
    if (!sr.ok()) return sr.status().Prefixed(path);
    Status sst = (*sr)->Configure(sj.contains("params") ? sj["params"] : json(nullptr));
    if (sst.ok()) sst = (*sr)->SetFeatureNames(sused);
    if (sst.ok()) sst = sj.contains("regressor") ? (*sr)->Load(sj["regressor"]) : Status::Error("no regressor");
    if (!sst.ok()) return sst.Prefixed(path + ": step_model");
    UtilModel sm(salgo, std::move(scols), std::shared_ptr<Regressor>(std::move(*sr)));
    sm.set_step_calibration_scores(std::move(sm_step_scores));
    sm.set_transfer_calibration_scores(std::move(sm_transfer_scores), std::move(sm_transfer_gpus));
    if (!measured_gpus.empty()) sm.set_measured_gpus(measured_gpus);
    out.set_step_model(std::move(sm));
  }
  if (!memory.is_null()) {
    auto mm = MemoryModel::Load(memory);
    if (!mm.ok()) return mm.status().Prefixed(path);
    out.set_memory(std::move(mm).value());
  }
  return out;
}

}  // namespace gpucast
