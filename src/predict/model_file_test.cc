#include "predict/model_file.h"

#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

namespace gpucast {
namespace {

// A small synthetic dataset with its own schema (no graphs needed).
Dataset Synthetic() {
  Dataset d;
  d.csv_path = "synthetic.csv";
  d.digest = DigestString("synthetic");
  d.gpu = "RTX3090";
  d.schema_name = "test-features";
  d.schema_version = 3;
  d.feature_names = {"total_flops", "params", "est_gpu_busy_ms", "loader_workers"};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 40; ++i) {
    double a = rng() % 1000, b = rng() % 100, c = (rng() % 1000) / 1000.0, w = rng() % 3;
    d.x.push_back({a, b, c, w});
    Measurement m;
    m.model = "M" + std::to_string(i % 5);
    m.dataset = "D";
    m.batch = 32;
    m.gpu_util = std::min(100.0, 5 + 90 * c * (w == 0 ? 1 : 0.5));
    d.rows.push_back(m);
    d.group.push_back(i % 5);
  }
  for (int g = 0; g < 5; ++g) d.groups.push_back("M" + std::to_string(g) + "/D");
  return d;
}

FeatureSchema SchemaOf(const Dataset& d) { return {d.schema_name, d.schema_version, d.feature_names}; }

class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, PredictionsBitForBit) {
  Dataset d = Synthetic();
  auto p = Predictor::Train(d, GetParam(), 42);
  ASSERT_TRUE(p.ok()) << p.message();
  auto j = ModelFileJson(*p);
  ASSERT_TRUE(j.ok()) << j.message();
  auto q = ParseModelFile(j->dump(), "m.json", SchemaOf(d));
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->info().training_digest, d.digest);
  EXPECT_EQ(q->info().gpu, "RTX3090");
  auto a = p->PredictFeatures(d.x);
  auto b = q->PredictFeatures(d.x);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < d.x.size(); ++i) {
    EXPECT_EQ(std::memcmp(&(*a)[i], &(*b)[i], sizeof(UtilPrediction)), 0) << "row " << i;
    EXPECT_GE((*a)[i].util, 0);
    EXPECT_LE((*a)[i].util, 100);
  }
  // Saving the loaded model gives the same file.
  EXPECT_EQ(ModelFileJson(*q)->dump(), j->dump());
}

INSTANTIATE_TEST_SUITE_P(Algos, RoundTrip, ::testing::Values("forest", "gbm", "ridge", "knn"));

// The GPU-transfer scores (an unmeasured GPU's widening) are stored and read back sorted.
TEST(ModelFileTest, TransferScoresRoundTrip) {
  Dataset d = Synthetic();
  auto p = Predictor::Train(d, "ridge", 42);
  ASSERT_TRUE(p.ok()) << p.message();
  UtilModel m = p->model();
  m.set_transfer_calibration_scores({0.4, -0.25, 0.1});
  EXPECT_EQ(m.transfer_calibration(), (std::vector<double>{-0.25, 0.1, 0.4}));
  Predictor with(p->info(), m);
  auto j = ModelFileJson(with);
  ASSERT_TRUE(j.ok()) << j.message();
  EXPECT_EQ((*j)["calibration"]["transfer_scores"].size(), 3u);
  auto q = ParseModelFile(j->dump(), "m.json", SchemaOf(d));
  ASSERT_TRUE(q.ok()) << q.message();
  EXPECT_EQ(q->model().transfer_calibration(), (std::vector<double>{-0.25, 0.1, 0.4}));
  EXPECT_TRUE(q->model().transfer_util_calibration().empty());
  // A file without them (written before) loads with none.
  nlohmann::json old = *j;
  old["calibration"].erase("transfer_scores");
  auto r = ParseModelFile(old.dump(), "m.json", SchemaOf(d));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->model().transfer_calibration().empty());
  // The utilization transfer scores too; a file from before them (step scores only) loads with
  // none, and its unmeasured GPUs keep the busy-held rule.
  m.set_transfer_util_calibration_scores({{40, 0.3}, {97.5, -0.5}});
  Predictor with_util(p->info(), m);
  auto ju = ModelFileJson(with_util);
  ASSERT_TRUE(ju.ok()) << ju.message();
  EXPECT_EQ((*ju)["calibration"]["transfer_util_scores"],
            nlohmann::json::parse(R"([{"predicted_util": 97.5, "score": -0.5}, {"predicted_util": 40, "score": 0.3}])"));
  auto qu = ParseModelFile(ju->dump(), "m.json", SchemaOf(d));
  ASSERT_TRUE(qu.ok()) << qu.message();
  EXPECT_EQ(qu->model().transfer_util_calibration(), (std::vector<std::pair<double, double>>{{97.5, -0.5}, {40, 0.3}}));
  EXPECT_EQ(ModelFileJson(*qu)->dump(), ju->dump());
  nlohmann::json before = *ju;
  before["calibration"].erase("transfer_util_scores");
  auto rb = ParseModelFile(before.dump(), "m.json", SchemaOf(d));
  ASSERT_TRUE(rb.ok()) << rb.message();
  EXPECT_TRUE(rb->model().transfer_util_calibration().empty());
  EXPECT_EQ(rb->model().transfer_calibration(), (std::vector<double>{-0.25, 0.1, 0.4}));
  before["calibration"]["transfer_util_scores"] = nlohmann::json::parse(R"([{"predicted_util": 50}])");
  EXPECT_FALSE(ParseModelFile(before.dump(), "m.json", SchemaOf(d)).ok());
  // Each score's GPU type (the window is over types) is stored beside it and read back in the
  // sorted order; a file without them reads as one group (the pooled window, as written).
  m.set_transfer_calibration_scores({0.4, -0.25, 0.1}, {"T4", "A100-80GB", "T4"});
  m.set_transfer_util_calibration_scores({{40, 0.3}, {97.5, -0.5}}, {"RTX3090", "A100-80GB"});
  Predictor typed(p->info(), m);
  auto jt = ModelFileJson(typed);
  ASSERT_TRUE(jt.ok()) << jt.message();
  EXPECT_EQ((*jt)["calibration"]["transfer_score_gpus"], nlohmann::json({"A100-80GB", "T4", "T4"}));
  auto qt = ParseModelFile(jt->dump(), "m.json", SchemaOf(d));
  ASSERT_TRUE(qt.ok()) << qt.message();
  EXPECT_EQ(qt->model().transfer_gpus(), (std::vector<std::string>{"A100-80GB", "T4", "T4"}));
  EXPECT_EQ(qt->model().transfer_util_gpus(), (std::vector<std::string>{"A100-80GB", "RTX3090"}));
  EXPECT_EQ(qt->model().TransferStepWindow(0.8), typed.model().TransferStepWindow(0.8));
  EXPECT_EQ(ModelFileJson(*qt)->dump(), jt->dump());
  nlohmann::json untyped = *jt;
  untyped["calibration"].erase("transfer_score_gpus");
  auto qn = ParseModelFile(untyped.dump(), "m.json", SchemaOf(d));
  ASSERT_TRUE(qn.ok()) << qn.message();
  EXPECT_EQ(qn->model().TransferStepWindow(0.8), ShortestWindow({-0.25, 0.1, 0.4}, 0.8));
  untyped["calibration"]["transfer_score_gpus"] = nlohmann::json({"T4"});
  EXPECT_FALSE(ParseModelFile(untyped.dump(), "m.json", SchemaOf(d)).ok());
}

TEST(ModelFileTest, RecordsProvenance) {
  Dataset d = Synthetic();
  auto j = ModelFileJson(*Predictor::Train(d, "knn", 1, "paper"));
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["format"], "gpucast-predictor");
  EXPECT_EQ((*j)["format_version"], 5);
  EXPECT_TRUE((*j)["memory"].is_null());  // the synthetic rows have no memory column
  // Calibrated on the 5 synthetic workloads: one leave-one-workload-out residual per row.
  EXPECT_EQ((*j)["calibration"]["scores"].size(), 40u);
  EXPECT_EQ((*j)["calibration"]["method"], "normalized-shortest");
  EXPECT_EQ((*j)["feature_schema"]["name"], "test-features");
  EXPECT_EQ((*j)["feature_schema"]["version"], 3);
  EXPECT_EQ((*j)["training"]["digest"], DigestString("synthetic"));
  EXPECT_EQ((*j)["training"]["rows"], 40);
  EXPECT_EQ((*j)["algo"], "knn");
  EXPECT_EQ((*j)["params"]["k"], 5);
  EXPECT_EQ((*j)["features_used"], nlohmann::json({"total_flops", "params"}));
}

TEST(ModelFileTest, SchemaMismatchIsAClearError) {
  Dataset d = Synthetic();
  auto j = ModelFileJson(*Predictor::Train(d, "ridge", 1));
  FeatureSchema other = SchemaOf(d);
  other.version = 4;
  other.names.push_back("extra");
  EXPECT_EQ(ParseModelFile(j->dump(), "m.json", other).message(),
            "m.json: feature schema test-features v3 (4 features) does not match this build's "
            "test-features v4 (5 features); retrain with 'gpucast train'");
  FeatureSchema renamed = SchemaOf(d);
  renamed.names[0] = "gflops";  // same count and version, other names
  EXPECT_EQ(ParseModelFile(j->dump(), "m.json", renamed).message(),
            "m.json: feature schema test-features v3 (4 features) does not match this build's "
            "test-features v3 (4 features); retrain with 'gpucast train'");
}

TEST(ModelFileTest, OtherErrors) {
  FeatureSchema s{"x", 1, {"a"}};
  EXPECT_EQ(ParseModelFile("[1]", "m.json", s).message(), "m.json: not a JSON object");
  // Malformed JSON says where and why (was the bare "not a JSON object").
  EXPECT_EQ(ParseModelFile("{\"format\": \"gpucast-predictor\", \"format_version\": 1e400}", "m.json", s).message(),
            "m.json: not a JSON object (malformed JSON: number overflow parsing '1e400')");
  EXPECT_EQ(ParseModelFile("{\"format\": ", "m.json", s).message(),
            "m.json: not a JSON object (malformed JSON: parse error at line 1, column 12: syntax error while parsing "
            "value - unexpected end of input; expected '[', '{', or a literal)");
  EXPECT_EQ(ParseModelFile(R"({"format":"onnx"})", "m.json", s).message(),
            "m.json: not a gpucast predictor file (format is not 'gpucast-predictor')");
  EXPECT_EQ(ParseModelFile(R"({"format":"gpucast-predictor","format_version":9})", "m.json", s).message(),
            "m.json: format_version 9: this build reads 5 (the file is from a newer gpucast)");
  EXPECT_EQ(ParseModelFile(R"({"format":"gpucast-predictor","format_version":"5"})", "m.json", s).message(),
            "m.json: format_version: want 5");
}

// The training pass's lowo predictions (what `simulate --predictor` reuses) survive the file bit for
// bit; a file without them (older gpucast) loads with none; a hostile value names the row.
TEST(ModelFileTest, LowoPredictionsRoundTrip) {
  Dataset d = Synthetic();
  auto p = Predictor::Train(d, "forest", 0);
  ASSERT_TRUE(p.ok()) << p.message();
  const std::vector<LowoRowPrediction>& a = p->info().lowo_predictions;
  ASSERT_EQ(a.size(), d.rows.size());
  auto j = ModelFileJson(*p);
  ASSERT_TRUE(j.ok());
  auto q = ParseModelFile(j->dump(), "m.json", SchemaOf(d));
  ASSERT_TRUE(q.ok()) << q.message();
  const std::vector<LowoRowPrediction>& b = q->info().lowo_predictions;
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::memcmp(&a[i].predicted, &b[i].predicted, sizeof(double)), 0) << i;
    EXPECT_EQ(b[i].model, a[i].model);
    EXPECT_TRUE(std::isnan(b[i].mem_high));  // no memory column in these rows: null in the file
  }
  // The stored values are the residuals' predictions: log1p(measured) - log1p(predicted) = the calibration
  // pass's residuals, whose RMS over the rows is the stored pooled accuracy.
  double ss = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double r = std::log1p(d.rows[i].gpu_util) - std::log1p(a[i].predicted);
    ss += r * r;
  }
  EXPECT_NEAR(std::sqrt(ss / a.size()), p->info().accuracy.rmsle, 1e-12);

  nlohmann::json old = *j;
  old.erase("lowo_predictions");
  auto o = ParseModelFile(old.dump(), "old.json", SchemaOf(d));
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_TRUE(o->info().lowo_predictions.empty());

  nlohmann::json bad = *j;
  bad["lowo_predictions"]["rows"][1]["predicted_util"] = 150;
  EXPECT_EQ(ParseModelFile(bad.dump(), "bad.json", SchemaOf(d)).message(),
            "bad.json: lowo_predictions: row 2 (" + a[1].model + "/D): predicted_util outside 0-100, batch <= 0 "
            "or a memory value not a finite number >= 0");
  bad = *j;
  bad["lowo_predictions"]["rows"][0].erase("gpu");
  EXPECT_NE(ParseModelFile(bad.dump(), "bad.json", SchemaOf(d)).message().find("bad.json: "), std::string::npos);
}

// A format-3 file (before the memory model) is refused with what to do.
TEST(ModelFileTest, OldFormatIsRefusedWithWhatToDo) {
  Dataset d = Synthetic();
  auto j = ModelFileJson(*Predictor::Train(d, "ridge", 1));
  ASSERT_TRUE(j.ok());
  (*j)["format_version"] = 3;
  j->erase("memory");
  EXPECT_EQ(ParseModelFile(j->dump(), "old.json", SchemaOf(d)).message(),
            "old.json: format_version 3: this build reads 5 (4 adds the GPU memory model, 5 the lowo accuracy and "
            "job-fact offsets); retrain with 'gpucast train'");
}

// With memory labels the file carries the memory model; loading it gives the same memory predictions.
TEST(ModelFileTest, MemoryModelRoundTrip) {
  Dataset d = Synthetic();
  for (size_t i = 0; i < d.rows.size(); ++i) {
    MemoryEstimate e;
    e.gpu = "RTX3090";
    e.sms = e.gpu_sms = 82;
    e.capacity_mib = 24576;
    e.weights_mib = 10.0 * (1 + d.group[i]);
    e.activations_mib = 20.0 * (1 + i % 3) * (1 + d.group[i]);
    e.largest_tensor_mib = 1 + i % 2;
    d.mem.push_back(e);
    d.rows[i].gmem = 1500 + 1.2 * e.activations_mib + e.weights_mib + 2 * e.largest_tensor_mib;
  }
  auto p = Predictor::Train(d, "ridge", 1);
  ASSERT_TRUE(p.ok()) << p.message();
  ASSERT_NE(p->memory(), nullptr);
  auto j = ModelFileJson(*p);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["memory"]["rows"], 40);
  EXPECT_EQ((*j)["memory"]["calibration"]["residuals"].size(), 40u);
  auto q = ParseModelFile(j->dump(), "m.json", SchemaOf(d));
  ASSERT_TRUE(q.ok()) << q.message();
  ASSERT_NE(q->memory(), nullptr);
  for (const MemoryEstimate& e : d.mem) {
    MemoryPrediction a = p->memory()->Predict(e, 0.8), b = q->memory()->Predict(e, 0.8);
    EXPECT_EQ(a.mib, b.mib);
    EXPECT_EQ(a.low, b.low);
    EXPECT_EQ(a.high, b.high);
  }
  EXPECT_EQ(ModelFileJson(*q)->dump(), j->dump());
  // A memory section out of its bounds is refused, naming the field.
  (*j)["memory"]["activation_factor"] = 100;
  EXPECT_EQ(ParseModelFile(j->dump(), "m.json", SchemaOf(d)).message(),
            "m.json: memory.activation_factor: 100 outside its bounds");
  (*j)["memory"] = {{"context_mib", {{"RTX3090", 1500}}}};
  EXPECT_EQ(ParseModelFile(j->dump(), "m.json", SchemaOf(d)).message().rfind("m.json: memory: ", 0), 0u);
}

}  // namespace
}  // namespace gpucast
