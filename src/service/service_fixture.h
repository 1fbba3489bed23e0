// Test fixtures shared by the tests of the service. ServiceTest (server_test.cc
// and the routes_*_test.cc files): a real Service on 127.0.0.1 (ephemeral port)
// with the fake engine and a one-job-per-GPU scheduler as seams, an httplib
// client, and raw-socket helpers. PartsTest (jobs_test.cc, predictions_test.cc):
// the layers under the routes, without HTTP. Tests only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "predict/physics_fixture.h"
#include "service/engine.h"
#include "service/jobs.h"
#include "service/model_roots.h"
#include "service/predictions.h"
#include "service/server.h"
#include "service/store.h"
#include "service/testing.h"
#include "service/uploads.h"
#include "util/paths.h"

namespace gpucast::service::testing {

inline std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "gpucast-service-XXXXXX").string();
  char* d = mkdtemp(tmpl.data());
  EXPECT_NE(d, nullptr);
  return tmpl;
}

// The real engine's inputs in `dir`: the physics predictor trained on Lucid's rows
// (test::PhysicsOnLucid) as predictor.json and models/vgg.onnx as vgg.onnx.
// Returns the graph's path.
inline std::string WriteLucidPredictorAndVgg(const std::string& dir) {
  EXPECT_TRUE(test::PhysicsOnLucid().Save(dir + "/predictor.json").ok());
  std::filesystem::copy_file(HomeDir() + "/models/vgg.onnx", dir + "/vgg.onnx");
  return dir + "/vgg.onnx";
}

// The real engine over dir/predictor.json (WriteLucidPredictorAndVgg); null,
// with a test failure, if it does not load.
inline std::unique_ptr<PredictionEngine> LucidEngine(const std::string& dir) {
  auto e = NewPredictorEngine(dir + "/predictor.json", std::make_shared<GraphAnalyzer>(AnalysisOptions{}));
  EXPECT_TRUE(e.ok()) << e.message();
  return e.ok() ? std::move(e).value() : nullptr;
}

class ServiceTest : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  void SetUp() override {
    dir_ = MakeTempDir();
    model_ = dir_ + "/m.onnx";
    std::ofstream(model_) << kFakeModelMagic << " model bytes";
    std::ofstream(dir_ + "/bad.onnx") << "not a model";
    opts_.db_path = dir_ + "/jobs.db";
    opts_.model_roots = {dir_};
    opts_.max_body_bytes = 4096;
    opts_.read_timeout_s = 1;
    opts_.run_loop = false;  // tests drive Tick() themselves (submissions still run one pass)
  }
  void TearDown() override {
    StopServer();
    std::filesystem::remove_all(dir_);
  }

  void StartServer(int gpus = 2, std::unique_ptr<PredictionEngine> engine = std::make_unique<FakeEngine>()) {
    auto sched = std::make_unique<OneJobPerGpu>(gpus);
    sched_ = sched.get();
    Result<std::unique_ptr<Service>> s = Service::Create(opts_, std::move(engine), std::move(sched));
    ASSERT_TRUE(s.ok()) << s.message();
    service_ = std::move(s).value();
    Result<int> port = service_->Bind("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.message();
    port_ = *port;
    thread_ = std::thread([this] { EXPECT_TRUE(service_->Run().ok()); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(10, 0);
    for (int i = 0; i < 200; ++i) {
      if (client_->Get("/healthz")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "server did not come up";
  }
  void StopServer() {
    if (!service_) return;
    service_->Stop();
    thread_.join();
    service_.reset();
  }

  httplib::Result PostJson(const std::string& path, const json& body, httplib::Headers h = {}) {
    return client_->Post(path.c_str(), h, body.dump(), "application/json");
  }
  // A job of model_ at `batch` (201 expected); its id.
  int64_t Submit(int64_t batch, httplib::Headers h = {}) {
    auto r = PostJson("/v1/jobs", {{"model", model_}, {"batch", batch}}, h);
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no reply");
    return r && r->status == 201 ? json::parse(r->body)["id"].get<int64_t>() : 0;
  }
  static json Body(const httplib::Result& r) { return json::parse(r->body); }
  static std::string Error(const httplib::Result& r) { return json::parse(r->body).at("error"); }

  // Connects, sends `bytes`, reads until the server closes or `wait_s` passes.
  std::string Raw(const std::string& bytes, int wait_s = 5, bool half_close = false) const {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd);
      return "(connect failed)";
    }
    for (size_t off = 0; off < bytes.size();) {
      ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    if (half_close) shutdown(fd, SHUT_WR);
    timeval tv{wait_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string reply;
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) reply.append(buf, static_cast<size_t>(n));
    close(fd);
    return reply;
  }
  // A connected socket to the server.
  int Connect() const {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  }
  static std::string ReplyBody(const std::string& reply) {
    size_t p = reply.find("\r\n\r\n");
    return p == std::string::npos ? "" : reply.substr(p + 4);
  }

  std::string dir_, model_;
  ServiceOptions opts_;
  std::unique_ptr<Service> service_;
  OneJobPerGpu* sched_ = nullptr;
  std::thread thread_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
};

// The prediction path and the job queue without HTTP: DIR/models holds m.onnx
// (the fake engine's model) and junk.onnx (not a model) and is the only model
// root; DIR/uploads (1 MiB quota), DIR/jobs.db; jobs placed one per GPU on
// `gpus` GPUs (Jobs built by MakeJobs).
class PartsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::canonical(MakeTempDir()).string();
    std::filesystem::create_directory(dir_ + "/models");
    std::filesystem::create_directory(dir_ + "/uploads");
    std::ofstream(dir_ + "/models/m.onnx") << kFakeModelMagic << " m";
    std::ofstream(dir_ + "/models/junk.onnx") << "junk";
    auto roots = ModelRoots::Create({dir_ + "/models"});
    ASSERT_TRUE(roots.ok()) << roots.message();
    roots_ = std::make_unique<ModelRoots>(std::move(roots).value());
    uploads_ = std::make_unique<UploadStore>(dir_ + "/uploads", 1 << 20);
    predictions_ = std::make_unique<Predictions>(&engine_, roots_.get(), uploads_.get(), &metrics_, 1000);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // The job store and queue over predictions_, placing one job per GPU on `gpus` GPUs.
  void MakeJobs(int gpus, JobLimits limits = {}) {
    jobs_.reset();
    store_.reset();
    auto store = JobStore::Open(dir_ + "/jobs.db");
    ASSERT_TRUE(store.ok()) << store.message();
    store_ = std::move(store).value();
    jobs_ = std::make_unique<Jobs>(store_.get(), std::make_unique<OneJobPerGpu>(gpus), predictions_.get(),
                                   uploads_.get(), &metrics_, limits);
    ASSERT_TRUE(jobs_->Restore().ok());
  }
  // A parsed request for `model` (the client's name) on an RTX3090.
  static JobRequest Request(const std::string& model, int64_t batch, int64_t gpus = 1) {
    JobRequest r;
    r.spec.model = r.spec.model_name = model;
    r.spec.batch = batch;
    r.spec.gpus = gpus;
    r.spec.gpu = "RTX3090";
    return r;
  }
  std::string dir_;
  FakeEngine engine_;
  Metrics metrics_;
  std::unique_ptr<ModelRoots> roots_;
  std::unique_ptr<UploadStore> uploads_;
  std::unique_ptr<Predictions> predictions_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<Jobs> jobs_;
};

}  // namespace gpucast::service::testing
