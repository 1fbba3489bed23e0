#include "util/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

namespace gpucast {

namespace {

// Runs on the helper thread; never blocks on a FIFO (O_NONBLOCK, then the type check).
Result<std::string> ReadNow(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return Status::Error(path + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) return Status::Error(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file";
    return Status::Error(path + ": not a regular file (" + std::string(what) + ")");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return Status::Error(path + ": larger than " + std::to_string(max_bytes) + " bytes");
  }
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error(path + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) return Status::Error(path + ": larger than " + std::to_string(max_bytes) + " bytes");
  }
  return out;
}

}  // namespace

Result<std::string> ReadFileBounded(const std::string& path, size_t max_bytes, double timeout_s) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Result<std::string> result = Status::Error("not read");
  };
  auto shared = std::make_shared<Shared>();
  std::thread t([shared, path, max_bytes] {
    Result<std::string> r = ReadNow(path, max_bytes);
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->result = std::move(r);
    shared->done = true;
    shared->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(shared->mu);
  if (!shared->cv.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return shared->done; })) {
    lock.unlock();
    t.detach();  // it holds its own reference to `shared`; it ends when the file answers
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", timeout_s);
    return Status::Error(path + ": not read within " + std::string(secs) +
                         " s (a hung network or FUSE mount?); abandoned");
  }
  lock.unlock();
  t.join();
  return std::move(shared->result);
}

}  // namespace gpucast
