#include "util/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace gpucast {
namespace {

TEST(Utf8, SequenceLengthsOfWellFormedText) {
  EXPECT_EQ(Utf8SequenceLength("a", 0), 1u);
  EXPECT_EQ(Utf8SequenceLength("\xC3\xA9", 0), 2u);          // é
  EXPECT_EQ(Utf8SequenceLength("\xC2\x80", 0), 2u);          // U+0080, a C1 control: well formed
  EXPECT_EQ(Utf8SequenceLength("\xE2\x82\xAC", 0), 3u);      // €
  EXPECT_EQ(Utf8SequenceLength("\xF0\x9F\x98\x80", 0), 4u);  // U+1F600
  EXPECT_EQ(Utf8SequenceLength("\xF4\x8F\xBF\xBF", 0), 4u);  // U+10FFFF, the last code point
  EXPECT_EQ(FirstInvalidUtf8("plain \xC3\xA9\xE2\x82\xAC"), std::string_view::npos);
}

TEST(Utf8, IllFormedSequencesAreNamedByOffset) {
  EXPECT_EQ(Utf8SequenceLength("\xC0\xAF", 0), 0u);          // overlong '/'
  EXPECT_EQ(Utf8SequenceLength("\xE0\x80\xAF", 0), 0u);      // overlong, 3 bytes
  EXPECT_EQ(Utf8SequenceLength("\xED\xA0\x80", 0), 0u);      // a surrogate, U+D800
  EXPECT_EQ(Utf8SequenceLength("\xF4\x90\x80\x80", 0), 0u);  // past U+10FFFF
  EXPECT_EQ(Utf8SequenceLength("\xF5\x80\x80\x80", 0), 0u);
  EXPECT_EQ(Utf8SequenceLength("\x80", 0), 0u);              // a lone continuation byte
  EXPECT_EQ(Utf8SequenceLength(std::string_view("\xE2\x82", 2), 0), 0u);  // truncated
  EXPECT_EQ(Utf8SequenceLength("\xE2\x28\xA1", 0), 0u);      // a bad continuation byte
  EXPECT_EQ(FirstInvalidUtf8("ok\xC3\xA9 \xFF rest"), 5u);
  EXPECT_EQ(FirstInvalidUtf8(std::string_view("ab\xF0\x9F\x98", 5)), 2u);
}

}  // namespace
}  // namespace gpucast
