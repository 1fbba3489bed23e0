// POST /v1/models and a job naming a stored model by its digest, through a
// real HTTP server with the fake engine (service_fixture.h).
#include <fstream>

#include "service/model_store.h"
#include "service/service_fixture.h"
#include "service/sha256.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class ModelRoutesTest : public testing::ServiceTest {};

TEST_F(ModelRoutesTest, AStoredModelIsNamedByItsDigest) {
  StartServer();
  const std::string bytes = std::string(testing::kFakeModelMagic) + " stored";
  auto r = client_->Post("/v1/models", bytes, "application/octet-stream");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string name = Body(r)["model"];
  EXPECT_EQ(name, "sha256:" + Sha256Hex(bytes));
  EXPECT_EQ(client_->Post("/v1/models", bytes, "application/octet-stream")->status, 200);
  EXPECT_EQ(client_->Get(("/v1/models/" + name).c_str())->status, 200);
  EXPECT_EQ(client_->Get(("/v1/models/sha256:" + std::string(64, 'e')).c_str())->status, 404);
  EXPECT_EQ(client_->Post("/v1/models", "{}", "application/json")->status, 415);
  // A job names it; the prediction is the one of the same bytes under a root.
  auto p = PostJson("/v1/predict", {{"model", name}, {"batch", 4}});
  ASSERT_EQ(p->status, 200) << p->body;
  EXPECT_EQ(Body(p)["model"], name);
  std::ofstream(dir_ + "/same.onnx") << bytes;
  EXPECT_EQ(Body(p)["predicted_util"], Body(PostJson("/v1/predict", {{"model", "same.onnx"}, {"batch", 4}}))["predicted_util"]);
  auto missing = PostJson("/v1/predict", {{"model", "sha256:" + std::string(64, 'e')}, {"batch", 4}});
  EXPECT_EQ(missing->status, 422);
  EXPECT_THAT(Error(missing), HasSubstr("no model stored under this digest (POST /v1/models stores one)"));
}

}  // namespace
}  // namespace gpucast::service
