// POST /v1/jobs/{id}/observations through a real HTTP server
// (service_fixture.h): stored, shown with the job, in /metrics, idempotent,
// capped per job.
#include <sqlite3.h>

#include <filesystem>

#include "service/observations.h"
#include "service/service_fixture.h"
#include "service/sha256.h"

namespace gpucast::service {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using testing::ServiceTest;

TEST_F(ServiceTest, ObservationIsStoredAndShownWithTheJob) {
  StartServer();
  int64_t id = Submit(4);  // fake engine: predicted 40
  auto g = client_->Get("/v1/jobs/" + std::to_string(id));
  ASSERT_TRUE(g);
  EXPECT_TRUE(Body(g)["observed_util"].is_null());
  EXPECT_EQ(Body(g)["observed_samples"], 0);

  auto r = PostJson("/v1/jobs/" + std::to_string(id) + "/observations",
                {{"gpu_util", 90}, {"source", "nvidia-smi"}, {"samples", 3}, {"gpu", "RTX3090"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["observed_util"], 90.0);
  EXPECT_EQ(Body(r)["predicted_util"], 40.0);
  r = PostJson("/v1/jobs/" + std::to_string(id) + "/observations", {{"gpu_util", 50}, {"source", "slurm"}});
  ASSERT_EQ(r->status, 201) << r->body;

  g = client_->Get("/v1/jobs/" + std::to_string(id));
  json j = Body(g);
  EXPECT_DOUBLE_EQ(j["observed_util"].get<double>(), (90.0 * 3 + 50.0) / 4);  // sample-weighted: 80
  EXPECT_EQ(j["observed_samples"], 4);
  // The list shows it too.
  EXPECT_EQ(Body(client_->Get("/v1/jobs"))["jobs"][0]["observed_samples"], 4);

  // /metrics: |40 - 90| = 50 and |40 - 50| = 10, by source.
  std::string m = client_->Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("gpucast_prediction_abs_error_bucket{le=\"10\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_prediction_abs_error_bucket{le=\"50\"} 2\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_prediction_abs_error_sum 60\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_observations_total{source=\"nvidia-smi\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_observations_total{source=\"slurm\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_http_requests_total{route=\"POST /v1/jobs/{id}/observations\",code=\"201\"} 2"));

  // Durable: a restarted service shows the same.
  StopServer();
  StartServer();
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(id)))["observed_samples"], 4);
}


TEST_F(ServiceTest, ARetriedObservationWithItsIdempotencyKeyIsStoredOnce) {
  StartServer();
  int64_t id = Submit(4);  // fake engine: predicted 40
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/observations";
  const json body = {{"gpu_util", 90}, {"source", "slurm"}, {"samples", 80}};
  httplib::Headers key = {{"Idempotency-Key", "slurm-epilog-test-42"}};
  auto a = PostJson(path, body, key);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->status, 201) << a->body;
  EXPECT_EQ(a->get_header_value("Idempotent-Replayed"), "");
  auto b = PostJson(path, body, key);  // Slurm reran the epilog
  ASSERT_EQ(b->status, 201) << b->body;
  EXPECT_EQ(b->get_header_value("Idempotent-Replayed"), "true");
  EXPECT_EQ(Body(b)["observed_samples"], 80);
  json j = Body(client_->Get("/v1/jobs/" + std::to_string(id)));
  EXPECT_EQ(j["observed_samples"], 80);
  EXPECT_EQ(j["observed_util"], 90.0);
  // The same key with another measurement: refused, nothing stored.
  auto c = PostJson(path, {{"gpu_util", 10}, {"source", "slurm"}, {"samples", 80}}, key);
  ASSERT_EQ(c->status, 422) << c->body;
  EXPECT_EQ(Body(c)["error"], "Idempotency-Key 'slurm-epilog-test-42' was already used for observation 1 of job " +
                                  std::to_string(id) + " with a different request");
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(id)))["observed_samples"], 80);
  // Too long a key: 400.
  auto d = PostJson(path, body, {{"Idempotency-Key", std::string(256, 'k')}});
  EXPECT_EQ(d->status, 400);
  // Counted once in /metrics: |40 - 90| = 50.
  std::string m = client_->Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("gpucast_observations_total{source=\"slurm\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_prediction_abs_error_sum 50\n"));
  // After a restart the key still holds.
  StopServer();
  StartServer();
  auto e = PostJson(path, body, key);
  ASSERT_EQ(e->status, 201) << e->body;
  EXPECT_EQ(e->get_header_value("Idempotent-Replayed"), "true");
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(id)))["observed_samples"], 80);
}


TEST_F(ServiceTest, AnObservationAboveTheSharePlusMarginIsOveruse) {
  StartServer();
  int64_t id = Submit(2);
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/observations";
  json j = Body(client_->Get("/v1/jobs/" + std::to_string(id)));
  EXPECT_EQ(j["overuse"], false);
  EXPECT_TRUE(j["share_pct"].is_null());
  // shard 1 of 8 = 12.5%; 30 <= 12.5 + 20: not overuse.
  auto r = PostJson(path, {{"gpu_util", 30}, {"source", "nvidia-smi"}, {"share_pct", 12.5}});
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["overuse"], false);
  // 33 > 12.5 + 20.
  r = PostJson(path, {{"gpu_util", 33}, {"source", "nvidia-smi"}, {"share_pct", 12.5}});
  ASSERT_EQ(r->status, 201) << r->body;
  j = Body(client_->Get("/v1/jobs/" + std::to_string(id)));
  EXPECT_EQ(j["overuse"], true);
  EXPECT_EQ(j["share_pct"], 12.5);
  // A margin of 30 points: 33 <= 42.5.
  int64_t other = Submit(1);
  r = PostJson("/v1/jobs/" + std::to_string(other) + "/observations",
           {{"gpu_util", 33}, {"source", "slurm"}, {"share_pct", 12.5}, {"overuse_margin", 30}});
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["overuse"], false);
  std::string m = client_->Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("gpucast_overuse_total{source=\"nvidia-smi\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_overuse_total{source=\"slurm\"} 0\n"));
}


TEST_F(ServiceTest, BadObservationsGet400UnknownJobs404) {
  StartServer();
  int64_t id = Submit(2);
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/observations";
  auto r = PostJson(path, {{"gpu_util", 101}, {"source", "dcgm"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Body(r)["error"].get<std::string>(), HasSubstr("field 'gpu_util'"));
  r = client_->Post(path.c_str(), "{\"gpu_util\": 5", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Body(r)["error"].get<std::string>(), HasSubstr("malformed JSON"));
  r = client_->Post(path.c_str(), "gpu_util=5", "text/plain");
  EXPECT_EQ(r->status, 415);
  r = PostJson("/v1/jobs/999/observations", {{"gpu_util", 50}, {"source", "dcgm"}});
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Body(r)["error"], "no job 999");
  r = client_->Get(path.c_str());
  EXPECT_EQ(r->status, 405);
  // Nothing was stored.
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(id)))["observed_samples"], 0);
}


// Finding 5 of issue 20: one observation of 2^40 samples fixed a job's mean
// for good, and a job took any number of observations.
TEST_F(ServiceTest, ObservationsAreCappedPerObservationAndPerJob) {
  StartServer();
  int64_t id = Submit(2);
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/observations";
  auto r = PostJson(path, {{"gpu_util", 50}, {"source", "dcgm"}, {"samples", int64_t{1} << 40}});
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "field 'samples': want an integer in [1, 1000000]");
  // 100 observations of the most samples each reach the per-job samples cap.
  for (int i = 0; i < 100; ++i) {
    r = PostJson(path, {{"gpu_util", i % 2 ? 10 : 90}, {"source", "dcgm"}, {"samples", kMaxSamplesPerObservation}});
    ASSERT_EQ(r->status, 201) << i << r->body;
  }
  r = PostJson(path, {{"gpu_util", 50}, {"source", "dcgm"}, {"samples", 1}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "job " + std::to_string(id) + " has 100000000 samples; 1 more would pass the 100000000 one "
                      "job may have");
  json j = Body(client_->Get("/v1/jobs/" + std::to_string(id)));
  EXPECT_EQ(j["observed_samples"], kMaxSamplesPerJob);
  EXPECT_NEAR(j["observed_util"].get<double>(), 50.0, 1e-9);  // the running mean of 90, 10, 90, ...
  // The observation-count cap, on another job.
  int64_t other = Submit(1);
  const std::string p2 = "/v1/jobs/" + std::to_string(other) + "/observations";
  {
    // 10,000 observations of one sample each, written as one transaction
    // (through the API each would be an fsync'ed commit).
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(opts_.db_path.c_str(), &db), SQLITE_OK);
    std::string sql = "BEGIN;";
    for (int64_t i = 0; i < kMaxObservationsPerJob; ++i) {
      sql += "INSERT INTO observations (job_id, gpu_util, samples, source, gpu, observed_at) VALUES (" +
             std::to_string(other) + ", 20, 1, 'slurm', '', 1);";
    }
    sql += "INSERT OR REPLACE INTO observation_summary VALUES (" + std::to_string(other) + ", 20, " +
           std::to_string(kMaxObservationsPerJob) + ", " + std::to_string(kMaxObservationsPerJob) + ", NULL, 0);COMMIT;";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  r = PostJson(p2, {{"gpu_util", 50}, {"source", "dcgm"}});
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(Error(r), "job " + std::to_string(other) + " has 10000 observations, the most one job may have");
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(other)))["observed_samples"], kMaxObservationsPerJob);
}

// Issue 31 item 10: a cancelled job did not run as submitted; its
// observation would poison the next `train --observations`.
TEST_F(ServiceTest, ObservationsOfACancelledJobAreRefused) {
  StartServer();
  int64_t id = Submit(2);
  ASSERT_EQ(client_->Delete("/v1/jobs/" + std::to_string(id))->status, 200);
  auto r = PostJson("/v1/jobs/" + std::to_string(id) + "/observations", {{"gpu_util", 50}, {"source", "dcgm"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(Error(r), "job " + std::to_string(id) + " is cancelled: it takes no observations (a measurement of a job "
                      "that did not run as submitted would mislead training)");
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(id)))["observed_samples"], 0);
}

// Issue 31 item 10: the observations of all jobs together are capped (--max-observations).
TEST_F(ServiceTest, ObservationsOfAllJobsAreCapped) {
  opts_.loop.max_observations = 3;
  StartServer();
  int64_t a = Submit(2), b = Submit(3);
  for (int64_t id : {a, a, b}) {
    auto r = PostJson("/v1/jobs/" + std::to_string(id) + "/observations", {{"gpu_util", 50}, {"source", "dcgm"}});
    ASSERT_EQ(r->status, 201) << r->body;
  }
  auto r = PostJson("/v1/jobs/" + std::to_string(b) + "/observations", {{"gpu_util", 50}, {"source", "dcgm"}});
  EXPECT_EQ(r->status, 507);
  EXPECT_EQ(Error(r), "the service holds 3 observations, its limit (gpucast serve --max-observations 3); ask the "
                      "operator");
  // Counted from the database at start.
  StopServer();
  StartServer();
  r = PostJson("/v1/jobs/" + std::to_string(a) + "/observations", {{"gpu_util", 50}, {"source", "dcgm"}});
  EXPECT_EQ(r->status, 507);
}

// Issue 31 item 5: each observed upload was hard-linked into DB.observed/,
// outside the upload quota and never removed: observe, cancel, repeat filled
// the disk. Kept graphs now have a quota of their own, and at start those no
// observed job names are removed.
TEST_F(ServiceTest, GraphsKeptForTrainingHaveAQuotaAndAreCleanedAtStart) {
  const std::string one = std::string(testing::kFakeModelMagic) + " graph 1";
  opts_.max_body_bytes = 4096;
  opts_.loop.observed_graph_quota_bytes = 2 * one.size();
  StartServer(4);
  const std::string kept_dir = opts_.db_path + ".observed";
  std::vector<std::string> shas;
  for (int i = 1; i <= 3; ++i) {
    const std::string bytes = std::string(testing::kFakeModelMagic) + " graph " + std::to_string(i);
    shas.push_back(Sha256Hex(bytes));
    auto r = client_->Post("/v1/jobs?batch=1", bytes, "application/octet-stream");
    ASSERT_EQ(r->status, 201) << r->body;
    const int64_t id = Body(r)["id"];
    r = PostJson("/v1/jobs/" + std::to_string(id) + "/observations", {{"gpu_util", 40}, {"source", "dcgm"}});
    ASSERT_EQ(r->status, 201) << r->body;  // stored, whether its graph is kept or not
    ASSERT_EQ(client_->Delete("/v1/jobs/" + std::to_string(id))->status, 200);
  }
  EXPECT_EQ(service_->upload_bytes(), 0u);  // the jobs' uploads are gone ...
  EXPECT_TRUE(fs::exists(kept_dir + "/" + shas[0] + ".onnx"));  // ... the first two graphs are kept ...
  EXPECT_TRUE(fs::exists(kept_dir + "/" + shas[1] + ".onnx"));
  EXPECT_FALSE(fs::exists(kept_dir + "/" + shas[2] + ".onnx"));  // ... the third would pass the quota
  // A file no observed job names (left by an older gpucast, or planted) goes at start.
  StopServer();
  std::ofstream(kept_dir + "/" + std::string(64, 'a') + ".onnx") << "stray";
  std::ofstream(kept_dir + "/notes.txt") << "stray";
  StartServer(4);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(kept_dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2u);
  EXPECT_TRUE(fs::exists(kept_dir + "/" + shas[0] + ".onnx"));
}

// A MIG job takes no observation: every source is the whole GPU's counter
// (closed_loop.cc), and a stored one would train as a whole-GPU row.
TEST_F(ServiceTest, AMigJobTakesNoObservation) {
  StartServer();
  auto r = PostJson("/v1/jobs", {{"model", model_}, {"batch", 2}, {"gpu", "A100-80GB"}, {"mig", "1g.10gb"}});
  ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "");
  const int64_t id = Body(r)["id"];
  auto o = PostJson("/v1/jobs/" + std::to_string(id) + "/observations", {{"gpu_util", 50}, {"source", "dcgm"}});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->status, 422);
  EXPECT_EQ(Error(o), "job " + std::to_string(id) +
                          " runs on a MIG 1g.10gb slice: it takes no observations (the sources nvidia-smi, dcgm and "
                          "slurm read the whole GPU's utilization counter, not the slice's)");
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(id)))["observed_samples"], 0);
}

}  // namespace
}  // namespace gpucast::service
