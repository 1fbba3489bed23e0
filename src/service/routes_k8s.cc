// The Kubernetes routes (docs/kubernetes.md):
//   POST /k8s/v1/mutate      mutating admission webhook for Pods (AdmissionReview v1)
//   POST /k8s/v1/filter      scheduler extender: ExtenderArgs -> ExtenderFilterResult
//   POST /k8s/v1/prioritize  scheduler extender: ExtenderArgs -> HostPriorityList
// The webhook turns a pod's gpucast.io/* annotations into the JSON job of
// POST /v1/predict and predicts it through the same parsing and prediction
// path (request.h ParseJobRequest, predictions.h Predictions::Run), so the
// pod gets the answer the API and the CLI give. The pure parts are
// k8s_admission.h and k8s_extender.h. Admission (a client certificate or the
// job token) happened before (admission.h, Access::kKubernetes).
#include <cmath>
#include <cstdio>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "service/http_util.h"
#include "service/job.h"
#include "service/jobs.h"
#include "service/k8s_admission.h"
#include "service/k8s_extender.h"
#include "service/predictions.h"
#include "service/request.h"
#include "service/routes.h"

namespace gpucast::service {

namespace {

using nlohmann::json;

// "pod ml/resnet50-train" (a generateName pod: "pod ml/resnet50-*").
std::string PodName(const k8s::AdmissionRequest& r) {
  std::string name = r.name;
  if (name.empty() && r.object.is_object()) {
    const json& meta = r.object.value("metadata", json::object());
    if (meta.is_object() && meta.contains("name") && meta["name"].is_string()) name = meta["name"];
    if (name.empty() && meta.is_object() && meta.contains("generateName") && meta["generateName"].is_string()) {
      name = meta["generateName"].get<std::string>() + "*";
    }
  }
  return "pod " + Shown(r.ns, 63) + "/" + Shown(name, 253);
}

void Mutate(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Status body_ok = CheckJsonBody(req.body, ctx.defaults->max_json_depth);
  if (!body_ok.ok()) return SendError(res, 400, body_ok.message());
  Result<k8s::AdmissionRequest> review = k8s::ParseAdmissionReview(req.body);
  if (!review.ok()) return SendError(res, 400, review.message());
  const k8s::AdmissionRequest& r = *review;
  auto answer = [&](const json& j) { SendJson(res, 200, j); };
  if (r.kind != "Pod" || !r.group.empty() || !r.sub_resource.empty()) {
    return answer(k8s::AllowReview(
        r.uid, nullptr,
        {"gpucast mutates Pods only, not " + Shown(r.group.empty() ? r.kind : r.group + "/" + r.kind) +
         (r.sub_resource.empty() ? "" : " (subresource " + Shown(r.sub_resource) + ")") +
         ": check the MutatingWebhookConfiguration's rules"}));
  }
  if (r.operation != "CREATE") return answer(k8s::AllowReview(r.uid, nullptr));
  if (!r.object.is_object()) {
    return SendError(res, 400, "AdmissionReview: field 'request.object': want the Pod being created");
  }
  const std::string who = PodName(r);
  // A pod gpucast cannot size is refused with the reason (or let through, with it, by --k8s-fail-open).
  auto refuse = [&](const std::string& why) {
    const std::string msg = "gpucast: " + who + ": " + why;
    std::fprintf(stderr, "gpucast serve: k8s: %s: %s%s\n", ForLog(who).c_str(), ForLog(why, 1024).c_str(),
                 ctx.k8s->fail_open ? " (allowed unchanged: --k8s-fail-open)" : " (denied)");
    if (ctx.k8s->fail_open) {
      return answer(k8s::AllowReview(r.uid, nullptr, {msg + " (allowed unchanged, without a gpucast share)"}));
    }
    answer(k8s::DenyReview(r.uid, msg));
  };
  Result<k8s::PodJob> job = k8s::ReadPodJob(r.object);
  if (!job.ok()) return refuse(job.message());
  if (!job->annotated) return answer(k8s::AllowReview(r.uid, nullptr));

  // The POST /v1/predict path, on the job the annotations describe.
  json request = job->request;
  if (!job->gpu.empty()) request["gpu"] = job->gpu;
  const std::string text = Dump(request);
  RequestParts parts;
  parts.content_type = "application/json";
  parts.body = text;
  int status = 400;
  Result<JobRequest> parsed = ParseJobRequest(parts, *ctx.defaults, &status);
  if (!parsed.ok()) return refuse("gpucast.io annotations: " + parsed.message());
  Result<Predicted> pred = ctx.predictions->Run(*parsed, text, &status);
  if (!pred.ok()) return refuse(pred.message());

  k8s::Sizing s;
  s.gpu = pred->spec.gpu;
  s.util = pred->prediction.util;
  s.util_lo = pred->prediction.util_lo;
  s.util_hi = pred->prediction.util_hi;
  k8s::MemoryFromPrediction(pred->prediction, &s);
  s.capacity_mib = GpuCapacityMib(s.gpu);
  if (s.capacity_mib <= 0) return refuse("GPU " + s.gpu + " has no memory size in gpucast's GPU table");
  Result<k8s::Mutation> m = k8s::BuildMutation(r.object, *job, s, ctx.k8s->share);
  if (!m.ok()) return refuse(m.message());
  std::fprintf(stderr, "gpucast serve: k8s: %s: %s batch %lld on %s x%lld: predicted %.2f%% -> %s\n",
               ForLog(who).c_str(), ForLog(job->request.contains("model") ? job->request["model"].get<std::string>()
                                                                          : job->request["models"].dump())
                                        .c_str(),
               static_cast<long long>(pred->spec.batch), s.gpu.c_str(), static_cast<long long>(job->gpus), s.util,
               m->summary.c_str());
  // The graphs' warnings (an eval-mode export predicts too little memory) reach kubectl too.
  std::vector<std::string> warnings;
  for (const std::string& w : pred->prediction.warnings) warnings.push_back("gpucast: " + w);
  answer(k8s::AllowReview(r.uid, &*m, warnings));
}

// The verdict on every node offered; errors: 400 malformed arguments or a
// malformed gpucast.io/share (as the extender's Error for filter).
struct Verdicts {
  k8s::ExtenderArgs args;
  std::vector<k8s::NodeVerdict> v;
};
Result<Verdicts> Decide(const RouteContext& ctx, const std::string& body, int* http_status) {
  *http_status = 400;
  RETURN_IF_ERROR(CheckJsonBody(body, ctx.defaults->max_json_depth));
  Verdicts out;
  ASSIGN_OR_RETURN(out.args, k8s::ParseExtenderArgs(body));
  ASSIGN_OR_RETURN(k8s::PodShare share, k8s::ReadPodShare(out.args.pod));
  *http_status = 500;
  ASSIGN_OR_RETURN(auto nodes, k8s::NodesFromCluster(ctx.jobs->ClusterJson(), ctx.k8s->nodes));
  for (const std::string& name : out.args.node_names) {
    auto it = nodes.find(name);
    out.v.push_back(k8s::Evaluate(share, it == nodes.end() ? nullptr : &it->second, ctx.k8s->physics));
  }
  return out;
}

void Filter(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  int status = 400;
  Result<Verdicts> d = Decide(ctx, req.body, &status);
  if (!d.ok()) return SendError(res, status, d.message());
  SendJson(res, 200, k8s::FilterResult(d->args, d->v));
}

void Prioritize(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  int status = 400;
  Result<Verdicts> d = Decide(ctx, req.body, &status);
  if (!d.ok()) return SendError(res, status, d.message());
  SendJson(res, 200, k8s::PrioritizeResult(d->args, d->v));
}

}  // namespace

std::vector<Route> K8sRoutes(const RouteContext& ctx) {
  if (!ctx.k8s || !ctx.k8s->enabled) return {};
  return {{"POST", "/k8s/v1/mutate", "POST /k8s/v1/mutate", Access::kKubernetes, true,
           [ctx](const httplib::Request& q, httplib::Response& w) { Mutate(ctx, q, w); }},
          {"POST", "/k8s/v1/filter", "POST /k8s/v1/filter", Access::kKubernetes, true,
           [ctx](const httplib::Request& q, httplib::Response& w) { Filter(ctx, q, w); }},
          {"POST", "/k8s/v1/prioritize", "POST /k8s/v1/prioritize", Access::kKubernetes, true,
           [ctx](const httplib::Request& q, httplib::Response& w) { Prioritize(ctx, q, w); }}};
}

}  // namespace gpucast::service
