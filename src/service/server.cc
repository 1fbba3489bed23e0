#include "service/server.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/http_util.h"
#include "service/k8s_extender.h"

namespace gpucast::service {

using nlohmann::json;

namespace {

constexpr const char* kUnrouted = "unrouted";

// Every resource's routes (routes.h): a new resource is a new line here.
std::vector<Route> AllRoutes(const RouteContext& ctx) {
  std::vector<Route> all;
  for (auto make :
       {JobRoutes, PredictionRoutes, ObservationRoutes, ClusterRoutes, AdminRoutes, HealthRoutes, K8sRoutes,
        ModelRoutes}) {
    for (Route& r : make(ctx)) all.push_back(std::move(r));
  }
  return all;
}

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

Service::Service(const ServiceOptions& opts, std::unique_ptr<PredictionEngine> engine, std::unique_ptr<JobStore> store,
                 ModelRoots roots)
    : opts_(opts),
      tokens_{opts.token, opts.deputy_token, opts.admin_token, !opts.tls.client_ca.empty()},
      engine_(std::move(engine)),
      store_(std::move(store)),
      roots_(std::move(roots)),
      router_(std::make_unique<Router>()) {
  defaults_.max_json_depth = opts_.max_json_depth;
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
      [this](const std::string& head, bool has_body) { return CheckHead(head, has_body); });
}

Service::~Service() {
  Stop();
  if (loop_thread_.joinable()) loop_thread_.join();
}

Result<std::unique_ptr<Service>> Service::Create(const ServiceOptions& in, std::unique_ptr<PredictionEngine> engine,
                                                 std::unique_ptr<Scheduler> scheduler) {
  ServiceOptions opts = in;
  if (opts.upload_dir.empty()) opts.upload_dir = opts.db_path + ".models";
  std::error_code ec;
  std::string abs_dir = std::filesystem::absolute(opts.upload_dir, ec).string();
  if (!ec) opts.upload_dir = abs_dir;
  // What can fail without touching the disk first (model roots, TLS certificate), then what
  // creates files (the upload folder, the database): a bad --tls-cert leaves nothing behind.
  ASSIGN_OR_RETURN(ModelRoots roots, ModelRoots::Create(opts.model_roots));
  std::unique_ptr<TlsServer> tls;
  if (!opts.tls.cert.empty()) {
    if (opts.tls.key.empty()) return Status::Error("--tls-cert needs --tls-key (the certificate's private key)");
    ASSIGN_OR_RETURN(tls, TlsServer::Load(opts.tls));
  } else if (!opts.tls.key.empty() || !opts.tls.client_ca.empty()) {
    return Status::Error(std::string(opts.tls.key.empty() ? "--tls-client-ca" : "--tls-key") +
                         " needs --tls-cert (the service's certificate)");
  }
  if (mkdir(opts.upload_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::Error(opts.upload_dir + ": cannot create upload directory: " + std::strerror(errno));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<JobStore> store, JobStore::Open(opts.db_path));
  std::unique_ptr<Service> s(new Service(opts, std::move(engine), std::move(store), std::move(roots)));
  if (tls) {
    s->tls_ = std::move(tls);
    s->front_->UseTls(s->tls_.get());
  }
  // The prediction's GPU when a job names none: the cluster's.
  // On a mixed cluster none: a job names its GPU type (RequestDefaults::cluster_gpus).
  const std::string cluster_gpu = scheduler->GpuType();
  if (!cluster_gpu.empty()) s->defaults_.gpu = cluster_gpu;
  if (scheduler->GpuTypes().size() > 1) {
    s->defaults_.gpu.clear();
    s->defaults_.cluster_gpus = scheduler->GpuTypes();
  }
  s->uploads_ = std::make_unique<UploadStore>(opts.upload_dir, opts.upload_quota_bytes);
  s->predictions_ = std::make_unique<Predictions>(s->engine_.get(), &s->roots_, s->uploads_.get(), &s->metrics_,
                                                  opts.deputy_min_uid);
  // Models by content address (POST /v1/models; "sha256:<hex>" in any request).
  ASSIGN_OR_RETURN(s->models_, ModelStore::Open(opts.model_store_dir.empty() ? opts.db_path + ".model-store"
                                                                             : opts.model_store_dir,
                                                opts.model_store_quota_bytes));
  s->predictions_->SetModelStore(s->models_.get());
  s->jobs_ = std::make_unique<Jobs>(s->store_.get(), std::move(scheduler), s->predictions_.get(), s->uploads_.get(),
                                    &s->metrics_, opts.jobs);
  // Jobs that were running when the service stopped hold their GPUs again.
  RETURN_IF_ERROR(s->jobs_->Restore());
  RETURN_IF_ERROR(s->uploads_->Restore(s->jobs_->LiveJobs()));
  if (opts.k8s.enabled) {  // --k8s-node names nodes the cluster has
    Result<std::map<std::string, std::vector<k8s::GpuLoad>>> nodes =
        k8s::NodesFromCluster(s->jobs_->ClusterJson(), opts.k8s.nodes);
    if (!nodes.ok()) return nodes.status();
  }
  ASSIGN_OR_RETURN(s->loop_, ClosedLoop::Start(opts.db_path, s->jobs_.get(), s->uploads_.get(), s->engine_.get(),
                                                opts.dcgm_urls, opts.dcgm_interval_s, opts.loop));
  s->Routes();
  return s;
}

void Service::Routes() {
  Router& h = *router_;
  h.set_payload_max_length(std::max(opts_.max_body_bytes, opts_.max_json_body_bytes));  // HttpFront enforces it first
  // Only for the Keep-Alive header httplib writes; HttpFront enforces both.
  h.set_keep_alive_max_count(1000);
  h.set_keep_alive_timeout(opts_.read_timeout_s);

  const RouteContext ctx{jobs_.get(), predictions_.get(), loop_.get(), &metrics_, engine_.get(), store_.get(),
                         &defaults_, &opts_.k8s, models_.get()};
  for (Route& r : AllRoutes(ctx)) {
    rules_.push_back({r.method, std::regex(r.pattern), r.access, r.takes_body});
    // Each route records its count and latency under its name. A handler
    // that throws answers 500 without internals (and logs them).
    auto wrapped = [this, name = r.name, handle = std::move(r.handle)](const httplib::Request& req,
                                                                        httplib::Response& res) {
      auto t0 = std::chrono::steady_clock::now();
      try {
        handle(req, res);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gpucast serve: %s: %s\n", name.c_str(), e.what());
        res = httplib::Response();
        SendError(res, 500, "internal error");
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      metrics_.ObserveRequest(name, res.status, s);
    };
    if (r.method == "GET") h.Get(r.pattern, wrapped);
    else if (r.method == "POST") h.Post(r.pattern, wrapped);
    else if (r.method == "DELETE") h.Delete(r.pattern, wrapped);
  }

  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!PreRoute(req, res)) return httplib::Server::HandlerResponse::Unhandled;
    metrics_.ObserveRequest(kUnrouted, res.status, 0);
    return httplib::Server::HandlerResponse::Handled;
  });

  // Responses httplib makes itself (a malformed request line...) get a JSON message too.
  h.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                  httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours
    std::string msg;
    switch (res.status) {
      case 404: {
        std::string path = Shown(req.path, 200);
        if (!IsValidUtf8(path) || HasControlByte(path)) path = "(path not shown)";
        msg = "no route for " + req.method + " " + path;
        break;
      }
      case 400: msg = "malformed HTTP request"; break;
      case 414: msg = "request target longer than 8192 bytes"; break;
      case 413: {
        // HttpFront refuses bodies over --max-body-bytes itself; what reaches here is
        // httplib's own cap of 8192 bytes on form bodies, which no route reads. It
        // answered "HTTP 413", without the reason.
        std::string type = Shown(req.get_header_value("Content-Type"), 100);
        if (!IsValidUtf8(type) || HasControlByte(type)) type = "(not shown)";
        msg = "request body larger than 8192 bytes for Content-Type '" + type +
              "' (httplib's limit for forms); want application/json or application/octet-stream";
        break;
      }
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

std::string Service::CheckHead(const std::string& head, bool has_body) {
  HeadFacts facts;
  if (!ParseHeadFacts(head, has_body, &facts)) return "";  // the router answers a malformed head
  Admission a = Admit(rules_, tokens_, facts);
  if (a.status == 0) return "";
  metrics_.ObserveRequest(kUnrouted, a.status, 0);
  return ErrorResponse(a.status, a.message, true, a.headers);
}

bool Service::PreRoute(const httplib::Request& req, httplib::Response& res) {
  for (const auto& [k, v] : req.params) {
    if (!IsValidUtf8(k) || !IsValidUtf8(v) || HasControlByte(k) || HasControlByte(v)) {
      SendError(res, 400, "query string: not valid UTF-8, or control bytes, after percent-decoding");
      return true;
    }
  }
  // The head's admission again, on what the router parsed (defence in depth).
  HeadFacts facts{req.method, req.path, req.get_header_value("Authorization"), req.has_header("X-Gpucast-Read-As"),
                  !req.body.empty(), req.get_header_value(kClientCertHeader)};
  Admission a = Admit(rules_, tokens_, facts);
  if (a.status == 0) return false;
  for (const std::string& line : {a.headers}) {
    const size_t colon = line.find(':');
    if (colon != std::string::npos) res.set_header(line.substr(0, colon), line.substr(colon + 2, line.find("\r\n") - colon - 2));
  }
  SendError(res, a.status, a.message);
  return true;
}

std::string Service::Handle(const std::string& request, const std::string& ip, int port, bool close) {
  MemoryStream strm(request, ip, port);
  router_->Process(strm, close);
  // A large request's copies are freed by now: give the pages back.
  if (request.size() >= opts_.trim_after_bytes) malloc_trim(0);
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
    std::string head;
    if (framer.TakeHeadForCheck(&head)) {
      // No socket, no client certificate: a client-sent X-Gpucast-Client-Cert is dropped.
      std::string refusal = CheckHead(WithClientCert(head, ""), framer.body_expected());
      if (!refusal.empty()) {
        out += refusal;
        break;
      }
    }
    if (s == RequestFramer::State::kError) {
      out += ErrorResponse(framer.error_status(), framer.error_message(), true);
      break;
    }
    if (s != RequestFramer::State::kComplete) break;
    bool close = !framer.keep_alive();
    out += Handle(WithClientCert(framer.TakeRequest(), ""), "127.0.0.1", 1, close);
    if (close) break;
    s = framer.Parse();
  }
  return out;
}

Result<int> Service::Bind(const std::string& host, int port) { return front_->Bind(host, port); }

Status Service::ReloadTls(const std::string& why) {
  if (!tls_) return Status::Ok();
  Status st = tls_->Reload();
  if (st.ok()) {
    std::fprintf(stderr, "gpucast serve: %s: TLS certificate reloaded: %s\n", why.c_str(), tls_->Describe().c_str());
  } else {
    std::fprintf(stderr, "gpucast serve: %s: %s\n", why.c_str(), st.message().c_str());
  }
  return st;
}

Status Service::Run() {
  if (opts_.run_loop) loop_thread_ = std::thread([this] { jobs_->Loop(opts_.tick_s); });
  Status st = stopping_ ? Status::Ok() : front_->Run();
  Stop();
  if (loop_thread_.joinable()) loop_thread_.join();
  return st;
}

void Service::Stop() {
  stopping_ = true;
  front_->Stop();
  if (jobs_) jobs_->Stop();
}

Status Service::Tick(double now) { return jobs_->Tick(now); }

Result<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::Error("--listen '" + listen + "': want HOST:PORT (e.g. 127.0.0.1:8080)");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  Result<int64_t> port = ParseIntParam("port", listen.substr(colon + 1), 0, 65535);
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

Status ServeUntilSignal(Service* service, const std::string& listen, const std::function<void()>& on_listening) {
  ASSIGN_OR_RETURN(auto hp, ParseListen(listen));
  sigset_t set = StopSignals();
  ASSIGN_OR_RETURN(int port, service->Bind(hp.first, hp.second));
  if (on_listening) on_listening();
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
