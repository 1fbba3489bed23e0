// POST /v1/models: store an ONNX file by its content (model_store.h); a
// request may then name it "sha256:<hex>". GET /v1/models/sha256:<hex>: is it stored.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/http_util.h"
#include "service/model_store.h"
#include "service/routes.h"

namespace gpucast::service {

std::vector<Route> ModelRoutes(const RouteContext& ctx) {
  if (!ctx.models) return {};
  return {{"POST", "/v1/models", "POST /v1/models", Access::kJobs, true,
           [ctx](const httplib::Request& req, httplib::Response& res) {
             const std::string type = req.get_header_value("Content-Type");
             if (type.rfind("application/octet-stream", 0) != 0) {
               return SendError(res, 415, "POST /v1/models takes the ONNX file as application/octet-stream");
             }
             if (req.body.empty()) return SendError(res, 400, "POST /v1/models: empty body (the ONNX file)");
             bool created = false;
             int status = 500;
             Result<std::string> name = ctx.models->Put(req.body, &created, &status);
             if (!name.ok()) return SendError(res, status, name.message());
             SendJson(res, created ? 201 : 200,
                      {{"model", *name}, {"bytes", req.body.size()}, {"created", created}});
           }},
          {"GET", "/v1/models/(sha256:[0-9a-f]{64})", "GET /v1/models/{digest}", Access::kJobs, false,
           [ctx](const httplib::Request& req, httplib::Response& res) {
             const std::string name = req.matches[1];
             const int64_t size = ctx.models->Size(name);
             if (size < 0) return SendError(res, 404, "no model stored as " + name);
             SendJson(res, 200, {{"model", name}, {"bytes", size}});
           }}};
}

}  // namespace gpucast::service
