// A job submitted to the service: what the user asked for, what gpucast
// predicted, and where the scheduling loop put it.
#pragma once

#include <cstdint>
#include <map>
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
  std::string path;   // as for JobSpec::model
  double repeat = 1;  // in (0, kMaxRepeat]
};

inline constexpr double kMaxModelRepeat = 1000;
inline constexpr size_t kMaxModelParts = 16;

// The part of a submission that determines a prediction (POST /v1/jobs and
// POST /v1/predict take the same fields).
struct JobSpec {
  std::string model;                     // path of the ONNX file the service reads (the first network)
  // Every network of a job given as "models" (model == models[0].path, at
  // least 2 entries or one with repeat != 1, distinct paths); empty for a
  // job of one network given as "model".
  std::vector<ModelPart> models;
  int64_t batch = 1;                     // >= 1
  bool amp = false;
  int64_t gpus = 1;                      // GPUs requested, >= 1
  std::string name;                      // free text, may be empty
  std::map<std::string, std::string> attrs;  // validated by ParseJobAttr ("loader_workers" -> "2")
  std::map<std::string, int64_t> dims;       // symbolic dims (seq_len -> 384)
  std::optional<double> duration_s;      // seconds the job runs once placed; unset: until cancelled
  double mem_mib = 0;                    // GPU memory per GPU the job needs, MiB; 0 = not stated

  // Typed attributes; REQUIRES: attrs were validated (ParseSpecJson does).
  JobAttrs TypedAttrs() const;
  // The job's networks: `models`, or {model, 1} for a single-network job.
  std::vector<ModelPart> Parts() const;
};

// Parses a JSON submission. Unknown top-level fields, wrong types and values
// out of range are errors naming the field ("field 'batch': want an integer >= 1").
Result<JobSpec> ParseSpecJson(const std::string& body);

// Parses one attribute value from JSON or a query string into its canonical
// string form and validates it with the features layer's ParseJobAttr.
Status AddAttr(const std::string& key, const std::string& value, JobSpec* spec);

struct Prediction {
  double util = 0;     // predicted mean GPU utilization, percent 0..100
  double util_lo = 0;  // uncertainty interval, percent
  double util_hi = 0;
};

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

nlohmann::json JobToJson(const Job& job);
nlohmann::json SpecToJson(const JobSpec& spec);

}  // namespace gpucast::service
