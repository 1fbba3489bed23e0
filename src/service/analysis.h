// Analysing the service's graphs with bounded cost: every graph is loaded
// under LoadLimits (nodes, subgraph depth, bytes without weights, time), on a
// small pool of analysis threads separate from the HTTP workers with a
// bounded wait queue (a full queue is answered 503 at once), and the cost
// reports are cached by the SHA-256 of the graph's bytes without weights and
// the analysis inputs, within a byte budget. After a large analysis, freed
// memory goes back to the system (malloc_trim). The cache holds cost reports,
// which depend on the graph and on the cost code compiled into this binary,
// not on the predictor file: a predictor reload keeps it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cost/cost.h"
#include "graph/onnx_loader.h"
#include "util/status.h"

namespace gpucast::service {

struct AnalysisOptions {
  LoadLimits limits{.max_seconds = 10};  // load_limits.h defaults, and 10 s of analysis
  int threads = 2;                    // analyses running at once
  int queue = 4;                      // analyses waiting for a thread; more are refused (503)
  size_t cache_bytes = 64u << 20;     // cost reports kept, in (estimated) bytes
  size_t trim_after_bytes = 1u << 20; // memory is returned to the system after a graph this large
};

// What an analysis depends on besides the graph.
struct AnalysisInput {
  int64_t batch = 1;
  bool amp = false;
  std::map<std::string, int64_t> dims;
};

// Why an analysis failed, so that the caller can answer with the right status.
enum class AnalysisFailure {
  kNone,
  kNotAModel,  // not a readable ONNX file (empty, truncated, not a protobuf, not regular)
  kTooLarge,   // over the bytes limit (413)
  kLimit,      // over the nodes, depth or time limit (422)
  kBusy,       // every analysis thread busy and the queue full (503)
  kInvalid,    // an ONNX graph that cannot be analysed or costed (422, names the node)
};

// Runs tasks on `threads` threads; at most `queue` wait beyond those running.
class AnalysisPool {
 public:
  AnalysisPool(int threads, int queue);
  ~AnalysisPool();
  AnalysisPool(const AnalysisPool&) = delete;
  AnalysisPool& operator=(const AnalysisPool&) = delete;

  // Runs `task` on a pool thread and returns once it finished; returns false
  // at once, running nothing, when the pool is full.
  bool Run(const std::function<void()>& task);

  int running() const;
  int waiting() const;

 private:
  struct Item;
  void Work();
  const int threads_, queue_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item*> items_;  // GUARDED_BY(mu_)
  int running_ = 0;          // GUARDED_BY(mu_)
  bool stop_ = false;        // GUARDED_BY(mu_)
  std::vector<std::thread> workers_;
};

// One analysed forward+backward pass: a vector of one report, as the
// predictor takes it (shared with the cache, never copied per request).
using PassReport = std::shared_ptr<const std::vector<CostReport>>;

// The analysed graphs of the service (engine.cc uses it; shared across
// predictor reloads). Thread-safe.
class GraphAnalyzer {
 public:
  explicit GraphAnalyzer(const AnalysisOptions& opts);

  // One forward+backward pass of the graph in the open regular file `fd`
  // (read from offset 0), costed for prediction (every node costed). `name`
  // (as the client gave it) prefixes messages. *hit: from the cache.
  // On error *why says which kind (the message names the file, the node or
  // the limit and its flag).
  Result<PassReport> Analyze(int fd, const std::string& name, const AnalysisInput& in,
                                                    bool* hit, AnalysisFailure* why);

  struct Stats {
    size_t entries = 0, bytes = 0;  // cached reports and their estimated size
    int running = 0, waiting = 0;   // analyses now
  };
  Stats stats() const;
  const AnalysisOptions& options() const { return opts_; }

 private:
  using Key = std::tuple<std::string /*sha256 of the bytes without weights*/, int64_t /*batch*/, bool /*amp*/,
                         std::map<std::string, int64_t> /*dims*/>;
  struct Entry {
    PassReport report;
    size_t bytes = 0;
    std::list<Key>::iterator lru;
  };
  PassReport Find(const Key& key);
  void Put(const Key& key, PassReport report);

  const AnalysisOptions opts_;
  AnalysisPool pool_;
  mutable std::mutex mu_;
  std::list<Key> lru_;          // GUARDED_BY(mu_): most recent first
  std::map<Key, Entry> cache_;  // GUARDED_BY(mu_)
  size_t bytes_ = 0;            // GUARDED_BY(mu_)
};

// Estimated heap bytes of a cost report (the cache's budget counts these).
size_t ApproxBytes(const CostReport& r);

}  // namespace gpucast::service
