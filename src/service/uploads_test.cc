// Uploads stored by content: references, quota, restore at start.
#include "service/uploads.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "service/sha256.h"

namespace gpucast::service {
namespace {

namespace fs = std::filesystem;

class UploadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpucast-uploads-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(UploadsTest, ReferencesKeepTheFileAndTheQuotaHolds) {
  UploadStore s(dir_, 20);
  const std::string a = "0123456789", sha = Sha256Hex(a);
  int status = 0;
  ASSERT_TRUE(s.Acquire(sha, a, &status).ok());
  ASSERT_TRUE(s.Acquire(sha, a, &status).ok());  // the same bytes share the file
  EXPECT_EQ(s.bytes(), 10u);
  EXPECT_TRUE(fs::exists(s.Path(sha)));
  EXPECT_EQ(fs::status(s.Path(sha)).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  const std::string b(11, 'b');
  Status over = s.Acquire(Sha256Hex(b), b, &status);
  EXPECT_EQ(status, 507);
  EXPECT_EQ(over.message(), "upload quota full: 10 of 20 bytes held by queued and running jobs (--upload-quota-bytes)");
  s.Release(sha);
  EXPECT_TRUE(fs::exists(s.Path(sha)));
  s.Release(sha);
  EXPECT_FALSE(fs::exists(s.Path(sha)));
  EXPECT_EQ(s.bytes(), 0u);
  {
    UploadRef ref(&s);
    ASSERT_TRUE(s.Acquire(sha, a, &status).ok());
    ref.Set(sha);
  }
  EXPECT_FALSE(fs::exists(s.Path(sha)));  // released with the guard
}

TEST_F(UploadsTest, RestoreKeepsWhatLiveJobsNameAndSweepsTheRest) {
  const std::string a = "live bytes", sha = Sha256Hex(a);
  std::ofstream(dir_ + "/" + sha + ".onnx") << a;
  std::ofstream(dir_ + "/" + std::string(64, 'f') + ".onnx") << "stray";
  std::ofstream(dir_ + "/x.onnx.tmp.1.2") << "interrupted";
  Job live;
  live.spec.model = kUploadPrefix + sha;
  Job gone;
  gone.spec.model = std::string(kUploadPrefix) + std::string(64, 'e');
  UploadStore s(dir_, 1000);
  ASSERT_TRUE(s.Restore({live, gone}).ok());
  EXPECT_TRUE(fs::exists(s.Path(sha)));
  EXPECT_EQ(s.bytes(), a.size());
  EXPECT_FALSE(fs::exists(dir_ + "/" + std::string(64, 'f') + ".onnx"));
  EXPECT_FALSE(fs::exists(dir_ + "/x.onnx.tmp.1.2"));
  s.ReleaseJob(live.spec);
  EXPECT_FALSE(fs::exists(s.Path(sha)));
}

// ObservedGraphs sweeps its directory at start by the same rule as the uploads:
// only a regular "<sha>.onnx" that an observed job names stays and is counted.
TEST_F(UploadsTest, ObservedGraphsRestoreKeepsWhatObservedJobsNameAndSweepsTheRest) {
  const std::string a = "observed bytes", sha = Sha256Hex(a);
  const std::string kept_dir = dir_ + "/observed";
  auto g = ObservedGraphs::Open(kept_dir, 1000);
  ASSERT_TRUE(g.ok()) << g.message();
  std::ofstream(kept_dir + "/" + sha + ".onnx") << a;
  std::ofstream(kept_dir + "/" + std::string(64, 'f') + ".onnx") << "not observed";
  std::ofstream(kept_dir + "/" + sha + ".onnx.tmp.1.2") << "interrupted";
  fs::create_symlink(kept_dir + "/" + sha + ".onnx", kept_dir + "/" + std::string(64, 'e') + ".onnx");
  ASSERT_TRUE((*g)->Restore({sha, std::string(64, 'e')}).ok());
  EXPECT_EQ((*g)->bytes(), a.size());
  EXPECT_TRUE(fs::exists(kept_dir + "/" + sha + ".onnx"));
  EXPECT_FALSE(fs::exists(kept_dir + "/" + std::string(64, 'f') + ".onnx"));
  EXPECT_FALSE(fs::exists(kept_dir + "/" + sha + ".onnx.tmp.1.2"));
  EXPECT_FALSE(fs::is_symlink(kept_dir + "/" + std::string(64, 'e') + ".onnx"));
  fs::remove_all(kept_dir);
  EXPECT_EQ((*g)->Restore({sha}).message(), kept_dir + ": cannot read the observed graphs' directory");
  EXPECT_EQ((*g)->bytes(), a.size());  // a directory that cannot be listed leaves the count as it was
}

}  // namespace
}  // namespace gpucast::service
