#include "service/model_roots.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gpucast::service {

namespace {

constexpr size_t kMaxClientPath = 4096;

// realpath(3); "" if it fails.
std::string RealPath(const std::string& p) {
  char* r = ::realpath(p.c_str(), nullptr);
  if (!r) return "";
  std::string out(r);
  std::free(r);
  return out;
}

}  // namespace

bool OnPseudoFilesystem(int fd) {
  struct statfs fs;
  if (::fstatfs(fd, &fs) != 0) return true;  // unknown: not a model
  switch (static_cast<unsigned long>(fs.f_type)) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case BPF_FS_MAGIC:
    case PSTOREFS_MAGIC:
    case EFIVARFS_MAGIC:
    case 0x62656570:  // configfs
      return true;
    default:
      return false;
  }
}

bool IsSystemPath(const std::string& p) {
  const std::string n = std::filesystem::path(p).lexically_normal().string();
  for (const char* top : {"/proc", "/sys", "/dev"}) {
    const size_t len = std::char_traits<char>::length(top);
    if (n.compare(0, len, top) == 0 && (n.size() == len || n[len] == '/')) return true;
  }
  return false;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Result<ModelRoots> ModelRoots::Create(const std::vector<std::string>& roots) {
  ModelRoots m;
  for (const std::string& r : roots) {
    std::string c = RealPath(r);
    struct stat sb;
    if (c.empty() || ::stat(c.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
      return Status::Error("--model-root '" + r + "': not an existing directory");
    }
    m.roots_.push_back(c);
  }
  return m;
}

std::string ModelRoots::Refusal(const std::string& client_path) {
  std::string shown = client_path.size() > 256 ? client_path.substr(0, 256) + "..." : client_path;
  return "model '" + shown + "': no such model file under the service's model roots";
}

bool ModelRoots::Under(const std::string& c) const {
  for (const std::string& r : roots_) {
    if (r == "/") return !c.empty() && c[0] == '/';
    if (c.size() > r.size() && c.compare(0, r.size(), r) == 0 && c[r.size()] == '/') return true;
  }
  return false;
}

Result<OpenedModel> ModelRoots::Open(const std::string& client_path) const {
  const Status refused = Status::Error(Refusal(client_path));
  if (client_path.empty() || client_path.size() > kMaxClientPath ||
      client_path.find('\0') != std::string::npos) {
    return refused;
  }
  std::vector<std::string> candidates;
  if (client_path[0] == '/') {
    candidates.push_back(client_path);
  } else {
    for (const std::string& r : roots_) candidates.push_back((r == "/" ? "" : r) + "/" + client_path);
  }
  for (const std::string& cand : candidates) {
    const std::string canonical = RealPath(cand);
    if (canonical.empty() || !Under(canonical) || IsSystemPath(canonical)) continue;
    // O_NOFOLLOW: a symlink swapped in after realpath is not followed;
    // O_NONBLOCK: a FIFO swapped in does not block the open.
    UniqueFd fd(::open(canonical.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (fd.get() < 0) continue;
    struct stat sb;
    if (::fstat(fd.get(), &sb) != 0 || !S_ISREG(sb.st_mode) || OnPseudoFilesystem(fd.get())) continue;
    // Where the opened file really is: a directory renamed or swapped for a
    // symlink between realpath and open shows here.
    char buf[PATH_MAX + 1];
    std::string link = "/proc/self/fd/" + std::to_string(fd.get());
    ssize_t n = ::readlink(link.c_str(), buf, PATH_MAX);
    if (n <= 0) continue;
    std::string actual(buf, static_cast<size_t>(n));
    if (actual != canonical || !Under(actual)) continue;
    // Regular files only; reads never block, but keep the descriptor simple.
    int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    return OpenedModel{std::move(fd), canonical};
  }
  return refused;
}

}  // namespace gpucast::service
