// POST /v1/predict: the job's prediction, no job created.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/http_util.h"
#include "service/predictions.h"
#include "service/request.h"
#include "service/routes.h"

namespace gpucast::service {

namespace {

// X-Gpucast-Deadline-Ms: how long the client waits (job_submit.lua sends its
// timeout_s): reading the deputy's files and the analysis stop by then
// instead of running on for nobody. It can only lower the service's limits.
Result<double> ClientDeadline(const httplib::Request& req) {
  if (!req.has_header("X-Gpucast-Deadline-Ms")) return 0.0;
  const std::string v = req.get_header_value("X-Gpucast-Deadline-Ms");
  if (v.empty() || v.size() > 7 || v.find_first_not_of("0123456789") != std::string::npos || std::stol(v) < 1) {
    return Status::Error("X-Gpucast-Deadline-Ms: want milliseconds, 1 to 9999999, got '" + v.substr(0, 16) + "'");
  }
  return static_cast<double>(std::stol(v)) / 1000.0;
}

void Predict(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  int status = 400;
  Result<double> deadline = ClientDeadline(req);
  if (!deadline.ok()) return SendError(res, 400, deadline.message());
  Result<JobRequest> parsed = ParseJobRequest(JobRequestParts(req), *ctx.defaults, &status);
  if (!parsed.ok()) return SendError(res, status, parsed.message());
  Result<Predicted> pred = ctx.predictions->Run(*parsed, req.body, &status, *deadline);
  if (!pred.ok()) return SendError(res, status, pred.message());
  nlohmann::json out = SpecToJson(pred->spec);
  AddPredictionJson(pred->prediction, pred->spec.gpu, &out, pred->spec.mig, pred->spec.level);
  // Every field `gpucast predict --json` gives (the same function made them),
  // the models as the client named them.
  if (pred->prediction.report) {
    for (const auto& [k, v] : pred->prediction.report->items()) {
      if (k != "models") out[k] = v;
    }
  }
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
