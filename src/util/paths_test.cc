#include "util/paths.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

namespace gpucast {
namespace {

namespace fs = std::filesystem;

// The test binary lives in the build tree, whose share/gpucast links to the checkout.
TEST(Paths, BuildTreeFindsTheCheckoutsFilesWithoutCompiledInPaths) {
  unsetenv("GPUCAST_HOME");
  unsetenv("GPUCAST_DATA");
  ASSERT_FALSE(ShareDir().empty());
  EXPECT_EQ(HomeDir(), ShareDir());
  EXPECT_EQ(DataDir(), ShareDir() + "/data");
  EXPECT_TRUE(fs::equivalent(HomeDir() + "/models/catalog.json",
                             std::string(GPUCAST_SOURCE_DIR) + "/models/catalog.json"));
}

TEST(Paths, EnvironmentOverrides) {
  setenv("GPUCAST_HOME", "/opt/h", 1);
  setenv("GPUCAST_DATA", "/opt/d", 1);
  EXPECT_EQ(HomeDir(), "/opt/h");
  EXPECT_EQ(DataDir(), "/opt/d");
  setenv("GPUCAST_DATA", "", 1);  // empty counts as unset
  EXPECT_EQ(DataDir(), ShareDir() + "/data");
  unsetenv("GPUCAST_HOME");
  unsetenv("GPUCAST_DATA");
}

}  // namespace
}  // namespace gpucast
