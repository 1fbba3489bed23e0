#include "service/analysis.h"

#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <future>

#include "cost/job_cost.h"
#include "service/sha256.h"

namespace gpucast::service {

// ---------------------------------------------------------------- pool

struct AnalysisPool::Item {
  const std::function<void()>* task;
  std::promise<void> done;
};

AnalysisPool::AnalysisPool(int threads, int queue) : threads_(std::max(1, threads)), queue_(std::max(0, queue)) {
  for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { Work(); });
}

AnalysisPool::~AnalysisPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool AnalysisPool::Run(const std::function<void()>& task) {
  Item item{&task, {}};
  std::future<void> done = item.done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Admitted while a thread is free or the queue has room.
    if (stop_ || running_ + static_cast<int>(items_.size()) >= threads_ + queue_) return false;
    items_.push_back(&item);
  }
  cv_.notify_one();
  done.wait();
  return true;
}

void AnalysisPool::Work() {
  for (;;) {
    Item* item = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !items_.empty(); });
      if (items_.empty()) return;
      item = items_.front();
      items_.pop_front();
      ++running_;
    }
    (*item->task)();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    item->done.set_value();  // `item` lives on the waiting caller's stack: last use
  }
}

int AnalysisPool::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

int AnalysisPool::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(items_.size());
}

// ---------------------------------------------------------------- analyzer

size_t ApproxBytes(const CostReport& r) {
  size_t n = sizeof(CostReport) + r.path.capacity() + r.first_uncosted.capacity();
  for (const NodeCost& c : r.nodes) {
    n += sizeof(NodeCost) + c.name.capacity() + c.op_type.capacity();
    for (const auto* shapes : {&c.input_shapes, &c.output_shapes}) {
      n += shapes->capacity() * sizeof(std::vector<int64_t>);
      for (const auto& s : *shapes) n += s.capacity() * sizeof(int64_t);
    }
  }
  for (const Unsupported& u : r.unsupported) n += sizeof(Unsupported) + u.op_type.capacity() + u.reason.capacity();
  return n;
}

GraphAnalyzer::GraphAnalyzer(const AnalysisOptions& opts) : opts_(opts), pool_(opts.threads, opts.queue) {}

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
  const Key key{Sha256Hex(*filtered), in.batch, in.amp, in.dims};
  if (PassReport found = Find(key)) {
    *hit = true;
    *why = AnalysisFailure::kNone;
    return found;
  }
  // 3. A miss: load and cost on the analysis pool, in the time left.
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
  if (!pool_.Run(task)) {
    *why = AnalysisFailure::kBusy;
    const Stats s = stats();
    return Status::Error("analysis busy: " + std::to_string(s.running) + " graphs being analysed and " +
                         std::to_string(s.waiting) + " waiting (gpucast serve --analysis-threads " +
                         std::to_string(opts_.threads) + ", --analysis-queue " + std::to_string(opts_.queue) +
                         "); retry later");
  }
  if (out.ok()) Put(key, *out);
  // A large graph's parse, types and bytes are freed by now: give the pages back.
  filtered = Status::Error("released");
  if (large) malloc_trim(0);
  return out;
}

}  // namespace gpucast::service
