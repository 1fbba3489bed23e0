#include "service/k8s_admission.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "features/gpu_specs.h"
#include "service/http_util.h"

namespace gpucast::service::k8s {

using nlohmann::json;

namespace {

constexpr size_t kMaxUid = 256;
constexpr size_t kMaxAnnotationValue = 4096;  // of one gpucast.io input annotation
constexpr int64_t kMaxGpusPerPod = 1024;

// Client text quoted in a message: its first 64 bytes (Shown) with control bytes as '?' (NoControlBytes).
std::string Printable(std::string_view s) { return NoControlBytes(Shown(std::string(s))); }

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitCommas(std::string_view s) {
  std::vector<std::string_view> out;
  for (;;) {
    size_t c = s.find(',');
    out.push_back(Trim(s.substr(0, c)));
    if (c == std::string_view::npos) return out;
    s.remove_prefix(c + 1);
  }
}

// A decimal integer (optional sign not accepted), at most 18 digits.
bool ParseCount(std::string_view s, int64_t* v) {
  if (s.empty() || s.size() > 18) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size() && *v >= 0;
}

// Members of `j` that are objects (null otherwise).
const json* Member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

Status ReviewError(const std::string& field, const std::string& want) {
  return Status::Error("AdmissionReview: field '" + field + "': want " + want);
}

Result<std::string> OptionalString(const json& obj, const char* key, const std::string& field) {
  const json* v = Member(obj, key);
  if (!v || v->is_null()) return std::string();
  if (!v->is_string()) return ReviewError(field, "a string");
  return v->get<std::string>();
}

// A resource quantity of whole devices: "2" or 2.
Result<int64_t> DeviceCount(const json& v, const std::string& where) {
  int64_t n = -1;
  if (v.is_number_unsigned() || v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (v.is_string()) {
    if (!ParseCount(v.get<std::string>(), &n)) n = -1;
  }
  if (n < 0 || n > kMaxGpusPerPod) {
    return Status::Error(where + ": want a whole number of GPUs in [0, " + std::to_string(kMaxGpusPerPod) + "], got " +
                         Printable(v.is_string() ? v.get<std::string>() : v.dump()));
  }
  return n;
}

// Required node affinity (spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution,
// k8s.io/api/core/v1 types.go NodeSelector): its nodeSelectorTerms are ORed and the
// matchExpressions of one term ANDed ("Assigning Pods to Nodes", "Node affinity").
constexpr size_t kMaxAffinityTerms = 64;        // nodeSelectorTerms read
constexpr size_t kMaxAffinityExpressions = 64;  // matchExpressions of one term
constexpr size_t kMaxAffinityValues = 256;      // values of one nvidia.com/gpu.product expression
constexpr size_t kMaxLabelValue = 63;           // a label value ("Labels and Selectors": 63 characters or less)

// A valid label value (Kubernetes "Labels and Selectors"): empty, or at most 63
// of [A-Za-z0-9-_.] beginning and ending with a letter or digit. No node can
// carry any other, so a pod pinned to one is refused rather than read through
// the GPU table's spelling rule (which drops the bytes it does not know).
bool IsLabelValue(const std::string& v) {
  if (v.size() > kMaxLabelValue) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  for (char c : v) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return v.empty() || (alnum(v.front()) && alnum(v.back()));
}

// The nvidia.com/gpu.product values the pod's required node affinity lets its
// node have, in first-appearance order; nullopt when it does not pin the label
// (no required affinity, or a term that can match without naming a product:
// Exists, NotIn alone, DoesNotExist, another key). A term pins the label to the
// intersection of its In lists less its NotIn values; an empty term, or one whose
// In lists leave no value, matches no node and is left out (error when every
// term naming the label is such and no other term can match: no node can take
// the pod). preferredDuringSchedulingIgnoredDuringExecution is not read: a
// preference does not decide the node.
using Products = std::optional<std::vector<std::string>>;

Result<Products> AffinityProducts(const json* spec, const char* key) {
  const std::string base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
  const json* affinity = spec ? Member(*spec, "affinity") : nullptr;
  if (!affinity || affinity->is_null()) return Products();
  if (!affinity->is_object()) return Status::Error("the pod: spec.affinity: want an object");
  const json* node = Member(*affinity, "nodeAffinity");
  if (!node || node->is_null()) return Products();
  if (!node->is_object()) return Status::Error("the pod: spec.affinity.nodeAffinity: want an object");
  const json* required = Member(*node, "requiredDuringSchedulingIgnoredDuringExecution");
  if (!required || required->is_null()) return Products();
  if (!required->is_object()) return Status::Error("the pod: " + base + ": want an object");
  const json* terms = Member(*required, "nodeSelectorTerms");
  if (!terms || terms->is_null()) return Products();
  if (!terms->is_array()) return Status::Error("the pod: " + base + ".nodeSelectorTerms: want an array");
  if (terms->size() > kMaxAffinityTerms) {
    return Status::Error("the pod: " + base + ".nodeSelectorTerms: " + std::to_string(terms->size()) +
                         " terms, more than gpucast reads (" + std::to_string(kMaxAffinityTerms) + ")");
  }
  std::vector<std::string> products;  // the union over the terms that pin the label
  std::set<std::string> product_set;
  bool unpinned = false, named = false;
  for (size_t t = 0; t < terms->size(); ++t) {
    const std::string tw = base + ".nodeSelectorTerms[" + std::to_string(t) + "]";
    const json& term = (*terms)[t];
    if (!term.is_object()) return Status::Error("the pod: " + tw + ": want an object");
    const json* exprs = Member(term, "matchExpressions");
    const json* fields = Member(term, "matchFields");
    const bool has_fields = fields && fields->is_array() && !fields->empty();
    if (exprs && !exprs->is_null() && !exprs->is_array()) {
      return Status::Error("the pod: " + tw + ".matchExpressions: want an array");
    }
    const size_t n = exprs && exprs->is_array() ? exprs->size() : 0;
    if (n > kMaxAffinityExpressions) {
      return Status::Error("the pod: " + tw + ".matchExpressions: " + std::to_string(n) +
                           " expressions, more than gpucast reads (" + std::to_string(kMaxAffinityExpressions) + ")");
    }
    if (n == 0 && !has_fields) continue;  // an empty term matches no node
    std::optional<std::vector<std::string>> in;  // this term's In values (intersected)
    std::set<std::string> not_in;
    bool absent = false;  // DoesNotExist on the label
    for (size_t e = 0; e < n; ++e) {
      const std::string ew = tw + ".matchExpressions[" + std::to_string(e) + "]";
      const json& expr = (*exprs)[e];
      if (!expr.is_object()) return Status::Error("the pod: " + ew + ": want an object");
      const json* k = Member(expr, "key");
      if (!k || !k->is_string()) return Status::Error("the pod: " + ew + ".key: want a string");
      if (*k != key) continue;
      const json* op = Member(expr, "operator");
      if (!op || !op->is_string()) return Status::Error("the pod: " + ew + ".operator: want a string");
      const std::string o = op->get<std::string>();
      if (o != "In" && o != "NotIn") {
        if (o == "DoesNotExist") absent = true;
        continue;  // Exists, DoesNotExist, Gt, Lt name no product
      }
      const json* vs = Member(expr, "values");
      if (!vs || !vs->is_array()) return Status::Error("the pod: " + ew + ".values: want an array (operator " + o + ")");
      if (vs->size() > kMaxAffinityValues) {
        return Status::Error("the pod: " + ew + ".values: " + std::to_string(vs->size()) + " values, more than gpucast " +
                             "reads (" + std::to_string(kMaxAffinityValues) + ")");
      }
      std::vector<std::string> values;  // first-appearance order, once each
      std::set<std::string> value_set;
      for (const json& v : *vs) {
        if (!v.is_string()) return Status::Error("the pod: " + ew + ".values: want strings, got " + Printable(v.dump()));
        const std::string& s = v.get_ref<const std::string&>();
        if (s.size() > kMaxLabelValue) {
          return Status::Error("the pod: " + ew + ".values: '" + Printable(s) + "' is longer than a label value (" +
                               std::to_string(kMaxLabelValue) + " characters): no node has it");
        }
        if (value_set.insert(s).second) values.push_back(s);
      }
      if (o == "NotIn") {
        not_in.merge(value_set);
      } else if (!in) {
        in = std::move(values);
      } else {
        std::erase_if(*in, [&](const std::string& s) { return !value_set.count(s); });
      }
    }
    if (!in) {
      unpinned = true;  // some node of any product (or none) can match this term
      continue;
    }
    named = true;
    if (absent) continue;  // In and DoesNotExist: no node
    for (const std::string& s : *in) {
      if (!not_in.count(s) && product_set.insert(s).second) products.push_back(s);
    }
  }
  if (unpinned || !named) return Products();
  if (products.empty()) {
    return Status::Error("the pod: " + base + ": no node can match it (every term that names " + key +
                         " leaves no value, after its other In, NotIn and DoesNotExist expressions on it)");
  }
  return Products(std::move(products));
}

// "A, B, C" (at most 8, then "... (N in all)").
std::string ValueList(const std::vector<std::string>& values) {
  std::string out;
  for (size_t i = 0; i < values.size() && i < 8; ++i) out += (i ? ", " : "") + Printable(values[i]);
  if (values.size() > 8) out += ", ... (" + std::to_string(values.size()) + " in all)";
  return out;
}

}  // namespace

std::string JsonPointerEscape(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

Result<AdmissionRequest> ParseAdmissionReview(std::string_view body) {
  Result<json> parsed = ParseJson(body);
  if (!parsed.ok()) return parsed.status().Prefixed("AdmissionReview");
  json j = std::move(parsed).value();
  if (!j.is_object()) return Status::Error("AdmissionReview: want a JSON object");
  const json* api = Member(j, "apiVersion");
  if (!api || !api->is_string() || *api != "admission.k8s.io/v1") {
    return ReviewError("apiVersion", "\"admission.k8s.io/v1\" (set admissionReviewVersions: [\"v1\"] in the webhook "
                                     "configuration), got " + Printable(api ? api->dump() : "nothing"));
  }
  const json* kind = Member(j, "kind");
  if (!kind || !kind->is_string() || *kind != "AdmissionReview") {
    return ReviewError("kind", "\"AdmissionReview\", got " + Printable(kind ? kind->dump() : "nothing"));
  }
  const json* req = Member(j, "request");
  if (!req || !req->is_object()) return ReviewError("request", "an object");
  AdmissionRequest out;
  const json* uid = Member(*req, "uid");
  if (!uid || !uid->is_string() || uid->get<std::string>().empty() || uid->get<std::string>().size() > kMaxUid) {
    return ReviewError("request.uid", "a non-empty string of at most 256 bytes");
  }
  out.uid = uid->get<std::string>();
  const json* k = Member(*req, "kind");
  if (!k || !k->is_object()) return ReviewError("request.kind", "an object {group, version, kind}");
  ASSIGN_OR_RETURN(out.group, OptionalString(*k, "group", "request.kind.group"));
  ASSIGN_OR_RETURN(out.version, OptionalString(*k, "version", "request.kind.version"));
  ASSIGN_OR_RETURN(out.kind, OptionalString(*k, "kind", "request.kind.kind"));
  if (out.kind.empty()) return ReviewError("request.kind.kind", "a non-empty string");
  ASSIGN_OR_RETURN(out.operation, OptionalString(*req, "operation", "request.operation"));
  static const std::set<std::string> kOps = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
  if (!kOps.count(out.operation)) {
    return ReviewError("request.operation", "CREATE, UPDATE, DELETE or CONNECT, got " + Printable(out.operation));
  }
  ASSIGN_OR_RETURN(out.sub_resource, OptionalString(*req, "subResource", "request.subResource"));
  ASSIGN_OR_RETURN(out.ns, OptionalString(*req, "namespace", "request.namespace"));
  ASSIGN_OR_RETURN(out.name, OptionalString(*req, "name", "request.name"));
  if (const json* d = Member(*req, "dryRun"); d && !d->is_null()) {
    if (!d->is_boolean()) return ReviewError("request.dryRun", "true or false");
    out.dry_run = d->get<bool>();
  }
  if (const json* o = Member(*req, "object"); o && !o->is_null()) {
    if (!o->is_object()) return ReviewError("request.object", "an object");
    out.object = *o;
  }
  return out;
}

Result<PodJob> ReadPodJob(const json& pod) {
  PodJob job;
  if (!pod.is_object()) return Status::Error("the pod: want a JSON object");
  const json* meta = Member(pod, "metadata");
  const json* ann = meta ? Member(*meta, "annotations") : nullptr;
  std::map<std::string, std::string> in;  // gpucast.io input annotations
  static const std::set<std::string> kInputs = {kAnnModel, kAnnBatch, kAnnDims, kAnnAttrs, kAnnAmp, kAnnGpu};
  static const std::set<std::string> kOutputs = {kAnnPredictedUtil,         kAnnPredictedUtilInterval, kAnnPredictedMem,
                                                 kAnnPredictedMemInterval,  kAnnPredictedGpu,          kAnnShare,
                                                 kAnnPredictedMig,
                                                 kAnnPredictedStep,         kAnnPredictedStepInterval, kAnnPredictionUnsure,
                                                 kAnnPredictedGpuMeasured};
  if (ann && ann->is_object()) {
    for (const auto& [key, v] : ann->items()) {
      if (key.rfind("gpucast.io/", 0) != 0) continue;
      if (kOutputs.count(key)) continue;  // written by gpucast; replaced below
      if (!kInputs.count(key)) {
        return Status::Error("annotation " + Printable(key) + ": unknown (gpucast reads gpucast.io/model, "
                             "gpucast.io/batch, gpucast.io/dims, gpucast.io/attrs, gpucast.io/amp, gpucast.io/gpu)");
      }
      if (!v.is_string()) return Status::Error("annotation " + key + ": want a string value");
      const std::string& s = v.get_ref<const std::string&>();
      if (s.size() > kMaxAnnotationValue) {
        return Status::Error("annotation " + key + ": longer than " + std::to_string(kMaxAnnotationValue) + " bytes");
      }
      in[key] = s;
    }
  }
  if (in.empty()) return job;
  job.annotated = true;

  // gpucast.io/model: one forward+backward pass per item, as gpucast predict
  // --model counts them ("g.onnx,d.onnx,d.onnx": D runs twice per step).
  auto model = in.find(kAnnModel);
  if (model == in.end() || Trim(model->second).empty()) {
    return Status::Error(std::string("annotation ") + kAnnModel +
                         ": missing (the training job's ONNX graph, a path under the service's model roots; a job of "
                         "several networks names one per forward+backward pass, comma-separated)");
  }
  std::vector<std::pair<std::string, int>> passes;  // first-appearance order
  for (std::string_view item : SplitCommas(model->second)) {
    if (item.empty()) {
      return Status::Error(std::string("annotation ") + kAnnModel + ": empty path in '" + Printable(model->second) + "'");
    }
    auto it = std::find_if(passes.begin(), passes.end(), [&](const auto& p) { return p.first == item; });
    if (it == passes.end()) passes.emplace_back(std::string(item), 1);
    else ++it->second;
  }
  json request = json::object();
  if (passes.size() == 1 && passes[0].second == 1) {
    request["model"] = passes[0].first;
  } else {
    request["models"] = json::array();
    for (const auto& [path, n] : passes) request["models"].push_back({{"path", path}, {"repeat", n}});
  }

  auto batch = in.find(kAnnBatch);
  if (batch == in.end()) {
    return Status::Error(std::string("annotation ") + kAnnBatch +
                         ": missing (the per-GPU batch size; it changes the prediction a lot)");
  }
  int64_t b = 0;
  if (!ParseCount(Trim(batch->second), &b)) {
    return Status::Error(std::string("annotation ") + kAnnBatch + ": want an integer, got '" + Printable(batch->second) + "'");
  }
  request["batch"] = b;

  if (auto amp = in.find(kAnnAmp); amp != in.end()) {
    std::string_view v = Trim(amp->second);
    if (v == "true" || v == "1") request["amp"] = true;
    else if (v == "false" || v == "0") request["amp"] = false;
    else return Status::Error(std::string("annotation ") + kAnnAmp + ": want true, false, 1 or 0, got '" + Printable(v) + "'");
  }
  auto pairs = [&](const char* key, json* out, bool integers) -> Status {
    auto it = in.find(key);
    if (it == in.end()) return Status::Ok();
    *out = json::object();
    for (std::string_view item : SplitCommas(it->second)) {
      if (item.empty()) continue;
      size_t eq = item.find('=');
      std::string_view name = eq == std::string_view::npos ? item : Trim(item.substr(0, eq));
      std::string_view value = eq == std::string_view::npos ? std::string_view() : Trim(item.substr(eq + 1));
      if (eq == std::string_view::npos || name.empty() || value.empty()) {
        return Status::Error(std::string("annotation ") + key + ": '" + Printable(item) + "': want NAME=VALUE items, comma-separated");
      }
      if (out->contains(std::string(name))) {
        return Status::Error(std::string("annotation ") + key + ": '" + Printable(name) + "' given twice");
      }
      if (integers) {
        int64_t v = 0;
        if (!ParseCount(value, &v)) {
          return Status::Error(std::string("annotation ") + key + ": '" + Printable(item) + "': want NAME=INTEGER");
        }
        (*out)[std::string(name)] = v;
      } else {
        (*out)[std::string(name)] = std::string(value);
      }
    }
    return Status::Ok();
  };
  json dims, attrs;
  RETURN_IF_ERROR(pairs(kAnnDims, &dims, true));
  RETURN_IF_ERROR(pairs(kAnnAttrs, &attrs, false));
  if (!dims.is_null()) request["dims"] = dims;
  if (!attrs.is_null()) request["attrs"] = attrs;
  if (auto gpu = in.find(kAnnGpu); gpu != in.end()) {
    job.gpu = std::string(Trim(gpu->second));
    if (job.gpu.empty()) return Status::Error(std::string("annotation ") + kAnnGpu + ": empty (a GPU name, e.g. A100-80GB)");
  }

  // The one container asking for GPUs (limits; requests where limits say
  // nothing): nvidia.com/gpu, or a MIG slice nvidia.com/mig-<profile>.
  const json* spec = Member(pod, "spec");
  const json* containers = spec ? Member(*spec, "containers") : nullptr;
  if (!containers || !containers->is_array()) return Status::Error("the pod: spec.containers: want an array");
  std::vector<std::string> gpu_containers;
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    const json* name = Member(c, "name");
    std::string cname = name && name->is_string() ? name->get<std::string>() : "#" + std::to_string(i);
    const std::string where = "container " + Printable(cname) + ": resources.";
    const json* res = Member(c, "resources");
    int64_t n = 0;
    for (const char* which : {"limits", "requests"}) {
      const json* list = res ? Member(*res, which) : nullptr;
      const json* q = list ? Member(*list, kResGpu) : nullptr;
      if (!q) continue;
      ASSIGN_OR_RETURN(n, DeviceCount(*q, where + which + "." + kResGpu));
      break;
    }
    // MIG slices (the device plugin's mixed strategy): limits, else requests.
    std::string mig, mig_resource;
    int64_t slices = 0;
    for (const char* which : {"limits", "requests"}) {
      const json* list = res ? Member(*res, which) : nullptr;
      if (!list || !list->is_object()) continue;
      bool seen = false;
      for (const auto& [key, q] : list->items()) {
        if (key.rfind(kResMigPrefix, 0) != 0) continue;
        seen = true;
        const std::string field = where + which + "." + Printable(key);
        ASSIGN_OR_RETURN(int64_t k, DeviceCount(q, field));
        if (k == 0) continue;
        const std::string profile = key.substr(std::string_view(kResMigPrefix).size());
        if (profile.empty()) {
          return Status::Error(field + ": no MIG profile after '" + kResMigPrefix + "' (the NVIDIA device plugin's " +
                               "mixed strategy names a slice " + kResMigPrefix + "<profile>, e.g. " + kResMigPrefix +
                               "1g.10gb)");
        }
        if (Result<std::string> known = CanonicalMigProfile(profile); !known.ok()) {
          return Status::Error(field + ": " + known.message());
        }
        if (!mig.empty()) {
          return Status::Error(where + which + ": asks for two MIG slices (" + Printable(mig_resource) + ", " +
                               Printable(key) + "): gpucast predicts one training job on one slice");
        }
        if (k != 1) {
          return Status::Error(field + ": want 1, got " + std::to_string(k) + ": gpucast predicts one training job " +
                               "on one MIG slice (a job across several slices is not modelled)");
        }
        mig = profile;
        mig_resource = key;
        slices = k;
      }
      if (seen) break;
    }
    if (slices > 0 && n > 0) {
      return Status::Error("container " + Printable(cname) + ": asks for " + std::string(kResGpu) + " and " + Printable(mig_resource) +
                           ": give the training container either whole GPUs or one MIG slice");
    }
    if (n == 0 && slices == 0) continue;
    gpu_containers.push_back(cname);
    job.container = static_cast<int>(i);
    job.container_name = cname;
    job.gpus = slices > 0 ? 1 : n;
    job.mig = mig;
    job.mig_resource = mig_resource;
  }
  if (gpu_containers.empty()) {
    return Status::Error(std::string("no container asks for ") + kResGpu + " or " + kResMigPrefix +
                         "<profile>: gpucast sizes the GPU share of a pod's GPU container (give it resources.limits " +
                         kResGpu + ": 1, or remove the gpucast.io annotations)");
  }
  if (gpu_containers.size() > 1) {
    std::string names;
    for (const std::string& n : gpu_containers) names += (names.empty() ? "" : ", ") + Printable(n);
    return Status::Error(std::to_string(gpu_containers.size()) + " containers ask for GPUs (" + names +
                         "): gpucast sizes one training job per pod; give GPUs to one container");
  }
  // The single MIG strategy: every nvidia.com/gpu of the node is one slice of
  // one profile, and GPU Feature Discovery labels the node
  // nvidia.com/gpu.product=<GPU>-MIG-<profile>. A pod that selects such nodes
  // by that label, in spec.nodeSelector or in its required node affinity, is
  // predicted on the slice (without either gpucast cannot know where it lands:
  // the whole GPU, docs/kubernetes.md). Both must hold for a node (kube-scheduler
  // ANDs them), so a product the affinity does not allow beside the selector's
  // is an error; products of different slices, or of a slice and a whole GPU,
  // are too (the pod's slice is not known at admission).
  const json* selector = spec ? Member(*spec, "nodeSelector") : nullptr;
  // PodSpec.NodeSelector is map[string]string (k8s.io/api/core/v1 types.go): the API server
  // decodes no other pod, so an object of strings or nothing. Anything else is no pod to read
  // (before, a non-string product was ignored and the pod predicted on the whole GPU).
  if (selector && !selector->is_null()) {
    if (!selector->is_object()) return Status::Error("the pod: spec.nodeSelector: want an object of strings");
    for (const auto& [key, v] : selector->items()) {
      if (!v.is_string()) {
        return Status::Error("the pod: spec.nodeSelector." + Printable(key) + ": want a string (a label value), got " +
                             Printable(v.dump()));
      }
    }
  }
  const json* product = selector ? Member(*selector, kLabelGpuProduct) : nullptr;
  ASSIGN_OR_RETURN(Products allowed, AffinityProducts(spec, kLabelGpuProduct));
  const std::string affinity_where = std::string("required node affinity ") + kLabelGpuProduct;
  std::vector<std::string> labels;  // the products the pod's node may have ({} = any)
  std::string where;                // what named them
  if (product && product->is_string()) {
    const std::string label = product->get<std::string>();
    where = "node selector " + std::string(kLabelGpuProduct) + "=" + Printable(label);
    if (allowed && std::find(allowed->begin(), allowed->end(), label) == allowed->end()) {
      return Status::Error(where + " and " + affinity_where + " in (" + ValueList(*allowed) + ") allow no node " +
                           "together (kube-scheduler needs both): no node can take the pod; name the product in one");
    }
    labels = {label};
  } else if (allowed) {
    labels = *allowed;
    where = affinity_where + (labels.size() == 1 ? "=" + Printable(labels[0]) : " in (" + ValueList(labels) + ")");
  }
  for (const std::string& label : labels) {
    if (!IsLabelValue(label)) {
      return Status::Error((labels.size() == 1 ? where : affinity_where + "=" + Printable(label)) +
                           ": not a label value (letters, digits, '-', '_', '.'; a letter or digit at each end): no " +
                           "node has it");
    }
  }
  // Each product's slice: {GPU as labelled, profile} ({"", ""} = a whole GPU) and its canonical key.
  struct Slice {
    std::string gpu, profile, key;
  };
  std::vector<Slice> slices;
  for (const std::string& label : job.mig.empty() ? labels : std::vector<std::string>{}) {
    const std::string at_where = labels.size() == 1 ? where : affinity_where + "=" + Printable(label);
    const size_t at = label.find("-MIG-");
    if (at == std::string::npos) {
      slices.push_back({});
      continue;
    }
    Slice sl{label.substr(0, at), label.substr(at + 5), ""};
    // Time-slicing of the slices appends -SHARED (GPU Operator, "Time-Slicing GPUs", renameByDefault
    // false): the pod still runs on a slice of that profile, predicted as if alone on it, as a
    // time-sliced whole GPU is.
    if (sl.profile.size() > 7 && sl.profile.compare(sl.profile.size() - 7, 7, "-SHARED") == 0) {
      sl.profile.resize(sl.profile.size() - 7);
    }
    Result<std::string> known = CanonicalMigProfile(sl.profile);
    if (!known.ok()) return Status::Error(at_where + ": " + known.message());
    Result<std::string> canonical = CanonicalGpuName(sl.gpu);
    if (!canonical.ok()) return Status::Error(at_where + ": " + canonical.message());
    sl.key = *canonical + " MIG " + *known;
    slices.push_back(std::move(sl));
  }
  for (const Slice& sl : slices) {
    if (sl.key == slices[0].key) continue;
    return Status::Error(where + ": the pod may land on " +
                         (sl.key.empty() || slices[0].key.empty()
                              ? "a whole GPU or a MIG slice (" + (sl.key.empty() ? slices[0].key : sl.key) + ")"
                              : "different MIG slices (" + slices[0].key + ", " + sl.key + ")") +
                         ", and gpucast predicts one slice at admission; require the products of one slice " +
                         "(or ask for " + kResMigPrefix + "<profile>: 1)");
  }
  if (!slices.empty() && !slices[0].key.empty()) {
    const Slice& sl = slices[0];
    Result<std::string> canonical = CanonicalGpuName(sl.gpu);
    if (!job.gpu.empty()) {
      Result<std::string> named = CanonicalGpuName(job.gpu);
      if (named.ok() && *named != *canonical) {
        return Status::Error(std::string("annotation ") + kAnnGpu + " '" + Printable(job.gpu) + "' and " + where +
                             " name different GPUs (" + *named + ", " + *canonical + "); give one");
      }
    }
    if (job.gpus != 1) {
      return Status::Error("container " + Printable(job.container_name) + ": resources." + kResGpu + " " +
                           std::to_string(job.gpus) + " on " + where + ": want 1 (each is one MIG slice; gpucast " +
                           "predicts one training job on one slice)");
    }
    if (job.gpu.empty()) job.gpu = sl.gpu;
    job.mig = sl.profile;
    job.mig_resource = kResGpu;
  }
  // Whole-GPU products (GPU feature discovery writes the nvidia-smi name with its
  // spaces as '-': NVIDIA-A100-SXM4-80GB, Tesla-T4, NVIDIA-H100-80GB-HBM3): the GPU
  // types the pod's node may have. Resolved as every GPU name is (CanonicalGpuName:
  // case, spaces and punctuation ignored, so '-' and ' ' are one); -SHARED (time-
  // slicing, renameByDefault false) is the same GPU. One type is the pod's GPU, as
  // gpucast.io/gpu would name it; several are each predicted (routes_k8s.cc). A
  // product the table does not have is an error, as an unknown gpucast.io/gpu is:
  // gpucast cannot predict the GPU the pod is pinned to.
  const bool whole_products =
      !labels.empty() && std::none_of(labels.begin(), labels.end(), [](const std::string& l) {
        return l.find("-MIG-") != std::string::npos;
      });
  if (whole_products) {
    std::vector<std::string> types;
    for (const std::string& label : labels) {
      const std::string at_where = labels.size() == 1 ? where : affinity_where + "=" + Printable(label);
      std::string name = label;
      if (name.size() > 7 && name.compare(name.size() - 7, 7, "-SHARED") == 0) name.resize(name.size() - 7);
      Result<std::string> canonical = CanonicalGpuName(name);
      if (!canonical.ok()) {
        return Status::Error(at_where + ": " + canonical.message() + ": gpucast cannot predict the GPU the pod " +
                             "requires");
      }
      if (std::find(types.begin(), types.end(), *canonical) == types.end()) types.push_back(*canonical);
    }
    if (!job.gpu.empty()) {
      Result<std::string> named = CanonicalGpuName(job.gpu);
      if (named.ok() && std::find(types.begin(), types.end(), *named) == types.end()) {
        if (types.size() == 1) {
          return Status::Error(std::string("annotation ") + kAnnGpu + " '" + Printable(job.gpu) + "' and " + where +
                               " name different GPUs (" + *named + ", " + types[0] + "); give one");
        }
        return Status::Error(std::string("annotation ") + kAnnGpu + " '" + Printable(job.gpu) + "' (" + *named +
                             ") is none of the GPUs " + where + " allows (" + ValueList(types) + "); give one of them");
      }
    }
    if (job.gpu.empty() && types.size() == 1) job.gpu = types[0];
    job.gpu_types = std::move(types);
    job.gpu_types_where = where;
  }
  if (!job.mig.empty()) request["mig"] = job.mig;
  request["gpus"] = job.gpus;
  job.request = std::move(request);
  return job;
}

namespace {

// Patch operations on one JSON object member map (annotations, limits,
// requests) at `pointer`, which holds `existing` (null: absent).
void SetMembers(json* patch, const std::string& pointer, const json* existing,
                const std::vector<std::pair<std::string, std::string>>& set,
                const std::vector<std::string>& remove = {}) {
  if (!existing || !existing->is_object()) {
    if (set.empty()) return;
    json obj = json::object();
    for (const auto& [k, v] : set) obj[k] = v;
    patch->push_back({{"op", "add"}, {"path", pointer}, {"value", obj}});
    return;
  }
  for (const std::string& k : remove) {
    if (existing->contains(k)) patch->push_back({{"op", "remove"}, {"path", pointer + "/" + JsonPointerEscape(k)}});
  }
  // "add" on an existing member replaces its value (RFC 6902, 4.1).
  for (const auto& [k, v] : set) {
    patch->push_back({{"op", "add"}, {"path", pointer + "/" + JsonPointerEscape(k)}, {"value", v}});
  }
}

std::string QuantityText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

Sizing CombinedSizing(const std::vector<Sizing>& per_gpu) {
  Sizing c = per_gpu.front();
  double ratio = 0;  // the largest memory high end / capacity
  for (const Sizing& t : per_gpu) {
    c.util = std::max(c.util, t.util);
    c.util_lo = std::max(c.util_lo, t.util_lo);
    c.util_hi = std::max(c.util_hi, t.util_hi);
    if (!std::isnan(t.mem_mib) && !std::isnan(c.mem_mib)) {
      c.mem_mib = std::max(c.mem_mib, t.mem_mib);
      c.mem_lo = std::max(c.mem_lo, t.mem_lo);
      c.mem_hi = std::max(c.mem_hi, t.mem_hi);
      ratio = std::max(ratio, t.mem_hi / t.capacity_mib);
    }
  }
  if (!std::isnan(c.mem_mib) && ratio > 0) c.capacity_mib = c.mem_hi / ratio;
  return c;
}

Result<Mutation> BuildMutation(const json& pod, const PodJob& job, const Sizing& s, const ShareOptions& o,
                               const std::vector<Sizing>& by_type) {
  Mutation m;
  if (job.container < 0 || job.gpus < 1) return Status::Error("BuildMutation: the pod has no GPU container");
  const bool has_mem = !std::isnan(s.mem_mib);
  const std::string per_gpu = job.gpus > 1 ? " per GPU" : "";
  // The same rule as the Slurm plugin and POST /v1/jobs: a share holds the
  // memory interval's high end, so a job whose high end exceeds the GPU's
  // memory is refused (the point above it: it will not fit; only the high end:
  // it may not fit, and a share cannot promise it).
  if (has_mem && s.mem_hi > s.capacity_mib) {
    const bool point_over = s.mem_mib > s.capacity_mib;
    if (!job.mig.empty()) {
      // A slice's memory is its own (MIG partitions it): no share can lend it more.
      return Status::Error("predicted to need " + Fmt("%.0f", s.mem_mib) + " MiB of GPU memory (interval " +
                           Fmt("%.0f", s.mem_lo) + "-" + Fmt("%.0f", s.mem_hi) + "), " +
                           (point_over ? "more than" : "its high end more than") + " the " + s.gpu + " MIG " +
                           s.mig + " slice's " + Fmt("%.0f", s.capacity_mib) + " MiB (" + job.mig_resource + "): it " +
                           (point_over ? "will not fit" : "may not fit") +
                           "; use a smaller gpucast.io/batch or a larger MIG profile");
    }
    return Status::Error("predicted to need " + Fmt("%.0f", s.mem_mib) + " MiB of GPU memory" + per_gpu + " (interval " +
                         Fmt("%.0f", s.mem_lo) + "-" + Fmt("%.0f", s.mem_hi) + "), " +
                         (point_over ? "more than" : "its high end more than") + " the " + s.gpu + "'s " +
                         Fmt("%.0f", s.capacity_mib) + " MiB: it " + (point_over ? "will not fit" : "may not fit") +
                         "; use a smaller gpucast.io/batch, more GPUs, or a GPU with more memory");
  }
  double sized = o.headroom_interval ? s.util_hi : s.util + o.headroom_points;
  sized = std::clamp(sized, 0.0, 100.0);
  // The memory a share reserves: the interval's high end (at most the GPU's, checked above).
  double mem_share = 0;
  if (has_mem) mem_share = std::max(1.0, std::ceil(s.mem_hi - 1e-9));

  const json& c = pod["spec"]["containers"][static_cast<size_t>(job.container)];
  const json* res = Member(c, "resources");
  const json* limits = res ? Member(*res, "limits") : nullptr;
  const json* requests = res ? Member(*res, "requests") : nullptr;
  const std::string cptr = "/spec/containers/" + std::to_string(job.container) + "/resources";
  std::vector<std::pair<std::string, std::string>> set;  // container resources to set
  std::vector<std::string> remove;                      // and to remove
  std::map<std::string, std::string> ann;              // annotations to set
  std::string share;                                    // gpucast.io/share's share item

  if (!job.mig.empty()) {
    // A MIG slice is already an isolated partition of the GPU: its own SMs,
    // memory and L2, given whole to the pod by the device plugin. HAMi's
    // gpucores/gpumem and KAI's gpu-fraction share a whole GPU by time and
    // memory caps; neither applies on top of a slice, so the pod's request is
    // left as it is and the prediction is only annotated.
    m.summary = "MIG " + s.mig + " slice (" + job.mig_resource + " 1 kept; no share on top of a slice)";
    if (!has_mem) {
      m.warnings.push_back("gpucast: the predictor has no memory model: whether the job fits the MIG " + s.mig +
                           " slice's memory is not checked");
    }
    share = "mig=" + s.mig;
  } else if (job.gpus > 1) {
    // Data parallel: whole GPUs (the prediction is one rank's utilization).
    if (o.mode == ShareMode::kHami) {
      set.emplace_back(kResGpuCores, "100");
      m.summary = std::to_string(job.gpus) + " whole GPUs (" + kResGpuCores + " 100 each)";
    } else {
      m.summary = std::to_string(job.gpus) + " whole GPUs (" + kResGpu + " " + std::to_string(job.gpus) + " kept)";
    }
    share = "whole=1";
  } else if (o.mode == ShareMode::kHami) {
    int cores = static_cast<int>(std::clamp(std::ceil(sized - 1e-9), 1.0, 100.0));
    set.emplace_back(kResGpuCores, std::to_string(cores));
    m.summary = std::string(kResGpuCores) + " " + std::to_string(cores);
    if (has_mem) {
      set.emplace_back(kResGpuMem, Fmt("%.0f", mem_share));
      m.summary += ", " + std::string(kResGpuMem) + " " + Fmt("%.0f", mem_share);
    } else {
      m.warnings.push_back(std::string("gpucast: the predictor has no memory model: ") + kResGpuMem +
                           " not set (HAMi's default applies)");
    }
    share = "cores=" + std::to_string(cores);
  } else {
    double f = sized / 100;
    if (has_mem) f = std::max(f, mem_share / s.capacity_mib);
    else m.warnings.push_back("gpucast: the predictor has no memory model: the fraction is sized by utilization only");
    f = std::max(0.01, std::ceil(f * 100 - 1e-9) / 100);
    if (f >= 1) {
      m.summary = "a whole GPU (the share rounds to 1.00; " + std::string(kResGpu) + " 1 kept)";
      m.warnings.push_back("gpucast: the share rounds to a whole GPU: " + std::string(kResGpu) + " 1 kept, no " +
                           kAnnKaiFraction + " annotation");
      share = "whole=1";
    } else {
      remove.push_back(kResGpu);
      ann[kAnnKaiFraction] = Fmt("%.2f", f);
      if (job.container != 0) ann[kAnnKaiFractionContainer] = job.container_name;
      m.summary = std::string(kAnnKaiFraction) + " " + Fmt("%.2f", f) + " (" + kResGpu + " removed from container " +
                  job.container_name + ")";
      share = "fraction=" + Fmt("%.2f", f);
    }
  }
  // What the pod set itself and gpucast replaces.
  for (const auto& [k, v] : set) {
    const json* old = limits ? Member(*limits, k.c_str()) : nullptr;
    if (old && QuantityText(*old) != v) {
      m.warnings.push_back("gpucast: replaced " + k + " " + Printable(QuantityText(*old)) + " (set in the pod) with " + v);
    }
  }
  SetMembers(&m.patch, cptr + (res ? "/limits" : ""), res ? limits : nullptr,
             res ? set : std::vector<std::pair<std::string, std::string>>{}, remove);
  if (!res && !set.empty()) {
    // No resources object at all: create it with the limits.
    json l = json::object();
    for (const auto& [k, v] : set) l[k] = v;
    m.patch.push_back({{"op", "add"}, {"path", cptr}, {"value", {{"limits", l}}}});
  }
  // Extended resources must have requests equal to limits where requests are given.
  if (requests && requests->is_object()) SetMembers(&m.patch, cptr + "/requests", requests, set, remove);

  // Each GPU type's prediction (one, or each of a mixed cluster's types).
  const std::vector<Sizing> types = by_type.size() > 1 ? by_type : std::vector<Sizing>{s};
  const bool several = types.size() > 1;
  auto each = [&](const std::function<std::string(const Sizing&)>& text) {
    std::string out;
    for (const Sizing& t : types) out += (out.empty() ? "" : ",") + (several ? t.gpu + "=" : "") + text(t);
    return out;
  };
  ann[kAnnPredictedUtil] = each([](const Sizing& t) { return Fmt("%.2f", t.util); });
  ann[kAnnPredictedUtilInterval] =
      each([](const Sizing& t) { return Fmt("%.2f", t.util_lo) + "-" + Fmt("%.2f", t.util_hi); });
  if (!job.mig.empty()) ann[kAnnPredictedMig] = s.mig;
  ann[kAnnPredictedGpu] = "";
  for (const Sizing& t : types) ann[kAnnPredictedGpu] += (ann[kAnnPredictedGpu].empty() ? "" : ",") + t.gpu;
  // Step time and the unsure / measured flags: each type's step, unsure if any
  // type's prediction is, measured only if every type's GPU is.
  bool steps = true;
  std::optional<bool> unsure, measured;
  for (const Sizing& t : types) {
    steps = steps && std::isfinite(t.step_ms);
    if (t.unsure) unsure = unsure.value_or(false) || *t.unsure;
    if (t.gpu_measured) measured = measured.value_or(true) && *t.gpu_measured;
  }
  if (steps) {
    ann[kAnnPredictedStep] = each([](const Sizing& t) { return Fmt("%.1f", t.step_ms); });
    ann[kAnnPredictedStepInterval] =
        each([](const Sizing& t) { return Fmt("%.1f", t.step_lo) + "-" + Fmt("%.1f", t.step_hi); });
  }
  if (unsure) ann[kAnnPredictionUnsure] = *unsure ? "true" : "false";
  if (measured) ann[kAnnPredictedGpuMeasured] = *measured ? "true" : "false";
  if (has_mem) {
    ann[kAnnPredictedMem] = each([](const Sizing& t) { return Fmt("%.0f", std::ceil(t.mem_mib - 1e-9)); });
    ann[kAnnPredictedMemInterval] = each([](const Sizing& t) {
      return Fmt("%.0f", std::floor(t.mem_lo)) + "-" + Fmt("%.0f", std::ceil(t.mem_hi - 1e-9));
    });
  }
  // gpucast.io/share: one entry per type, ';'-separated; the enforced share (cores, fraction) is one.
  std::string entries;
  for (const Sizing& t : types) {
    const double mem_t = has_mem ? std::max(1.0, std::ceil(t.mem_hi - 1e-9)) : 0.0;
    entries += (entries.empty() ? "" : ";") + ("gpu=" + t.gpu + ",gpus=" + std::to_string(job.gpus) + ",util=" +
                                                Fmt("%.2f", t.util) + ",mem_mib=" + Fmt("%.0f", mem_t) + "," + share);
  }
  ann[kAnnShare] = entries;
  const json* meta = Member(pod, "metadata");
  if (!meta || !meta->is_object()) {
    json a = json::object();
    for (const auto& [k, v] : ann) a[k] = v;
    m.patch.insert(m.patch.begin(), json{{"op", "add"}, {"path", "/metadata"}, {"value", {{"annotations", a}}}});
  } else {
    json before = json::array();
    SetMembers(&before, "/metadata/annotations", Member(*meta, "annotations"),
               std::vector<std::pair<std::string, std::string>>(ann.begin(), ann.end()));
    before.insert(before.end(), m.patch.begin(), m.patch.end());
    m.patch = std::move(before);
  }
  return m;
}

json AllowReview(const std::string& uid, const Mutation* mutation, const std::vector<std::string>& warnings) {
  json response = {{"uid", uid}, {"allowed", true}};
  std::vector<std::string> all = warnings;
  if (mutation) {
    if (!mutation->patch.empty()) {
      response["patchType"] = "JSONPatch";
      response["patch"] = Base64(mutation->patch.dump());
    }
    all.insert(all.end(), mutation->warnings.begin(), mutation->warnings.end());
  }
  // Warnings and denials quote the pod's annotations, and kubectl prints them: no control byte.
  for (std::string& w : all) w = NoControlBytes(w);
  if (!all.empty()) response["warnings"] = all;
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", response}};
}

json DenyReview(const std::string& uid, const std::string& message, int code) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"response", {{"uid", uid}, {"allowed", false}, {"status", {{"code", code}, {"message", NoControlBytes(message)}}}}}};
}

}  // namespace gpucast::service::k8s
