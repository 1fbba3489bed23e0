// gpucast's HTTP/JSON submission service (routes in docs/api.md).
//
// Threads: httplib's worker pool runs the handlers; one scheduling thread
// places queued jobs. Accepted jobs are committed to the JobStore before the
// 201 goes out.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "service/engine.h"
#include "service/metrics.h"
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
  std::string token;                // "" = no auth; else mutating routes need "Bearer <token>"
  size_t max_body_bytes = 128u << 20;  // larger bodies get 413
  int read_timeout_s = 5;           // a client that sends nothing for this long is dropped
  int threads = 16;                 // HTTP worker threads
  double tick_s = 0.2;              // scheduling loop period when idle
  bool run_loop = true;             // false: only explicit Tick() calls schedule (tests)
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

 private:
  Service(const ServiceOptions& opts, std::unique_ptr<PredictionEngine> engine,
          std::unique_ptr<Scheduler> scheduler, std::unique_ptr<JobStore> store);
  void Routes();
  void Loop();

  // Handlers: fill `res`, return nothing; errors become {"error": ...}.
  void PostJob(const httplib::Request& req, httplib::Response& res);
  void GetJob(const httplib::Request& req, httplib::Response& res);
  void ListJobs(const httplib::Request& req, httplib::Response& res);
  void DeleteJob(const httplib::Request& req, httplib::Response& res);
  void PostPredict(const httplib::Request& req, httplib::Response& res);
  void GetCluster(const httplib::Request& req, httplib::Response& res);
  void Healthz(const httplib::Request& req, httplib::Response& res);

  // Request body (JSON or an uploaded ONNX) -> spec. *digest identifies the
  // request for idempotency.
  Result<JobSpec> SpecFromRequest(const httplib::Request& req, std::string* digest, int* http_status);
  bool Authorized(const httplib::Request& req, httplib::Response& res);

  ServiceOptions opts_;
  std::unique_ptr<PredictionEngine> engine_;
  std::unique_ptr<JobStore> store_;
  Metrics metrics_;
  std::unique_ptr<httplib::Server> http_;

  std::mutex mu_;  // serialises job state transitions and scheduler_
  std::unique_ptr<Scheduler> scheduler_;  // GUARDED_BY(mu_)
  std::condition_variable wake_;
  bool work_pending_ = false;  // GUARDED_BY(mu_)
  std::atomic<bool> stopping_{false};
  std::thread loop_;
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
