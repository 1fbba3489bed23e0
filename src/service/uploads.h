// Uploaded ONNX models (POST with application/octet-stream), stored by
// content: one file DIR/<sha256>.onnx per distinct body, mode 0600, kept
// while a request or a queued/running job refers to it, removed when none
// does. The bytes of all stored uploads are capped (507 over the quota).
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "service/job.h"
#include "util/status.h"

namespace gpucast::service {

class UploadStore {
 public:
  // `dir` must exist (the service creates it, 0700).
  UploadStore(std::string dir, size_t quota_bytes) : dir_(std::move(dir)), quota_(quota_bytes) {}

  // One more reference to the upload of `bytes` (whose SHA-256 is `sha`),
  // storing it (temp file, fsync, rename) if it is new. Errors set
  // *http_status: 507 over the quota, 500 when it cannot be written.
  Status Acquire(const std::string& sha, std::string_view bytes, int* http_status);
  // One reference fewer; the file goes with the last.
  void Release(const std::string& sha);
  // The job is no longer queued or running: its upload's reference goes.
  void ReleaseJob(const JobSpec& spec);
  // At start: one reference per queued or running job of `live` that names
  // an upload; every other file in the directory (and interrupted writes) is
  // removed. A job whose file is gone keeps its record and holds nothing.
  Status Restore(const std::vector<Job>& live);

  std::string Path(const std::string& sha) const { return dir_ + "/" + sha + ".onnx"; }
  const std::string& dir() const { return dir_; }
  size_t bytes() const;  // stored now

 private:
  const std::string dir_;
  const size_t quota_;
  mutable std::mutex mu_;
  std::map<std::string, int64_t> refs_;  // GUARDED_BY(mu_): sha -> references
  std::map<std::string, size_t> sizes_;  // GUARDED_BY(mu_): sha -> bytes on disk
  size_t bytes_ = 0;                     // GUARDED_BY(mu_)
};

// The uploaded graphs of observed jobs, kept for `gpucast train
// --observations` after their jobs end (DB.observed/<sha256>.onnx, a hard
// link of the upload). Their bytes are counted against a quota of their own
// (--observed-graph-quota-bytes): a graph that would pass it is not kept (the
// observation is, and training skips the job: "its uploaded graph is no
// longer stored"). At start every file no observed job names is removed.
// Thread-safe.
class ObservedGraphs {
 public:
  // Creates `dir` (0700) if missing.
  static Result<std::unique_ptr<ObservedGraphs>> Open(const std::string& dir, size_t quota_bytes);
  // Keeps the upload `sha` stored at `upload_path` (no-op if kept already).
  // Error (nothing kept) over the quota or when the link fails; the message
  // names the job's upload and the quota.
  Status Keep(const std::string& sha, const std::string& upload_path);
  // At start: removes every file whose SHA-256 is not in `observed` (and
  // anything that is not "<sha256>.onnx"), counts the rest.
  Status Restore(const std::set<std::string>& observed);
  size_t bytes() const;
  const std::string& dir() const { return dir_; }

 private:
  ObservedGraphs(std::string dir, size_t quota) : dir_(std::move(dir)), quota_(quota) {}
  const std::string dir_;
  const size_t quota_;
  mutable std::mutex mu_;
  std::map<std::string, size_t> sizes_;  // GUARDED_BY(mu_): sha -> bytes
  size_t bytes_ = 0;                     // GUARDED_BY(mu_)
};

// One reference to an upload, released on destruction unless kept (a job
// then holds it until UploadStore::ReleaseJob).
class UploadRef {
 public:
  explicit UploadRef(UploadStore* store) : store_(store) {}
  ~UploadRef() {
    if (!sha_.empty()) store_->Release(sha_);
  }
  UploadRef(const UploadRef&) = delete;
  UploadRef& operator=(const UploadRef&) = delete;
  void Set(std::string sha) { sha_ = std::move(sha); }
  void Keep() { sha_.clear(); }

 private:
  UploadStore* store_;
  std::string sha_;
};

}  // namespace gpucast::service
