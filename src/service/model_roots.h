// Which files the service may read on a client's behalf: only regular files
// under the directories the operator configured (--model-root), opened so
// that no symlink, '..', FIFO or device can lead elsewhere, and refused with
// one message whether a path outside the roots exists or not.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace gpucast::service {

// Owns a file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_ = -1;
};

struct OpenedModel {
  UniqueFd fd;       // open for reading, a regular file
  std::string path;  // its canonical path (under a root)
};

// Whether `fd` is on a kernel pseudo filesystem (proc, sysfs, debugfs,
// tracefs, securityfs, cgroup, configfs, bpf, pstore, efivarfs): its "files"
// are not models, and reading them for a client would show the service's own
// state. Both ModelRoots and OpenAsUser refuse them.
bool OnPseudoFilesystem(int fd);
// Whether the absolute path `p` names /proc, /sys or /dev or something
// under them (lexically, after "." and ".." are folded away).
bool IsSystemPath(const std::string& p);

class ModelRoots {
 public:
  // Each root is resolved (realpath) and must be a directory. No roots: every
  // path is refused (uploads still work).
  static Result<ModelRoots> Create(const std::vector<std::string>& roots);

  // Opens the model a client named: an absolute path must resolve (symlinks
  // and '..' followed) to a file under a root; a relative one is tried under
  // each root in order. The file is opened with O_NOFOLLOW | O_NONBLOCK, the
  // opened file must be a regular file, and where it actually is
  // (/proc/self/fd) must be under a root. Anything not found, outside the
  // roots or unreadable gets the same message: "model 'P': no such model
  // file under the service's model roots".
  Result<OpenedModel> Open(const std::string& client_path) const;

  // The refusal message for `client_path`.
  static std::string Refusal(const std::string& client_path);

  const std::vector<std::string>& roots() const { return roots_; }

 private:
  bool Under(const std::string& canonical) const;
  std::vector<std::string> roots_;  // canonical, without trailing '/' (except "/")
};

}  // namespace gpucast::service
