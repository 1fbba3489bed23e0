// Reading a small file (a key, a certificate) so that nothing can make the
// caller wait: the file is opened without blocking (O_NONBLOCK, so a FIFO
// cannot hold the open) and refused unless it is a regular file, read up to
// a size limit, and the open and the reads run on a helper thread that the
// caller abandons at a deadline (a hung NFS or FUSE mount then costs that
// thread, never the caller: a SIGHUP reload, a shutdown).
#pragma once

#include <cstddef>
#include <string>

#include "util/status.h"

namespace gpucast {

// The whole file at `path`. Errors name the path and the reason: not a
// regular file (a FIFO, a device, a directory), larger than `max_bytes`,
// cannot be opened or read (strerror), not read within `timeout_s` seconds.
Result<std::string> ReadFileBounded(const std::string& path, size_t max_bytes, double timeout_s);

}  // namespace gpucast
