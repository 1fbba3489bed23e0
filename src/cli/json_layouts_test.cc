#include "cli/json_layouts.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace gpucast::cli {
namespace {

TEST(JsonLayoutsTest, NamesAreUniqueAndVersioned) {
  std::set<std::string> names;
  for (const JsonLayout& l : kJsonLayouts) {
    EXPECT_TRUE(names.insert(l.name).second) << l.name;
    EXPECT_GE(l.version, 1) << l.name;
    EXPECT_EQ(std::string(l.name).rfind("gpucast.", 0), 0u) << l.name;
  }
}

TEST(JsonLayoutsTest, SchemaFieldOfARow) {
  EXPECT_EQ(SchemaField("gpucast.predict"), (nlohmann::json{{"name", "gpucast.predict"}, {"version", 1}}));
}

TEST(JsonLayoutsDeathTest, UnknownNameAborts) {
  EXPECT_DEATH(SchemaField("gpucast.nosuch"), "no JSON layout named 'gpucast.nosuch'");
}

}  // namespace
}  // namespace gpucast::cli
