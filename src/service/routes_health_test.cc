// GET /healthz and GET /metrics through a real HTTP server (service_fixture.h).
#include "service/service_fixture.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::ServiceTest;

TEST_F(ServiceTest, HealthzReportsOk) {
  StartServer();
  auto r = client_->Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Body(r)["status"], "ok");
  EXPECT_EQ(Body(r)["predictor"], "fake engine");
  // No paths (the database's was there once) for anyone who asks.
  EXPECT_FALSE(Body(r).contains("db"));
  EXPECT_EQ(r->body.find(dir_), std::string::npos) << r->body;
}

TEST_F(ServiceTest, MetricsInPrometheusFormat) {
  StartServer();
  PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}});     // placed on GPU 0
  PostJson("/v1/jobs", {{"model", dir_ + "/bad.onnx"}, {"batch", 1}});  // a prediction error
  PostJson("/v1/predict", {{"model", model_}, {"batch", 1}});
  PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}});     // GPU 1
  PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}});     // waits
  ASSERT_TRUE(service_->Tick(6).ok());
  auto r = client_->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->get_header_value("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
  const std::string& m = r->body;
  EXPECT_THAT(m, HasSubstr("gpucast_http_requests_total{route=\"POST /v1/jobs\",code=\"201\"} 3\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_http_requests_total{route=\"POST /v1/jobs\",code=\"422\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_http_request_duration_seconds_count{route=\"POST /v1/jobs\"} 4\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_http_request_duration_seconds_bucket{route=\"POST /v1/jobs\",le=\"+Inf\"} 4\n"));
  EXPECT_THAT(m, HasSubstr("# TYPE gpucast_http_request_duration_seconds histogram\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_predictions_total{result=\"error\",cache=\"miss\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_predictions_total{result=\"ok\",cache=\"hit\"} 3\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_placement_decisions_total{kind=\"place\"} 2\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_queue_length 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_running_jobs 2\n"));
}

}  // namespace
}  // namespace gpucast::service
