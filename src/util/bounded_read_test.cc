#include "util/bounded_read.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpucast {
namespace {

using ::testing::HasSubstr;

class BoundedReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpucast-bounded-read.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_;
};

TEST_F(BoundedReadTest, ReadsARegularFileWithinItsLimit) {
  std::ofstream(dir_ + "/key.pem") << "-----BEGIN KEY-----\nabc\n";
  Result<std::string> r = ReadFileBounded(dir_ + "/key.pem", 1024, 5);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, "-----BEGIN KEY-----\nabc\n");
  EXPECT_THAT(ReadFileBounded(dir_ + "/key.pem", 10, 5).message(),
              HasSubstr("key.pem: larger than 10 bytes"));
  EXPECT_THAT(ReadFileBounded(dir_ + "/absent.pem", 10, 5).message(),
              HasSubstr("absent.pem: cannot open: No such file or directory"));
}

// A FIFO nobody writes to would block a plain open() for ever (the SIGHUP
// thread of gpucast serve, issue 31 item 8): refused at once instead.
TEST_F(BoundedReadTest, AFifoADirectoryAndADeviceAreRefusedAtOnce) {
  ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THAT(ReadFileBounded(dir_ + "/fifo", 1024, 5).message(), HasSubstr("fifo: not a regular file (a FIFO)"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4.0);
  EXPECT_THAT(ReadFileBounded(dir_, 1024, 5).message(), HasSubstr("not a regular file (a directory)"));
  EXPECT_THAT(ReadFileBounded("/dev/zero", 1024, 5).message(), HasSubstr("/dev/zero: not a regular file (a device)"));
}

}  // namespace
}  // namespace gpucast
