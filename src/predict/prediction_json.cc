#include "predict/prediction_json.h"

#include <cmath>

namespace gpucast {

nlohmann::json PredictionFieldsJson(const PredictResult& r, double level) {
  using nlohmann::json;
  const auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  const UtilPrediction& p = r.prediction;
  const RowRisk& k = r.risk;
  return json{
      {"step_ms", num(p.step_ms)},
      {"step_ms_interval", {{"low", num(p.step_low_ms)}, {"high", num(p.step_high_ms)}, {"level", level}}},
      {"gpu_measured", r.gpu_measured},
      {"measured_gpus", r.measured_gpus},
      {"unsure", r.unsure},
      {"unsure_reasons", r.unsure_reasons},
      {"carried_loader_ms_per_sample", r.carried_loader_ms_per_sample > 0 ? json(r.carried_loader_ms_per_sample) : json(nullptr)},
      // The scenarios the interval spans (log1p of utilization, log of the step), before the calibrated error.
      {"uncertainty",
       {{"unknown_input_pipeline", k.unknown_pipeline},
        {"unknown_host", !k.gpu_measured},
        {"util_fall_log1p", k.low},
        {"util_rise_log1p", k.high},
        {"step_shorter_log", k.step_low},
        {"step_longer_log", k.step_high},
        {"loader_ms_per_sample_scenario", kRiskLoaderMsPerSample},
        {"host_factor_scenario", kRiskHostFactor}}},
  };
}

}  // namespace gpucast
