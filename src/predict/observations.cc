#include "predict/observations.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "cost/job_cost.h"
#include "predict/predictor.h"
#include "predict/regressor.h"

namespace gpucast {

namespace {

using nlohmann::json;

struct Db {
  sqlite3* db = nullptr;
  ~Db() { sqlite3_close(db); }
};
struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

std::string Text(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

// The parts of a stored job spec (service/job.cc SpecToJson) a training row needs.
Status ParseStoredSpec(const std::string& text, ObservedJob* j) {
  json s = json::parse(text, nullptr, false);
  if (!s.is_object()) return Status::Error("spec is not a JSON object");
  if (s.contains("models")) {
    // Several networks (service/job.cc: "models": [{"path", "repeat"}...]).
    if (!s["models"].is_array() || s["models"].empty()) return Status::Error("spec models");
    for (const json& m : s["models"]) {
      if (!m.is_object() || !m.contains("path") || !m["path"].is_string() || !m.contains("repeat") ||
          !m["repeat"].is_number() || !(m["repeat"].get<double>() > 0)) {
        return Status::Error("spec models: want {\"path\", \"repeat\"} entries");
      }
      j->networks.push_back({m["path"].get<std::string>(), m["repeat"].get<double>()});
    }
    j->stored_model = j->networks[0].graph_file;
  } else {
    if (!s.contains("model") || !s["model"].is_string()) return Status::Error("spec has no model");
    j->stored_model = s["model"].get<std::string>();
  }
  if (s.contains("batch")) {
    if (!s["batch"].is_number_integer() || s["batch"].get<int64_t>() < 1) return Status::Error("spec batch");
    j->batch = s["batch"].get<int64_t>();
  }
  if (s.contains("amp")) {
    if (!s["amp"].is_boolean()) return Status::Error("spec amp");
    j->amp = s["amp"].get<bool>();
  }
  if (s.contains("dims")) {
    if (!s["dims"].is_object()) return Status::Error("spec dims");
    for (const auto& [k, v] : s["dims"].items()) {
      if (!v.is_number_integer()) return Status::Error("spec dims." + k);
      j->dims[k] = v.get<int64_t>();
    }
  }
  if (s.contains("attrs")) {
    if (!s["attrs"].is_object()) return Status::Error("spec attrs");
    for (const auto& [k, v] : s["attrs"].items()) {
      // The service stores attrs typed (service/job.cc): integers, 0/1, loader_ms_per_sample a number.
      std::string value = v.is_boolean()          ? (v.get<bool>() ? "1" : "0")
                          : v.is_number_integer() ? std::to_string(v.get<int64_t>())
                          : v.is_number()         ? v.dump()
                          : v.is_string()         ? v.get<std::string>()
                                                  : "?";
      RETURN_IF_ERROR(ParseJobAttr(k + "=" + value, &j->attrs));
    }
  }
  return Status::Ok();
}

bool IsRegularFile(const std::string& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

std::string Canonical(const std::string& p) {
  std::error_code ec;
  std::filesystem::path c = std::filesystem::weakly_canonical(p, ec);
  return ec ? p : c.string();
}

}  // namespace

Status DatabaseFileStatus(const std::string& path, bool may_be_absent) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // stat(2), follows symlinks, opens nothing
  const char* what = nullptr;
  switch (st.type()) {
    case fs::file_type::regular: return Status::Ok();
    case fs::file_type::not_found:
      return may_be_absent ? Status::Ok() : Status::Error(path + ": no such database file");
    case fs::file_type::directory: what = "a directory"; break;
    case fs::file_type::fifo: what = "a FIFO"; break;
    case fs::file_type::character: what = "a character device"; break;
    case fs::file_type::block: what = "a block device"; break;
    case fs::file_type::socket: what = "a socket"; break;
    case fs::file_type::none: return Status::Error(path + ": cannot stat: " + ec.message());
    default: what = "of another type"; break;
  }
  return Status::Error(path + ": is " + what + ", not a regular file (want a gpucast service database)");
}

Result<std::vector<ObservedJob>> ReadObservedJobs(const std::string& db_path) {
  RETURN_IF_ERROR(DatabaseFileStatus(db_path, /*may_be_absent=*/false));
  Db db;
  if (sqlite3_open_v2(db_path.c_str(), &db.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    return Status::Error(db_path + ": cannot open database: " + (db.db ? sqlite3_errmsg(db.db) : "out of memory"));
  }
  sqlite3_busy_timeout(db.db, 5000);
  // A cancelled job did not run as submitted: its observations (accepted by
  // services before issue 31, which now refuse them) teach nothing true.
  bool has_state = false;
  {
    Stmt cols;
    if (sqlite3_prepare_v2(db.db, "SELECT 1 FROM pragma_table_info('jobs') WHERE name = 'state'", -1, &cols.s,
                           nullptr) == SQLITE_OK) {
      has_state = sqlite3_step(cols.s) == SQLITE_ROW;
    }
  }
  // One entry per (job, gpu): the sample-weighted mean of its observations.
  const std::string sql =
      std::string("SELECT o.job_id, o.gpu, SUM(o.gpu_util * o.samples) / SUM(o.samples), SUM(o.samples), COUNT(*), "
                  "j.spec, MIN(o.gpu_util), MAX(o.gpu_util), MIN(o.samples), "
                  "MAX(CASE WHEN typeof(o.gpu_util) IN ('integer', 'real') THEN NULL ELSE typeof(o.gpu_util) END), "
                  "MAX(CASE WHEN typeof(o.samples) = 'integer' THEN NULL ELSE typeof(o.samples) END) "
                  "FROM observations o JOIN jobs j ON j.id = o.job_id ") +
      (has_state ? "WHERE j.state != 'cancelled' " : "") + "GROUP BY o.job_id, o.gpu ORDER BY o.job_id, o.gpu";
  Stmt st;
  if (sqlite3_prepare_v2(db.db, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) {
    return Status::Error(db_path + ": not a gpucast service database with observations: " +
                         sqlite3_errmsg(db.db));
  }
  std::vector<ObservedJob> out;
  int rc;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    ObservedJob j;
    j.job_id = sqlite3_column_int64(st.s, 0);
    j.gpu = Text(st.s, 1);
    j.util = sqlite3_column_double(st.s, 2);
    j.samples = sqlite3_column_int64(st.s, 3);
    j.observations = sqlite3_column_int64(st.s, 4);
    // The file is read as it is: values the service never stores (it takes gpu_util in
    // [0, 100], samples >= 1) are an error naming the job and field, not a training label.
    const std::string where = db_path + ": job " + std::to_string(j.job_id) + ": field '";
    auto num = [](double v) {
      char b[32];
      std::snprintf(b, sizeof b, "%g", v);
      return std::string(b);
    };
    if (sqlite3_column_type(st.s, 9) != SQLITE_NULL) {
      return Status::Error(where + "gpu_util' of its observations: want a number in [0, 100], got " + Text(st.s, 9));
    }
    for (int c : {6, 7}) {
      const double v = sqlite3_column_double(st.s, c);
      if (!(v >= 0 && v <= 100))
        return Status::Error(where + "gpu_util' of its observations: want a number in [0, 100], got " + num(v));
    }
    if (sqlite3_column_type(st.s, 10) != SQLITE_NULL) {
      return Status::Error(where + "samples' of its observations: want an integer >= 1, got " + Text(st.s, 10));
    }
    if (sqlite3_column_int64(st.s, 8) < 1) {
      return Status::Error(where + "samples' of its observations: want an integer >= 1, got " +
                           std::to_string(sqlite3_column_int64(st.s, 8)));
    }
    Status parsed = ParseStoredSpec(Text(st.s, 5), &j);
    if (!parsed.ok()) return Status::Error(db_path + ": job " + std::to_string(j.job_id) + ": " + parsed.message());
    const std::string prefix = kUploadModelPrefix;
    if (j.stored_model.rfind(prefix, 0) == 0) {
      const std::string sha = j.stored_model.substr(prefix.size());
      const std::string kept = ObservedGraphDir(db_path) + "/" + sha + ".onnx";
      const std::string live = db_path + ".models/" + sha + ".onnx";
      j.graph_file = IsRegularFile(kept) ? kept : IsRegularFile(live) ? live : "";
      if (j.graph_file.empty()) j.skip_reason = "its uploaded graph is no longer stored";
    } else {
      j.graph_file = j.stored_model;
      if (!IsRegularFile(j.graph_file)) j.skip_reason = "graph file " + j.graph_file + " is gone";
      for (const ObservedNetwork& n : j.networks) {
        if (!IsRegularFile(n.graph_file)) j.skip_reason = "graph file " + n.graph_file + " is gone";
      }
    }
    out.push_back(std::move(j));
  }
  if (rc != SQLITE_DONE) return Status::Error(db_path + ": reading observations: " + sqlite3_errmsg(db.db));
  return out;
}

Status AppendObservedRows(const std::vector<ObservedJob>& jobs, const std::string& db_path,
                          const Catalog& catalog, Dataset* data, std::vector<std::string>* skipped) {
  // Catalog workloads that are exactly one graph, one pass per step.
  std::map<std::string, const CatalogWorkload*> by_file;
  for (const CatalogWorkload& w : catalog.workloads) {
    if (w.graphs.size() == 1 && w.graphs[0].repeat == 1 && w.graphs[0].forward_only == 0) {
      by_file.emplace(Canonical(w.graphs[0].file), &w);
    }
  }
  std::map<std::string, int> group_of;
  for (size_t g = 0; g < data->groups.size(); ++g) group_of[data->groups[g]] = static_cast<int>(g);
  GraphCostCache cache;
  std::string appended;  // what the digest covers
  size_t added = 0;
  for (const ObservedJob& j : jobs) {
    const std::string who = db_path + ": job " + std::to_string(j.job_id) + ": ";
    if (!j.skip_reason.empty()) {
      skipped->push_back(who + j.skip_reason);
      continue;
    }
    JobConfig cfg;
    cfg.batch = j.batch;
    cfg.amp = j.amp;
    cfg.attrs = j.attrs;
    cfg.gpu = !j.gpu.empty() ? j.gpu : data->gpu;
    cfg.power_limited_clock = data->power_limited_clock;  // the shipped rows' features
    // One report per network, as the service's engine made the prediction.
    std::vector<CostReport> reports;
    Status costed = Status::Ok();
    const std::vector<ObservedNetwork> networks =
        j.networks.empty() ? std::vector<ObservedNetwork>{{j.graph_file, 1}} : j.networks;
    for (const ObservedNetwork& n : networks) {
      Result<CostReport> cost = cache.Get(n.graph_file, j.batch, j.amp, j.dims);
      if (cost.ok() && n.repeat != 1) cost = StepReport(*cost, n.repeat, 0);
      if (!cost.ok()) {
        costed = cost.status();
        break;
      }
      reports.push_back(std::move(cost).value());
    }
    if (!costed.ok()) {
      skipped->push_back(who + costed.message());
      continue;
    }
    Result<std::vector<double>> f = ComputeFeatures(reports, cfg);
    if (!f.ok()) {
      skipped->push_back(who + f.message());
      continue;
    }
    if (f->size() != data->feature_names.size()) {
      return Status::Error(who + "features do not match the dataset's schema");
    }
    Result<MemoryEstimate> mem = EstimateMemory(reports, cfg);
    if (!mem.ok()) {
      skipped->push_back(who + mem.message());
      continue;
    }
    Measurement m;
    auto w = j.networks.empty() ? by_file.find(Canonical(j.graph_file)) : by_file.end();
    if (w != by_file.end()) {
      m.model = w->second->model;
      m.dataset = w->second->dataset;
    } else {
      m.model = "observed";
      m.dataset = std::filesystem::path(j.graph_file).filename().string();
      for (size_t i = 1; i < networks.size(); ++i) {
        m.dataset += "+" + std::filesystem::path(networks[i].graph_file).filename().string();
      }
      if (j.stored_model.rfind(kUploadModelPrefix, 0) == 0) m.dataset = j.stored_model.substr(0, 30);
    }
    m.batch = j.batch;
    m.amp = j.amp;
    m.gpu_util = j.util;
    m.gpu = j.gpu;
    m.target = kTargetNvidiaSmi;  // nvidia-smi, DCGM_FI_DEV_GPU_UTIL and Slurm's gpuutil are the same NVML counter
    m.dims = j.dims;
    m.loader_workers = j.attrs.loader_workers;
    m.file = db_path;
    m.line = static_cast<int>(std::min<int64_t>(j.job_id, 1 << 30));
    auto [it, fresh] = group_of.emplace(m.Key(), static_cast<int>(data->groups.size()));
    if (fresh) data->groups.push_back(m.Key());
    data->group.push_back(it->second);
    data->x.push_back(std::move(f).value());
    data->step_s.push_back(std::nan(""));
    data->row_gpu.push_back(cfg.gpu);
    data->row_mig.push_back("");
    data->mem.push_back(std::move(mem).value());  // no memory label: observations carry utilization only
    data->rows.push_back(std::move(m));
    appended += std::to_string(j.job_id) + "," + j.gpu + "," + std::to_string(j.util) + "," +
                std::to_string(j.samples) + ";";
    ++added;
  }
  if (added > 0) {
    data->csv_path += (data->csv_path.empty() ? "" : "; ") + ("observations " + db_path);
    data->digest = DigestString(data->digest + "|" + appended);
  }
  return Status::Ok();
}

Result<std::vector<CurvePoint>> ObservationLearningCurve(const Dataset& data, const std::vector<bool>& observed,
                                                         const std::string& algo, const std::string& feature_set,
                                                         uint64_t seed, const RegressorOptions& regressor) {
  if (observed.size() != data.rows.size()) return Status::Error("learning curve: row flags do not match the rows");
  ASSIGN_OR_RETURN(std::vector<size_t> cols, SelectFeatures(data.feature_names, feature_set));
  const std::vector<double> labels = data.Labels();
  std::vector<CurvePoint> out;
  for (size_t g = 0; g < data.groups.size(); ++g) {
    std::vector<size_t> obs;
    for (size_t i = 0; i < data.rows.size(); ++i) {
      if (observed[i] && data.group[i] == static_cast<int>(g)) obs.push_back(i);
    }
    if (obs.size() < 2) continue;
    for (size_t k = 0; k < obs.size(); ++k) {
      Matrix x;
      std::vector<double> y, step;
      FitOptions fo;
      fo.calibrate = false;
      fo.regressor = regressor;
      for (size_t i = 0; i < data.rows.size(); ++i) {
        if (observed[i] || data.group[i] == static_cast<int>(g)) continue;
        x.push_back(data.x[i]);
        y.push_back(labels[i]);
        step.push_back(i < data.step_s.size() ? data.step_s[i] : std::nan(""));
      }
      for (size_t t = 0; t < k; ++t) {
        x.push_back(data.x[obs[t]]);
        y.push_back(labels[obs[t]]);
        step.push_back(std::nan(""));
      }
      fo.step_s = step;
      ASSIGN_OR_RETURN(UtilModel m, UtilModel::Fit(x, y, data.feature_names, cols, algo, nullptr, seed, fo));
      Matrix test;
      for (size_t t = k; t < obs.size(); ++t) test.push_back(data.x[obs[t]]);
      ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, m.Predict(test));
      CurvePoint c;
      c.group = data.groups[g];
      c.observed_in_training = static_cast<int>(k);
      c.held_out = static_cast<int>(test.size());
      for (size_t t = 0; t < test.size(); ++t) {
        double d = p[t].util - labels[obs[k + t]];
        c.mae += std::fabs(d);
        c.mean_signed += d;
      }
      c.mae /= static_cast<double>(test.size());
      c.mean_signed /= static_cast<double>(test.size());
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace gpucast
