#include "service/store.h"

#include <sqlite3.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpucast::service {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpucast-store-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/jobs.db";
  }
  void TearDown() override { fs::remove_all(dir_); }
  static Job MakeJob(const std::string& name, const std::string& key = "") {
    Job j;
    j.spec.model = "/m/" + name + ".onnx";
    j.spec.name = name;
    j.prediction = Prediction::Of(42.5, 30, 55);
    j.submitted_at = 1700000000.25;
    j.idempotency_key = key;
    j.request_digest = "d-" + name;
    return j;
  }
  std::string dir_, path_;
};

TEST_F(StoreTest, InsertGetUpdateAndReopen) {
  {
    auto s = JobStore::Open(path_);
    ASSERT_TRUE(s.ok()) << s.message();
    bool replayed = true;
    auto a = (*s)->Insert(MakeJob("a"), &replayed);
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_FALSE(replayed);
    EXPECT_EQ(a->id, 1);
    auto b = (*s)->Insert(MakeJob("b"), &replayed);
    EXPECT_EQ(b->id, 2);
    Job run = *b;
    run.state = JobState::kRunning;
    run.placement = {3, 1};
    run.exclusive = true;
    run.started_at = 1700000001.5;
    ASSERT_TRUE((*s)->Update({run}).ok());
  }
  auto s = JobStore::Open(path_);  // a fresh connection reads what was committed
  ASSERT_TRUE(s.ok());
  auto b = (*s)->Get(2);
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->state, JobState::kRunning);
  EXPECT_EQ((*b)->placement, std::vector<int>({3, 1}));
  EXPECT_TRUE((*b)->exclusive);
  EXPECT_EQ(*(*b)->started_at, 1700000001.5);
  EXPECT_EQ((*b)->prediction.util_hi, 55);
  EXPECT_EQ((*b)->spec.name, "b");
  EXPECT_FALSE((*s)->Get(3)->has_value());
  auto running = (*s)->List(JobState::kRunning, 0, 10);
  ASSERT_EQ(running->size(), 1u);
  EXPECT_EQ((*running)[0].id, 2);
  EXPECT_EQ((*s)->List(std::nullopt, 1, 10)->size(), 1u);
}

TEST_F(StoreTest, WalWithFullSync) {
  auto s = JobStore::Open(path_);
  ASSERT_TRUE(s.ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(db);
  // synchronous is per connection: the store's own must be FULL (2), so a
  // commit is fsynced before Insert returns (NORMAL, 1, would lose the last
  // commits on power loss in WAL mode).
  auto sync = (*s)->PragmaValue("synchronous");
  ASSERT_TRUE(sync.ok()) << sync.message();
  EXPECT_EQ(*sync, "2");
  EXPECT_EQ(*(*s)->PragmaValue("journal_mode"), "wal");
  EXPECT_FALSE((*s)->PragmaValue("synchronous=OFF").ok());
}

TEST_F(StoreTest, IdempotencyKey) {
  auto s = JobStore::Open(path_);
  bool replayed = false;
  auto a = (*s)->Insert(MakeJob("a", "k1"), &replayed);
  ASSERT_TRUE(a.ok());
  auto again = (*s)->Insert(MakeJob("a", "k1"), &replayed);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(replayed);
  EXPECT_EQ(again->id, a->id);
  auto other = (*s)->Insert(MakeJob("b", "k1"), &replayed);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.message(), "Idempotency-Key 'k1' was already used for job 1 with a different request");
  auto found = (*s)->GetByIdempotencyKey("k1");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->id, 1);
  EXPECT_FALSE((*s)->GetByIdempotencyKey("k2")->has_value());
}

TEST_F(StoreTest, UnopenablePathIsAnError) {
  auto s = JobStore::Open(dir_ + "/no/such/dir/jobs.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(dir_ + "/no/such/dir/jobs.db: cannot open database", 0), 0u) << s.message();
}

// The memory prediction is stored with the job; a database from before the
// memory columns gets them (old rows: no memory prediction).
TEST_F(StoreTest, MemoryPredictionAndMigration) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    const char* old =
        "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, idem_key TEXT UNIQUE, digest TEXT NOT NULL, "
        "spec TEXT NOT NULL, util REAL NOT NULL, util_lo REAL NOT NULL, util_hi REAL NOT NULL, state TEXT NOT NULL, "
        "placement TEXT NOT NULL, exclusive INTEGER NOT NULL, submitted_at REAL NOT NULL, started_at REAL, "
        "finished_at REAL);"
        "INSERT INTO jobs (digest, spec, util, util_lo, util_hi, state, placement, exclusive, submitted_at) "
        "VALUES ('d', '{\"model\": \"/m/old.onnx\", \"batch\": 2}', 10, 5, 15, 'queued', '[]', 0, 1);";
    ASSERT_EQ(sqlite3_exec(db, old, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  auto s = JobStore::Open(path_);
  ASSERT_TRUE(s.ok()) << s.message();
  auto old = (*s)->Get(1);
  ASSERT_TRUE(old.ok() && old->has_value()) << old.message();
  EXPECT_EQ((*old)->spec.model, "/m/old.onnx");
  EXPECT_EQ((*old)->spec.model_name, "/m/old.onnx");
  EXPECT_FALSE((*old)->prediction.mem_mib.has_value());
  EXPECT_FALSE((*old)->prediction.step_ms.has_value());
  EXPECT_FALSE((*old)->prediction.unsure.has_value());
  EXPECT_TRUE((*old)->prediction.warnings.empty());
  EXPECT_EQ((*old)->spec.mig, "");  // no "mig" in its spec: the whole GPU
  Job j = MakeJob("mem");
  j.prediction.mem_mib = 9000;
  j.prediction.mem_lo = 8000;
  j.prediction.mem_hi = 11000;
  j.prediction.step_ms = 40.5;
  j.prediction.step_lo = 21;
  j.prediction.step_hi = 72;
  j.prediction.gpu_measured = false;
  j.prediction.unsure = true;
  j.prediction.unsure_reasons = {"no measured utilization rows of GPU A100-80GB"};
  j.prediction.warnings = {"w1", "w2"};
  bool replayed = false;
  ASSERT_TRUE((*s)->Insert(j, &replayed).ok());
  auto back = (*s)->Get(2);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ(*(*back)->prediction.mem_hi, 11000);
  EXPECT_EQ(*(*back)->prediction.mem_lo, 8000);
  EXPECT_EQ(PackingMemMib((*back)->spec, (*back)->prediction), 11000);
  EXPECT_EQ(*(*back)->prediction.step_ms, 40.5);
  EXPECT_EQ(*(*back)->prediction.step_lo, 21);
  EXPECT_EQ(*(*back)->prediction.step_hi, 72);
  EXPECT_EQ(*(*back)->prediction.gpu_measured, false);
  EXPECT_EQ(*(*back)->prediction.unsure, true);
  EXPECT_EQ((*back)->prediction.unsure_reasons, j.prediction.unsure_reasons);
  EXPECT_EQ((*back)->prediction.warnings, j.prediction.warnings);
}

// A MIG job's profile is kept in its spec JSON (no column, no migration): a
// whole-GPU job's stored text has no "mig" (its request digest, and so an
// Idempotency-Key replay across an upgrade, is unchanged), and rows written
// before "mig" existed read back as whole-GPU jobs (the test above writes one).
TEST_F(StoreTest, AMigProfileIsStoredWithTheJob) {
  auto s = JobStore::Open(path_);
  ASSERT_TRUE(s.ok()) << s.message();
  Job whole = MakeJob("whole");
  Job slice = MakeJob("slice");
  slice.spec.gpu = "A100-80GB";
  slice.spec.mig = "1g.10gb";
  bool replayed = false;
  ASSERT_TRUE((*s)->Insert(whole, &replayed).ok());
  ASSERT_TRUE((*s)->Insert(slice, &replayed).ok());
  s->reset();
  auto again = JobStore::Open(path_);
  ASSERT_TRUE(again.ok()) << again.message();
  auto w = (*again)->Get(1), m = (*again)->Get(2);
  ASSERT_TRUE(w.ok() && w->has_value() && m.ok() && m->has_value());
  EXPECT_EQ((*w)->spec.mig, "");
  EXPECT_EQ((*m)->spec.mig, "1g.10gb");
  EXPECT_FALSE(SpecToStoredJson((*w)->spec).contains("mig"));
  EXPECT_EQ(SpecToStoredJson((*m)->spec)["mig"], "1g.10gb");
  // What an old release stored (no "mig" key) reads as the whole GPU.
  auto old = SpecFromStoredJson(R"({"model": "/m/a.onnx", "batch": 2, "gpu": "A100-80GB"})");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->mig, "");
  EXPECT_EQ(SpecFromStoredJson(R"({"model": "/m/a.onnx", "mig": 7})").message(),
            "stored job spec: bad field 'mig'");
}

// The level a job stated is kept in its spec JSON as mig is: a job without one,
// or with the default (0.8) stated, stores the text (and so the request
// digest) it did before "level" was stored; the interval's level and whether
// it is calibrated are columns added on open (an old row reads them unset,
// the test above opens one).
TEST_F(StoreTest, ALevelIsStoredWithTheJob) {
  auto s = JobStore::Open(path_);
  ASSERT_TRUE(s.ok()) << s.message();
  Job plain = MakeJob("plain");
  Job stated_default = plain;
  stated_default.spec.level = 0.8;
  Job narrow = MakeJob("narrow");
  narrow.spec.level = 0.5;
  narrow.prediction.interval_level = 0.5;
  narrow.prediction.interval_calibrated = true;
  EXPECT_FALSE(SpecToStoredJson(plain.spec).contains("level"));
  EXPECT_FALSE(SpecToStoredJson(stated_default.spec).contains("level"));
  EXPECT_EQ(SpecToStoredJson(narrow.spec)["level"], 0.5);
  // The default stated or not: one stored text, one digest.
  EXPECT_EQ(SpecToStoredJson(stated_default.spec).dump(), SpecToStoredJson(plain.spec).dump());
  bool replayed = false;
  ASSERT_TRUE((*s)->Insert(plain, &replayed).ok());
  ASSERT_TRUE((*s)->Insert(narrow, &replayed).ok());
  s->reset();
  auto again = JobStore::Open(path_);
  ASSERT_TRUE(again.ok()) << again.message();
  auto p = (*again)->Get(1), n = (*again)->Get(2);
  ASSERT_TRUE(p.ok() && p->has_value() && n.ok() && n->has_value());
  EXPECT_EQ((*p)->spec.level, 0);
  EXPECT_FALSE((*p)->prediction.interval_level.has_value());
  EXPECT_FALSE((*p)->prediction.interval_calibrated.has_value());
  EXPECT_EQ((*n)->spec.level, 0.5);
  EXPECT_EQ(*(*n)->prediction.interval_level, 0.5);
  EXPECT_EQ(*(*n)->prediction.interval_calibrated, true);
  // The reply says each interval's level; the job without one has the default's.
  const nlohmann::json shown = JobToJson(**n), plain_shown = JobToJson(**p);
  EXPECT_EQ(shown["level"], 0.5);
  EXPECT_FALSE(plain_shown.contains("level"));
  EXPECT_EQ(shown["interval"]["level"], 0.5);
  EXPECT_EQ(shown["interval"]["calibrated"], true);
  EXPECT_EQ(shown["step_ms_interval"]["level"], 0.5);
  EXPECT_EQ(shown["gpu_mem_interval"]["level"], 0.5);
  EXPECT_EQ(shown["gpu_mem_interval"]["high_level"], 0.95);  // max(0.95, (1 + 0.5) / 2)
  EXPECT_EQ(plain_shown["gpu_mem_interval"]["level"], 0.8);
  EXPECT_TRUE(plain_shown["interval"]["level"].is_null());  // not kept for this row
  // What an old release stored (no "level") is the default; a bad one names the field.
  auto old = SpecFromStoredJson(R"({"model": "/m/a.onnx", "batch": 2})");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->level, 0);
  for (const char* bad : {R"({"model": "/m/a.onnx", "level": "0.5"})", R"({"model": "/m/a.onnx", "level": 1.5})",
                          R"({"model": "/m/a.onnx", "level": 0})"}) {
    EXPECT_EQ(SpecFromStoredJson(bad).message(), "stored job spec: bad field 'level'") << bad;
  }
}

}  // namespace
}  // namespace gpucast::service
