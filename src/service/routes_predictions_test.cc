// POST /v1/predict through a real HTTP server (service_fixture.h).
#include "service/service_fixture.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::ServiceTest;

TEST_F(ServiceTest, PredictCreatesNoJobAndCachesTheGraph) {
  StartServer();
  auto a = PostJson("/v1/predict", {{"model", model_}, {"batch", 2}});
  auto b = PostJson("/v1/predict", {{"model", model_}, {"batch", 2}});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(Body(a)["predicted_util"], 20.0);
  EXPECT_EQ(Body(a)["predicted_util_interval"], json({15.0, 25.0}));
  EXPECT_EQ(Body(a)["cache"], "miss");
  EXPECT_EQ(Body(b)["cache"], "hit");
  EXPECT_EQ(Body(a)["gpu"], "RTX3090");
  // The fields a scheduler packs by, as `predict --json` names them: the test engine has
  // no memory model; an RTX 3090 has 24 GiB.
  EXPECT_TRUE(Body(a)["gpu_mem_interval"]["high"].is_null());
  EXPECT_EQ(Body(a)["gpu_mem_capacity_mib"], 24576.0);
  EXPECT_EQ(Body(a)["gpu_mem_fit"], "unknown");
  EXPECT_EQ(Body(client_->Get("/v1/jobs"))["jobs"].size(), 0u);
}

// The graphs' warnings (an eval-mode export predicts too little memory) reach the reply, as in
// `predict --json`; a graph without any gets an empty list.
TEST_F(ServiceTest, PredictRepliesWithTheGraphWarnings) {
  const std::string eval = dir_ + "/eval.onnx";
  std::ofstream(eval) << testing::kFakeModelMagic << " " << testing::kFakeEvalMode;
  StartServer();
  auto a = PostJson("/v1/predict", {{"model", eval}, {"batch", 2}});
  ASSERT_TRUE(a);
  ASSERT_EQ(a->status, 200) << a->body;
  ASSERT_EQ(Body(a)["warnings"].size(), 1u);
  EXPECT_THAT(Body(a)["warnings"][0].get<std::string>(), HasSubstr("looks like an eval-mode export"));
  auto b = PostJson("/v1/predict", {{"model", model_}, {"batch", 2}});
  ASSERT_TRUE(b);
  EXPECT_EQ(Body(b)["warnings"], json::array());
}

TEST_F(ServiceTest, PredictNeedsABatchLikeTheCli) {
  StartServer();
  auto r = PostJson("/v1/predict", {{"model", model_}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "field 'batch': missing (the batch size, an integer >= 1)");
}

TEST_F(ServiceTest, AnUploadForAPredictionIsNotKept) {
  StartServer();
  std::string bytes = std::string(testing::kFakeModelMagic) + " up";
  auto r = client_->Post("/v1/predict?batch=3&gpu=A100", bytes, "application/octet-stream");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["predicted_util"], 30.0);
  EXPECT_EQ(Body(r)["gpu"], "A100-40GB");
  EXPECT_EQ(Body(r)["gpu_mem_capacity_mib"], 40960.0);
  EXPECT_EQ(service_->upload_bytes(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(opts_.db_path + ".models"));
}

}  // namespace
}  // namespace gpucast::service
