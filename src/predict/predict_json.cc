#include "predict/predict_json.h"

#include <algorithm>
#include <cmath>

#include "features/memory.h"
#include "predict/memory_model.h"

namespace gpucast {

using nlohmann::json;

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
        // A boolean mask's selection of unstated fraction: the interval spans none to all of it.
        {"unknown_selection", r.unknown_selection},
        // Tensor-core convolutions of an unstated memory format: the interval spans NCHW and channels-last.
        {"unknown_channels_last", r.unknown_channels_last},
        // FP32 convolutions or matmuls of an unstated TF32 setting on a GPU with TF32 tensor cores.
        {"unknown_tf32", r.unknown_tf32},
        {"unknown_host", !k.gpu_measured},
        {"util_fall_log1p", k.low},
        {"util_rise_log1p", k.high},
        {"step_shorter_log", k.step_low},
        {"step_longer_log", k.step_high},
        {"loader_ms_per_sample_scenario", kRiskLoaderMsPerSample},
        {"host_factor_scenario", kRiskHostFactor},
        // An unmeasured workload's per-step host work (ms) in the low and high scenarios.
        {"host_ms_per_step_scenario",
         std::isfinite(k.host_step_long_ms) ? json{{"long", k.host_step_long_ms}, {"short", k.host_step_short_ms}} : json(nullptr)},
        {"gpu_transfer_step_longer_log", k.transfer_longer},
        {"gpu_transfer_step_shorter_log", k.transfer_shorter},
        // How far the unmeasured GPU's utilization band was moved (UtilLogit: log busy - log idle);
        // both 0 with the step window applied through a held busy time.
        {"gpu_transfer_util_fall_logit", k.transfer_util_fall},
        {"gpu_transfer_util_rise_logit", k.transfer_util_rise}}},
  };
}


json PredictionJson(const Predictor& predictor, const PredictResult& res, const JobConfig& job, double level_asked) {
  const UtilPrediction& p = res.prediction;
  const PredictorInfo& info = predictor.info();
  const bool calibrated = !predictor.model().calibration().empty();
  const double level = calibrated ? level_asked : predictor.model().regressor().Params().value("interval", 0.0);
  const LowoAccuracy& acc = info.accuracy;
  json feats = json::object();
  for (size_t i = 0; i < info.feature_names.size() && i < res.features.size(); ++i) {
    feats[info.feature_names[i]] = res.features[i];
  }
  json used = json::array();
  for (size_t c : predictor.model().columns()) used.push_back(info.feature_names[c]);
  json j = {{"gpu_util", p.util},
            {"interval", {{"low", p.low}, {"high", p.high}, {"level", level}, {"calibrated", calibrated}}},
            {"gpu", job.gpu},
            {"mig_profile", job.mig_profile},
            {"target", Predictor::TargetFor(job.mig_profile)},
            {"algo", predictor.model().algo()},
            // Whether the model counts each GPU's compute peaks at the clock its board power sustains
            // (a setting of the model: PredictorInfo::power_limited_clock; false: the boost clock's).
            {"power_limited_clock", info.power_limited_clock},
            {"batch", job.batch},
            {"amp", job.amp},
            {"feature_schema", {{"name", info.schema_name}, {"version", info.schema_version}}},
            {"features", feats},
            {"features_used", used},
            {"gpus", job.gpus},
            {"nodes", job.nodes}};
  if (res.data_parallel) {
    const DataParallelResult& dp = *res.data_parallel;
    const Interconnect& ic = *res.interconnect;
    auto link = [](const Link& l) {
      return json{{"name", l.name}, {"kind", l.kind}, {"gbps_per_direction", l.bandwidth / 1e9}, {"from", l.from}};
    };
    json d = {
        // Flat names: the top-level gpu_util / interval keys stay the only ones of their name.
        {"single_gpu_util", res.single_gpu->util},
        {"single_gpu_interval", {res.single_gpu->low, res.single_gpu->high}},
        {"single_gpu_step_ms", dp.single_step_s * 1e3},
        {"step_ms", dp.step_s * 1e3},
        {"scaling_efficiency", dp.scaling_efficiency},
        {"compute_util", dp.compute_util},
        {"allreduce_bytes", dp.allreduce_bytes},
        {"wire_bytes_per_rank", dp.wire_bytes},
        {"buckets", dp.buckets},
        {"link_gbps", dp.link_bandwidth / 1e9},
        {"comm_ms", dp.comm_s * 1e3},
        {"exposed_comm_ms", dp.exposed_s * 1e3},
        {"added_step_ms", dp.added_s * 1e3},
        {"intra_node", link(ic.intra)},
        {"counter", "NCCL kernels counted busy (nvidia-smi utilization.gpu counts any running kernel)"}};
    if (ic.nodes > 1) d["inter_node"] = link(ic.inter);
    j["data_parallel"] = d;
  }
  // Step time, whether the GPU was measured, unsure.
  j.update(PredictionFieldsJson(res, level));
  // GPU memory: the point, its interval and whether it fits the GPU or slice;
  // NaN (no memory model in the predictor file) is written as null.
  const MemoryPrediction& mem = res.memory;
  const MemoryModel* mm = predictor.memory();
  const char* fit = !mem.available() ? "unknown" : mem.will_not_fit() ? "does not fit" : mem.fits() ? "fits"
                                                                                                    : "may not fit";
  j["gpu_mem_mib"] = mem.mib;
  j["gpu_mem_interval"] = {{"low", mem.low},
                           {"high", mem.high},
                           {"level", level_asked},
                           {"high_level", MemoryHighLevel(level_asked)},
                           {"widened_mib", mem.widened_mib},
                           {"cuda_module_loading", mem.cuda_module_loading},
                           {"calibrated", mm && !mm->calibration().empty()}};
  j["gpu_mem_capacity_mib"] = mem.capacity_mib;
  // The context in the point and how it was chosen (the job's CUDA_MODULE_LOADING).
  j["gpu_mem_context"] = {
      {"mib", mem.context_mib},
      {"cuda_module_loading", mem.cuda_module_loading},
      {"lazy_mib", res.memory_estimate.lazy_context_mib},
      {"note", mem.cuda_module_loading == "lazy"
                   ? "lazy module loading: the published idle context in the point and the low end; the high end "
                     "stays the measured (eager) stack's (no measured row on a lazy stack)"
               : mem.cuda_module_loading == "eager"
                   ? "eager module loading: the context fitted on the measured rows (their stacks load eagerly)"
                   : "cuda_module_loading not stated: the point and the high end assume eager loading (the "
                     "measured rows' stacks), the low end lazy loading; state --attr cuda_module_loading=lazy|eager"}};
  j["gpu_mem_fit"] = fit;
  j["optimizer"] = OptimizerName(res.memory_estimate.optimizer);
  json parts = json::object();
  if (mm)
    for (const auto& [name, mib] :
         mm->Components(res.memory_estimate, !res.seen_workload.empty() ? res.seen_workload : res.same_graph_workload))
      parts[name] = mib;
  j["gpu_mem_components_mib"] = parts;
  // Whether the job is a measured one (its correction applied) and the
  // error to expect for an unseen one (the model file's own lowo pass).
  j["workload"] = {{"seen", !res.seen_workload.empty()},
                   {"measured_workload", res.seen_workload.empty() ? json(nullptr) : json(res.seen_workload)},
                   {"measured_rows", res.seen_rows},
                   {"same_graph_workload", res.same_graph_workload.empty() ? json(nullptr)
                                                                           : json(res.same_graph_workload)},
                   {"differing_facts", res.differing_facts},
                   {"measured_on", res.measured_on}};
  if (acc.workloads > 0) {
    j["expected_error_unseen"] = {{"workloads", acc.workloads},
                                  {"rows", acc.rows},
                                  {"rmsle", acc.rmsle},
                                  {"median_workload_rmsle", acc.median_workload_rmsle},
                                  {"mae_points", acc.mae_points},
                                  {"median_abs_error_points", acc.median_abs_error_points},
                                  {"interval_level", acc.level},
                                  {"interval_coverage", acc.coverage},
                                  {"interval_median_width_points", acc.median_width_points}};
  } else {
    j["expected_error_unseen"] = nullptr;
  }
  return j;
}

}  // namespace gpucast
