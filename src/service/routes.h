// The service's routes, one file per resource:
//   routes_jobs.cc          POST/GET /v1/jobs, GET/DELETE /v1/jobs/{id}
//   routes_predictions.cc   POST /v1/predict
//   routes_observations.cc  POST /v1/jobs/{id}/observations
//   routes_cluster.cc       GET /v1/cluster
//   routes_admin.cc         POST /v1/admin/reload
//   routes_health.cc        GET /healthz, GET /metrics
//   routes_k8s.cc           POST /k8s/v1/mutate, /k8s/v1/filter, /k8s/v1/prioritize
//   routes_models.cc        POST /v1/models, GET /v1/models/sha256:{hex}
// A handler decodes the request (request.h, http_util.h), calls one library
// function (jobs.h, predictions.h, closed_loop.h) and encodes its answer.
// Admission (token, method, body) happened before (admission.h). Adding a
// resource: a routes_X.cc with its Route list, and its line in AllRoutes
// (server.cc).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "service/admission.h"
#include "service/k8s_admission.h"
#include "sim/interference.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace gpucast::service {

namespace k8s {
class PodView;
}  // namespace k8s
class Jobs;
class ModelStore;
class Predictions;
class ClosedLoop;
class Metrics;
class PredictionEngine;
class JobStore;
class GraphAnalyzer;
struct RequestDefaults;

// gpucast serve --k8s-*: the Kubernetes admission webhook and scheduler
// extender (docs/kubernetes.md). Off unless `enabled`.
struct K8sConfig {
  bool enabled = false;
  k8s::ShareOptions share;          // --k8s-share, --k8s-headroom (default: the interval's upper end)
  bool fail_open = false;           // --k8s-fail-open: a pod gpucast cannot size is allowed unchanged, with a warning
  std::vector<std::string> nodes;   // --k8s-node: the n-th names the cluster's n-th node
  sim::InterferenceModel physics;   // co-location physics the extender scores by (fitted to the measured pairs)
  // --k8s-share-key-file: signs the webhook's gpucast.io/share, which the
  // extender trusts only when the signature verifies (k8s_share.h).
  std::string share_key;
  // --k8s-watch-pods: the running pods the extender adds to its view (k8s_pods.h); null = off.
  std::shared_ptr<k8s::PodView> pods;
  // --k8s-webhook-auth none: POST /k8s/v1/mutate takes any caller (a managed
  // control plane sends neither a client certificate nor a token); the
  // extender routes keep the certificate or token.
  bool webhook_open = false;
};

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
  const K8sConfig* k8s;
  ModelStore* models = nullptr;  // POST /v1/models (model_store.h)
};

std::vector<Route> JobRoutes(const RouteContext& ctx);
std::vector<Route> PredictionRoutes(const RouteContext& ctx);
std::vector<Route> ObservationRoutes(const RouteContext& ctx);
std::vector<Route> ClusterRoutes(const RouteContext& ctx);
std::vector<Route> AdminRoutes(const RouteContext& ctx);
std::vector<Route> HealthRoutes(const RouteContext& ctx);
std::vector<Route> K8sRoutes(const RouteContext& ctx);  // none unless ctx.k8s->enabled
std::vector<Route> ModelRoutes(const RouteContext& ctx);  // none without ctx.models

// The parts of `req` a job request is parsed from (request.h).
struct RequestParts;
RequestParts JobRequestParts(const httplib::Request& req);

}  // namespace gpucast::service
