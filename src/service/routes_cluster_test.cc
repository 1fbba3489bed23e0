// GET /v1/cluster through a real HTTP server (service_fixture.h).
#include "service/service_fixture.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using testing::ServiceTest;

TEST_F(ServiceTest, ClusterShowsGpusPolicyAndQueue) {
  StartServer(1);
  ASSERT_EQ(PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}})->status, 201);
  ASSERT_EQ(PostJson("/v1/jobs", {{"model", model_}, {"batch", 2}})->status, 201);
  auto r = client_->Get("/v1/cluster");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  json c = Body(r);
  EXPECT_EQ(c["policy"], "one-per-gpu (test)");
  EXPECT_EQ(c["gpus"].size(), 1u);
  EXPECT_EQ(c["gpus"][0]["jobs"], json({1}));
  EXPECT_EQ(c["queued"], json({2}));
  EXPECT_EQ(client_->Post("/v1/cluster", "{}", "application/json")->status, 405);
}

}  // namespace
}  // namespace gpucast::service
