// Step shares of multi-network jobs (hand counts on hand-built graphs) and the
// refusal of partial reports on a real export.
#include "cost/job_cost.h"

#include <gtest/gtest.h>

#include "cost/test_graph.h"
#include "util/paths.h"

namespace gpucast {
namespace {

using testing::GraphBuilder;

// x[2,4] -> Gemm(W[3,4] transB, b[3]) -> y[2,3] -> Relu -> z.
// Gemm: MACs 2·3·4 = 24: forward 48 + 6 bias = 54; backward dW 48 + db 6 = 54
// (x is data). Relu: forward 6, backward 6. Params 12 + 3 = 15.
CostReport OnePass() {
  GraphBuilder b("d.onnx", 2);
  b.Data("x", {2, 4}).Param("W", {3, 4}).Param("b", {3}).Value("y", {2, 3}).Value("z", {2, 3});
  b.Op("Gemm", "fc", {"x", "W", "b"}, {"y"}).attrs["transB"] = testing::IntAttr(1);
  b.Op("Relu", "act", {"y"}, {"z"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : CostReport{};
}

TEST(StepReport, OnePassIsTheIdentity) {
  CostReport pass = OnePass();
  ASSERT_EQ(pass.totals.forward_flops, 60);
  ASSERT_EQ(pass.totals.backward_flops, 60);
  ASSERT_EQ(pass.totals.params, 15);
  Result<CostReport> s = StepReport(pass, 1, 0);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->totals.forward_flops, 60);
  EXPECT_EQ(s->forward_passes, 1);
  EXPECT_EQ(s->updates, 1);
}

TEST(StepReport, DiscriminatorThreePassesOneUpdate) {
  // DCGAN's D: 3 forward+backward passes per step, one optimizer step.
  Result<CostReport> s = StepReport(OnePass(), 3, 0);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->totals.forward_flops, 180);
  EXPECT_EQ(s->totals.backward_flops, 180);
  EXPECT_EQ(s->totals.flops_by_category[static_cast<int>(Category::kMatmul)], 3 * 108);
  EXPECT_EQ(s->totals.activation_bytes, 3 * (24 + 24));
  EXPECT_EQ(s->totals.params, 15);           // one network
  EXPECT_EQ(s->totals.weight_bytes, 60);     // its size, once
  EXPECT_EQ(s->totals.num_nodes, 2);         // its nodes, once
  EXPECT_EQ(s->nodes[0].params, 15);
  EXPECT_EQ(s->nodes[0].weight_bytes, 3 * 60);  // read in each pass
  EXPECT_EQ(s->forward_passes, 3);
  EXPECT_EQ(s->backward_passes, 3);
  EXPECT_EQ(s->updates, 1);
}

TEST(StepReport, FractionalPassIsAnAverageNotAFullSet) {
  // TD3's actor: fwd+bwd every 2nd step (0.5) plus one forward-only target pass.
  Result<CostReport> s = StepReport(OnePass(), 0.5, 1);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->totals.forward_flops, 90);   // 60 × 1.5
  EXPECT_EQ(s->totals.backward_flops, 30);  // 60 × 0.5
  EXPECT_EQ(s->forward_passes, 1.5);
  EXPECT_EQ(s->backward_passes, 0.5);
  EXPECT_EQ(s->updates, 0.5);  // updated on half of the steps
  EXPECT_EQ(s->totals.params, 15);
  // A forward-only network is never updated.
  Result<CostReport> f = StepReport(OnePass(), 0, 2);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->totals.backward_flops, 0);
  EXPECT_EQ(f->updates, 0);
}

TEST(StepReport, BadCountsAreErrors) {
  EXPECT_EQ(StepReport(OnePass(), -1, 0).message(),
            "d.onnx: passes per step must be finite and >= 0, got repeat -1.000000, forward_only 0.000000");
  EXPECT_EQ(StepReport(OnePass(), 0, 0).message(), "d.onnx: a network must run at least part of a pass per step");
  Result<CostReport> twice = StepReport(OnePass(), 2, 0);
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(StepReport(*twice, 2, 0).message(), "d.onnx: report is already a step share; scale a single pass");
}

TEST(JobStepReports, RepeatedFileIsOneNetworkWithSeveralPasses) {
  const std::string g = HomeDir() + "/models/dcgan_generator.onnx";
  const std::string d = HomeDir() + "/models/dcgan_discriminator.onnx";
  LoadOptions lo;
  lo.batch = 2;
  Result<std::vector<CostReport>> job = JobStepReports({g, d, d, d}, lo, {});
  ASSERT_TRUE(job.ok()) << job.message();
  ASSERT_EQ(job->size(), 2u);
  Result<CostReport> one_d = CostFileForPrediction(d, lo, {});
  ASSERT_TRUE(one_d.ok());
  const CostReport& dr = (*job)[1];
  EXPECT_EQ(dr.path, d);
  EXPECT_EQ(dr.backward_passes, 3);
  EXPECT_EQ(dr.updates, 1);
  EXPECT_EQ(dr.totals.params, one_d->totals.params);
  EXPECT_EQ(dr.totals.forward_flops, 3 * one_d->totals.forward_flops);
  EXPECT_EQ((*job)[0].backward_passes, 1);
  EXPECT_EQ(JobStepReports({}, lo, {}).message(), "no model file given");
}

TEST(CostForPrediction, RefusesBertBeyondItsPositionTable) {
  // BERT's position table has 512 rows: at seq 1024 the embedding sum cannot
  // broadcast, and everything after it has no shape.
  const std::string bert = HomeDir() + "/models/bert.onnx";
  LoadOptions lo;
  lo.batch = 2;
  lo.dims["seq"] = 384;
  Result<CostReport> ok = CostFileForPrediction(bert, lo, {});
  ASSERT_TRUE(ok.ok()) << ok.message();
  lo.dims["seq"] = 1024;
  Result<CostReport> refused = CostFileForPrediction(bert, lo, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(),
            bert + ": cannot predict from a partial cost report: 989 of 1625 nodes could not be costed; "
                   "first: node '/Add' (Add): input or output shape unknown (input shapes [2,1024,768] "
                   "[1,512,768]; unknown: output '/Add_output_0'): shape inference failed: "
                   "[ShapeInferenceError] Incompatible dimensions");
}

}  // namespace
}  // namespace gpucast
