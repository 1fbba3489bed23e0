#include "util/json_text.h"

#include <gtest/gtest.h>

namespace gpucast {
namespace {

TEST(JsonText, InvalidUtf8BecomesReplacementCharacterInsteadOfThrowing) {
  nlohmann::json j{{"file", std::string("/tmp/v\xff.onnx")}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // what the commands called
  EXPECT_EQ(JsonText(j), "{\"file\":\"/tmp/v\xef\xbf\xbd.onnx\"}");
  nlohmann::ordered_json o{{"b", 1}, {"a", std::string("\xc3")}};
  EXPECT_EQ(JsonText(o, 2), "{\n  \"b\": 1,\n  \"a\": \"\xef\xbf\xbd\"\n}");
  // Valid UTF-8 is written unchanged (not escaped).
  EXPECT_EQ(JsonText(nlohmann::json("r\xc3\xa9sum\xc3\xa9")), "\"r\xc3\xa9sum\xc3\xa9\"");
}

}  // namespace
}  // namespace gpucast
