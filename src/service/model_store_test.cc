// Models by content address: the store (routes_models_test.cc: the routes).
#include "service/model_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "service/sha256.h"

namespace gpucast::service {
namespace {

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

}  // namespace
}  // namespace gpucast::service
