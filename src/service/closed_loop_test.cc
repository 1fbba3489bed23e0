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

TEST_F(ClosedLoopTest, ObservationIsStoredAndShownWithTheJob) {
  Start();
  int64_t id = Submit(4);  // fake engine: predicted 40
  auto g = client_->Get("/v1/jobs/" + std::to_string(id));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Body(g)["observed_util"].is_null());
  EXPECT_EQ(Body(g)["observed_samples"], 0);

  auto r = Post("/v1/jobs/" + std::to_string(id) + "/observations",
                {{"gpu_util", 90}, {"source", "nvidia-smi"}, {"samples", 3}, {"gpu", "RTX3090"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["observed_util"], 90.0);
  EXPECT_EQ(Body(r)["predicted_util"], 40.0);
  r = Post("/v1/jobs/" + std::to_string(id) + "/observations", {{"gpu_util", 50}, {"source", "slurm"}});
  ASSERT_EQ(r->status, 201) << r->body;

  g = client_->Get("/v1/jobs/" + std::to_string(id));
  json j = Body(g);
  EXPECT_DOUBLE_EQ(j["observed_util"].get<double>(), (90.0 * 3 + 50.0) / 4);  // sample-weighted: 80
  EXPECT_EQ(j["observed_samples"], 4);
  // The list shows it too.
  EXPECT_EQ(Body(client_->Get("/v1/jobs"))["jobs"][0]["observed_samples"], 4);

  // /metrics: |40 - 90| = 50 and |40 - 50| = 10, by source.
  std::string m = client_->Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("gpucast_prediction_abs_error_bucket{le=\"10\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_prediction_abs_error_bucket{le=\"50\"} 2\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_prediction_abs_error_sum 60\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_observations_total{source=\"nvidia-smi\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_observations_total{source=\"slurm\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_http_requests_total{route=\"POST /v1/jobs/{id}/observations\",code=\"201\"} 2"));

  // Durable: a restarted service shows the same.
  service_->Stop();
  thread_.join();
  service_.reset();
  Start();
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(id)))["observed_samples"], 4);
}

TEST_F(ClosedLoopTest, ARetriedObservationWithItsIdempotencyKeyIsStoredOnce) {
  Start();
  int64_t id = Submit(4);  // fake engine: predicted 40
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/observations";
  const json body = {{"gpu_util", 90}, {"source", "slurm"}, {"samples", 80}};
  httplib::Headers key = {{"Idempotency-Key", "slurm-epilog-test-42"}};
  auto a = Post(path, body, key);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->status, 201) << a->body;
  EXPECT_EQ(a->get_header_value("Idempotent-Replayed"), "");
  auto b = Post(path, body, key);  // Slurm reran the epilog
  ASSERT_EQ(b->status, 201) << b->body;
  EXPECT_EQ(b->get_header_value("Idempotent-Replayed"), "true");
  EXPECT_EQ(Body(b)["observed_samples"], 80);
  json j = Body(client_->Get("/v1/jobs/" + std::to_string(id)));
  EXPECT_EQ(j["observed_samples"], 80);
  EXPECT_EQ(j["observed_util"], 90.0);
  // The same key with another measurement: refused, nothing stored.
  auto c = Post(path, {{"gpu_util", 10}, {"source", "slurm"}, {"samples", 80}}, key);
  ASSERT_EQ(c->status, 422) << c->body;
  EXPECT_EQ(Body(c)["error"], "Idempotency-Key 'slurm-epilog-test-42' was already used for observation 1 of job " +
                                  std::to_string(id) + " with a different request");
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(id)))["observed_samples"], 80);
  // Too long a key: 400.
  auto d = Post(path, body, {{"Idempotency-Key", std::string(256, 'k')}});
  EXPECT_EQ(d->status, 400);
  // Counted once in /metrics: |40 - 90| = 50.
  std::string m = client_->Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("gpucast_observations_total{source=\"slurm\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_prediction_abs_error_sum 50\n"));
  // After a restart the key still holds.
  service_->Stop();
  thread_.join();
  service_.reset();
  Start();
  auto e = Post(path, body, key);
  ASSERT_EQ(e->status, 201) << e->body;
  EXPECT_EQ(e->get_header_value("Idempotent-Replayed"), "true");
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(id)))["observed_samples"], 80);
}

TEST_F(ClosedLoopTest, AnObservationAboveTheSharePlusMarginIsOveruse) {
  Start();
  int64_t id = Submit(2);
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/observations";
  json j = Body(client_->Get("/v1/jobs/" + std::to_string(id)));
  EXPECT_EQ(j["overuse"], false);
  EXPECT_TRUE(j["share_pct"].is_null());
  // shard 1 of 8 = 12.5%; 30 <= 12.5 + 20: not overuse.
  auto r = Post(path, {{"gpu_util", 30}, {"source", "nvidia-smi"}, {"share_pct", 12.5}});
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["overuse"], false);
  // 33 > 12.5 + 20.
  r = Post(path, {{"gpu_util", 33}, {"source", "nvidia-smi"}, {"share_pct", 12.5}});
  ASSERT_EQ(r->status, 201) << r->body;
  j = Body(client_->Get("/v1/jobs/" + std::to_string(id)));
  EXPECT_EQ(j["overuse"], true);
  EXPECT_EQ(j["share_pct"], 12.5);
  // A margin of 30 points: 33 <= 42.5.
  int64_t other = Submit(1);
  r = Post("/v1/jobs/" + std::to_string(other) + "/observations",
           {{"gpu_util", 33}, {"source", "slurm"}, {"share_pct", 12.5}, {"overuse_margin", 30}});
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["overuse"], false);
  std::string m = client_->Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("gpucast_overuse_total{source=\"nvidia-smi\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_overuse_total{source=\"slurm\"} 0\n"));
}

TEST_F(ClosedLoopTest, BadObservationsGet400UnknownJobs404) {
  Start();
  int64_t id = Submit(2);
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/observations";
  auto r = Post(path, {{"gpu_util", 101}, {"source", "dcgm"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Body(r)["error"].get<std::string>(), HasSubstr("field 'gpu_util'"));
  r = client_->Post(path.c_str(), "{\"gpu_util\": 5", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Body(r)["error"].get<std::string>(), HasSubstr("malformed JSON"));
  r = client_->Post(path.c_str(), "gpu_util=5", "text/plain");
  EXPECT_EQ(r->status, 415);
  r = Post("/v1/jobs/999/observations", {{"gpu_util", 50}, {"source", "dcgm"}});
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Body(r)["error"], "no job 999");
  r = client_->Get(path.c_str());
  EXPECT_EQ(r->status, 405);
  // Nothing was stored.
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(id)))["observed_samples"], 0);
}

TEST_F(ClosedLoopTest, WithATokenObservationsAndReloadNeedIt) {
  opts_.token = "s3cret";
  Start();
  httplib::Headers auth = {{"Authorization", "Bearer s3cret"}};
  int64_t id = Submit(2, auth);
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/observations";
  auto r = Post(path, {{"gpu_util", 50}, {"source", "dcgm"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = Post(path, {{"gpu_util", 50}, {"source", "dcgm"}}, {{"Authorization", "Bearer wrong"}});
  EXPECT_EQ(r->status, 401);
  r = Post(path, {{"gpu_util", 50}, {"source", "dcgm"}}, auth);
  EXPECT_EQ(r->status, 201) << r->body;
  r = client_->Post("/v1/admin/reload", "", "application/json");
  EXPECT_EQ(r->status, 401);
}

TEST_F(ClosedLoopTest, ReloadOverHttpSwapsOrKeepsTheOldPredictor) {
  // A reloadable engine over a file holding the predicted utilization.
  const std::string file = dir_ + "/predictor.txt";
  std::ofstream(file) << "30";
  auto load = [](const std::string& f) -> Result<std::unique_ptr<PredictionEngine>> {
    std::ifstream in(f);
    double u = -1;
    if (!(in >> u) || u < 0 || u > 100) return Status::Error(f + ": not a predictor");
    struct Const : testing::FakeEngine {
      double u;
      explicit Const(double v) : u(v) {}
      Result<Prediction> Predict(const JobSpec& s, const std::vector<int>& fds, bool* hit) override {
        RETURN_IF_ERROR(testing::FakeEngine::Predict(s, fds, hit).status());
        return Prediction{u, u, u};
      }
    };
    return std::unique_ptr<PredictionEngine>(std::make_unique<Const>(u));
  };
  auto engine = ReloadingEngine::Create(file, load);
  ASSERT_TRUE(engine.ok()) << engine.message();
  Start(std::move(engine).value());
  auto predict = [&] { return Body(Post("/v1/predict", {{"model", model_}}))["predicted_util"].get<double>(); };
  EXPECT_EQ(predict(), 30);
  std::ofstream(file) << "70";
  auto r = client_->Post("/v1/admin/reload", "", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(predict(), 70);
  std::ofstream(file) << "garbage";
  r = client_->Post("/v1/admin/reload", "", "application/json");
  EXPECT_EQ(r->status, 422);
  EXPECT_THAT(Body(r)["error"].get<std::string>(), HasSubstr(file + ": not a predictor"));
  EXPECT_EQ(predict(), 70);
  std::string m = client_->Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("gpucast_predictor_reloads_total 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_predictor_reload_failures_total 1\n"));
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
  int64_t id = Submit(2);  // predicted 20
  ASSERT_TRUE(service_->Tick(1000).ok());  // placed on GPU 0, alone
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
