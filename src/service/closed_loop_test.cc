// The closed loop through a real HTTP server on 127.0.0.1: observations in,
// shown with the job, in /metrics; reload over HTTP; a DCGM exporter page
// served by the test on loopback and scraped by the service.
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/reload.h"
#include "service/server.h"
#include "service/testing.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class ClosedLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpucast-loop-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    model_ = dir_ + "/m.onnx";
    std::ofstream(model_) << testing::kFakeModelMagic << " model bytes";
    opts_.db_path = dir_ + "/jobs.db";
    opts_.model_roots = {dir_};
    opts_.run_loop = false;  // the test drives Tick()
  }
  void TearDown() override {
    if (service_) {
      service_->Stop();
      thread_.join();
      service_.reset();
    }
    fs::remove_all(dir_);
  }

  void Start(std::unique_ptr<PredictionEngine> engine = std::make_unique<testing::FakeEngine>(), int gpus = 2) {
    Result<std::unique_ptr<Service>> s =
        Service::Create(opts_, std::move(engine), std::make_unique<testing::OneJobPerGpu>(gpus));
    ASSERT_TRUE(s.ok()) << s.message();
    service_ = std::move(s).value();
    Result<int> port = service_->Bind("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.message();
    thread_ = std::thread([this] { EXPECT_TRUE(service_->Run().ok()); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
    client_->set_read_timeout(10, 0);
    for (int i = 0; i < 200; ++i) {
      if (client_->Get("/healthz")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "server did not come up";
  }
  httplib::Result Post(const std::string& path, const json& body, httplib::Headers h = {}) {
    return client_->Post(path.c_str(), h, body.dump(), "application/json");
  }
  int64_t Submit(int64_t batch, httplib::Headers h = {}) {
    auto r = Post("/v1/jobs", {{"model", model_}, {"batch", batch}}, h);
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no reply");
    return r && r->status == 201 ? json::parse(r->body)["id"].get<int64_t>() : 0;
  }
  static json Body(const httplib::Result& r) { return json::parse(r->body); }

  std::string dir_, model_;
  ServiceOptions opts_;
  std::unique_ptr<Service> service_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

// A client reloading in a loop cannot flood the log: one line per outcome per
// 10 s, the next line counts those not logged.
TEST_F(ClosedLoopTest, ReloadLogLinesAreRateLimited) {
  const std::string file = dir_ + "/predictor.txt";
  std::ofstream(file) << "30";
  auto load = [](const std::string& f) -> Result<std::unique_ptr<PredictionEngine>> {
    std::ifstream in(f);
    double u = -1;
    if (!(in >> u)) return Status::Error(f + ": not a predictor");
    return std::unique_ptr<PredictionEngine>(std::make_unique<testing::FakeEngine>());
  };
  auto engine = ReloadingEngine::Create(file, load);
  ASSERT_TRUE(engine.ok());
  Start(std::move(engine).value());
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 50; ++i) ASSERT_EQ(client_->Post("/v1/admin/reload", "", "application/json")->status, 200);
  std::string log = ::testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (size_t p = log.find("predictor reloaded"); p != std::string::npos; p = log.find("predictor reloaded", p + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_THAT(client_->Get("/metrics")->body, HasSubstr("gpucast_predictor_reloads_total 50\n"));
}

TEST_F(ClosedLoopTest, DcgmUtilizationOfAJobAloneOnItsGpuIsObserved) {
  // The test's own exporter page on loopback: GPU 0 at 73%, GPU 1 at 11%.
  httplib::Server exporter;
  exporter.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\", UUID=\"GPU-a\"} 73\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\", UUID=\"GPU-b\"} 11\n",
        "text/plain; version=0.0.4");
  });
  int eport = exporter.bind_to_any_port("127.0.0.1");
  ASSERT_GT(eport, 0);
  std::thread ethread([&] { exporter.listen_after_bind(); });
  opts_.dcgm_urls = {"http://127.0.0.1:" + std::to_string(eport) + "/metrics"};
  opts_.dcgm_interval_s = 0.05;
  Start();
  int64_t id = Submit(2);  // predicted 20; placed on GPU 0, alone, by the submission's pass
  json j;
  for (int i = 0; i < 400; ++i) {
    j = Body(client_->Get("/v1/jobs/" + std::to_string(id)));
    if (j["observed_samples"].get<int64_t>() >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(j["placement"], json({0}));
  EXPECT_GE(j["observed_samples"].get<int64_t>(), 2);
  EXPECT_DOUBLE_EQ(j["observed_util"].get<double>(), 73);
  std::string m = client_->Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("gpucast_dcgm_scrapes_total{outcome=\"ok\"}"));
  EXPECT_THAT(m, HasSubstr("gpucast_dcgm_gpu_samples_total{outcome=\"idle\"}"));  // GPU 1
  EXPECT_THAT(m, ::testing::Not(HasSubstr("gpucast_observations_total{source=\"dcgm\"} 0\n")));
  service_->Stop();
  thread_.join();
  service_.reset();
  exporter.stop();
  ethread.join();
}

}  // namespace
}  // namespace gpucast::service
