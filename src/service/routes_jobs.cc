// POST /v1/jobs, GET /v1/jobs, GET /v1/jobs/{id}, DELETE /v1/jobs/{id}.
#include <limits>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/closed_loop.h"
#include "service/http_util.h"
#include "service/jobs.h"
#include "service/request.h"
#include "service/routes.h"

namespace gpucast::service {

using nlohmann::json;

RequestParts JobRequestParts(const httplib::Request& req) {
  RequestParts in;
  in.content_type = req.get_header_value("Content-Type");
  in.params.insert(req.params.begin(), req.params.end());
  in.body = req.body;
  if (req.has_header("X-Gpucast-Read-As")) in.read_as = req.get_header_value("X-Gpucast-Read-As");
  return in;
}

namespace {

// A job as a client sees it: its fields, observations and, while queued, why it waits.
json Shown(const RouteContext& ctx, const Job& job, const std::string& pending) {
  json j = JobToJson(job);
  ctx.loop->AddObserved(job.id, &j);
  if (job.state == JobState::kQueued) j["pending"] = pending;
  return j;
}

void Submit(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  int status = 400;
  Result<JobRequest> parsed = ParseJobRequest(JobRequestParts(req), *ctx.defaults, &status);
  if (!parsed.ok()) return SendError(res, status, parsed.message());
  Result<Jobs::Submitted> done = ctx.jobs->Submit(*parsed, req.body, req.get_header_value("Idempotency-Key"), &status);
  if (!done.ok()) return SendError(res, status, done.message());
  if (done->replayed) res.set_header("Idempotent-Replayed", "true");
  res.set_header("Location", "/v1/jobs/" + std::to_string(done->job.id));
  SendJson(res, 201, Shown(ctx, done->job, done->pending));
}

void Get(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Result<int64_t> id = ParseIntParam("id", req.matches[1], 1, std::numeric_limits<int64_t>::max());
  if (!id.ok()) return SendError(res, 404, "no job " + std::string(req.matches[1]).substr(0, 32));
  auto job = ctx.jobs->Get(*id);
  if (!job.ok()) return SendError(res, 500, job.message());
  if (!*job) return SendError(res, 404, "no job " + std::to_string(*id));
  SendJson(res, 200, Shown(ctx, (*job)->first, (*job)->second));
}

void List(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  std::optional<JobState> state;
  int64_t after = 0, limit = 100;
  for (const auto& [key, value] : req.params) {
    // The last of two values won silently; refused as the upload's query string refuses it.
    if (req.params.count(key) > 1) {
      return SendError(res, 400, "parameter '" + gpucast::service::Shown(key) + "': given more than once");
    }
    if (key == "state") {
      state = ParseJobState(value);
      if (!state) {
        return SendError(res, 400, "parameter 'state': want queued, running, done or cancelled, got '" +
                                       gpucast::service::Shown(value) + "'");
      }
    } else if (key == "after" || key == "limit") {
      Result<int64_t> v = key == "after" ? ParseIntParam(key, value, 0, std::numeric_limits<int64_t>::max())
                                         : ParseIntParam(key, value, 1, 1000);
      if (!v.ok()) return SendError(res, 400, v.message());
      (key == "after" ? after : limit) = *v;
    } else {
      return SendError(res, 400, "unknown query parameter '" + gpucast::service::Shown(key) +
                                     "' (known: state, after, limit)");
    }
  }
  auto jobs = ctx.jobs->List(state, after, limit);
  if (!jobs.ok()) return SendError(res, 500, jobs.message());
  json out = {{"jobs", json::array()}};
  for (const auto& [job, pending] : *jobs) out["jobs"].push_back(Shown(ctx, job, pending));
  // Page with ?after=<next_after> while it is not null.
  out["next_after"] = static_cast<int64_t>(jobs->size()) == limit ? json(jobs->back().first.id) : json(nullptr);
  SendJson(res, 200, out);
}

void Cancel(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Result<int64_t> id = ParseIntParam("id", req.matches[1], 1, std::numeric_limits<int64_t>::max());
  if (!id.ok()) return SendError(res, 404, "no job " + std::string(req.matches[1]).substr(0, 32));
  int status = 500;
  Result<Job> job = ctx.jobs->Cancel(*id, &status);
  if (!job.ok()) return SendError(res, status, job.message());
  SendJson(res, 200, JobToJson(*job));
}

}  // namespace

std::vector<Route> JobRoutes(const RouteContext& ctx) {
  using R = const httplib::Request&;
  using W = httplib::Response&;
  return {
      {"POST", "/v1/jobs", "POST /v1/jobs", Access::kJobs, true, [ctx](R q, W w) { Submit(ctx, q, w); }},
      {"GET", "/v1/jobs", "GET /v1/jobs", Access::kJobs, false, [ctx](R q, W w) { List(ctx, q, w); }},
      {"GET", R"(/v1/jobs/(\d+))", "GET /v1/jobs/{id}", Access::kJobs, false, [ctx](R q, W w) { Get(ctx, q, w); }},
      {"DELETE", R"(/v1/jobs/(\d+))", "DELETE /v1/jobs/{id}", Access::kJobs, false,
       [ctx](R q, W w) { Cancel(ctx, q, w); }},
  };
}

}  // namespace gpucast::service
