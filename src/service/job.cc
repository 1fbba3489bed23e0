#include "service/job.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace gpucast::service {

using nlohmann::json;

namespace {

constexpr int64_t kMaxBatch = int64_t{1} << 24;
constexpr int64_t kMaxGpus = 1024;
constexpr int64_t kMaxDim = int64_t{1} << 24;

Status FieldError(const std::string& field, const std::string& want) {
  return Status::Error("field '" + field + "': want " + want);
}

Result<int64_t> IntField(const json& v, const std::string& field, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) return FieldError(field, "an integer");
  int64_t x = v.get<int64_t>();
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) x = hi + 1;
  if (x < lo || x > hi) {
    return FieldError(field, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                 "], got " + v.dump());
  }
  return x;
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
        part.path = x.get<std::string>();
        have_path = true;
      } else if (k == "repeat") {
        if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() <= 0 ||
            x.get<double>() > kMaxModelRepeat) {
          return FieldError(field + ".repeat", "forward+backward passes per step, a number in (0, " +
                                                   std::to_string(static_cast<int>(kMaxModelRepeat)) + "]");
        }
        part.repeat = x.get<double>();
      } else {
        return Status::Error(field + ": unknown field '" + k.substr(0, 64) + "' (known: path, repeat)");
      }
    }
    if (!have_path) return FieldError(field + ".path", "a path (missing)");
    for (const ModelPart& seen : parts) {
      if (seen.path == part.path) {
        return Status::Error(field + ": path '" + part.path.substr(0, 256) +
                             "' is listed twice (give one entry with the total repeat)");
      }
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace

const char* JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kDone: return "done";
    case JobState::kCancelled: return "cancelled";
  }
  return "?";
}

std::optional<JobState> ParseJobState(const std::string& s) {
  for (JobState st : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kCancelled}) {
    if (s == JobStateName(st)) return st;
  }
  return std::nullopt;
}

JobAttrs JobSpec::TypedAttrs() const {
  JobAttrs a;
  for (const auto& [k, v] : attrs) {
    Status st = ParseJobAttr(k + "=" + v, &a);
    assert(st.ok());
    (void)st;
  }
  return a;
}

std::vector<ModelPart> JobSpec::Parts() const {
  if (!models.empty()) return models;
  return {ModelPart{model, 1}};
}

Status AddAttr(const std::string& key, const std::string& value, JobSpec* spec) {
  JobAttrs scratch;
  Status st = ParseJobAttr(key + "=" + value, &scratch);
  if (!st.ok()) return Status::Error("attrs: " + st.message());
  spec->attrs[key] = value;
  return Status::Ok();
}

Result<JobSpec> ParseSpecJson(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    // Without the library's "[json.exception.parse_error.101] " prefix.
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) {
      what = what.substr(what.find("] ") + 2);
    }
    return Status::Error("malformed JSON: " + what);
  }
  if (!j.is_object()) return Status::Error("request body: want a JSON object");
  JobSpec spec;
  bool have_model = false, have_models = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "model") {
      if (!v.is_string() || v.get<std::string>().empty()) return FieldError("model", "a non-empty path string");
      spec.model = v.get<std::string>();
      have_model = true;
    } else if (key == "models") {
      ASSIGN_OR_RETURN(spec.models, ParseModelParts(v));
      have_models = true;
    } else if (key == "batch") {
      ASSIGN_OR_RETURN(spec.batch, IntField(v, "batch", 1, kMaxBatch));
    } else if (key == "gpus") {
      ASSIGN_OR_RETURN(spec.gpus, IntField(v, "gpus", 1, kMaxGpus));
    } else if (key == "amp") {
      if (!v.is_boolean()) return FieldError("amp", "true or false");
      spec.amp = v.get<bool>();
    } else if (key == "name") {
      if (!v.is_string()) return FieldError("name", "a string");
      spec.name = v.get<std::string>();
      if (spec.name.size() > 256) return FieldError("name", "at most 256 bytes");
    } else if (key == "attrs") {
      if (!v.is_object()) return FieldError("attrs", "an object");
      for (const auto& [ak, av] : v.items()) {
        std::string s;
        if (av.is_boolean()) {
          s = av.get<bool>() ? "1" : "0";
        } else if (av.is_number_integer()) {
          s = std::to_string(av.get<int64_t>());
        } else if (av.is_string()) {
          s = av.get<std::string>();
        } else {
          return Status::Error("attrs: key '" + ak + "': want an integer, a boolean or a string");
        }
        RETURN_IF_ERROR(AddAttr(ak, s, &spec));
      }
    } else if (key == "dims") {
      if (!v.is_object()) return FieldError("dims", "an object of name: integer");
      for (const auto& [dk, dv] : v.items()) {
        ASSIGN_OR_RETURN(spec.dims[dk], IntField(dv, "dims." + dk, 1, kMaxDim));
      }
    } else if (key == "mem_mib") {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
          v.get<double>() > 1e9) {
        return FieldError("mem_mib", "a number of MiB in [0, 1e9]");
      }
      spec.mem_mib = v.get<double>();
    } else if (key == "duration_s") {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
        return FieldError("duration_s", "a number >= 0");
      }
      spec.duration_s = v.get<double>();
    } else {
      return Status::Error("unknown field '" + key +
                           "' (known: model, models, batch, amp, gpus, name, attrs, dims, mem_mib, duration_s)");
    }
  }
  if (have_model && have_models) {
    return Status::Error("fields 'model' and 'models': give one (models lists every network of the job)");
  }
  if (!have_model && !have_models) {
    return Status::Error("field 'model': missing (path of an ONNX file, or 'models': [{\"path\", \"repeat\"}...])");
  }
  if (have_models) {
    spec.model = spec.models[0].path;
    // One network run once per step is a plain job: one stored form.
    if (spec.models.size() == 1 && spec.models[0].repeat == 1) spec.models.clear();
  }
  return spec;
}

json SpecToJson(const JobSpec& spec) {
  json j = {{"batch", spec.batch}, {"amp", spec.amp},  {"gpus", spec.gpus},
            {"name", spec.name},   {"attrs", json::object()}, {"dims", json::object()}};
  if (spec.models.empty()) {
    j["model"] = spec.model;
  } else {
    j["models"] = json::array();
    for (const ModelPart& p : spec.models) j["models"].push_back({{"path", p.path}, {"repeat", p.repeat}});
  }
  // Typed as the API takes them: loader_workers an integer, the flags 0/1.
  const JobAttrs a = spec.TypedAttrs();
  if (a.loader_workers) j["attrs"]["loader_workers"] = *a.loader_workers;
  if (a.data_on_gpu) j["attrs"]["data_on_gpu"] = *a.data_on_gpu ? 1 : 0;
  if (a.rl_env) j["attrs"]["rl_env"] = *a.rl_env ? 1 : 0;
  for (const auto& [k, v] : spec.dims) j["dims"][k] = v;
  if (spec.duration_s) j["duration_s"] = *spec.duration_s;
  if (spec.mem_mib > 0) j["mem_mib"] = spec.mem_mib;
  return j;
}

json JobToJson(const Job& job) {
  json j = SpecToJson(job.spec);
  j["id"] = job.id;
  j["state"] = JobStateName(job.state);
  j["predicted_util"] = job.prediction.util;
  j["predicted_util_interval"] = {job.prediction.util_lo, job.prediction.util_hi};
  j["placement"] = job.placement;
  j["exclusive"] = job.exclusive;
  j["submitted_at"] = job.submitted_at;
  j["started_at"] = job.started_at ? json(*job.started_at) : json(nullptr);
  j["finished_at"] = job.finished_at ? json(*job.finished_at) : json(nullptr);
  return j;
}

}  // namespace gpucast::service
