#include "util/fresh_paths.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpucast {
namespace {

namespace fs = std::filesystem;

class FreshPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpucast-fresh-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Touch(const std::string& p, const std::string& text = "x") { std::ofstream(p) << text; }
  std::string dir_;
};

TEST_F(FreshPathsTest, RemovesOnlyWhatDidNotExistBefore) {
  const std::string db = dir_ + "/jobs.db", models = dir_ + "/jobs.db.models", old = dir_ + "/old.db",
                    old_dir = dir_ + "/old.db.models";
  Touch(old, "keep me");
  fs::create_directory(old_dir);
  Touch(old_dir + "/a.onnx");
  {
    FreshPaths fresh({db, models, old, old_dir, ""});
    EXPECT_EQ(fresh.fresh(), (std::vector<std::string>{db, models}));
    Touch(db);
    fs::create_directory(models);
    Touch(models + "/upload.onnx");
    Touch(old, "changed by this run");  // existed before: never removed
  }
  EXPECT_FALSE(fs::exists(db));
  EXPECT_FALSE(fs::exists(models));
  EXPECT_TRUE(fs::exists(old));
  EXPECT_TRUE(fs::exists(old_dir + "/a.onnx"));
}

TEST_F(FreshPathsTest, KeepLeavesEverything) {
  const std::string db = dir_ + "/jobs.db";
  {
    FreshPaths fresh({db});
    Touch(db);
    fresh.Keep();
  }
  EXPECT_TRUE(fs::exists(db));
}

TEST_F(FreshPathsTest, NotCreatedIsNoError) {
  { FreshPaths fresh({dir_ + "/never", dir_ + "/missing/deeper"}); }
  EXPECT_TRUE(fs::exists(dir_));
}

TEST_F(FreshPathsTest, ASymlinkIsRemovedNotItsTarget) {
  const std::string target = dir_ + "/target", link = dir_ + "/link";
  fs::create_directory(target);
  Touch(target + "/precious");
  {
    FreshPaths fresh({link});
    fs::create_directory_symlink(target, link);
  }
  EXPECT_FALSE(fs::exists(fs::symlink_status(link)));
  EXPECT_TRUE(fs::exists(target + "/precious"));
}

TEST_F(FreshPathsTest, ADanglingSymlinkThatExistedIsKept) {
  const std::string link = dir_ + "/dangling";
  fs::create_symlink(dir_ + "/nowhere", link);
  {
    FreshPaths fresh({link});
    EXPECT_TRUE(fresh.fresh().empty());
  }
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
}

}  // namespace
}  // namespace gpucast
