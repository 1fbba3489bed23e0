// POST /v1/admin/reload: the predictor file read again (admin token only).
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/closed_loop.h"
#include "service/http_util.h"
#include "service/routes.h"

namespace gpucast::service {

std::vector<Route> AdminRoutes(const RouteContext& ctx) {
  return {{"POST", "/v1/admin/reload", "POST /v1/admin/reload", Access::kAdmin, false,
           [ctx](const httplib::Request&, httplib::Response& res) {
             Status st = ctx.loop->Reload("POST /v1/admin/reload");
             if (!st.ok()) {
               return SendJson(res, 422, {{"error", "predictor not reloaded, the old one keeps serving: " + st.message()},
                                          {"predictor", ctx.engine->Describe()}});
             }
             SendJson(res, 200, {{"reloaded", true}, {"predictor", ctx.engine->Describe()}});
           }}};
}

}  // namespace gpucast::service
