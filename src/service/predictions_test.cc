// From a parsed request to a prediction: files opened by the client's names,
// recorded by the service's paths, uploads held while needed, failures mapped
// to their HTTP status.
#include "service/predictions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "service/service_fixture.h"

namespace gpucast::service {
namespace {

class PredictionsTest : public testing::PartsTest {
 protected:
  Predictions* p() { return predictions_.get(); }
};

TEST_F(PredictionsTest, OpensByTheClientsNameAndRecordsTheServicesPath) {
  int status = 0;
  auto opened = p()->Open(Request("m.onnx", 2), "", &status);
  ASSERT_TRUE(opened.ok()) << opened.message();
  EXPECT_EQ(opened->spec.model, dir_ + "/models/m.onnx");
  EXPECT_EQ(opened->spec.model_name, "m.onnx");
  EXPECT_EQ(opened->digest.size(), 64u);
  bool hit = true;
  auto pred = p()->Predict(*opened, &hit, &status);
  ASSERT_TRUE(pred.ok()) << pred.message();
  EXPECT_EQ(pred->util, 20);
  EXPECT_FALSE(hit);
  // The engine's errors name the client's path and map to 422.
  auto junk = p()->Run(Request("junk.onnx", 1), "", &status);
  EXPECT_EQ(junk.message(), "junk.onnx: not an ONNX model");
  EXPECT_EQ(status, 422);
  EXPECT_EQ(p()->Run(Request("/etc/passwd", 1), "", &status).message(),
            "model '/etc/passwd': no such model file under the service's model roots");
  EXPECT_EQ(status, 422);
}

TEST_F(PredictionsTest, AnUploadIsHeldWhileNeeded) {
  JobRequest r = Request("", 3);
  r.upload = true;
  const std::string body = std::string(testing::kFakeModelMagic) + " uploaded";
  int status = 0;
  {
    auto opened = p()->Open(r, body, &status);
    ASSERT_TRUE(opened.ok()) << opened.message();
    EXPECT_EQ(opened->spec.model.rfind(kUploadPrefix, 0), 0u);
    EXPECT_EQ(uploads_->bytes(), body.size());
  }
  EXPECT_EQ(uploads_->bytes(), 0u);  // nobody kept it
  auto run = p()->Run(r, body, &status);
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->prediction.util, 30);
  EXPECT_EQ(uploads_->bytes(), 0u);
}

TEST_F(PredictionsTest, ReadAsIdentitiesAreCheckedBeforeAnyFile) {
  JobRequest r = Request(dir_ + "/models/m.onnx", 1);
  r.read_as = ReadAs{0, 0};
  int status = 0;
  EXPECT_EQ(p()->Open(r, "", &status).message(), "X-Gpucast-Read-As: uid 0: the service never reads files as root");
  EXPECT_EQ(status, 403);
  r.read_as = ReadAs{5, 60};
  EXPECT_EQ(p()->Open(r, "", &status).message(),
            "X-Gpucast-Read-As: uid 5 is below the lowest uid files are read as (1000, gpucast serve --deputy-min-uid)");
}

}  // namespace
}  // namespace gpucast::service
