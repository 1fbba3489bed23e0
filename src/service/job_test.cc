#include "service/job.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "features/memory.h"

namespace gpucast::service {
namespace {

using nlohmann::json;

JobSpec Spec() {
  JobSpec s;
  s.model = "/srv/models/r50.onnx";
  s.model_name = "r50.onnx";
  s.batch = 64;
  s.amp = true;
  s.gpus = 2;
  s.gpu = "H100";
  s.name = "r50";
  s.attrs = {{"loader_workers", "4"}, {"data_on_gpu", "1"}, {"loader_ms_per_sample", "14.5"}};
  s.dims = {{"seq", 384}};
  s.mem_mib = 9000;
  s.duration_s = 3600;
  return s;
}

TEST(JobTest, ClientsSeeTheirNamesAndTypedAttributes) {
  const json j = SpecToJson(Spec());
  EXPECT_EQ(j["model"], "r50.onnx");  // never the server's path
  EXPECT_FALSE(j.dump().find("/srv/") != std::string::npos) << j.dump();
  EXPECT_EQ(j["gpu"], "H100");
  EXPECT_EQ(j["attrs"]["loader_workers"], 4);
  EXPECT_EQ(j["attrs"]["data_on_gpu"], 1);
  EXPECT_EQ(j["attrs"]["loader_ms_per_sample"], 14.5);
  EXPECT_EQ(j["dims"]["seq"], 384);
  EXPECT_EQ(j["duration_s"], 3600.0);
  EXPECT_EQ(j["mem_mib"], 9000.0);
}

TEST(JobTest, TheStoredFormKeepsPathsAndNamesAndReadsBack) {
  const JobSpec s = Spec();
  const json stored = SpecToStoredJson(s);
  EXPECT_EQ(stored["model"], "/srv/models/r50.onnx");
  EXPECT_EQ(stored["model_name"], "r50.onnx");
  auto back = SpecFromStoredJson(stored.dump());
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(SpecToStoredJson(*back), stored);
  EXPECT_EQ(SpecToJson(*back), SpecToJson(s));
  // Several networks: paths and names per entry.
  JobSpec gan = s;
  gan.models = {{"/srv/g.onnx", "g.onnx", 1}, {"/srv/d.onnx", "d.onnx", 3}};
  gan.model = "/srv/g.onnx";
  gan.model_name = "g.onnx";
  EXPECT_EQ(SpecToJson(gan)["models"].dump(), R"([{"path":"g.onnx","repeat":1.0},{"path":"d.onnx","repeat":3.0}])");
  auto gan_back = SpecFromStoredJson(SpecToStoredJson(gan).dump());
  ASSERT_TRUE(gan_back.ok()) << gan_back.message();
  EXPECT_EQ(gan_back->Parts()[1].path, "/srv/d.onnx");
  EXPECT_EQ(gan_back->Parts()[1].name, "d.onnx");
  EXPECT_EQ(gan_back->Parts()[1].repeat, 3);
}

// optimizer and the GPU-memory facts were dropped from replies and from the stored spec (what a
// restart and `gpucast train --observations` read back): every stated attribute is kept.
TEST(JobTest, EveryStatedAttributeIsShownAndStored) {
  JobSpec s = Spec();
  s.attrs = {{"loader_workers", "2"},         {"optimizer", "sgd"},       {"cuda_module_loading", "lazy"},
             {"trainable_fraction", "0.25"}, {"zero_stage", "2"},        {"grad_accumulation", "4"},
             {"activation_checkpointing", "1"}, {"variable_shapes", "0"}};
  const json shown = SpecToJson(s)["attrs"];
  EXPECT_EQ(shown, json::parse(R"({"loader_workers": 2, "optimizer": "sgd", "cuda_module_loading": "lazy",
                                    "trainable_fraction": 0.25, "zero_stage": 2, "grad_accumulation": 4,
                                    "activation_checkpointing": 1, "variable_shapes": 0})"));
  auto back = SpecFromStoredJson(SpecToStoredJson(s).dump());
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->attrs, s.attrs);
  const JobAttrs typed = back->TypedAttrs();
  ASSERT_TRUE(typed.optimizer.has_value());
  EXPECT_EQ(std::string(OptimizerName(*typed.optimizer)), "sgd");
  EXPECT_EQ(typed.memory.zero_stage, 2);
  EXPECT_EQ(typed.memory.trainable_fraction, 0.25);
  EXPECT_EQ(typed.memory.lazy_module_loading, true);
}

TEST(JobTest, RowsStoredBeforeNamesAndGpuStillRead) {
  // A row written by the previous release: no model_name, no gpu, attrs as strings.
  auto old = SpecFromStoredJson(R"({"model": "/srv/m.onnx", "batch": 8, "amp": false, "gpus": 1, "name": "",
                                    "attrs": {"loader_workers": "2"}, "dims": {}})");
  ASSERT_TRUE(old.ok()) << old.message();
  EXPECT_EQ(old->model_name, "/srv/m.onnx");
  EXPECT_EQ(old->gpu, "");
  EXPECT_EQ(*old->TypedAttrs().loader_workers, 2);
  EXPECT_EQ(SpecFromStoredJson("[]").message(), "stored job spec: not a JSON object");
  EXPECT_EQ(SpecFromStoredJson(R"({"model": 3})").message(), "stored job spec: bad field 'model'");
  EXPECT_EQ(SpecFromStoredJson(R"({"model": "m", "attrs": {"colour": 1}})").message(),
            "stored job spec: bad field 'attrs.colour'");
}

// Memory as `predict --json` names it: null without a memory model.
TEST(JobTest, MemoryPredictionInReplies) {
  Job job;
  job.spec = Spec();
  job.spec.mem_mib = 0;  // stated memory wins; none stated here
  job.prediction = Prediction::Of(40, 30, 50);
  json j = JobToJson(job);
  EXPECT_EQ(j["predicted_util_interval"], json({30.0, 50.0}));
  EXPECT_TRUE(j["gpu_mem_mib"].is_null());
  EXPECT_TRUE(j["gpu_mem_interval"]["high"].is_null());
  EXPECT_EQ(PackingMemMib(job.spec, job.prediction), 0);
  job.prediction.mem_mib = 9000;
  job.prediction.mem_lo = 8000;
  job.prediction.mem_hi = 11000;
  j = JobToJson(job);
  EXPECT_EQ(j["gpu_mem_mib"], 9000.0);
  // The level asked (the default 0.8 here) and the high end's (max(0.95, (1 + 0.8) / 2)), as predict --json.
  EXPECT_EQ(j["gpu_mem_interval"], json({{"low", 8000.0}, {"high", 11000.0}, {"level", 0.8}, {"high_level", 0.95}}));
  EXPECT_EQ(PackingMemMib(job.spec, job.prediction), 11000);
}

// The GPU's memory and the fit, as `predict --json` gives them: an H100 has 80 GiB
// = 81920 MiB (NVIDIA's datasheet, the GPU table), an RTX 3090 24 GiB = 24576 MiB.
TEST(JobTest, MemoryCapacityAndFitInReplies) {
  Job job;
  job.spec = Spec();  // H100
  job.prediction = Prediction::Of(40, 30, 50);
  json j = JobToJson(job);
  EXPECT_EQ(j["gpu_mem_capacity_mib"], 81920.0);
  EXPECT_EQ(j["gpu_mem_fit"], "unknown");  // no memory model
  job.prediction.mem_mib = 9000;
  job.prediction.mem_lo = 8000;
  job.prediction.mem_hi = 11000;
  EXPECT_EQ(JobToJson(job)["gpu_mem_fit"], "fits");
  job.spec.gpu = "RTX3090";
  job.prediction.mem_mib = 20000;
  job.prediction.mem_hi = 24576;  // the high end equal to the memory still fits
  j = JobToJson(job);
  EXPECT_EQ(j["gpu_mem_capacity_mib"], 24576.0);
  EXPECT_EQ(j["gpu_mem_fit"], "fits");
  job.prediction.mem_hi = 24577;
  EXPECT_EQ(JobToJson(job)["gpu_mem_fit"], "may not fit");
  job.prediction.mem_mib = 24577;
  job.prediction.mem_hi = 30000;
  EXPECT_EQ(JobToJson(job)["gpu_mem_fit"], "does not fit");
  job.spec.gpu = "";  // a row stored before jobs kept their GPU
  j = JobToJson(job);
  EXPECT_TRUE(j["gpu_mem_capacity_mib"].is_null());
  EXPECT_EQ(j["gpu_mem_fit"], "unknown");
  EXPECT_EQ(GpuCapacityMib("H100"), 81920);
  EXPECT_EQ(GpuCapacityMib("no such GPU"), 0);
}

TEST(JobTest, StateNames) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kCancelled}) {
    EXPECT_EQ(ParseJobState(JobStateName(s)), s);
  }
  EXPECT_FALSE(ParseJobState("paused").has_value());
}

}  // namespace
}  // namespace gpucast::service
