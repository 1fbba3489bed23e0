// Job traces: Philly, Alibaba GPU v2023, Gavel, or a generic CSV.
//
// Generic CSV format (any file path given to --trace): a header row with at
// least the columns submit_s,duration_s,num_gpus (seconds, seconds, GPUs);
// optional job_id (integer, each job's own: a repeated id is a bad line) and
// gpu_request (fraction of one GPU, 0-1].
// '#' lines are comments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "util/status.h"

namespace gpucast::sim {

// The longest run time of a job and the longest span of submit times a loader
// accepts (about 31.7 years; the real traces span months): beyond it a
// trace's times lose the precision the simulator's events need (1e300 + 100
// == 1e300), and --arrivals bootstrap would cut it into more day-blocks than
// memory holds. A longer one is an error naming the file (and the line).
inline constexpr double kMaxTraceSeconds = 1e9;

// The most lines a trace file may have (60x Philly's 82k jobs): a loader
// keeps a view of every line and a job for each, so this bounds the memory a
// trace takes before a job is simulated (a 256 MiB file of "0,1,1" lines held
// 40 million jobs). More is an error naming the file, before any row is read.
inline constexpr size_t kMaxTraceLines = 5'000'000;

struct TraceJob {
  int64_t id = 0;          // trace line order (0-based) or the job_id column
  double submit_s = 0;     // relative to the first submit of the (whole) trace
  double duration_s = 0;   // run time alone, > 0
  int num_gpus = 1;        // >= 1
  double gpu_request = 1;  // requested share of each GPU (Alibaba gpu_milli / 1000), else 1
  // The job type the trace names (Gavel's "ResNet-50 (batch size 32)"); the
  // simulator maps it to a measured workload (MapGavelJobType, interference.h).
  // Empty: the trace names none; the simulator draws one (seeded).
  std::string job_type{};
  int64_t source_id = -1;  // ResampleArrivals: the id of the trace job this one copies; else -1
  bool operator==(const TraceJob&) const = default;
};

struct TraceOptions {
  int64_t max_jobs = -1;        // keep the first N jobs by submit time; -1 = all
  bool skip_bad_lines = false;  // skip (and count) malformed lines instead of failing
};

struct Trace {
  std::string name;              // "philly", "alibaba2023", "gavel", or the file's base name
  std::vector<TraceJob> jobs;    // sorted by (submit_s, id)
  int64_t bad_lines = 0;         // malformed lines skipped (only with skip_bad_lines)
  int64_t filtered = 0;          // well-formed rows that are not GPU jobs (Alibaba CPU pods, no run time)
  int64_t approximated = 0;      // Gavel jobs whose multi-GPU throughput was not measured (1-GPU rate used)
  std::string default_cluster;   // --cluster spec used when none is given
};

// Loads a trace by name (philly, alibaba2023, gavel; files under data_dir) or
// by path to a generic CSV.
Result<Trace> LoadTrace(const std::string& name_or_path, const std::string& data_dir,
                        const TraceOptions& opt);

// The individual loaders, for tests: `path` is the file itself.
Result<Trace> LoadPhilly(const std::string& path, const TraceOptions& opt);
Result<Trace> LoadAlibaba(const std::string& pods_path, const TraceOptions& opt);
Result<Trace> LoadGavel(const std::string& trace_path, const std::string& throughputs_json,
                        const TraceOptions& opt);
Result<Trace> LoadGenericCsv(const std::string& path, const TraceOptions& opt);

// Compresses inter-arrival times by `factor` (> 0): every submit time is
// divided by it; durations are kept. The demand over the (shorter) window
// grows by the factor.
void ScaleArrivals(Trace* t, double factor);

// A seeded local block bootstrap of the arrival process: the trace is cut into
// blocks of block_s seconds of submit time (days by default); output block i
// is a copy of source block j drawn uniformly from [i - radius, i + radius]
// (clipped to the trace), each job keeping its offset in the block, its
// duration, GPUs and hints. So the number of jobs and their arrival times vary
// with the seed while the trace's slow trend (busy weeks, quiet weeks) stays.
// Jobs are renumbered 0..n-1 in submit order (source_id keeps the original id)
// and rebased to start at 0. A trace of one block comes back unchanged
// (source_id set).
Trace ResampleArrivals(const Trace& t, uint64_t seed, double block_s = 86400, int radius = 3);

// "YYYY-MM-DD HH:MM:SS" (UTC) -> seconds since 1970; nullopt if malformed.
std::optional<int64_t> ParseTimestamp(std::string_view s);

}  // namespace gpucast::sim
