#include "service/engine.h"

#include <cmath>

#include "cost/job_cost.h"
#include "predict/predict_json.h"
#include "predict/predictor.h"

namespace gpucast::service {

namespace {

class PredictorEngine : public PredictionEngine {
 public:
  PredictorEngine(Predictor predictor, std::shared_ptr<GraphAnalyzer> analyzer)
      : predictor_(std::move(predictor)), analyzer_(std::move(analyzer)) {}

  Result<Prediction> Predict(const JobSpec& spec, const std::vector<int>& model_fds, PredictInfo* info) override {
    info->cache_hit = false;  // until every graph was found
    info->failure = AnalysisFailure::kInvalid;
    bool all_hit = true;
    const std::vector<ModelPart> parts = spec.Parts();
    if (parts.size() != model_fds.size()) {
      return Status::Error(parts.front().name + ": " + std::to_string(parts.size()) + " networks but " +
                           std::to_string(model_fds.size()) + " open files");
    }
    AnalysisInput in{spec.batch, spec.amp, spec.dims};
    in.max_seconds = info->max_seconds;
    in.cache_scope = info->cache_scope;
    // One report per network: a pass as analysed, or its share of a step
    // when it runs more or less than once (as `gpucast predict --model`).
    std::vector<CostReport> reports;
    PassReport single;  // a plain job: the cached pass, not a copy
    for (size_t i = 0; i < parts.size(); ++i) {
      bool hit = false;
      ASSIGN_OR_RETURN(PassReport pass,
                       analyzer_->Analyze(model_fds[i], parts[i].name, in, &hit, &info->failure));
      all_hit = all_hit && hit;
      if (parts.size() == 1 && parts[i].repeat == 1) {
        single = std::move(pass);
      } else if (parts[i].repeat == 1) {
        reports.push_back(pass->front());
      } else {
        Result<CostReport> step = StepReport(pass->front(), parts[i].repeat, 0);
        if (!step.ok()) return step.status().Prefixed(parts[i].name);
        reports.push_back(std::move(step).value());
      }
    }
    info->cache_hit = all_hit;
    info->failure = AnalysisFailure::kInvalid;
    JobConfig job;
    job.batch = spec.batch;
    job.amp = spec.amp;
    job.attrs = spec.TypedAttrs();
    job.gpu = spec.gpu.empty() ? predictor_.info().gpu : spec.gpu;
    // Data-parallel (DDP) on whole GPUs of one node, the GPU table's links:
    // the prediction is one rank's (predict/data_parallel.h), as `predict --gpus N`.
    job.gpus = static_cast<int>(spec.gpus);
    job.nodes = static_cast<int>(spec.nodes);
    job.mig_profile = spec.mig;
    job.interconnect = spec.interconnect;
    job.wording = InputWording::kApi;  // errors name the request's fields, not the CLI's flags
    const double level = spec.level > 0 ? spec.level : kDefaultIntervalLevel;
    Result<PredictResult> r = predictor_.Predict(single ? *single : reports, job, level);
    if (!r.ok()) return r.status().Prefixed(parts.front().name);
    info->failure = AnalysisFailure::kNone;
    Prediction out = Prediction::Of(r->prediction.util, r->prediction.low, r->prediction.high);
    for (const CostReport& rep : single ? *single : reports)
      out.warnings.insert(out.warnings.end(), rep.warnings.begin(), rep.warnings.end());
    if (r->memory.available()) {
      out.mem_mib = r->memory.mib;
      out.mem_lo = r->memory.low;
      out.mem_hi = r->memory.high;
    }
    if (std::isfinite(r->prediction.step_ms)) {
      out.step_ms = r->prediction.step_ms;
      out.step_lo = r->prediction.step_low_ms;
      out.step_hi = r->prediction.step_high_ms;
    }
    out.gpu_measured = r->gpu_measured;
    out.unsure = r->unsure;
    out.unsure_reasons = r->unsure_reasons;
    out.warnings.insert(out.warnings.end(), r->warnings.begin(), r->warnings.end());
    // The fields of `gpucast predict --json`, from the one function that makes them.
    out.report = std::make_shared<const nlohmann::json>(PredictionJson(predictor_, *r, job, level));
    // The utilization interval's level and whether it is calibrated, as the report says (stored with a job).
    const nlohmann::json& interval = (*out.report)["interval"];
    if (interval["level"].is_number()) out.interval_level = interval["level"].get<double>();
    if (interval["calibrated"].is_boolean()) out.interval_calibrated = interval["calibrated"].get<bool>();
    return out;
  }

  std::string Describe() const override {
    // No file path: /healthz shows this to anyone.
    return predictor_.model().algo() + ", " + std::to_string(predictor_.info().training_rows) +
           " training rows, " + predictor_.info().gpu;
  }

 private:
  const Predictor predictor_;
  const std::shared_ptr<GraphAnalyzer> analyzer_;
};

}  // namespace

Result<std::unique_ptr<PredictionEngine>> NewPredictorEngine(const std::string& predictor_file,
                                                             std::shared_ptr<GraphAnalyzer> analyzer) {
  ASSIGN_OR_RETURN(Predictor p, Predictor::Load(predictor_file));
  return std::unique_ptr<PredictionEngine>(std::make_unique<PredictorEngine>(std::move(p), std::move(analyzer)));
}

}  // namespace gpucast::service
