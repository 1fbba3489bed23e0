// POST /v1/admin/reload through a real HTTP server (service_fixture.h): the
// admin token alone opens it; a reload swaps the predictor or keeps the old.
#include <fstream>

#include "service/reload.h"
#include "service/service_fixture.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::ServiceTest;

// An engine over a file holding the predicted utilization, reloadable.
std::unique_ptr<PredictionEngine> FileEngine(const std::string& file) {
  auto load = [](const std::string& f) -> Result<std::unique_ptr<PredictionEngine>> {
    std::ifstream in(f);
    double u = -1;
    if (!(in >> u) || u < 0 || u > 100) return Status::Error(f + ": not a predictor");
    struct Const : testing::FakeEngine {
      double u;
      explicit Const(double v) : u(v) {}
      Result<Prediction> Predict(const JobSpec& s, const std::vector<int>& fds, PredictInfo* info) override {
        RETURN_IF_ERROR(testing::FakeEngine::Predict(s, fds, info).status());
        return Prediction{u, u, u};
      }
    };
    return std::unique_ptr<PredictionEngine>(std::make_unique<Const>(u));
  };
  auto engine = ReloadingEngine::Create(file, load);
  EXPECT_TRUE(engine.ok()) << engine.message();
  return std::move(engine).value();
}

TEST_F(ServiceTest, ReloadOverHttpSwapsOrKeepsTheOldPredictor) {
  const std::string file = dir_ + "/predictor.txt";
  std::ofstream(file) << "30";
  StartServer(2, FileEngine(file));  // no token at all: the admin route is open
  auto predict = [&] { return Body(PostJson("/v1/predict", {{"model", model_}, {"batch", 1}}))["predicted_util"].get<double>(); };
  EXPECT_EQ(predict(), 30);
  std::ofstream(file) << "70";
  auto r = client_->Post("/v1/admin/reload", "", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["reloaded"], true);
  EXPECT_EQ(predict(), 70);
  std::ofstream(file) << "garbage";
  r = client_->Post("/v1/admin/reload", "", "application/json");
  EXPECT_EQ(r->status, 422);
  EXPECT_THAT(Error(r), HasSubstr(file + ": not a predictor"));
  EXPECT_EQ(predict(), 70);
  std::string m = client_->Get("/metrics")->body;
  EXPECT_THAT(m, HasSubstr("gpucast_predictor_reloads_total 1\n"));
  EXPECT_THAT(m, HasSubstr("gpucast_predictor_reload_failures_total 1\n"));
  // A body is not taken.
  r = client_->Post("/v1/admin/reload", "{}", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Error(r), "POST /v1/admin/reload takes no request body");
}

// Finding 6 of issue 20: any token holder, the deputy included, could reload.
TEST_F(ServiceTest, OnlyTheAdminTokenReloads) {
  opts_.token = "jobs-token";
  opts_.deputy_token = "deputy-token";
  opts_.admin_token = "admin-token";
  StartServer();
  auto reload = [&](const std::string& token) {
    httplib::Headers h;
    if (!token.empty()) h = {{"Authorization", "Bearer " + token}};
    return client_->Post("/v1/admin/reload", h, "", "application/json");
  };
  auto r = reload("");
  EXPECT_EQ(r->status, 401);
  for (const char* token : {"jobs-token", "deputy-token"}) {
    r = reload(token);
    EXPECT_EQ(r->status, 403) << token;
    EXPECT_EQ(Error(r), "/v1/admin/reload needs the admin token (gpucast serve --admin-token-file), not the job or "
                        "deputy token");
  }
  r = reload("admin-token");
  EXPECT_EQ(r->status, 422);  // the fake engine cannot reload; the admin got through
  EXPECT_THAT(Error(r), HasSubstr("this prediction engine cannot reload its predictor"));
  // The admin token is the operator's: job routes take it too.
  EXPECT_EQ(client_->Get("/v1/jobs", {{"Authorization", "Bearer admin-token"}})->status, 200);
}

TEST_F(ServiceTest, WithoutAnAdminTokenReloadIsOffWhileOtherTokensAreSet) {
  opts_.token = "jobs-token";
  StartServer();
  auto r = client_->Post("/v1/admin/reload", {{"Authorization", "Bearer jobs-token"}}, "", "application/json");
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(Error(r), "/v1/admin/reload is off: start gpucast serve with --admin-token-file to allow it (SIGHUP "
                      "reloads the predictor without it)");
  r = client_->Post("/v1/admin/reload", "", "application/json");
  EXPECT_EQ(r->status, 403);  // off for everyone
}

}  // namespace
}  // namespace gpucast::service
