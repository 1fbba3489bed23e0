// Every route and error path of the service through a real HTTP server on
// 127.0.0.1 (ephemeral port), with the fake engine and a one-job-per-GPU
// scheduler as seams (the real engine and policy have their own tests).
#include "service/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

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
      {"{\"batch\": 2}", "field 'model': missing (path of an ONNX file)"},
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
  EXPECT_EQ(Error(r), dir_ + "/nope.onnx: cannot read model file");
  r = PostJson("/v1/predict", {{"model", dir_ + "/bad.onnx"}});
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(Error(r), dir_ + "/bad.onnx: not an ONNX model");
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
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(reply, HasSubstr("body not received within 1 s"));
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
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
  // Reads need no token; DELETE does.
  EXPECT_EQ(client_->Get("/v1/jobs/1")->status, 200);
  EXPECT_EQ(PostJson("/v1/predict", {{"model", model_}})->status, 200);
  EXPECT_EQ(client_->Delete("/v1/jobs/1")->status, 401);
  EXPECT_EQ(client_->Delete("/v1/jobs/1", {{"Authorization", "Bearer " + token}})->status, 200);
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
  std::string stored = j["model"];
  EXPECT_EQ(stored.rfind(opts_.db_path + ".models/", 0), 0u) << stored;
  std::ifstream in(stored);
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
  PostJson("/v1/jobs", {{"model", "missing.onnx"}});
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

}  // namespace
}  // namespace gpucast::service
