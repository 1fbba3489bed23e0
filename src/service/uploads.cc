#include "service/uploads.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <thread>

namespace gpucast::service {

namespace {

// Writes bytes to `path` atomically (temp file, fsync, rename).
Status WriteFileAtomic(const std::string& path, std::string_view bytes) {
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::Error("cannot store the uploaded model");
  bool ok = true;
  for (size_t off = 0; ok && off < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) off += static_cast<size_t>(n);
  }
  ok = ::fsync(fd) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::Error("cannot store the uploaded model");
  }
  return Status::Ok();
}

// At start, for UploadStore and ObservedGraphs: the regular files "<sha256>.onnx"
// in `dir` whose sha `keep` accepts, with their sizes; every other entry (a file
// no one names, an interrupted write, a link) is removed. Error `unreadable`
// when `dir` cannot be listed (nothing removed).
Result<std::map<std::string, size_t>> SweepGraphDir(const std::string& dir, const std::string& unreadable,
                                                    const std::function<bool(const std::string&)>& keep) {
  DIR* d = opendir(dir.c_str());
  if (!d) return Status::Error(unreadable);
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::map<std::string, size_t> kept;
  for (const std::string& n : names) {
    std::string sha = n.size() == 64 + 5 && n.compare(64, 5, ".onnx") == 0 ? n.substr(0, 64) : "";
    struct stat sb;
    const std::string path = dir + "/" + n;
    if (!sha.empty() && keep(sha) && lstat(path.c_str(), &sb) == 0 && S_ISREG(sb.st_mode)) {
      kept[sha] = static_cast<size_t>(sb.st_size);
    } else {
      std::remove(path.c_str());
    }
  }
  return kept;
}

}  // namespace

size_t UploadStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

Status UploadStore::Acquire(const std::string& sha, std::string_view bytes, int* http_status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sizes_.count(sha)) {
    ++refs_[sha];
    return Status::Ok();
  }
  if (bytes_ + bytes.size() > quota_) {
    *http_status = 507;
    return Status::Error("upload quota full: " + std::to_string(bytes_) + " of " + std::to_string(quota_) +
                         " bytes held by queued and running jobs (--upload-quota-bytes)");
  }
  Status st = WriteFileAtomic(Path(sha), bytes);
  if (!st.ok()) {
    *http_status = 500;
    return st;
  }
  sizes_[sha] = bytes.size();
  refs_[sha] = 1;
  bytes_ += bytes.size();
  return Status::Ok();
}

void UploadStore::Release(const std::string& sha) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = refs_.find(sha);
  if (it == refs_.end()) return;
  if (--it->second > 0) return;
  refs_.erase(it);
  std::remove(Path(sha).c_str());
  bytes_ -= sizes_[sha];
  sizes_.erase(sha);
}

void UploadStore::ReleaseJob(const JobSpec& spec) {
  const std::string prefix = kUploadPrefix;
  if (spec.model.rfind(prefix, 0) == 0) Release(spec.model.substr(prefix.size()));
}

Status UploadStore::Restore(const std::vector<Job>& live) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string prefix = kUploadPrefix;
  for (const Job& j : live) {
    if (j.spec.model.rfind(prefix, 0) == 0) ++refs_[j.spec.model.substr(prefix.size())];
  }
  // Files no live job refers to (and interrupted writes) go.
  ASSIGN_OR_RETURN(auto kept, SweepGraphDir(dir_, dir_ + ": cannot read upload directory",
                                            [this](const std::string& sha) { return refs_.count(sha) > 0; }));
  for (const auto& [sha, size] : kept) {
    sizes_[sha] = size;
    bytes_ += size;
  }
  // A job whose upload is gone keeps its record; nothing to hold for it.
  for (auto it = refs_.begin(); it != refs_.end();) {
    it = sizes_.count(it->first) ? std::next(it) : refs_.erase(it);
  }
  return Status::Ok();
}

Result<std::unique_ptr<ObservedGraphs>> ObservedGraphs::Open(const std::string& dir, size_t quota_bytes) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::Error(dir + ": cannot create: " + std::strerror(errno));
  }
  return std::unique_ptr<ObservedGraphs>(new ObservedGraphs(dir, quota_bytes));
}

Status ObservedGraphs::Keep(const std::string& sha, const std::string& upload_path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sizes_.count(sha)) return Status::Ok();
  struct stat sb;
  if (stat(upload_path.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    return Status::Error("upload " + sha.substr(0, 12) + "...: not stored any more");
  }
  const size_t size = static_cast<size_t>(sb.st_size);
  if (bytes_ + size > quota_) {
    return Status::Error("upload " + sha.substr(0, 12) + "... (" + std::to_string(size) + " bytes) not kept for "
                         "training: the observed graphs hold " + std::to_string(bytes_) + " bytes of the " +
                         std::to_string(quota_) + " --observed-graph-quota-bytes allows");
  }
  const std::string kept = dir_ + "/" + sha + ".onnx";
  if (link(upload_path.c_str(), kept.c_str()) != 0 && errno != EEXIST) {
    return Status::Error("upload " + sha.substr(0, 12) + "...: cannot keep it for training: " + std::strerror(errno));
  }
  sizes_[sha] = size;
  bytes_ += size;
  return Status::Ok();
}

Status ObservedGraphs::Restore(const std::set<std::string>& observed) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(auto kept, SweepGraphDir(dir_, dir_ + ": cannot read the observed graphs' directory",
                                            [&observed](const std::string& sha) { return observed.count(sha) > 0; }));
  sizes_.clear();
  bytes_ = 0;
  for (const auto& [sha, size] : kept) {
    sizes_[sha] = size;
    bytes_ += size;
  }
  return Status::Ok();
}

size_t ObservedGraphs::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace gpucast::service
