#include "service/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include <nlohmann/json.hpp>

#include "service/sqlite_db.h"

namespace gpucast::service {

using nlohmann::json;

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  idem_key TEXT UNIQUE,          -- NULL when the client sent no Idempotency-Key
  digest TEXT NOT NULL,          -- digest of the request that created the job
  spec TEXT NOT NULL,            -- JobSpec as JSON
  util REAL NOT NULL, util_lo REAL NOT NULL, util_hi REAL NOT NULL,
  state TEXT NOT NULL,
  placement TEXT NOT NULL,       -- JSON array of GPU indices
  exclusive INTEGER NOT NULL,    -- 1: runs alone on its GPUs
  submitted_at REAL NOT NULL, started_at REAL, finished_at REAL
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
)sql";

constexpr const char* kColumns =
    "id, idem_key, digest, spec, util, util_lo, util_hi, state, placement, submitted_at, "
    "started_at, finished_at, exclusive, mem_mib, mem_lo, mem_hi, step_ms, step_lo, step_hi, gpu_measured, "
    "unsure, unsure_reasons, warnings, interval_level, interval_calibrated";

// Columns added after the first release: a database without them gets them
// (NULL in old rows: no memory prediction; no step time, gpu_measured, unsure
// or warnings, which rows written before them did not keep; no interval level).
constexpr const char* kAddedColumns[] = {"mem_mib REAL",         "mem_lo REAL",  "mem_hi REAL",
                                         "step_ms REAL",         "step_lo REAL", "step_hi REAL",
                                         "gpu_measured INTEGER", "unsure INTEGER",
                                         "unsure_reasons TEXT",  // JSON array of strings
                                         "warnings TEXT",        // JSON array of strings
                                         "interval_level REAL",  "interval_calibrated INTEGER"};

std::optional<double> ColumnOptDouble(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(s, i);
}

std::string ColumnText(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

void BindOptDouble(sqlite3_stmt* s, int i, const std::optional<double>& v) {
  if (v) sqlite3_bind_double(s, i, *v); else sqlite3_bind_null(s, i);
}

std::optional<bool> ColumnOptBool(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int(s, i) != 0;
}

void BindOptBool(sqlite3_stmt* s, int i, const std::optional<bool>& v) {
  if (v) sqlite3_bind_int(s, i, *v ? 1 : 0); else sqlite3_bind_null(s, i);
}

// A JSON array of strings (NULL or anything else: none).
std::vector<std::string> ColumnStrings(sqlite3_stmt* s, int i) {
  std::vector<std::string> out;
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return out;
  json a = json::parse(ColumnText(s, i), nullptr, false);
  if (!a.is_array()) return out;
  for (const json& e : a)
    if (e.is_string()) out.push_back(e.get<std::string>());
  return out;
}

}  // namespace

Result<std::unique_ptr<JobStore>> JobStore::Open(const std::string& path) {
  ASSIGN_OR_RETURN(sqlite3* db, OpenDatabase(path));
  std::unique_ptr<JobStore> store(new JobStore(db, path));
  // WAL + FULL: every commit is fsynced before it returns.
  RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL"));
  RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  RETURN_IF_ERROR(store->Exec(kSchema));
  {
    std::vector<std::string> have;
    Stmt info;
    if (sqlite3_prepare_v2(db, "PRAGMA table_info(jobs)", -1, &info.s, nullptr) != SQLITE_OK) {
      return store->SqlError("table_info");
    }
    while (sqlite3_step(info.s) == SQLITE_ROW) have.push_back(ColumnText(info.s, 1));
    for (const char* col : kAddedColumns) {
      const std::string name = std::string(col).substr(0, std::string(col).find(' '));
      if (std::find(have.begin(), have.end(), name) != have.end()) continue;
      RETURN_IF_ERROR(store->Exec(("ALTER TABLE jobs ADD COLUMN " + std::string(col)).c_str()));
    }
  }
  // journal_mode=WAL silently stays "delete" on filesystems without shared memory: check.
  Stmt st;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st.s, nullptr);
  if (sqlite3_step(st.s) != SQLITE_ROW || ColumnText(st.s, 0) != "wal") {
    return Status::Error(path + ": cannot switch the database to WAL mode");
  }
  return store;
}

JobStore::~JobStore() { sqlite3_close(db_); }

Status JobStore::SqlError(const std::string& what) {
  return Status::Error(path_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

Result<std::string> JobStore::PragmaValue(const std::string& name) {
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return Status::Error("bad pragma name");
  }
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st;
  std::string sql = "PRAGMA " + name;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) return SqlError("pragma");
  if (sqlite3_step(st.s) != SQLITE_ROW) return SqlError("pragma " + name);
  return ColumnText(st.s, 0);
}

Status JobStore::Exec(const char* sql) { return ExecSql(db_, sql).Prefixed(path_); }

Result<std::vector<Job>> JobStore::Query(const std::string& tail, const std::vector<int64_t>& args) {
  std::string sql = std::string("SELECT ") + kColumns + " FROM jobs " + tail;
  Stmt st;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) return SqlError("query");
  for (size_t i = 0; i < args.size(); ++i) sqlite3_bind_int64(st.s, static_cast<int>(i + 1), args[i]);
  std::vector<Job> jobs;
  int rc;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    Job j;
    j.id = sqlite3_column_int64(st.s, 0);
    j.idempotency_key = ColumnText(st.s, 1);
    j.request_digest = ColumnText(st.s, 2);
    Result<JobSpec> spec = SpecFromStoredJson(ColumnText(st.s, 3));
    if (!spec.ok()) return Status::Error(path_ + ": job " + std::to_string(j.id) + ": " + spec.message());
    j.spec = std::move(spec).value();
    j.prediction = Prediction::Of(sqlite3_column_double(st.s, 4), sqlite3_column_double(st.s, 5),
                                  sqlite3_column_double(st.s, 6));
    std::optional<JobState> state = ParseJobState(ColumnText(st.s, 7));
    if (!state) return Status::Error(path_ + ": job " + std::to_string(j.id) + ": bad state");
    j.state = *state;
    json placement = json::parse(ColumnText(st.s, 8), nullptr, false);
    if (!placement.is_array()) return Status::Error(path_ + ": job " + std::to_string(j.id) + ": bad placement");
    for (const json& g : placement) j.placement.push_back(g.get<int>());
    j.submitted_at = sqlite3_column_double(st.s, 9);
    j.started_at = ColumnOptDouble(st.s, 10);
    j.finished_at = ColumnOptDouble(st.s, 11);
    j.exclusive = sqlite3_column_int(st.s, 12) != 0;
    j.prediction.mem_mib = ColumnOptDouble(st.s, 13);
    j.prediction.mem_lo = ColumnOptDouble(st.s, 14);
    j.prediction.mem_hi = ColumnOptDouble(st.s, 15);
    j.prediction.step_ms = ColumnOptDouble(st.s, 16);
    j.prediction.step_lo = ColumnOptDouble(st.s, 17);
    j.prediction.step_hi = ColumnOptDouble(st.s, 18);
    j.prediction.gpu_measured = ColumnOptBool(st.s, 19);
    j.prediction.unsure = ColumnOptBool(st.s, 20);
    j.prediction.unsure_reasons = ColumnStrings(st.s, 21);
    j.prediction.warnings = ColumnStrings(st.s, 22);
    j.prediction.interval_level = ColumnOptDouble(st.s, 23);
    j.prediction.interval_calibrated = ColumnOptBool(st.s, 24);
    jobs.push_back(std::move(j));
    ++rows_read_;
  }
  if (rc != SQLITE_DONE) return SqlError("query");
  return jobs;
}

Result<Job> JobStore::Insert(const Job& job, bool* replayed) {
  std::lock_guard<std::mutex> lock(mu_);
  *replayed = false;
  if (!job.idempotency_key.empty()) {
    Stmt st;
    if (sqlite3_prepare_v2(db_, "SELECT id FROM jobs WHERE idem_key = ?", -1, &st.s, nullptr) != SQLITE_OK) {
      return SqlError("idempotency lookup");
    }
    sqlite3_bind_text(st.s, 1, job.idempotency_key.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st.s) == SQLITE_ROW) {
      ASSIGN_OR_RETURN(std::vector<Job> found, Query("WHERE id = ?1", {sqlite3_column_int64(st.s, 0)}));
      if (found.size() != 1) return SqlError("idempotency lookup");
      if (found[0].request_digest != job.request_digest) {
        return Status::Error("Idempotency-Key '" + job.idempotency_key + "' was already used for job " +
                             std::to_string(found[0].id) + " with a different request");
      }
      *replayed = true;
      return found[0];
    }
  }
  Stmt st;
  const char* sql =
      "INSERT INTO jobs (idem_key, digest, spec, util, util_lo, util_hi, state, placement, "
      "submitted_at, started_at, finished_at, exclusive, mem_mib, mem_lo, mem_hi, step_ms, step_lo, step_hi, "
      "gpu_measured, unsure, unsure_reasons, warnings, interval_level, interval_calibrated) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  if (sqlite3_prepare_v2(db_, sql, -1, &st.s, nullptr) != SQLITE_OK) return SqlError("insert");
  if (job.idempotency_key.empty()) {
    sqlite3_bind_null(st.s, 1);
  } else {
    sqlite3_bind_text(st.s, 1, job.idempotency_key.c_str(), -1, SQLITE_TRANSIENT);
  }
  std::string spec = SpecToStoredJson(job.spec).dump();
  std::string placement = json(job.placement).dump();
  sqlite3_bind_text(st.s, 2, job.request_digest.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.s, 3, spec.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st.s, 4, job.prediction.util);
  sqlite3_bind_double(st.s, 5, job.prediction.util_lo);
  sqlite3_bind_double(st.s, 6, job.prediction.util_hi);
  sqlite3_bind_text(st.s, 7, JobStateName(job.state), -1, SQLITE_STATIC);
  sqlite3_bind_text(st.s, 8, placement.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st.s, 9, job.submitted_at);
  BindOptDouble(st.s, 10, job.started_at);
  BindOptDouble(st.s, 11, job.finished_at);
  sqlite3_bind_int(st.s, 12, job.exclusive ? 1 : 0);
  BindOptDouble(st.s, 13, job.prediction.mem_mib);
  BindOptDouble(st.s, 14, job.prediction.mem_lo);
  BindOptDouble(st.s, 15, job.prediction.mem_hi);
  BindOptDouble(st.s, 16, job.prediction.step_ms);
  BindOptDouble(st.s, 17, job.prediction.step_lo);
  BindOptDouble(st.s, 18, job.prediction.step_hi);
  BindOptBool(st.s, 19, job.prediction.gpu_measured);
  BindOptBool(st.s, 20, job.prediction.unsure);
  const std::string reasons = json(job.prediction.unsure_reasons).dump();
  const std::string warnings = json(job.prediction.warnings).dump();
  sqlite3_bind_text(st.s, 21, reasons.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.s, 22, warnings.c_str(), -1, SQLITE_TRANSIENT);
  BindOptDouble(st.s, 23, job.prediction.interval_level);
  BindOptBool(st.s, 24, job.prediction.interval_calibrated);
  if (sqlite3_step(st.s) != SQLITE_DONE) return SqlError("insert");
  Job out = job;
  out.id = sqlite3_last_insert_rowid(db_);
  return out;
}

Result<std::optional<Job>> JobStore::GetByIdempotencyKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st;
  if (sqlite3_prepare_v2(db_, "SELECT id FROM jobs WHERE idem_key = ?", -1, &st.s, nullptr) != SQLITE_OK) {
    return SqlError("idempotency lookup");
  }
  sqlite3_bind_text(st.s, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.s) != SQLITE_ROW) return std::optional<Job>();
  ASSIGN_OR_RETURN(std::vector<Job> found, Query("WHERE id = ?1", {sqlite3_column_int64(st.s, 0)}));
  if (found.empty()) return std::optional<Job>();
  return std::optional<Job>(std::move(found[0]));
}

Result<std::optional<Job>> JobStore::Get(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(std::vector<Job> found, Query("WHERE id = ?1", {id}));
  if (found.empty()) return std::optional<Job>();
  return std::optional<Job>(std::move(found[0]));
}

Result<std::vector<Job>> JobStore::List(std::optional<JobState> state, int64_t after_id, int64_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!state) return Query("WHERE id > ?1 ORDER BY id LIMIT ?2", {after_id, limit});
  // The state name is one of four constants: safe to inline.
  return Query(std::string("WHERE state = '") + JobStateName(*state) + "' AND id > ?1 ORDER BY id LIMIT ?2",
               {after_id, limit});
}

Result<int64_t> JobStore::Count() {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt st;
  if (sqlite3_prepare_v2(db_, "SELECT COUNT(*) FROM jobs", -1, &st.s, nullptr) != SQLITE_OK) return SqlError("count");
  if (sqlite3_step(st.s) != SQLITE_ROW) return SqlError("count");
  return static_cast<int64_t>(sqlite3_column_int64(st.s, 0));
}

Status JobStore::Update(const std::vector<Job>& jobs) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  Stmt st;
  const char* sql = "UPDATE jobs SET state=?, placement=?, started_at=?, finished_at=?, exclusive=? WHERE id=?";
  if (sqlite3_prepare_v2(db_, sql, -1, &st.s, nullptr) != SQLITE_OK) {
    Status err = SqlError("update");
    (void)Exec("ROLLBACK");
    return err;
  }
  for (const Job& j : jobs) {
    std::string placement = json(j.placement).dump();
    sqlite3_reset(st.s);
    sqlite3_bind_text(st.s, 1, JobStateName(j.state), -1, SQLITE_STATIC);
    sqlite3_bind_text(st.s, 2, placement.c_str(), -1, SQLITE_TRANSIENT);
    BindOptDouble(st.s, 3, j.started_at);
    BindOptDouble(st.s, 4, j.finished_at);
    sqlite3_bind_int(st.s, 5, j.exclusive ? 1 : 0);
    sqlite3_bind_int64(st.s, 6, j.id);
    if (sqlite3_step(st.s) != SQLITE_DONE) {
      Status err = SqlError("update job " + std::to_string(j.id));
      (void)Exec("ROLLBACK");
      return err;
    }
  }
  return Exec("COMMIT");
}

}  // namespace gpucast::service
