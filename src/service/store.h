// Durable job table in SQLite (WAL journal, synchronous=FULL): a call that
// returns ok has been committed to disk, so the service answers 201 only for
// jobs that survive kill -9 and power loss.
//
// Thread-safe: one connection guarded by a mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "service/job.h"
#include "util/status.h"

struct sqlite3;

namespace gpucast::service {

class JobStore {
 public:
  // Opens or creates the database at `path` (creating the schema).
  static Result<std::unique_ptr<JobStore>> Open(const std::string& path);
  ~JobStore();
  JobStore(const JobStore&) = delete;
  JobStore& operator=(const JobStore&) = delete;

  // Inserts `job` (its id is ignored) and returns it with its id. If
  // job.idempotency_key is non-empty and already stored, nothing is inserted
  // and the stored job is returned with *replayed = true; a stored job whose
  // request_digest differs is an error (the key was reused for another request).
  Result<Job> Insert(const Job& job, bool* replayed);

  // The job created with this Idempotency-Key; nullopt if none.
  Result<std::optional<Job>> GetByIdempotencyKey(const std::string& key);

  // nullopt if no job has that id.
  Result<std::optional<Job>> Get(int64_t id);

  // Jobs in id order, optionally only those in `state`; at most `limit`
  // jobs with id > after_id.
  Result<std::vector<Job>> List(std::optional<JobState> state, int64_t after_id, int64_t limit);

  // Writes state, placement and times of each job in one transaction.
  Status Update(const std::vector<Job>& jobs);

  // Jobs stored, in every state.
  Result<int64_t> Count();

  // Job rows read (decoded) since the store was opened: what a pass or a
  // submission costs, independent of the machine (tests assert on it).
  int64_t rows_read() const { return rows_read_.load(); }

  // The value of a read-only PRAGMA on this store's own connection
  // ("synchronous" -> "2" for FULL, "journal_mode" -> "wal").
  Result<std::string> PragmaValue(const std::string& name);

  const std::string& path() const { return path_; }

 private:
  JobStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status Exec(const char* sql);
  Status SqlError(const std::string& what);
  // Runs "SELECT <columns> FROM jobs <tail>" with integer parameters 1..n.
  Result<std::vector<Job>> Query(const std::string& tail, const std::vector<int64_t>& args);

  std::mutex mu_;
  sqlite3* db_;  // GUARDED_BY(mu_)
  std::string path_;
  std::atomic<int64_t> rows_read_{0};
};

}  // namespace gpucast::service
