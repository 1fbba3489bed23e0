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

TEST(ParseObservationJson, AGpuNameIsPrintableAsciiAndStoredByItsCanonicalName) {
  // The spec table's spelling rule ignores every byte but letters and digits, so
  // "A100\u0000-80GB" was taken for the A100-80GB and stored raw: SQLite kept the
  // text up to the NUL, "A100", another GPU than the one the observation named.
  for (const char* body : {R"({"gpu_util": 50, "source": "dcgm", "gpu": "A100\u0000-80GB"})",
                           R"({"gpu_util": 50, "source": "dcgm", "gpu": "\u202eA100-80GB"})",
                           R"({"gpu_util": 50, "source": "dcgm", "gpu": "A100-80GB\u001b[2J"})"}) {
    Result<Observation> o = ParseObservationJson(body);
    ASSERT_FALSE(o.ok()) << body;
    EXPECT_THAT(o.message(), HasSubstr("field 'gpu': a GPU name is printable ASCII")) << body;
  }
  Result<Observation> o = ParseObservationJson(R"({"gpu_util": 50, "source": "dcgm", "gpu": "a100 80gb"})");
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_EQ(o->gpu, "A100-80GB");
}

TEST(ParseObservationJson, AKeyGivenTwiceIsRefusedAsInEveryOtherBody) {
  // The job routes refuse a repeated key; this body took the last one silently.
  Result<Observation> o = ParseObservationJson(R"({"gpu_util": 50, "gpu_util": 60, "source": "dcgm"})");
  ASSERT_FALSE(o.ok());
  EXPECT_THAT(o.message(), HasSubstr("malformed JSON: key 'gpu_util' given twice in one object"));
}

Observation Obs(double util, const std::string& source, int64_t samples, const std::string& gpu = "",
                const std::string& key = "") {
  Observation o;
  o.gpu_util = util;
  o.source = source;
  o.samples = samples;
  o.gpu = gpu;
  o.idem_key = key;
  return o;
}

TEST(ParseObservationJson, ShareAndMargin) {
  Result<Observation> o = ParseObservationJson(R"({"gpu_util": 80, "source": "slurm", "share_pct": 37.5})");
  ASSERT_TRUE(o.ok()) << o.message();
  ASSERT_TRUE(o->share_pct);
  EXPECT_DOUBLE_EQ(*o->share_pct, 37.5);
  EXPECT_DOUBLE_EQ(o->overuse_margin, 20);  // the default
  EXPECT_TRUE(o->Overuse());                // 80 > 37.5 + 20
  o = ParseObservationJson(R"({"gpu_util": 80, "source": "slurm", "share_pct": 37.5, "overuse_margin": 50})");
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_FALSE(o->Overuse());  // 80 <= 87.5
  o = ParseObservationJson(R"({"gpu_util": 100, "source": "slurm"})");
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->Overuse());  // no share stated: never overuse
  EXPECT_THAT(ParseObservationJson(R"({"gpu_util": 1, "source": "slurm", "share_pct": 120})").message(),
              HasSubstr("field 'share_pct': want a number in [0, 100]"));
  EXPECT_THAT(ParseObservationJson(R"({"gpu_util": 1, "source": "slurm", "overuse_margin": 5})").message(),
              HasSubstr("field 'overuse_margin': want share_pct beside it"));
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
    ASSERT_TRUE((*s)->Add(7, Obs(30, "dcgm", 1), 1000).ok());
    ASSERT_TRUE((*s)->Add(7, Obs(90, "slurm", 3, "RTX3090"), 1001).ok());
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

TEST_F(ObservationStoreTest, IdempotencyKeyStoresAnObservationOnce) {
  Result<std::unique_ptr<ObservationStore>> s = ObservationStore::Open(db_);
  ASSERT_TRUE(s.ok()) << s.message();
  Result<AddOutcome> a = (*s)->Add(3, Obs(50, "slurm", 80, "", "slurm-epilog-c-42"), 1000);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->kind, AddOutcome::kStored);
  // The retried epilog: same key, same values -> the stored row, nothing added.
  Result<AddOutcome> b = (*s)->Add(3, Obs(50, "slurm", 80, "", "slurm-epilog-c-42"), 2000);
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(b->kind, AddOutcome::kReplayed);
  EXPECT_EQ(b->row.id, a->row.id);
  EXPECT_DOUBLE_EQ(b->row.observed_at, 1000);
  // Same key, another measurement or another job -> conflict, nothing added.
  Result<AddOutcome> c = (*s)->Add(3, Obs(70, "slurm", 80, "", "slurm-epilog-c-42"), 3000);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->kind, AddOutcome::kConflict);
  c = (*s)->Add(4, Obs(50, "slurm", 80, "", "slurm-epilog-c-42"), 3000);
  EXPECT_EQ(c->kind, AddOutcome::kConflict);
  // A retry whose gpu the service filled in from the placement (placed since) is the same request;
  // one that states another gpu than the stored one is not.
  Observation filled = Obs(50, "slurm", 80, "RTX3090", "slurm-epilog-c-42");
  filled.gpu_filled = true;
  EXPECT_EQ((*s)->Add(3, filled, 3000)->kind, AddOutcome::kReplayed);
  EXPECT_EQ((*s)->Add(3, Obs(50, "slurm", 80, "RTX3090", "slurm-epilog-c-42"), 3000)->kind, AddOutcome::kConflict);
  // Without a key every post is stored.
  ASSERT_EQ((*s)->Add(3, Obs(50, "slurm", 80), 4000)->kind, AddOutcome::kStored);
  ASSERT_EQ((*s)->Add(3, Obs(50, "slurm", 80), 4000)->kind, AddOutcome::kStored);
  Result<std::optional<ObservedSummary>> sum = (*s)->Summary(3);
  ASSERT_TRUE(sum.ok() && *sum);
  EXPECT_EQ((*sum)->samples, 3 * 80);
  EXPECT_EQ((*sum)->observations, 3);
  EXPECT_FALSE((*s)->Summary(4)->has_value());
  Result<std::optional<StoredObservation>> found = (*s)->FindByKey("slurm-epilog-c-42");
  ASSERT_TRUE(found.ok() && *found);
  EXPECT_EQ((*found)->job_id, 3);
  EXPECT_FALSE((*s)->FindByKey("other")->has_value());
}

TEST_F(ObservationStoreTest, OveruseIsKeptWithTheJob) {
  Result<std::unique_ptr<ObservationStore>> s = ObservationStore::Open(db_);
  ASSERT_TRUE(s.ok()) << s.message();
  Observation o = Obs(40, "nvidia-smi", 10);
  o.share_pct = 25;  // 40 <= 25 + 20
  ASSERT_TRUE((*s)->Add(1, o, 1000).ok());
  auto sum = (*s)->Summary(1);
  ASSERT_TRUE(sum.ok() && *sum);
  EXPECT_FALSE((*sum)->overuse);
  EXPECT_DOUBLE_EQ(*(*sum)->share_pct, 25);
  o.gpu_util = 46;  // > 45
  ASSERT_TRUE((*s)->Add(1, o, 1001).ok());
  EXPECT_TRUE((*(*s)->Summary(1))->overuse);
  ASSERT_TRUE((*s)->Add(2, Obs(100, "dcgm", 1), 1000).ok());  // no share: never overuse
  EXPECT_FALSE((*(*s)->Summary(2))->overuse);
  EXPECT_FALSE((*(*s)->Summary(2))->share_pct);
}

// A database written before the idempotency/overuse columns existed (the
// schema of commit b57581a, verbatim) gets them at open, keeps its rows, and
// then takes keyed observations.
TEST_F(ObservationStoreTest, MigratesADatabaseWithTheOldSchema) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    const char* old_schema = R"sql(
CREATE TABLE IF NOT EXISTS observations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL,       -- jobs.id of the observed job
  gpu_util REAL NOT NULL,        -- percent 0..100, mean over `samples`
  samples INTEGER NOT NULL,      -- >= 1 utilization samples behind gpu_util
  source TEXT NOT NULL,          -- 'nvidia-smi' | 'dcgm' | 'slurm'
  gpu TEXT NOT NULL,             -- GPU spec key the job ran on; '' = not known
  observed_at REAL NOT NULL      -- unix seconds when it was stored
);
CREATE INDEX IF NOT EXISTS observations_job ON observations(job_id);
INSERT INTO observations (job_id, gpu_util, samples, source, gpu, observed_at) VALUES (5, 60, 10, 'slurm', '', 1);
)sql";
    char* err = nullptr;
    ASSERT_EQ(sqlite3_exec(db, old_schema, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_close(db);
  }
  for (int open = 0; open < 2; ++open) {  // the second open finds the columns there
    Result<std::unique_ptr<ObservationStore>> s = ObservationStore::Open(db_);
    ASSERT_TRUE(s.ok()) << s.message();
    auto sum = (*s)->Summary(5);
    ASSERT_TRUE(sum.ok() && *sum) << sum.message();
    EXPECT_EQ((*sum)->samples, 10 + 10 * open);
    EXPECT_FALSE((*sum)->overuse);
    ASSERT_EQ((*s)->Add(5, Obs(60, "slurm", 10, "", "k"), 2)->kind, open == 0 ? AddOutcome::kStored
                                                                               : AddOutcome::kReplayed);
  }
  // The key is unique in the table itself, not only by the store's check.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(db, "INSERT INTO observations (job_id, gpu_util, samples, source, gpu, observed_at, idem_key) "
                             "VALUES (5, 1, 1, 'slurm', '', 3, 'k')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
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
  EXPECT_THAT(text, HasSubstr("gpucast_overuse_total{source=\"slurm\"} 0\n"));
  m.ObserveOveruse("slurm");
  EXPECT_THAT(m.Render(), HasSubstr("gpucast_overuse_total{source=\"slurm\"} 1\n"));
}

}  // namespace
}  // namespace gpucast::service
