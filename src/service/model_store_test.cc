// Models by content address: the store, and a pod or job naming sha256:<hex>.
#include "service/model_store.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "service/service_fixture.h"
#include "service/sha256.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::string TempStore(const std::string& name) {
  const std::string d = std::filesystem::temp_directory_path() / ("gpucast_store_" + name + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

TEST(ModelStore, StoresByDigestAndChecksTheContentOnOpen) {
  const std::string dir = TempStore("a");
  auto s = ModelStore::Open(dir, 1000);
  ASSERT_TRUE(s.ok()) << s.message();
  bool created = false;
  int status = 0;
  Result<std::string> name = (*s)->Put("model bytes", &created, &status);
  ASSERT_TRUE(name.ok()) << name.message();
  EXPECT_EQ(*name, "sha256:" + Sha256Hex("model bytes"));  // sha256sum of the file
  EXPECT_TRUE(created);
  EXPECT_TRUE(IsContentAddress(*name));
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/" + name->substr(7) + ".onnx").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE((*s)->Put("model bytes", &created, &status).ok());
  EXPECT_FALSE(created);  // the same content: the same file
  EXPECT_EQ((*s)->bytes(), 11u);
  EXPECT_TRUE((*s)->Open(*name).ok());
  EXPECT_EQ((*s)->Size(*name), 11);
  // Over the quota: 507.
  EXPECT_FALSE((*s)->Put(std::string(990, 'x'), &created, &status).ok());
  EXPECT_EQ(status, 507);
  // Unknown digests and names that are not content addresses.
  EXPECT_THAT((*s)->Open("sha256:" + std::string(64, '0')).message(), HasSubstr("no model stored under this digest"));
  EXPECT_FALSE(IsContentAddress("sha256:ABC"));
  EXPECT_FALSE(IsContentAddress("sha256:" + std::string(63, 'a') + "/"));
  // A file changed on disk no longer has its name.
  std::ofstream(dir + "/" + name->substr(7) + ".onnx") << "other bytes";
  EXPECT_THAT((*s)->Open(*name).message(), HasSubstr("does not match its digest"));
  // Reopened: what is there is counted.
  auto again = ModelStore::Open(dir, 1000);
  EXPECT_EQ((*again)->bytes(), 11u);
  std::filesystem::remove_all(dir);
}

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
