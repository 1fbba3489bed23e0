#include "service/read_as.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "graph/onnx_wire.h"

namespace gpucast::service {

namespace {

constexpr size_t kMaxPath = 4096;

std::string Unreadable(const std::string& path, uid_t uid) { return UnreadableAsUser(path, uid); }

std::string Shown(const std::string& path) { return path.size() > 512 ? path.substr(0, 512) + "..." : path; }

std::string TooSlow(const std::string& path, uid_t uid, double seconds) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", seconds);
  return "model '" + Shown(path) + "': reading it as uid " + std::to_string(uid) + " did not finish within " + s +
         " s (a hung or slow filesystem?)";
}

// The user's groups as the login path would set them: the passwd entry's
// primary group and getgrouplist of its name. false: no passwd entry (or the
// group database cannot be read).
bool GroupsOf(uid_t uid, std::vector<gid_t>* groups) {
  std::vector<char> buf(16384);
  struct passwd pw, *found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return false;
  int n = 32;
  groups->assign(static_cast<size_t>(n), 0);
  for (int tries = 0; tries < 8; ++tries) {
    int want = n;
    if (getgrouplist(pw.pw_name, pw.pw_gid, groups->data(), &want) >= 0) {
      groups->resize(static_cast<size_t>(want));
      return true;
    }
    n = want > n ? want : n * 2;
    groups->assign(static_cast<size_t>(n), 0);
  }
  return false;
}

// In the calling thread only: takes the filesystem identity (uid, gid,
// groups) and drops every effective capability, so that the kernel checks
// access exactly as for that user. Returns errno-style failure (0 = done).
int BecomeForFiles(uid_t uid, gid_t gid, const std::vector<gid_t>& groups) {
  // Raw syscalls: glibc's setgroups/setfsuid wrappers would change (or, for
  // setgroups, broadcast to) every thread of the process.
  if (syscall(SYS_setgroups, groups.size(), groups.data()) != 0) return errno ? errno : EPERM;
  syscall(SYS_setfsgid, gid);
  if (static_cast<gid_t>(syscall(SYS_setfsgid, static_cast<gid_t>(-1))) != gid) return EPERM;
  syscall(SYS_setfsuid, uid);
  if (static_cast<uid_t>(syscall(SYS_setfsuid, static_cast<uid_t>(-1))) != uid) return EPERM;
  // From fsuid 0 the kernel already cleared the DAC capabilities; a service
  // run as another uid with capabilities keeps them, so drop them all here.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return errno ? errno : EPERM;
  for (auto& d : data) d.effective = 0;
  if (syscall(SYS_capset, &header, data) != 0) return errno ? errno : EPERM;
  return 0;
}

}  // namespace

Result<ReadAs> ParseReadAs(const std::string& header) {
  auto number = [](const std::string& s, const char* what) -> Result<unsigned long> {
    if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) {
      return Status::Error(std::string("X-Gpucast-Read-As: ") + what + " '" + s.substr(0, 16) +
                           "' is not a decimal number");
    }
    unsigned long v = std::stoul(s);
    if (v >= (1ul << 31)) return Status::Error(std::string("X-Gpucast-Read-As: ") + what + " out of range");
    return v;
  };
  const size_t colon = header.find(':');
  if (colon == std::string::npos) return Status::Error("X-Gpucast-Read-As: want UID:GID");
  ASSIGN_OR_RETURN(unsigned long uid, number(header.substr(0, colon), "uid"));
  ASSIGN_OR_RETURN(unsigned long gid, number(header.substr(colon + 1), "gid"));
  return ReadAs{static_cast<uid_t>(uid), static_cast<gid_t>(gid)};
}

std::string UnreadableAsUser(const std::string& path, uid_t uid) {
  const std::string u = std::to_string(uid);
  const std::string shown = Shown(path);
  return "model '" + shown + "': cannot be read as uid " + u + " (it does not exist, uid " + u +
         " may not read it, or it is not a model file)";
}

Status CheckReadAsIdentity(ReadAs who, uid_t min_uid) {
  const std::string u = std::to_string(who.uid);
  if (who.uid == 0) return Status::Error("X-Gpucast-Read-As: uid 0: the service never reads files as root");
  if (who.uid < min_uid) {
    return Status::Error("X-Gpucast-Read-As: uid " + u + " is below the lowest uid files are read as (" +
                         std::to_string(min_uid) + ", gpucast serve --deputy-min-uid)");
  }
  std::vector<gid_t> groups;
  if (!GroupsOf(who.uid, &groups)) {
    return Status::Error("X-Gpucast-Read-As: uid " + u + " has no account on the service's host");
  }
  for (gid_t g : groups) {
    if (g == who.gid) return Status::Ok();
  }
  return Status::Error("X-Gpucast-Read-As: gid " + std::to_string(who.gid) + " is not a group of uid " + u);
}

namespace {

std::mutex g_reader_mu;
DeputyReader g_reader;            // GUARDED_BY(g_reader_mu); empty: the real one
std::atomic<int> g_hung{0};       // reads whose caller gave up, still running

DeputyReader CurrentReader() {
  std::lock_guard<std::mutex> lock(g_reader_mu);
  if (g_reader) return g_reader;
  return [](int fd, std::chrono::steady_clock::time_point deadline, LoadFailure* why) {
    WireLimits limits;
    limits.max_kept_bytes = kDeputyMaxGraphBytes;
    limits.deadline = deadline;
    return ReadModelBytesWithoutWeightsFromFd(fd, limits, why);
  };
}

// What the reading thread found; shared with it, since it may outlive the caller.
struct PendingRead {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;        // GUARDED_BY(mu)
  bool abandoned = false;   // GUARDED_BY(mu): the caller's deadline passed first
  int become_error = 0;
  bool opened = false;      // a regular file, not on a pseudo filesystem
  std::string where;        // where it is, symlinks resolved
  Result<std::string> bytes = Status::Error("not read");
  LoadFailure why = LoadFailure::kNone;
};

// On the reading thread, as the user: open, check, read the bytes without weights.
void ReadAsUserNow(PendingRead* st, const std::string& path, ReadAs who, const std::vector<gid_t>& groups,
                   std::chrono::steady_clock::time_point deadline, const DeputyReader& reader) {
  st->become_error = BecomeForFiles(who.uid, who.gid, groups);
  if (st->become_error != 0) return;
  // O_NONBLOCK: a FIFO does not block the open; O_NOCTTY: a terminal is not adopted.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  struct stat sb;
  if (fd.get() < 0 || ::fstat(fd.get(), &sb) != 0 || !S_ISREG(sb.st_mode) || OnPseudoFilesystem(fd.get())) return;
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  char buf[PATH_MAX + 1];
  const std::string link = "/proc/self/fd/" + std::to_string(fd.get());
  ssize_t n = ::readlink(link.c_str(), buf, PATH_MAX);
  st->where = n > 0 ? std::string(buf, static_cast<size_t>(n)) : path;
  if (IsSystemPath(st->where)) return;
  st->opened = true;
  st->bytes = reader(fd.get(), deadline, &st->why);
}

}  // namespace

int HungDeputyReads() { return g_hung.load(); }

void SetDeputyReaderForTesting(DeputyReader reader) {
  std::lock_guard<std::mutex> lock(g_reader_mu);
  g_reader = std::move(reader);
}

Result<OpenedModel> OpenAsUser(const std::string& path, ReadAs who, ReadAsFailure* failure, double seconds) {
  using Clock = std::chrono::steady_clock;
  *failure = ReadAsFailure::kUnreadable;
  if (path.empty() || path[0] != '/' || path.size() > kMaxPath || path.find('\0') != std::string::npos ||
      IsSystemPath(path)) {
    return Status::Error(Unreadable(path, who.uid));
  }
  std::vector<gid_t> groups;
  if (!GroupsOf(who.uid, &groups)) return Status::Error(Unreadable(path, who.uid));
  if (g_hung.load() >= kMaxHungDeputyReads) {
    *failure = ReadAsFailure::kBusy;
    return Status::Error("the service has " + std::to_string(g_hung.load()) + " reads of users' model files that " +
                         "did not return (a hung filesystem?); refused until they do: retry later");
  }
  if (!(seconds > 0) || seconds > kDeputyReadSeconds) seconds = kDeputyReadSeconds;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  auto st = std::make_shared<PendingRead>();
  try {
    // The identity dies with the thread: nothing to restore. Detached: a read
    // that never returns (FUSE, NFS) keeps only this thread.
    std::thread([st, path, who, groups, deadline, reader = CurrentReader()] {
      ReadAsUserNow(st.get(), path, who, groups, deadline, reader);
      std::lock_guard<std::mutex> lock(st->mu);
      st->done = true;
      if (st->abandoned) g_hung.fetch_sub(1);
      st->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    *failure = ReadAsFailure::kServiceCannot;
    return Status::Error(std::string("cannot start a thread to read as the user: ") + e.what());
  }
  {
    std::unique_lock<std::mutex> lock(st->mu);
    if (!st->cv.wait_until(lock, deadline, [&] { return st->done; })) {
      st->abandoned = true;
      g_hung.fetch_add(1);
      *failure = ReadAsFailure::kTimeout;
      return Status::Error(TooSlow(path, who.uid, seconds));
    }
  }
  if (st->become_error != 0) {
    *failure = ReadAsFailure::kServiceCannot;
    return Status::Error(std::string("the service cannot take uid ") + std::to_string(who.uid) +
                         "'s file identity (" + std::strerror(st->become_error) +
                         "): run it as root or with CAP_SETUID and CAP_SETGID");
  }
  if (!st->opened) return Status::Error(Unreadable(path, who.uid));
  if (!st->bytes.ok()) {
    if (st->why == LoadFailure::kTimeout) {
      *failure = ReadAsFailure::kTimeout;
      return Status::Error(TooSlow(path, who.uid, seconds));
    }
    if (IsLimit(st->why)) {
      *failure = ReadAsFailure::kTooLarge;
      return Status::Error(Shown(path) + ": " + st->bytes.message());
    }
    // Not an ONNX model: the one message (the user learns nothing of a file it cannot read).
    return Status::Error(Unreadable(path, who.uid));
  }
  // The bytes in an anonymous in-memory file: the analysis reads them there.
  UniqueFd mem(static_cast<int>(::syscall(SYS_memfd_create, "gpucast-deputy-model", MFD_CLOEXEC)));
  if (mem.get() < 0) {
    *failure = ReadAsFailure::kServiceCannot;
    return Status::Error(std::string("cannot create an in-memory file (memfd_create: ") + std::strerror(errno) + ")");
  }
  const std::string& b = *st->bytes;
  for (size_t off = 0; off < b.size();) {
    ssize_t w = ::write(mem.get(), b.data() + off, b.size() - off);
    if (w <= 0) {
      *failure = ReadAsFailure::kServiceCannot;
      return Status::Error(std::string("cannot write an in-memory file: ") + std::strerror(errno));
    }
    off += static_cast<size_t>(w);
  }
  ::lseek(mem.get(), 0, SEEK_SET);
  *failure = ReadAsFailure::kNone;
  return OpenedModel{std::move(mem), st->where};
}

Status CanReadAsOtherUsers() {
  int err = 0;
  try {
    std::thread probe([&] {
      const uid_t nobody = 65534;
      err = BecomeForFiles(nobody, nobody, {nobody});
    });
    probe.join();
  } catch (const std::system_error& e) {
    return Status::Error(std::string("cannot start a thread: ") + e.what());
  }
  if (err != 0) {
    return Status::Error(std::string("cannot take another user's file identity (") + std::strerror(err) +
                         "): run gpucast serve as root or with CAP_SETUID and CAP_SETGID");
  }
  return Status::Ok();
}

}  // namespace gpucast::service
