// libFuzzer entry point for the HTTP service: raw request bytes go through
// the same request framer, cpp-httplib router, pre-routing checks and
// handlers as requests from the network (Service::ServeRawRequest), against a
// real Service (SQLite store on tmpfs, model roots, uploads, quota) with the
// fake prediction engine. Any bytes must give HTTP replies, never a crash, a
// hang, a sanitizer report, a 500, or reply bytes that are not UTF-8.
//
// The first input byte picks the service: even = no token, odd = the tokens
// ("Authorization: Bearer fuzz-token", "fuzz-deputy", "fuzz-admin"), so every
// admission path is fuzzed. The Kubernetes routes are on (k8s_* seeds).
// fuzz/http_corpus holds a seed per finding of the
// hostile-client audits (issue 9, issue 20: "i20-N-...").
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "service/http_front.h"
#include "service/read_as.h"
#include "service/server.h"
#include "service/testing.h"

namespace {

using gpucast::service::Service;
using gpucast::service::ServiceOptions;

std::unique_ptr<Service> MakeService(const std::string& dir, const std::string& token) {
  ServiceOptions opts;
  opts.db_path = dir + "/jobs" + (token.empty() ? "" : "-auth") + ".db";
  opts.model_roots = {dir + "/models"};
  opts.token = token;
  // The token service also has a deputy ("Bearer fuzz-deputy" + X-Gpucast-Read-As), when
  // this process may take other users' file identity (root): else every read-as would be
  // the 500 an operator's misconfiguration gets.
  if (!token.empty() && gpucast::service::CanReadAsOtherUsers().ok()) opts.deputy_token = "fuzz-deputy";
  if (!token.empty()) opts.admin_token = "fuzz-admin";
  opts.max_body_bytes = 64 << 10;
  opts.max_json_body_bytes = 16 << 10;
  opts.upload_quota_bytes = 256 << 10;
  opts.run_loop = false;
  // The Kubernetes webhook and extender (the review and ExtenderArgs parsers), one node.
  opts.k8s.enabled = true;
  opts.k8s.nodes = {"gpu-a"};
  auto s = Service::Create(opts, std::make_unique<gpucast::service::testing::FakeEngine>(),
                           std::make_unique<gpucast::service::testing::OneJobPerGpu>(4));
  if (!s.ok()) {
    std::fprintf(stderr, "fuzz_http: %s\n", s.message().c_str());
    std::abort();
  }
  return std::move(s).value();
}

Service* g_open = nullptr;
Service* g_auth = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // tmpfs when there is one: every accepted job is an fsync'ed commit.
  std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string tmpl = base + "/gpucast-fuzz-http-XXXXXX";
  if (!mkdtemp(tmpl.data())) std::abort();
  mkdir((tmpl + "/models").c_str(), 0700);
  std::ofstream(tmpl + "/models/m.onnx") << gpucast::service::testing::kFakeModelMagic << " fuzz model";
  std::ofstream(tmpl + "/models/bad.onnx") << "not a model";
  g_open = MakeService(tmpl, "").release();
  g_auth = MakeService(tmpl, "fuzz-token").release();
  return 0;
}

namespace {

// Walks the replies: each must be "HTTP/1.1 NNN ...", framed by its
// Content-Length, and none may be a 500. Returns false on any violation.
bool RepliesAreWellFormed(std::string_view out) {
  size_t pos = 0;
  while (pos < out.size()) {
    std::string_view rest = out.substr(pos);
    if (rest.rfind("HTTP/1.1 ", 0) != 0 || rest.size() < 12) return false;
    int status = std::atoi(std::string(rest.substr(9, 3)).c_str());
    if (status < 100 || status > 599 || status == 500) return false;
    size_t end = rest.find("\r\n\r\n");
    if (end == std::string_view::npos) return false;
    size_t len = 0;
    size_t cl = rest.substr(0, end).find("Content-Length: ");
    if (cl != std::string_view::npos) len = std::strtoul(std::string(rest.substr(cl + 16, 20)).c_str(), nullptr, 10);
    // A reply to HEAD has the Content-Length of the body it does not send:
    // nothing, or the next reply, follows its head.
    std::string_view after = rest.substr(end + 4);
    if (after.empty() || after.rfind("HTTP/1.1 ", 0) == 0) len = 0;
    if (end + 4 + len > rest.size()) return false;
    pos += end + 4 + len;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Service* s = (data[0] & 1) ? g_auth : g_open;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string out = s->ServeRawRequest(bytes);
  if (!RepliesAreWellFormed(out)) __builtin_trap();          // HTTP replies, never a 500
  if (!gpucast::service::IsValidUtf8(out)) __builtin_trap();  // never echoes raw bytes
  return 0;
}
