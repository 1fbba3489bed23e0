// The real prediction engine: a predictor trained on the shared measurements,
// real ONNX graphs from models/, the GPU predicted for, and the graph cache's
// key (the content of the graph, not the file).
#include "service/engine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cost/cost.h"
#include "cost/job_cost.h"
#include "graph/onnx_loader.h"
#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/predictor.h"
#include "service/reload.h"
#include "util/paths.h"

namespace gpucast::service {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The engine reads the descriptor the service opened; tests open spec.model.
Result<Prediction> PredictFile(PredictionEngine& engine, const JobSpec& spec, bool* hit) {
  int fd = ::open(spec.model.c_str(), O_RDONLY | O_CLOEXEC);
  PredictInfo info;
  Result<Prediction> r = engine.Predict(spec, {fd}, &info);
  *hit = info.cache_hit;
  if (fd >= 0) ::close(fd);
  return r;
}

JobSpec Spec(const std::string& model, int64_t batch = 1) {
  JobSpec s;
  s.model = s.model_name = model;
  s.batch = batch;
  return s;
}

std::shared_ptr<GraphAnalyzer> Analyzer() { return std::make_shared<GraphAnalyzer>(AnalysisOptions{}); }

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string tmpl = (fs::temp_directory_path() / "gpucast-engine-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto catalog = LoadCatalog(HomeDir() + "/models/catalog.json");
    ASSERT_TRUE(catalog.ok()) << catalog.message();
    auto data = BuildDataset(DataDir() + "/lucid/single_data.csv", *catalog);
    ASSERT_TRUE(data.ok()) << data.message();
    auto p = Predictor::Train(*data, kDefaultAlgo, 1, kDefaultFeatureSet);
    ASSERT_TRUE(p.ok()) << p.message();
    ASSERT_TRUE(p->Save(dir_ + "/predictor.json").ok());
    predictor_ = new Predictor(std::move(p).value());
  }
  static void TearDownTestSuite() {
    delete predictor_;
    fs::remove_all(dir_);
  }
  // The predictor called directly, without the engine's cache.
  static double Direct(const std::string& model, int64_t batch, const std::string& gpu = "", int gpus = 1) {
    LoadOptions lo;
    lo.batch = batch;
    auto g = LoadOnnxGraph(model, lo);
    EXPECT_TRUE(g.ok()) << g.message();
    auto r = AnalyzeCost(*g, CostOptions{});
    JobConfig job;
    job.batch = batch;
    job.gpu = gpu.empty() ? predictor_->info().gpu : gpu;
    job.gpus = gpus;
    auto p = predictor_->Predict({*r}, job);
    EXPECT_TRUE(p.ok()) << p.message();
    return p->prediction.util;
  }
  static std::string dir_;
  static Predictor* predictor_;
};
std::string EngineTest::dir_;
Predictor* EngineTest::predictor_ = nullptr;

TEST_F(EngineTest, PredictsLikeThePredictorAndCachesByContentAndConfig) {
  auto engine = NewPredictorEngine(dir_ + "/predictor.json", Analyzer());
  ASSERT_TRUE(engine.ok()) << engine.message();
  EXPECT_THAT((*engine)->Describe(), HasSubstr(predictor_->model().algo()));
  EXPECT_THAT((*engine)->Describe(), ::testing::Not(HasSubstr("/")));  // /healthz shows it: no paths
  // A copy of a real graph, so the test can touch it.
  const std::string model = dir_ + "/pointnet.onnx";
  fs::copy_file(HomeDir() + "/models/pointnet.onnx", model);
  JobSpec spec = Spec(model, 32);
  bool hit = true;
  auto a = PredictFile(**engine, spec, &hit);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_FALSE(hit);
  EXPECT_DOUBLE_EQ(a->util, Direct(model, 32));
  EXPECT_GE(a->util, 0);
  EXPECT_LE(a->util, 100);
  auto b = PredictFile(**engine, spec, &hit);
  EXPECT_TRUE(hit);
  EXPECT_DOUBLE_EQ(b->util, a->util);
  // Another batch size is another analysis.
  spec.batch = 8;
  (void)PredictFile(**engine, spec, &hit);
  EXPECT_FALSE(hit);
  // The cache is keyed by the graph's bytes: a touched file, or the same
  // bytes under another name (an upload sent again), is the same graph...
  struct utimbuf times = {1000000000, 1000000000};
  ASSERT_EQ(utime(model.c_str(), &times), 0);
  (void)PredictFile(**engine, spec, &hit);
  EXPECT_TRUE(hit);
  fs::copy_file(model, dir_ + "/again.onnx");
  JobSpec again = Spec(dir_ + "/again.onnx", 8);
  (void)PredictFile(**engine, again, &hit);
  EXPECT_TRUE(hit);
  // ...and changed bytes are another graph.
  fs::copy_file(HomeDir() + "/models/resnet50.onnx", model, fs::copy_options::overwrite_existing);
  (void)PredictFile(**engine, spec, &hit);
  EXPECT_FALSE(hit);
  // Attributes and the GPU change the prediction input, not the cached graph.
  spec.attrs["loader_workers"] = "0";
  auto c = PredictFile(**engine, spec, &hit);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_TRUE(hit);
}

// Finding 7 of issue 20: the service predicted for the predictor's GPU, not the job's.
TEST_F(EngineTest, PredictsForTheSpecsGpuAsPredictGpuDoes) {
  auto engine = NewPredictorEngine(dir_ + "/predictor.json", Analyzer());
  ASSERT_TRUE(engine.ok()) << engine.message();
  const std::string vgg = HomeDir() + "/models/vgg.onnx";
  bool hit;
  for (const char* gpu : {"H100", "T4", "RTX3090"}) {
    JobSpec spec = Spec(vgg, 128);
    spec.gpu = gpu;
    auto r = PredictFile(**engine, spec, &hit);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_DOUBLE_EQ(r->util, Direct(vgg, 128, gpu)) << gpu;
  }
  JobSpec h100 = Spec(vgg, 128), t4 = Spec(vgg, 128);
  h100.gpu = "H100";
  t4.gpu = "T4";
  EXPECT_NE(PredictFile(**engine, h100, &hit)->util, PredictFile(**engine, t4, &hit)->util);
}

// The engine's prediction carries the step time, gpu_measured and unsure of
// the same PredictResult that `predict --json` prints (predict/predict_json.h).
TEST_F(EngineTest, StepTimeAndUnsureAsThePredictor) {
  auto engine = NewPredictorEngine(dir_ + "/predictor.json", Analyzer());
  ASSERT_TRUE(engine.ok()) << engine.message();
  const std::string vgg = HomeDir() + "/models/vgg.onnx";
  bool hit;
  for (const char* gpu : {"RTX3090", "H100"}) {
    JobSpec spec = Spec(vgg, 64);
    spec.gpu = gpu;
    auto r = PredictFile(**engine, spec, &hit);
    ASSERT_TRUE(r.ok()) << r.message();
    LoadOptions lo;
    lo.batch = 64;
    auto g = LoadOnnxGraph(vgg, lo);
    ASSERT_TRUE(g.ok());
    auto c = AnalyzeCost(*g, CostOptions{});
    JobConfig job;
    job.batch = 64;
    job.gpu = gpu;
    job.wording = InputWording::kApi;  // the engine's: its warnings name the request's fields
    auto direct = predictor_->Predict({*c}, job);
    ASSERT_TRUE(direct.ok()) << direct.message();
    ASSERT_TRUE(r->step_ms && r->step_lo && r->step_hi) << gpu;
    EXPECT_DOUBLE_EQ(*r->step_ms, direct->prediction.step_ms);
    EXPECT_DOUBLE_EQ(*r->step_hi, direct->prediction.step_high_ms);
    EXPECT_EQ(*r->gpu_measured, std::string(gpu) == "RTX3090");
    EXPECT_EQ(*r->unsure, direct->unsure);
    EXPECT_EQ(r->warnings, direct->warnings);
    nlohmann::json j;
    AddPredictionJson(*r, gpu, &j);
    EXPECT_DOUBLE_EQ(j["step_ms"].get<double>(), direct->prediction.step_ms);
    EXPECT_EQ(j["gpu_measured"].get<bool>(), std::string(gpu) == "RTX3090");
  }
}

// A job's "gpus" is a data-parallel job on that many whole GPUs of one node:
// one rank's prediction, as `predict --gpus N` (not the one-GPU answer: the
// all-reduce's NCCL kernels count as busy, docs/predictor.md).
TEST_F(EngineTest, DataParallelJobsPredictAsPredictGpus) {
  auto engine = NewPredictorEngine(dir_ + "/predictor.json", Analyzer());
  ASSERT_TRUE(engine.ok()) << engine.message();
  const std::string vgg = HomeDir() + "/models/vgg.onnx";
  bool hit;
  JobSpec one = Spec(vgg, 32), four = Spec(vgg, 32);
  one.gpu = four.gpu = "RTX3090";
  four.gpus = 4;
  auto a = PredictFile(**engine, one, &hit);
  auto b = PredictFile(**engine, four, &hit);
  ASSERT_TRUE(a.ok() && b.ok()) << a.message() << b.message();
  EXPECT_DOUBLE_EQ(b->util, Direct(vgg, 32, "RTX3090", 4));
  EXPECT_NE(b->util, a->util);
}

// A reload keeps the analysed graphs: they depend on the graph and the cost
// code, not on the predictor file.
TEST_F(EngineTest, AReloadKeepsTheGraphCache) {
  auto analyzer = Analyzer();
  auto engine = NewReloadingPredictorEngine(dir_ + "/predictor.json", analyzer);
  ASSERT_TRUE(engine.ok()) << engine.message();
  bool hit = true;
  JobSpec spec = Spec(HomeDir() + "/models/pointnet.onnx", 16);
  ASSERT_TRUE(PredictFile(**engine, spec, &hit).ok());
  EXPECT_FALSE(hit);
  ASSERT_TRUE((*engine)->Reload().ok());
  ASSERT_TRUE(PredictFile(**engine, spec, &hit).ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(analyzer->stats().entries, 1u);
}

TEST_F(EngineTest, SeveralNetworksPredictLikePredictWithRepeatedModels) {
  // DCGAN through the API ("models": G once, D three times) must be the
  // prediction `gpucast predict --model G --model D --model D --model D`
  // makes: JobStepReports, then the predictor.
  auto engine = NewPredictorEngine(dir_ + "/predictor.json", Analyzer());
  ASSERT_TRUE(engine.ok()) << engine.message();
  const std::string g = HomeDir() + "/models/dcgan_generator.onnx";
  const std::string d = HomeDir() + "/models/dcgan_discriminator.onnx";
  JobSpec spec = Spec(g, 128);
  spec.models = {{g, g, 1}, {d, d, 3}};
  int fg = ::open(g.c_str(), O_RDONLY | O_CLOEXEC), fd = ::open(d.c_str(), O_RDONLY | O_CLOEXEC);
  PredictInfo info;
  auto r = (*engine)->Predict(spec, {fg, fd}, &info);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_FALSE(info.cache_hit);
  LoadOptions lo;
  lo.batch = 128;
  auto reports = JobStepReports({g, d, d, d}, lo, CostOptions{});
  ASSERT_TRUE(reports.ok()) << reports.message();
  JobConfig job;
  job.batch = 128;
  job.gpu = predictor_->info().gpu;
  auto direct = predictor_->Predict(*reports, job);
  ASSERT_TRUE(direct.ok()) << direct.message();
  EXPECT_DOUBLE_EQ(r->util, direct->prediction.util);
  EXPECT_DOUBLE_EQ(r->util_lo, direct->prediction.low);
  EXPECT_DOUBLE_EQ(r->util_hi, direct->prediction.high);
  // Both graphs come from the cache the second time.
  auto again = (*engine)->Predict(spec, {fg, fd}, &info);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(info.cache_hit);
  EXPECT_DOUBLE_EQ(again->util, r->util);
  // The generator alone is another job: its own prediction.
  JobSpec alone = Spec(g, 128);
  bool hit = false;
  auto only_g = PredictFile(**engine, alone, &hit);
  ASSERT_TRUE(only_g.ok());
  EXPECT_DOUBLE_EQ(only_g->util, Direct(g, 128));
  // Files and networks must pair up; a bad second file names itself.
  EXPECT_THAT((*engine)->Predict(spec, {fg}, &info).message(), HasSubstr("2 networks but 1 open files"));
  spec.models[1].path = spec.models[1].name = "missing.onnx";
  EXPECT_EQ((*engine)->Predict(spec, {fg, -1}, &info).message(), "missing.onnx: cannot read model file");
  ::close(fg);
  ::close(fd);
}

TEST_F(EngineTest, LargeGraphPredictsHigherThanSmall) {
  // Measured: ResNet50 on a synthetic GPU batch runs near 100%, PointNet near 5-15%
  // (../shared/workloads.md); the trained predictor must order them so.
  auto engine = NewPredictorEngine(dir_ + "/predictor.json", Analyzer());
  ASSERT_TRUE(engine.ok());
  bool hit;
  JobSpec r50 = Spec(HomeDir() + "/models/resnet50.onnx", 64);
  JobSpec pn = Spec(HomeDir() + "/models/pointnet.onnx", 32);
  auto big = PredictFile(**engine, r50, &hit);
  auto small = PredictFile(**engine, pn, &hit);
  ASSERT_TRUE(big.ok() && small.ok());
  EXPECT_GT(big->util, 80);
  EXPECT_LT(small->util, 30);
}

TEST_F(EngineTest, Errors) {
  auto engine = NewPredictorEngine(dir_ + "/predictor.json", Analyzer());
  ASSERT_TRUE(engine.ok());
  bool hit;
  JobSpec missing = Spec(dir_ + "/nope.onnx");  // open fails: the engine gets -1
  EXPECT_EQ(PredictFile(**engine, missing, &hit).message(), dir_ + "/nope.onnx: cannot read model file");
  JobSpec directory = Spec(dir_);
  EXPECT_EQ(PredictFile(**engine, directory, &hit).message(), dir_ + ": not a regular file");
  std::ofstream(dir_ + "/bad.onnx") << "not a model";
  JobSpec bad = Spec(dir_ + "/bad.onnx");
  auto r = PredictFile(**engine, bad, &hit);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.message(), HasSubstr(dir_ + "/bad.onnx: "));
  // Messages speak to an API client: "dims", not "--dim".
  JobSpec bert = Spec(HomeDir() + "/models/bert.onnx", 8);
  auto no_seq = PredictFile(**engine, bert, &hit);
  ASSERT_FALSE(no_seq.ok());
  EXPECT_THAT(no_seq.message(), HasSubstr("set each in \"dims\", e.g. \"dims\": {\"seq\": N}"));
  EXPECT_THAT(no_seq.message(), ::testing::Not(HasSubstr("--dim")));
  auto no_predictor = NewPredictorEngine(dir_ + "/none.json", Analyzer());
  ASSERT_FALSE(no_predictor.ok());
  EXPECT_THAT(no_predictor.message(), HasSubstr(dir_ + "/none.json"));
}

}  // namespace
}  // namespace gpucast::service
