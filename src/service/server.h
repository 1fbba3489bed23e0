// gpucast's HTTP/JSON submission service (routes in docs/api.md): the wiring.
//
// HttpFront (http_front.h) reads every request completely in one event-loop
// thread, after admission (admission.h) passed its head; its worker pool runs
// the handlers through cpp-httplib's router; each resource's routes are in
// routes_*.cc (routes.h). Graph analysis runs on its own bounded pool
// (analysis.h); one scheduling thread places queued jobs (jobs.h). Accepted
// jobs are committed to the JobStore before the 201 goes out. Limits and the
// threat model: docs/security.md.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "service/admission.h"
#include "service/closed_loop.h"
#include "service/engine.h"
#include "service/http_front.h"
#include "service/jobs.h"
#include "service/metrics.h"
#include "service/model_roots.h"
#include "service/predictions.h"
#include "service/request.h"
#include "service/routes.h"
#include "service/scheduler.h"
#include "service/store.h"
#include "service/tls.h"
#include "service/uploads.h"
#include "util/status.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace gpucast::service {

struct ServiceOptions {
  std::string db_path;              // SQLite file (created if missing)
  std::string upload_dir;           // uploaded ONNX bodies; "" = db_path + ".models"
  std::string token;                // "" = job routes open; else they need "Authorization: Bearer <token>"
  // "" = off; else a request bearing "Authorization: Bearer <deputy_token>"
  // may carry "X-Gpucast-Read-As: UID:GID": its model paths are opened as
  // that user (service/read_as.h), not under the model roots. For slurmctld's
  // job_submit.lua in service mode. The deputy token also passes `token`'s check.
  std::string deputy_token;
  uid_t deputy_min_uid = 1000;      // lowest uid files are read as (uid 0 never)
  // "" = /v1/admin/* off while any other token is set (open when none is);
  // else those routes need "Authorization: Bearer <admin_token>".
  std::string admin_token;
  std::vector<std::string> model_roots;  // directories whose files clients may name; none = no paths
  size_t max_body_bytes = 128u << 20;     // application/octet-stream (upload) bodies; larger get 413
  size_t max_json_body_bytes = 1u << 20;  // every other body; larger get 413
  size_t upload_quota_bytes = 1ull << 30; // stored uploads in total; a new one over it gets 507
  // Caps on what the service holds (issue 31 item 10): job records in every
  // state (507), queued jobs (503), observations (507), and the bytes of
  // uploaded graphs kept for training in DB.observed/ (not kept beyond it).
  JobLimits jobs;
  LoopLimits loop;
  std::string model_store_dir;            // POST /v1/models by content address; "" = db_path + ".model-store"
  size_t model_store_quota_bytes = 1ull << 30;  // the store's bytes in total; a new model over it gets 507
  int max_json_depth = 32;                // deeper JSON nesting gets 400 (checked before parsing)
  int read_timeout_s = 5;           // a client silent this long mid-request gets 408
  int request_timeout_s = 30;       // a request not complete this long after its first byte gets 408
  int max_connections = 1024;       // open connections in total
  int max_connections_per_client = 256;  // open connections per client address
  int threads = 16;                 // HTTP worker threads
  double tick_s = 0.2;              // scheduling loop period when idle
  bool run_loop = true;             // false: only explicit Tick() calls (and submissions) schedule (tests)
  // Closed loop (docs/operations.md): DCGM exporters to scrape (the e-th covers
  // the cluster's e-th node), and how often.
  std::vector<std::string> dcgm_urls;
  double dcgm_interval_s = 15;
  size_t trim_after_bytes = 1u << 20;  // requests this large return freed memory to the system after
  // TLS (--tls-cert, --tls-key, --tls-client-ca): every connection speaks
  // TLS when `tls.cert` is set; plain HTTP otherwise.
  TlsFiles tls;
  // The Kubernetes webhook and scheduler extender (routes_k8s.cc).
  K8sConfig k8s;
};

class Service {
 public:
  // Opens the store, restores running jobs onto the scheduler's GPUs.
  static Result<std::unique_ptr<Service>> Create(const ServiceOptions& opts,
                                                 std::unique_ptr<PredictionEngine> engine,
                                                 std::unique_ptr<Scheduler> scheduler);
  ~Service();

  // Binds host:port (port 0 = any free port) and returns the bound port.
  Result<int> Bind(const std::string& host, int port);
  // Serves until Stop(). REQUIRES: Bind succeeded.
  Status Run();
  // Thread-safe; Run returns soon after.
  void Stop();

  // One scheduling pass at unix time `now` (the loop calls it; tests may too).
  Status Tick(double now);

  // Runs raw request bytes through the same framer, admission, router and
  // handlers as the network front, without a socket; returns the response
  // bytes of each request in them (fuzzing, tests).
  std::string ServeRawRequest(std::string_view bytes);

  // Bytes of uploads stored now (tests).
  size_t upload_bytes() const { return uploads_->bytes(); }

  // Re-reads the predictor file (SIGHUP, POST /v1/admin/reload); logs the
  // outcome with `why` (rate-limited), counts it in /metrics; on error the
  // old predictor keeps serving. Thread-safe.
  Status ReloadPredictor(const std::string& why) { return loop_->Reload(why); }

  // Re-reads the TLS certificate and key (SIGHUP): new connections get them,
  // established ones keep theirs; on error the old ones keep serving. Logs
  // the outcome with `why`. No-op without TLS. Thread-safe.
  Status ReloadTls(const std::string& why);

 private:
  class Router;
  Service(const ServiceOptions& opts, std::unique_ptr<PredictionEngine> engine, std::unique_ptr<JobStore> store,
          ModelRoots roots);
  void Routes();
  // One framed request (from HttpFront or ServeRawRequest) -> response bytes.
  std::string Handle(const std::string& request, const std::string& ip, int port, bool close);
  // Admission on a request's head, before its body is read: "" or the whole refusal.
  std::string CheckHead(const std::string& head, bool has_body);
  // Checks made on the parsed request before routing: UTF-8 of the query,
  // admission again. Returns true if it answered the request.
  bool PreRoute(const httplib::Request& req, httplib::Response& res);

  ServiceOptions opts_;
  Tokens tokens_;
  RequestDefaults defaults_;
  std::unique_ptr<PredictionEngine> engine_;
  std::unique_ptr<JobStore> store_;
  ModelRoots roots_;
  Metrics metrics_;
  std::unique_ptr<UploadStore> uploads_;
  std::unique_ptr<ModelStore> models_;
  std::unique_ptr<Predictions> predictions_;
  std::unique_ptr<Jobs> jobs_;
  std::unique_ptr<ClosedLoop> loop_;
  std::vector<RouteRule> rules_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<TlsServer> tls_;  // before front_: the front uses it until it is destroyed
  std::unique_ptr<HttpFront> front_;
  std::atomic<bool> stopping_{false};
  std::thread loop_thread_;
};

// "HOST:PORT" -> (host, port); port 0 = any free port.
Result<std::pair<std::string, int>> ParseListen(const std::string& listen);

// Blocks SIGINT and SIGTERM in the calling thread, and so in every thread it
// starts afterwards. Call first thing in main: threads started before (an
// OpenMP pool...) would otherwise take the signal and kill the process.
void BlockStopSignals();

// Binds `listen`, prints "listening on HOST:PORT" (the bound port) to stdout,
// serves until SIGINT or SIGTERM, then stops cleanly. `on_listening` (if any) runs once
// the port is bound, before serving: the start has succeeded (a bind error returns first).
// REQUIRES: BlockStopSignals() ran before any other thread was started.
Status ServeUntilSignal(Service* service, const std::string& listen,
                        const std::function<void()>& on_listening = nullptr);

}  // namespace gpucast::service
