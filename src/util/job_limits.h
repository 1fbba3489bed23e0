// Bounds of a job's inputs that every front end applies alike: `gpucast predict` and
// `analyze` (--batch, --gpus, --nodes, --dim), the service's fields and query parameters
// (batch, gpus, nodes, dims; the Kubernetes webhook's annotations go through them), and
// the Slurm plugin (integrations/slurm/job_submit.lua keeps the same numbers; its
// plugin_test.sh checks them). A job the CLI accepts is one the service accepts.
#pragma once

#include <cstdint>

namespace gpucast {

inline constexpr int64_t kMaxJobBatch = int64_t{1} << 24;  // samples per GPU per step
inline constexpr int64_t kMaxJobGpus = 1024;               // data-parallel ranks, and nodes
inline constexpr int64_t kMaxJobDim = int64_t{1} << 24;    // one symbolic dimension's value

}  // namespace gpucast
