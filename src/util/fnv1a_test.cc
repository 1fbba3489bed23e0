#include "util/fnv1a.h"

#include <gtest/gtest.h>

namespace gpucast {
namespace {

TEST(Fnv1a, PublishedReferenceVectors) {
  // FNV-1a 64 test vectors (isthe.com/chongo/tech/comp/fnv).
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
  static_assert(Fnv1a64("a") == 0xaf63dc4c8601ec8cULL);  // usable at compile time
}

TEST(Fnv1a, PiecesHashAsTheirConcatenation) {
  EXPECT_EQ(Fnv1a64("bar", Fnv1a64("foo")), Fnv1a64("foobar"));
  EXPECT_EQ(Fnv1a64("", Fnv1a64("foobar")), Fnv1a64("foobar"));
  // Bytes above 0x7f hash as unsigned (a signed char would sign-extend before the xor).
  EXPECT_EQ(Fnv1a64(std::string_view("\xff", 1)), (kFnv1a64Basis ^ 0xffULL) * 0x100000001b3ULL);
}

}  // namespace
}  // namespace gpucast
