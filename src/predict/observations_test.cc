// Observed jobs read back from a service database and turned into training
// rows: the sample-weighted label, the graph of an uploaded job, and the
// effect that matters: retraining with an observation far from the
// prediction moves the prediction toward it.
#include "predict/observations.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cost/job_cost.h"
#include "graph/onnx_loader.h"
#include "predict/predictor.h"
#include "util/paths.h"

namespace gpucast {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

// A database laid out as the service writes it: its jobs table's id and spec
// columns (service/store.cc) and the observations table defined here.
class ObservedDb {
 public:
  explicit ObservedDb(const std::string& path) : path_(path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    Exec("CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, spec TEXT NOT NULL)");
    Exec(kObservationsSchemaSql);
  }
  ~ObservedDb() { sqlite3_close(db_); }
  int64_t AddJob(const json& spec) {
    Exec("INSERT INTO jobs (spec) VALUES ('" + spec.dump() + "')");
    return sqlite3_last_insert_rowid(db_);
  }
  void Observe(int64_t job, double util, int64_t samples, const std::string& gpu = "") {
    Exec("INSERT INTO observations (job_id, gpu_util, samples, source, gpu, observed_at) VALUES (" +
         std::to_string(job) + ", " + std::to_string(util) + ", " + std::to_string(samples) + ", 'slurm', '" + gpu +
         "', 0)");
  }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << sql;
    sqlite3_free(err);
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

class ObservationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpucast-pobs-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    db_ = dir_ + "/jobs.db";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_, db_;
};

TEST_F(ObservationsTest, OneEntryPerJobAndGpuWithTheSampleWeightedMean) {
  const std::string vgg = HomeDir() + "/models/vgg.onnx";
  const std::string sha(64, 'a');
  {
    ObservedDb db(db_);
    // As the service stores it (service/job.cc SpecToStoredJson): attrs typed, a number among them.
    int64_t a = db.AddJob({{"model", vgg}, {"model_name", "vgg.onnx"}, {"batch", 64}, {"amp", true},
                           {"attrs", {{"loader_workers", 2}, {"loader_ms_per_sample", 14.5}}}, {"dims", json::object()}});
    int64_t b = db.AddJob({{"model", std::string(kUploadModelPrefix) + sha}, {"batch", 8}});
    db.AddJob({{"model", vgg}, {"batch", 1}});  // never observed
    db.Observe(a, 20, 1);
    db.Observe(a, 60, 3);
    db.Observe(a, 90, 2, "A100");
    db.Observe(b, 50, 1);
  }
  // The uploaded graph survives as the service's hard link.
  fs::create_directories(ObservedGraphDir(db_));
  fs::copy_file(vgg, ObservedGraphDir(db_) + "/" + sha + ".onnx");

  Result<std::vector<ObservedJob>> jobs = ReadObservedJobs(db_);
  ASSERT_TRUE(jobs.ok()) << jobs.message();
  ASSERT_EQ(jobs->size(), 3u);
  const ObservedJob& a0 = (*jobs)[0];
  EXPECT_EQ(a0.job_id, 1);
  EXPECT_EQ(a0.gpu, "");
  EXPECT_DOUBLE_EQ(a0.util, (20.0 * 1 + 60.0 * 3) / 4);  // 50
  EXPECT_EQ(a0.samples, 4);
  EXPECT_EQ(a0.observations, 2);
  EXPECT_EQ(a0.batch, 64);
  EXPECT_TRUE(a0.amp);
  EXPECT_EQ(a0.attrs.loader_workers, 2);
  EXPECT_EQ(a0.attrs.loader_ms_per_sample, 14.5);
  EXPECT_EQ(a0.graph_file, vgg);
  EXPECT_EQ((*jobs)[1].gpu, "A100");
  EXPECT_DOUBLE_EQ((*jobs)[1].util, 90);
  EXPECT_EQ((*jobs)[2].graph_file, ObservedGraphDir(db_) + "/" + sha + ".onnx");
  EXPECT_EQ((*jobs)[2].skip_reason, "");

  // Rows: the catalog's VGG workload is vgg.onnx alone, so the jobs join its group.
  auto catalog = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(catalog.ok()) << catalog.message();
  auto data = BuildDataset(DataDir() + "/lucid/single_data.csv", *catalog);
  ASSERT_TRUE(data.ok()) << data.message();
  const size_t shipped = data->rows.size();
  const std::string digest = data->digest;
  std::vector<std::string> skipped;
  ASSERT_TRUE(AppendObservedRows(*jobs, db_, *catalog, &*data, &skipped).ok());
  EXPECT_TRUE(skipped.empty()) << skipped[0];
  ASSERT_EQ(data->rows.size(), shipped + 3);
  EXPECT_EQ(data->groups[static_cast<size_t>(data->group[shipped])], "VGG/CIFAR-10");
  EXPECT_EQ(data->row_gpu[shipped + 1], "A100");
  EXPECT_DOUBLE_EQ(data->rows[shipped].gpu_util, 50);
  EXPECT_NE(data->digest, digest);
  EXPECT_EQ(data->x[shipped].size(), data->feature_names.size());

  // Once its graph is gone, the upload is skipped with the reason.
  fs::remove_all(ObservedGraphDir(db_));
  jobs = ReadObservedJobs(db_);
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ((*jobs)[2].skip_reason, "its uploaded graph is no longer stored");
  skipped.clear();
  ASSERT_TRUE(AppendObservedRows(*jobs, db_, *catalog, &*data, &skipped).ok());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_THAT(skipped[0], HasSubstr("job 2: its uploaded graph is no longer stored"));
}

// Issue 31 item 10: observations of a cancelled job (stored by services
// before they refused them) are not read for training.
TEST_F(ObservationsTest, ACancelledJobsObservationsAreNotRead) {
  const std::string vgg = HomeDir() + "/models/vgg.onnx";
  {
    ObservedDb db(db_);
    db.Exec("ALTER TABLE jobs ADD COLUMN state TEXT NOT NULL DEFAULT 'done'");
    int64_t done = db.AddJob({{"model", vgg}, {"batch", 8}});
    int64_t cancelled = db.AddJob({{"model", vgg}, {"batch", 16}});
    db.Exec("UPDATE jobs SET state = 'cancelled' WHERE id = " + std::to_string(cancelled));
    db.Observe(done, 40, 2);
    db.Observe(cancelled, 5, 100);
  }
  Result<std::vector<ObservedJob>> jobs = ReadObservedJobs(db_);
  ASSERT_TRUE(jobs.ok()) << jobs.message();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].job_id, 1);
  EXPECT_EQ((*jobs)[0].batch, 8);
}

TEST_F(ObservationsTest, NotAServiceDatabaseIsAnErrorNamingTheFile) {
  Result<std::vector<ObservedJob>> r = ReadObservedJobs(dir_ + "/none.db");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.message(), HasSubstr(dir_ + "/none.db: no such database file"));
  std::ofstream(dir_ + "/other.db") << "";
  r = ReadObservedJobs(dir_ + "/other.db");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.message(), HasSubstr("not a gpucast service database with observations"));
}

// A FIFO, a directory or a device given as the database said "no such database
// file", as if the path were absent: the message says what the path is instead,
// and a FIFO is refused without being opened (an open would wait for a writer).
TEST_F(ObservationsTest, ADatabasePathThatIsNotARegularFileSaysWhatItIs) {
  const std::string fifo = dir_ + "/obs.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(dir_ + "/obs.dir");
  const std::pair<std::string, std::string> cases[] = {
      {fifo, fifo + ": is a FIFO, not a regular file"},
      {dir_ + "/obs.dir", dir_ + "/obs.dir: is a directory, not a regular file"},
      {"/dev/zero", "/dev/zero: is a character device, not a regular file"},
      {dir_ + "/none.db", dir_ + "/none.db: no such database file"},
  };
  for (const auto& [path, want] : cases) {
    Result<std::vector<ObservedJob>> r = ReadObservedJobs(path);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_THAT(r.message(), HasSubstr(want));
    EXPECT_EQ(DatabaseFileStatus(path, /*may_be_absent=*/false).message(), r.message());
  }
  // The service creates an absent database; anything else that is not a regular file is refused alike.
  EXPECT_TRUE(DatabaseFileStatus(dir_ + "/none.db", /*may_be_absent=*/true).ok());
  EXPECT_THAT(DatabaseFileStatus(fifo, /*may_be_absent=*/true).message(), HasSubstr("is a FIFO"));
}

// The service stores only gpu_util in [0, 100] and samples >= 1, but the file is
// read as it is: a database whose rows say otherwise (1e308, -50, text, samples
// -3) became training labels, and train failed deep inside with "auto:
// forest/paper: calibration: forest: label outside 0-100", naming nothing.
TEST_F(ObservationsTest, ObservationsOutsideWhatTheServiceStoresAreAnErrorNamingTheFileJobAndField) {
  const std::string vgg = HomeDir() + "/models/vgg.onnx";
  struct Case {
    const char* set;
    const char* message;
  } cases[] = {
      {"gpu_util = 1e308", ": job 1: field 'gpu_util' of its observations: want a number in [0, 100], got 1e+308"},
      {"gpu_util = -50", ": job 1: field 'gpu_util' of its observations: want a number in [0, 100], got -50"},
      {"gpu_util = 'abc'", ": job 1: field 'gpu_util' of its observations: want a number in [0, 100], got text"},
      {"samples = -3", ": job 1: field 'samples' of its observations: want an integer >= 1, got -3"},
  };
  for (const Case& c : cases) {
    const std::string db = dir_ + "/case.db";
    fs::remove(db);
    {
      ObservedDb d(db);
      int64_t a = d.AddJob({{"model", vgg}, {"batch", 8}});
      d.Observe(a, 40, 2);
      d.Exec(std::string("UPDATE observations SET ") + c.set);
    }
    Result<std::vector<ObservedJob>> r = ReadObservedJobs(db);
    ASSERT_FALSE(r.ok()) << c.set;
    EXPECT_EQ(r.message(), db + c.message) << c.set;
  }
}

// The closed loop's purpose, on the real measurements: a VGG job on CIFAR-10
// at a batch size the dataset lacks is observed far from its prediction;
// retraining with it moves the prediction for that job toward the observation.
TEST_F(ObservationsTest, RetrainingMovesThePredictionTowardTheObservation) {
  auto catalog = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(catalog.ok()) << catalog.message();
  auto base = BuildDataset(DataDir() + "/lucid/single_data.csv", *catalog);
  ASSERT_TRUE(base.ok()) << base.message();
  // forest: a model that can fit one job's rows. The default (auto, which picks the physics
  // model on this data) has nine global parameters and a robust loss: one observation of a
  // workload does not move it (docs/predictor.md, "Observed jobs").
  const std::string algo = "forest";
  auto before = Predictor::Train(*base, algo, 0, DefaultFeatureSet(algo));
  ASSERT_TRUE(before.ok()) << before.message();

  const std::string vgg = HomeDir() + "/models/vgg.onnx";
  LoadOptions lo;
  lo.batch = 96;
  auto graph = LoadOnnxGraph(vgg, lo);
  ASSERT_TRUE(graph.ok()) << graph.message();
  auto cost = AnalyzeCost(*graph, CostOptions());
  ASSERT_TRUE(cost.ok());
  JobConfig job;
  job.batch = 96;
  job.gpu = base->gpu;
  auto p0 = before->Predict({*cost}, job);
  ASSERT_TRUE(p0.ok()) << p0.message();
  // 40 points away from the prediction, inside [0, 100].
  const double observed = p0->prediction.util > 50 ? p0->prediction.util - 40 : p0->prediction.util + 40;

  {
    ObservedDb db(db_);
    int64_t id = db.AddJob({{"model", vgg}, {"batch", 96}, {"amp", false}});
    db.Observe(id, observed, 100);
  }
  auto jobs = ReadObservedJobs(db_);
  ASSERT_TRUE(jobs.ok()) << jobs.message();
  Dataset with = *base;
  std::vector<std::string> skipped;
  ASSERT_TRUE(AppendObservedRows(*jobs, db_, *catalog, &with, &skipped).ok());
  ASSERT_EQ(with.rows.size(), base->rows.size() + 1);
  auto after = Predictor::Train(with, algo, 0, DefaultFeatureSet(algo));
  ASSERT_TRUE(after.ok()) << after.message();
  auto p1 = after->Predict({*cost}, job);
  ASSERT_TRUE(p1.ok());
  EXPECT_LT(std::fabs(p1->prediction.util - observed), std::fabs(p0->prediction.util - observed))
      << "before " << p0->prediction.util << ", observed " << observed << ", after " << p1->prediction.util;
  EXPECT_EQ(after->info().training_rows, base->rows.size() + 1);
}

// A job of several networks (the service's "models") becomes one row whose
// features are those of its step: the same as `gpucast predict --model G
// --model D --model D` computes (JobStepReports).
TEST_F(ObservationsTest, SeveralNetworksBecomeOneRowOfTheirStep) {
  auto catalog = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(catalog.ok()) << catalog.message();
  auto base = BuildDataset(DataDir() + "/lucid/single_data.csv", *catalog);
  ASSERT_TRUE(base.ok()) << base.message();
  const std::string g = HomeDir() + "/models/dcgan_generator.onnx";
  const std::string d = HomeDir() + "/models/dcgan_discriminator.onnx";
  ObservedDb db(db_);  // autocommit: each statement is visible to the reader
  int64_t id = db.AddJob({{"models", {{{"path", g}, {"repeat", 1}}, {{"path", d}, {"repeat", 2}}}}, {"batch", 64}});
  db.Observe(id, 42, 10);
  int64_t malformed = db.AddJob({{"models", "not a list"}});  // never observed: not read
  auto jobs = ReadObservedJobs(db_);
  ASSERT_TRUE(jobs.ok()) << jobs.message();
  ASSERT_EQ(jobs->size(), 1u);
  ASSERT_EQ((*jobs)[0].networks.size(), 2u);
  EXPECT_EQ((*jobs)[0].networks[1].graph_file, d);
  EXPECT_EQ((*jobs)[0].networks[1].repeat, 2);
  Dataset with = *base;
  std::vector<std::string> skipped;
  ASSERT_TRUE(AppendObservedRows(*jobs, db_, *catalog, &with, &skipped).ok());
  ASSERT_TRUE(skipped.empty()) << skipped[0];
  ASSERT_EQ(with.rows.size(), base->rows.size() + 1);
  EXPECT_EQ(with.rows.back().model, "observed");
  EXPECT_EQ(with.rows.back().dataset, "dcgan_generator.onnx+dcgan_discriminator.onnx");
  EXPECT_EQ(with.rows.back().gpu_util, 42);
  LoadOptions lo;
  lo.batch = 64;
  auto step = JobStepReports({g, d, d}, lo, CostOptions{});
  ASSERT_TRUE(step.ok()) << step.message();
  JobConfig cfg;
  cfg.batch = 64;
  cfg.gpu = base->gpu;
  auto want = ComputeFeatures(*step, cfg);
  ASSERT_TRUE(want.ok()) << want.message();
  EXPECT_EQ(with.x.back(), *want);
  // A stored spec whose models are malformed names the job.
  db.Observe(malformed, 10, 1);
  auto bad = ReadObservedJobs(db_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), db_ + ": job " + std::to_string(malformed) + ": spec models");
}

// The learning curve on real measurements replayed as observations: the
// ResNet50 rows become observed jobs; point k trains on k of them.
TEST_F(ObservationsTest, LearningCurveTrainsOnKObservedJobsOfANeverSeenWorkload) {
  auto catalog = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(catalog.ok()) << catalog.message();
  auto base = BuildDataset(DataDir() + "/lucid/single_data.csv", *catalog);
  ASSERT_TRUE(base.ok()) << base.message();
  {
    ObservedDb db(db_);
    for (const Measurement& m : base->rows) {
      if (m.model != "ResNet50") continue;
      int64_t id = db.AddJob({{"model", HomeDir() + "/models/resnet50.onnx"}, {"batch", m.batch}, {"amp", m.amp}});
      db.Observe(id, m.gpu_util, 1);
    }
  }
  auto jobs = ReadObservedJobs(db_);
  ASSERT_TRUE(jobs.ok()) << jobs.message();
  const size_t n = jobs->size();
  ASSERT_GE(n, 3u);
  Dataset data = *base;
  std::vector<std::string> skipped;
  ASSERT_TRUE(AppendObservedRows(*jobs, db_, *catalog, &data, &skipped).ok());
  std::vector<bool> observed(data.rows.size(), false);
  for (size_t i = base->rows.size(); i < data.rows.size(); ++i) observed[i] = true;
  auto curve = ObservationLearningCurve(data, observed, "ridge", DefaultFeatureSet("ridge"), 0);
  ASSERT_TRUE(curve.ok()) << curve.message();
  ASSERT_EQ(curve->size(), n);
  for (size_t k = 0; k < n; ++k) {
    const CurvePoint& c = (*curve)[k];
    EXPECT_EQ(c.group, "ResNet50/ImageNet");
    EXPECT_EQ(c.observed_in_training, static_cast<int>(k));
    EXPECT_EQ(c.held_out, static_cast<int>(n - k));
    EXPECT_TRUE(std::isfinite(c.mae) && c.mae >= std::fabs(c.mean_signed));
  }
}

}  // namespace
}  // namespace gpucast
