#include "service/server.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace gpucast::service {

using nlohmann::json;

namespace {

double NowUnix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

uint64_t Fnv1a(std::string_view bytes, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, status, json{{"error", message}});
}

Result<int64_t> ParseInt(const std::string& field, const std::string& s, int64_t lo, int64_t hi) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
    return Status::Error("parameter '" + field + "': want an integer in [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "], got '" + s + "'");
  }
  return v;
}

Result<bool> ParseBool(const std::string& field, const std::string& s) {
  if (s == "1" || s == "true") return true;
  if (s == "0" || s == "false") return false;
  return Status::Error("parameter '" + field + "': want 0, 1, true or false, got '" + s + "'");
}

// Writes bytes to `path` atomically (temp file, fsync, rename).
Status WriteFileAtomic(const std::string& path, std::string_view bytes) {
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::Error(tmp + ": cannot create file");
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = std::fflush(f) == 0 && ok;
  ok = fsync(fileno(f)) == 0 && ok;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::Error(path + ": cannot write uploaded model");
  }
  return Status::Ok();
}

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

constexpr const char* kUnrouted = "unrouted";

}  // namespace

Service::Service(const ServiceOptions& opts, std::unique_ptr<PredictionEngine> engine,
                 std::unique_ptr<Scheduler> scheduler, std::unique_ptr<JobStore> store)
    : opts_(opts),
      engine_(std::move(engine)),
      store_(std::move(store)),
      http_(std::make_unique<httplib::Server>()),
      scheduler_(std::move(scheduler)) {}

Service::~Service() {
  Stop();
  if (loop_.joinable()) loop_.join();
}

Result<std::unique_ptr<Service>> Service::Create(const ServiceOptions& in,
                                                 std::unique_ptr<PredictionEngine> engine,
                                                 std::unique_ptr<Scheduler> scheduler) {
  ServiceOptions opts = in;
  if (opts.upload_dir.empty()) opts.upload_dir = opts.db_path + ".models";
  // Stored job records name uploads by absolute path.
  std::error_code ec;
  std::string abs_dir = std::filesystem::absolute(opts.upload_dir, ec).string();
  if (!ec) opts.upload_dir = abs_dir;
  if (mkdir(opts.upload_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::Error(opts.upload_dir + ": cannot create upload directory");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<JobStore> store, JobStore::Open(opts.db_path));
  // Jobs that were running when the service stopped hold their GPUs again.
  ASSIGN_OR_RETURN(std::vector<Job> running,
                   store->List(JobState::kRunning, 0, std::numeric_limits<int64_t>::max()));
  for (const Job& j : running) {
    Status st = scheduler->Start(j);
    if (!st.ok()) return st.Prefixed(opts.db_path + ": restoring job " + std::to_string(j.id));
  }
  std::unique_ptr<Service> s(
      new Service(opts, std::move(engine), std::move(scheduler), std::move(store)));
  s->Routes();
  return s;
}

void Service::Routes() {
  httplib::Server& h = *http_;
  h.set_payload_max_length(opts_.max_body_bytes);
  h.set_read_timeout(opts_.read_timeout_s, 0);
  h.set_write_timeout(opts_.read_timeout_s, 0);
  h.set_keep_alive_timeout(opts_.read_timeout_s);
  h.set_keep_alive_max_count(1000);
  h.set_tcp_nodelay(true);  // small JSON replies: no Nagle/delayed-ACK stalls (~40 ms)
  int threads = opts_.threads;
  h.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };

  // Each route records its count and latency under its pattern.
  using Method = void (Service::*)(const httplib::Request&, httplib::Response&);
  auto wrap = [this](const char* route, Method m) {
    return [this, route, m](const httplib::Request& req, httplib::Response& res) {
      auto t0 = std::chrono::steady_clock::now();
      (this->*m)(req, res);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      metrics_.ObserveRequest(route, res.status, s);
    };
  };
  h.Post("/v1/jobs", wrap("POST /v1/jobs", &Service::PostJob));
  h.Get("/v1/jobs", wrap("GET /v1/jobs", &Service::ListJobs));
  h.Get(R"(/v1/jobs/(\d+))", wrap("GET /v1/jobs/{id}", &Service::GetJob));
  h.Delete(R"(/v1/jobs/(\d+))", wrap("DELETE /v1/jobs/{id}", &Service::DeleteJob));
  h.Post("/v1/predict", wrap("POST /v1/predict", &Service::PostPredict));
  h.Get("/v1/cluster", wrap("GET /v1/cluster", &Service::GetCluster));
  h.Get("/healthz", wrap("GET /healthz", &Service::Healthz));
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    auto t0 = std::chrono::steady_clock::now();
    res.status = 200;
    res.set_content(metrics_.Render(), "text/plain; version=0.0.4");
    metrics_.ObserveRequest("GET /metrics", 200,
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  });

  // Responses httplib makes itself (no route, body over the limit, a request
  // not received in time) get a JSON message too.
  h.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                  httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours
    std::string msg;
    switch (res.status) {
      case 404: msg = "no route for " + req.method + " " + req.path; break;
      case 413:
        msg = "request body larger than " + std::to_string(opts_.max_body_bytes) +
              " bytes (--max-body-bytes)";
        break;
      case 400:
        msg = "malformed HTTP request, or body not received within " +
              std::to_string(opts_.read_timeout_s) + " s";
        break;
      default: msg = "HTTP " + std::to_string(res.status); break;
    }
    res.set_content(json{{"error", msg}}.dump(), "application/json");
    metrics_.ObserveRequest(kUnrouted, res.status, 0);
    return httplib::Server::HandlerResponse::Handled;
  }));
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    SendError(res, 500, "internal error: " + what);
  });
}

Result<int> Service::Bind(const std::string& host, int port) {
  int bound = port == 0 ? http_->bind_to_any_port(host) : (http_->bind_to_port(host, port) ? port : -1);
  if (bound <= 0) return Status::Error("cannot listen on " + host + ":" + std::to_string(port));
  return bound;
}

Status Service::Run() {
  if (opts_.run_loop) loop_ = std::thread([this] { Loop(); });
  bool ok = http_->listen_after_bind();
  Stop();
  if (loop_.joinable()) loop_.join();
  return ok || stopping_ ? Status::Ok() : Status::Error("HTTP server failed");
}

void Service::Stop() {
  stopping_ = true;
  http_->stop();
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
    for (const Job& j : finished) scheduler_->Finish(j.id);
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

bool Service::Authorized(const httplib::Request& req, httplib::Response& res) {
  if (opts_.token.empty()) return true;
  const std::string auth = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (auth.compare(0, prefix.size(), prefix) == 0 && ConstantTimeEqual(auth.substr(prefix.size()), opts_.token)) {
    return true;
  }
  res.set_header("WWW-Authenticate", "Bearer");
  SendError(res, 401, auth.empty() ? "missing 'Authorization: Bearer <token>' header"
                                   : "invalid bearer token");
  return false;
}

Result<JobSpec> Service::SpecFromRequest(const httplib::Request& req, std::string* digest,
                                         int* http_status) {
  *http_status = 400;
  const std::string type = req.get_header_value("Content-Type");
  auto starts = [&](const char* p) { return type.rfind(p, 0) == 0; };
  if (starts("application/octet-stream")) {
    // Uploaded ONNX: the job's fields come from the query string.
    if (req.body.empty()) return Status::Error("empty upload: want the ONNX file as the request body");
    JobSpec spec;
    for (const auto& [key, value] : req.params) {
      if (key == "batch") {
        ASSIGN_OR_RETURN(spec.batch, ParseInt(key, value, 1, int64_t{1} << 24));
      } else if (key == "gpus") {
        ASSIGN_OR_RETURN(spec.gpus, ParseInt(key, value, 1, 1024));
      } else if (key == "amp") {
        ASSIGN_OR_RETURN(spec.amp, ParseBool(key, value));
      } else if (key == "name") {
        spec.name = value;
      } else if (key == "duration_s") {
        ASSIGN_OR_RETURN(int64_t d, ParseInt(key, value, 0, int64_t{1} << 40));
        spec.duration_s = static_cast<double>(d);
      } else if (key.rfind("attr.", 0) == 0 && key.size() > 5) {
        RETURN_IF_ERROR(AddAttr(key.substr(5), value, &spec));
      } else if (key.rfind("dim.", 0) == 0 && key.size() > 4) {
        ASSIGN_OR_RETURN(spec.dims[key.substr(4)], ParseInt(key, value, 1, int64_t{1} << 24));
      } else {
        return Status::Error("unknown query parameter '" + key +
                             "' (known: batch, amp, gpus, name, duration_s, attr.KEY, dim.NAME)");
      }
    }
    const std::string content = Hex64(Fnv1a(req.body)) + "-" + std::to_string(req.body.size());
    spec.model = opts_.upload_dir + "/" + content + ".onnx";
    struct stat sb;
    if (stat(spec.model.c_str(), &sb) != 0 || static_cast<size_t>(sb.st_size) != req.body.size()) {
      *http_status = 500;
      RETURN_IF_ERROR(WriteFileAtomic(spec.model, req.body));
    }
    *digest = Hex64(Fnv1a(SpecToJson(spec).dump()));
    return spec;
  }
  if (!type.empty() && !starts("application/json")) {
    *http_status = 415;
    return Status::Error("Content-Type '" + type +
                         "': want application/json (job as JSON) or application/octet-stream (ONNX upload)");
  }
  Result<JobSpec> spec = ParseSpecJson(req.body);
  if (spec.ok()) *digest = Hex64(Fnv1a(SpecToJson(*spec).dump()));
  return spec;
}

void Service::PostJob(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res)) return;
  std::string digest;
  int status = 400;
  Result<JobSpec> spec = SpecFromRequest(req, &digest, &status);
  if (!spec.ok()) return SendError(res, status, spec.message());

  const std::string key = req.get_header_value("Idempotency-Key");
  if (key.size() > 255) return SendError(res, 400, "Idempotency-Key: at most 255 bytes");
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
  Result<Prediction> pred = engine_->Predict(*spec, &hit);
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
  if (!id.ok()) return SendError(res, 404, "no job " + std::string(req.matches[1]));
  Result<std::optional<Job>> job = store_->Get(*id);
  if (!job.ok()) return SendError(res, 500, job.message());
  if (!*job) return SendError(res, 404, "no job " + std::to_string(*id));
  SendJson(res, 200, JobToJson(**job));
}

void Service::ListJobs(const httplib::Request& req, httplib::Response& res) {
  std::optional<JobState> state;
  int64_t after = 0, limit = 100;
  for (const auto& [key, value] : req.params) {
    if (key == "state") {
      state = ParseJobState(value);
      if (!state) return SendError(res, 400, "parameter 'state': want queued, running, done or cancelled, got '" + value + "'");
    } else if (key == "after") {
      Result<int64_t> v = ParseInt(key, value, 0, std::numeric_limits<int64_t>::max());
      if (!v.ok()) return SendError(res, 400, v.message());
      after = *v;
    } else if (key == "limit") {
      Result<int64_t> v = ParseInt(key, value, 1, 1000);
      if (!v.ok()) return SendError(res, 400, v.message());
      limit = *v;
    } else {
      return SendError(res, 400, "unknown query parameter '" + key + "' (known: state, after, limit)");
    }
  }
  Result<std::vector<Job>> jobs = store_->List(state, after, limit);
  if (!jobs.ok()) return SendError(res, 500, jobs.message());
  json out = {{"jobs", json::array()}};
  for (const Job& j : *jobs) out["jobs"].push_back(JobToJson(j));
  // Page with ?after=<next_after> while it is not null.
  out["next_after"] = static_cast<int64_t>(jobs->size()) == limit ? json(jobs->back().id) : json(nullptr);
  SendJson(res, 200, out);
}

void Service::DeleteJob(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res)) return;
  Result<int64_t> id = ParseInt("id", req.matches[1], 1, std::numeric_limits<int64_t>::max());
  if (!id.ok()) return SendError(res, 404, "no job " + std::string(req.matches[1]));
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
  metrics_.AddDecisions("cancel", 1);
  work_pending_ = true;  // freed GPUs may take queued jobs
  wake_.notify_all();
  SendJson(res, 200, JobToJson(job));
}

void Service::PostPredict(const httplib::Request& req, httplib::Response& res) {
  std::string digest;
  int status = 400;
  Result<JobSpec> spec = SpecFromRequest(req, &digest, &status);
  if (!spec.ok()) return SendError(res, status, spec.message());
  bool hit = false;
  Result<Prediction> pred = engine_->Predict(*spec, &hit);
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
  if (!probe.ok()) return SendError(res, 503, probe.message());
  SendJson(res, 200, json{{"status", "ok"}, {"predictor", engine_->Describe()}, {"db", store_->path()}});
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
