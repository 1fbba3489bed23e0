// The simulator's finish events: an indexed heap that holds at most one event
// per job and behaves exactly as the min-heap with lazy invalidation it
// replaces (docs/simulator.md, "Simulator").
//
// The lazy heap keeps every event ever pushed until it reaches the top; a job
// whose rate changes gets a new event and its old one stays behind, stale
// (its version no longer the job's), until popped. On Philly at load x2 that
// heap grew to ~370,000 entries for ~1,000 running jobs, and popping it was a
// fifth of the simulator's time. Here a job's new event replaces its old one
// in place, so the heap holds one entry per job. The old one is remembered
// only as far as the lazy heap's observable behaviour needs it: whether it
// would still hold anything (empty()). The lazy heap drops stale entries only
// in SkipStale, those below the least valid event; so the stale entries it
// would still hold are nonempty exactly when the greatest replaced entry is
// above every threshold since it was replaced: one key is enough.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace gpucast::sim {

struct Event {
  double t;
  int64_t order;  // tie-break: insertion order (deterministic)
  int job;
  uint32_t version;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : order > o.order; }
};

class FinishQueue {
 public:
  // Jobs are 0..num_jobs-1.
  explicit FinishQueue(int num_jobs = 0) { Reset(num_jobs); }
  void Reset(int num_jobs) {
    heap_.clear();
    pos_.assign(static_cast<size_t>(num_jobs), -1);
    ghosts_ = false;
  }

  // As the lazy heap's empty(): nothing held, and no replaced event that the
  // lazy heap would still hold.
  bool empty() const { return heap_.empty() && !ghosts_; }
  // The least held event (after SkipStale: the least valid one). Requires a held event.
  const Event& top() const { return heap_.front(); }
  bool held_empty() const { return heap_.empty(); }

  // e.job's event; an event the job already has is replaced (it is stale:
  // the caller bumped the job's version) and remembered as the lazy heap's
  // leftover.
  void push(const Event& e) {
    int& p = pos_[static_cast<size_t>(e.job)];
    if (p < 0) {
      heap_.push_back(e);
      p = static_cast<int>(heap_.size()) - 1;
      SiftUp(static_cast<size_t>(p));
      return;
    }
    const size_t i = static_cast<size_t>(p);
    if (!ghosts_ || heap_[i] > ghost_max_) ghost_max_ = heap_[i];
    ghosts_ = true;
    const bool up = heap_[i] > e;
    heap_[i] = e;
    if (up) SiftUp(i);
    else SiftDown(i);
  }

  // Removes the least held event.
  void pop() {
    pos_[static_cast<size_t>(heap_.front().job)] = -1;
    if (heap_.size() > 1) {
      heap_.front() = heap_.back();
      pos_[static_cast<size_t>(heap_.front().job)] = 0;
      heap_.pop_back();
      SiftDown(0);
    } else {
      heap_.pop_back();
    }
  }

  // The lazy heap's SkipStale: pops held events while the least is stale
  // (stale(e) true), and forgets the replaced events the lazy heap would
  // have popped with them (all those below the least valid event).
  template <class Stale>
  void SkipStale(const Stale& stale) {
    while (!heap_.empty() && stale(heap_.front())) pop();
    if (ghosts_ && (heap_.empty() || heap_.front() > ghost_max_)) ghosts_ = false;
  }

 private:
  void Place(size_t i, const Event& e) {
    heap_[i] = e;
    pos_[static_cast<size_t>(e.job)] = static_cast<int>(i);
  }
  void SiftUp(size_t i) {
    const Event e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!(heap_[parent] > e)) break;
      Place(i, heap_[parent]);
      i = parent;
    }
    Place(i, e);
  }
  void SiftDown(size_t i) {
    const Event e = heap_[i];
    const size_t n = heap_.size();
    while (true) {
      size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && heap_[c] > heap_[c + 1]) ++c;
      if (!(e > heap_[c])) break;
      Place(i, heap_[c]);
      i = c;
    }
    Place(i, e);
  }

  std::vector<Event> heap_;
  std::vector<int> pos_;  // per job: its index in heap_, or -1
  bool ghosts_ = false;   // replaced events the lazy heap would still hold
  Event ghost_max_{};     // the greatest of them
};

}  // namespace gpucast::sim
