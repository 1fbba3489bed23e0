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
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "features/gpu_specs.h"
#include "service/analysis.h"
#include "service/http_util.h"
#include "service/job.h"
#include "service/jobs.h"
#include "service/k8s_admission.h"
#include "service/k8s_extender.h"
#include "service/k8s_pods.h"
#include "service/k8s_share.h"
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

  // The analysis, if the graph is not cached, runs as the webhook's: its own
  // threads and queue, a deadline under the API server's timeout, and
  // round-robin by namespace (analysis.h).
  AnalysisClassScope webhook_analysis({r.ns, true});
  // The POST /v1/predict path, on the job the annotations describe, for `gpu`
  // (the pod's gpucast.io/gpu, or "" for the cluster's).
  int64_t batch = 0;
  // The graphs' and the predictions' warnings (an eval-mode export predicts
  // too little memory, an unmeasured GPU) reach kubectl too, each once.
  std::vector<std::string> warnings;
  auto predict_for = [&](const std::string& gpu) -> Result<k8s::Sizing> {
    json request = job->request;
    if (!gpu.empty()) request["gpu"] = gpu;
    const std::string text = Dump(request);
    RequestParts parts;
    parts.content_type = "application/json";
    parts.body = text;
    int status = 400;
    Result<JobRequest> parsed = ParseJobRequest(parts, *ctx.defaults, &status);
    if (!parsed.ok()) return parsed.status().Prefixed("gpucast.io annotations");
    Result<Predicted> pred = ctx.predictions->Run(*parsed, text, &status);
    if (!pred.ok()) return pred.status();
    batch = pred->spec.batch;
    for (const std::string& w : pred->prediction.warnings)
      if (std::find(warnings.begin(), warnings.end(), "gpucast: " + w) == warnings.end())
        warnings.push_back("gpucast: " + w);
    k8s::Sizing s;
    s.gpu = pred->spec.gpu;
    s.util = pred->prediction.util;
    s.util_lo = pred->prediction.util_lo;
    s.util_hi = pred->prediction.util_hi;
    k8s::MemoryFromPrediction(pred->prediction, &s);
    k8s::StepFromPrediction(pred->prediction, &s);
    s.capacity_mib = GpuCapacityMib(s.gpu);
    if (!pred->spec.mig.empty()) {
      // The slice predicted on (the engine resolved it the same way): its canonical name and its memory.
      Result<GpuSpec> slice = ResolveGpu(s.gpu, pred->spec.mig);
      if (!slice.ok()) return slice.status();
      s.mig = slice->mig_profile;
      s.capacity_mib = slice->memory_gib * 1024;
    }
    if (s.capacity_mib <= 0) return Status::Error("GPU " + s.gpu + " has no memory size in gpucast's GPU table");
    return s;
  };
  // On a mixed cluster a pod that names no GPU is sized for each type (the
  // extender then uses the share of the type of the node it weighs), leaving
  // out the types whose memory the job does not fit.
  // A pod whose nvidia.com/gpu.product allows several GPU types (k8s_admission.h
  // PodJob::gpu_types; one type is its gpucast.io/gpu) is predicted for those of
  // the cluster's types, and denied when the cluster has none of them.
  auto allowed = [&](const std::string& gpu) {
    if (job->gpu_types.empty()) return true;
    Result<std::string> c = CanonicalGpuName(gpu);
    return c.ok() && std::find(job->gpu_types.begin(), job->gpu_types.end(), *c) != job->gpu_types.end();
  };
  auto none_allowed = [&](const std::vector<std::string>& cluster) {
    std::string want, all;
    for (const std::string& t : job->gpu_types) want += (want.empty() ? "" : ", ") + t;
    for (const std::string& t : cluster) all += (all.empty() ? "" : ", ") + t;
    return refuse(job->gpu_types_where + ": allows the GPU types " + want + ", none of which the cluster has (" +
                  all + "): no node can take the pod");
  };
  std::vector<k8s::Sizing> per_gpu;
  k8s::Sizing s;
  if (job->gpu.empty() && !ctx.defaults->cluster_gpus.empty()) {
    std::string first_error;
    // A MIG slice is predicted for the cluster's types that have its profile.
    std::vector<std::string> types;
    for (const std::string& gpu : ctx.defaults->cluster_gpus)
      if (allowed(gpu) && (job->mig.empty() || ResolveGpu(gpu, job->mig).ok())) types.push_back(gpu);
    if (!std::any_of(ctx.defaults->cluster_gpus.begin(), ctx.defaults->cluster_gpus.end(), allowed)) {
      return none_allowed(ctx.defaults->cluster_gpus);
    }
    if (types.empty()) {
      std::string all;
      for (const std::string& t : ctx.defaults->cluster_gpus) all += (all.empty() ? "" : ", ") + t;
      return refuse("container " + Shown(job->container_name) + ": " + job->mig_resource + ": no GPU type of the " +
                    "cluster (" + all + ") has MIG profile '" + job->mig + "'");
    }
    for (const std::string& gpu : types) {
      Result<k8s::Sizing> one = predict_for(gpu);
      if (!one.ok()) return refuse(one.message());
      Result<k8s::Mutation> fits = k8s::BuildMutation(r.object, *job, *one, ctx.k8s->share);
      if (!fits.ok()) {
        if (first_error.empty()) first_error = fits.message();
        continue;
      }
      per_gpu.push_back(*one);
    }
    if (per_gpu.empty()) return refuse(first_error);
    s = k8s::CombinedSizing(per_gpu);
  } else {
    // A slice the job's GPU does not have: the pod's resource is named (the API answers 422 with the same words).
    const std::string gpu = job->gpu.empty() ? ctx.defaults->gpu : job->gpu;
    if (job->gpu.empty() && !gpu.empty() && !allowed(gpu)) return none_allowed({gpu});
    if (!job->mig.empty() && !gpu.empty() && CanonicalGpuName(gpu).ok()) {
      if (Result<GpuSpec> slice = ResolveGpu(gpu, job->mig); !slice.ok()) {
        return refuse("container " + Shown(job->container_name) + ": " + job->mig_resource + ": " + slice.message());
      }
    }
    Result<k8s::Sizing> one = predict_for(job->gpu);
    if (!one.ok()) return refuse(one.message());
    s = *one;
  }
  Result<k8s::Mutation> m = k8s::BuildMutation(r.object, *job, s, ctx.k8s->share, per_gpu);
  if (!m.ok()) return refuse(m.message());
  // The share's signature over the pod as patched: the extender trusts the share only if it verifies.
  json patched = r.object.patch(m->patch);
  m->patch.push_back({{"op", "add"},
                      {"path", "/metadata/annotations/" + k8s::JsonPointerEscape(k8s::kAnnShareSignature)},
                      {"value", k8s::ShareSignature(ctx.k8s->share_key, k8s::ShareSignedText(r.ns, patched))}});
  std::fprintf(stderr, "gpucast serve: k8s: %s: %s batch %lld on %s%s%s x%lld: predicted %.2f%% -> %s\n",
               ForLog(who).c_str(), ForLog(job->request.contains("model") ? job->request["model"].get<std::string>()
                                                                          : job->request["models"].dump())
                                        .c_str(),
               static_cast<long long>(batch), per_gpu.size() > 1 ? "each GPU type" : s.gpu.c_str(),
               s.mig.empty() ? "" : " MIG ", s.mig.c_str(),
               static_cast<long long>(job->gpus), s.util, m->summary.c_str());
  answer(k8s::AllowReview(r.uid, &*m, warnings));
}

// The verdict on every node offered; errors: 400 malformed arguments or a
// malformed gpucast.io/share (as the extender's Error for filter).
struct Decided {
  k8s::ExtenderArgs args;
  k8s::Verdicts v;
};
Result<Decided> Decide(const RouteContext& ctx, const std::string& body, int* http_status) {
  *http_status = 400;
  RETURN_IF_ERROR(CheckJsonBody(body, ctx.defaults->max_json_depth));
  Decided out;
  ASSIGN_OR_RETURN(out.args, k8s::ParseExtenderArgs(body));
  ASSIGN_OR_RETURN(k8s::PodShare share, k8s::ReadPodShare(out.args.pod));
  const json& meta = out.args.pod["metadata"];
  if (share.sized && !k8s::ShareVerifies(ctx.k8s->share_key, meta.value("namespace", std::string()), out.args.pod)) {
    // A share gpucast did not sign for this pod (written or copied by the pod's owner): fail every node.
    k8s::NodeVerdict refused;
    refused.reason = std::string("gpucast: the pod's ") + k8s::kAnnShare + " is not gpucast's (" +
                     k8s::kAnnShareSignature + " missing or not for this pod); recreate the pod so that gpucast's "
                     "webhook sizes it";
    out.v.distinct = {refused};
    out.v.of.assign(out.args.size(), 0);
    return out;
  }
  *http_status = 500;
  ASSIGN_OR_RETURN(auto nodes, k8s::NodesFromCluster(ctx.jobs->ClusterJson(), ctx.k8s->nodes));
  if (ctx.k8s->pods) {
    if (std::optional<std::vector<k8s::RunningPod>> pods = ctx.k8s->pods->Pods()) k8s::AddPods(&nodes, *pods);
  }
  out.v = k8s::EvaluateAll(share, out.args, nodes, ctx.k8s->physics);
  return out;
}

// An answer is at most the request's size plus this (FilterResult).
constexpr size_t kReplySlack = 64 << 10;

// The extender's two verbs: decide every node for the pod, then answer as `verb`
// (k8s::FilterResult or k8s::PrioritizeResult), failing nodes left out past the size cap.
using ExtenderAnswer = std::string (*)(const k8s::ExtenderArgs&, const k8s::Verdicts&, size_t, size_t*);

void Extend(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res, ExtenderAnswer answer,
            const char* verb) {
  int status = 400;
  Result<Decided> d = Decide(ctx, req.body, &status);
  if (!d.ok()) return SendError(res, status, d.message());
  size_t omitted = 0;
  std::string body = answer(d->args, d->v, req.body.size() + kReplySlack, &omitted);
  if (omitted > 0) {
    std::fprintf(stderr, "gpucast serve: k8s: %s: %zu failing node(s) left out of the answer to keep it within the "
                         "request's size + 64 KiB\n", verb, omitted);
  }
  res.status = 200;
  res.set_content(std::move(body), "application/json");
}

}  // namespace

std::vector<Route> K8sRoutes(const RouteContext& ctx) {
  if (!ctx.k8s || !ctx.k8s->enabled) return {};
  // --k8s-webhook-auth none: the webhook takes any caller (managed control planes send no credential).
  const Access webhook = ctx.k8s->webhook_open ? Access::kPublic : Access::kKubernetes;
  return {{"POST", "/k8s/v1/mutate", "POST /k8s/v1/mutate", webhook, true,
           [ctx](const httplib::Request& q, httplib::Response& w) { Mutate(ctx, q, w); }},
          {"POST", "/k8s/v1/filter", "POST /k8s/v1/filter", Access::kKubernetes, true,
           [ctx](const httplib::Request& q, httplib::Response& w) { Extend(ctx, q, w, k8s::FilterResult, "filter"); }},
          {"POST", "/k8s/v1/prioritize", "POST /k8s/v1/prioritize", Access::kKubernetes, true,
           [ctx](const httplib::Request& q, httplib::Response& w) { Extend(ctx, q, w, k8s::PrioritizeResult, "prioritize"); }}};
}

}  // namespace gpucast::service
