#include "service/observations.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "features/gpu_specs.h"
#include "predict/observations.h"
#include "service/http_util.h"
#include "service/job.h"
#include "service/sqlite_db.h"
#include "util/json_text.h"

namespace gpucast::service {

using nlohmann::json;

namespace {

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
  if (JsonNestedDeeperThan(body, 1))
    return Status::Error("request body: want a flat JSON object (no nested objects or arrays)");
  // ParseJson, as every other body: a key given twice is an error, not the last one silently.
  Result<json> parsed = ParseJson(body);
  if (!parsed.ok()) return Status::Error(parsed.message() + " (want {\"gpu_util\": 0-100, \"source\": ...})");
  const json& j = *parsed;
  if (!j.is_object()) return Status::Error("request body: want a JSON object");
  Observation o;
  bool have_util = false, have_source = false, have_margin = false;
  std::string sources;
  for (const char* s : kObservationSources) sources += (sources.empty() ? "" : ", ") + std::string(s);
  for (const auto& [key, v] : j.items()) {
    if (key == "gpu_util") {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 100) {
        std::string got = JsonText(v);
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
      if (!v.is_number_integer() ||
          (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxSamplesPerObservation)) ||
          v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxSamplesPerObservation) {
        return FieldError("samples", "an integer in [1, " + std::to_string(kMaxSamplesPerObservation) + "]");
      }
      o.samples = v.get<int64_t>();
    } else if (key == "gpu") {
      if (!v.is_string()) return FieldError("gpu", "a GPU of the spec table (" + KnownGpuNames() + ")");
      // The table's spelling rule ignores every byte but letters and digits, so
      // "A100\u0000-80GB" read as the A100-80GB, and was stored up to its NUL
      // ("A100", another GPU): a name is printable ASCII, kept by its canonical name.
      const std::string& name = v.get<std::string>();
      RETURN_IF_ERROR(CheckPrintableName("field 'gpu'", "a GPU name", "A100-80GB", name));
      if (!FindGpuSpec(name)) return FieldError("gpu", "a GPU of the spec table (" + KnownGpuNames() + ")");
      o.gpu = FindGpuSpec(name)->name;
    } else if (key == "share_pct" || key == "overuse_margin") {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 100) {
        return FieldError(key, "a number in [0, 100] (percent of one GPU)");
      }
      if (key == "share_pct") {
        o.share_pct = v.get<double>();
      } else {
        o.overuse_margin = v.get<double>();
        have_margin = true;
      }
    } else {
      std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;
      return Status::Error("unknown field '" + shown +
                           "' (known: gpu_util, source, samples, gpu, share_pct, overuse_margin)");
    }
  }
  if (!have_util) return FieldError("gpu_util", "a number in [0, 100] (missing)");
  if (!have_source) return FieldError("source", "one of " + sources + " (missing)");
  if (have_margin && !o.share_pct) return FieldError("overuse_margin", "share_pct beside it (a margin above what?)");
  return o;
}

// ---------------------------------------------------------------- store

Result<std::unique_ptr<ObservationStore>> ObservationStore::Open(const std::string& db_path) {
  ASSIGN_OR_RETURN(sqlite3* db, OpenDatabase(db_path));
  std::unique_ptr<ObservationStore> s(new ObservationStore(db, db_path));
  for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", kObservationsSchemaSql}) {
    RETURN_IF_ERROR(ExecSql(db, sql).Prefixed(db_path + ": observations table"));
  }
  // A database created before the idempotency and overuse columns gets them
  // (NULL in old rows: no key, no share), then the unique index on the key.
  std::vector<std::string> have;
  {
    Stmt info;
    if (sqlite3_prepare_v2(db, "PRAGMA table_info(observations)", -1, &info.s, nullptr) != SQLITE_OK) {
      return Status::Error(db_path + ": observations table: " + sqlite3_errmsg(db));
    }
    while (sqlite3_step(info.s) == SQLITE_ROW) {
      have.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(info.s, 1)));
    }
  }
  for (const char* col : {"idem_key TEXT", "share_pct REAL", "overuse_margin REAL"}) {
    const std::string name = std::string(col).substr(0, std::string(col).find(' '));
    if (std::find(have.begin(), have.end(), name) != have.end()) continue;
    const std::string sql = std::string("ALTER TABLE observations ADD COLUMN ") + col;
    RETURN_IF_ERROR(ExecSql(db, sql.c_str()).Prefixed(db_path + ": observations table: adding column " + name));
  }
  RETURN_IF_ERROR(ExecSql(db, kObservationsIdemIndexSql).Prefixed(db_path + ": observations table: idempotency index"));
  // The per-job summary: created and filled from the rows once (a database
  // from before it), then kept by Add.
  {
    bool have_summary = false;
    Stmt t;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'observation_summary'",
                           -1, &t.s, nullptr) == SQLITE_OK) {
      have_summary = sqlite3_step(t.s) == SQLITE_ROW;
    }
    if (!have_summary) {
      const char* sql =
          "BEGIN IMMEDIATE;"
          "CREATE TABLE IF NOT EXISTS observation_summary ("
          "  job_id INTEGER PRIMARY KEY, util REAL NOT NULL, samples INTEGER NOT NULL,"
          "  observations INTEGER NOT NULL, share_pct REAL, overuse INTEGER NOT NULL);"
          "INSERT OR REPLACE INTO observation_summary "
          "SELECT o.job_id, SUM(o.gpu_util * o.samples) / SUM(o.samples), SUM(o.samples), COUNT(*), "
          "  (SELECT share_pct FROM observations p WHERE p.job_id = o.job_id AND p.share_pct IS NOT NULL "
          "   ORDER BY p.id DESC LIMIT 1), "
          "  MAX(o.share_pct IS NOT NULL AND o.gpu_util > o.share_pct + o.overuse_margin) "
          "FROM observations o GROUP BY o.job_id;"
          "COMMIT;";
      if (Status e = ExecSql(db, sql); !e.ok()) {
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        return e.Prefixed(db_path + ": observation_summary table");
      }
    }
  }
  Stmt st;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st.s, nullptr);
  const unsigned char* mode = sqlite3_step(st.s) == SQLITE_ROW ? sqlite3_column_text(st.s, 0) : nullptr;
  if (!mode || std::string(reinterpret_cast<const char*>(mode)) != "wal") {
    return Status::Error(db_path + ": cannot switch the database to WAL mode");
  }
  {
    Stmt c;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM observations", -1, &c.s, nullptr) != SQLITE_OK ||
        sqlite3_step(c.s) != SQLITE_ROW) {
      return Status::Error(db_path + ": observations table: counting: " + sqlite3_errmsg(db));
    }
    s->total_ = sqlite3_column_int64(c.s, 0);
  }
  return s;
}

ObservationStore::~ObservationStore() { sqlite3_close(db_); }

Status ObservationStore::SqlError(const std::string& what) {
  return Status::Error(path_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

namespace {

constexpr const char* kRowColumns =
    "id, job_id, gpu_util, samples, source, gpu, observed_at, idem_key, share_pct, overuse_margin";

StoredObservation ReadRow(sqlite3_stmt* s) {
  auto text = [&](int i) {
    const unsigned char* t = sqlite3_column_text(s, i);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  };
  StoredObservation r;
  r.id = sqlite3_column_int64(s, 0);
  r.job_id = sqlite3_column_int64(s, 1);
  r.o.gpu_util = sqlite3_column_double(s, 2);
  r.o.samples = sqlite3_column_int64(s, 3);
  r.o.source = text(4);
  r.o.gpu = text(5);
  r.observed_at = sqlite3_column_double(s, 6);
  r.o.idem_key = text(7);
  if (sqlite3_column_type(s, 8) != SQLITE_NULL) {
    r.o.share_pct = sqlite3_column_double(s, 8);
    if (sqlite3_column_type(s, 9) != SQLITE_NULL) r.o.overuse_margin = sqlite3_column_double(s, 9);
  }
  return r;
}

// Does a request repeat the stored one? (The stored gpu may have been filled
// in from the job's placement, which can change between a post and its retry:
// a request that states no gpu matches any.)
bool SameObservation(const StoredObservation& a, int64_t job_id, const Observation& b) {
  return a.job_id == job_id && a.o.gpu_util == b.gpu_util && a.o.samples == b.samples && a.o.source == b.source &&
         (b.gpu_filled || b.gpu.empty() || a.o.gpu == b.gpu) && a.o.share_pct == b.share_pct &&
         (!b.share_pct || a.o.overuse_margin == b.overuse_margin);
}

}  // namespace

Result<std::optional<StoredObservation>> ObservationStore::FindByKey(const std::string& idem_key) {
  std::lock_guard<std::mutex> lock(mu_);
  return FindByKeyLocked(idem_key);
}

Result<std::optional<StoredObservation>> ObservationStore::FindByKeyLocked(const std::string& idem_key) {
  Stmt st;
  const std::string sql = std::string("SELECT ") + kRowColumns + " FROM observations WHERE idem_key = ?";
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) return SqlError("idempotency lookup");
  sqlite3_bind_text(st.s, 1, idem_key.c_str(), -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st.s);
  if (rc == SQLITE_DONE) return std::optional<StoredObservation>();
  if (rc != SQLITE_ROW) return SqlError("idempotency lookup");
  return std::optional<StoredObservation>(ReadRow(st.s));
}

Result<AddOutcome> ObservationStore::Add(int64_t job_id, const Observation& o, double now) {
  std::lock_guard<std::mutex> lock(mu_);
  AddOutcome out;
  if (!o.idem_key.empty()) {
    // Checked and inserted under mu_: this connection is the table's only writer.
    ASSIGN_OR_RETURN(std::optional<StoredObservation> found, FindByKeyLocked(o.idem_key));
    if (found) {
      out.kind = SameObservation(*found, job_id, o) ? AddOutcome::kReplayed : AddOutcome::kConflict;
      out.row = std::move(*found);
      return out;
    }
  }
  ASSIGN_OR_RETURN(std::optional<ObservedSummary> before, SummaryLocked(job_id));
  const ObservedSummary prev = before.value_or(ObservedSummary());
  if (prev.observations >= kMaxObservationsPerJob) {
    out.kind = AddOutcome::kOverCap;
    out.why = "job " + std::to_string(job_id) + " has " + std::to_string(prev.observations) +
              " observations, the most one job may have";
    return out;
  }
  if (total_ >= max_total_) {
    out.kind = AddOutcome::kFull;
    out.why = "the service holds " + std::to_string(total_) + " observations, its limit (gpucast serve "
              "--max-observations " + std::to_string(max_total_) + "); ask the operator";
    return out;
  }
  if (prev.samples + o.samples > kMaxSamplesPerJob) {
    out.kind = AddOutcome::kOverCap;
    out.why = "job " + std::to_string(job_id) + " has " + std::to_string(prev.samples) + " samples; " +
              std::to_string(o.samples) + " more would pass the " + std::to_string(kMaxSamplesPerJob) +
              " one job may have";
    return out;
  }
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) return SqlError("begin");
  auto rollback = [&](const std::string& what) {
    Status st = SqlError(what);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return st;
  };
  {
    Stmt st;
    const char* sql =
        "INSERT INTO observations (job_id, gpu_util, samples, source, gpu, observed_at, idem_key, share_pct, "
        "overuse_margin) VALUES (?,?,?,?,?,?,?,?,?)";
    if (sqlite3_prepare_v2(db_, sql, -1, &st.s, nullptr) != SQLITE_OK) return rollback("insert observation");
    sqlite3_bind_int64(st.s, 1, job_id);
    sqlite3_bind_double(st.s, 2, o.gpu_util);
    sqlite3_bind_int64(st.s, 3, o.samples);
    sqlite3_bind_text(st.s, 4, o.source.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.s, 5, o.gpu.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st.s, 6, now);
    if (o.idem_key.empty()) {
      sqlite3_bind_null(st.s, 7);
    } else {
      sqlite3_bind_text(st.s, 7, o.idem_key.c_str(), -1, SQLITE_TRANSIENT);
    }
    if (o.share_pct) {
      sqlite3_bind_double(st.s, 8, *o.share_pct);
      sqlite3_bind_double(st.s, 9, o.overuse_margin);
    } else {
      sqlite3_bind_null(st.s, 8);
      sqlite3_bind_null(st.s, 9);
    }
    if (sqlite3_step(st.s) != SQLITE_DONE) return rollback("insert observation");
    out.row.id = sqlite3_last_insert_rowid(db_);
  }
  {
    // The running mean: the new samples pull it by their share of the total.
    ObservedSummary next = prev;
    next.samples = prev.samples + o.samples;
    next.util = prev.util + (o.gpu_util - prev.util) * static_cast<double>(o.samples) / static_cast<double>(next.samples);
    next.observations = prev.observations + 1;
    if (o.share_pct) next.share_pct = o.share_pct;
    next.overuse = prev.overuse || o.Overuse();
    Stmt st;
    const char* sql =
        "INSERT OR REPLACE INTO observation_summary (job_id, util, samples, observations, share_pct, overuse) "
        "VALUES (?,?,?,?,?,?)";
    if (sqlite3_prepare_v2(db_, sql, -1, &st.s, nullptr) != SQLITE_OK) return rollback("update summary");
    sqlite3_bind_int64(st.s, 1, job_id);
    sqlite3_bind_double(st.s, 2, next.util);
    sqlite3_bind_int64(st.s, 3, next.samples);
    sqlite3_bind_int64(st.s, 4, next.observations);
    if (next.share_pct) {
      sqlite3_bind_double(st.s, 5, *next.share_pct);
    } else {
      sqlite3_bind_null(st.s, 5);
    }
    sqlite3_bind_int(st.s, 6, next.overuse ? 1 : 0);
    if (sqlite3_step(st.s) != SQLITE_DONE) return rollback("update summary");
  }
  // With synchronous=FULL the WAL is fsynced before COMMIT returns.
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return rollback("commit observation");
  ++total_;
  out.kind = AddOutcome::kStored;
  out.row.job_id = job_id;
  out.row.o = o;
  out.row.observed_at = now;
  return out;
}

Result<std::optional<ObservedSummary>> ObservationStore::Summary(int64_t job_id) {
  ASSIGN_OR_RETURN(auto all, Summaries({job_id}));
  auto it = all.find(job_id);
  if (it == all.end()) return std::optional<ObservedSummary>();
  return std::optional<ObservedSummary>(it->second);
}

Result<std::optional<ObservedSummary>> ObservationStore::SummaryLocked(int64_t job_id) {
  Stmt st;
  const char* sql =
      "SELECT util, samples, observations, share_pct, overuse FROM observation_summary WHERE job_id = ?";
  if (sqlite3_prepare_v2(db_, sql, -1, &st.s, nullptr) != SQLITE_OK) return SqlError("read observations");
  sqlite3_bind_int64(st.s, 1, job_id);
  int rc = sqlite3_step(st.s);
  if (rc == SQLITE_DONE) return std::optional<ObservedSummary>();
  if (rc != SQLITE_ROW) return SqlError("read observations");
  ObservedSummary sum;
  sum.util = sqlite3_column_double(st.s, 0);
  sum.samples = sqlite3_column_int64(st.s, 1);
  sum.observations = sqlite3_column_int64(st.s, 2);
  if (sqlite3_column_type(st.s, 3) != SQLITE_NULL) sum.share_pct = sqlite3_column_double(st.s, 3);
  sum.overuse = sqlite3_column_int64(st.s, 4) != 0;
  return std::optional<ObservedSummary>(sum);
}

Result<std::map<int64_t, ObservedSummary>> ObservationStore::Summaries(const std::vector<int64_t>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int64_t, ObservedSummary> out;
  for (int64_t id : ids) {
    ASSIGN_OR_RETURN(std::optional<ObservedSummary> s, SummaryLocked(id));
    if (s) out[id] = *s;
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

void LoopMetrics::ObserveOveruse(const std::string& source) {
  std::lock_guard<std::mutex> lock(mu_);
  ++overuse_by_source_[source];
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
  out += "# HELP gpucast_overuse_total Observations of a job above its GPU share by more than the margin, by "
         "source.\n";
  out += "# TYPE gpucast_overuse_total counter\n";
  for (const char* s : kObservationSources) {
    auto it = overuse_by_source_.find(s);
    out += "gpucast_overuse_total{source=\"" + std::string(s) + "\"} " +
           std::to_string(it == overuse_by_source_.end() ? 0 : it->second) + "\n";
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

namespace gpucast::service {

Result<std::set<std::string>> ObservationStore::ObservedUploads() {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st;
  const char* sql = "SELECT DISTINCT spec FROM jobs WHERE id IN (SELECT DISTINCT job_id FROM observations)";
  if (sqlite3_prepare_v2(db_, sql, -1, &st.s, nullptr) != SQLITE_OK) return SqlError("observed jobs");
  std::set<std::string> out;
  const std::string prefix = kUploadModelPrefix;
  int rc;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(st.s, 0);
    Result<JobSpec> spec = SpecFromStoredJson(text ? reinterpret_cast<const char*>(text) : "");
    if (!spec.ok()) continue;  // a spec this build cannot read keeps nothing
    if (spec->model.rfind(prefix, 0) == 0) out.insert(spec->model.substr(prefix.size()));
  }
  if (rc != SQLITE_DONE) return SqlError("observed jobs");
  return out;
}

}  // namespace gpucast::service
