// POST /v1/jobs/{id}/observations: a job's measured utilization.
#include <limits>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/closed_loop.h"
#include "service/http_front.h"
#include "service/http_util.h"
#include "service/routes.h"

namespace gpucast::service {

namespace {

void Observe(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Result<int64_t> id = ParseIntParam("id", req.matches[1], 1, std::numeric_limits<int64_t>::max());
  if (!id.ok()) return SendError(res, 404, "no job " + std::string(req.matches[1]).substr(0, 32));
  const std::string key = req.get_header_value("Idempotency-Key");
  if (key.size() > 255) return SendError(res, 400, "Idempotency-Key: at most 255 bytes");
  const std::string type = req.get_header_value("Content-Type");
  if (!type.empty() && type.rfind("application/json", 0) != 0) {
    return SendError(res, 415, "Content-Type: want application/json");
  }
  if (!IsValidUtf8(req.body)) return SendError(res, 400, "request body: not valid UTF-8");
  Result<Observation> o = ParseObservationJson(req.body);
  if (!o.ok()) return SendError(res, 400, o.message());
  o->idem_key = key;
  int status = 500;
  Result<ClosedLoop::Added> added = ctx.loop->Add(*id, *o, &status);
  if (!added.ok()) return SendError(res, status, added.message());
  // With a key the answer is the observation stored under it (a replay too,
  // as POST /v1/jobs answers with its job: 201, Idempotent-Replayed: true).
  if (added->replayed) res.set_header("Idempotent-Replayed", "true");
  const Observation& shown = added->shown;
  nlohmann::json out = {{"job", *id},
                        {"gpu_util", shown.gpu_util},
                        {"source", shown.source},
                        {"samples", shown.samples},
                        {"predicted_util", added->predicted}};
  if (!shown.gpu.empty()) out["gpu"] = shown.gpu;
  ctx.loop->AddObserved(*id, &out);  // observed_util, observed_samples, share_pct, overuse: the job's so far
  res.set_header("Location", "/v1/jobs/" + std::to_string(*id));
  SendJson(res, 201, out);
}

}  // namespace

std::vector<Route> ObservationRoutes(const RouteContext& ctx) {
  return {{"POST", R"(/v1/jobs/(\d+)/observations)", "POST /v1/jobs/{id}/observations", Access::kJobs, true,
           [ctx](const httplib::Request& q, httplib::Response& w) { Observe(ctx, q, w); }}};
}

}  // namespace gpucast::service
