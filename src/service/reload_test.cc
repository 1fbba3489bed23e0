// Hot reload: no request fails while the predictor is swapped, a bad file
// keeps the old predictor, SIGHUP reaches the reload thread.
#include "service/reload.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpucast::service {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// An engine whose "predictor file" is one number: every prediction is it.
class ConstantEngine : public PredictionEngine {
 public:
  explicit ConstantEngine(double u) : u_(u) {}
  Result<Prediction> Predict(const JobSpec&, const std::vector<int>&, PredictInfo* info) override {
    info->cache_hit = false;
    return Prediction{u_, u_, u_};
  }
  std::string Describe() const override { return "constant " + std::to_string(u_); }

 private:
  double u_;
};

Result<std::unique_ptr<PredictionEngine>> LoadConstant(const std::string& file) {
  std::ifstream in(file);
  double u = 0;
  if (!(in >> u) || u < 0 || u > 100) return Status::Error(file + ": not a predictor");
  return std::unique_ptr<PredictionEngine>(std::make_unique<ConstantEngine>(u));
}

// Replaces `path` atomically, as an operator's `mv new old` does.
void Replace(const std::string& path, const std::string& content) {
  std::ofstream(path + ".new") << content;
  fs::rename(path + ".new", path);
}

class ReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpucast-reload-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    file_ = dir_ + "/predictor.json";
    std::ofstream(file_) << "10";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_, file_;
};

TEST_F(ReloadTest, ConcurrentPredictionsNeverFailAcrossReloads) {
  Result<std::unique_ptr<ReloadingEngine>> e = ReloadingEngine::Create(file_, LoadConstant);
  ASSERT_TRUE(e.ok()) << e.message();
  ReloadingEngine* engine = e->get();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> ok{0}, failed{0}, unexpected{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      JobSpec spec;
      while (!stop) {
        PredictInfo info;
        Result<Prediction> p = engine->Predict(spec, {-1}, &info);
        if (!p.ok()) ++failed;
        else if (p->util != 10 && p->util != 20 && p->util != 30) ++unexpected;
        else ++ok;
      }
    });
  }
  // Reload only while clients are predicting (a loaded machine may start them late).
  while (ok + failed + unexpected == 0) std::this_thread::yield();
  for (int i = 0; i < 50; ++i) {
    Replace(file_, i % 2 ? "20" : "30");
    ASSERT_TRUE(engine->Reload().ok());
  }
  Replace(file_, "20");
  ASSERT_TRUE(engine->Reload().ok());
  // A bad file: reload fails, names the file, and the old predictor stays.
  Replace(file_, "not a number");
  Status bad = engine->Reload();
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr(file_ + ": not a predictor"));
  stop = true;
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(unexpected, 0);
  EXPECT_GT(ok, 0);
  PredictInfo info;
  EXPECT_DOUBLE_EQ(engine->Predict(JobSpec(), {-1}, &info)->util, 20);
  EXPECT_EQ(engine->Describe(), "constant 20.000000");
}

TEST_F(ReloadTest, AMissingFileAtStartIsAnError) {
  Result<std::unique_ptr<ReloadingEngine>> e = ReloadingEngine::Create(dir_ + "/none", LoadConstant);
  ASSERT_FALSE(e.ok());
}

TEST(PredictionEngine, EnginesWithoutAFileCannotReload) {
  ConstantEngine c(5);
  Status st = c.Reload();
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("cannot reload"));
}

// In a child process (its own signal mask and no other threads): each SIGHUP
// sent to the process runs the callback once, and the process survives it.
TEST(ReloadOnSignal, SighupToTheProcessRunsTheCallback) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    BlockReloadSignal();
    std::atomic<int> calls{0};
    {
      ReloadOnSignal hup([&] { ++calls; });
      for (int i = 0; i < 3; ++i) {
        int before = calls;
        kill(getpid(), SIGHUP);
        for (int w = 0; w < 2000 && calls == before; ++w) usleep(1000);
      }
    }
    _exit(calls == 3 ? 0 : 10 + calls);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "callbacks: " << WEXITSTATUS(status) - 10;
}

}  // namespace
}  // namespace gpucast::service
