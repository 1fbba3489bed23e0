#include "predict/memory_eval.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace gpucast {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool Usable(double m) { return std::isfinite(m) && m > 0; }

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json ScoresJson(const MemoryEvalScores& s) {
  return {{"rows", s.rows},
          {"mape", Num(s.mape)},
          {"mae_mib", Num(s.mae_mib)},
          {"high_above", Num(s.high_above)},
          {"coverage", Num(s.coverage)},
          {"median_width_mib", Num(s.median_width_mib)},
          {"median_rel_width", Num(s.median_rel_width)},
          {"median_high_margin", Num(s.median_high_margin)},
          {"worst_under", Num(s.worst_under)}};
}

}  // namespace

MemoryEvalScores ScoreMemoryRows(const std::vector<const MemoryRowPrediction*>& rows) {
  MemoryEvalScores s;
  if (rows.empty()) return s;
  double ape = 0, ae = 0, above = 0, inside = 0, worst = -INFINITY;
  std::vector<double> width, rel, margin;
  for (const MemoryRowPrediction* r : rows) {
    const MemoryPrediction& p = r->prediction;
    ape += std::fabs(p.mib - r->measured) / r->measured;
    ae += std::fabs(p.mib - r->measured);
    above += p.high >= r->measured;
    inside += p.low <= r->measured && r->measured <= p.high;
    width.push_back(p.high - p.low);
    rel.push_back((p.high - p.low) / p.mib);
    margin.push_back((p.high - p.mib) / p.mib);
    worst = std::max(worst, (r->measured - p.high) / r->measured);
  }
  const double n = static_cast<double>(rows.size());
  s.rows = rows.size();
  s.mape = ape / n;
  s.mae_mib = ae / n;
  s.high_above = above / n;
  s.coverage = inside / n;
  s.median_width_mib = Median(width);
  s.median_rel_width = Median(rel);
  s.median_high_margin = Median(margin);
  s.worst_under = worst;
  return s;
}

Result<MemoryEvaluation> EvaluateMemory(const Dataset& data, const Split& split, double level) {
  if (data.mem.size() != data.rows.size())
    return Status::Error("memory evaluation: the dataset has no memory estimates");
  ASSIGN_OR_RETURN(std::vector<Fold> folds, MakeFolds(split, data, 0));
  MemoryEvaluation ev;
  ev.split = split.ToString();
  ev.level = level;
  for (size_t fi = 0; fi < folds.size(); ++fi) {
    const Fold& f = folds[fi];
    std::vector<MemoryEstimate> est;
    std::vector<double> y;
    std::vector<int> group;
    for (size_t i : f.train) {
      est.push_back(data.mem[i]);
      y.push_back(data.rows[i].gmem);
      group.push_back(data.group[i]);
    }
    Result<MemoryModel> m = MemoryModel::Fit(est, y, group);
    if (!m.ok()) return m.status().Prefixed("memory evaluation, fold " + std::to_string(fi));
    for (size_t i : f.test) {
      if (!Usable(data.rows[i].gmem)) continue;
      MemoryRowPrediction r;
      r.row = i;
      r.workload = data.groups[data.group[i]];
      r.gpu = data.row_gpu[i];
      r.mig_profile = data.row_mig[i];
      r.batch = data.rows[i].batch;
      r.amp = data.rows[i].amp;
      r.measured = data.rows[i].gmem;
      r.prediction = m->Predict(data.mem[i], level);
      r.components = m->Components(data.mem[i]);
      r.estimate = data.mem[i];
      if (m->high_set_by() >= 0 && static_cast<size_t>(m->high_set_by()) < data.groups.size())
        r.high_set_by = data.groups[m->high_set_by()];
      ev.rows.push_back(std::move(r));
    }
  }
  std::vector<const MemoryRowPrediction*> all;
  std::map<std::string, std::vector<const MemoryRowPrediction*>> by_workload, by_gpu;
  for (const MemoryRowPrediction& r : ev.rows) {
    all.push_back(&r);
    by_workload[r.workload].push_back(&r);
    by_gpu[r.gpu + (r.mig_profile.empty() ? "" : " " + r.mig_profile)].push_back(&r);
  }
  ev.overall = ScoreMemoryRows(all);
  for (const auto& [k, v] : by_workload) ev.per_workload.emplace_back(k, ScoreMemoryRows(v));
  for (const auto& [k, v] : by_gpu) ev.per_gpu.emplace_back(k, ScoreMemoryRows(v));
  return ev;
}

nlohmann::json MemoryEstimateJson(const MemoryEstimate& e) {
  return {{"weights_mib", e.weights_mib},
          {"gradients_mib", e.gradients_mib},
          {"optimizer_mib", e.optimizer_mib},
          {"autocast_mib", e.autocast_mib},
          {"data_mib", e.data_mib},
          {"ddp_buckets_mib", e.ddp_buckets_mib},
          {"zero_buffers_mib", e.zero_buffers_mib},
          {"cublas_workspace_mib", e.cublas_workspace_mib},
          {"activations_mib", e.activations_mib},
          {"activations_full_mib", e.activations_full_mib},
          {"checkpoint_segment_mib", e.checkpoint_segment_mib},
          {"largest_tensor_mib", e.largest_tensor_mib},
          {"loss_head_mib", e.loss_head_mib},
          {"rounding_mib", e.rounding_mib},
          {"segments_mib", e.segments_mib},
          {"fragmentation_mib", e.fragmentation_mib},
          {"uncertain_mib", e.uncertain_mib},
          {"trained_params", e.trained_params},
          {"uses_cudnn", e.uses_cudnn},
          {"uses_cublas", e.uses_cublas},
          {"uses_conv", e.uses_conv},
          {"gpu", e.gpu},
          {"architecture", e.architecture},
          {"sms", e.sms},
          {"gpu_sms", e.gpu_sms},
          {"capacity_mib", e.capacity_mib},
          {"optimizer", OptimizerName(e.optimizer)},
          {"ranks", e.ranks},
          {"activation_checkpointing", e.checkpointing},
          {"trainable_fraction", e.trainable_fraction},
          {"zero_stage", e.zero_stage},
          {"grad_accumulation", e.grad_accumulation},
          {"variable_shapes", e.variable_shapes},
          {"cuda_module_loading", CudaModuleLoadingName(e.lazy_module_loading)},
          {"lazy_context_mib", e.lazy_context_mib}};
}

nlohmann::json MemoryEvaluationJson(const MemoryEvaluation& e) {
  nlohmann::json rows = nlohmann::json::array();
  for (const MemoryRowPrediction& r : e.rows) {
    nlohmann::json parts = nlohmann::json::object();
    for (const auto& [k, v] : r.components) parts[k] = v;
    rows.push_back({{"row", r.row},
                    {"workload", r.workload},
                    {"gpu", r.gpu},
                    {"mig_profile", r.mig_profile},
                    {"batch", r.batch},
                    {"amp", r.amp},
                    {"measured_mib", r.measured},
                    {"predicted_mib", r.prediction.mib},
                    {"low_mib", r.prediction.low},
                    {"high_mib", r.prediction.high},
                    {"high_set_by", r.high_set_by},
                    {"components_mib", parts},
                    {"estimate", MemoryEstimateJson(r.estimate)}});
  }
  nlohmann::json pw = nlohmann::json::object(), pg = nlohmann::json::object();
  for (const auto& [k, s] : e.per_workload) pw[k] = ScoresJson(s);
  for (const auto& [k, s] : e.per_gpu) pg[k] = ScoresJson(s);
  return {{"split", e.split}, {"level", e.level},        {"overall", ScoresJson(e.overall)},
          {"per_workload", pw}, {"per_gpu", pg}, {"rows", rows}};
}

}  // namespace gpucast
