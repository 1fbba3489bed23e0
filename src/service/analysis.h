// Analysing the service's graphs with bounded cost: every graph is loaded
// under LoadLimits (nodes, subgraph depth, bytes without weights, time), on a
// small pool of analysis threads separate from the HTTP workers with a
// bounded wait queue (a full queue is answered 503 at once), and the cost
// reports are cached by the SHA-256 of the graph's bytes without weights and
// the analysis inputs, within a byte budget. After a large analysis, freed
// memory goes back to the system (malloc_trim). The cache holds cost reports,
// which depend on the graph and on the cost code compiled into this binary,
// not on the predictor file: a predictor reload keeps it.
//
// Bursts (issue 31 item 6: 60 pod reviews at once, a Deployment scaling up):
// identical analyses in flight are coalesced (same content digest and same
// inputs: one analysis, every caller gets its answer); the Kubernetes
// webhook's analyses (AnalysisClassScope) have threads of their own beside
// the shared ones, a queue of their own, and wait for a thread up to a
// deadline under the API server's webhook timeout instead of being refused
// at once; the queue is served round-robin by tenant (the pod's namespace),
// and a full queue makes room for a tenant with fewer waiting by refusing
// the newest of the tenant with most.
#pragma once

#include <climits>
#include <condition_variable>
#include <cstddef>
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
  // The Kubernetes webhook's analyses (AnalysisClassScope with webhook set):
  int webhook_threads = 2;            // threads that run only them, beside `threads`
  int webhook_queue = 64;             // of them waiting at once; more are refused (503)
  double webhook_wait_s = 8;          // longest one waits for a thread (then 503); under the API server's 10 s
};

// Who an analysis is for, set by the caller for its thread (the webhook: the
// pod's namespace, and how long it may wait); the default is an API client
// (tenant "", no waiting beyond the shared queue). The HTTP handler, the
// prediction path and the analysis run on one thread, so the route sets it
// once (routes_k8s.cc) without threading it through every layer between.
struct AnalysisClass {
  std::string tenant;    // fairness unit: the namespace ("" = API clients)
  bool webhook = false;  // a webhook analysis: its threads, its queue, webhook_wait_s
};
class AnalysisClassScope {
 public:
  explicit AnalysisClassScope(AnalysisClass c);
  ~AnalysisClassScope();
  AnalysisClassScope(const AnalysisClassScope&) = delete;
  AnalysisClassScope& operator=(const AnalysisClassScope&) = delete;
  // The calling thread's class (the innermost scope's, else the default).
  static const AnalysisClass& Current();

 private:
  AnalysisClass saved_;
};

// What an analysis depends on besides the graph.
struct AnalysisInput {
  int64_t batch = 1;
  bool amp = false;
  std::map<std::string, int64_t> dims;
  // Not part of what is analysed:
  double max_seconds = 0;   // > 0: this analysis's time limit, if below the options' (the client's deadline)
  // Cached reports are shared only within one scope: "" for graphs under the
  // model roots and uploads, "uid:N" for files read as a deputy's user, so
  // that a user cannot time the answer to learn that another user's graph
  // was analysed before.
  std::string cache_scope = "";
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

// Runs tasks on `threads` shared threads and `webhook_threads` threads that
// take only webhook tasks; at most `queue` API tasks and `webhook_queue`
// webhook tasks (and `queue_bytes` of their graphs) wait. Waiting tasks are
// taken round-robin by tenant.
class AnalysisPool {
 public:
  AnalysisPool(int threads, int queue, int webhook_threads = 0, int webhook_queue = 0, double webhook_wait_s = 0,
               size_t queue_bytes = SIZE_MAX);
  ~AnalysisPool();
  AnalysisPool(const AnalysisPool&) = delete;
  AnalysisPool& operator=(const AnalysisPool&) = delete;

  enum class Outcome {
    kRan,       // `task` ran on a pool thread and finished
    kFull,      // the queue was full (or the task was pushed out for a tenant with fewer waiting): nothing ran
    kTimedOut,  // a webhook task waited webhook_wait_s for a thread: nothing ran
  };
  // Runs `task` (whose graph holds `bytes`) on a pool thread and returns
  // once it finished, or without running it.
  Outcome Run(const std::function<void()>& task, const AnalysisClass& cls, size_t bytes = 0);
  // An API task: true if it ran.
  bool Run(const std::function<void()>& task) { return Run(task, AnalysisClass{}) == Outcome::kRan; }

  int running() const;
  int waiting() const;

 private:
  struct Item;
  void Work(bool webhook_only);
  Item* TakeLocked(bool webhook_only);  // REQUIRES: mu_ held
  void RemoveLocked(Item* item);        // REQUIRES: mu_ held
  const int threads_, queue_, webhook_threads_, webhook_queue_;
  const double webhook_wait_s_;
  const size_t queue_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // workers: an item is queued
  std::condition_variable done_cv_;  // callers: an item finished or was pushed out
  std::map<std::string, std::deque<Item*>> queues_;  // GUARDED_BY(mu_): by tenant
  std::string last_tenant_;          // GUARDED_BY(mu_): round-robin position
  int api_waiting_ = 0, webhook_waiting_ = 0;  // GUARDED_BY(mu_)
  size_t waiting_bytes_ = 0;         // GUARDED_BY(mu_)
  int running_ = 0;                  // GUARDED_BY(mu_)
  int running_shared_ = 0;           // GUARDED_BY(mu_): of them on the shared threads
  bool stop_ = false;                // GUARDED_BY(mu_)
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
    int64_t analysed = 0;           // analyses run (not cache hits, not coalesced)
    int64_t coalesced = 0;          // callers answered by another caller's analysis in flight
  };
  Stats stats() const;
  const AnalysisOptions& options() const { return opts_; }

 private:
  using Key = std::tuple<std::string /*sha256 of the bytes without weights*/, int64_t /*batch*/, bool /*amp*/,
                         std::map<std::string, int64_t> /*dims*/, std::string /*cache_scope*/>;
  struct Entry {
    PassReport report;
    size_t bytes = 0;
    std::list<Key>::iterator lru;
  };
  // One analysis in flight; callers of the same key wait for it.
  struct Flight {
    bool done = false;
    Result<PassReport> out = Status::Error("not analysed");
    AnalysisFailure why = AnalysisFailure::kNone;
    std::string name;  // the leader's name for the file (its messages start with it)
  };
  PassReport Find(const Key& key);
  void Put(const Key& key, PassReport report);

  const AnalysisOptions opts_;
  AnalysisPool pool_;
  mutable std::mutex mu_;
  std::condition_variable flight_cv_;
  std::list<Key> lru_;          // GUARDED_BY(mu_): most recent first
  std::map<Key, Entry> cache_;  // GUARDED_BY(mu_)
  size_t bytes_ = 0;            // GUARDED_BY(mu_)
  std::map<Key, std::shared_ptr<Flight>> flights_;  // GUARDED_BY(mu_)
  int64_t analysed_ = 0, coalesced_ = 0;            // GUARDED_BY(mu_)
};

// Estimated heap bytes of a cost report (the cache's budget counts these).
size_t ApproxBytes(const CostReport& r);

}  // namespace gpucast::service
