// The fields every front end adds to a prediction's JSON for what the
// predictor has not seen and for the step time (docs/predictor.md "What the
// predictor has not seen", docs/json.md): `predict --json`, the service's
// replies and the Kubernetes webhook take them from here, never rebuild them.
#pragma once

#include <nlohmann/json.hpp>

#include "predict/predictor.h"

namespace gpucast {

// {"step_ms", "step_ms_interval": {"low", "high", "level"}, "gpu_measured",
//  "measured_gpus", "unsure", "unsure_reasons", "uncertainty": {...}}.
// step_ms is one rank's with --gpus > 1; null (and the interval's ends null)
// when the predictor has no step model. `level`: the interval's.
nlohmann::json PredictionFieldsJson(const PredictResult& r, double level);

}  // namespace gpucast
