#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <queue>
#include <random>
#include <vector>

namespace gpucast::sim {
namespace {

using LazyHeap = std::priority_queue<Event, std::vector<Event>, std::greater<Event>>;

// The queue against the lazy heap it replaces, driven as the simulator drives
// it: a job's version is bumped at every rate change and it then gets a new
// event, or bumped with no new event (it left its GPUs); stale events are
// skipped before the least event is read; due events are popped. After every
// step both must agree on empty() (read also without skipping first, as the
// simulator's idle check does) and, after skipping, on the least event.
TEST(FinishQueue, BehavesAsTheLazyHeap) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = 1 + static_cast<int>(seed % 7) * 5;  // few jobs: many replacements and ties in t
    std::vector<uint32_t> version(static_cast<size_t>(n), 0);
    LazyHeap lazy;
    FinishQueue q(n);
    int64_t order = 0;
    double now = 0;
    int leftovers = 0, pops = 0;  // steps where only replaced events kept the lazy heap nonempty
    auto stale = [&](const Event& e) { return e.version != version[static_cast<size_t>(e.job)]; };
    std::uniform_int_distribution<int> job(0, n - 1), op(0, 9);
    std::uniform_real_distribution<double> dt(0, 10);
    for (int step = 0; step < 20000; ++step) {
      // Every 1000 steps a drain: due events only popped, until none is held
      // (the replaced events can then be all the lazy heap holds).
      const bool drain = step % 1000 >= 900;
      const int kind = drain ? 8 : op(rng);
      const int j = job(rng);
      if (kind <= 5) {  // a rate change: new finish time (ties in t are common)
        ++version[static_cast<size_t>(j)];
        const double t = kind == 0 ? now : now + std::floor(dt(rng));
        lazy.push({t, order, j, version[static_cast<size_t>(j)]});
        q.push({t, order, j, version[static_cast<size_t>(j)]});
        ++order;
      } else if (kind == 6) {  // left its GPUs: its event is stale, no new one
        ++version[static_cast<size_t>(j)];
      } else {  // an event round: skip stale, pop what is due, advance
        while (!lazy.empty() && stale(lazy.top())) lazy.pop();
        q.SkipStale(stale);
        ASSERT_EQ(lazy.empty(), q.empty()) << "seed " << seed << " step " << step;
        if (!lazy.empty()) {
          ASSERT_EQ(lazy.top().t, q.top().t);
          ASSERT_EQ(lazy.top().order, q.top().order);
          ASSERT_EQ(lazy.top().job, q.top().job);
          ASSERT_EQ(lazy.top().version, q.top().version);
          if (kind >= 8) {
            now = lazy.top().t;
            lazy.pop();
            q.pop();
            ++pops;
          }
        }
      }
      ASSERT_EQ(lazy.empty(), q.empty()) << "seed " << seed << " step " << step;
      leftovers += !lazy.empty() && q.held_empty();
    }
    EXPECT_GT(pops, 1000);
    if (n > 1) {
      EXPECT_GT(leftovers, 0) << "seed " << seed;  // the replaced-event case is exercised
    }
  }
}

TEST(FinishQueue, OneEntryPerJobAndHandOrder) {
  FinishQueue q(3);
  q.push({5, 0, 0, 1});
  q.push({5, 1, 1, 1});
  q.push({2, 2, 2, 1});
  EXPECT_EQ(q.top().job, 2);
  // Job 2's new event (later) replaces its old one; equal times go by order.
  q.push({7, 3, 2, 2});
  std::vector<int> jobs;
  while (!q.held_empty()) {
    jobs.push_back(q.top().job);
    q.pop();
  }
  EXPECT_EQ(jobs, (std::vector<int>{0, 1, 2}));
  // The replaced event (t 2) is what the lazy heap would still hold: not empty
  // until a SkipStale finds nothing valid.
  EXPECT_FALSE(q.empty());
  q.SkipStale([](const Event&) { return true; });
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace gpucast::sim
