// The service's routes, one file per resource:
//   routes_jobs.cc          POST/GET /v1/jobs, GET/DELETE /v1/jobs/{id}
//   routes_predictions.cc   POST /v1/predict
//   routes_observations.cc  POST /v1/jobs/{id}/observations
//   routes_cluster.cc       GET /v1/cluster
//   routes_admin.cc         POST /v1/admin/reload
//   routes_health.cc        GET /healthz, GET /metrics
// A handler decodes the request (request.h, http_util.h), calls one library
// function (jobs.h, predictions.h, closed_loop.h) and encodes its answer.
// Admission (token, method, body) happened before (admission.h). Adding a
// resource: a routes_X.cc with its Route list, and its line in AllRoutes
// (server.cc).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "service/admission.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace gpucast::service {

class Jobs;
class Predictions;
class ClosedLoop;
class Metrics;
class PredictionEngine;
class JobStore;
class GraphAnalyzer;
struct RequestDefaults;

using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

struct Route {
  std::string method;   // GET, POST, DELETE
  std::string pattern;  // regular expression over the path ("/v1/jobs/(\\d+)")
  std::string name;     // metrics label ("GET /v1/jobs/{id}")
  Access access = Access::kJobs;
  bool takes_body = false;
  Handler handle;
};

// What the handlers reach: the service's libraries.
struct RouteContext {
  Jobs* jobs;
  Predictions* predictions;
  ClosedLoop* loop;
  Metrics* metrics;
  PredictionEngine* engine;
  JobStore* store;
  const RequestDefaults* defaults;
};

std::vector<Route> JobRoutes(const RouteContext& ctx);
std::vector<Route> PredictionRoutes(const RouteContext& ctx);
std::vector<Route> ObservationRoutes(const RouteContext& ctx);
std::vector<Route> ClusterRoutes(const RouteContext& ctx);
std::vector<Route> AdminRoutes(const RouteContext& ctx);
std::vector<Route> HealthRoutes(const RouteContext& ctx);

// The parts of `req` a job request is parsed from (request.h).
struct RequestParts;
RequestParts JobRequestParts(const httplib::Request& req);

}  // namespace gpucast::service
