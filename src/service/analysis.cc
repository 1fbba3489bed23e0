#include "service/analysis.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>

#include "cost/job_cost.h"
#include "service/sha256.h"

namespace gpucast::service {

// ---------------------------------------------------------------- class

namespace {
thread_local AnalysisClass current_class;
}  // namespace

AnalysisClassScope::AnalysisClassScope(AnalysisClass c) : saved_(std::move(current_class)) {
  current_class = std::move(c);
}
AnalysisClassScope::~AnalysisClassScope() { current_class = std::move(saved_); }
const AnalysisClass& AnalysisClassScope::Current() { return current_class; }

// ---------------------------------------------------------------- pool

struct AnalysisPool::Item {
  const std::function<void()>* task;
  std::string tenant;
  bool webhook = false;
  size_t bytes = 0;
  enum class St { kQueued, kRunning, kDone, kPushedOut } st = St::kQueued;
};

AnalysisPool::AnalysisPool(int threads, int queue, int webhook_threads, int webhook_queue, double webhook_wait_s,
                           size_t queue_bytes)
    : threads_(std::max(1, threads)),
      queue_(std::max(0, queue)),
      webhook_threads_(std::max(0, webhook_threads)),
      webhook_queue_(std::max(0, webhook_queue)),
      webhook_wait_s_(std::max(0.0, webhook_wait_s)),
      queue_bytes_(queue_bytes) {
  for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { Work(false); });
  for (int i = 0; i < webhook_threads_; ++i) workers_.emplace_back([this] { Work(true); });
}

AnalysisPool::~AnalysisPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void AnalysisPool::RemoveLocked(Item* item) {
  std::deque<Item*>& q = queues_[item->tenant];
  q.erase(std::find(q.begin(), q.end(), item));
  if (q.empty()) queues_.erase(item->tenant);
  (item->webhook ? webhook_waiting_ : api_waiting_) -= 1;
  waiting_bytes_ -= item->bytes;
}

AnalysisPool::Outcome AnalysisPool::Run(const std::function<void()>& task, const AnalysisClass& cls, size_t bytes) {
  using Clock = std::chrono::steady_clock;
  Item item{&task, cls.tenant, cls.webhook, bytes};
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_) return Outcome::kFull;
  if (!item.webhook) {
    // An API task: admitted while a shared thread is free or the queue has room.
    if (running_shared_ + api_waiting_ >= threads_ + queue_) return Outcome::kFull;
  } else {
    const bool bytes_ok = webhook_waiting_ == 0 || waiting_bytes_ + bytes <= queue_bytes_;
    if (webhook_waiting_ >= webhook_queue_ || !bytes_ok) {
      // Full: room is made only for a tenant with fewer waiting than the
      // tenant with most, whose newest webhook task is refused instead.
      const std::deque<Item*>* mine = queues_.count(cls.tenant) ? &queues_[cls.tenant] : nullptr;
      const size_t have = mine ? mine->size() : 0;
      Item* victim = nullptr;
      size_t most = have + 2;  // more waiting than this tenant would have after the swap
      for (auto& [tenant, q] : queues_) {
        if (tenant == cls.tenant || q.size() < most) continue;
        for (auto it = q.rbegin(); it != q.rend(); ++it) {
          if ((*it)->webhook) {
            victim = *it;
            most = q.size();
            break;
          }
        }
      }
      if (!victim || webhook_queue_ == 0) return Outcome::kFull;
      RemoveLocked(victim);
      victim->st = Item::St::kPushedOut;
      done_cv_.notify_all();
    }
  }
  queues_[item.tenant].push_back(&item);
  (item.webhook ? webhook_waiting_ : api_waiting_) += 1;
  waiting_bytes_ += bytes;
  cv_.notify_all();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(item.webhook ? webhook_wait_s_ : 0));
  for (;;) {
    if (item.st == Item::St::kDone) return Outcome::kRan;
    if (item.st == Item::St::kPushedOut) return Outcome::kFull;
    if (item.st == Item::St::kQueued && item.webhook && Clock::now() >= deadline) {
      RemoveLocked(&item);
      return Outcome::kTimedOut;
    }
    if (item.st == Item::St::kQueued && item.webhook) {
      done_cv_.wait_until(lock, deadline);
    } else {
      done_cv_.wait(lock);  // running (bounded by the analysis time limit), or an API task queued
    }
  }
}

AnalysisPool::Item* AnalysisPool::TakeLocked(bool webhook_only) {
  // Round-robin: the first tenant after the last one served that has a task this thread may take.
  if (queues_.empty()) return nullptr;
  auto start = queues_.upper_bound(last_tenant_);
  for (size_t n = 0; n < 2 * queues_.size() + 1; ++n) {
    if (start == queues_.end()) start = queues_.begin();
    for (Item* it : start->second) {
      if (!webhook_only || it->webhook) {
        last_tenant_ = start->first;
        RemoveLocked(it);  // may erase `start`: nothing of it is used after
        return it;
      }
    }
    ++start;
  }
  return nullptr;
}

void AnalysisPool::Work(bool webhook_only) {
  for (;;) {
    Item* item = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || (item = TakeLocked(webhook_only)) != nullptr; });
      if (!item) return;  // stopping
      item->st = Item::St::kRunning;
      ++running_;
      if (!webhook_only) ++running_shared_;
    }
    (*item->task)();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
      if (!webhook_only) --running_shared_;
      item->st = Item::St::kDone;  // `item` lives on the waiting caller's stack: last use
    }
    done_cv_.notify_all();
  }
}

int AnalysisPool::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

int AnalysisPool::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return api_waiting_ + webhook_waiting_;
}

// ---------------------------------------------------------------- analyzer

size_t ApproxBytes(const CostReport& r) {
  size_t n = sizeof(CostReport) + r.path.capacity() + r.first_uncosted.capacity();
  for (const NodeCost& c : r.nodes) {
    n += sizeof(NodeCost) + c.name.capacity() + c.op_type.capacity() + c.saved_tensors.capacity() * sizeof(int64_t);
    for (const auto* shapes : {&c.input_shapes, &c.output_shapes}) {
      n += shapes->capacity() * sizeof(std::vector<int64_t>);
      for (const auto& s : *shapes) n += s.capacity() * sizeof(int64_t);
    }
  }
  for (const Unsupported& u : r.unsupported) n += sizeof(Unsupported) + u.op_type.capacity() + u.reason.capacity();
  return n;
}

GraphAnalyzer::GraphAnalyzer(const AnalysisOptions& opts)
    : opts_(opts),
      pool_(opts.threads, opts.queue, opts.webhook_threads, opts.webhook_queue, opts.webhook_wait_s,
            4 * static_cast<size_t>(std::max<int64_t>(opts.limits.max_graph_bytes, 1))) {}

PassReport GraphAnalyzer::Find(const Key& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.report;
}

void GraphAnalyzer::Put(const Key& key, PassReport report) {
  const size_t bytes = ApproxBytes(report->front());
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > opts_.cache_bytes || cache_.count(key)) return;
  lru_.push_front(key);
  cache_[key] = {std::move(report), bytes, lru_.begin()};
  bytes_ += bytes;
  while (bytes_ > opts_.cache_bytes && !lru_.empty()) {
    auto it = cache_.find(lru_.back());
    bytes_ -= it->second.bytes;
    cache_.erase(it);
    lru_.pop_back();
  }
}

GraphAnalyzer::Stats GraphAnalyzer::stats() const {
  Stats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.entries = cache_.size();
    s.bytes = bytes_;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.analysed = analysed_;
    s.coalesced = coalesced_;
  }
  s.running = pool_.running();
  s.waiting = pool_.waiting();
  return s;
}

namespace {

AnalysisFailure FromLoad(LoadFailure f) {
  switch (f) {
    case LoadFailure::kNone: return AnalysisFailure::kNone;
    case LoadFailure::kNotAModel: return AnalysisFailure::kNotAModel;
    case LoadFailure::kTooLarge: return AnalysisFailure::kTooLarge;
    case LoadFailure::kTooManyNodes:
    case LoadFailure::kTooManyEntries:
    case LoadFailure::kTooDeep:
    case LoadFailure::kTimeout: return AnalysisFailure::kLimit;
    case LoadFailure::kInvalid: return AnalysisFailure::kInvalid;
  }
  return AnalysisFailure::kInvalid;
}

}  // namespace

Result<PassReport> GraphAnalyzer::Analyze(int fd, const std::string& name, const AnalysisInput& in, bool* hit,
                                          AnalysisFailure* why) {
  using Clock = std::chrono::steady_clock;
  *hit = false;
  *why = AnalysisFailure::kNotAModel;
  const Clock::time_point start = Clock::now();
  LoadOptions lo;
  lo.batch = in.batch;
  lo.dims = in.dims;
  lo.limits = opts_.limits;
  if (in.max_seconds > 0 && (lo.limits.max_seconds <= 0 || in.max_seconds < lo.limits.max_seconds)) {
    lo.limits.max_seconds = in.max_seconds;
  }
  lo.wording = LoadOptions::Wording::kApi;
  // 1. The graph's bytes without weights, within the limits (a bomb stops here).
  if (::lseek(fd, 0, SEEK_SET) != 0) return Status::Error(name + ": cannot read model file");
  LoadFailure wire_why = LoadFailure::kNone;
  Result<std::string> filtered = ReadModelWithoutWeights(fd, name, lo, &wire_why);
  if (!filtered.ok()) {
    *why = FromLoad(wire_why);
    return filtered.status();
  }
  // 2. The cache, by content.
  const Key key{Sha256Hex(*filtered), in.batch, in.amp, in.dims, in.cache_scope};
  if (PassReport found = Find(key)) {
    *hit = true;
    *why = AnalysisFailure::kNone;
    return found;
  }
  // 3. A miss. The same analysis already in flight (same content digest, same
  // inputs): wait for its answer instead of analysing again.
  const AnalysisClass& cls = AnalysisClassScope::Current();
  std::shared_ptr<Flight> flight;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = flights_.find(key);
    if (it == flights_.end()) {
      flight = std::make_shared<Flight>();
      flight->name = name;
      flights_[key] = flight;
      break;  // this caller leads
    }
    std::shared_ptr<Flight> other = it->second;
    ++coalesced_;
    filtered = Status::Error("released");  // a follower holds no graph bytes while it waits
    flight_cv_.wait(lock, [&] { return other->done; });
    if (other->why == AnalysisFailure::kBusy) {
      --coalesced_;
      // The leader was not admitted: this caller tries itself, with its own class.
      lock.unlock();
      if (::lseek(fd, 0, SEEK_SET) != 0) return Status::Error(name + ": cannot read model file");
      filtered = ReadModelWithoutWeights(fd, name, lo, &wire_why);
      if (!filtered.ok()) {
        *why = FromLoad(wire_why);
        return filtered.status();
      }
      if (PassReport found = Find(key)) {
        *hit = true;
        *why = AnalysisFailure::kNone;
        return found;
      }
      continue;
    }
    *why = other->why;
    if (other->out.ok()) return other->out;
    // The leader's message names the leader's file: name this caller's.
    std::string msg = other->out.message();
    if (msg.rfind(other->name, 0) == 0) msg = name + msg.substr(other->name.size());
    return Status::Error(msg);
  }
  // Leading: load and cost on the analysis pool, in the time left.
  Result<PassReport> out = Status::Error(name + ": not analysed");
  const std::function<void()> task = [&] {
    const double spent = std::chrono::duration<double>(Clock::now() - start).count();
    LoadOptions left = lo;
    if (lo.limits.max_seconds > 0) left.limits.max_seconds = std::max(1e-3, lo.limits.max_seconds - spent);
    LoadFailure load_why = LoadFailure::kNone;
    Result<Graph> graph = LoadOnnxGraphFromBytes(*filtered, name, left, &load_why);
    if (!graph.ok()) {
      *why = FromLoad(load_why);
      out = graph.status();
      return;
    }
    // Refuses a graph with nodes that cannot be costed (as gpucast predict does).
    Result<CostReport> cost = CostForPrediction(*graph, CostOptions{.amp = in.amp});
    if (!cost.ok()) {
      *why = AnalysisFailure::kInvalid;
      out = cost.status();
      return;
    }
    CostReport r = std::move(cost).value();
    r.path.clear();  // cached by content: never another client's name
    *why = AnalysisFailure::kNone;
    out = PassReport(std::make_shared<const std::vector<CostReport>>(1, std::move(r)));
  };
  const bool large = filtered->size() >= opts_.trim_after_bytes;
  const AnalysisPool::Outcome ran = pool_.Run(task, cls, filtered->size());
  if (ran != AnalysisPool::Outcome::kRan) {
    *why = AnalysisFailure::kBusy;
    const Stats s = stats();
    const bool webhook = cls.webhook;
    char waited[32];
    std::snprintf(waited, sizeof waited, "%g", opts_.webhook_wait_s);
    out = Status::Error(
        ran == AnalysisPool::Outcome::kTimedOut
            ? "analysis busy: no analysis thread free within " + std::string(waited) + " s (" +
                  std::to_string(s.running) + " graphs being analysed and " + std::to_string(s.waiting) +
                  " waiting; gpucast serve --analysis-threads " + std::to_string(opts_.threads) +
                  ", --k8s-analysis-threads " + std::to_string(opts_.webhook_threads) + "); retry later"
        : webhook ? "analysis busy: " + std::to_string(s.running) + " graphs being analysed and " +
                        std::to_string(s.waiting) + " waiting (gpucast serve --k8s-analysis-queue " +
                        std::to_string(opts_.webhook_queue) + "); retry later"
                  : "analysis busy: " + std::to_string(s.running) + " graphs being analysed and " +
                        std::to_string(s.waiting) + " waiting (gpucast serve --analysis-threads " +
                        std::to_string(opts_.threads) + ", --analysis-queue " + std::to_string(opts_.queue) +
                        "); retry later");
  }
  if (out.ok()) Put(key, *out);  // before the flight ends: a caller after it finds the cache
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ran == AnalysisPool::Outcome::kRan) ++analysed_;
    flight->out = out;
    flight->why = *why;
    flight->done = true;
    flights_.erase(key);
  }
  flight_cv_.notify_all();
  // A large graph's parse, types and bytes are freed by now: give the pages back.
  filtered = Status::Error("released");
  if (large) malloc_trim(0);
  return out;
}

}  // namespace gpucast::service
