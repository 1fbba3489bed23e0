#include "service/job.h"

#include <cassert>
#include <cmath>

#include <nlohmann/json.hpp>

#include "features/gpu_specs.h"
#include "predict/memory_model.h"
#include "predict/predictor.h"

namespace gpucast::service {

using nlohmann::json;

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

double JobSpec::EffectiveLevel() const { return level > 0 ? level : kDefaultIntervalLevel; }

std::vector<ModelPart> JobSpec::Parts() const {
  if (!models.empty()) return models;
  return {ModelPart{model, model_name.empty() ? model : model_name, 1}};
}

namespace {

// The fields both forms share, attrs typed.
json CommonJson(const JobSpec& spec) {
  json j = {{"batch", spec.batch}, {"amp", spec.amp},  {"gpus", spec.gpus}, {"gpu", spec.gpu},
            {"name", spec.name},   {"attrs", json::object()}, {"dims", json::object()}};
  const JobAttrs a = spec.TypedAttrs();
  if (a.loader_workers) j["attrs"]["loader_workers"] = *a.loader_workers;
  if (a.data_on_gpu) j["attrs"]["data_on_gpu"] = *a.data_on_gpu ? 1 : 0;
  if (a.rl_env) j["attrs"]["rl_env"] = *a.rl_env ? 1 : 0;
  if (a.loader_ms_per_sample) j["attrs"]["loader_ms_per_sample"] = *a.loader_ms_per_sample;
  if (a.env_steps_per_update) j["attrs"]["env_steps_per_update"] = *a.env_steps_per_update;
  if (a.cpu_cores_per_gpu) j["attrs"]["cpu_cores_per_gpu"] = *a.cpu_cores_per_gpu;
  if (a.tf32) j["attrs"]["tf32"] = *a.tf32 ? 1 : 0;
  // Every other attribute the job stated (optimizer, the GPU-memory facts): a number as a number,
  // a word as the client wrote it. They were left out, so the store (and `train --observations`,
  // a restart's re-read) lost them: a job stated with optimizer=sgd came back as adam's memory.
  for (const auto& [k, v] : spec.attrs) {
    if (j["attrs"].contains(k)) continue;
    json number = json::parse(v, nullptr, false);
    j["attrs"][k] = number.is_number() ? number : json(v);
  }
  for (const auto& [k, v] : spec.dims) j["dims"][k] = v;
  if (spec.duration_s) j["duration_s"] = *spec.duration_s;
  if (spec.mem_mib > 0) j["mem_mib"] = spec.mem_mib;
  // As mig: only when not the default, so that a job without it (or with the
  // default stated) keeps its stored text and request digest.
  if (spec.EffectiveLevel() != kDefaultIntervalLevel) j["level"] = spec.level;
  return j;
}

Status StoredError(const std::string& field) { return Status::Error("stored job spec: bad field '" + field + "'"); }

}  // namespace

json SpecToJson(const JobSpec& spec) {
  json j = CommonJson(spec);
  if (!spec.mig.empty()) j["mig"] = spec.mig;  // as duration_s: only when set (a whole GPU has none)
  if (spec.models.empty()) {
    j["model"] = spec.model_name.empty() ? spec.model : spec.model_name;
  } else {
    j["models"] = json::array();
    for (const ModelPart& p : spec.models) {
      j["models"].push_back({{"path", p.name.empty() ? p.path : p.name}, {"repeat", p.repeat}});
    }
  }
  return j;
}

json SpecToStoredJson(const JobSpec& spec) {
  json j = CommonJson(spec);
  // Only when set: a whole-GPU job's stored text, and so its request digest
  // (Idempotency-Key replays across an upgrade), is what it was before "mig".
  if (!spec.mig.empty()) j["mig"] = spec.mig;
  if (spec.models.empty()) {
    j["model"] = spec.model;
    j["model_name"] = spec.model_name.empty() ? spec.model : spec.model_name;
  } else {
    j["models"] = json::array();
    for (const ModelPart& p : spec.models) {
      j["models"].push_back({{"path", p.path}, {"name", p.name.empty() ? p.path : p.name}, {"repeat", p.repeat}});
    }
  }
  return j;
}

Result<JobSpec> SpecFromStoredJson(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return Status::Error("stored job spec: not a JSON object");
  JobSpec s;
  auto str = [&](const char* k, std::string* out) -> Status {
    if (!j.contains(k)) return Status::Ok();
    if (!j[k].is_string()) return StoredError(k);
    *out = j[k].get<std::string>();
    return Status::Ok();
  };
  if (j.contains("models")) {
    if (!j["models"].is_array() || j["models"].empty()) return StoredError("models");
    for (const json& m : j["models"]) {
      if (!m.is_object() || !m.contains("path") || !m["path"].is_string() || !m.contains("repeat") ||
          !m["repeat"].is_number()) {
        return StoredError("models");
      }
      ModelPart p{m["path"].get<std::string>(), m["path"].get<std::string>(), m["repeat"].get<double>()};
      if (m.contains("name") && m["name"].is_string()) p.name = m["name"].get<std::string>();
      s.models.push_back(std::move(p));
    }
    s.model = s.models[0].path;
    s.model_name = s.models[0].name;
  } else {
    RETURN_IF_ERROR(str("model", &s.model));
    if (s.model.empty()) return StoredError("model");
    s.model_name = s.model;
    RETURN_IF_ERROR(str("model_name", &s.model_name));
  }
  if (j.contains("batch")) {
    if (!j["batch"].is_number_integer() || j["batch"].get<int64_t>() < 1) return StoredError("batch");
    s.batch = j["batch"].get<int64_t>();
  }
  if (j.contains("gpus")) {
    if (!j["gpus"].is_number_integer() || j["gpus"].get<int64_t>() < 1) return StoredError("gpus");
    s.gpus = j["gpus"].get<int64_t>();
  }
  if (j.contains("amp")) {
    if (!j["amp"].is_boolean()) return StoredError("amp");
    s.amp = j["amp"].get<bool>();
  }
  RETURN_IF_ERROR(str("gpu", &s.gpu));
  RETURN_IF_ERROR(str("name", &s.name));
  RETURN_IF_ERROR(str("mig", &s.mig));  // rows written before "mig": the whole GPU
  if (j.contains("attrs")) {
    if (!j["attrs"].is_object()) return StoredError("attrs");
    for (const auto& [k, v] : j["attrs"].items()) {
      std::string value = v.is_boolean()          ? (v.get<bool>() ? "1" : "0")
                          : v.is_number_integer() ? std::to_string(v.get<int64_t>())
                          : v.is_number()         ? v.dump()
                          : v.is_string()         ? v.get<std::string>()
                                                  : "?";
      JobAttrs scratch;
      if (!ParseJobAttr(k + "=" + value, &scratch).ok()) return StoredError("attrs." + k);
      s.attrs[k] = value;
    }
  }
  if (j.contains("dims")) {
    if (!j["dims"].is_object()) return StoredError("dims");
    for (const auto& [k, v] : j["dims"].items()) {
      if (!v.is_number_integer()) return StoredError("dims." + k);
      s.dims[k] = v.get<int64_t>();
    }
  }
  if (j.contains("duration_s")) {
    if (!j["duration_s"].is_number()) return StoredError("duration_s");
    s.duration_s = j["duration_s"].get<double>();
  }
  if (j.contains("mem_mib")) {
    if (!j["mem_mib"].is_number()) return StoredError("mem_mib");
    s.mem_mib = j["mem_mib"].get<double>();
  }
  if (j.contains("level")) {  // rows written before "level" (or at the default): 0
    if (!j["level"].is_number() || !(j["level"].get<double>() >= 0.01 && j["level"].get<double>() <= 0.99)) {
      return StoredError("level");
    }
    s.level = j["level"].get<double>();
  }
  return s;
}

double PackingMemMib(const JobSpec& spec, const Prediction& p) {
  if (spec.mem_mib > 0) return spec.mem_mib;
  return p.mem_hi && std::isfinite(*p.mem_hi) && *p.mem_hi > 0 ? *p.mem_hi : 0;
}

double GpuCapacityMib(const std::string& gpu, const std::string& mig) {
  if (!mig.empty()) {
    Result<GpuSpec> slice = ResolveGpu(gpu, mig);
    return slice.ok() ? slice->memory_gib * 1024 : 0;
  }
  const GpuSpec* s = FindGpuSpec(gpu);
  return s ? s->memory_gib * 1024 : 0;
}

void AddPredictionJson(const Prediction& p, const std::string& gpu, json* j, const std::string& mig, double level) {
  (*j)["predicted_util"] = p.util;
  (*j)["predicted_util_interval"] = {p.util_lo, p.util_hi};
  // As `predict --json` names them; null without a memory model.
  const auto num = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  // Each interval's level, as predict --json (predict/predict_json.cc) gives it.
  const double asked = level > 0 ? level : kDefaultIntervalLevel;
  (*j)["interval"] = {{"low", p.util_lo},
                      {"high", p.util_hi},
                      {"level", num(p.interval_level)},
                      {"calibrated", p.interval_calibrated ? json(*p.interval_calibrated) : json(nullptr)}};
  (*j)["gpu_mem_mib"] = num(p.mem_mib);
  (*j)["gpu_mem_interval"] = {{"low", num(p.mem_lo)},
                              {"high", num(p.mem_hi)},
                              {"level", asked},
                              {"high_level", MemoryHighLevel(asked)}};
  const double capacity = GpuCapacityMib(gpu, mig);
  (*j)["gpu_mem_capacity_mib"] = capacity > 0 ? json(capacity) : json(nullptr);
  // The words of `predict --json`'s gpu_mem_fit (predict/memory_model.h fits, will_not_fit).
  const char* fit = "unknown";
  if (capacity > 0 && p.mem_mib && p.mem_hi) {
    fit = *p.mem_mib > capacity ? "does not fit" : *p.mem_hi <= capacity ? "fits" : "may not fit";
  }
  (*j)["gpu_mem_fit"] = fit;
  (*j)["step_ms"] = num(p.step_ms);
  (*j)["step_ms_interval"] = {{"low", num(p.step_lo)}, {"high", num(p.step_hi)}, {"level", num(p.interval_level)}};
  (*j)["gpu_measured"] = p.gpu_measured ? json(*p.gpu_measured) : json(nullptr);
  (*j)["unsure"] = p.unsure ? json(*p.unsure) : json(nullptr);
  (*j)["unsure_reasons"] = p.unsure_reasons;
  (*j)["prediction_warnings"] = p.warnings;
}

json JobToJson(const Job& job) {
  json j = SpecToJson(job.spec);
  j["id"] = job.id;
  j["state"] = JobStateName(job.state);
  AddPredictionJson(job.prediction, job.spec.gpu, &j, job.spec.mig, job.spec.level);
  j["placement"] = job.placement;
  j["exclusive"] = job.exclusive;
  j["submitted_at"] = job.submitted_at;
  j["started_at"] = job.started_at ? json(*job.started_at) : json(nullptr);
  j["finished_at"] = job.finished_at ? json(*job.finished_at) : json(nullptr);
  return j;
}

}  // namespace gpucast::service
