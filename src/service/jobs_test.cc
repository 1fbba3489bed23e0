// The job queue without HTTP: a submission is predicted, stored, placed by the
// pass it runs (or says why it waits), logged; cancellation frees its GPU.
#include "service/jobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "service/service_fixture.h"
#include "util/paths.h"

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

// Issue 31 item 9: every pass and submission read every queued job from the
// store (6,000 queued: 0.5-0.8 s a submission). The live jobs are in memory
// now: a submission reads a fixed number of rows however long the queue.
TEST_F(JobsTest, ASubmissionReadsNoQueuedRowsHoweverLongTheQueue) {
  MakeJobs(1, JobLimits{1000000, 1000000});
  int status = 0;
  auto rows_per_submission = [&](int queued) {
    for (int i = static_cast<int>(jobs_->LiveJobs().size()); i < queued + 1; ++i) {
      EXPECT_TRUE(jobs_->Submit(Request(2), "", "", &status).ok());
    }
    const int64_t before = store_->rows_read();
    auto r = jobs_->Submit(Request(3), "", "", &status);
    EXPECT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->pending, "waiting for 1 GPU(s) the policy 'one-per-gpu (test)' can place it on (" +
                              std::to_string(queued) + " queued before it)");
    const int64_t after_submit = store_->rows_read();
    EXPECT_TRUE(jobs_->Tick(1).ok());
    auto got = jobs_->Get(r->job.id);
    EXPECT_TRUE(got.ok() && *got);
    return std::make_pair(after_submit - before, store_->rows_read() - after_submit);
  };
  const auto small = rows_per_submission(10);
  const auto large = rows_per_submission(200);
  // A submission: the job read back once after its pass; a pass: nothing; Get: the one job.
  EXPECT_LE(small.first, 2);
  EXPECT_EQ(large.first, small.first);
  EXPECT_EQ(large.second, 1);
  // The queue survives a restart (read once, at start).
  const size_t live = jobs_->LiveJobs().size();
  MakeJobs(1);
  EXPECT_EQ(jobs_->LiveJobs().size(), live);
}

// The real engine's prediction carries its whole `predict --json` report (an
// nlohmann tree of ~6 KB of text, tens of KB in memory), which only POST
// /v1/predict's reply reads. Queued and running jobs kept it: 6,000 queued jobs
// of vgg.onnx held 334 MiB of RSS (150 MiB per 3,000). They keep none now.
TEST_F(JobsTest, LiveJobsKeepNoPredictionReport) {
  engine_.report = std::make_shared<const nlohmann::json>(nlohmann::json{{"report", "of predict --json"}});
  int status = 0;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(jobs_->Submit(Request(2), "", "", &status).ok());
  const std::vector<Job> live = jobs_->LiveJobs();
  ASSERT_EQ(live.size(), 3u);
  EXPECT_EQ(live[0].state, JobState::kRunning);
  for (const Job& j : live) EXPECT_TRUE(j.prediction.report == nullptr) << "job " << j.id;
  // Only this test's pointer holds the report: no job, queued or running, shares it.
  EXPECT_EQ(engine_.report.use_count(), 1);
}

// Issue 31 item 10: caps on the jobs held (--max-queued-jobs, --max-jobs).
TEST_F(JobsTest, QueuedAndStoredJobsAreCapped) {
  MakeJobs(1, JobLimits{/*max_jobs=*/4, /*max_queued_jobs=*/2});
  int status = 0;
  ASSERT_TRUE(jobs_->Submit(Request(1), "", "", &status).ok());  // placed
  ASSERT_TRUE(jobs_->Submit(Request(2), "", "", &status).ok());  // queued
  ASSERT_TRUE(jobs_->Submit(Request(3), "", "", &status).ok());  // queued
  auto r = jobs_->Submit(Request(4), "", "", &status);
  EXPECT_EQ(status, 503);
  EXPECT_EQ(r.message(), "2 jobs are queued, the limit (gpucast serve --max-queued-jobs 2); retry later");
  ASSERT_TRUE(jobs_->Cancel(3, &status).ok());
  ASSERT_TRUE(jobs_->Submit(Request(4), "", "", &status).ok());  // the 4th record
  ASSERT_TRUE(jobs_->Cancel(4, &status).ok());
  r = jobs_->Submit(Request(5), "", "", &status);
  EXPECT_EQ(status, 507);
  EXPECT_EQ(r.message(), "the service holds 4 jobs, its limit (gpucast serve --max-jobs 4); ask the operator");
  // The count survives a restart.
  MakeJobs(1, JobLimits{4, 2});
  r = jobs_->Submit(Request(5), "", "", &status);
  EXPECT_EQ(status, 507);
}

// A MIG job through the queue on the live scheduler (docs/api.md "MIG jobs"):
// stored with its profile, placed on a slice of a GPU that runs no whole-GPU
// job, and held there again after a restart; a whole-GPU job then waits.
TEST_F(JobsTest, AMigJobIsStoredPlacedOnASliceAndRestored) {
  auto make = [&] {
    auto sched = NewPolicyScheduler("1x A100-80GB", "predictive", DataDir());
    ASSERT_TRUE(sched.ok()) << sched.message();
    jobs_ = std::make_unique<Jobs>(store_.get(), std::move(sched).value(), predictions_.get(), uploads_.get(),
                                   &metrics_);
    ASSERT_TRUE(jobs_->Restore().ok());
  };
  make();
  JobRequest mig = Request(2);
  mig.spec.gpu = "A100-80GB";
  mig.spec.mig = "1g.10gb";
  int status = 0;
  ::testing::internal::CaptureStderr();
  auto a = jobs_->Submit(mig, "", "", &status);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->job.state, JobState::kRunning);
  EXPECT_EQ(a->job.placement, std::vector<int>({0}));
  EXPECT_EQ(a->job.spec.mig, "1g.10gb");
  EXPECT_THAT(log, HasSubstr("1 GPU(s) A100-80GB MIG 1g.10gb, predicted"));
  EXPECT_THAT(log, HasSubstr("placed on GPU(s) [0] (a MIG 1g.10gb slice)"));
  EXPECT_EQ(JobToJson(a->job)["mig"], "1g.10gb");
  // The store keeps the profile (a second reader sees it).
  auto stored = store_->Get(a->job.id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->spec.mig, "1g.10gb");
  // A whole-GPU job waits: the only GPU is in MIG use.
  JobRequest whole = Request(2);
  whole.spec.gpu = "A100-80GB";
  auto b = jobs_->Submit(whole, "", "", &status);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->job.state, JobState::kQueued);
  // Restarted: the running slice holds GPU 0 again, so the whole-GPU job still waits.
  make();
  ASSERT_TRUE(jobs_->Tick(a->job.submitted_at + 1).ok());
  auto again = jobs_->Get(b->job.id);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->first.state, JobState::kQueued);
  nlohmann::json cluster = jobs_->ClusterJson();
  EXPECT_EQ(cluster["gpus"][0]["mig_jobs"][0]["id"], a->job.id);
  // Cancelled, the slice frees the GPU for the whole-GPU job.
  ASSERT_TRUE(jobs_->Cancel(a->job.id, &status).ok());
  ASSERT_TRUE(jobs_->Tick(a->job.submitted_at + 2).ok());
  again = jobs_->Get(b->job.id);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->first.state, JobState::kRunning);
}

}  // namespace
}  // namespace gpucast::service
