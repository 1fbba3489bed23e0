// The job queue without HTTP: a submission is predicted, stored, placed by the
// pass it runs (or says why it waits), logged; cancellation frees its GPU.
#include "service/jobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "service/service_fixture.h"

namespace gpucast::service {
namespace {

using ::testing::HasSubstr;

// One GPU; every request names m.onnx.
class JobsTest : public testing::PartsTest {
 protected:
  void SetUp() override {
    PartsTest::SetUp();
    MakeJobs(1);
  }
  static JobRequest Request(int64_t batch, int64_t gpus = 1) { return PartsTest::Request("m.onnx", batch, gpus); }
};

TEST_F(JobsTest, ASubmissionIsPlacedOrSaysWhyItWaitsAndIsLogged) {
  int status = 0;
  ::testing::internal::CaptureStderr();
  auto first = jobs_->Submit(Request(2), "", "", &status);
  auto second = jobs_->Submit(Request(3), "", "", &status);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->job.state, JobState::kRunning);
  EXPECT_EQ(first->job.placement, std::vector<int>({0}));
  EXPECT_EQ(first->pending, "");
  EXPECT_EQ(second->job.state, JobState::kQueued);
  EXPECT_EQ(second->pending, "waiting for 1 GPU(s) the policy 'one-per-gpu (test)' can place it on (0 queued before it)");
  EXPECT_THAT(log, HasSubstr("gpucast serve: job 1 submitted: m.onnx, batch 2, 1 GPU(s) RTX3090, predicted 20.0%\n"));
  EXPECT_THAT(log, HasSubstr("gpucast serve: job 1 placed on GPU(s) [0] (policy one-per-gpu (test))\n"));
  EXPECT_THAT(log, HasSubstr("gpucast serve: job 2 submitted"));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("job 2 placed")));
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(jobs_->Cancel(1, &status).ok());
  ASSERT_TRUE(jobs_->Tick(1e9).ok());
  const std::string later = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(later, HasSubstr("job 1 cancelled"));
  EXPECT_THAT(later, HasSubstr("job 2 placed on GPU(s) [0]"));
  auto two = jobs_->Get(2);
  ASSERT_TRUE(two.ok() && *two);
  EXPECT_EQ((*two)->first.state, JobState::kRunning);
  EXPECT_EQ(jobs_->Cancel(1, &status).message(), "job 1 is already cancelled");
  EXPECT_EQ(status, 409);
  EXPECT_EQ(jobs_->Cancel(9, &status).message(), "no job 9");
  EXPECT_EQ(status, 404);
}

TEST_F(JobsTest, ANameWithANewlineForgesNoLogLine) {
  JobRequest r = Request(1);
  r.spec.name = "x\ngpucast serve: job 99 placed on GPU(s) [0]";
  int status = 0;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(jobs_->Submit(r, "", "", &status).ok());
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("name 'x\\x0Agpucast serve: job 99"));
  EXPECT_THAT(log, ::testing::Not(HasSubstr("\ngpucast serve: job 99")));
}

TEST_F(JobsTest, AJobThatCouldNeverFitIsRefusedBeforeItIsPredicted) {
  int status = 0;
  auto r = jobs_->Submit(Request(1, 2), "", "", &status);
  EXPECT_EQ(r.message(), "field 'gpus': 2 requested, the cluster has 1");
  EXPECT_EQ(status, 422);
  EXPECT_EQ(metrics_.Render().find("gpucast_predictions_total{result="), std::string::npos);
}

}  // namespace
}  // namespace gpucast::service
