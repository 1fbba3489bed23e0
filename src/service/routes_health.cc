// GET /healthz, GET /metrics: public (no token), GET and HEAD only, no body.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/closed_loop.h"
#include "service/http_util.h"
#include "service/metrics.h"
#include "service/routes.h"
#include "service/store.h"

namespace gpucast::service {

std::vector<Route> HealthRoutes(const RouteContext& ctx) {
  return {
      {"GET", "/healthz", "GET /healthz", Access::kPublic, false,
       [ctx](const httplib::Request&, httplib::Response& res) {
         Result<std::vector<Job>> probe = ctx.store->List(std::nullopt, 0, 1);
         if (!probe.ok()) return SendError(res, 503, "database not readable");
         SendJson(res, 200, {{"status", "ok"}, {"predictor", ctx.engine->Describe()}});
       }},
      {"GET", "/metrics", "GET /metrics", Access::kPublic, false,
       [ctx](const httplib::Request&, httplib::Response& res) {
         res.status = 200;
         res.set_content(ctx.metrics->Render() + ctx.loop->metrics().Render(), "text/plain; version=0.0.4");
       }},
  };
}

}  // namespace gpucast::service
