#include "predict/xgb_api.h"

#include <string>

#include <gtest/gtest.h>

namespace gpucast::xgb {
namespace {

// The forwarders reach the real library: a two-row matrix, one boosting round.
TEST(XgbApi, LoadsOnFirstUseAndForwards) {
  EXPECT_EQ(std::string(LibraryName()).rfind("libxgboost.so", 0), 0u) << LibraryName();
  const float x[] = {1.0f, 2.0f};
  const float y[] = {10.0f, 20.0f};
  DMatrixHandle d = nullptr;
  ASSERT_EQ(DMatrixCreateFromMat(x, 2, 1, -1.0f, &d), 0) << GetLastError();
  ASSERT_EQ(DMatrixSetFloatInfo(d, "label", y, 2), 0) << GetLastError();
  BoosterHandle b = nullptr;
  ASSERT_EQ(BoosterCreate(&d, 1, &b), 0) << GetLastError();
  ASSERT_EQ(BoosterSetParam(b, "nthread", "1"), 0) << GetLastError();
  ASSERT_EQ(BoosterUpdateOneIter(b, 0, d), 0) << GetLastError();
  // An unknown parameter value is XGBoost's own error, passed through.
  EXPECT_EQ(BoosterSetParam(b, "booster", "no-such-booster"), 0);  // checked lazily by XGBoost
  EXPECT_NE(BoosterUpdateOneIter(b, 1, d), 0);
  EXPECT_NE(std::string(GetLastError()).find("no-such-booster"), std::string::npos) << GetLastError();
  EXPECT_EQ(BoosterFree(b), 0);
  EXPECT_EQ(DMatrixFree(d), 0);
}

}  // namespace
}  // namespace gpucast::xgb
