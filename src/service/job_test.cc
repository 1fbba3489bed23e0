#include "service/job.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpucast::service {
namespace {

TEST(JobTest, SpecRoundTripsThroughJson) {
  auto spec = ParseSpecJson(R"({"model": "/m/r50.onnx", "batch": 64, "amp": true, "gpus": 2,
      "name": "r50", "attrs": {"loader_workers": 4, "data_on_gpu": true}, "dims": {"seq": 384},
      "mem_mib": 9000, "duration_s": 3600})");
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->batch, 64);
  EXPECT_EQ(spec->attrs.at("data_on_gpu"), "1");
  EXPECT_EQ(spec->dims.at("seq"), 384);
  EXPECT_EQ(*spec->TypedAttrs().loader_workers, 4);
  EXPECT_TRUE(*spec->TypedAttrs().data_on_gpu);
  auto again = ParseSpecJson(SpecToJson(*spec).dump());
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ(SpecToJson(*again), SpecToJson(*spec));
}

TEST(JobTest, DefaultsForAModelOnly) {
  auto spec = ParseSpecJson(R"({"model": "x.onnx"})");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->batch, 1);
  EXPECT_EQ(spec->gpus, 1);
  EXPECT_FALSE(spec->amp);
  EXPECT_FALSE(spec->duration_s.has_value());
}

TEST(JobTest, FieldErrors) {
  EXPECT_EQ(ParseSpecJson(R"({"model": ""})").message(), "field 'model': want a non-empty path string");
  EXPECT_EQ(ParseSpecJson(R"({"model": "x", "gpus": 2000})").message(),
            "field 'gpus': want an integer in [1, 1024], got 2000");
  EXPECT_EQ(ParseSpecJson(R"({"model": "x", "batch": 18446744073709551615})").message(),
            "field 'batch': want an integer in [1, 16777216], got 18446744073709551615");
  EXPECT_EQ(ParseSpecJson(R"({"model": "x", "dims": {"seq": 0}})").message(),
            "field 'dims.seq': want an integer in [1, 16777216], got 0");
  EXPECT_EQ(ParseSpecJson(R"({"model": "x", "duration_s": -1})").message(), "field 'duration_s': want a number >= 0");
}

TEST(JobTest, SeveralNetworksAsModels) {
  // DCGAN as the catalog describes its step: G once, D three times.
  auto spec = ParseSpecJson(R"({"models": [{"path": "g.onnx"}, {"path": "d.onnx", "repeat": 3}], "batch": 64})");
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->model, "g.onnx");
  ASSERT_EQ(spec->Parts().size(), 2u);
  EXPECT_EQ(spec->Parts()[0].path, "g.onnx");
  EXPECT_EQ(spec->Parts()[0].repeat, 1);
  EXPECT_EQ(spec->Parts()[1].path, "d.onnx");
  EXPECT_EQ(spec->Parts()[1].repeat, 3);
  const nlohmann::json j = SpecToJson(*spec);
  EXPECT_FALSE(j.contains("model"));
  EXPECT_EQ(j["models"].dump(), R"([{"path":"g.onnx","repeat":1.0},{"path":"d.onnx","repeat":3.0}])");
  auto again = ParseSpecJson(j.dump());
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ(SpecToJson(*again), j);
  // A fraction averages over steps (a critic updated every second step).
  auto half = ParseSpecJson(R"({"models": [{"path": "a.onnx"}, {"path": "c.onnx", "repeat": 0.5}]})");
  ASSERT_TRUE(half.ok()) << half.message();
  EXPECT_EQ(half->Parts()[1].repeat, 0.5);
  // One network once per step is a plain job, stored as "model".
  auto one = ParseSpecJson(R"({"models": [{"path": "x.onnx", "repeat": 1}]})");
  ASSERT_TRUE(one.ok()) << one.message();
  EXPECT_TRUE(one->models.empty());
  EXPECT_EQ(SpecToJson(*one)["model"], "x.onnx");
  EXPECT_EQ(SpecToJson(*one), SpecToJson(*ParseSpecJson(R"({"model": "x.onnx"})")));
  // ...but one network run twice keeps its repeat.
  auto twice = ParseSpecJson(R"({"models": [{"path": "x.onnx", "repeat": 2}]})");
  ASSERT_TRUE(twice.ok()) << twice.message();
  EXPECT_EQ(twice->Parts()[0].repeat, 2);
}

TEST(JobTest, ModelsErrors) {
  EXPECT_EQ(ParseSpecJson(R"({"model": "x", "models": [{"path": "y"}]})").message(),
            "fields 'model' and 'models': give one (models lists every network of the job)");
  EXPECT_EQ(ParseSpecJson(R"({"batch": 2})").message(),
            "field 'model': missing (path of an ONNX file, or 'models': [{\"path\", \"repeat\"}...])");
  EXPECT_EQ(ParseSpecJson(R"({"models": []})").message(),
            "field 'models': want an array of 1 to 16 objects {\"path\": FILE, \"repeat\": PASSES}");
  EXPECT_EQ(ParseSpecJson(R"({"models": "g.onnx"})").message(),
            "field 'models': want an array of 1 to 16 objects {\"path\": FILE, \"repeat\": PASSES}");
  EXPECT_EQ(ParseSpecJson(R"({"models": ["g.onnx"]})").message(),
            "field 'models[0]': want an object {\"path\": FILE, \"repeat\": PASSES}");
  EXPECT_EQ(ParseSpecJson(R"({"models": [{"path": "g"}, {"repeat": 2}]})").message(),
            "field 'models[1].path': want a path (missing)");
  EXPECT_EQ(ParseSpecJson(R"({"models": [{"path": "g", "repeat": 0}]})").message(),
            "field 'models[0].repeat': want forward+backward passes per step, a number in (0, 1000]");
  EXPECT_EQ(ParseSpecJson(R"({"models": [{"path": "g", "repeat": 1e9}]})").message(),
            "field 'models[0].repeat': want forward+backward passes per step, a number in (0, 1000]");
  EXPECT_EQ(ParseSpecJson(R"({"models": [{"path": "g", "repeat": "2"}]})").message(),
            "field 'models[0].repeat': want forward+backward passes per step, a number in (0, 1000]");
  EXPECT_EQ(ParseSpecJson(R"({"models": [{"path": "g", "weight": 2}]})").message(),
            "models[0]: unknown field 'weight' (known: path, repeat)");
  EXPECT_EQ(ParseSpecJson(R"({"models": [{"path": "g"}, {"path": "g", "repeat": 2}]})").message(),
            "models[1]: path 'g' is listed twice (give one entry with the total repeat)");
  std::string many = R"({"models": [)";
  for (int i = 0; i < 17; ++i) many += (i ? "," : "") + std::string(R"({"path": "m)") + std::to_string(i) + R"("})";
  EXPECT_EQ(ParseSpecJson(many + "]}").message(),
            "field 'models': want an array of 1 to 16 objects {\"path\": FILE, \"repeat\": PASSES}");
}

TEST(JobTest, StateNames) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kCancelled}) {
    EXPECT_EQ(ParseJobState(JobStateName(s)), s);
  }
  EXPECT_FALSE(ParseJobState("paused").has_value());
}

}  // namespace
}  // namespace gpucast::service
