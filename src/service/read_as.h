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

#include <string>

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
// message for both) or the service (it cannot take another user's identity:
// an operator's problem, not the user's).
enum class ReadAsFailure { kNone, kUnreadable, kServiceCannot };

// Opens `path` (absolute) for reading as `who`, with the user's supplementary
// groups from the group database (getgrouplist of the uid's passwd name).
// REQUIRES: CheckReadAsIdentity(who, ...) passed. Paths under /proc, /sys
// and /dev are refused before anything is opened, files on a pseudo
// filesystem after; the opened file must be a regular file. Returns its
// descriptor and where it is (symlinks resolved). On error *failure says
// which kind; every file refused gets UnreadableAsUser's message.
Result<OpenedModel> OpenAsUser(const std::string& path, ReadAs who, ReadAsFailure* failure);

// Whether this process can take another user's filesystem identity (checked
// once at start, to warn the operator).
Status CanReadAsOtherUsers();

}  // namespace gpucast::service
