// GET /v1/cluster: the GPUs, what runs where, the policy and the queue.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/http_util.h"
#include "service/jobs.h"
#include "service/routes.h"

namespace gpucast::service {

std::vector<Route> ClusterRoutes(const RouteContext& ctx) {
  return {{"GET", "/v1/cluster", "GET /v1/cluster", Access::kJobs, false,
           [ctx](const httplib::Request&, httplib::Response& res) {
             Result<nlohmann::json> cluster = ctx.jobs->Cluster();
             if (!cluster.ok()) return SendError(res, 500, cluster.message());
             SendJson(res, 200, *cluster);
           }}};
}

}  // namespace gpucast::service
