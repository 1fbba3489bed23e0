#include "cli/flags.h"

#include <gtest/gtest.h>

namespace gpucast::cli {
namespace {

TEST(ParseDimFlagsTest, ParsesNamedDims) {
  std::map<std::string, int64_t> dims;
  ASSERT_TRUE(ParseDimFlags({"seq=35", "tokens=384"}, &dims).ok());
  EXPECT_EQ(dims.at("seq"), 35);
  EXPECT_EQ(dims.at("tokens"), 384);
}

TEST(ParseDimFlagsTest, RejectsMalformed) {
  for (const char* bad : {"seq", "=3", "seq=", "seq=0", "seq=-4", "seq=3x", "seq=99999999999999999999"}) {
    std::map<std::string, int64_t> dims;
    Status s = ParseDimFlags({bad}, &dims);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.message(), std::string("--dim '") + bad +
                               "': expected NAME=VALUE with VALUE a positive integer");
  }
}

TEST(ParseDimFlagsTest, RejectsRepeatedName) {
  std::map<std::string, int64_t> dims;
  Status s = ParseDimFlags({"seq=3", "seq=4"}, &dims);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--dim 'seq=4': dimension given twice");
}

}  // namespace
}  // namespace gpucast::cli
