// Models by content address: POST /v1/models stores an ONNX file under its
// SHA-256, and any request (a job's "model", a pod's gpucast.io/model) may
// then name it "sha256:<64 hex digits>" instead of a path under the model
// roots. This is how a user's graph reaches a service in a cluster without
// access to its models volume (docs/kubernetes.md, "Models"). Files are
// DIR/<hex>.onnx, mode 0600, kept until the operator removes them, within a
// byte quota; opening one checks that its content still has its name.
// Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "service/model_roots.h"
#include "util/status.h"

namespace gpucast::service {

inline constexpr const char* kContentPrefix = "sha256:";

// Whether `name` is "sha256:" and 64 lower-case hex digits.
bool IsContentAddress(std::string_view name);

class ModelStore {
 public:
  // Creates `dir` (0700) if needed and counts what it holds.
  static Result<std::unique_ptr<ModelStore>> Open(const std::string& dir, size_t quota_bytes);

  // Stores `bytes` under their digest; "sha256:<hex>". *created: false when it
  // was there already. Errors set *http_status: 507 over the quota, 500 when
  // it cannot be written.
  Result<std::string> Put(std::string_view bytes, bool* created, int* http_status);
  // The stored file of a content address, its content checked against the
  // name. Error (a client's 422): "model 'sha256:...': no model stored under
  // this digest (POST /v1/models stores one)".
  Result<OpenedModel> Open(const std::string& name) const;
  // Bytes of a stored model, or -1.
  int64_t Size(const std::string& name) const;

  size_t bytes() const;
  const std::string& dir() const { return dir_; }

 private:
  ModelStore(std::string dir, size_t quota) : dir_(std::move(dir)), quota_(quota) {}
  std::string PathOf(const std::string& name) const { return dir_ + "/" + name.substr(7) + ".onnx"; }
  const std::string dir_;
  const size_t quota_;
  mutable std::mutex mu_;
  size_t bytes_ = 0;  // GUARDED_BY(mu_)
};

}  // namespace gpucast::service
