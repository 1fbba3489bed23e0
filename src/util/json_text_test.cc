#include "util/json_text.h"

#include <stdexcept>

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

TEST(JsonErrorReason, DropsTheExceptionPrefixOnly) {
  try {
    nlohmann::json j = nlohmann::json::parse("{\"a\": ");
    FAIL() << j.dump();
  } catch (const nlohmann::json::exception& e) {
    const std::string what = e.what();
    ASSERT_EQ(what.rfind("[json.exception.parse_error.101] ", 0), 0u) << what;
    EXPECT_EQ(JsonErrorReason(e), what.substr(std::string("[json.exception.parse_error.101] ").size()));
  }
  try {
    nlohmann::json j = nlohmann::json::parse("1e400");
    FAIL() << j.dump();  // out_of_range 406
  } catch (const nlohmann::json::exception& e) {
    EXPECT_EQ(JsonErrorReason(e), "number overflow parsing '1e400'");
  }
  // Text without the prefix is kept whole.
  EXPECT_EQ(JsonErrorReason(std::runtime_error("[json.exception without a close")),
            "[json.exception without a close");
  EXPECT_EQ(JsonErrorReason(std::runtime_error("plain")), "plain");
}

TEST(JsonNestedDeeperThan, CountsBracketsOutsideStringsOnly) {
  EXPECT_FALSE(JsonNestedDeeperThan(R"({"a": 1})", 1));
  EXPECT_TRUE(JsonNestedDeeperThan(R"({"a": [1]})", 1));
  EXPECT_FALSE(JsonNestedDeeperThan(R"({"a": [1]})", 2));
  EXPECT_TRUE(JsonNestedDeeperThan("[", 0));
  // Brackets inside strings, and an escaped quote that does not end the string, are not nesting.
  EXPECT_FALSE(JsonNestedDeeperThan(R"({"a": "[[[{{"})", 1));
  EXPECT_FALSE(JsonNestedDeeperThan(R"({"a": "\"[[["})", 1));
  EXPECT_TRUE(JsonNestedDeeperThan(R"({"a": "\\", "b": [1]})", 1));  // an escaped backslash, then the quote that ends the string
  // Closing brackets give back depth: siblings are not deeper than one of them.
  EXPECT_FALSE(JsonNestedDeeperThan("[[1],[2],[3]]", 2));
  // A long run of openers is refused as soon as it passes the bound (no recursion).
  EXPECT_TRUE(JsonNestedDeeperThan(std::string(1 << 20, '['), 64));
}

}  // namespace
}  // namespace gpucast
