// Durability: jobs acknowledged with 201 survive kill -9 of a real server
// process (service_testd: the real Service with the fake engine), with their
// state, and idempotency keys still hold after the restart.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <atomic>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/testing.h"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A service_testd child process; the constructor waits for "listening on".
class Server {
 public:
  Server(const std::string& db, const std::string& model_root) {
    int out[2];
    EXPECT_EQ(pipe(out), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      execl(SERVICE_TESTD, SERVICE_TESTD, "127.0.0.1:0", db.c_str(), "2", model_root.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    char line[256] = {0};
    if (f && std::fgets(line, sizeof line, f)) std::sscanf(line, "listening on 127.0.0.1:%d", &port_);
    if (f) std::fclose(f);
    EXPECT_GT(port_, 0) << "service_testd did not start: '" << line << "'";
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
  }
  ~Server() { Kill9(); }
  void Kill9() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);  // reaped: no zombie left behind
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    pid_ = -1;
  }
  httplib::Client& client() { return *client_; }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
};

json AllJobs(httplib::Client& c) {
  auto r = c.Get("/v1/jobs?limit=1000");
  EXPECT_TRUE(r && r->status == 200);
  return json::parse(r->body)["jobs"];
}

TEST(DurabilityTest, JobsSurviveKill9WithTheirState) {
  std::string tmpl = (fs::temp_directory_path() / "gpucast-durable-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl, db = dir + "/jobs.db", model = dir + "/m.onnx";
  std::ofstream(model) << gpucast::service::testing::kFakeModelMagic;

  json before;
  {
    Server s(db, dir);
    auto post = [&](json body, const std::string& key = "") {
      httplib::Headers h;
      if (!key.empty()) h.emplace("Idempotency-Key", key);
      auto r = s.client().Post("/v1/jobs", h, body.dump(), "application/json");
      EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no response");
      return r ? json::parse(r->body) : json();
    };
    // 1, 2: short jobs that finish; 3, 4: hold both GPUs; 5..: stay queued.
    post({{"model", model}, {"batch", 1}, {"duration_s", 0}});
    post({{"model", model}, {"batch", 1}, {"duration_s", 0}});
    for (int i = 0; i < 2; ++i) post({{"model", model}, {"batch", 2}});
    // Wait until 1 and 2 are done and 3 and 4 run.
    for (int i = 0; i < 200; ++i) {
      json jobs = AllJobs(s.client());
      if (jobs.size() == 4 && jobs[1]["state"] == "done" && jobs[3]["state"] == "running") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (int i = 0; i < 20; ++i) post({{"model", model}, {"batch", 3}, {"name", "q" + std::to_string(i)}});
    post({{"model", model}, {"batch", 4}}, "key-1");
    ASSERT_EQ(s.client().Delete("/v1/jobs/6")->status, 200);
    // The last acknowledgement is followed at once by kill -9.
    json last = post({{"model", model}, {"batch", 5}});
    before = AllJobs(s.client());
    s.Kill9();
    ASSERT_EQ(before.back()["id"], last["id"]);
  }
  ASSERT_EQ(before.size(), 26u);
  EXPECT_EQ(before[0]["state"], "done");
  EXPECT_EQ(before[2]["state"], "running");
  EXPECT_EQ(before[5]["state"], "cancelled");
  EXPECT_EQ(before[10]["state"], "queued");

  Server again(db, dir);
  json after = AllJobs(again.client());
  EXPECT_EQ(after, before);  // every job, field for field, with its state
  // The restarted scheduler knows GPUs 0 and 1 are taken: nothing new runs.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(AllJobs(again.client()), before);
  json cluster = json::parse(again.client().Get("/v1/cluster")->body);
  // Each running job is back on the GPU it had (which of 3 and 4 got GPU 0
  // depends on when the loop ran relative to the submissions).
  EXPECT_EQ(before[2]["placement"].size(), 1u);
  EXPECT_EQ(cluster["gpus"][before[2]["placement"][0].get<int>()]["jobs"], json({3}));
  EXPECT_EQ(cluster["gpus"][before[3]["placement"][0].get<int>()]["jobs"], json({4}));
  EXPECT_NE(before[2]["placement"], before[3]["placement"]);
  // The idempotency key still maps to its job.
  auto r = again.client().Post("/v1/jobs", {{"Idempotency-Key", "key-1"}},
                               json{{"model", model}, {"batch", 4}}.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(json::parse(r->body)["id"], 25);
  // Cancelling a running job lets the queue move.
  ASSERT_EQ(again.client().Delete("/v1/jobs/3")->status, 200);
  for (int i = 0; i < 200 && AllJobs(again.client())[4]["state"] != "running"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(AllJobs(again.client())[4]["state"], "running");  // job 5 (6 was cancelled)
  again.Kill9();
  fs::remove_all(dir);
}

// kill -9 while 200 submissions are in flight: every job acknowledged with
// 201 is there after the restart, and retrying every request with its
// Idempotency-Key creates no duplicates (each key's job exists exactly once).
TEST(DurabilityTest, Kill9WithSubmissionsInFlightLosesNoAcknowledgedJob) {
  std::string tmpl = (fs::temp_directory_path() / "gpucast-inflight-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl, db = dir + "/jobs.db", model = dir + "/m.onnx";
  std::ofstream(model) << gpucast::service::testing::kFakeModelMagic;
  constexpr int kN = 200;
  auto body = [&](int i) { return json{{"model", model}, {"batch", 1 + i % 8}, {"name", "j" + std::to_string(i)}}.dump(); };
  auto key = [](int i) { return "key-" + std::to_string(i); };

  std::vector<int64_t> acked(kN, 0);  // job id per acknowledged submission
  std::atomic<int> n_acked{0};
  {
    Server s(db, dir);
    const int port = s.port();
    std::atomic<bool> go{false};
    std::vector<std::thread> clients;
    for (int i = 0; i < kN; ++i) {
      clients.emplace_back([&, i] {
        httplib::Client c("127.0.0.1", port);
        c.set_connection_timeout(5, 0);
        c.set_read_timeout(10, 0);
        while (!go) std::this_thread::yield();
        auto r = c.Post("/v1/jobs", {{"Idempotency-Key", key(i)}}, body(i), "application/json");
        if (r && r->status == 201) {
          acked[static_cast<size_t>(i)] = json::parse(r->body)["id"].get<int64_t>();
          ++n_acked;
        }
      });
    }
    go = true;
    // Kill once some are acknowledged, while the others are in flight.
    for (int i = 0; i < 2000 && n_acked < 32; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s.Kill9();
    for (std::thread& t : clients) t.join();
  }
  const int before_restart = n_acked.load();
  EXPECT_GE(before_restart, 32);
  EXPECT_LT(before_restart, kN) << "every submission finished before the kill: nothing was in flight";

  Server again(db, dir);
  json jobs = AllJobs(again.client());
  std::map<int64_t, std::string> names;
  for (const json& j : jobs) names[j["id"].get<int64_t>()] = j["name"].get<std::string>();
  for (int i = 0; i < kN; ++i) {
    if (!acked[static_cast<size_t>(i)]) continue;
    auto it = names.find(acked[static_cast<size_t>(i)]);
    ASSERT_NE(it, names.end()) << "acknowledged job " << acked[static_cast<size_t>(i)] << " lost";
    EXPECT_EQ(it->second, "j" + std::to_string(i));
  }
  // Clients retry everything with the same keys: acknowledged ones get their
  // job back, the others are created now, none twice.
  for (int i = 0; i < kN; ++i) {
    auto r = again.client().Post("/v1/jobs", {{"Idempotency-Key", key(i)}}, body(i), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 201) << r->body;
    if (acked[static_cast<size_t>(i)]) {
      EXPECT_EQ(json::parse(r->body)["id"], acked[static_cast<size_t>(i)]);
    }
  }
  jobs = AllJobs(again.client());
  EXPECT_EQ(jobs.size(), static_cast<size_t>(kN));
  std::map<std::string, int> count;
  for (const json& j : jobs) ++count[j["name"].get<std::string>()];
  for (int i = 0; i < kN; ++i) EXPECT_EQ(count["j" + std::to_string(i)], 1) << "j" << i;
  again.Kill9();
  fs::remove_all(dir);
}

}  // namespace
