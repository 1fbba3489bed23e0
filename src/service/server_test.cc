// The wiring through a real HTTP server on 127.0.0.1: framing, admission on
// the head (token, method, body, refused before the body is read), limits,
// and hostile clients. Each route's behaviour: routes_*_test.cc.
#include "service/server.h"

#include <algorithm>

#include "service/service_fixture.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;
using testing::ServiceTest;

// `gpucast serve --db /no/such/dir/jobs.db` said only "cannot create upload directory": the reason
// (a missing parent directory, no permission) is named.
TEST_F(ServiceTest, AnUploadDirectoryThatCannotBeMadeSaysWhy) {
  opts_.db_path = dir_ + "/no-such-dir/jobs.db";
  opts_.upload_dir = "";
  EXPECT_EQ(Service::Create(opts_, std::make_unique<testing::FakeEngine>(), std::make_unique<testing::OneJobPerGpu>(1))
                .message(),
            dir_ + "/no-such-dir/jobs.db.models: cannot create upload directory: No such file or directory");
}

TEST_F(ServiceTest, BodyOverLimitGets413) {
  StartServer();
  std::string big(opts_.max_body_bytes + 1, ' ');
  auto r = client_->Post("/v1/jobs", big, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(Error(r), "request body larger than 4096 bytes (--max-body-bytes)");
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
}

// Two refusals that had no reason: a JSON number past double's range
// (nlohmann's out_of_range 406, not a parse_error) was 500 "internal error",
// and a form body over httplib's 8192 bytes was 413 "HTTP 413".
TEST_F(ServiceTest, NumberOverflowAndLargeFormBodiesSayWhy) {
  opts_.max_body_bytes = 65536;  // above httplib's 8192 for forms (the fixture's 4096 is below it)
  StartServer();
  auto r = client_->Post("/v1/predict", "{\"model\": \"x.onnx\", \"batch\": 1e400}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "malformed JSON: number overflow parsing '1e400'");
  r = client_->Post("/v1/predict", std::string(9000, 'a'), "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(Error(r),
            "request body larger than 8192 bytes for Content-Type 'application/x-www-form-urlencoded' (httplib's "
            "limit for forms); want application/json or application/octet-stream");
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
}

TEST_F(ServiceTest, UnknownRouteGets404Json) {
  StartServer();
  auto r = client_->Get("/v2/nothing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Error(r), "no route for GET /v2/nothing");
}

// A client that announces a body and stops sending is dropped after the read
// timeout; other clients are served meanwhile and afterwards.
TEST_F(ServiceTest, SlowClientTimesOutWithoutBlockingOthers) {
  StartServer();
  int fd = Connect();
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

TEST_F(ServiceTest, TokenGuardsEveryRouteButHealthAndMetrics) {
  std::string token = "s3cret-token";
  opts_.token = token;
  StartServer();
  auto r = PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(Error(r), "missing 'Authorization: Bearer <token>' header");
  EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer");
  r = PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}}, {{"Authorization", "Bearer s3cret-tokeX"}});
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(Error(r), "invalid bearer token");
  r = PostJson("/v1/jobs", {{"model", model_}, {"batch", 1}}, {{"Authorization", "Bearer " + token}});
  EXPECT_EQ(r->status, 201);
  // Reads, predictions and DELETE need it too; /healthz and /metrics do not;
  // without it not even which paths exist is told.
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
  EXPECT_EQ(client_->Get("/v2/nothing", auth)->status, 404);
  EXPECT_EQ(PostJson("/v1/predict", {{"model", model_}, {"batch", 1}})->status, 401);
  EXPECT_EQ(PostJson("/v1/predict", {{"model", model_}, {"batch", 1}}, auth)->status, 200);
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
  EXPECT_EQ(client_->Get("/metrics")->status, 200);
  EXPECT_EQ(client_->Delete("/v1/jobs/1")->status, 401);
  EXPECT_EQ(client_->Delete("/v1/jobs/1", auth)->status, 200);
}

// Finding 2 of issue 20: /healthz and /metrics took any method and buffered
// any body unauthenticated. A request refused on its head is answered before
// its body is read: the client gets the answer with most of its body unsent.
TEST_F(ServiceTest, RefusedHeadsNeverReadTheirBodies) {
  opts_.token = "tok";
  opts_.max_body_bytes = 64 << 20;
  StartServer();
  for (const std::string& head :
       {std::string("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"),
        std::string("PUT /metrics HTTP/1.1\r\nHost: x\r\n"),
        std::string("GET /healthz HTTP/1.1\r\nHost: x\r\n"),
        std::string("POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"),
        std::string("POST /v1/nothing HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n"),
        std::string("DELETE /v1/jobs/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n")}) {
    // 32 MiB announced, none sent: the answer must come without it.
    std::string reply = Raw(head + "Content-Length: 33554432\r\n\r\n", 3);
    EXPECT_THAT(reply, ::testing::AnyOf(HasSubstr("HTTP/1.1 400"), HasSubstr("HTTP/1.1 401"),
                                        HasSubstr("HTTP/1.1 404"), HasSubstr("HTTP/1.1 405"),
                                        HasSubstr("HTTP/1.1 413")))
        << head << reply;
    EXPECT_THAT(reply, HasSubstr("Connection: close")) << head;
  }
  std::string reply = Raw("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 33554432\r\n\r\n", 3);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 405"));
  EXPECT_EQ(ReplyBody(reply), "{\"error\":\"method POST not allowed on /healthz (allowed: GET)\"}");
  reply = Raw("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", 3);
  EXPECT_EQ(ReplyBody(reply), "{\"error\":\"GET /metrics takes no request body\"}");
  // GET and HEAD without a body are answered without the token.
  EXPECT_THAT(Raw("HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(client_->Get("/metrics")->status, 200);
}

// Finding 4 of issue 20: a NUL in a header name was accepted; a bare-LF
// request line waited for the read timeout.
TEST_F(ServiceTest, ControlBytesInHeadersAndBareLineFeedsAre400AtOnce) {
  opts_.read_timeout_s = 5;
  StartServer();
  using namespace std::string_literals;
  for (const std::string& bad : {"GET /healthz HTTP/1.1\r\nX-A\0b: 1\r\n\r\n"s,
                                 "GET /healthz HTTP/1.1\r\nX-A: 1\x01\r\n\r\n"s,
                                 "GET /healthz HTTP/1.1\r\nX-\x7f: 1\r\n\r\n"s,
                                 "GET /healthz HTTP/1.1\r\nX-A: \0\r\n\r\n"s}) {
    std::string reply = Raw(bad, 3);
    EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400")) << ::testing::PrintToString(bad);
  }
  // The reply to a bare LF comes at once, with the connection still open on
  // the client's side (it sent no blank line the old parser waited for).
  auto t0 = std::chrono::steady_clock::now();
  std::string reply = Raw("GET /healthz HTTP/1.1\nHost: x\n", 4);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(ReplyBody(reply), HasSubstr("bare CR or LF in the request head"));
  EXPECT_LT(took, 2.5) << "a bare-LF request waited for a timeout";
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
}

// Finding 1 of issue 9: a path that percent-decodes to invalid UTF-8 crashed the process.
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
  EXPECT_THAT(Raw("GET /\xff HTTP/1.1\r\nHost: x\r\n\r\n"), HasSubstr("HTTP/1.1 400"));
  r = client_->Get("/caf%C3%A9");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(Error(r), "no route for GET /caf\xc3\xa9");
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
}

// Finding 2 of issue 9: the body limit did not hold for chunked bodies.
TEST_F(ServiceTest, ChunkedBodiesObeyTheBodyLimit) {
  StartServer();
  std::string chunk = std::string(1000, ' ');
  std::string req = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 1000; ++i) req += "3e8\r\n" + chunk + "\r\n";  // 1 MB in all
  req += "0\r\n\r\n";
  std::string reply = Raw(req);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(ReplyBody(reply), HasSubstr("request body larger than"));
  std::string up = "POST /v1/jobs?batch=1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 10; ++i) up += "3e8\r\n" + std::string(testing::kFakeModelMagic) + chunk.substr(9) + "\r\n";
  up += "0\r\n\r\n";
  reply = Raw(up);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 413"));
  EXPECT_EQ(ReplyBody(reply), "{\"error\":\"request body larger than 4096 bytes (--max-body-bytes)\"}");
  EXPECT_TRUE(fs::is_empty(opts_.db_path + ".models"));
  std::string ok = "POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  std::string body = json{{"model", model_}, {"batch", 2}}.dump();
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  reply = Raw(ok + size + "\r\n" + body + "\r\n0\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(json::parse(ReplyBody(reply))["predicted_util"], 20.0);
}

// Finding 3 of issue 9: deep JSON nesting inside the body limit cost gigabytes.
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
  r = PostJson("/v1/predict", {{"model", model_}, {"batch", 1}, {"name", std::string(100, '[')}});
  EXPECT_EQ(r->status, 200) << r->body;
}

// Finding 5 of issue 9: drip-feeding clients held every worker; /healthz timed out.
TEST_F(ServiceTest, DripFeedingClientsNeitherStarveOthersNorStayForever) {
  opts_.threads = 4;
  opts_.read_timeout_s = 2;
  opts_.request_timeout_s = 3;
  StartServer();
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) {
    int fd = Connect();
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
  EXPECT_LT(worst, 1.5) << "a /healthz took " << worst << " s while 20 clients dripped";
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
  for (int i = 0; i < 3; ++i) fds.push_back(Connect());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string reply = Raw("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 2);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 503"));
  EXPECT_THAT(reply, HasSubstr("too many open connections from your address (--max-connections-per-client 3)"));
  for (int fd : fds) close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  reply = Raw("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 2);
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200"));
}

// Finding 8 of issue 9: two Content-Length headers were accepted; PUT/PATCH got 404.
TEST_F(ServiceTest, ConflictingContentLengthAndWrongMethods) {
  StartServer();
  std::string reply = Raw("POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400"));
  EXPECT_EQ(ReplyBody(reply), "{\"error\":\"conflicting Content-Length headers\"}");
  reply = Raw("POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400"));
  for (const char* method : {"PUT", "PATCH"}) {
    reply = Raw(std::string(method) + " /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
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

TEST_F(ServiceTest, PipelinedAndContinuedRequests) {
  StartServer();
  std::string two = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::string reply = Raw(two);
  EXPECT_NE(reply.find("\"status\":\"ok\""), std::string::npos);
  EXPECT_NE(reply.find("\"jobs\":[]"), std::string::npos);
  // Expect: 100-continue: the head alone gets "100 Continue", then the body its answer.
  std::string body = json{{"model", model_}, {"batch", 1}}.dump();
  int fd = Connect();
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

TEST_F(ServiceTest, HeadAnswersWithoutABody) {
  StartServer();
  std::string reply = Raw("HEAD /v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_THAT(reply, HasSubstr("Content-Length: "));
  EXPECT_EQ(ReplyBody(reply), "");
}

// The fuzzer's entry point serves the same way without a socket, head check included.
TEST_F(ServiceTest, ServeRawRequestGoesThroughTheSameAdmissionAndRouter) {
  opts_.token = "tok";
  StartServer();
  std::string reply = service_->ServeRawRequest("GET /%FF HTTP/1.1\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 400"));
  reply = service_->ServeRawRequest("GET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("\"status\":\"ok\""));
  reply = service_->ServeRawRequest("POST /healthz HTTP/1.1\r\nContent-Length: 1\r\n\r\nx");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 405"));
  reply = service_->ServeRawRequest("GET /v1/jobs HTTP/1.1\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 401"));
  reply = service_->ServeRawRequest("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n");
  EXPECT_THAT(reply, HasSubstr("conflicting Content-Length headers"));
}

}  // namespace
}  // namespace gpucast::service
