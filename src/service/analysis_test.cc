// The analyzer: limits answered with their kind, the pool's bound (a full
// pool refuses at once while other work goes on), the content cache and its
// byte budget.
#include "service/analysis.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <future>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/test_models.h"
#include "util/paths.h"

namespace gpucast::service {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class AnalysisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpucast-analysis-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A Relu chain of n nodes in a file; its path.
  std::string Chain(int n, const std::string& name) {
    gpucast::testing::ModelBuilder b;
    b.Input("x", gpucast::testing::kFloat, {std::string("N"), 8});
    for (int i = 0; i < n; ++i) {
      b.Node("Relu", {i == 0 ? "x" : "r" + std::to_string(i - 1)}, {i + 1 == n ? "y" : "r" + std::to_string(i)});
    }
    b.Output("y");
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(gpucast::testing::WriteFile(path, b.Bytes()));
    return path;
  }
  Result<PassReport> Analyze(GraphAnalyzer& a, const std::string& path, int64_t batch, bool* hit,
                             AnalysisFailure* why) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    auto r = a.Analyze(fd, fs::path(path).filename().string(), AnalysisInput{batch, false, {}}, hit, why);
    ::close(fd);
    return r;
  }
  std::string dir_;
};

TEST_F(AnalysisTest, AnalysesCachesByContentAndNamesTheClientsFile) {
  GraphAnalyzer a(AnalysisOptions{});
  bool hit = true;
  AnalysisFailure why;
  auto r = Analyze(a, Chain(20, "a.onnx"), 4, &hit, &why);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_FALSE(hit);
  EXPECT_EQ(why, AnalysisFailure::kNone);
  EXPECT_EQ((*r)->front().nodes.size(), 20u);
  EXPECT_EQ((*r)->front().path, "");  // cached by content: no client's name in it
  // The same bytes under another name are found; another batch is another analysis.
  fs::copy_file(dir_ + "/a.onnx", dir_ + "/b.onnx");
  ASSERT_TRUE(Analyze(a, dir_ + "/b.onnx", 4, &hit, &why).ok());
  EXPECT_TRUE(hit);
  ASSERT_TRUE(Analyze(a, dir_ + "/b.onnx", 8, &hit, &why).ok());
  EXPECT_FALSE(hit);
  EXPECT_EQ(a.stats().entries, 2u);
  EXPECT_GT(a.stats().bytes, 0u);
}

// Issue 32 item 6: the deputy's cache answered 42 ms for a graph another user had analysed
// (620 ms otherwise): a user learnt what others submitted. Reports are shared within one scope.
TEST_F(AnalysisTest, CachedReportsAreSharedWithinOneScopeOnly) {
  GraphAnalyzer a(AnalysisOptions{});
  bool hit = true;
  AnalysisFailure why;
  const std::string path = Chain(20, "s.onnx");
  auto run = [&](const std::string& scope) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    AnalysisInput in{4, false, {}};
    in.cache_scope = scope;
    auto r = a.Analyze(fd, "s.onnx", in, &hit, &why);
    ::close(fd);
    return r.ok();
  };
  ASSERT_TRUE(run("uid:1001"));
  EXPECT_FALSE(hit);
  ASSERT_TRUE(run("uid:1002"));
  EXPECT_FALSE(hit) << "another user's cached report answered";
  ASSERT_TRUE(run(""));
  EXPECT_FALSE(hit) << "a report cached for a user answered the model roots' scope";
  ASSERT_TRUE(run("uid:1001"));
  EXPECT_TRUE(hit);
  EXPECT_EQ(a.stats().entries, 3u);
}

// The client's deadline (X-Gpucast-Deadline-Ms) lowers the analysis time limit, never raises it.
TEST_F(AnalysisTest, AClientDeadlineLowersTheTimeLimit) {
  GraphAnalyzer a(AnalysisOptions{});
  bool hit = true;
  AnalysisFailure why;
  const std::string path = Chain(3000, "slow.onnx");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  AnalysisInput in{4, false, {}};
  in.max_seconds = 1e-6;
  auto r = a.Analyze(fd, "slow.onnx", in, &hit, &why);
  ::close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(why, AnalysisFailure::kLimit) << r.message();
}

TEST_F(AnalysisTest, LimitsAreAnsweredWithTheirKind) {
  AnalysisOptions o;
  o.limits.max_nodes = 50;
  GraphAnalyzer a(o);
  bool hit;
  AnalysisFailure why;
  auto r = Analyze(a, Chain(60, "big.onnx"), 1, &hit, &why);
  EXPECT_EQ(r.message(), "big.onnx: graph too large: more than 50 nodes, counting subgraphs (the service's limit, "
                         "gpucast serve --max-graph-nodes)");
  EXPECT_EQ(why, AnalysisFailure::kLimit);
  o.limits.max_nodes = 50000;
  o.limits.max_graph_bytes = 256;
  GraphAnalyzer small(o);
  r = Analyze(small, Chain(60, "big.onnx"), 1, &hit, &why);
  EXPECT_THAT(r.message(), HasSubstr("bytes without weights (the service's limit, gpucast serve --max-graph-bytes)"));
  EXPECT_EQ(why, AnalysisFailure::kTooLarge);
  // The slots' dimensions (gpucast serve --max-slot-dims): 60 Relu nodes have 120 slots
  // (of rank-2 tensors: 360 dims), refused by their count before any record per slot.
  o.limits.max_graph_bytes = 16 << 20;
  o.limits.max_slot_dims = 100;
  GraphAnalyzer few(o);
  r = Analyze(few, Chain(60, "big.onnx"), 1, &hit, &why);
  EXPECT_EQ(r.message(), "big.onnx: graph too large: its nodes' inputs and outputs hold at least 120 shape "
                         "dimensions (each slot counts 1 plus its tensor's rank, a tensor at every slot that reads or "
                         "writes it), more than 100 (the service's limit)");
  EXPECT_EQ(why, AnalysisFailure::kInvalid);
  gpucast::testing::WriteFile(dir_ + "/junk.onnx", "junk");
  r = Analyze(a, dir_ + "/junk.onnx", 1, &hit, &why);
  EXPECT_EQ(why, AnalysisFailure::kNotAModel);
  EXPECT_EQ(a.stats().entries, 0u);  // failures are not cached
}

TEST_F(AnalysisTest, TheCacheKeepsWithinItsByteBudget) {
  AnalysisOptions o;
  GraphAnalyzer probe(o);
  bool hit;
  AnalysisFailure why;
  ASSERT_TRUE(Analyze(probe, Chain(200, "one.onnx"), 1, &hit, &why).ok());
  const size_t one = probe.stats().bytes;
  o.cache_bytes = one * 2 + one / 2;  // room for two
  GraphAnalyzer a(o);
  for (int64_t batch = 1; batch <= 5; ++batch) ASSERT_TRUE(Analyze(a, dir_ + "/one.onnx", batch, &hit, &why).ok());
  EXPECT_EQ(a.stats().entries, 2u);
  EXPECT_LE(a.stats().bytes, o.cache_bytes);
  ASSERT_TRUE(Analyze(a, dir_ + "/one.onnx", 5, &hit, &why).ok());
  EXPECT_TRUE(hit);  // the most recent stay
  ASSERT_TRUE(Analyze(a, dir_ + "/one.onnx", 1, &hit, &why).ok());
  EXPECT_FALSE(hit);
  // ApproxBytes grows with the graph, and counts what a node holds on the heap (its kept tensors).
  EXPECT_GT(one, 200 * sizeof(NodeCost));
  CostReport r;
  r.nodes.resize(1);
  const size_t bare = ApproxBytes(r);
  r.nodes[0].saved_tensors.assign(1000, 512);
  EXPECT_GE(ApproxBytes(r), bare + 1000 * sizeof(int64_t));
}

TEST(AnalysisPoolTest, AFullPoolRefusesAtOnceAndOthersProceed) {
  AnalysisPool pool(1, 1);
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::atomic<int> ran{0};
  // One running, one waiting: the pool is full.
  std::thread a([&] { EXPECT_TRUE(pool.Run([&] { go.wait(); ++ran; })); });
  while (pool.running() < 1) std::this_thread::yield();
  std::thread b([&] { EXPECT_TRUE(pool.Run([&] { ++ran; })); });
  while (pool.waiting() < 1) std::this_thread::yield();
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(pool.Run([&] { ++ran; }));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
  release.set_value();
  a.join();
  b.join();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_TRUE(pool.Run([&] { ++ran; }));
  EXPECT_EQ(ran.load(), 3);
}

// Issue 31 item 6: identical analyses in flight are one analysis; every
// caller gets the answer, named with its own file.
TEST_F(AnalysisTest, IdenticalAnalysesInFlightAreCoalesced) {
  AnalysisOptions o;
  o.threads = 1;
  o.queue = 0;  // one at a time: without coalescing, most of the callers below would be refused busy
  GraphAnalyzer a(o);
  const std::string big = Chain(20000, "big.onnx");
  std::vector<std::thread> callers;
  std::atomic<int> ok{0}, busy{0};
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      bool hit = false;
      AnalysisFailure why;
      auto r = Analyze(a, big, 4, &hit, &why);
      if (r.ok()) ++ok;
      if (why == AnalysisFailure::kBusy) ++busy;
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ(busy.load(), 0);
  const GraphAnalyzer::Stats s = a.stats();
  EXPECT_EQ(s.analysed, 1);
  EXPECT_EQ(s.entries, 1u);
  // A failure reaches every caller under its own name.
  const std::string junk = dir_ + "/junk.onnx";
  std::ofstream(junk) << "not an onnx file";
  bool hit = false;
  AnalysisFailure why;
  EXPECT_THAT(Analyze(a, junk, 1, &hit, &why).message(), HasSubstr("junk.onnx"));
}

// Issue 31 item 6: a webhook analysis waits for a thread up to its deadline
// (an API analysis is refused at once), on threads of its own.
TEST(AnalysisPoolTest, WebhookTasksWaitUpToTheDeadlineOnTheirOwnThreads) {
  AnalysisPool pool(/*threads=*/1, /*queue=*/0, /*webhook_threads=*/0, /*webhook_queue=*/4, /*webhook_wait_s=*/0.3);
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::thread blocker([&] { EXPECT_TRUE(pool.Run([&] { go.wait(); })); });
  while (pool.running() < 1) std::this_thread::yield();
  EXPECT_FALSE(pool.Run([] {}));  // API: full, at once
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(pool.Run([] {}, AnalysisClass{"ns", true}), AnalysisPool::Outcome::kTimedOut);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 2.0);
  EXPECT_EQ(pool.waiting(), 0);
  // Released within the deadline: it runs.
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    release.set_value();
  });
  std::atomic<bool> ran{false};
  EXPECT_EQ(pool.Run([&] { ran = true; }, AnalysisClass{"ns", true}), AnalysisPool::Outcome::kRan);
  EXPECT_TRUE(ran.load());
  later.join();
  blocker.join();
  // Webhook threads take webhook tasks while the shared thread is busy.
  AnalysisPool own(1, 0, 1, 4, 5);
  std::promise<void> free_shared;
  std::shared_future<void> shared_go = free_shared.get_future().share();
  std::thread busy([&] { EXPECT_TRUE(own.Run([&] { shared_go.wait(); })); });
  while (own.running() < 1) std::this_thread::yield();
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(own.Run([] {}, AnalysisClass{"ns", true}), AnalysisPool::Outcome::kRan);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  free_shared.set_value();
  busy.join();
}

// Issue 31 item 6: one namespace's burst does not shut another out: the
// queue is served round-robin by tenant, and a full queue refuses the newest
// task of the tenant with most waiting to admit a tenant with fewer.
TEST(AnalysisPoolTest, AFullWebhookQueueMakesRoomForATenantWithFewerWaiting) {
  AnalysisPool pool(1, 0, 0, /*webhook_queue=*/3, /*webhook_wait_s=*/10);
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::mutex mu;
  std::vector<std::string> order;
  auto task = [&](std::string name) {
    return [&, name] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(name);
    };
  };
  std::thread blocker([&] { pool.Run([&] { go.wait(); }, AnalysisClass{"a", true}); });
  while (pool.running() < 1) std::this_thread::yield();
  std::vector<std::thread> a;
  std::vector<AnalysisPool::Outcome> a_out(3);
  for (int i = 0; i < 3; ++i) {
    a.emplace_back([&, i] { a_out[i] = pool.Run(task("a" + std::to_string(i)), AnalysisClass{"a", true}); });
    while (pool.waiting() < i + 1) std::this_thread::yield();
  }
  AnalysisPool::Outcome b_out = AnalysisPool::Outcome::kFull;
  std::thread b([&] { b_out = pool.Run(task("b0"), AnalysisClass{"b", true}); });
  // a2 (the newest of "a") is refused to make room for b.
  for (int i = 0; i < 2000 && a_out[2] != AnalysisPool::Outcome::kFull; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  while (pool.waiting() < 3) std::this_thread::yield();
  // Another of "a" now finds the queue full and is refused at once (it has the most waiting).
  EXPECT_EQ(pool.Run(task("a3"), AnalysisClass{"a", true}), AnalysisPool::Outcome::kFull);
  release.set_value();
  blocker.join();
  for (std::thread& t : a) t.join();
  b.join();
  EXPECT_EQ(a_out[0], AnalysisPool::Outcome::kRan);
  EXPECT_EQ(a_out[1], AnalysisPool::Outcome::kRan);
  EXPECT_EQ(a_out[2], AnalysisPool::Outcome::kFull);
  EXPECT_EQ(b_out, AnalysisPool::Outcome::kRan);
  // After a task of "a", "b" is next: round-robin, not arrival order.
  EXPECT_EQ(order, (std::vector<std::string>{"b0", "a0", "a1"}));
}

}  // namespace
}  // namespace gpucast::service
