// POST/GET /v1/jobs, GET/DELETE /v1/jobs/{id} through a real HTTP server
// (service_fixture.h): submission, field errors, uploads, idempotency, paging,
// cancellation, placement or the reason a job waits.
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "predict/physics_fixture.h"
#include "service/engine.h"
#include "service/read_as.h"
#include "service/service_fixture.h"
#include "service/sha256.h"
#include "util/paths.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;
using testing::LucidEngine;
using testing::ServiceTest;
using testing::WriteLucidPredictorAndVgg;

TEST_F(ServiceTest, SubmitStoresJobPlacesItAndReturns201) {
  StartServer();
  auto r = PostJson("/v1/jobs", {{"model", "m.onnx"}, {"batch", 4}, {"amp", true}, {"gpus", 1},
                                 {"name", "r50"}, {"attrs", {{"loader_workers", 2}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  json j = Body(r);
  EXPECT_EQ(j["id"], 1);
  EXPECT_EQ(j["predicted_util"], 40.0);  // fake engine: 10 x batch
  // The submission ran a scheduling pass: an idle cluster places it at once.
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["placement"], json({0}));
  EXPECT_FALSE(j.contains("pending"));
  EXPECT_EQ(r->get_header_value("Location"), "/v1/jobs/1");
  // The model as the client named it: no server path in the reply.
  EXPECT_EQ(j["model"], "m.onnx");
  EXPECT_EQ(r->body.find(dir_), std::string::npos) << r->body;

  auto g = client_->Get("/v1/jobs/1");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200);
  json got = Body(g);
  EXPECT_EQ(got["model"], "m.onnx");
  EXPECT_EQ(got["batch"], 4);
  EXPECT_EQ(got["amp"], true);
  EXPECT_EQ(got["name"], "r50");
  EXPECT_EQ(got["gpu"], "RTX3090");  // the test scheduler knows no GPU type: the default
  EXPECT_EQ(got["attrs"]["loader_workers"], 2);
  EXPECT_EQ(got["predicted_util_interval"], json({35.0, 45.0}));

  // Committed: a second store on the same file sees it, with the file the service read.
  auto store = JobStore::Open(opts_.db_path);
  ASSERT_TRUE(store.ok()) << store.message();
  auto found = (*store)->Get(1);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->spec.name, "r50");
  EXPECT_EQ((*found)->spec.model, fs::canonical(model_).string());
  EXPECT_EQ((*found)->spec.model_name, "m.onnx");
}

TEST_F(ServiceTest, AJobThatWaitsSaysWhy) {
  StartServer(1);
  ASSERT_EQ(Body(PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}}))["state"], "running");
  auto r = PostJson("/v1/jobs", {{"model", model_}, {"batch", 2}});
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["state"], "queued");
  EXPECT_EQ(Body(r)["placement"], json::array());
  EXPECT_EQ(Body(r)["pending"], "waiting for 1 GPU(s) the policy 'one-per-gpu (test)' can place it on (0 queued before it)");
  EXPECT_EQ(Body(client_->Get("/v1/jobs/2"))["pending"], Body(r)["pending"]);
  EXPECT_EQ(Body(client_->Get("/v1/jobs?state=queued"))["jobs"][0]["pending"], Body(r)["pending"]);
  ASSERT_EQ(client_->Delete("/v1/jobs/1")->status, 200);
  ASSERT_TRUE(service_->Tick(1).ok());
  json two = Body(client_->Get("/v1/jobs/2"));
  EXPECT_EQ(two["state"], "running");
  EXPECT_FALSE(two.contains("pending"));
}

TEST_F(ServiceTest, BadJsonBodiesGet400WithMessage) {
  StartServer();
  struct Case {
    std::string body;
    std::string message;
  };
  const Case cases[] = {
      {"{\"model\": ", "malformed JSON: "},
      {"[1,2]", "request body: want a JSON object"},
      {"{\"batch\": 2}", "field 'model': missing (path of an ONNX file, or 'models'"},
      {"{\"model\": \"x.onnx\"}", "field 'batch': missing (the batch size, an integer >= 1)"},
      {"{\"model\": \"x.onnx\", \"batch\": 1, \"colour\": 1}", "unknown field 'colour'"},
      {"{\"model\": \"x.onnx\", \"batch\": 0}", "field 'batch': want an integer in [1, 16777216], got 0"},
      {"{\"model\": \"x.onnx\", \"batch\": \"8\"}", "field 'batch': want an integer in [1, 16777216], got \"8\""},
      {"{\"model\": \"x.onnx\", \"batch\": 8.5}", "field 'batch': want an integer in [1, 16777216], got 8.5"},
      {"{\"model\": \"x.onnx\", \"batch\": 1, \"amp\": 1}", "field 'amp': want true or false"},
      {"{\"model\": \"x.onnx\", \"batch\": 1, \"attrs\": [1]}", "field 'attrs': want an object"},
      {"{\"model\": \"x.onnx\", \"batch\": 1, \"attrs\": {\"colour\": 1}}", "attrs: job attribute 'colour'"},
      {"{\"model\": \"x.onnx\", \"batch\": 1, \"attrs\": {\"loader_workers\": 1.5}}",
       "attrs: job attribute 'loader_workers': value '1.5' is not a non-negative integer"},
      {"{\"model\": \"x.onnx\", \"batch\": 1, \"gpu\": \"RTX3900\"}",
       "field 'gpu': unknown GPU 'RTX3900'; closest: RTX3090"},
  };
  for (const Case& c : cases) {
    auto r = client_->Post("/v1/jobs", c.body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << c.body;
    EXPECT_THAT(Error(r), HasSubstr(c.message)) << c.body;
  }
  // Query parameters belong to uploads.
  auto r = client_->Post("/v1/jobs?batch=2", json{{"model", model_}, {"batch", 1}}.dump(), "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "query parameter 'batch': a JSON job carries its fields in the body (query parameters go with "
                      "uploads)");
  EXPECT_EQ(Body(client_->Get("/v1/jobs"))["jobs"].size(), 0u);
}

// Finding 8 of issue 20: numbers are numbers for every numeric field and
// attribute, and every attribute given comes back in the reply.
TEST_F(ServiceTest, NumbersAreAcceptedAsNumbersAndEchoed) {
  StartServer();
  auto r = PostJson("/v1/predict", {{"model", model_},
                                    {"batch", 32.0},
                                    {"gpus", 1},
                                    {"dims", {{"seq", 128.0}}},
                                    {"attrs",
                                     {{"loader_ms_per_sample", 14.5},
                                      {"loader_workers", 4},
                                      {"env_steps_per_update", 8},
                                      {"data_on_gpu", true},
                                      {"rl_env", 0}}}});
  ASSERT_EQ(r->status, 200) << r->body;
  json j = Body(r);
  EXPECT_EQ(j["batch"], 32);
  EXPECT_EQ(j["dims"]["seq"], 128);
  EXPECT_EQ(j["attrs"]["loader_ms_per_sample"], 14.5);
  EXPECT_EQ(j["attrs"]["loader_workers"], 4);
  EXPECT_EQ(j["attrs"]["env_steps_per_update"], 8);
  EXPECT_EQ(j["attrs"]["data_on_gpu"], 1);
  EXPECT_EQ(j["attrs"]["rl_env"], 0);
  // The string form still works and reads back typed.
  r = PostJson("/v1/predict", {{"model", model_}, {"batch", 1}, {"attrs", {{"loader_ms_per_sample", "14.5"}}}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["attrs"]["loader_ms_per_sample"], 14.5);
}

TEST_F(ServiceTest, AJobNamesItsGpuAndTheClusterMustHaveIt) {
  StartServer();
  auto r = PostJson("/v1/predict", {{"model", model_}, {"batch", 1}, {"gpu", "t4"}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["gpu"], "T4");  // canonical
  r = PostJson("/v1/predict", {{"model", model_}, {"batch", 1}, {"gpu", 4}});
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Error(r), HasSubstr("field 'gpu': want a GPU type name"));
  r = client_->Post("/v1/predict?batch=1&gpu=H1OO", std::string(testing::kFakeModelMagic) + " up",
                    "application/octet-stream");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Error(r), HasSubstr("parameter 'gpu': unknown GPU 'H1OO'"));
}

TEST_F(ServiceTest, MissingOrInvalidModelGets422) {
  StartServer();
  auto r = PostJson("/v1/jobs", {{"model", dir_ + "/nope.onnx"}, {"batch", 1}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "model '" + dir_ + "/nope.onnx': no such model file under the service's model roots");
  r = PostJson("/v1/predict", {{"model", "bad.onnx"}, {"batch", 1}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "bad.onnx: not an ONNX model");  // the name the client gave
}

TEST_F(ServiceTest, JobOfSeveralNetworks) {
  std::ofstream(dir_ + "/d.onnx") << testing::kFakeModelMagic << " discriminator";
  StartServer();
  auto r = PostJson("/v1/jobs", {{"models", {{{"path", model_}}, {{"path", "d.onnx"}, {"repeat", 2}}}}, {"batch", 2}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["predicted_util"], 60.0);  // 10 x 2 x (1 + 2)
  json got = Body(client_->Get("/v1/jobs/1"));
  EXPECT_FALSE(got.contains("model"));
  EXPECT_EQ(got["models"], json({{{"path", model_}, {"repeat", 1.0}}, {{"path", "d.onnx"}, {"repeat", 2.0}}}));
  r = PostJson("/v1/predict", {{"models", {{{"path", model_}}, {{"path", dir_ + "/d.onnx"}, {"repeat", 0.5}}}}, {"batch", 1}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["predicted_util"], 15.0);
  r = PostJson("/v1/jobs", {{"models", {{{"path", model_}}, {{"path", "nope.onnx"}}}}, {"batch", 1}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "model 'nope.onnx': no such model file under the service's model roots");
  r = PostJson("/v1/jobs", {{"models", {{{"path", model_}}, {{"path", dir_ + "/bad.onnx"}}}}, {"batch", 1}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), dir_ + "/bad.onnx: not an ONNX model");
  r = PostJson("/v1/jobs", {{"models", {{{"path", model_}}, {{"path", "m.onnx"}, {"repeat", 2}}}}, {"batch", 1}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "models: 'm.onnx' names a file listed before (give one entry with the total repeat)");
  r = PostJson("/v1/jobs", {{"models", {{{"path", model_}, {"repeat", -1}}}}, {"batch", 1}});
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Error(r), HasSubstr("models[0].repeat"));
}

TEST_F(ServiceTest, WrongContentTypeGets415) {
  StartServer();
  auto r = client_->Post("/v1/jobs", "model=x", "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415);
  EXPECT_THAT(Error(r), HasSubstr("want application/json"));
}

TEST_F(ServiceTest, IdempotencyKeyMakesSubmissionIdempotent) {
  StartServer();
  httplib::Headers key = {{"Idempotency-Key", "run-42"}};
  auto a = PostJson("/v1/jobs", {{"model", model_}, {"batch", 3}}, key);
  auto b = PostJson("/v1/jobs", {{"model", model_}, {"batch", 3}}, key);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->status, 201);
  EXPECT_EQ(b->status, 201);
  EXPECT_EQ(Body(a)["id"], Body(b)["id"]);
  EXPECT_EQ(b->get_header_value("Idempotent-Replayed"), "true");
  EXPECT_EQ(a->get_header_value("Idempotent-Replayed"), "");
  auto c = PostJson("/v1/jobs", {{"model", model_}, {"batch", 5}}, key);
  EXPECT_EQ(c->status, 422);
  EXPECT_EQ(Error(c), "Idempotency-Key 'run-42' was already used for job 1 with a different request");
  auto d = PostJson("/v1/jobs", {{"model", model_}, {"batch", 5}}, {{"Idempotency-Key", std::string(256, 'k')}});
  EXPECT_EQ(d->status, 400);
  EXPECT_EQ(Error(d), "Idempotency-Key: at most 255 bytes");
  PostJson("/v1/jobs", {{"model", model_}, {"batch", 3}});
  EXPECT_EQ(Body(client_->Get("/v1/jobs"))["jobs"].size(), 2u);
}

TEST_F(ServiceTest, ListFiltersAndPages) {
  StartServer();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}})->status, 201);
  ASSERT_EQ(client_->Delete("/v1/jobs/2")->status, 200);
  json page = Body(client_->Get("/v1/jobs?limit=2"));
  ASSERT_EQ(page["jobs"].size(), 2u);
  EXPECT_EQ(page["jobs"][1]["id"], 2);
  EXPECT_EQ(page["next_after"], 2);
  page = Body(client_->Get("/v1/jobs?limit=2&after=4"));
  ASSERT_EQ(page["jobs"].size(), 1u);
  EXPECT_EQ(page["next_after"], nullptr);
  json cancelled = Body(client_->Get("/v1/jobs?state=cancelled"));
  ASSERT_EQ(cancelled["jobs"].size(), 1u);
  EXPECT_EQ(cancelled["jobs"][0]["id"], 2);
  auto r = client_->Get("/v1/jobs?state=sleeping");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "parameter 'state': want queued, running, done or cancelled, got 'sleeping'");
  r = client_->Get("/v1/jobs?limit=0");
  EXPECT_EQ(r->status, 400);
  r = client_->Get("/v1/jobs?colour=red");
  EXPECT_EQ(Error(r), "unknown query parameter 'colour' (known: state, after, limit)");
  // A parameter twice: the last one won silently (state=running&state=done listed the done
  // jobs, the other order the running ones); refused as the upload's query string refuses it.
  for (const char* q : {"state=cancelled&state=queued", "limit=1&limit=1000", "after=0&after=4"}) {
    r = client_->Get(std::string("/v1/jobs?") + q);
    EXPECT_EQ(r->status, 400) << q;
    EXPECT_THAT(Error(r), ::testing::EndsWith("': given more than once")) << q;
  }
}

TEST_F(ServiceTest, DeleteCancelsOnceAnd404sUnknown) {
  StartServer();
  ASSERT_EQ(PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}})->status, 201);
  auto r = client_->Delete("/v1/jobs/1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Body(r)["state"], "cancelled");
  EXPECT_FALSE(Body(r)["finished_at"].is_null());
  r = client_->Delete("/v1/jobs/1");
  EXPECT_EQ(r->status, 409);
  EXPECT_EQ(Error(r), "job 1 is already cancelled");
  r = client_->Delete("/v1/jobs/7");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Error(r), "no job 7");
  r = client_->Get("/v1/jobs/99");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Error(r), "no job 99");
}

TEST_F(ServiceTest, UploadedOnnxBodyWithQueryParameters) {
  StartServer();
  std::string bytes = std::string(testing::kFakeModelMagic) + " uploaded";
  auto r = client_->Post("/v1/jobs?batch=5&amp=1&name=up&attr.rl_env=1&dim.seq=128&attr.loader_ms_per_sample=2.5&"
                         "duration_s=90.5&gpu=RTX3090",
                         bytes, "application/octet-stream");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  json j = Body(r);
  EXPECT_EQ(j["predicted_util"], 50.0);
  EXPECT_EQ(j["amp"], true);
  EXPECT_EQ(j["dims"]["seq"], 128);
  EXPECT_EQ(j["attrs"]["rl_env"], 1);
  EXPECT_EQ(j["attrs"]["loader_ms_per_sample"], 2.5);
  EXPECT_EQ(j["duration_s"], 90.5);
  const std::string sha = Sha256Hex(bytes);
  EXPECT_EQ(j["model"], "upload:sha256:" + sha);
  std::ifstream in(opts_.db_path + ".models/" + sha + ".onnx");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, bytes);

  r = client_->Post("/v1/jobs?batch=x", bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "parameter 'batch': want an integer in [1, 16777216], got 'x'");
  r = client_->Post("/v1/jobs?amp=1", bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "parameter 'batch': missing (the batch size, an integer >= 1)");
  r = client_->Post("/v1/jobs?batch=1&size=3", bytes, "application/octet-stream");
  EXPECT_THAT(Error(r), HasSubstr("unknown query parameter 'size'"));
  r = client_->Post("/v1/predict?batch=1", "garbage", "application/octet-stream");
  EXPECT_EQ(r->status, 422);
  EXPECT_THAT(Error(r), HasSubstr("not an ONNX model"));
}

TEST_F(ServiceTest, JobLargerThanClusterIsRefused) {
  StartServer(2);
  auto r = PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}, {"gpus", 3}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "field 'gpus': 3 requested, the cluster has 2");
}

TEST_F(ServiceTest, SchedulingLoopPlacesFinishesAndRestores) {
  StartServer(2);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}, {"duration_s", 10}})->status, 201);
  }
  // Placed as they came: two GPUs, the third waits.
  EXPECT_EQ(Body(client_->Get("/v1/jobs/1"))["state"], "running");
  json two = Body(client_->Get("/v1/jobs/2"));
  EXPECT_EQ(two["placement"], json({1}));
  EXPECT_EQ(Body(client_->Get("/v1/jobs/3"))["state"], "queued");
  json cluster = Body(client_->Get("/v1/cluster"));
  EXPECT_EQ(cluster["gpus"][0]["jobs"], json({1}));
  EXPECT_EQ(cluster["queued"], json({3}));
  EXPECT_EQ(cluster["policy"], "one-per-gpu (test)");
  // Cancelling a running job frees its GPU for the queued one.
  ASSERT_EQ(client_->Delete("/v1/jobs/1")->status, 200);
  const double started = two["started_at"].get<double>();
  ASSERT_TRUE(service_->Tick(started + 1).ok());
  EXPECT_EQ(Body(client_->Get("/v1/jobs/3"))["placement"], json({0}));
  // Job 2 has 10 s to run.
  ASSERT_TRUE(service_->Tick(started + 10).ok());
  two = Body(client_->Get("/v1/jobs/2"));
  EXPECT_EQ(two["state"], "done");
  EXPECT_EQ(two["finished_at"], started + 10);

  // A restart puts running job 3 back on GPU 0.
  StopServer();
  StartServer(2);
  EXPECT_EQ(sched_->started(), std::vector<int64_t>({3}));
  EXPECT_EQ(Body(client_->Get("/v1/cluster"))["gpus"][0]["jobs"], json({3}));
}

// Finding 4 of issue 9: uploads were unauthenticated, kept when rejected, FNV-named.
TEST_F(ServiceTest, UploadsNeedTheTokenAreContentAddressedAndCleanedUp) {
  opts_.token = "tok";
  opts_.upload_quota_bytes = 100;
  StartServer(4);
  const httplib::Headers auth = {{"Authorization", "Bearer tok"}};
  const std::string models = opts_.db_path + ".models";
  std::string bytes = std::string(testing::kFakeModelMagic) + " one";
  auto r = client_->Post("/v1/predict?batch=1", bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 401);
  r = client_->Post("/v1/jobs?batch=1", bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 401);
  EXPECT_TRUE(fs::is_empty(models));
  r = client_->Post("/v1/jobs?batch=1", auth, "garbage", "application/octet-stream");
  EXPECT_EQ(r->status, 422);
  r = client_->Post("/v1/predict?batch=1", auth, bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 200);
  r = client_->Post("/v1/jobs?batch=1&gpus=9", auth, bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 422);
  EXPECT_TRUE(fs::is_empty(models));
  EXPECT_EQ(service_->upload_bytes(), 0u);
  r = client_->Post("/v1/jobs?batch=1&name=a", auth, bytes, "application/octet-stream");
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string sha = Sha256Hex(bytes);
  EXPECT_EQ(Body(r)["model"], "upload:sha256:" + sha);
  EXPECT_TRUE(fs::exists(models + "/" + sha + ".onnx"));
  auto r2 = client_->Post("/v1/jobs?batch=1&name=b", auth, bytes, "application/octet-stream");
  ASSERT_EQ(r2->status, 201);
  EXPECT_EQ(service_->upload_bytes(), bytes.size());
  std::string big = std::string(testing::kFakeModelMagic) + std::string(100, 'x');
  r = client_->Post("/v1/jobs?batch=1", auth, big, "application/octet-stream");
  EXPECT_EQ(r->status, 507);
  EXPECT_THAT(Error(r), HasSubstr("upload quota full"));
  EXPECT_EQ(service_->upload_bytes(), bytes.size());
  ASSERT_EQ(client_->Delete("/v1/jobs/1", auth)->status, 200);
  EXPECT_TRUE(fs::exists(models + "/" + sha + ".onnx"));  // job 2 still needs it
  ASSERT_EQ(client_->Delete("/v1/jobs/2", auth)->status, 200);
  EXPECT_FALSE(fs::exists(models + "/" + sha + ".onnx"));
  EXPECT_EQ(service_->upload_bytes(), 0u);
  r = client_->Post("/v1/jobs?batch=1&name=c", auth, bytes, "application/octet-stream");
  ASSERT_EQ(r->status, 201);
  std::ofstream(models + "/" + std::string(64, 'a') + ".onnx") << "stray";
  StopServer();
  StartServer(4);
  EXPECT_TRUE(fs::exists(models + "/" + sha + ".onnx"));
  EXPECT_FALSE(fs::exists(models + "/" + std::string(64, 'a') + ".onnx"));
  EXPECT_EQ(service_->upload_bytes(), bytes.size());
}

// Finding 6 of issue 9: any file was opened for any client, and errors told which exist.
TEST_F(ServiceTest, ModelPathsOutsideTheRootsGetOneRefusal) {
  std::string outside = testing::MakeTempDir();
  std::ofstream(outside + "/secret.onnx") << testing::kFakeModelMagic << " secret";
  fs::create_symlink(outside + "/secret.onnx", dir_ + "/link.onnx");
  ASSERT_EQ(mkfifo((dir_ + "/fifo.onnx").c_str(), 0600), 0);
  StartServer();
  auto refusal = [](const std::string& p) {
    return "model '" + p + "': no such model file under the service's model roots";
  };
  for (const std::string& p : {outside + "/secret.onnx", outside + "/absent.onnx", std::string("/etc/shadow"),
                               std::string("/etc/no-such-file"), dir_ + "/link.onnx", dir_ + "/../x",
                               std::string("../../../../etc/passwd"), dir_ + "/absent.onnx"}) {
    for (const char* route : {"/v1/jobs", "/v1/predict"}) {
      auto r = PostJson(route, {{"model", p}, {"batch", 1}});
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 422) << p;
      EXPECT_EQ(Error(r), refusal(p)) << p;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  auto r = PostJson("/v1/predict", {{"model", dir_ + "/fifo.onnx"}, {"batch", 1}});
  EXPECT_EQ(r->status, 422);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  r = PostJson("/v1/predict", {{"model", "m.onnx"}, {"batch", 1}});
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["model"], "m.onnx");
  fs::remove_all(outside);
}

// Issue 17 item 7: a root at / must not open the service's own /proc files.
TEST_F(ServiceTest, ProcAndSysAreNeverModelsEvenUnderARoot) {
  opts_.model_roots = {"/"};
  StartServer();
  for (const std::string& p : {std::string("/proc/self/maps"), std::string("/proc/self/status"),
                               std::string("/sys/kernel/mm/transparent_hugepage/enabled"), std::string("/dev/null"),
                               std::string("/proc/" + std::to_string(getpid()) + "/cmdline")}) {
    auto r = PostJson("/v1/predict", {{"model", p}, {"batch", 1}});
    EXPECT_EQ(r->status, 422) << p;
    EXPECT_EQ(Error(r), "model '" + p + "': no such model file under the service's model roots") << p;
  }
}

TEST_F(ServiceTest, NoModelRootsRefusesEveryPath) {
  opts_.model_roots.clear();
  StartServer();
  auto r = PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "model '" + model_ + "': no such model file under the service's model roots");
}

// slurmctld's deputy: with the deputy token, X-Gpucast-Read-As opens the
// paths as that user, anywhere the user may read and nowhere else; nobody else
// may send the header; never as root or a system uid; the gid must be the
// user's. Needs root (files of uid 65534); GPUCAST_SKIP_ROOT=1 opts out loudly.
TEST_F(ServiceTest, DeputyReadsModelsAsTheSubmittingUser) {
  if (geteuid() != 0) {
    if (std::getenv("GPUCAST_SKIP_ROOT") && std::string(std::getenv("GPUCAST_SKIP_ROOT")) == "1") {
      GTEST_SKIP() << "SKIPPED because GPUCAST_SKIP_ROOT=1: the deputy's read-as was NOT tested";
    }
    FAIL() << "needs root; run as root or opt out explicitly with GPUCAST_SKIP_ROOT=1";
  }
  const std::string outside = testing::MakeTempDir();
  ASSERT_EQ(chmod(outside.c_str(), 0755), 0);
  fs::create_directory(outside + "/user");
  std::ofstream(outside + "/user/m.onnx") << testing::kFakeModelMagic << " the user's";
  std::ofstream(outside + "/user/notes.txt") << "not a model";
  for (const char* p : {"/user", "/user/m.onnx", "/user/notes.txt"}) {
    ASSERT_EQ(chown((outside + p).c_str(), 65534, 65534), 0);
  }
  ASSERT_EQ(chmod((outside + "/user").c_str(), 0700), 0);
  ASSERT_EQ(chmod((outside + "/user/m.onnx").c_str(), 0600), 0);
  fs::create_directory(outside + "/root");
  std::ofstream(outside + "/root/m.onnx") << testing::kFakeModelMagic << " root's";
  ASSERT_EQ(chmod((outside + "/root").c_str(), 0700), 0);
  opts_.token = "api-token";
  opts_.deputy_token = "deputy-token";
  opts_.deputy_min_uid = 1000;
  StartServer();
  // This server's engine is the fake one (its "models" are text): the deputy hands it the
  // file's bytes as they are, instead of an ONNX model's bytes without weights (read_as.h).
  SetDeputyReaderForTesting([](int fd, std::chrono::steady_clock::time_point, LoadFailure*) -> Result<std::string> {
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    return out;
  });
  struct Restore {
    ~Restore() { SetDeputyReaderForTesting(nullptr); }
  } restore;
  // nobody (65534) is uid >= 1000 with its own group 65534 (nogroup on Debian).
  const httplib::Headers deputy = {{"Authorization", "Bearer deputy-token"}, {"X-Gpucast-Read-As", "65534:65534"}};
  auto r = PostJson("/v1/predict", {{"model", outside + "/user/m.onnx"}, {"batch", 3}}, deputy);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["predicted_util"], 30.0);
  r = PostJson("/v1/jobs", {{"model", outside + "/user/m.onnx"}, {"batch", 1}}, deputy);
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["model"], outside + "/user/m.onnx");
  // Root's private file, a missing one, a text file, a directory, /proc and
  // /sys: one refusal, only the path differs.
  const auto refused = [&](const std::string& p) {
    return "model '" + p + "': cannot be read as uid 65534 (it does not exist, uid 65534 may not read it, or it is "
                           "not a model file)";
  };
  for (const std::string& p : {outside + "/root/m.onnx", outside + "/none.onnx", outside + "/user/notes.txt",
                               outside + "/user", std::string("/proc/self/maps"), std::string("/proc/1/status"),
                               std::string("/sys/kernel/mm/transparent_hugepage/enabled"), std::string("/dev/zero")}) {
    r = PostJson("/v1/predict", {{"model", p}, {"batch", 1}}, deputy);
    EXPECT_EQ(r->status, 422) << p;
    EXPECT_EQ(Error(r), refused(p)) << p;
  }
  // Identities the service never takes, refused before any file is touched.
  for (const auto& [who, message] : std::vector<std::pair<std::string, std::string>>{
           {"0:0", "X-Gpucast-Read-As: uid 0: the service never reads files as root"},
           {"1:1", "X-Gpucast-Read-As: uid 1 is below the lowest uid files are read as (1000, gpucast serve "
                   "--deputy-min-uid)"},
           {"65534:0", "X-Gpucast-Read-As: gid 0 is not a group of uid 65534"},
           {"4000000:4000000", "X-Gpucast-Read-As: uid 4000000 has no account on the service's host"}}) {
    r = PostJson("/v1/predict", {{"model", outside + "/user/m.onnx"}, {"batch", 1}},
                 {{"Authorization", "Bearer deputy-token"}, {"X-Gpucast-Read-As", who}});
    EXPECT_EQ(r->status, 403) << who;
    EXPECT_EQ(Error(r), message) << who;
  }
  // The ordinary token may not send the header; without the header the roots apply.
  r = PostJson("/v1/predict", {{"model", outside + "/user/m.onnx"}, {"batch", 1}},
               {{"Authorization", "Bearer api-token"}, {"X-Gpucast-Read-As", "0:0"}});
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(Error(r), "X-Gpucast-Read-As: only the deputy (the bearer of --deputy-token-file) may have files read as a user");
  r = PostJson("/v1/predict", {{"model", outside + "/user/m.onnx"}, {"batch", 1}}, {{"Authorization", "Bearer deputy-token"}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "model '" + outside + "/user/m.onnx': no such model file under the service's model roots");
  r = PostJson("/v1/predict", {{"model", model_}, {"batch", 1}},
               {{"Authorization", "Bearer deputy-token"}, {"X-Gpucast-Read-As", "65534"}});
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "X-Gpucast-Read-As: want UID:GID");
  auto up = client_->Post("/v1/predict?batch=1", deputy, std::string(testing::kFakeModelMagic) + " up",
                          "application/octet-stream");
  ASSERT_TRUE(up);
  EXPECT_EQ(up->status, 400);
  EXPECT_EQ(Error(up), "X-Gpucast-Read-As: applies to a JSON job naming model paths, not to an upload");
  fs::remove_all(outside);
}

// POST /v1/jobs takes "mig" as POST /v1/predict does (one parser, one
// prediction): the job's prediction is /v1/predict's for the same body, the
// profile is stored and shown, and each refusal has /v1/predict's status and
// words (400 a profile no GPU has, 422 one the job's GPU lacks or a
// data-parallel job on a slice). The real predictor engine on a real graph.
TEST_F(ServiceTest, AMigJobIsPredictedStoredAndRefusedAsPostV1PredictDoesIt) {
  WriteLucidPredictorAndVgg(dir_);
  auto engine = [&] { return LucidEngine(dir_); };
  StartServer(2, engine());
  const json body = {{"model", dir_ + "/vgg.onnx"}, {"batch", 32}, {"gpu", "A100-80GB"}, {"mig", "MIG 1G.10GB"}};
  auto predicted = PostJson("/v1/predict", body);
  ASSERT_TRUE(predicted);
  ASSERT_EQ(predicted->status, 200) << predicted->body;
  auto submitted = PostJson("/v1/jobs", body);
  ASSERT_TRUE(submitted);
  ASSERT_EQ(submitted->status, 201) << submitted->body;
  const json p = Body(predicted), job = Body(submitted);
  auto got = client_->Get("/v1/jobs/" + std::to_string(job["id"].get<int64_t>()));
  ASSERT_TRUE(got && got->status == 200);
  const json shown = Body(got);
  EXPECT_EQ(p["mig"], "1g.10gb");
  EXPECT_EQ(p["mig_profile"], "1g.10gb");  // predict --json's field: the prediction was the slice's
  // The slice's capacity (9.5 GiB), not the whole A100 80GB's.
  EXPECT_EQ(p["gpu_mem_capacity_mib"], 9728.0);
  // The job's prediction, as stored and read back, is /v1/predict's field for field.
  for (const json& j : {job, shown}) {
    EXPECT_EQ(j["mig"], "1g.10gb");
    for (const char* k : {"predicted_util", "predicted_util_interval", "gpu_mem_mib", "gpu_mem_capacity_mib",
                          "gpu_mem_fit", "step_ms", "gpu_measured", "unsure", "unsure_reasons",
                          "prediction_warnings", "gpu", "batch", "model"}) {
      EXPECT_EQ(j[k], p[k]) << k;
    }
    for (const char* k : {"gpu_mem_interval", "step_ms_interval"}) {
      EXPECT_EQ(j[k]["low"], p[k]["low"]) << k;
      EXPECT_EQ(j[k]["high"], p[k]["high"]) << k;
    }
  }
  EXPECT_TRUE(p["gpu_mem_mib"].is_number());
  EXPECT_TRUE(p["step_ms"].is_number());
  // A different prediction from the whole GPU's: the slice was predicted for.
  json whole_body = body;
  whole_body.erase("mig");
  auto whole = PostJson("/v1/predict", whole_body);
  ASSERT_TRUE(whole && whole->status == 200);
  EXPECT_NE(Body(whole)["step_ms"], p["step_ms"]);
  EXPECT_FALSE(Body(whole).contains("mig"));
  // Refusals: the same status and text on both routes.
  struct Case {
    json fields;
    int status;
  };
  const Case cases[] = {{{{"mig", "7g.99gb"}}, 400}, {{{"mig", 7}}, 400},
                        {{{"gpu", "RTX3090"}, {"mig", "1g.10gb"}}, 422},
                        {{{"gpu", "A100-40GB"}, {"mig", "1g.10gb"}}, 422},
                        {{{"gpus", 2}, {"mig", "1g.10gb"}}, 422}};
  for (const Case& c : cases) {
    json b = body;
    b.update(c.fields);
    auto a = PostJson("/v1/predict", b), j = PostJson("/v1/jobs", b);
    ASSERT_TRUE(a && j);
    EXPECT_EQ(a->status, c.status) << b.dump() << ": " << a->body;
    EXPECT_EQ(j->status, c.status) << b.dump() << ": " << j->body;
    EXPECT_EQ(Error(j), Error(a)) << b.dump();
  }
  json unknown = body;
  unknown["mig"] = "7g.99gb";
  EXPECT_THAT(Error(PostJson("/v1/jobs", unknown)),
              ::testing::StartsWith("field 'mig': unknown MIG profile '7g.99gb' (MIG profiles of gpucast's GPUs: "));
  // An Idempotency-Key names one request: the same body on another slice is not a replay.
  auto first = PostJson("/v1/jobs", body, {{"Idempotency-Key", "mig-k"}});
  ASSERT_TRUE(first && first->status == 201) << first->body;
  json other = body;
  other["mig"] = "2g.20gb";
  auto second = PostJson("/v1/jobs", other, {{"Idempotency-Key", "mig-k"}});
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 422) << second->body;
  // A restart reads the profile back from the store.
  StopServer();
  StartServer(2, engine());
  EXPECT_EQ(Body(client_->Get("/v1/jobs/" + std::to_string(job["id"].get<int64_t>())))["mig"], "1g.10gb");
}

// POST /v1/jobs takes "level" as POST /v1/predict does: the job's intervals are
// /v1/predict's for the same body and say their level as its reply does; the
// level is stored (and so read back after a restart) and is part of the
// request an Idempotency-Key names. The real predictor engine on a real graph.
TEST_F(ServiceTest, ALevelJobIsPredictedStoredAndShownAsPostV1PredictDoesIt) {
  WriteLucidPredictorAndVgg(dir_);
  auto engine = [&] { return LucidEngine(dir_); };
  StartServer(2, engine());
  const json body = {{"model", dir_ + "/vgg.onnx"}, {"batch", 32}, {"gpu", "A100-80GB"}, {"level", 0.5}};
  auto predicted = PostJson("/v1/predict", body);
  ASSERT_TRUE(predicted);
  ASSERT_EQ(predicted->status, 200) << predicted->body;
  auto submitted = PostJson("/v1/jobs", body, {{"Idempotency-Key", "level-k"}});
  ASSERT_TRUE(submitted);
  ASSERT_EQ(submitted->status, 201) << submitted->body;
  const json p = Body(predicted), job = Body(submitted);
  const std::string where = "/v1/jobs/" + std::to_string(job["id"].get<int64_t>());
  auto got = client_->Get(where);
  ASSERT_TRUE(got && got->status == 200);
  const json shown = Body(got);
  EXPECT_EQ(p["interval"]["level"], 0.5);  // this predictor is calibrated: the level asked
  EXPECT_EQ(p["gpu_mem_interval"]["level"], 0.5);
  const auto same_prediction = [&](const json& j, const std::string& what) {
    EXPECT_EQ(j["level"], 0.5) << what;
    for (const char* k : {"predicted_util", "predicted_util_interval", "gpu_mem_mib", "step_ms", "interval"}) {
      EXPECT_EQ(j[k], p[k]) << what << ": " << k;
    }
    for (const char* k : {"low", "high", "level"}) {
      EXPECT_EQ(j["step_ms_interval"][k], p["step_ms_interval"][k]) << what << ": step_ms_interval." << k;
    }
    for (const char* k : {"low", "high", "level", "high_level"}) {
      EXPECT_EQ(j["gpu_mem_interval"][k], p["gpu_mem_interval"][k]) << what << ": gpu_mem_interval." << k;
    }
  };
  same_prediction(job, "POST");
  same_prediction(shown, "GET");
  // The level made the prediction: the default's utilization interval is another.
  json plain = body;
  plain.erase("level");
  auto whole = PostJson("/v1/predict", plain);
  ASSERT_TRUE(whole && whole->status == 200);
  EXPECT_EQ(Body(whole)["interval"]["level"], 0.8);
  EXPECT_NE(Body(whole)["predicted_util_interval"], p["predicted_util_interval"]);
  EXPECT_FALSE(Body(whole).contains("level"));
  // An Idempotency-Key names one request: the same body is a replay, another level is not.
  auto replay = PostJson("/v1/jobs", body, {{"Idempotency-Key", "level-k"}});
  ASSERT_TRUE(replay);
  EXPECT_EQ(replay->status, 201);
  EXPECT_EQ(replay->get_header_value("Idempotent-Replayed"), "true");
  EXPECT_EQ(Body(replay)["id"], job["id"]);
  for (const json& other_level : {json(0.9), json(0.8)}) {
    json other = body;
    other["level"] = other_level;
    auto second = PostJson("/v1/jobs", other, {{"Idempotency-Key", "level-k"}});
    ASSERT_TRUE(second);
    EXPECT_EQ(second->status, 422) << second->body;
    EXPECT_EQ(Error(second), "Idempotency-Key 'level-k' was already used for job " +
                                 std::to_string(job["id"].get<int64_t>()) + " with a different request");
  }
  // Without a level and with the default stated: one request (the stored text of a job from before "level").
  auto unstated = PostJson("/v1/jobs", plain, {{"Idempotency-Key", "plain-k"}});
  ASSERT_TRUE(unstated && unstated->status == 201) << unstated->body;
  EXPECT_FALSE(Body(unstated).contains("level"));
  EXPECT_EQ(Body(unstated)["gpu_mem_interval"]["level"], 0.8);
  json stated = plain;
  stated["level"] = 0.8;
  auto same = PostJson("/v1/jobs", stated, {{"Idempotency-Key", "plain-k"}});
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 201) << same->body;
  EXPECT_EQ(same->get_header_value("Idempotent-Replayed"), "true");
  // A restart reads the level, and each interval's, back from the store.
  StopServer();
  StartServer(2, engine());
  auto after = client_->Get(where);
  ASSERT_TRUE(after && after->status == 200);
  same_prediction(Body(after), "after a restart");
}

}  // namespace
}  // namespace gpucast::service
