// One job's prediction as JSON, the same for every front end: `gpucast
// predict --json` prints it (with the models, warnings and schema beside it),
// POST /v1/predict and the Kubernetes webhook reply with it (service/engine.cc
// keeps it with the prediction). A field added here reaches all of them.
// docs/json.md describes the fields (schema gpucast.predict).
#pragma once

#include <nlohmann/json.hpp>

#include "predict/predictor.h"

namespace gpucast {

// `job` as predicted (its gpu canonical), `level` the interval level asked
// for (used when the predictor is calibrated). Fields: gpu_util, interval
// {low, high, level, calibrated}, gpu, mig_profile, target, algo,
// power_limited_clock (the model's setting), batch, amp,
// feature_schema, features, features_used, gpus, nodes, data_parallel (jobs
// on several GPUs), gpu_mem_mib, gpu_mem_interval {low, high, level,
// calibrated}, gpu_mem_capacity_mib, gpu_mem_fit, optimizer,
// gpu_mem_components_mib, workload, expected_error_unseen.
nlohmann::json PredictionJson(const Predictor& predictor, const PredictResult& res, const JobConfig& job, double level);

// The fields for what the predictor has not seen and for the step time
// (docs/predictor.md "What the predictor has not seen"), part of
// PredictionJson:
// {"step_ms", "step_ms_interval": {"low", "high", "level"}, "gpu_measured",
//  "measured_gpus", "unsure", "unsure_reasons", "uncertainty": {...}}.
// step_ms is one rank's with --gpus > 1; null (and the interval's ends null)
// when the predictor has no step model. `level`: the interval's.
nlohmann::json PredictionFieldsJson(const PredictResult& r, double level);

}  // namespace gpucast
