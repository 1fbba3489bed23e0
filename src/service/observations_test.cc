// Observation parsing, durable storage beside the jobs, and the loop's metrics.
#include "service/observations.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "service/store.h"

namespace gpucast::service {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

TEST(ParseObservationJson, AcceptsTheDocumentedFields) {
  Result<Observation> o = ParseObservationJson(R"({"gpu_util": 42.5, "source": "dcgm", "samples": 30, "gpu": "RTX3090"})");
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_DOUBLE_EQ(o->gpu_util, 42.5);
  EXPECT_EQ(o->source, "dcgm");
  EXPECT_EQ(o->samples, 30);
  EXPECT_EQ(o->gpu, "RTX3090");
  o = ParseObservationJson(R"({"gpu_util": 0, "source": "slurm"})");
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_EQ(o->samples, 1);
  EXPECT_EQ(o->gpu, "");
  EXPECT_TRUE(ParseObservationJson(R"({"gpu_util": 100, "source": "nvidia-smi"})").ok());
}

TEST(ParseObservationJson, ErrorsNameTheField) {
  struct Case {
    const char* body;
    const char* message;
  } cases[] = {
      {R"({"gpu_util": 100.5, "source": "dcgm"})", "field 'gpu_util': want a number in [0, 100] (percent), got 100.5"},
      {R"({"gpu_util": -1, "source": "dcgm"})", "field 'gpu_util'"},
      {R"({"gpu_util": "50", "source": "dcgm"})", "field 'gpu_util'"},
      {R"({"source": "dcgm"})", "field 'gpu_util': want a number in [0, 100] (missing)"},
      {R"({"gpu_util": 50})", "field 'source': want one of nvidia-smi, dcgm, slurm (missing)"},
      {R"({"gpu_util": 50, "source": "guess"})", "field 'source': want one of nvidia-smi, dcgm, slurm"},
      {R"({"gpu_util": 50, "source": "dcgm", "samples": 0})", "field 'samples'"},
      {R"({"gpu_util": 50, "source": "dcgm", "samples": 1.5})", "field 'samples'"},
      {R"({"gpu_util": 50, "source": "dcgm", "gpu": "GTX9999"})", "field 'gpu': want a GPU of the spec table"},
      {R"({"gpu_util": 50, "source": "dcgm", "colour": 1})", "unknown field 'colour'"},
      {R"({"gpu_util": 50, "source": "dcgm", "x": [1]})", "want a flat JSON object"},
      {R"([1, 2])", "request body: want a JSON object"},
      {R"({"gpu_util": 5)", "malformed JSON"},
  };
  for (const Case& c : cases) {
    Result<Observation> o = ParseObservationJson(c.body);
    ASSERT_FALSE(o.ok()) << c.body;
    EXPECT_THAT(o.message(), HasSubstr(c.message)) << c.body;
  }
}

class ObservationStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpucast-obs-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    db_ = dir_ + "/jobs.db";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_, db_;
};

TEST_F(ObservationStoreTest, SampleWeightedMeanAndDurableOnReopen) {
  {
    Result<std::unique_ptr<JobStore>> jobs = JobStore::Open(db_);  // the same file as the service's
    ASSERT_TRUE(jobs.ok()) << jobs.message();
    Result<std::unique_ptr<ObservationStore>> s = ObservationStore::Open(db_);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE((*s)->Add(7, {30, "dcgm", 1, ""}, 1000).ok());
    ASSERT_TRUE((*s)->Add(7, {90, "slurm", 3, "RTX3090"}, 1001).ok());
    Result<std::optional<ObservedSummary>> none = (*s)->Summary(8);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(*none);
  }
  // A fresh connection (a restarted service) reads what was committed.
  Result<std::unique_ptr<ObservationStore>> s = ObservationStore::Open(db_);
  ASSERT_TRUE(s.ok()) << s.message();
  Result<std::optional<ObservedSummary>> sum = (*s)->Summary(7);
  ASSERT_TRUE(sum.ok()) << sum.message();
  ASSERT_TRUE(*sum);
  EXPECT_DOUBLE_EQ((*sum)->util, (30.0 * 1 + 90.0 * 3) / 4);  // 75
  EXPECT_EQ((*sum)->samples, 4);
  EXPECT_EQ((*sum)->observations, 2);
  // The database is in WAL mode with FULL sync, as the jobs are.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(LoopMetrics, HistogramIsCumulativeAndSourcesAreListed) {
  LoopMetrics m;
  m.ObserveObservation("dcgm", 0.5);   // <= 1
  m.ObserveObservation("slurm", 12);   // <= 15
  m.ObserveObservation("slurm", 120);  // only +Inf
  m.ObserveReload(true);
  m.ObserveReload(false);
  std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE gpucast_prediction_abs_error histogram\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_prediction_abs_error_bucket{le=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_prediction_abs_error_bucket{le=\"10\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_prediction_abs_error_bucket{le=\"15\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_prediction_abs_error_bucket{le=\"100\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_prediction_abs_error_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_prediction_abs_error_sum 132.5\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_prediction_abs_error_count 3\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_observations_total{source=\"nvidia-smi\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_observations_total{source=\"dcgm\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_observations_total{source=\"slurm\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_predictor_reloads_total 1\n"));
  EXPECT_THAT(text, HasSubstr("gpucast_predictor_reload_failures_total 1\n"));
}

}  // namespace
}  // namespace gpucast::service
