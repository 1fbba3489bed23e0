// The analyzer: limits answered with their kind, the pool's bound (a full
// pool refuses at once while other work goes on), the content cache and its
// byte budget.
#include "service/analysis.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
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
  // ApproxBytes grows with the graph.
  EXPECT_GT(one, 200 * sizeof(NodeCost));
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

}  // namespace
}  // namespace gpucast::service
