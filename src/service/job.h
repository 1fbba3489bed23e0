// A job submitted to the service: what the user asked for, what gpucast
// predicted, and where the scheduling loop put it. How a request becomes a
// JobSpec: request.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "features/features.h"
#include "util/status.h"

namespace gpucast::service {

// queued -> running -> done; queued|running -> cancelled (DELETE).
enum class JobState { kQueued, kRunning, kDone, kCancelled };

const char* JobStateName(JobState s);                        // "queued", ...
std::optional<JobState> ParseJobState(const std::string& s);  // nullopt if unknown

// One network of a job with several ("models": [{"path", "repeat"}...]):
// the network runs `repeat` forward+backward passes per training step (a
// fraction averages over steps: 0.5 = every second step) and is updated once
// per step it runs in (cost/job_cost.h StepReport). GAN: G repeat 1, D 2.
struct ModelPart {
  std::string path;   // the file the service reads (as for JobSpec::model)
  std::string name;   // as the client named it (replies show this, never `path`)
  double repeat = 1;  // in (0, kMaxModelRepeat]
};

inline constexpr double kMaxModelRepeat = 1000;
inline constexpr size_t kMaxModelParts = 16;
// Prefix of JobSpec::model for an uploaded graph ("upload:sha256:<hex>").
inline constexpr const char* kUploadPrefix = "upload:sha256:";

// The part of a submission that determines a prediction (POST /v1/jobs and
// POST /v1/predict take the same fields).
struct JobSpec {
  // The first network's file as the service reads it: its canonical path
  // once opened (under a model root, or as the deputy's user), or
  // kUploadPrefix + sha256. Stored, never shown to clients.
  std::string model;
  std::string model_name;                // the first network as the client named it
  // Every network of a job given as "models" (model == models[0].path, at
  // least 2 entries or one with repeat != 1, distinct paths); empty for a
  // job of one network given as "model".
  std::vector<ModelPart> models;
  int64_t batch = 1;                     // >= 1 (a request must give it)
  bool amp = false;
  int64_t gpus = 1;                      // GPUs requested, >= 1
  std::string gpu;                       // GPU type predicted for (canonical spec-table name)
  std::string name;                      // free text, may be empty
  std::map<std::string, std::string> attrs;  // canonical text, validated by ParseJobAttr ("loader_workers" -> "2")
  std::map<std::string, int64_t> dims;       // symbolic dims (seq_len -> 384)
  std::optional<double> duration_s;      // seconds the job runs once placed; unset: until cancelled
  double mem_mib = 0;                    // GPU memory per GPU the job needs, MiB; 0 = not stated
  // MIG profile of `gpu` the job runs on ("" = the whole GPU), canonical
  // ("1g.10gb"; request.cc MigName). Taken by POST /v1/predict and POST
  // /v1/jobs alike; stored with the job (in its spec JSON, only when set) and
  // placed on a slice (policy_scheduler.cc, docs/api.md "MIG jobs").
  std::string mig;
  // Prediction inputs beside `gpucast predict`'s other flags (POST /v1/predict only:
  // the scheduler places whole GPUs of one node, so POST /v1/jobs refuses
  // them; not stored): nodes the gpus are spread on, links instead of the
  // GPU table's.
  int64_t nodes = 1;
  std::string interconnect;
  // The intervals' nominal level, `predict --level` (0 = the predictor's
  // default, predict/predictor.h kDefaultIntervalLevel). Taken by POST
  // /v1/predict and POST /v1/jobs alike; stored with the job (in its spec
  // JSON, only when it is not the default: a job without it, or with 0.8,
  // keeps the stored text, and so the Idempotency-Key digest, it had before
  // "level" was stored).
  double level = 0;
  // The level the predictor used: `level`, or the default for 0.
  double EffectiveLevel() const;

  // Typed attributes; REQUIRES: attrs were validated (request.cc does).
  JobAttrs TypedAttrs() const;
  // The job's networks: `models`, or {model, model_name, 1} for a single-network job.
  std::vector<ModelPart> Parts() const;
};

struct Prediction {
  double util = 0;     // predicted mean GPU utilization, percent 0..100
  double util_lo = 0;  // uncertainty interval, percent
  double util_hi = 0;
  // Predicted GPU memory per GPU, MiB, with its interval (predict/predictor.h
  // MemoryPrediction); unset when the predictor has no memory model.
  std::optional<double> mem_mib, mem_lo, mem_hi;
  // Step time of one training step (one rank's for gpus > 1), ms, with its
  // interval; unset without a step model. gpu_measured: the predictor's
  // training rows hold this GPU type; unsure: predict/predictor.h
  // PredictResult::unsure (an unmeasured GPU or an interval wider than
  // kUnsureWidthPoints), with its reasons; warnings: the graphs' (an eval-mode
  // export, ops without a schema) and the prediction's, as predict --json's.
  // Stored with the job (store.cc: columns added with them; a row written
  // before them reads back with them unset).
  std::optional<double> step_ms, step_lo, step_hi;
  std::optional<bool> gpu_measured, unsure;
  std::vector<std::string> unsure_reasons, warnings;
  // The utilization (and step) interval's level as `predict --json`'s
  // interval.level gives it (the level asked when the predictor is
  // calibrated, else the one its file was fitted at) and whether it is
  // calibrated. Stored (columns added with them); unset for a row written
  // before them or a test's engine.
  std::optional<double> interval_level;
  std::optional<bool> interval_calibrated;
  // Every field `gpucast predict --json` gives for the job (predict/predict_json.h),
  // made by the predictor engine; null for predictions read back from the
  // store or made by a test's engine. POST /v1/predict replies with them.
  std::shared_ptr<const nlohmann::json> report;

  // A utilization prediction without memory.
  static Prediction Of(double util, double lo, double hi) {
    Prediction p;
    p.util = util;
    p.util_lo = lo;
    p.util_hi = hi;
    return p;
  }
};

// The memory the scheduler packs a job by, MiB per GPU: what the job stated
// (mem_mib), else the high end of the predicted interval, else 0 (unknown:
// memory then never blocks a placement).
double PackingMemMib(const JobSpec& spec, const Prediction& p);

struct Job {
  int64_t id = 0;  // assigned by the store, > 0
  JobSpec spec;
  Prediction prediction;
  JobState state = JobState::kQueued;
  std::vector<int> placement;           // GPU indices while running (and after, for the record)
  bool exclusive = false;               // placed to run alone on its GPUs (slot policy)
  double submitted_at = 0;              // unix seconds
  std::optional<double> started_at;
  std::optional<double> finished_at;
  std::string idempotency_key;          // "" if none was given
  std::string request_digest;           // digest of the request, to detect key reuse
};

// What a client sees: the models by the names it gave, "mig" (the profile;
// absent for a whole GPU), attrs typed as the
// API takes them (loader_workers an integer, the flags 0/1, loader_ms_per_sample
// a number). JobToJson and AddPredictionJson add "predicted_util",
// "predicted_util_interval" [low, high] (percent), and, named as `predict
// --json` names them, "gpu_mem_mib" and "gpu_mem_interval" {"low", "high"}
// (MiB per GPU; null without a memory model), "gpu_mem_capacity_mib" (the
// memory of one GPU of type `gpu`, MiB, from the GPU table; null for a GPU
// the table does not know) and "gpu_mem_fit" ("fits": the high end fits;
// "may not fit": only the point does; "does not fit"; "unknown"); and, as
// `predict --json` (predict/predict_json.h), "step_ms", "step_ms_interval"
// {"low", "high", "level"}, "gpu_measured", "unsure", "unsure_reasons" and
// "prediction_warnings" (null / empty when not known); each interval says its
// level as `predict --json` does: "interval" {"low", "high", "level",
// "calibrated"} (the utilization's), step_ms_interval.level (the same level),
// gpu_mem_interval.level (the level asked) and .high_level (its high end's,
// predict/memory_model.h MemoryHighLevel). "level" (the spec's) only when
// the job stated one other than the default.
nlohmann::json SpecToJson(const JobSpec& spec);
nlohmann::json JobToJson(const Job& job);
// `mig`: the job's MIG profile ("" = whole GPU): the capacity is the slice's.
// `level`: the level asked (JobSpec::level; 0 = the default).
void AddPredictionJson(const Prediction& p, const std::string& gpu, nlohmann::json* j, const std::string& mig = "",
                       double level = 0);

// The memory of one GPU of type `gpu` (a GPU-table name), or of its MIG slice
// `mig` (features/gpu_specs.h ResolveGpu: the instance's memory), MiB; 0 if
// the table does not know it. `predict --json`'s gpu_mem_capacity_mib.
double GpuCapacityMib(const std::string& gpu, const std::string& mig = "");

// What the store keeps (and `gpucast train --observations` reads,
// predict/observations.cc): SpecToJson with the files the service read
// ("model", "models[].path") and the client's names beside them
// ("model_name", "models[].name").
nlohmann::json SpecToStoredJson(const JobSpec& spec);
// Reads SpecToStoredJson's text back; rows written before names and gpu
// were stored get name = path and gpu "". Errors name the field.
Result<JobSpec> SpecFromStoredJson(const std::string& text);

}  // namespace gpucast::service
