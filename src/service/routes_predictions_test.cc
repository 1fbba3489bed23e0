// POST /v1/predict through a real HTTP server (service_fixture.h).
#include "service/service_fixture.h"

#include "predict/physics_fixture.h"
#include "predict/predictor.h"
#include "service/engine.h"
#include "util/paths.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::LucidEngine;
using testing::ServiceTest;
using testing::WriteLucidPredictorAndVgg;

TEST_F(ServiceTest, PredictCreatesNoJobAndCachesTheGraph) {
  StartServer();
  auto a = PostJson("/v1/predict", {{"model", model_}, {"batch", 2}});
  auto b = PostJson("/v1/predict", {{"model", model_}, {"batch", 2}});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(Body(a)["predicted_util"], 20.0);
  EXPECT_EQ(Body(a)["predicted_util_interval"], json({15.0, 25.0}));
  EXPECT_EQ(Body(a)["cache"], "miss");
  EXPECT_EQ(Body(b)["cache"], "hit");
  EXPECT_EQ(Body(a)["gpu"], "RTX3090");
  // The fields a scheduler packs by, as `predict --json` names them: the test engine has
  // no memory model; an RTX 3090 has 24 GiB.
  EXPECT_TRUE(Body(a)["gpu_mem_interval"]["high"].is_null());
  EXPECT_EQ(Body(a)["gpu_mem_capacity_mib"], 24576.0);
  EXPECT_EQ(Body(a)["gpu_mem_fit"], "unknown");
  EXPECT_EQ(Body(client_->Get("/v1/jobs"))["jobs"].size(), 0u);
}

// The graphs' warnings (an eval-mode export predicts too little memory) reach the reply, as in
// `predict --json`; a graph without any gets an empty list.
TEST_F(ServiceTest, PredictRepliesWithTheGraphWarnings) {
  const std::string eval = dir_ + "/eval.onnx";
  std::ofstream(eval) << testing::kFakeModelMagic << " " << testing::kFakeEvalMode;
  StartServer();
  auto a = PostJson("/v1/predict", {{"model", eval}, {"batch", 2}});
  ASSERT_TRUE(a);
  ASSERT_EQ(a->status, 200) << a->body;
  ASSERT_EQ(Body(a)["warnings"].size(), 1u);
  EXPECT_THAT(Body(a)["warnings"][0].get<std::string>(), HasSubstr("looks like an eval-mode export"));
  auto b = PostJson("/v1/predict", {{"model", model_}, {"batch", 2}});
  ASSERT_TRUE(b);
  EXPECT_EQ(Body(b)["warnings"], json::array());
}

TEST_F(ServiceTest, PredictNeedsABatchLikeTheCli) {
  StartServer();
  auto r = PostJson("/v1/predict", {{"model", model_}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "field 'batch': missing (the batch size, an integer >= 1)");
}

// The real engine's errors name the request's fields, not gpucast predict's
// flags (they named --interconnect, --gpus, --nodes): a bad interconnect, GPU
// count or node count of a JSON request (and of an upload's query parameters)
// is answered with the field's name and no "--". What is wrong whatever the GPU
// (a link no GPU has, counts that do not divide, a network on one node) is a
// malformed field, 400, as an unknown GPU name is (docs/api.md); what the
// job's GPU does not have (NVLink on a T4) is found while predicting, 422.
TEST_F(ServiceTest, ABadInterconnectNamesTheJsonFieldNotAFlag) {
  const std::string vgg = WriteLucidPredictorAndVgg(dir_);
  auto engine = LucidEngine(dir_);
  ASSERT_TRUE(engine);
  opts_.max_body_bytes = 1 << 20;  // the upload below
  StartServer(8, std::move(engine));  // 8 GPUs: /v1/jobs takes gpus 6 to the predictor
  auto good = PostJson("/v1/predict", {{"model", vgg}, {"batch", 32}, {"gpu", "T4"}, {"gpus", 8}, {"nodes", 2},
                                       {"interconnect", "pcie,tcp4.5"}});
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200) << good->body;
  // The model's power-limited-clock setting, as `predict --json` gives it (the same function).
  EXPECT_EQ(Body(good)["power_limited_clock"], test::PhysicsOnLucid().info().power_limited_clock);
  EXPECT_EQ(Body(good)["power_limited_clock"], true);
  struct Case {
    json fields;
    int status;
    std::string error;
  };
  const Case cases[] = {
      {{{"gpus", 2}, {"interconnect", "nvlink9"}}, 400,
       "interconnect 'nvlink9': want nvlink, nvlink<gen> or nvlink<gen>x<links> (gen 1-5)"},
      {{{"gpus", 2}, {"interconnect", "tcp0"}}, 400,
       "interconnect 'tcp0': want tcp or tcp<achieved Gb/s> (0.1-100000), e.g. tcp4.5"},
      {{{"gpus", 2}, {"interconnect", "warp9"}}, 400, "interconnect 'warp9': unknown link (want pcie, "},
      {{{"gpus", 2}, {"interconnect", "ib200"}}, 400, "interconnect 'ib200': a network link needs nodes > 1"},
      {{{"gpus", 6}, {"nodes", 4}}, 400, "gpus 6 nodes 4: GPUs must divide evenly over nodes"},
      {{{"gpus", 2}, {"nodes", 4}}, 400, "nodes 4: want 1-2 (gpus 2)"},
      {{{"gpus", 2}, {"interconnect", "nvlink"}}, 422, "interconnect 'nvlink': GPU 'T4' has no NVLink"},
      {{{"gpus", 2}, {"interconnect", "nvlink3"}}, 422,
       "interconnect 'nvlink3': GPU 'T4' has no NVLink; say how many links: nvlink3x<links>"},
  };
  for (const Case& c : cases) {
    json body = {{"model", vgg}, {"batch", 32}, {"gpu", "T4"}};
    body.update(c.fields);
    for (const char* route : {"/v1/predict", "/v1/jobs"}) {
      auto r = PostJson(route, body);
      ASSERT_TRUE(r) << route;
      EXPECT_EQ(r->status, c.status) << route << " " << body.dump() << ": " << r->body;
      EXPECT_THAT(Error(r), HasSubstr(c.error)) << route;
      EXPECT_THAT(Error(r), ::testing::Not(HasSubstr("--"))) << route;
    }
  }
  // An upload's query parameters have the same names and the same statuses.
  std::ifstream in(vgg, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& [query, status] : {std::pair<std::string, int>{"interconnect=nvlink9", 400},
                                      std::pair<std::string, int>{"interconnect=nvlink", 422}}) {
    auto up = client_->Post("/v1/predict?batch=32&gpu=T4&gpus=2&" + query, bytes, "application/octet-stream");
    ASSERT_TRUE(up);
    EXPECT_EQ(up->status, status) << query << ": " << up->body;
    EXPECT_THAT(Error(up), HasSubstr("interconnect '" + query.substr(13) + "': "));
    EXPECT_THAT(Error(up), ::testing::Not(HasSubstr("--")));
  }
}

TEST_F(ServiceTest, AnUploadForAPredictionIsNotKept) {
  StartServer();
  std::string bytes = std::string(testing::kFakeModelMagic) + " up";
  auto r = client_->Post("/v1/predict?batch=3&gpu=A100", bytes, "application/octet-stream");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["predicted_util"], 30.0);
  EXPECT_EQ(Body(r)["gpu"], "A100-40GB");
  EXPECT_EQ(Body(r)["gpu_mem_capacity_mib"], 40960.0);
  EXPECT_EQ(service_->upload_bytes(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(opts_.db_path + ".models"));
}

}  // namespace
}  // namespace gpucast::service
