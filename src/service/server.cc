#include "service/server.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <regex>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/read_as.h"
#include "service/sha256.h"

namespace gpucast::service {

using nlohmann::json;

namespace {

double NowUnix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr const char* kUploadPrefix = "upload:sha256:";

// Never throws on bytes that are not UTF-8 (they cannot reach here, but a
// reply must never take the service down).
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(Dump(body), "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, status, json{{"error", message}});
}

Result<int64_t> ParseInt(const std::string& field, const std::string& s, int64_t lo, int64_t hi) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
    std::string shown = s.size() > 64 ? s.substr(0, 64) + "..." : s;
    return Status::Error("parameter '" + field + "': want an integer in [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "], got '" + shown + "'");
  }
  return v;
}

Result<bool> ParseBool(const std::string& field, const std::string& s) {
  if (s == "1" || s == "true") return true;
  if (s == "0" || s == "false") return false;
  return Status::Error("parameter '" + field + "': want 0, 1, true or false");
}

// Writes bytes to `path` atomically (temp file, fsync, rename).
Status WriteFileAtomic(const std::string& path, std::string_view bytes) {
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::Error("cannot store the uploaded model");
  bool ok = true;
  for (size_t off = 0; ok && off < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) off += static_cast<size_t>(n);
  }
  ok = ::fsync(fd) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::Error("cannot store the uploaded model");
  }
  return Status::Ok();
}

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool HasControlByte(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return true;
  }
  return false;
}

// A JSON body is checked before it is parsed: valid UTF-8, and nesting no
// deeper than `max_depth` (one linear pass; brackets inside strings do not count).
Status CheckJsonBody(std::string_view body, int max_depth) {
  if (!IsValidUtf8(body)) return Status::Error("request body: not valid UTF-8");
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return Status::Error("request body: JSON nested deeper than " + std::to_string(max_depth) + " levels");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::Ok();
}

constexpr const char* kUnrouted = "unrouted";

// A Stream over a request already in memory; the reply is collected.
class MemoryStream : public httplib::Stream {
 public:
  MemoryStream(const std::string& in, std::string ip, int port) : in_(in), ip_(std::move(ip)), port_(port) {}
  bool is_readable() const override { return pos_ < in_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    size_t n = std::min(size, in_.size() - pos_);
    std::memcpy(ptr, in_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = ip_;
    port = port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "";
    port = 0;
  }
  socket_t socket() const override { return -1; }
  std::string& out() { return out_; }

 private:
  const std::string& in_;
  size_t pos_ = 0;
  std::string ip_;
  int port_;
  std::string out_;
};

}  // namespace

// cpp-httplib as a router only: HttpFront owns the sockets.
class Service::Router : public httplib::Server {
 public:
  bool Process(httplib::Stream& strm, bool close) {
    bool closed = false;
    return process_request(strm, close, closed, nullptr);
  }
};

// One reference to an upload, released on destruction unless kept (by a job).
class Service::UploadGuard {
 public:
  explicit UploadGuard(Service* s) : s_(s) {}
  ~UploadGuard() {
    if (!sha_.empty()) s_->ReleaseUpload(sha_);
  }
  void Set(std::string sha) { sha_ = std::move(sha); }
  void Keep() { sha_.clear(); }

 private:
  Service* s_;
  std::string sha_;
};

Service::Service(const ServiceOptions& opts, std::unique_ptr<PredictionEngine> engine,
                 std::unique_ptr<Scheduler> scheduler, std::unique_ptr<JobStore> store, ModelRoots roots)
    : opts_(opts),
      engine_(std::move(engine)),
      store_(std::move(store)),
      roots_(std::move(roots)),
      router_(std::make_unique<Router>()),
      scheduler_(std::move(scheduler)) {
  FrontLimits limits;
  limits.max_body_bytes = opts_.max_body_bytes;
  limits.max_json_body_bytes = opts_.max_json_body_bytes;
  limits.read_timeout_s = opts_.read_timeout_s;
  limits.request_timeout_s = opts_.request_timeout_s;
  limits.max_connections = opts_.max_connections;
  limits.max_connections_per_client = opts_.max_connections_per_client;
  // Four maximal requests in flight at once, plus room for many small ones.
  limits.max_buffered_bytes = 4 * std::max(opts_.max_body_bytes, opts_.max_json_body_bytes) + (16u << 20);
  limits.threads = opts_.threads;
  front_ = std::make_unique<HttpFront>(
      limits,
      [this](const std::string& request, const std::string& ip, int port, bool close) {
        return Handle(request, ip, port, close);
      },
      [this](int status) { metrics_.ObserveRequest(kUnrouted, status, 0); },
      [this](const std::string& head) { return CheckHead(head); });
}

// With a token, a request without it is refused on its head, before its body
// (an upload, say) is read; PreRoute checks again after routing's parsing.
std::string Service::CheckHead(const std::string& head) {
  if (opts_.token.empty()) return "";
  size_t sp1 = head.find(' ');
  size_t end = head.find_first_of("? ", sp1 + 1);
  std::string path = sp1 == std::string::npos ? "" : head.substr(sp1 + 1, end - sp1 - 1);
  if (path == "/healthz" || path == "/metrics") return "";
  std::string auth;
  for (size_t pos = head.find("\r\n"); pos != std::string::npos && pos + 2 < head.size();) {
    size_t e = head.find("\r\n", pos + 2);
    std::string line = head.substr(pos + 2, (e == std::string::npos ? head.size() : e) - pos - 2);
    size_t colon = line.find(':');
    if (colon == 13) {  // strlen("authorization")
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == "authorization") auth = line.substr(colon + 1);
    }
    pos = e;
  }
  while (!auth.empty() && (auth.front() == ' ' || auth.front() == '\t')) auth.erase(0, 1);
  const std::string prefix = "Bearer ";
  if (auth.compare(0, prefix.size(), prefix) == 0 &&
      (ConstantTimeEqual(auth.substr(prefix.size()), opts_.token) ||
       (!opts_.deputy_token.empty() && ConstantTimeEqual(auth.substr(prefix.size()), opts_.deputy_token)))) {
    return "";
  }
  metrics_.ObserveRequest(kUnrouted, 401, 0);
  return ErrorResponse(401, auth.empty() ? "missing 'Authorization: Bearer <token>' header" : "invalid bearer token",
                       true, "WWW-Authenticate: Bearer\r\n");
}

Service::~Service() {
  Stop();
  if (loop_.joinable()) loop_.join();
}

Result<std::unique_ptr<Service>> Service::Create(const ServiceOptions& in,
                                                 std::unique_ptr<PredictionEngine> engine,
                                                 std::unique_ptr<Scheduler> scheduler) {
  ServiceOptions opts = in;
  if (opts.upload_dir.empty()) opts.upload_dir = opts.db_path + ".models";
  std::error_code ec;
  std::string abs_dir = std::filesystem::absolute(opts.upload_dir, ec).string();
  if (!ec) opts.upload_dir = abs_dir;
  if (mkdir(opts.upload_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::Error(opts.upload_dir + ": cannot create upload directory");
  }
  ASSIGN_OR_RETURN(ModelRoots roots, ModelRoots::Create(opts.model_roots));
  ASSIGN_OR_RETURN(std::unique_ptr<JobStore> store, JobStore::Open(opts.db_path));
  // Jobs that were running when the service stopped hold their GPUs again.
  ASSIGN_OR_RETURN(std::vector<Job> running,
                   store->List(JobState::kRunning, 0, std::numeric_limits<int64_t>::max()));
  for (const Job& j : running) {
    Status st = scheduler->Start(j);
    if (!st.ok()) return st.Prefixed(opts.db_path + ": restoring job " + std::to_string(j.id));
  }
  std::unique_ptr<Service> s(
      new Service(opts, std::move(engine), std::move(scheduler), std::move(store), std::move(roots)));
  RETURN_IF_ERROR(s->RestoreUploads());
  s->Routes();
  RETURN_IF_ERROR(s->StartClosedLoop());  // closed_loop.cc
  return s;
}

void Service::Routes() {
  Router& h = *router_;
  h.set_payload_max_length(std::max(opts_.max_body_bytes, opts_.max_json_body_bytes));  // HttpFront enforces it first
  // Only for the Keep-Alive header httplib writes; HttpFront enforces both.
  h.set_keep_alive_max_count(1000);
  h.set_keep_alive_timeout(opts_.read_timeout_s);

  // Each route records its count and latency under its pattern. A handler
  // that throws answers 500 without internals (and logs them).
  using Method = void (Service::*)(const httplib::Request&, httplib::Response&);
  auto wrap = [this](const char* route, Method m) {
    return [this, route, m](const httplib::Request& req, httplib::Response& res) {
      auto t0 = std::chrono::steady_clock::now();
      try {
        (this->*m)(req, res);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gpucast serve: %s: %s\n", route, e.what());
        res = httplib::Response();
        SendError(res, 500, "internal error");
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      metrics_.ObserveRequest(route, res.status, s);
    };
  };
  auto add = [&](const char* method, const char* pattern, const char* route, Method m) {
    routes_.push_back({method, pattern, std::regex(pattern)});
    std::string verb = method;
    if (verb == "GET") h.Get(pattern, wrap(route, m));
    else if (verb == "POST") h.Post(pattern, wrap(route, m));
    else if (verb == "DELETE") h.Delete(pattern, wrap(route, m));
  };
  add("POST", "/v1/jobs", "POST /v1/jobs", &Service::PostJob);
  add("GET", "/v1/jobs", "GET /v1/jobs", &Service::ListJobs);
  add("GET", R"(/v1/jobs/(\d+))", "GET /v1/jobs/{id}", &Service::GetJob);
  add("DELETE", R"(/v1/jobs/(\d+))", "DELETE /v1/jobs/{id}", &Service::DeleteJob);
  add("POST", "/v1/predict", "POST /v1/predict", &Service::PostPredict);
  add("GET", "/v1/cluster", "GET /v1/cluster", &Service::GetCluster);
  add("GET", "/healthz", "GET /healthz", &Service::Healthz);
  add("POST", R"(/v1/jobs/(\d+)/observations)", "POST /v1/jobs/{id}/observations", &Service::PostObservation);
  add("POST", "/v1/admin/reload", "POST /v1/admin/reload", &Service::PostReload);
  routes_.push_back({"GET", "/metrics", std::regex("/metrics")});
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    auto t0 = std::chrono::steady_clock::now();
    res.status = 200;
    res.set_content(metrics_.Render() + loop_metrics_.Render(), "text/plain; version=0.0.4");
    metrics_.ObserveRequest("GET /metrics", 200,
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  });

  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!PreRoute(req, res)) return httplib::Server::HandlerResponse::Unhandled;
    metrics_.ObserveRequest(kUnrouted, res.status, 0);
    return httplib::Server::HandlerResponse::Handled;
  });

  // Responses httplib makes itself (no route, a malformed request line) get
  // a JSON message too.
  h.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                  httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours
    std::string msg;
    switch (res.status) {
      case 404: {
        std::string path = req.path.size() > 200 ? req.path.substr(0, 200) + "..." : req.path;
        if (!IsValidUtf8(path) || HasControlByte(path)) path = "(path not shown)";
        msg = "no route for " + req.method + " " + path;
        break;
      }
      case 400: msg = "malformed HTTP request"; break;
      case 414: msg = "request target longer than 8192 bytes"; break;
      default: msg = "HTTP " + std::to_string(res.status); break;
    }
    res.set_content(Dump(json{{"error", msg}}), "application/json");
    metrics_.ObserveRequest(kUnrouted, res.status, 0);
    return httplib::Server::HandlerResponse::Handled;
  }));
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpucast serve: request failed: %s\n", e.what());
    } catch (...) {
    }
    res = httplib::Response();
    SendError(res, 500, "internal error");
  });
}

bool Service::PreRoute(const httplib::Request& req, httplib::Response& res) {
  // 1. What reaches handlers and messages is valid UTF-8 without control bytes.
  if (!IsValidUtf8(req.path) || HasControlByte(req.path)) {
    SendError(res, 400, "request path: not valid UTF-8, or control bytes, after percent-decoding");
    return true;
  }
  for (const auto& [k, v] : req.params) {
    if (!IsValidUtf8(k) || !IsValidUtf8(v) || HasControlByte(k) || HasControlByte(v)) {
      SendError(res, 400, "query string: not valid UTF-8, or control bytes, after percent-decoding");
      return true;
    }
  }
  // 2. With a token, everything but the health and metrics endpoints needs it.
  if (!opts_.token.empty() && req.path != "/healthz" && req.path != "/metrics") {
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.compare(0, prefix.size(), prefix) != 0 ||
        !(ConstantTimeEqual(auth.substr(prefix.size()), opts_.token) || IsDeputy(req))) {
      res.set_header("WWW-Authenticate", "Bearer");
      SendError(res, 401, auth.empty() ? "missing 'Authorization: Bearer <token>' header" : "invalid bearer token");
      return true;
    }
  }
  // 3. A known path with a method it does not take: 405 with Allow.
  std::string allow;
  bool known = false, allowed = false;
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  for (const RouteInfo& r : routes_) {
    if (!std::regex_match(req.path, r.re)) continue;
    known = true;
    if (r.method == method) allowed = true;
    if (allow.find(r.method) == std::string::npos) allow += (allow.empty() ? "" : ", ") + r.method;
  }
  if (known && !allowed) {
    res.set_header("Allow", allow);
    SendError(res, 405, "method " + req.method + " not allowed on " + req.path + " (allowed: " + allow + ")");
    return true;
  }
  return false;
}

std::string Service::Handle(const std::string& request, const std::string& ip, int port, bool close) {
  MemoryStream strm(request, ip, port);
  router_->Process(strm, close);
  return std::move(strm.out());
}

std::string Service::ServeRawRequest(std::string_view bytes) {
  FrontLimits limits;
  limits.max_body_bytes = opts_.max_body_bytes;
  limits.max_json_body_bytes = opts_.max_json_body_bytes;
  RequestFramer framer(limits);
  std::string out;
  RequestFramer::State s = framer.Feed(bytes);
  for (int i = 0; i < 64; ++i) {
    if (s == RequestFramer::State::kError) {
      out += ErrorResponse(framer.error_status(), framer.error_message(), true);
      break;
    }
    if (s != RequestFramer::State::kComplete) break;
    bool close = !framer.keep_alive();
    out += Handle(framer.TakeRequest(), "127.0.0.1", 1, close);
    if (close) break;
    s = framer.Parse();
  }
  return out;
}

Result<int> Service::Bind(const std::string& host, int port) { return front_->Bind(host, port); }

Status Service::Run() {
  if (opts_.run_loop) loop_ = std::thread([this] { Loop(); });
  Status st = stopping_ ? Status::Ok() : front_->Run();
  Stop();
  if (loop_.joinable()) loop_.join();
  return st;
}

void Service::Stop() {
  stopping_ = true;
  front_->Stop();
  std::lock_guard<std::mutex> lock(mu_);
  wake_.notify_all();
}

void Service::Loop() {
  while (!stopping_) {
    Status st = Tick(NowUnix());
    if (!st.ok()) std::fprintf(stderr, "gpucast serve: scheduling pass failed: %s\n", st.message().c_str());
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_for(lock, std::chrono::duration<double>(opts_.tick_s),
                   [this] { return work_pending_ || stopping_.load(); });
    work_pending_ = false;
  }
}

Status Service::Tick(double now) {
  std::lock_guard<std::mutex> lock(mu_);
  constexpr int64_t kAll = std::numeric_limits<int64_t>::max();
  // 1. Running jobs whose run time is over leave their GPUs.
  ASSIGN_OR_RETURN(std::vector<Job> running, store_->List(JobState::kRunning, 0, kAll));
  std::vector<Job> finished;
  for (const Job& j : running) {
    if (j.spec.duration_s && j.started_at && *j.started_at + *j.spec.duration_s <= now) {
      Job d = j;
      d.state = JobState::kDone;
      d.finished_at = now;
      finished.push_back(std::move(d));
    }
  }
  if (!finished.empty()) {
    RETURN_IF_ERROR(store_->Update(finished));
    for (const Job& j : finished) {
      scheduler_->Finish(j.id);
      ReleaseJobUpload(j);
    }
    metrics_.AddDecisions("finish", static_cast<int64_t>(finished.size()));
  }
  // 2. The policy places queued jobs.
  ASSIGN_OR_RETURN(std::vector<Job> queued, store_->List(JobState::kQueued, 0, kAll));
  std::vector<Job> placed;
  if (!queued.empty()) {
    ASSIGN_OR_RETURN(std::vector<Placement> decisions, scheduler_->Plan(queued, now));
    std::map<int64_t, const Job*> by_id;
    for (const Job& j : queued) by_id[j.id] = &j;
    for (const Placement& p : decisions) {
      auto it = by_id.find(p.job_id);
      if (it == by_id.end()) return Status::Error("policy placed job " + std::to_string(p.job_id) + ", which is not queued");
      Job j = *it->second;
      j.state = JobState::kRunning;
      j.placement = p.gpus;
      j.exclusive = p.exclusive;
      j.started_at = now;
      placed.push_back(std::move(j));
    }
    if (!placed.empty()) {
      RETURN_IF_ERROR(store_->Update(placed));
      for (const Job& j : placed) RETURN_IF_ERROR(scheduler_->Start(j));
      metrics_.AddDecisions("place", static_cast<int64_t>(placed.size()));
    }
  }
  metrics_.SetJobCounts(static_cast<int64_t>(queued.size() - placed.size()),
                        static_cast<int64_t>(running.size() - finished.size() + placed.size()));
  return Status::Ok();
}

// ---------------------------------------------------------------- uploads

std::string Service::UploadPath(const std::string& sha) const { return opts_.upload_dir + "/" + sha + ".onnx"; }

size_t Service::upload_bytes() const {
  std::lock_guard<std::mutex> lock(uploads_mu_);
  return upload_bytes_;
}

Status Service::AcquireUpload(const std::string& sha, std::string_view bytes, int* http_status) {
  std::lock_guard<std::mutex> lock(uploads_mu_);
  if (upload_sizes_.count(sha)) {
    ++upload_refs_[sha];
    return Status::Ok();
  }
  if (upload_bytes_ + bytes.size() > opts_.upload_quota_bytes) {
    *http_status = 507;
    return Status::Error("upload quota full: " + std::to_string(upload_bytes_) + " of " +
                         std::to_string(opts_.upload_quota_bytes) +
                         " bytes held by queued and running jobs (--upload-quota-bytes)");
  }
  Status st = WriteFileAtomic(UploadPath(sha), bytes);
  if (!st.ok()) {
    *http_status = 500;
    return st;
  }
  upload_sizes_[sha] = bytes.size();
  upload_refs_[sha] = 1;
  upload_bytes_ += bytes.size();
  return Status::Ok();
}

void Service::ReleaseUpload(const std::string& sha) {
  std::lock_guard<std::mutex> lock(uploads_mu_);
  auto it = upload_refs_.find(sha);
  if (it == upload_refs_.end()) return;
  if (--it->second > 0) return;
  upload_refs_.erase(it);
  std::remove(UploadPath(sha).c_str());
  upload_bytes_ -= upload_sizes_[sha];
  upload_sizes_.erase(sha);
}

void Service::ReleaseJobUpload(const Job& job) {
  const std::string& m = job.spec.model;
  if (m.rfind(kUploadPrefix, 0) == 0) ReleaseUpload(m.substr(std::string(kUploadPrefix).size()));
}

Status Service::RestoreUploads() {
  std::lock_guard<std::mutex> lock(uploads_mu_);
  constexpr int64_t kAll = std::numeric_limits<int64_t>::max();
  for (JobState st : {JobState::kQueued, JobState::kRunning}) {
    ASSIGN_OR_RETURN(std::vector<Job> jobs, store_->List(st, 0, kAll));
    for (const Job& j : jobs) {
      if (j.spec.model.rfind(kUploadPrefix, 0) == 0) ++upload_refs_[j.spec.model.substr(std::string(kUploadPrefix).size())];
    }
  }
  // Files no live job refers to (and interrupted writes) go.
  DIR* d = opendir(opts_.upload_dir.c_str());
  if (!d) return Status::Error(opts_.upload_dir + ": cannot read upload directory");
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  for (const std::string& n : names) {
    std::string sha = n.size() == 64 + 5 && n.compare(64, 5, ".onnx") == 0 ? n.substr(0, 64) : "";
    struct stat sb;
    std::string path = opts_.upload_dir + "/" + n;
    if (!sha.empty() && upload_refs_.count(sha) && lstat(path.c_str(), &sb) == 0 && S_ISREG(sb.st_mode)) {
      upload_sizes_[sha] = static_cast<size_t>(sb.st_size);
      upload_bytes_ += static_cast<size_t>(sb.st_size);
    } else {
      std::remove(path.c_str());
    }
  }
  // A job whose upload is gone keeps its record; nothing to hold for it.
  for (auto it = upload_refs_.begin(); it != upload_refs_.end();) {
    it = upload_sizes_.count(it->first) ? std::next(it) : upload_refs_.erase(it);
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- handlers

bool Service::IsDeputy(const httplib::Request& req) const {
  if (opts_.deputy_token.empty()) return false;
  const std::string auth = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  return auth.compare(0, prefix.size(), prefix) == 0 &&
         ConstantTimeEqual(auth.substr(prefix.size()), opts_.deputy_token);
}

namespace {
std::vector<int> Fds(const std::vector<OpenedModel>& models) {
  std::vector<int> fds;
  for (const OpenedModel& m : models) fds.push_back(m.fd.get());
  return fds;
}
}  // namespace

Result<JobSpec> Service::SpecFromRequest(const httplib::Request& req, std::string* digest, int* http_status,
                                         std::vector<OpenedModel>* models, UploadGuard* upload) {
  *http_status = 400;
  const std::string type = req.get_header_value("Content-Type");
  auto starts = [&](const char* p) { return type.rfind(p, 0) == 0; };
  JobSpec spec;
  // A deputy's request to read the models as a user (server.h deputy_token).
  std::optional<ReadAs> read_as;
  if (req.has_header("X-Gpucast-Read-As")) {
    if (!IsDeputy(req)) {
      *http_status = 403;
      return Status::Error("X-Gpucast-Read-As: only the deputy (the bearer of --deputy-token-file) may have "
                           "files read as a user");
    }
    if (starts("application/octet-stream")) {
      return Status::Error("X-Gpucast-Read-As: applies to a JSON job naming model paths, not to an upload");
    }
    ASSIGN_OR_RETURN(read_as, ParseReadAs(req.get_header_value("X-Gpucast-Read-As")));
  }
  if (starts("application/octet-stream")) {
    // Uploaded ONNX: the job's fields come from the query string.
    if (req.body.empty()) return Status::Error("empty upload: want the ONNX file as the request body");
    for (const auto& [key, value] : req.params) {
      if (key == "batch") {
        ASSIGN_OR_RETURN(spec.batch, ParseInt(key, value, 1, int64_t{1} << 24));
      } else if (key == "gpus") {
        ASSIGN_OR_RETURN(spec.gpus, ParseInt(key, value, 1, 1024));
      } else if (key == "amp") {
        ASSIGN_OR_RETURN(spec.amp, ParseBool(key, value));
      } else if (key == "name") {
        if (value.size() > 256) return Status::Error("parameter 'name': at most 256 bytes");
        spec.name = value;
      } else if (key == "duration_s") {
        ASSIGN_OR_RETURN(int64_t d, ParseInt(key, value, 0, int64_t{1} << 40));
        spec.duration_s = static_cast<double>(d);
      } else if (key.rfind("attr.", 0) == 0 && key.size() > 5) {
        RETURN_IF_ERROR(AddAttr(key.substr(5), value, &spec));
      } else if (key.rfind("dim.", 0) == 0 && key.size() > 4) {
        ASSIGN_OR_RETURN(spec.dims[key.substr(4)], ParseInt(key, value, 1, int64_t{1} << 24));
      } else {
        std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;
        return Status::Error("unknown query parameter '" + shown +
                             "' (known: batch, amp, gpus, name, duration_s, attr.KEY, dim.NAME)");
      }
    }
    const std::string sha = Sha256Hex(req.body);
    RETURN_IF_ERROR(AcquireUpload(sha, req.body, http_status));
    upload->Set(sha);
    spec.model = kUploadPrefix + sha;
    OpenedModel& model = models->emplace_back();
    model.fd = UniqueFd(::open(UploadPath(sha).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    model.path = spec.model;
    if (model.fd.get() < 0) {
      *http_status = 500;
      return Status::Error("cannot read the stored upload");
    }
  } else {
    if (!type.empty() && !starts("application/json")) {
      *http_status = 415;
      std::string shown = type.size() > 64 ? type.substr(0, 64) + "..." : type;
      return Status::Error("Content-Type '" + shown +
                           "': want application/json (job as JSON) or application/octet-stream (ONNX upload)");
    }
    RETURN_IF_ERROR(CheckJsonBody(req.body, opts_.max_json_depth));
    ASSIGN_OR_RETURN(spec, ParseSpecJson(req.body));
    // Each network's file, under the model roots (or as the deputy's user);
    // the spec keeps the canonical paths.
    for (const ModelPart& part : spec.Parts()) {
      ReadAsFailure why = ReadAsFailure::kNone;
      Result<OpenedModel> opened = read_as ? OpenAsUser(part.path, *read_as, &why) : roots_.Open(part.path);
      if (why == ReadAsFailure::kServiceCannot) {
        // The operator's problem, logged for the operator; the user sees no reason about the file.
        std::fprintf(stderr, "gpucast serve: X-Gpucast-Read-As: %s\n", opened.message().c_str());
        *http_status = 500;
        return Status::Error("the service cannot read files as the submitting user; see its log");
      }
      if (!opened.ok()) {
        *http_status = 422;
        return opened.status();
      }
      for (const OpenedModel& seen : *models) {
        if (seen.path == opened->path) {
          *http_status = 422;
          return Status::Error("models: '" + part.path.substr(0, 256) +
                               "' names a file listed before (give one entry with the total repeat)");
        }
      }
      models->push_back(std::move(opened).value());
    }
    for (size_t i = 0; i < spec.models.size(); ++i) spec.models[i].path = (*models)[i].path;
    spec.model = models->front().path;
  }
  *digest = Sha256Hex(Dump(SpecToJson(spec)));
  return spec;
}

void Service::PostJob(const httplib::Request& req, httplib::Response& res) {
  const std::string key = req.get_header_value("Idempotency-Key");
  if (key.size() > 255) return SendError(res, 400, "Idempotency-Key: at most 255 bytes");
  std::string digest;
  int status = 400;
  std::vector<OpenedModel> models;
  UploadGuard upload(this);
  Result<JobSpec> spec = SpecFromRequest(req, &digest, &status, &models, &upload);
  if (!spec.ok()) return SendError(res, status, spec.message());

  auto replay = [&](const Job& j) {
    if (j.request_digest != digest) {
      return SendError(res, 422, "Idempotency-Key '" + key + "' was already used for job " +
                                     std::to_string(j.id) + " with a different request");
    }
    res.set_header("Idempotent-Replayed", "true");
    res.set_header("Location", "/v1/jobs/" + std::to_string(j.id));
    SendJson(res, 201, JobToJson(j));
  };
  if (!key.empty()) {
    Result<std::optional<Job>> found = store_->GetByIdempotencyKey(key);
    if (!found.ok()) return SendError(res, 500, found.message());
    if (*found) return replay(**found);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    Status fits = scheduler_->CanEverFit(*spec);
    if (!fits.ok()) return SendError(res, 422, fits.message());
  }
  bool hit = false;
  Result<Prediction> pred = engine_->Predict(*spec, Fds(models), &hit);
  metrics_.ObservePrediction(pred.ok(), hit);
  if (!pred.ok()) return SendError(res, 422, pred.message());

  Job job;
  job.spec = std::move(spec).value();
  job.prediction = *pred;
  job.state = JobState::kQueued;
  job.submitted_at = NowUnix();
  job.idempotency_key = key;
  job.request_digest = digest;
  bool replayed = false;
  Result<Job> stored = store_->Insert(job, &replayed);  // committed (fsync) when it returns
  if (!stored.ok()) return SendError(res, 500, stored.message());
  if (replayed) return replay(*stored);
  upload.Keep();  // the queued job holds the upload now
  {
    std::lock_guard<std::mutex> lock(mu_);
    work_pending_ = true;
    wake_.notify_all();
  }
  res.set_header("Location", "/v1/jobs/" + std::to_string(stored->id));
  SendJson(res, 201, JobToJson(*stored));
}

void Service::GetJob(const httplib::Request& req, httplib::Response& res) {
  Result<int64_t> id = ParseInt("id", req.matches[1], 1, std::numeric_limits<int64_t>::max());
  if (!id.ok()) return SendError(res, 404, "no job " + std::string(req.matches[1]).substr(0, 32));
  Result<std::optional<Job>> job = store_->Get(*id);
  if (!job.ok()) return SendError(res, 500, job.message());
  if (!*job) return SendError(res, 404, "no job " + std::to_string(*id));
  json out = JobToJson(**job);
  AddObserved(*id, &out);  // observed_util, observed_samples
  SendJson(res, 200, out);
}

void Service::ListJobs(const httplib::Request& req, httplib::Response& res) {
  std::optional<JobState> state;
  int64_t after = 0, limit = 100;
  for (const auto& [key, value] : req.params) {
    if (key == "state") {
      state = ParseJobState(value);
      if (!state) {
        std::string shown = value.size() > 64 ? value.substr(0, 64) + "..." : value;
        return SendError(res, 400, "parameter 'state': want queued, running, done or cancelled, got '" + shown + "'");
      }
    } else if (key == "after") {
      Result<int64_t> v = ParseInt(key, value, 0, std::numeric_limits<int64_t>::max());
      if (!v.ok()) return SendError(res, 400, v.message());
      after = *v;
    } else if (key == "limit") {
      Result<int64_t> v = ParseInt(key, value, 1, 1000);
      if (!v.ok()) return SendError(res, 400, v.message());
      limit = *v;
    } else {
      std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;
      return SendError(res, 400, "unknown query parameter '" + shown + "' (known: state, after, limit)");
    }
  }
  Result<std::vector<Job>> jobs = store_->List(state, after, limit);
  if (!jobs.ok()) return SendError(res, 500, jobs.message());
  json out = {{"jobs", json::array()}};
  for (const Job& j : *jobs) {
    json one = JobToJson(j);
    AddObserved(j.id, &one);
    out["jobs"].push_back(std::move(one));
  }
  // Page with ?after=<next_after> while it is not null.
  out["next_after"] = static_cast<int64_t>(jobs->size()) == limit ? json(jobs->back().id) : json(nullptr);
  SendJson(res, 200, out);
}

void Service::DeleteJob(const httplib::Request& req, httplib::Response& res) {
  Result<int64_t> id = ParseInt("id", req.matches[1], 1, std::numeric_limits<int64_t>::max());
  if (!id.ok()) return SendError(res, 404, "no job " + std::string(req.matches[1]).substr(0, 32));
  std::lock_guard<std::mutex> lock(mu_);
  Result<std::optional<Job>> found = store_->Get(*id);
  if (!found.ok()) return SendError(res, 500, found.message());
  if (!*found) return SendError(res, 404, "no job " + std::to_string(*id));
  Job job = **found;
  if (job.state == JobState::kDone || job.state == JobState::kCancelled) {
    return SendError(res, 409, "job " + std::to_string(*id) + " is already " + JobStateName(job.state));
  }
  job.state = JobState::kCancelled;
  job.finished_at = NowUnix();
  Status st = store_->Update({job});
  if (!st.ok()) return SendError(res, 500, st.message());
  scheduler_->Finish(job.id);
  ReleaseJobUpload(job);
  metrics_.AddDecisions("cancel", 1);
  work_pending_ = true;  // freed GPUs may take queued jobs
  wake_.notify_all();
  SendJson(res, 200, JobToJson(job));
}

void Service::PostPredict(const httplib::Request& req, httplib::Response& res) {
  std::string digest;
  int status = 400;
  std::vector<OpenedModel> models;
  UploadGuard upload(this);  // released when the answer is made
  Result<JobSpec> spec = SpecFromRequest(req, &digest, &status, &models, &upload);
  if (!spec.ok()) return SendError(res, status, spec.message());
  bool hit = false;
  Result<Prediction> pred = engine_->Predict(*spec, Fds(models), &hit);
  metrics_.ObservePrediction(pred.ok(), hit);
  if (!pred.ok()) return SendError(res, 422, pred.message());
  json out = SpecToJson(*spec);
  out["predicted_util"] = pred->util;
  out["predicted_util_interval"] = {pred->util_lo, pred->util_hi};
  out["cache"] = hit ? "hit" : "miss";
  SendJson(res, 200, out);
}

void Service::GetCluster(const httplib::Request&, httplib::Response& res) {
  json out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out = scheduler_->ClusterJson();
    out["policy"] = scheduler_->PolicyName();
  }
  Result<std::vector<Job>> queued = store_->List(JobState::kQueued, 0, 1000);
  if (!queued.ok()) return SendError(res, 500, queued.message());
  out["queued"] = json::array();
  for (const Job& j : *queued) out["queued"].push_back(j.id);
  SendJson(res, 200, out);
}

void Service::Healthz(const httplib::Request&, httplib::Response& res) {
  Result<std::vector<Job>> probe = store_->List(std::nullopt, 0, 1);
  if (!probe.ok()) return SendError(res, 503, "database not readable");
  SendJson(res, 200, json{{"status", "ok"}, {"predictor", engine_->Describe()}});
}

Result<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::Error("--listen '" + listen + "': want HOST:PORT (e.g. 127.0.0.1:8080)");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  Result<int64_t> port = ParseInt("port", listen.substr(colon + 1), 0, 65535);
  if (!port.ok()) return Status::Error("--listen '" + listen + "': want a port in [0, 65535]");
  return std::make_pair(host, static_cast<int>(*port));
}

namespace {
sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void BlockStopSignals() {
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Status ServeUntilSignal(Service* service, const std::string& listen) {
  ASSIGN_OR_RETURN(auto hp, ParseListen(listen));
  sigset_t set = StopSignals();
  ASSIGN_OR_RETURN(int port, service->Bind(hp.first, hp.second));
  std::printf("listening on %s:%d\n", hp.first.c_str(), port);
  std::fflush(stdout);
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&set, &sig);
    if (!done) std::fprintf(stderr, "gpucast serve: signal %d, stopping\n", sig);
    service->Stop();
  });
  Status st = service->Run();
  done = true;
  pthread_kill(waiter.native_handle(), SIGTERM);  // wakes sigwait if no signal came
  waiter.join();
  return st;
}

}  // namespace gpucast::service
