// Every route and error path of the service through a real HTTP server on
// 127.0.0.1 (ephemeral port), with the fake engine and a one-job-per-GPU
// scheduler as seams (the real engine and policy have their own tests).
#include "service/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/sha256.h"
#include "service/testing.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string MakeTempDir() {
  std::string tmpl = (fs::temp_directory_path() / "gpucast-service-XXXXXX").string();
  char* d = mkdtemp(tmpl.data());
  EXPECT_NE(d, nullptr);
  return tmpl;
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    model_ = dir_ + "/m.onnx";
    std::ofstream(model_) << testing::kFakeModelMagic << " model bytes";
    std::ofstream(dir_ + "/bad.onnx") << "not a model";
    opts_.db_path = dir_ + "/jobs.db";
    opts_.model_roots = {dir_};
    opts_.max_body_bytes = 4096;
    opts_.read_timeout_s = 1;
    opts_.run_loop = false;  // tests drive Tick() themselves
  }
  void TearDown() override {
    StopServer();
    fs::remove_all(dir_);
  }

  void StartServer(int gpus = 2) {
    auto sched = std::make_unique<testing::OneJobPerGpu>(gpus);
    sched_ = sched.get();
    Result<std::unique_ptr<Service>> s =
        Service::Create(opts_, std::make_unique<testing::FakeEngine>(), std::move(sched));
    ASSERT_TRUE(s.ok()) << s.message();
    service_ = std::move(s).value();
    Result<int> port = service_->Bind("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.message();
    port_ = *port;
    thread_ = std::thread([this] { EXPECT_TRUE(service_->Run().ok()); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(10, 0);
    // Wait until the server accepts.
    for (int i = 0; i < 200; ++i) {
      if (client_->Get("/healthz")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "server did not come up";
  }
  void StopServer() {
    if (!service_) return;
    service_->Stop();
    thread_.join();
    service_.reset();
  }

  httplib::Result PostJson(const std::string& path, const json& body, httplib::Headers h = {}) {
    return client_->Post(path.c_str(), h, body.dump(), "application/json");
  }
  static json Body(const httplib::Result& r) { return json::parse(r->body); }
  static std::string Error(const httplib::Result& r) { return json::parse(r->body).at("error"); }

  std::string dir_, model_;
  ServiceOptions opts_;
  std::unique_ptr<Service> service_;
  testing::OneJobPerGpu* sched_ = nullptr;
  std::thread thread_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ServiceTest, HealthzReportsOk) {
  StartServer();
  auto r = client_->Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Body(r)["status"], "ok");
  EXPECT_EQ(Body(r)["predictor"], "fake engine");
  // Finding 7: no paths (the database's was there) for anyone who asks.
  EXPECT_FALSE(Body(r).contains("db"));
  EXPECT_EQ(r->body.find(dir_), std::string::npos) << r->body;
}

TEST_F(ServiceTest, SubmitStoresJobAndReturns201) {
  StartServer();
  auto r = PostJson("/v1/jobs", {{"model", model_}, {"batch", 4}, {"amp", true}, {"gpus", 1},
                                 {"name", "r50"}, {"attrs", {{"loader_workers", 2}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  json j = Body(r);
  EXPECT_EQ(j["id"], 1);
  EXPECT_EQ(j["predicted_util"], 40.0);  // fake engine: 10 x batch
  EXPECT_EQ(j["state"], "queued");
  EXPECT_EQ(r->get_header_value("Location"), "/v1/jobs/1");

  auto g = client_->Get("/v1/jobs/1");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200);
  json got = Body(g);
  EXPECT_EQ(got["model"], model_);
  EXPECT_EQ(got["batch"], 4);
  EXPECT_EQ(got["amp"], true);
  EXPECT_EQ(got["name"], "r50");
  EXPECT_EQ(got["attrs"]["loader_workers"], 2);
  EXPECT_EQ(got["predicted_util_interval"], json({35.0, 45.0}));

  // Committed: a second store on the same file sees it.
  auto store = JobStore::Open(opts_.db_path);
  ASSERT_TRUE(store.ok()) << store.message();
  auto found = (*store)->Get(1);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->spec.name, "r50");
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
      {"{\"model\": \"x.onnx\", \"colour\": 1}", "unknown field 'colour'"},
      {"{\"model\": \"x.onnx\", \"batch\": 0}", "field 'batch': want an integer in [1, 16777216], got 0"},
      {"{\"model\": \"x.onnx\", \"batch\": \"8\"}", "field 'batch': want an integer"},
      {"{\"model\": \"x.onnx\", \"amp\": 1}", "field 'amp': want true or false"},
      {"{\"model\": \"x.onnx\", \"attrs\": [1]}", "field 'attrs': want an object"},
      {"{\"model\": \"x.onnx\", \"attrs\": {\"colour\": 1}}", "attrs: "},
      {"{\"model\": \"x.onnx\", \"attrs\": {\"loader_workers\": 1.5}}", "attrs: key 'loader_workers'"},
  };
  for (const Case& c : cases) {
    auto r = client_->Post("/v1/jobs", c.body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << c.body;
    EXPECT_THAT(Error(r), HasSubstr(c.message)) << c.body;
  }
  // An unknown attribute names its key.
  auto r = client_->Post("/v1/jobs", "{\"model\": \"x.onnx\", \"attrs\": {\"colour\": 1}}", "application/json");
  EXPECT_THAT(Error(r), HasSubstr("colour"));
  // Nothing was stored.
  EXPECT_EQ(Body(client_->Get("/v1/jobs"))["jobs"].size(), 0u);
}

TEST_F(ServiceTest, MissingOrInvalidModelGets422) {
  StartServer();
  auto r = PostJson("/v1/jobs", {{"model", dir_ + "/nope.onnx"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "model '" + dir_ + "/nope.onnx': no such model file under the service's model roots");
  r = PostJson("/v1/predict", {{"model", dir_ + "/bad.onnx"}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), dir_ + "/bad.onnx: not an ONNX model");
}

TEST_F(ServiceTest, JobOfSeveralNetworks) {
  // GAN-like: G once, D twice per step; the fake engine predicts 10 x batch x passes.
  std::ofstream(dir_ + "/d.onnx") << testing::kFakeModelMagic << " discriminator";
  StartServer();
  auto r = PostJson("/v1/jobs", {{"models", {{{"path", model_}}, {{"path", "d.onnx"}, {"repeat", 2}}}}, {"batch", 2}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["predicted_util"], 60.0);  // 10 x 2 x (1 + 2)
  auto g = client_->Get("/v1/jobs/1");
  ASSERT_TRUE(g);
  json got = Body(g);
  EXPECT_FALSE(got.contains("model"));
  // Stored with the canonical paths the service opened (d.onnx was relative to the root).
  EXPECT_EQ(got["models"], json({{{"path", model_}, {"repeat", 1.0}}, {{"path", dir_ + "/d.onnx"}, {"repeat", 2.0}}}));
  r = PostJson("/v1/predict", {{"models", {{{"path", model_}}, {{"path", dir_ + "/d.onnx"}, {"repeat", 0.5}}}}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["predicted_util"], 15.0);
  // Each file is checked: a missing or bad second network is refused by name.
  r = PostJson("/v1/jobs", {{"models", {{{"path", model_}}, {{"path", "nope.onnx"}}}}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "model 'nope.onnx': no such model file under the service's model roots");
  r = PostJson("/v1/jobs", {{"models", {{{"path", model_}}, {{"path", dir_ + "/bad.onnx"}}}}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), dir_ + "/bad.onnx: not an ONNX model");
  // Two names of one file are one network.
  r = PostJson("/v1/jobs", {{"models", {{{"path", model_}}, {{"path", "m.onnx"}, {"repeat", 2}}}}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "models: 'm.onnx' names a file listed before (give one entry with the total repeat)");
  r = PostJson("/v1/jobs", {{"models", {{{"path", model_}, {"repeat", -1}}}}});
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

TEST_F(ServiceTest, BodyOverLimitGets413) {
  StartServer();
  std::string big(opts_.max_body_bytes + 1, ' ');
  auto r = client_->Post("/v1/jobs", big, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(Error(r), "request body larger than 4096 bytes (--max-body-bytes)");
  // The service is still up.
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
}

TEST_F(ServiceTest, UnknownRouteGets404Json) {
  StartServer();
  auto r = client_->Get("/v2/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Error(r), "no route for GET /v2/nothing");
  r = client_->Get("/v1/jobs/99");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Error(r), "no job 99");
}

// A client that announces a body and stops sending is dropped after the read
// timeout; other clients are served meanwhile and afterwards.
TEST_F(ServiceTest, SlowClientTimesOutWithoutBlockingOthers) {
  StartServer();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string head =
      "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 100\r\n\r\n{\"model\":";
  ASSERT_EQ(send(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
  EXPECT_EQ(client_->Get("/healthz")->status, 200);  // served while the slow client waits
  timeval tv{10, 0};  // the server's timeout is 1 s: bound our wait
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) reply.append(buf, static_cast<size_t>(n));
  close(fd);
  EXPECT_EQ(n, 0) << "server did not close the connection";  // 0 = closed, not our timeout
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 408"));
  EXPECT_THAT(reply, HasSubstr("the client sent nothing for 1 s (--read-timeout)"));
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
}

// slurmctld's deputy: with the deputy token, X-Gpucast-Read-As opens the
// paths as that user, anywhere the user may read and nowhere else; nobody else
// may send the header. Needs root (files of uid 65534); GPUCAST_SKIP_ROOT=1
// opts out loudly.
TEST_F(ServiceTest, DeputyReadsModelsAsTheSubmittingUser) {
  if (geteuid() != 0) {
    if (std::getenv("GPUCAST_SKIP_ROOT") && std::string(std::getenv("GPUCAST_SKIP_ROOT")) == "1") {
      GTEST_SKIP() << "SKIPPED because GPUCAST_SKIP_ROOT=1: the deputy's read-as was NOT tested";
    }
    FAIL() << "needs root; run as root or opt out explicitly with GPUCAST_SKIP_ROOT=1";
  }
  // Outside the model roots: the user's private directory, and root's.
  const std::string outside = MakeTempDir();
  ASSERT_EQ(chmod(outside.c_str(), 0755), 0);
  fs::create_directory(outside + "/user");
  std::ofstream(outside + "/user/m.onnx") << testing::kFakeModelMagic << " the user's";
  ASSERT_EQ(chown((outside + "/user").c_str(), 65534, 65534), 0);
  ASSERT_EQ(chown((outside + "/user/m.onnx").c_str(), 65534, 65534), 0);
  ASSERT_EQ(chmod((outside + "/user").c_str(), 0700), 0);
  ASSERT_EQ(chmod((outside + "/user/m.onnx").c_str(), 0600), 0);
  fs::create_directory(outside + "/root");
  std::ofstream(outside + "/root/m.onnx") << testing::kFakeModelMagic << " root's";
  ASSERT_EQ(chmod((outside + "/root").c_str(), 0700), 0);
  opts_.token = "api-token";
  opts_.deputy_token = "deputy-token";
  StartServer();
  const httplib::Headers deputy = {{"Authorization", "Bearer deputy-token"}, {"X-Gpucast-Read-As", "65534:65534"}};
  auto r = PostJson("/v1/predict", {{"model", outside + "/user/m.onnx"}, {"batch", 3}}, deputy);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["predicted_util"], 30.0);
  r = PostJson("/v1/jobs", {{"model", outside + "/user/m.onnx"}}, deputy);
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Body(r)["model"], outside + "/user/m.onnx");
  // Root's private file and a missing one: the same refusal, only the path differs.
  r = PostJson("/v1/predict", {{"model", outside + "/root/m.onnx"}}, deputy);
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "model '" + outside +
                          "/root/m.onnx': cannot be read as uid 65534 (it does not exist, or uid 65534 may not read it)");
  r = PostJson("/v1/predict", {{"model", outside + "/none.onnx"}}, deputy);
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "model '" + outside +
                          "/none.onnx': cannot be read as uid 65534 (it does not exist, or uid 65534 may not read it)");
  // The ordinary token may not send the header; without the header the roots apply.
  r = PostJson("/v1/predict", {{"model", outside + "/user/m.onnx"}},
               {{"Authorization", "Bearer api-token"}, {"X-Gpucast-Read-As", "0:0"}});
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(Error(r), "X-Gpucast-Read-As: only the deputy (the bearer of --deputy-token-file) may have files read as a user");
  r = PostJson("/v1/predict", {{"model", outside + "/user/m.onnx"}}, {{"Authorization", "Bearer deputy-token"}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "model '" + outside + "/user/m.onnx': no such model file under the service's model roots");
  r = PostJson("/v1/predict", {{"model", model_}}, {{"Authorization", "Bearer deputy-token"}, {"X-Gpucast-Read-As", "65534"}});
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "X-Gpucast-Read-As: want UID:GID");
  auto up = client_->Post("/v1/predict", deputy, std::string(testing::kFakeModelMagic) + " up", "application/octet-stream");
  ASSERT_TRUE(up);
  EXPECT_EQ(up->status, 400);
  EXPECT_EQ(Error(up), "X-Gpucast-Read-As: applies to a JSON job naming model paths, not to an upload");
  fs::remove_all(outside);
}

TEST_F(ServiceTest, TokenGuardsMutatingRoutes) {
  std::string token = "s3cret-token";
  opts_.token = token;
  StartServer();
  auto r = PostJson("/v1/jobs", {{"model", model_}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(Error(r), "missing 'Authorization: Bearer <token>' header");
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
  r = PostJson("/v1/jobs", {{"model", model_}}, {{"Authorization", "Bearer s3cret-tokeX"}});
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(Error(r), "invalid bearer token");
  r = PostJson("/v1/jobs", {{"model", model_}}, {{"Authorization", "Bearer " + token}});
  EXPECT_EQ(r->status, 201);
  // Reads, predictions and DELETE need it too; /healthz and /metrics do not.
  const httplib::Headers auth = {{"Authorization", "Bearer " + token}};
  for (const char* path : {"/v1/jobs/1", "/v1/jobs", "/v1/cluster", "/v2/nothing"}) {
    auto g = client_->Get(path);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->status, 401) << path;
    EXPECT_EQ(Error(g), "missing 'Authorization: Bearer <token>' header") << path;
    EXPECT_EQ(g->body.find(dir_), std::string::npos) << path;
  }
  EXPECT_EQ(client_->Get("/v1/jobs/1", auth)->status, 200);
  EXPECT_EQ(client_->Get("/v1/jobs", auth)->status, 200);
  EXPECT_EQ(client_->Get("/v1/cluster", auth)->status, 200);
  EXPECT_EQ(PostJson("/v1/predict", {{"model", model_}})->status, 401);
  EXPECT_EQ(PostJson("/v1/predict", {{"model", model_}}, auth)->status, 200);
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
  EXPECT_EQ(client_->Get("/metrics")->status, 200);
  EXPECT_EQ(client_->Delete("/v1/jobs/1")->status, 401);
  EXPECT_EQ(client_->Delete("/v1/jobs/1", auth)->status, 200);
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
  // The same key with another request is refused.
  auto c = PostJson("/v1/jobs", {{"model", model_}, {"batch", 5}}, key);
  EXPECT_EQ(c->status, 422);
  EXPECT_EQ(Error(c), "Idempotency-Key 'run-42' was already used for job 1 with a different request");
  // Without a key, each submission is a new job.
  PostJson("/v1/jobs", {{"model", model_}, {"batch", 3}});
  EXPECT_EQ(Body(client_->Get("/v1/jobs"))["jobs"].size(), 2u);
}

TEST_F(ServiceTest, ListFiltersAndPages) {
  StartServer();
  for (int i = 0; i < 5; ++i) ASSERT_EQ(PostJson("/v1/jobs", {{"model", model_}})->status, 201);
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
}

TEST_F(ServiceTest, DeleteCancelsOnceAnd404sUnknown) {
  StartServer();
  ASSERT_EQ(PostJson("/v1/jobs", {{"model", model_}})->status, 201);
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
}

TEST_F(ServiceTest, PredictCreatesNoJobAndCachesTheGraph) {
  StartServer();
  auto a = PostJson("/v1/predict", {{"model", model_}, {"batch", 2}});
  auto b = PostJson("/v1/predict", {{"model", model_}, {"batch", 2}});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(Body(a)["predicted_util"], 20.0);
  EXPECT_EQ(Body(a)["cache"], "miss");
  EXPECT_EQ(Body(b)["cache"], "hit");
  EXPECT_EQ(Body(client_->Get("/v1/jobs"))["jobs"].size(), 0u);
}

TEST_F(ServiceTest, UploadedOnnxBodyWithQueryParameters) {
  StartServer();
  std::string bytes = std::string(testing::kFakeModelMagic) + " uploaded";
  auto r = client_->Post("/v1/jobs?batch=5&amp=1&name=up&attr.rl_env=1&dim.seq=128", bytes,
                         "application/octet-stream");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  json j = Body(r);
  EXPECT_EQ(j["predicted_util"], 50.0);
  EXPECT_EQ(j["amp"], true);
  EXPECT_EQ(j["dims"]["seq"], 128);
  EXPECT_EQ(j["attrs"]["rl_env"], 1);
  // Content-addressed by SHA-256; no server path in the reply.
  const std::string sha = Sha256Hex(bytes);
  EXPECT_EQ(j["model"], "upload:sha256:" + sha);
  std::ifstream in(opts_.db_path + ".models/" + sha + ".onnx");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, bytes);

  r = client_->Post("/v1/jobs?batch=x", bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "parameter 'batch': want an integer in [1, 16777216], got 'x'");
  r = client_->Post("/v1/jobs?size=3", bytes, "application/octet-stream");
  EXPECT_THAT(Error(r), HasSubstr("unknown query parameter 'size'"));
  r = client_->Post("/v1/predict", "garbage", "application/octet-stream");
  EXPECT_EQ(r->status, 422);
  EXPECT_THAT(Error(r), HasSubstr("not an ONNX model"));
}

TEST_F(ServiceTest, JobLargerThanClusterIsRefused) {
  StartServer(2);
  auto r = PostJson("/v1/jobs", {{"model", model_}, {"gpus", 3}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "field 'gpus': 3 requested, the cluster has 2");
}

TEST_F(ServiceTest, SchedulingLoopPlacesFinishesAndRestores) {
  StartServer(2);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(PostJson("/v1/jobs", {{"model", model_}, {"duration_s", 10}})->status, 201);
  }
  ASSERT_TRUE(service_->Tick(1000).ok());
  EXPECT_EQ(Body(client_->Get("/v1/jobs/1"))["state"], "running");
  EXPECT_EQ(Body(client_->Get("/v1/jobs/2"))["placement"], json({1}));
  EXPECT_EQ(Body(client_->Get("/v1/jobs/3"))["state"], "queued");
  json cluster = Body(client_->Get("/v1/cluster"));
  EXPECT_EQ(cluster["gpus"][0]["jobs"], json({1}));
  EXPECT_EQ(cluster["queued"], json({3}));
  EXPECT_EQ(cluster["policy"], "one-per-gpu (test)");
  // Cancelling a running job frees its GPU for the queued one.
  ASSERT_EQ(client_->Delete("/v1/jobs/1")->status, 200);
  ASSERT_TRUE(service_->Tick(1001).ok());
  EXPECT_EQ(Body(client_->Get("/v1/jobs/3"))["placement"], json({0}));
  // Job 2 started at 1000 with 10 s to run.
  ASSERT_TRUE(service_->Tick(1010).ok());
  json two = Body(client_->Get("/v1/jobs/2"));
  EXPECT_EQ(two["state"], "done");
  EXPECT_EQ(two["finished_at"], 1010.0);

  // A restart puts running job 3 back on GPU 0.
  StopServer();
  StartServer(2);
  EXPECT_EQ(sched_->started(), std::vector<int64_t>({3}));
  EXPECT_EQ(Body(client_->Get("/v1/cluster"))["gpus"][0]["jobs"], json({3}));
}

TEST_F(ServiceTest, MetricsInPrometheusFormat) {
  StartServer();
  PostJson("/v1/jobs", {{"model", model_}});
  PostJson("/v1/jobs", {{"model", dir_ + "/bad.onnx"}});  // under the root, not a model: a prediction error
  PostJson("/v1/predict", {{"model", model_}});
  ASSERT_TRUE(service_->Tick(5).ok());
  PostJson("/v1/jobs", {{"model", model_}});
  PostJson("/v1/jobs", {{"model", model_}});
  ASSERT_TRUE(service_->Tick(6).ok());
  auto r = client_->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_THAT(r->get_header_value("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
  const std::string& m = r->body;
  EXPECT_THAT(m, HasSubstr("gpucast_http_requests_total{route=\"POST /v1/jobs\",code=\"201\"} 3\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_http_requests_total{route=\"POST /v1/jobs\",code=\"422\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_http_request_duration_seconds_count{route=\"POST /v1/jobs\"} 4\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_http_request_duration_seconds_bucket{route=\"POST /v1/jobs\",le=\"+Inf\"} 4\n"));
  EXPECT_THAT(m, HasSubstr("# TYPE gpucast_http_request_duration_seconds histogram\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_predictions_total{result=\"error\",cache=\"miss\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_predictions_total{result=\"ok\",cache=\"hit\"} 3\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_placement_decisions_total{kind=\"place\"} 2\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_queue_length 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_running_jobs 2\n"));
}

// ---- Hardening (issue 9): each test is one finding, through the real server.

// Connects to the server, sends `bytes`, reads until the server closes or
// `wait_s` passes.
std::string Raw(int port, const std::string& bytes, int wait_s = 5, bool half_close = false) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "(connect failed)";
  }
  for (size_t off = 0; off < bytes.size();) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  if (half_close) shutdown(fd, SHUT_WR);
  timeval tv{wait_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) reply.append(buf, static_cast<size_t>(n));
  close(fd);
  return reply;
}

std::string ReplyBody(const std::string& reply) {
  size_t p = reply.find("\r\n\r\n");
  return p == std::string::npos ? "" : reply.substr(p + 4);
}

// Finding 1: a path that percent-decodes to invalid UTF-8 crashed the process.
TEST_F(ServiceTest, InvalidUtf8AnywhereGets400AndTheServiceLives) {
  StartServer();
  auto r = client_->Get("/%FF");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "request path: not valid UTF-8, or control bytes, after percent-decoding");
  r = client_->Get("/v1/jobs?state=%FF%FE");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "query string: not valid UTF-8, or control bytes, after percent-decoding");
  r = client_->Get("/v1/jobs", {{"X-Name", "\xff\xfe"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "header 'X-Name': value is not valid UTF-8");
  r = client_->Post("/v1/jobs", "{\"model\": \"\xff.onnx\"}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "request body: not valid UTF-8");
  r = client_->Post("/v1/jobs", "{\"model\": ", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Error(r), ::testing::Not(HasSubstr("json.exception")));
  // Raw bytes in the request line itself, and a 404 for a valid UTF-8 path.
  EXPECT_THAT(Raw(port_, "GET /\xff HTTP/1.1\r\nHost: x\r\n\r\n"), HasSubstr("HTTP/1.1 400"));
  r = client_->Get("/caf%C3%A9");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Error(r), "no route for GET /caf\xc3\xa9");
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
}

// Finding 2: the body limit did not hold for chunked bodies.
TEST_F(ServiceTest, ChunkedBodiesObeyTheBodyLimit) {
  StartServer();
  std::string chunk = std::string(1000, ' ');
  std::string req = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 1000; ++i) req += "3e8\r\n" + chunk + "\r\n";  // 1 MB in all
  req += "0\r\n\r\n";
  std::string reply = Raw(port_, req);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(ReplyBody(reply), HasSubstr("request body larger than"));
  // An octet-stream upload over the limit is refused and nothing is stored.
  std::string up = "POST /v1/jobs?batch=1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 10; ++i) up += "3e8\r\n" + std::string(testing::kFakeModelMagic) + chunk.substr(9) + "\r\n";
  up += "0\r\n\r\n";
  reply = Raw(port_, up);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 413"));
  EXPECT_EQ(ReplyBody(reply), "{\"error\":\"request body larger than 4096 bytes (--max-body-bytes)\"}");
  EXPECT_TRUE(fs::is_empty(opts_.db_path + ".models"));
  // A chunked body within the limit is served.
  std::string ok = "POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  std::string body = json{{"model", model_}, {"batch", 2}}.dump();
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  reply = Raw(port_, ok + size + "\r\n" + body + "\r\n0\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(json::parse(ReplyBody(reply))["predicted_util"], 20.0);
}

// Finding 3: deep JSON nesting inside the body limit cost gigabytes.
TEST_F(ServiceTest, JsonNestingBombIsRefusedBeforeParsing) {
  StartServer();
  auto t0 = std::chrono::steady_clock::now();
  auto r = client_->Post("/v1/predict", std::string(4000, '['), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "request body: JSON nested deeper than 32 levels");
  r = client_->Post("/v1/jobs", "{\"model\": \"x\", \"attrs\": " + std::string(100, '{'), "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  // Brackets inside strings do not count.
  r = PostJson("/v1/predict", {{"model", model_}, {"name", std::string(100, '[')}});
  EXPECT_EQ(r->status, 200) << r->body;
}

// Finding 4: uploads were unauthenticated, kept when rejected, FNV-named.
TEST_F(ServiceTest, UploadsNeedTheTokenAreContentAddressedAndCleanedUp) {
  opts_.token = "tok";
  opts_.upload_quota_bytes = 100;
  StartServer();
  const httplib::Headers auth = {{"Authorization", "Bearer tok"}};
  const std::string models = opts_.db_path + ".models";
  std::string bytes = std::string(testing::kFakeModelMagic) + " one";
  auto r = client_->Post("/v1/predict", bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 401);
  r = client_->Post("/v1/jobs", bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 401);
  EXPECT_TRUE(fs::is_empty(models));
  // Rejected uploads and predictions leave nothing behind.
  r = client_->Post("/v1/jobs", auth, "garbage", "application/octet-stream");
  EXPECT_EQ(r->status, 422);
  r = client_->Post("/v1/predict", auth, bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 200);
  r = client_->Post("/v1/jobs?gpus=9", auth, bytes, "application/octet-stream");
  EXPECT_EQ(r->status, 422);
  EXPECT_TRUE(fs::is_empty(models));
  EXPECT_EQ(service_->upload_bytes(), 0u);
  // An accepted job keeps its upload, named by its SHA-256, until it is cancelled.
  r = client_->Post("/v1/jobs?name=a", auth, bytes, "application/octet-stream");
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string sha = Sha256Hex(bytes);
  EXPECT_EQ(sha.size(), 64u);
  EXPECT_EQ(Body(r)["model"], "upload:sha256:" + sha);
  EXPECT_TRUE(fs::exists(models + "/" + sha + ".onnx"));
  // The same bytes again share the file.
  auto r2 = client_->Post("/v1/jobs?name=b", auth, bytes, "application/octet-stream");
  ASSERT_EQ(r2->status, 201);
  EXPECT_EQ(service_->upload_bytes(), bytes.size());
  // Over the quota: 507, nothing stored.
  std::string big = std::string(testing::kFakeModelMagic) + std::string(100, 'x');
  r = client_->Post("/v1/jobs", auth, big, "application/octet-stream");
  EXPECT_EQ(r->status, 507);
  EXPECT_THAT(Error(r), HasSubstr("upload quota full"));
  EXPECT_EQ(service_->upload_bytes(), bytes.size());
  ASSERT_EQ(client_->Delete("/v1/jobs/1", auth)->status, 200);
  EXPECT_TRUE(fs::exists(models + "/" + sha + ".onnx"));  // job 2 still needs it
  ASSERT_EQ(client_->Delete("/v1/jobs/2", auth)->status, 200);
  EXPECT_FALSE(fs::exists(models + "/" + sha + ".onnx"));
  EXPECT_EQ(service_->upload_bytes(), 0u);
  // A queued job's upload survives a restart; files nobody refers to do not.
  r = client_->Post("/v1/jobs?name=c", auth, bytes, "application/octet-stream");
  ASSERT_EQ(r->status, 201);
  std::ofstream(models + "/" + std::string(64, 'a') + ".onnx") << "stray";
  StopServer();
  StartServer();
  EXPECT_TRUE(fs::exists(models + "/" + sha + ".onnx"));
  EXPECT_FALSE(fs::exists(models + "/" + std::string(64, 'a') + ".onnx"));
  EXPECT_EQ(service_->upload_bytes(), bytes.size());
}

// Finding 5: drip-feeding clients held every worker; /healthz timed out.
TEST_F(ServiceTest, DripFeedingClientsNeitherStarveOthersNorStayForever) {
  opts_.threads = 4;
  opts_.read_timeout_s = 2;
  opts_.request_timeout_s = 3;
  StartServer();
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(send(fd, "G", 1, MSG_NOSIGNAL), 1);
    fds.push_back(fd);
  }
  const std::string head = "ET /healthz HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  auto t0 = std::chrono::steady_clock::now();
  double worst = 0;
  for (size_t k = 0; k < head.size(); ++k) {
    for (int fd : fds) send(fd, &head[k], 1, MSG_NOSIGNAL);  // one byte each, under the read timeout
    auto h0 = std::chrono::steady_clock::now();
    auto r = client_->Get("/healthz");
    worst = std::max(worst, std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(4)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  // Before the fix each /healthz waited for a worker until the drip ended (seconds).
  EXPECT_LT(worst, 1.5) << "a /healthz took " << worst << " s while 20 clients dripped";
  // Each dripping client got 408 at the whole-request deadline and was closed.
  for (int fd : fds) {
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string reply;
    char buf[1024];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0) reply.append(buf, static_cast<size_t>(n));
    EXPECT_EQ(n, 0);
    EXPECT_THAT(reply, HasSubstr("HTTP/1.1 408"));
    EXPECT_THAT(reply, HasSubstr("request not received completely within 3 s (--request-timeout)"));
    close(fd);
  }
}

TEST_F(ServiceTest, ConnectionsPerClientAreCapped) {
  opts_.max_connections_per_client = 3;
  StartServer();
  client_.reset();  // its keep-alive connection would count
  std::vector<int> fds;
  auto open_one = [&] {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  };
  for (int i = 0; i < 3; ++i) fds.push_back(open_one());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string reply = Raw(port_, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 2);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 503"));
  EXPECT_THAT(reply, HasSubstr("too many open connections from your address (--max-connections-per-client 3)"));
  for (int fd : fds) close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  reply = Raw(port_, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 2);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200"));
}

// Finding 6: any file was opened for any client, and errors told which exist.
TEST_F(ServiceTest, ModelPathsOutsideTheRootsGetOneRefusal) {
  std::string outside = MakeTempDir();
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
      auto r = PostJson(route, {{"model", p}});
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 422) << p;
      EXPECT_EQ(Error(r), refusal(p)) << p;
    }
  }
  // A FIFO inside the root is refused at once instead of blocking a worker.
  auto t0 = std::chrono::steady_clock::now();
  auto r = PostJson("/v1/predict", {{"model", dir_ + "/fifo.onnx"}});
  EXPECT_EQ(r->status, 422);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  // Relative paths are looked up under the roots.
  r = PostJson("/v1/predict", {{"model", "m.onnx"}});
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["model"], fs::canonical(model_).string());
  fs::remove_all(outside);
}

TEST_F(ServiceTest, NoModelRootsRefusesEveryPath) {
  opts_.model_roots.clear();
  StartServer();
  auto r = PostJson("/v1/jobs", {{"model", model_}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), "model '" + model_ + "': no such model file under the service's model roots");
}

// Finding 8: two Content-Length headers were accepted; PUT/PATCH got 404.
TEST_F(ServiceTest, ConflictingContentLengthAndWrongMethods) {
  StartServer();
  std::string reply = Raw(port_,
                          "POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400"));
  EXPECT_EQ(ReplyBody(reply), "{\"error\":\"conflicting Content-Length headers\"}");
  reply = Raw(port_,
              "POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400"));
  for (const char* method : {"PUT", "PATCH"}) {
    reply = Raw(port_, std::string(method) + " /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                                             "Connection: close\r\n\r\n");
    EXPECT_THAT(reply, HasSubstr("HTTP/1.1 405")) << method;
    EXPECT_THAT(reply, HasSubstr("Allow: POST, GET")) << method;
  }
  auto r = client_->Delete("/v1/jobs");
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST, GET");
  r = client_->Post("/v1/jobs/1", "{}", "application/json");
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET, DELETE");
  EXPECT_EQ(Error(r), "method POST not allowed on /v1/jobs/1 (allowed: GET, DELETE)");
  EXPECT_EQ(client_->Get("/v2/nothing")->status, 404);
}

// Requests that arrive in pieces, pipelined, or with Expect: 100-continue
// are served like any other.
TEST_F(ServiceTest, PipelinedAndContinuedRequests) {
  StartServer();
  std::string two = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::string reply = Raw(port_, two);
  EXPECT_EQ(std::count(reply.begin(), reply.end(), 'H') >= 2, true);
  EXPECT_NE(reply.find("\"status\":\"ok\""), std::string::npos);
  EXPECT_NE(reply.find("\"jobs\":[]"), std::string::npos);
  // Expect: 100-continue: the head alone gets "100 Continue", then the body its answer.
  std::string body = json{{"model", model_}}.dump();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string head = "POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                     "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  ASSERT_EQ(send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  ssize_t n = recv(fd, buf, sizeof buf, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_EQ(send(fd, body.data(), body.size(), MSG_NOSIGNAL), static_cast<ssize_t>(body.size()));
  reply.clear();
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) reply.append(buf, static_cast<size_t>(n));
  close(fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
}

// HEAD is GET without the body (a fuzzer harness once mistook it for a framing error).
TEST_F(ServiceTest, HeadAnswersWithoutABody) {
  StartServer();
  std::string reply = Raw(port_, "HEAD /v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_THAT(reply, HasSubstr("Content-Length: "));
  EXPECT_EQ(ReplyBody(reply), "");
}

// The fuzzer's entry point serves the same way without a socket.
TEST_F(ServiceTest, ServeRawRequestGoesThroughTheSameRouter) {
  StartServer();
  std::string reply = service_->ServeRawRequest("GET /%FF HTTP/1.1\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400"));
  reply = service_->ServeRawRequest("GET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("\"status\":\"ok\""));
  reply = service_->ServeRawRequest("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("conflicting Content-Length headers"));
}

}  // namespace
}  // namespace gpucast::service
