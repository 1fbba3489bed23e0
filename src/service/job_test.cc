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

TEST(JobTest, StateNames) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kCancelled}) {
    EXPECT_EQ(ParseJobState(JobStateName(s)), s);
  }
  EXPECT_FALSE(ParseJobState("paused").has_value());
}

}  // namespace
}  // namespace gpucast::service
