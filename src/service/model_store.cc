#include "service/model_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "service/sha256.h"

namespace gpucast::service {

namespace {

constexpr size_t kMaxModelBytes = 1ull << 31;

Status NotStored(const std::string& name) {
  return Status::Error("model '" + name.substr(0, 80) + "': no model stored under this digest (POST /v1/models "
                       "stores one)");
}

}  // namespace

bool IsContentAddress(std::string_view name) {
  if (name.size() != 7 + 64 || name.substr(0, 7) != kContentPrefix) return false;
  for (char c : name.substr(7)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<std::unique_ptr<ModelStore>> ModelStore::Open(const std::string& dir, size_t quota_bytes) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::Error(dir + ": cannot create the model store: " + std::strerror(errno));
  }
  std::unique_ptr<ModelStore> s(new ModelStore(dir, quota_bytes));
  DIR* d = ::opendir(dir.c_str());
  if (!d) return Status::Error(dir + ": cannot read the model store: " + std::strerror(errno));
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    struct stat st {};
    if (n.size() == 64 + 5 && n.substr(64) == ".onnx" && ::stat((dir + "/" + n).c_str(), &st) == 0 &&
        S_ISREG(st.st_mode)) {
      s->bytes_ += static_cast<size_t>(st.st_size);
    } else if (n.rfind(".tmp.", 0) == 0) {
      ::unlink((dir + "/" + n).c_str());  // an interrupted Put
    }
  }
  ::closedir(d);
  return s;
}

Result<std::string> ModelStore::Put(std::string_view bytes, bool* created, int* http_status) {
  const std::string name = kContentPrefix + Sha256Hex(bytes);
  const std::string path = PathOf(name);
  std::lock_guard<std::mutex> lock(mu_);
  *created = false;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) == bytes.size()) {
    return name;
  }
  if (bytes_ + bytes.size() > quota_) {
    *http_status = 507;
    return Status::Error("the model store is full (" + std::to_string(bytes_) + " of " + std::to_string(quota_) +
                         " bytes used; the operator removes models from " + dir_ + ")");
  }
  const std::string tmp = dir_ + "/.tmp." + name.substr(7);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  bool ok = fd >= 0;
  size_t off = 0;
  while (ok && off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n <= 0) ok = false;
    else off += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    ::unlink(tmp.c_str());
    *http_status = 500;
    return Status::Error("the model could not be stored");
  }
  bytes_ += bytes.size();
  *created = true;
  return name;
}

Result<OpenedModel> ModelStore::Open(const std::string& name) const {
  if (!IsContentAddress(name)) return NotStored(name);
  OpenedModel m;
  m.path = PathOf(name);
  m.fd = UniqueFd(::open(m.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (m.fd.get() < 0 || ::fstat(m.fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<size_t>(st.st_size) > kMaxModelBytes) {
    return NotStored(name);
  }
  // The content must still be what its name says.
  Sha256 h;
  char buf[1 << 16];
  ssize_t n;
  off_t at = 0;
  while ((n = ::pread(m.fd.get(), buf, sizeof buf, at)) > 0) {
    h.Update(std::string_view(buf, static_cast<size_t>(n)));
    at += n;
  }
  static const char* hex = "0123456789abcdef";
  std::string got;
  for (uint8_t b : h.Finish()) {
    got += hex[b >> 4];
    got += hex[b & 15];
  }
  if (n < 0 || got != name.substr(7)) {
    return Status::Error("model '" + name + "': the stored file's content does not match its digest (changed on "
                         "disk; store it again)");
  }
  return m;
}

int64_t ModelStore::Size(const std::string& name) const {
  if (!IsContentAddress(name)) return -1;
  struct stat st {};
  if (::stat(PathOf(name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return st.st_size;
}

size_t ModelStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace gpucast::service
