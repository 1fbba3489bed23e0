// Kubernetes mutating admission for Pods (POST /k8s/v1/mutate), the pure part:
// an AdmissionReview (admission.k8s.io/v1) in, the job a Pod's gpucast.io/*
// annotations describe, and the AdmissionReview answer with an RFC 6902
// JSONPatch out. No files, sockets or clock: the prediction between
// ReadPodJob and BuildMutation is made by the caller through the same
// request -> JobSpec -> prediction path as POST /v1/predict
// (routes_k8s.cc), so the webhook, the API and the CLI give one answer.
//
// Shapes: the Kubernetes API reference, "Dynamic Admission Control"
// (kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/,
// sections "Request" and "Response") and k8s.io/api/admission/v1 types.go.
// docs/kubernetes.md is the user's contract.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace gpucast::service::k8s {

// The pod annotations a user writes (inputs) and gpucast writes (outputs).
inline constexpr const char* kAnnModel = "gpucast.io/model";    // path(s) under --model-root, comma-separated
inline constexpr const char* kAnnBatch = "gpucast.io/batch";    // integer, required
inline constexpr const char* kAnnDims = "gpucast.io/dims";      // "seq=128,heads=12"
inline constexpr const char* kAnnAttrs = "gpucast.io/attrs";    // "loader_workers=2,data_on_gpu=1"
inline constexpr const char* kAnnAmp = "gpucast.io/amp";        // true|false|1|0
inline constexpr const char* kAnnGpu = "gpucast.io/gpu";        // a GPU of the table; else the cluster's
inline constexpr const char* kAnnPredictedUtil = "gpucast.io/predicted-util";
inline constexpr const char* kAnnPredictedUtilInterval = "gpucast.io/predicted-util-interval";
inline constexpr const char* kAnnPredictedMem = "gpucast.io/predicted-mem-mib";
inline constexpr const char* kAnnPredictedMemInterval = "gpucast.io/predicted-mem-interval-mib";
inline constexpr const char* kAnnPredictedGpu = "gpucast.io/predicted-gpu";
// The MIG profile predicted for (canonical, "1g.10gb"), set only for a pod
// that asks for a MIG slice (kResMigPrefix).
inline constexpr const char* kAnnPredictedMig = "gpucast.io/predicted-mig";
// Step time of one training step (one rank's), ms, and its interval "LOW-HIGH";
// set when the predictor has a step model (predict/predict_json.h).
inline constexpr const char* kAnnPredictedStep = "gpucast.io/predicted-step-ms";
inline constexpr const char* kAnnPredictedStepInterval = "gpucast.io/predicted-step-ms-interval";
// "true" when the prediction is unsure (an unmeasured GPU type or a very wide
// interval: PredictResult::unsure), else "false"; gpu-measured likewise.
inline constexpr const char* kAnnPredictionUnsure = "gpucast.io/prediction-unsure";
inline constexpr const char* kAnnPredictedGpuMeasured = "gpucast.io/predicted-gpu-measured";
// Machine-readable, for the scheduler extender: "gpu=A100-80GB,gpus=1,util=43.21,mem_mib=12288".
inline constexpr const char* kAnnShare = "gpucast.io/share";
// KAI Scheduler / Run:ai GPU sharing: the fraction of one GPU, a number in (0, 1)
// (NVIDIA/KAI-Scheduler docs/gpu-sharing/README.md; validated by
// pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go, which
// also refuses it together with an nvidia.com/gpu request or limit).
inline constexpr const char* kAnnKaiFraction = "gpu-fraction";
inline constexpr const char* kAnnKaiFractionContainer = "gpu-fraction-container-name";
// Extended resources (HAMi: Project-HAMi/HAMi README, "nvidia.com/gpucores:
// each vGPU uses N% of the GPU", "nvidia.com/gpumem: device memory of each vGPU, MiB").
inline constexpr const char* kResGpu = "nvidia.com/gpu";
inline constexpr const char* kResGpuCores = "nvidia.com/gpucores";
inline constexpr const char* kResGpuMem = "nvidia.com/gpumem";
// A MIG slice as the NVIDIA device plugin's "mixed" MIG strategy exposes it:
// one extended resource per profile, nvidia.com/mig-<profile> (e.g.
// nvidia.com/mig-1g.10gb: 1). NVIDIA/k8s-device-plugin README, "Configuration
// option details", MIG_STRATEGY / --mig-strategy {none, single, mixed}, and
// the GPU Operator's "GPU Operator with MIG" page. A slice is an isolated
// partition (its own SMs, memory and L2): gpucast predicts the job on it and
// writes no HAMi or KAI share on top (docs/kubernetes.md, "MIG slices").
inline constexpr const char* kResMigPrefix = "nvidia.com/mig-";
// The single MIG strategy exposes each slice as one nvidia.com/gpu and GPU
// Feature Discovery labels the node nvidia.com/gpu.product=<GPU>-MIG-<profile>
// (e.g. A100-SXM4-40GB-MIG-1g.5gb; NVIDIA GPU Operator docs, "GPU Operator
// with MIG" and "Time-Slicing GPUs"): a pod's nodeSelector on that label
// names its slice.
inline constexpr const char* kLabelGpuProduct = "nvidia.com/gpu.product";

// How a pod's share is written into it (gpucast serve --k8s-share).
enum class ShareMode { kHami, kFraction };

// The parts of an AdmissionReview request gpucast reads.
struct AdmissionRequest {
  std::string uid;           // echoed in the answer
  std::string group, version, kind;  // request.kind ("", "v1", "Pod")
  std::string sub_resource;  // request.subResource ("" for the pod itself)
  std::string operation;     // CREATE, UPDATE, DELETE, CONNECT
  std::string ns, name;      // request.namespace, request.name ("" when generateName is used)
  bool dry_run = false;
  nlohmann::json object;     // request.object (null if absent)
};

// Parses an AdmissionReview of apiVersion admission.k8s.io/v1. An error
// (answered 400) names the field: "AdmissionReview: field 'request.uid': want a
// non-empty string of at most 256 bytes".
Result<AdmissionRequest> ParseAdmissionReview(std::string_view body);

// What a pod asks gpucast for.
struct PodJob {
  bool annotated = false;   // it has at least one gpucast.io input annotation
  // The job as POST /v1/predict takes it: {"model" | "models", "batch",
  // "amp", "dims", "attrs", "gpus"} (no "gpu": the caller adds the GPU it
  // predicts for, `gpu` below or the cluster's).
  nlohmann::json request;
  // gpucast.io/gpu as written, else the one GPU type (canonical) that the pod's
  // whole-GPU nvidia.com/gpu.product requires; "" = neither.
  std::string gpu;
  // The GPU types (canonical, first-appearance order) that the whole-GPU
  // products of the pod's nodeSelector / required node affinity allow
  // (NVIDIA-A100-SXM4-80GB, Tesla-T4: GPU feature discovery's nvidia-smi name,
  // spaces as '-'); empty = the pod does not pin the product. One type is also
  // `gpu`; several: the pod is predicted for those of the cluster's types.
  std::vector<std::string> gpu_types;
  std::string gpu_types_where;  // what named them, for messages ("node selector nvidia.com/gpu.product=...")
  int container = -1;       // index in spec.containers of the one container asking for nvidia.com/gpu
  std::string container_name;
  int64_t gpus = 0;         // its nvidia.com/gpu, >= 1 (a MIG slice: 1)
  // A MIG slice (nvidia.com/mig-<profile>: 1): the profile as the resource
  // names it, also in `request` as "mig"; "" = whole GPUs.
  std::string mig;
  std::string mig_resource;  // "nvidia.com/mig-1g.10gb"
};

// Reads the gpucast.io/* annotations and the GPU container of `pod` (a v1
// Pod object). A pod without input annotations gives annotated = false and
// no error. Errors are the user's to fix and name the annotation or the
// container: "annotation gpucast.io/batch: want an integer, got 'big'". A
// container asking for nvidia.com/mig-<profile> is the GPU container of a MIG
// slice: a profile no GPU of the table has ("nvidia.com/mig-7g.99gb",
// "nvidia.com/mig-"), a count other than 1, or a MIG resource beside
// nvidia.com/gpu or another MIG resource is an error naming the container and
// the resource. A container asking for nvidia.com/gpu of a pod whose
// nodeSelector has nvidia.com/gpu.product=<GPU>-MIG-<profile> (the single
// strategy) is one slice of that GPU and profile likewise, and so is one whose
// required node affinity (terms ORed, expressions ANDed) allows only products
// of that slice; products of several slices, or of a slice and a whole GPU, a
// selector the affinity does not allow, or an affinity past its bounds (64
// terms, 64 expressions a term, 256 values, 63-character values) are errors
// naming the field or the products (docs/kubernetes.md, "Node affinity").
// Whole-GPU products (no -MIG-) are the GPU types the pod's node may have
// (`gpu_types`, resolved as CanonicalGpuName resolves nvidia-smi names; a
// -SHARED suffix of time-slicing is the same GPU): one type is the pod's `gpu`;
// a product gpucast's GPU table does not have, or a gpucast.io/gpu that is none
// of the types, is an error naming the label value (docs/kubernetes.md,
// "Mixed clusters").
Result<PodJob> ReadPodJob(const nlohmann::json& pod);

// The prediction a share is made from (per GPU of the job).
struct Sizing {
  std::string gpu;               // canonical GPU name predicted for
  std::string mig;               // canonical MIG profile predicted on ("" = the whole GPU)
  double util = 0;               // predicted utilization, percent
  double util_lo = 0, util_hi = 0;
  double mem_mib = 0;            // predicted GPU memory, MiB; NaN = the predictor has no memory model
  double mem_lo = 0, mem_hi = 0;
  double capacity_mib = 0;       // the GPU's memory, MiB (> 0); a MIG slice: the slice's
  double step_ms = std::nan(""), step_lo = std::nan(""), step_hi = std::nan("");  // NaN: no step model
  std::optional<bool> unsure, gpu_measured;  // unset: the engine did not say
};

// The prediction's step time and unsure / gpu_measured flags into `s`
// (service Prediction, job.h).
template <typename P>
void StepFromPrediction(const P& p, Sizing* s) {
  if (p.step_ms && p.step_lo && p.step_hi) {
    s->step_ms = *p.step_ms;
    s->step_lo = *p.step_lo;
    s->step_hi = *p.step_hi;
  }
  s->unsure = p.unsure;
  s->gpu_measured = p.gpu_measured;
}

// The prediction's GPU memory per GPU, MiB, into `s` (NaN when it has none).
// `P` is the service's Prediction (job.h), which carries it as optional
// mem_mib / mem_lo / mem_hi, filled by the engine from PredictResult::memory,
// once the service work that adds them is merged; a Prediction without those
// members, or a predictor without a memory model, gives NaN, and BuildMutation
// then writes no nvidia.com/gpumem and warns.
template <typename P>
void MemoryFromPrediction(const P& p, Sizing* s) {
  s->mem_mib = s->mem_lo = s->mem_hi = std::nan("");
  if constexpr (requires { p.mem_mib.value(); p.mem_lo.value(); p.mem_hi.value(); }) {
    if (p.mem_mib && p.mem_lo && p.mem_hi) {
      s->mem_mib = *p.mem_mib;
      s->mem_lo = *p.mem_lo;
      s->mem_hi = *p.mem_hi;
    }
  }
}

struct ShareOptions {
  ShareMode mode = ShareMode::kHami;
  // The utilization a share is sized by: the interval's upper end when
  // `headroom_interval` (the default: a cap at the point prediction slows a
  // job whose real utilization is above it, and the interval is where it
  // may be), else the point prediction plus `headroom_points`.
  double headroom_points = 0;
  bool headroom_interval = true;
};

struct Mutation {
  nlohmann::json patch = nlohmann::json::array();  // RFC 6902 operations
  std::vector<std::string> warnings;               // shown by kubectl ("Warning: ...")
  std::string summary;                             // what was set, one line
};

// The patch that gives `pod` its share (`job` from ReadPodJob on the same
// pod). One GPU: with kHami, nvidia.com/gpucores = ceil(sized utilization),
// 1..100, and nvidia.com/gpumem = ceil(memory high end) in the container's
// limits (and requests, where it has them); with kFraction, the KAI
// "gpu-fraction" annotation = max(sized utilization / 100, memory high end /
// capacity) rounded up to 0.01, and nvidia.com/gpu removed from the
// container (KAI refuses both); a fraction of 1.00 or more keeps the whole
// GPU. Several GPUs (data parallel): whole GPUs, nvidia.com/gpucores 100
// with kHami, nothing on the container with kFraction. Always the
// gpucast.io/predicted-* and gpucast.io/share annotations. Map members are
// created where absent; keys are JSON-Pointer escaped (~0, ~1).
// Error (the pod is denied): the predicted memory itself is above the GPU's.
//
// A MIG slice (job.mig set; `sizing` predicted on it, capacity_mib the
// slice's memory): no container resource is changed (the slice is already an
// isolated partition, so neither HAMi's gpucores/gpumem nor KAI's
// gpu-fraction applies); the gpucast.io/predicted-* annotations, plus
// gpucast.io/predicted-mig, and gpucast.io/share with "mig=<profile>". Denied,
// as a whole GPU, when the memory interval's high end is above the slice's.
//
// `per_gpu` (a mixed cluster's pod that names no GPU: one Sizing per GPU type
// of the cluster whose memory it fits): `sizing` is then CombinedSizing of
// them, so that the share written covers the pod on whichever type it lands;
// the gpucast.io/predicted-* annotations list each type ("A100-80GB=52.27,H100=40.10")
// and gpucast.io/share has one ';'-separated entry per type.
Result<Mutation> BuildMutation(const nlohmann::json& pod, const PodJob& job, const Sizing& sizing,
                               const ShareOptions& options, const std::vector<Sizing>& per_gpu = {});

// One Sizing covering each of `per_gpu` (non-empty, each fitting its GPU's
// memory): the largest utilization (point, interval ends) and memory, and a
// capacity at which the memory's share of the GPU is the largest of theirs.
Sizing CombinedSizing(const std::vector<Sizing>& per_gpu);

// RFC 6901: "~" -> "~0", "/" -> "~1".
std::string JsonPointerEscape(std::string_view key);

// The AdmissionReview answers (apiVersion admission.k8s.io/v1, kind
// AdmissionReview, response.uid = uid). `mutation` may be null (allowed
// unchanged); a non-empty patch is sent base64 with patchType JSONPatch.
nlohmann::json AllowReview(const std::string& uid, const Mutation* mutation,
                           const std::vector<std::string>& warnings = {});
// allowed: false, status {code, message}: kubectl shows `admission webhook
// "..." denied the request: <message>`.
nlohmann::json DenyReview(const std::string& uid, const std::string& message, int code = 403);

// Standard base64 (RFC 4648, with padding), as the API server decodes the patch.
std::string Base64(std::string_view bytes);

}  // namespace gpucast::service::k8s
