#include "util/status.h"

#include <gtest/gtest.h>

#include "util/checked.h"

namespace gpucast {
namespace {

Result<int> Half(int x) {
  if (x % 2) return Status::Error("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status::Ok().ok());
  Status e = Status::Error("bad");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.message(), "bad");
  EXPECT_EQ(e.Prefixed("m.onnx").message(), "m.onnx: bad");
  EXPECT_TRUE(Status::Ok().Prefixed("x").ok());
}

TEST(StatusTest, ResultPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "odd: 3");
}

TEST(CheckedTest, DetectsOverflow) {
  EXPECT_EQ(*CheckedMul(1'000'000, 1'000'000), 1'000'000'000'000);
  EXPECT_FALSE(CheckedMul(int64_t{1} << 40, int64_t{1} << 30).has_value());
  EXPECT_FALSE(CheckedAdd(INT64_MAX, 1).has_value());
  EXPECT_EQ(*CheckedProduct({2, 3, 4}), 24);
  EXPECT_FALSE(CheckedProduct({int64_t{1} << 32, int64_t{1} << 32}).has_value());
}

}  // namespace
}  // namespace gpucast
