// Opening a model file with another user's filesystem credentials, for a
// trusted deputy (slurmctld's job_submit.lua in service mode) that submits on
// a user's behalf: the kernel decides what that user may read, exactly as if
// the user had opened the file (mode bits, ACLs, supplementary groups,
// LSMs), so the service never reads a file for a user who could not.
//
// How: a short-lived thread sets its own fsuid, fsgid and supplementary
// groups (raw syscalls: per thread, unlike glibc's process-wide wrappers),
// drops every effective capability, opens the file and exits. The process
// needs CAP_SETUID and CAP_SETGID (root, or a unit with those capabilities).
// docs/security.md "Reading as the submitting user".
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>

#include "graph/load_limits.h"
#include "service/model_roots.h"
#include "util/status.h"

namespace gpucast::service {

// The uid:gid a deputy names in the X-Gpucast-Read-As header ("1000:1000").
struct ReadAs {
  uid_t uid = 0;
  gid_t gid = 0;
};

// Parses "UID:GID" (decimal, no sign, each < 2^31). Errors say what is wrong.
Result<ReadAs> ParseReadAs(const std::string& header);

// Whether the service reads files as `who` at all: never as uid 0, never
// below `min_uid` (gpucast serve --deputy-min-uid), only for a uid with an
// account (passwd entry) on this host, and only with a gid that is the
// account's primary group or one of its groups (from the group database,
// never believed from the claim). Errors name the rule.
Status CheckReadAsIdentity(ReadAs who, uid_t min_uid);

// The one message for a file a user cannot have analysed, whatever the
// reason (absent, unreadable, a directory, a FIFO, /proc, /sys, not an ONNX
// model): "model 'P': cannot be read as uid U (it does not exist, uid U may
// not read it, or it is not a model file)".
std::string UnreadableAsUser(const std::string& path, uid_t uid);

// Why OpenAsUser failed: the file (absent or not readable by that user; one
// message for both), the read's deadline (a file on a hung filesystem: FUSE,
// NFS), too many earlier reads still hanging, a graph over the reader's
// bytes limit, or the service (it cannot take another user's identity: an
// operator's problem, not the user's).
enum class ReadAsFailure { kNone, kUnreadable, kTimeout, kBusy, kTooLarge, kServiceCannot };

// How long OpenAsUser waits for the open and the read, unless the caller
// gives less (the deputy's client sends its own deadline).
inline constexpr double kDeputyReadSeconds = 5;
// Reads still hanging after their caller gave up (threads blocked in the
// kernel cannot be stopped); at this many, OpenAsUser refuses at once
// (kBusy) until one returns.
inline constexpr int kMaxHungDeputyReads = 8;
// The graph bytes (without weights, onnx_wire.h) OpenAsUser keeps; the
// analysis applies its own, lower limit (gpucast serve --max-graph-bytes).
inline constexpr int64_t kDeputyMaxGraphBytes = 64 << 20;

// Opens `path` (absolute) for reading as `who`, with the user's supplementary
// groups from the group database (getgrouplist of the uid's passwd name),
// and reads the model's bytes without weight payloads (onnx_wire.h) into an
// anonymous in-memory file. REQUIRES: CheckReadAsIdentity(who, ...) passed.
// Paths under /proc, /sys and /dev are refused before anything is opened,
// files on a pseudo filesystem after; the opened file must be a regular file.
// The open and the read run on a thread of their own and are waited for at
// most `seconds` (capped at kDeputyReadSeconds): a file that never answers
// (a hung FUSE or NFS mount) costs the caller that long, never a worker for
// good; while kMaxHungDeputyReads such reads hang, every call is refused at
// once. Returns the in-memory file (the analysis reads it: nothing it reads
// can block) and where the file is (symlinks resolved). On error *failure
// says which kind; every file refused, and a file that is not an ONNX model,
// gets UnreadableAsUser's message.
Result<OpenedModel> OpenAsUser(const std::string& path, ReadAs who, ReadAsFailure* failure,
                               double seconds = kDeputyReadSeconds);

// Reads that outlived their caller's deadline and have not returned yet.
int HungDeputyReads();

// Tests only: replaces the read of the opened file (a reader that blocks
// stands for a hung filesystem); nullptr restores the real one. The reader
// gets the open descriptor and the deadline and returns the bytes.
using DeputyReader = std::function<Result<std::string>(int fd, std::chrono::steady_clock::time_point deadline,
                                                        LoadFailure* why)>;
void SetDeputyReaderForTesting(DeputyReader reader);

// Whether this process can take another user's filesystem identity (checked
// once at start, to warn the operator).
Status CanReadAsOtherUsers();

}  // namespace gpucast::service
