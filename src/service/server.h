// gpucast's HTTP/JSON submission service (routes in docs/api.md).
//
// Threads: HttpFront's event loop reads every request completely, its worker
// pool runs the handlers (through cpp-httplib's router); one scheduling
// thread places queued jobs. Accepted jobs are committed to the JobStore
// before the 201 goes out. Limits and the threat model: docs/security.md.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "service/dcgm.h"
#include "service/engine.h"
#include "service/http_front.h"
#include "service/metrics.h"
#include "service/model_roots.h"
#include "service/observations.h"
#include "service/scheduler.h"
#include "service/store.h"
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
  std::string token;                // "" = no auth; else every route but /healthz and /metrics
                                    // needs "Authorization: Bearer <token>"
  // "" = off; else a request bearing "Authorization: Bearer <deputy_token>"
  // may carry "X-Gpucast-Read-As: UID:GID": its model paths are opened as
  // that user (service/read_as.h), not under the model roots. For slurmctld's
  // job_submit.lua in service mode. The deputy token also passes `token`'s check.
  std::string deputy_token;
  std::vector<std::string> model_roots;  // directories whose files clients may name; none = no paths
  size_t max_body_bytes = 128u << 20;     // application/octet-stream (upload) bodies; larger get 413
  size_t max_json_body_bytes = 1u << 20;  // every other body; larger get 413
  size_t upload_quota_bytes = 1ull << 30; // stored uploads in total; a new one over it gets 507
  int max_json_depth = 32;                // deeper JSON nesting gets 400 (checked before parsing)
  int read_timeout_s = 5;           // a client silent this long mid-request gets 408
  int request_timeout_s = 30;       // a request not complete this long after its first byte gets 408
  int max_connections = 1024;       // open connections in total
  int max_connections_per_client = 256;  // open connections per client address
  int threads = 16;                 // HTTP worker threads
  double tick_s = 0.2;              // scheduling loop period when idle
  bool run_loop = true;             // false: only explicit Tick() calls schedule (tests)
  // Closed loop (docs/operations.md): DCGM exporters to scrape (the e-th covers
  // the cluster's e-th node), and how often.
  std::vector<std::string> dcgm_urls;
  double dcgm_interval_s = 15;
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

  // Runs raw request bytes through the same framer, router and handlers as
  // the network front, without a socket; returns the response bytes of each
  // request in them (fuzzing, tests).
  std::string ServeRawRequest(std::string_view bytes);

  // Bytes of uploads stored now (tests).
  size_t upload_bytes() const;

  // Re-reads the predictor file (SIGHUP, POST /v1/admin/reload); logs the
  // outcome with `why`, counts it in /metrics; on error the old predictor
  // keeps serving. Thread-safe (closed_loop.cc).
  Status ReloadPredictor(const std::string& why);

 private:
  class Router;
  class UploadGuard;

  Service(const ServiceOptions& opts, std::unique_ptr<PredictionEngine> engine,
          std::unique_ptr<Scheduler> scheduler, std::unique_ptr<JobStore> store, ModelRoots roots);
  void Routes();
  void Loop();
  // One framed request (from HttpFront or ServeRawRequest) -> response bytes.
  std::string Handle(const std::string& request, const std::string& ip, int port, bool close);

  // Handlers: fill `res`, return nothing; errors become {"error": ...}.
  void PostJob(const httplib::Request& req, httplib::Response& res);
  void GetJob(const httplib::Request& req, httplib::Response& res);
  void ListJobs(const httplib::Request& req, httplib::Response& res);
  void DeleteJob(const httplib::Request& req, httplib::Response& res);
  void PostPredict(const httplib::Request& req, httplib::Response& res);
  void GetCluster(const httplib::Request& req, httplib::Response& res);
  void Healthz(const httplib::Request& req, httplib::Response& res);
  // Closed loop (closed_loop.cc): observations, reload, DCGM attribution.
  void PostObservation(const httplib::Request& req, httplib::Response& res);
  void PostReload(const httplib::Request& req, httplib::Response& res);
  void AddObserved(int64_t id, nlohmann::json* job_json);
  Status StartClosedLoop();  // opens the observations table, starts the DCGM scraper
  void OnDcgmScrape(const std::vector<std::vector<DcgmSample>>& pages, const std::vector<bool>& ok);
  Status StoreObservation(const Job& job, Observation o, int* http_status);
  // The token, checked on a request's head before its body is read; "" or
  // the whole 401 reply (HttpFront's HeadCheck).
  std::string CheckHead(const std::string& head);
  // Whether the request bears the deputy token (ServiceOptions::deputy_token).
  bool IsDeputy(const httplib::Request& req) const;
  // Checks made before routing: UTF-8 of path and query, the token, 405.
  // Returns true if it answered the request.
  bool PreRoute(const httplib::Request& req, httplib::Response& res);

  // Request body (JSON naming a file under a model root, or an uploaded ONNX)
  // -> spec, with its networks' files opened in *models (spec.Parts()
  // order). *digest identifies the request for idempotency; *upload holds
  // the upload's reference while needed.
  Result<JobSpec> SpecFromRequest(const httplib::Request& req, std::string* digest, int* http_status,
                                  std::vector<OpenedModel>* models, UploadGuard* upload);

  // Content-addressed uploads: one file per SHA-256 under upload_dir, kept
  // while a request or a queued/running job refers to it.
  Status AcquireUpload(const std::string& sha, std::string_view bytes, int* http_status);
  void ReleaseUpload(const std::string& sha);
  void ReleaseJobUpload(const Job& job);  // the job is no longer queued or running
  Status RestoreUploads();                // at start: references from the store; sweep the rest
  std::string UploadPath(const std::string& sha) const;

  ServiceOptions opts_;
  std::unique_ptr<PredictionEngine> engine_;
  std::unique_ptr<JobStore> store_;
  ModelRoots roots_;
  Metrics metrics_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<HttpFront> front_;
  struct RouteInfo {
    std::string method, pattern;
    std::regex re;  // pattern, compiled once
  };
  std::vector<RouteInfo> routes_;

  mutable std::mutex uploads_mu_;
  std::map<std::string, int64_t> upload_refs_;  // GUARDED_BY(uploads_mu_): sha -> references
  std::map<std::string, size_t> upload_sizes_;  // GUARDED_BY(uploads_mu_): sha -> bytes on disk
  size_t upload_bytes_ = 0;                     // GUARDED_BY(uploads_mu_)

  std::mutex mu_;  // serialises job state transitions and scheduler_
  std::unique_ptr<Scheduler> scheduler_;  // GUARDED_BY(mu_)
  std::condition_variable wake_;
  bool work_pending_ = false;  // GUARDED_BY(mu_)
  std::atomic<bool> stopping_{false};
  std::thread loop_;

  std::unique_ptr<ObservationStore> observations_;
  LoopMetrics loop_metrics_;
  std::unique_ptr<DcgmScraper> dcgm_;  // last: stopped first, it calls into the members above
};

// "HOST:PORT" -> (host, port); port 0 = any free port.
Result<std::pair<std::string, int>> ParseListen(const std::string& listen);

// Blocks SIGINT and SIGTERM in the calling thread, and so in every thread it
// starts afterwards. Call first thing in main: threads started before (an
// OpenMP pool...) would otherwise take the signal and kill the process.
void BlockStopSignals();

// Binds `listen`, prints "listening on HOST:PORT" (the bound port) to stdout,
// serves until SIGINT or SIGTERM, then stops cleanly.
// REQUIRES: BlockStopSignals() ran before any other thread was started.
Status ServeUntilSignal(Service* service, const std::string& listen);

}  // namespace gpucast::service
