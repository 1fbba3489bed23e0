// The prediction's JSON, the one layout of `gpucast predict --json` and
// POST /v1/predict: every field is the PredictResult's own value, on a
// predictor trained on ../shared/data and a real graph.
#include "predict/predict_json.h"

#include <gtest/gtest.h>

#include <set>

#include "cost/job_cost.h"
#include "graph/onnx_loader.h"
#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/physics_fixture.h"
#include "util/paths.h"

namespace gpucast {
namespace {

using nlohmann::json;

const Predictor& Trained() { return test::PhysicsOnLucid(); }

TEST(PredictionJson, EveryFieldIsThePredictionsOwn) {
  LoadOptions lo;
  lo.batch = 64;
  auto reports = JobStepReports({HomeDir() + "/models/vgg.onnx"}, lo, CostOptions{});
  ASSERT_TRUE(reports.ok()) << reports.message();
  JobConfig job;
  job.batch = 64;
  job.gpu = "A100-80GB";
  job.gpus = 4;
  job.nodes = 2;
  job.interconnect = "pcie4x16,ib200";
  Result<PredictResult> r = Trained().Predict(*reports, job, 0.9);
  ASSERT_TRUE(r.ok()) << r.message();
  const json j = PredictionJson(Trained(), *r, job, 0.9);
  // The fields of docs/json.md's gpucast.predict but schema, models and warnings (the CLI's own).
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"gpu_util", "interval", "gpu", "mig_profile", "target", "algo",
                                         "power_limited_clock", "batch", "amp",
                                         "feature_schema", "features", "features_used", "workload",
                                         "expected_error_unseen", "gpus", "nodes", "data_parallel", "gpu_mem_mib",
                                         "gpu_mem_interval", "gpu_mem_capacity_mib", "gpu_mem_context", "gpu_mem_fit", "optimizer",
                                         "gpu_mem_components_mib", "step_ms", "step_ms_interval", "gpu_measured",
                                         "measured_gpus", "unsure", "unsure_reasons", "carried_loader_ms_per_sample",
                                         "uncertainty"}));
  EXPECT_EQ(j["gpu_util"], r->prediction.util);
  EXPECT_EQ(j["interval"]["low"], r->prediction.low);
  EXPECT_EQ(j["interval"]["high"], r->prediction.high);
  EXPECT_EQ(j["gpu"], "A100-80GB");
  EXPECT_EQ(j["gpus"], 4);
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["batch"], 64);
  // The model's setting (the fixture trained with kDefaultPowerLimitedClock, on).
  EXPECT_EQ(j["power_limited_clock"], true);
  EXPECT_EQ(j["power_limited_clock"], Trained().info().power_limited_clock);
  EXPECT_EQ(j["data_parallel"]["step_ms"], r->data_parallel->step_s * 1e3);
  EXPECT_EQ(j["data_parallel"]["single_gpu_util"], r->single_gpu->util);
  EXPECT_EQ(j["data_parallel"]["inter_node"]["name"], r->interconnect->inter.name);
  EXPECT_EQ(j["gpu_mem_interval"]["level"], 0.9);
  EXPECT_EQ(j["gpu_mem_mib"], r->memory.mib);
  EXPECT_EQ(j["workload"]["seen"], !r->seen_workload.empty());
  EXPECT_EQ(j["workload"]["measured_on"], r->measured_on);
  // What the predictor has not seen: trained on the RTX 3090 rows only, an A100 is unmeasured.
  EXPECT_EQ(j["gpu_measured"], false);
  EXPECT_EQ(j["gpu_measured"], r->gpu_measured);
  EXPECT_EQ(j["unsure"], r->unsure);
  EXPECT_EQ(j["unsure_reasons"], r->unsure_reasons);
  EXPECT_EQ(j["step_ms"], r->prediction.step_ms);
  EXPECT_EQ(j["step_ms_interval"]["low"], r->prediction.step_low_ms);
  EXPECT_EQ(j["step_ms_interval"]["high"], r->prediction.step_high_ms);
  EXPECT_EQ(j["uncertainty"]["unknown_host"], true);
  EXPECT_EQ(j["gpu_mem_interval"]["widened_mib"], r->memory.widened_mib);
  // cuda_module_loading not stated: the fitted (eager) context in the point, said in both places.
  EXPECT_EQ(j["gpu_mem_interval"]["cuda_module_loading"], "unknown");
  EXPECT_EQ(j["gpu_mem_context"]["cuda_module_loading"], "unknown");
  EXPECT_EQ(j["gpu_mem_context"]["mib"], r->memory.context_mib);
  EXPECT_EQ(j["gpu_mem_context"]["lazy_mib"], r->memory_estimate.lazy_context_mib);
  EXPECT_NE(j["gpu_mem_context"]["note"].get<std::string>().find("cuda_module_loading=lazy|eager"), std::string::npos);
  EXPECT_EQ(j["expected_error_unseen"]["workloads"], Trained().info().accuracy.workloads);
  EXPECT_EQ(j["features"].size(), Trained().info().feature_names.size());
  // One GPU: no data_parallel.
  job.gpus = 1;
  job.nodes = 1;
  job.interconnect.clear();
  Result<PredictResult> one = Trained().Predict(*reports, job);
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(PredictionJson(Trained(), *one, job, kDefaultIntervalLevel).contains("data_parallel"));
}

}  // namespace
}  // namespace gpucast
