#include "service/observations.h"

#include <sqlite3.h>

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "features/gpu_specs.h"
#include "predict/observations.h"

namespace gpucast::service {

using nlohmann::json;

namespace {

struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

Status FieldError(const std::string& field, const std::string& want) {
  return Status::Error("field '" + field + "': want " + want);
}

}  // namespace

Result<Observation> ParseObservationJson(const std::string& body) {
  // A flat object: anything nested is refused before parsing (no deep recursion).
  bool in_string = false, escaped = false;
  int depth = 0;
  for (char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '{' || c == '[') && ++depth > 1) {
      return Status::Error("request body: want a flat JSON object (no nested objects or arrays)");
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return Status::Error("malformed JSON: want {\"gpu_util\": 0-100, \"source\": ...}");
  if (!j.is_object()) return Status::Error("request body: want a JSON object");
  Observation o;
  bool have_util = false, have_source = false;
  std::string sources;
  for (const char* s : kObservationSources) sources += (sources.empty() ? "" : ", ") + std::string(s);
  for (const auto& [key, v] : j.items()) {
    if (key == "gpu_util") {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 100) {
        std::string got = v.dump(-1, ' ', false, json::error_handler_t::replace);
        if (got.size() > 64) got = got.substr(0, 64) + "...";
        return FieldError("gpu_util", "a number in [0, 100] (percent), got " + got);
      }
      o.gpu_util = v.get<double>();
      have_util = true;
    } else if (key == "source") {
      bool known = false;
      if (v.is_string()) {
        for (const char* s : kObservationSources) known = known || v.get<std::string>() == s;
      }
      if (!known) return FieldError("source", "one of " + sources);
      o.source = v.get<std::string>();
      have_source = true;
    } else if (key == "samples") {
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > (uint64_t{1} << 40)) ||
          v.get<int64_t>() < 1 || v.get<int64_t>() > (int64_t{1} << 40)) {
        return FieldError("samples", "an integer in [1, 2^40]");
      }
      o.samples = v.get<int64_t>();
    } else if (key == "gpu") {
      if (!v.is_string() || !FindGpuSpec(v.get<std::string>())) {
        return FieldError("gpu", "a GPU of the spec table (" + KnownGpuNames() + ")");
      }
      o.gpu = v.get<std::string>();
    } else {
      std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;
      return Status::Error("unknown field '" + shown + "' (known: gpu_util, source, samples, gpu)");
    }
  }
  if (!have_util) return FieldError("gpu_util", "a number in [0, 100] (missing)");
  if (!have_source) return FieldError("source", "one of " + sources + " (missing)");
  return o;
}

// ---------------------------------------------------------------- store

Result<std::unique_ptr<ObservationStore>> ObservationStore::Open(const std::string& db_path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::Error(db_path + ": cannot open database: " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<ObservationStore> s(new ObservationStore(db, db_path));
  for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", kObservationsSchemaSql}) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      return Status::Error(db_path + ": observations table: " + msg);
    }
  }
  Stmt st;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st.s, nullptr);
  const unsigned char* mode = sqlite3_step(st.s) == SQLITE_ROW ? sqlite3_column_text(st.s, 0) : nullptr;
  if (!mode || std::string(reinterpret_cast<const char*>(mode)) != "wal") {
    return Status::Error(db_path + ": cannot switch the database to WAL mode");
  }
  return s;
}

ObservationStore::~ObservationStore() { sqlite3_close(db_); }

Status ObservationStore::SqlError(const std::string& what) {
  return Status::Error(path_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

Status ObservationStore::Add(int64_t job_id, const Observation& o, double now) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st;
  const char* sql =
      "INSERT INTO observations (job_id, gpu_util, samples, source, gpu, observed_at) VALUES (?,?,?,?,?,?)";
  if (sqlite3_prepare_v2(db_, sql, -1, &st.s, nullptr) != SQLITE_OK) return SqlError("insert observation");
  sqlite3_bind_int64(st.s, 1, job_id);
  sqlite3_bind_double(st.s, 2, o.gpu_util);
  sqlite3_bind_int64(st.s, 3, o.samples);
  sqlite3_bind_text(st.s, 4, o.source.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.s, 5, o.gpu.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st.s, 6, now);
  // Autocommit: with synchronous=FULL the WAL is fsynced before step returns.
  if (sqlite3_step(st.s) != SQLITE_DONE) return SqlError("insert observation");
  return Status::Ok();
}

Result<std::optional<ObservedSummary>> ObservationStore::Summary(int64_t job_id) {
  ASSIGN_OR_RETURN(auto all, Summaries({job_id}));
  auto it = all.find(job_id);
  if (it == all.end()) return std::optional<ObservedSummary>();
  return std::optional<ObservedSummary>(it->second);
}

Result<std::map<int64_t, ObservedSummary>> ObservationStore::Summaries(const std::vector<int64_t>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int64_t, ObservedSummary> out;
  Stmt st;
  const char* sql =
      "SELECT SUM(gpu_util * samples) / SUM(samples), SUM(samples), COUNT(*) FROM observations WHERE job_id = ?";
  if (sqlite3_prepare_v2(db_, sql, -1, &st.s, nullptr) != SQLITE_OK) return SqlError("read observations");
  for (int64_t id : ids) {
    sqlite3_reset(st.s);
    sqlite3_bind_int64(st.s, 1, id);
    if (sqlite3_step(st.s) != SQLITE_ROW) return SqlError("read observations");
    if (sqlite3_column_int64(st.s, 2) == 0) continue;
    out[id] = {sqlite3_column_double(st.s, 0), sqlite3_column_int64(st.s, 1), sqlite3_column_int64(st.s, 2)};
  }
  return out;
}

// ---------------------------------------------------------------- metrics

void LoopMetrics::ObserveObservation(const std::string& source, double abs_error) {
  std::lock_guard<std::mutex> lock(mu_);
  ++by_source_[source];
  size_t i = 0;
  while (i < kErrorBuckets.size() && abs_error > kErrorBuckets[i]) ++i;
  if (i < kErrorBuckets.size()) ++err_counts_[i];
  ++err_count_;
  err_sum_ += abs_error;
}

void LoopMetrics::ObserveReload(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(ok ? reloads_ : reload_failures_);
}

void LoopMetrics::ObserveScrape(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(ok ? scrapes_ok_ : scrapes_failed_);
}

void LoopMetrics::ObserveDcgmSample(const std::string& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++dcgm_samples_[outcome];
}

std::string LoopMetrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  out += "# HELP gpucast_observations_total Utilization observations stored, by source.\n";
  out += "# TYPE gpucast_observations_total counter\n";
  for (const char* s : kObservationSources) {
    auto it = by_source_.find(s);
    out += "gpucast_observations_total{source=\"" + std::string(s) + "\"} " +
           std::to_string(it == by_source_.end() ? 0 : it->second) + "\n";
  }
  out += "# HELP gpucast_prediction_abs_error |predicted - observed| GPU utilization of each stored "
         "observation's job, percentage points.\n";
  out += "# TYPE gpucast_prediction_abs_error histogram\n";
  int64_t cumulative = 0;
  for (size_t i = 0; i < kErrorBuckets.size(); ++i) {
    cumulative += err_counts_[i];
    out += "gpucast_prediction_abs_error_bucket{le=\"" + Num(kErrorBuckets[i]) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += "gpucast_prediction_abs_error_bucket{le=\"+Inf\"} " + std::to_string(err_count_) + "\n";
  out += "gpucast_prediction_abs_error_sum " + Num(err_sum_) + "\n";
  out += "gpucast_prediction_abs_error_count " + std::to_string(err_count_) + "\n";
  out += "# HELP gpucast_predictor_reloads_total Predictor reloads that swapped in the new file.\n";
  out += "# TYPE gpucast_predictor_reloads_total counter\n";
  out += "gpucast_predictor_reloads_total " + std::to_string(reloads_) + "\n";
  out += "# HELP gpucast_predictor_reload_failures_total Predictor reloads refused (the old predictor stays).\n";
  out += "# TYPE gpucast_predictor_reload_failures_total counter\n";
  out += "gpucast_predictor_reload_failures_total " + std::to_string(reload_failures_) + "\n";
  out += "# HELP gpucast_dcgm_scrapes_total Scrapes of the DCGM exporter, by outcome.\n";
  out += "# TYPE gpucast_dcgm_scrapes_total counter\n";
  out += "gpucast_dcgm_scrapes_total{outcome=\"ok\"} " + std::to_string(scrapes_ok_) + "\n";
  out += "gpucast_dcgm_scrapes_total{outcome=\"error\"} " + std::to_string(scrapes_failed_) + "\n";
  out += "# HELP gpucast_dcgm_gpu_samples_total Per-GPU DCGM utilization samples, by what became of them.\n";
  out += "# TYPE gpucast_dcgm_gpu_samples_total counter\n";
  for (const auto& [outcome, n] : dcgm_samples_) {
    out += "gpucast_dcgm_gpu_samples_total{outcome=\"" + outcome + "\"} " + std::to_string(n) + "\n";
  }
  return out;
}

}  // namespace gpucast::service
