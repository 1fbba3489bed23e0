#include "service/request.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "features/gpu_specs.h"
#include "features/interconnect.h"
#include "service/http_front.h"
#include "service/http_util.h"
#include "util/job_limits.h"

namespace gpucast::service {

using nlohmann::json;

namespace {

// The GPU a job that names none is predicted for: the cluster's; on a mixed
// cluster none (the job's GPU type decides its prediction and its GPUs).
Result<std::string> DefaultGpu(const RequestDefaults& d, const std::string& what) {
  if (!d.gpu.empty() || d.cluster_gpus.empty()) return d.gpu;
  std::string types;
  for (const std::string& t : d.cluster_gpus) types += (types.empty() ? "" : ", ") + t;
  return Status::Error(what + ": missing; the cluster has GPUs of several types (" + types +
                       "): name the one the job runs on");
}

// Shared with the CLI (util/job_limits.h): the same job is accepted by every front end.
constexpr int64_t kMaxBatch = kMaxJobBatch;
constexpr int64_t kMaxGpus = kMaxJobGpus;
constexpr int64_t kMaxDim = kMaxJobDim;
constexpr double kMaxMemMib = 1e9;
constexpr size_t kMaxName = 256;

Status FieldError(const std::string& field, const std::string& want) {
  return Status::Error("field '" + Shown(field) + "': want " + want);
}

std::string Got(const json& v) { return Shown(Dump(v)); }

// An integer, also written as an integral number (32.0).
Result<int64_t> IntField(const json& v, const std::string& field, int64_t lo, int64_t hi) {
  const std::string want = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!v.is_number()) return FieldError(field, want + ", got " + Got(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) {
    return FieldError(field, want + ", got " + Got(v));
  }
  int64_t x = 0;
  if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else {
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::trunc(d) != d || d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      return FieldError(field, want + ", got " + Got(v));
    }
    x = static_cast<int64_t>(d);
  }
  if (x < lo || x > hi) return FieldError(field, want + ", got " + Got(v));
  return x;
}

Result<double> NumberField(const json& v, const std::string& field, double lo, double hi, const std::string& want) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi) {
    return FieldError(field, want + ", got " + Got(v));
  }
  return v.get<double>();
}

// One attribute from JSON (number, boolean or string) or a query string,
// to its canonical text, validated by the features layer.
// What ResolveInterconnect checks without a GPU (features/interconnect.h): the
// GPU and node counts, the interconnect's tokens, one link per leg, a network
// only across nodes. A malformed field like any other (400); what depends on
// the GPU (NVLink on a card without it) stays the prediction's 422.
Status CheckLinks(const JobSpec& spec) {
  return CheckInterconnectSpec(static_cast<int>(spec.gpus), static_cast<int>(spec.nodes), spec.interconnect,
                               InputWording::kApi);
}

Status AddAttr(const std::string& key, const std::string& value, JobSpec* spec) {
  JobAttrs scratch;
  Status st = ParseJobAttr(key + "=" + value, &scratch);
  if (!st.ok()) return Status::Error("attrs: " + st.message());
  spec->attrs[key] = value;
  return Status::Ok();
}

Result<std::string> AttrText(const std::string& key, const json& v) {
  if (v.is_boolean()) return std::string(v.get<bool>() ? "1" : "0");
  if (v.is_number_integer()) return v.is_number_unsigned() ? std::to_string(v.get<uint64_t>()) : std::to_string(v.get<int64_t>());
  if (v.is_number()) {
    const double d = v.get<double>();
    // An integral number is an integer (loader_workers 2.0); others keep their digits.
    if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9e15) return std::to_string(static_cast<int64_t>(d));
    return v.dump();
  }
  if (v.is_string()) return v.get<std::string>();
  return Status::Error("attrs: key '" + Shown(key) + "': want a number, a boolean or a string, got " + Got(v));
}

// "models": [{"path": P, "repeat": R}, ...] -> parts (distinct paths, R in
// (0, kMaxModelRepeat], default 1).
Result<std::vector<ModelPart>> ParseModelParts(const json& v) {
  if (!v.is_array() || v.empty() || v.size() > kMaxModelParts) {
    return FieldError("models", "an array of 1 to " + std::to_string(kMaxModelParts) +
                                    " objects {\"path\": FILE, \"repeat\": PASSES}");
  }
  std::vector<ModelPart> parts;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string field = "models[" + std::to_string(i) + "]";
    const json& e = v[i];
    if (!e.is_object()) return FieldError(field, "an object {\"path\": FILE, \"repeat\": PASSES}");
    ModelPart part;
    bool have_path = false;
    for (const auto& [k, x] : e.items()) {
      if (k == "path") {
        if (!x.is_string() || x.get<std::string>().empty()) return FieldError(field + ".path", "a non-empty path string");
        part.path = part.name = x.get<std::string>();
        have_path = true;
      } else if (k == "repeat") {
        if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() <= 0 ||
            x.get<double>() > kMaxModelRepeat) {
          return FieldError(field + ".repeat", "forward+backward passes per step, a number in (0, " +
                                                   std::to_string(static_cast<int>(kMaxModelRepeat)) + "]");
        }
        part.repeat = x.get<double>();
      } else {
        return Status::Error(field + ": unknown field '" + Shown(k) + "' (known: path, repeat)");
      }
    }
    if (!have_path) return FieldError(field + ".path", "a path (missing)");
    for (const ModelPart& seen : parts) {
      if (seen.path == part.path) {
        return Status::Error(field + ": path '" + Shown(part.path, 256) +
                             "' is listed twice (give one entry with the total repeat)");
      }
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

// The fields of an upload, from its query string.
Status ParseUploadParams(const std::multimap<std::string, std::string>& params, const RequestDefaults& d,
                         JobSpec* spec) {
  bool have_batch = false;
  for (const auto& [key, value] : params) {
    // batch=8&batch=64 took the last one silently: a job whose two halves disagree is refused.
    if (params.count(key) > 1) {
      return Status::Error("parameter '" + Shown(key) + "': given more than once");
    }
    if (key == "batch") {
      ASSIGN_OR_RETURN(spec->batch, ParseIntParam(key, value, 1, kMaxBatch));
      have_batch = true;
    } else if (key == "gpus") {
      ASSIGN_OR_RETURN(spec->gpus, ParseIntParam(key, value, 1, kMaxGpus));
    } else if (key == "gpu") {
      ASSIGN_OR_RETURN(spec->gpu, CheckGpuName("parameter 'gpu'", value));
    } else if (key == "amp") {
      ASSIGN_OR_RETURN(spec->amp, ParseBoolParam(key, value));
    } else if (key == "name") {
      if (value.size() > kMaxName) return Status::Error("parameter 'name': at most 256 bytes");
      spec->name = value;
    } else if (key == "duration_s" || key == "mem_mib") {
      json v = json::parse(value, nullptr, false);
      const double hi = key == "mem_mib" ? kMaxMemMib : 1e12;
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > hi) {
        return Status::Error("parameter '" + key + "': want a number in [0, " + (key == "mem_mib" ? "1e9" : "1e12") +
                             "], got '" + Shown(value) + "'");
      }
      if (key == "mem_mib") spec->mem_mib = v.get<double>();
      else spec->duration_s = v.get<double>();
    } else if (key == "mig" || key == "interconnect") {
      if (value.size() > 256) return Status::Error("parameter '" + key + "': at most 256 bytes");
      if (key == "mig") {
        ASSIGN_OR_RETURN(spec->mig, MigName("parameter 'mig'", value));
      } else {
        spec->interconnect = value;
      }
    } else if (key == "nodes") {
      ASSIGN_OR_RETURN(spec->nodes, ParseIntParam(key, value, 1, kMaxGpus));
    } else if (key == "level") {
      json v = json::parse(value, nullptr, false);
      if (!v.is_number() || !(v.get<double>() >= 0.01 && v.get<double>() <= 0.99)) {
        return Status::Error("parameter 'level': want the interval's central probability in [0.01, 0.99], got '" +
                             Shown(value) + "'");
      }
      spec->level = v.get<double>();
    } else if (key.rfind("attr.", 0) == 0 && key.size() > 5) {
      RETURN_IF_ERROR(AddAttr(key.substr(5), value, spec));
    } else if (key.rfind("dim.", 0) == 0 && key.size() > 4) {
      ASSIGN_OR_RETURN(spec->dims[key.substr(4)], ParseIntParam(key, value, 1, kMaxDim));
    } else {
      return Status::Error("unknown query parameter '" + Shown(key) +
                           "' (known: batch, amp, gpus, gpu, name, duration_s, mem_mib, mig, nodes, interconnect, level, attr.KEY, "
                           "dim.NAME)");
    }
  }
  if (!have_batch) return Status::Error("parameter 'batch': missing (the batch size, an integer >= 1)");
  RETURN_IF_ERROR(CheckLinks(*spec));
  if (spec->gpu.empty()) {
    ASSIGN_OR_RETURN(spec->gpu, DefaultGpu(d, "parameter 'gpu'"));
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> CheckGpuName(const std::string& what, const std::string& name) {
  // The features layer's one validation (closest known names in its message).
  if (name.size() > 64) return Status::Error(what + ": unknown GPU '" + Shown(name) + "' (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)");
  // The table's spelling rule ignores every byte but letters and digits: "H100\0" or a
  // right-to-left override before "H100" read as the H100. A name is printable ASCII
  // (the helper's 64-byte cut never applies: a longer name was refused above).
  RETURN_IF_ERROR(CheckPrintableName(what, "a GPU name", "H100 or \"NVIDIA H100 80GB HBM3\"", name));
  Result<std::string> canonical = CanonicalGpuName(name);
  if (!canonical.ok()) return canonical.status().Prefixed(what);
  return canonical;
}

Result<std::string> MigName(const std::string& what, const std::string& profile) {
  // "" is the whole GPU. A name no GPU has is malformed (400, as an unknown GPU
  // name); a profile the job's GPU lacks is found while predicting (422).
  if (profile.empty()) return std::string();
  // The table's spelling rule ignores every byte but letters and digits, so
  // "1g.10gb\0", "1g.10gb" + U+202E (a right-to-left override) or an escape
  // sequence read as 1g.10gb: a profile's name is printable ASCII, anything
  // else is refused (400) rather than taken for a slice.
  RETURN_IF_ERROR(CheckPrintableName(what, "a MIG profile name", "1g.10gb", profile));
  Result<std::string> canonical = CanonicalMigProfile(profile);
  if (!canonical.ok()) return canonical.status().Prefixed(what);
  return canonical;
}

Status CheckMigName(const std::string& what, const std::string& profile) {
  return MigName(what, profile).status();
}

Result<JobSpec> ParseSpecJson(const std::string& body, const RequestDefaults& d) {
  Result<json> parsed = ParseJson(body);
  if (!parsed.ok()) return parsed.status();
  json j = std::move(parsed).value();
  if (!j.is_object()) return Status::Error("request body: want a JSON object");
  JobSpec spec;
  bool have_model = false, have_models = false, have_batch = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "model") {
      if (!v.is_string() || v.get<std::string>().empty()) return FieldError("model", "a non-empty path string");
      spec.model = spec.model_name = v.get<std::string>();
      have_model = true;
    } else if (key == "models") {
      ASSIGN_OR_RETURN(spec.models, ParseModelParts(v));
      have_models = true;
    } else if (key == "batch") {
      ASSIGN_OR_RETURN(spec.batch, IntField(v, "batch", 1, kMaxBatch));
      have_batch = true;
    } else if (key == "gpus") {
      ASSIGN_OR_RETURN(spec.gpus, IntField(v, "gpus", 1, kMaxGpus));
    } else if (key == "gpu") {
      if (!v.is_string()) return FieldError("gpu", "a GPU type name such as \"" + d.gpu + "\", got " + Got(v));
      ASSIGN_OR_RETURN(spec.gpu, CheckGpuName("field 'gpu'", v.get<std::string>()));
    } else if (key == "amp") {
      if (!v.is_boolean()) return FieldError("amp", "true or false, got " + Got(v));
      spec.amp = v.get<bool>();
    } else if (key == "name") {
      if (!v.is_string()) return FieldError("name", "a string, got " + Got(v));
      spec.name = v.get<std::string>();
      if (spec.name.size() > kMaxName) return FieldError("name", "at most 256 bytes");
    } else if (key == "attrs") {
      if (!v.is_object()) return FieldError("attrs", "an object, got " + Got(v));
      for (const auto& [ak, av] : v.items()) {
        ASSIGN_OR_RETURN(std::string text, AttrText(ak, av));
        RETURN_IF_ERROR(AddAttr(ak, text, &spec));
      }
    } else if (key == "dims") {
      if (!v.is_object()) return FieldError("dims", "an object of name: integer, got " + Got(v));
      for (const auto& [dk, dv] : v.items()) {
        ASSIGN_OR_RETURN(spec.dims[dk], IntField(dv, "dims." + dk, 1, kMaxDim));
      }
    } else if (key == "mem_mib") {
      ASSIGN_OR_RETURN(spec.mem_mib, NumberField(v, "mem_mib", 0, kMaxMemMib, "a number of MiB in [0, 1e9]"));
    } else if (key == "duration_s") {
      ASSIGN_OR_RETURN(double s, NumberField(v, "duration_s", 0, 1e12, "a number of seconds in [0, 1e12]"));
      spec.duration_s = s;
    } else if (key == "mig" || key == "interconnect") {
      if (!v.is_string() || v.get<std::string>().size() > 256) return FieldError(key, "a string of at most 256 bytes, got " + Got(v));
      if (key == "mig") {
        ASSIGN_OR_RETURN(spec.mig, MigName("field 'mig'", v.get<std::string>()));
      } else {
        spec.interconnect = v.get<std::string>();
      }
    } else if (key == "nodes") {
      ASSIGN_OR_RETURN(spec.nodes, IntField(v, "nodes", 1, kMaxGpus));
    } else if (key == "level") {
      ASSIGN_OR_RETURN(spec.level, NumberField(v, "level", 0.01, 0.99, "the interval's central probability in [0.01, 0.99]"));
    } else {
      return Status::Error("unknown field '" + Shown(key) +
                           "' (known: model, models, batch, amp, gpus, gpu, name, attrs, dims, mem_mib, duration_s, "
                           "mig, nodes, interconnect, level)");
    }
  }
  if (have_model && have_models) {
    return Status::Error("fields 'model' and 'models': give one (models lists every network of the job)");
  }
  if (!have_model && !have_models) {
    return Status::Error("field 'model': missing (path of an ONNX file, or 'models': [{\"path\", \"repeat\"}...])");
  }
  if (!have_batch) return Status::Error("field 'batch': missing (the batch size, an integer >= 1)");
  if (have_models) {
    spec.model = spec.model_name = spec.models[0].path;
    // One network run once per step is a plain job: one stored form.
    if (spec.models.size() == 1 && spec.models[0].repeat == 1) spec.models.clear();
  }
  RETURN_IF_ERROR(CheckLinks(spec));
  if (spec.gpu.empty()) {
    ASSIGN_OR_RETURN(spec.gpu, DefaultGpu(d, "field 'gpu'"));
  }
  return spec;
}

Result<JobRequest> ParseJobRequest(const RequestParts& in, const RequestDefaults& d, int* http_status) {
  *http_status = 400;
  auto starts = [&](const char* p) { return in.content_type.rfind(p, 0) == 0; };
  JobRequest out;
  if (starts("application/octet-stream")) {
    if (in.read_as) {
      return Status::Error("X-Gpucast-Read-As: applies to a JSON job naming model paths, not to an upload");
    }
    if (in.body.empty()) return Status::Error("empty upload: want the ONNX file as the request body");
    RETURN_IF_ERROR(ParseUploadParams(in.params, d, &out.spec));
    out.upload = true;
    return out;
  }
  if (!in.content_type.empty() && !starts("application/json")) {
    *http_status = 415;
    return Status::Error("Content-Type '" + Shown(in.content_type) +
                         "': want application/json (job as JSON) or application/octet-stream (ONNX upload)");
  }
  if (!in.params.empty()) {
    return Status::Error("query parameter '" + Shown(in.params.begin()->first) +
                         "': a JSON job carries its fields in the body (query parameters go with uploads)");
  }
  if (in.read_as) {
    ASSIGN_OR_RETURN(out.read_as, ParseReadAs(*in.read_as));
  }
  RETURN_IF_ERROR(CheckJsonBody(in.body, d.max_json_depth));
  ASSIGN_OR_RETURN(out.spec, ParseSpecJson(std::string(in.body), d));
  return out;
}

}  // namespace gpucast::service
