// POST /v1/predict: the job's prediction, no job created.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/http_util.h"
#include "service/predictions.h"
#include "service/request.h"
#include "service/routes.h"

namespace gpucast::service {

namespace {

void Predict(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  int status = 400;
  Result<JobRequest> parsed = ParseJobRequest(JobRequestParts(req), *ctx.defaults, &status);
  if (!parsed.ok()) return SendError(res, status, parsed.message());
  Result<Predicted> pred = ctx.predictions->Run(*parsed, req.body, &status);
  if (!pred.ok()) return SendError(res, status, pred.message());
  nlohmann::json out = SpecToJson(pred->spec);
  AddPredictionJson(pred->prediction, pred->spec.gpu, &out);
  out["cache"] = pred->cache_hit ? "hit" : "miss";
  out["warnings"] = pred->prediction.warnings;  // as predict --json's (an eval-mode export, ...)
  SendJson(res, 200, out);
}

}  // namespace

std::vector<Route> PredictionRoutes(const RouteContext& ctx) {
  return {{"POST", "/v1/predict", "POST /v1/predict", Access::kJobs, true,
           [ctx](const httplib::Request& q, httplib::Response& w) { Predict(ctx, q, w); }}};
}

}  // namespace gpucast::service
