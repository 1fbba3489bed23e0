// Step shares of multi-network jobs (hand counts on hand-built graphs) and the
// refusal of partial reports on a real export.
#include "cost/job_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

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

// A masked head, h[mask] @ W2 (a masked LM's loss head), with `rows` of the 4 rows
// selected: x[4,3] @ W1[3,8] = h; NonZero(mask) -> nz[1,rows] (the loader's upper bound
// at rows = 4: TensorInfo::selection_bound) -> Transpose -> idx[rows,1] -> GatherND(h, idx)
// = sel[rows,8] -> MatMul W2[8,5] = logits -> Relu; and h[mask] = sel (ScatterND into h)
// -> Relu, which writes all of h whatever is selected.
CostReport MaskedHead(int64_t rows) {
  constexpr ElemType kBool = 9;
  GraphBuilder b("mlm.onnx", 4);
  b.Data("x", {4, 3}).Data("mask", {4}, kBool).Param("W1", {3, 8}).Param("W2", {8, 5});
  b.Value("h", {4, 8}).Value("nz", {1, rows}, testing::kInt64).Value("idx", {rows, 1}, testing::kInt64);
  b.Value("sel", {rows, 8}).Value("logits", {rows, 5}).Value("out", {rows, 5});
  b.Value("back", {4, 8}).Value("after", {4, 8});
  if (rows == 4) b.SelectionBound("nz");
  b.Op("MatMul", "enc", {"x", "W1"}, {"h"});
  b.Op("NonZero", "nonzero", {"mask"}, {"nz"});
  b.Op("Transpose", "tr", {"nz"}, {"idx"});
  b.Op("GatherND", "pick", {"h", "idx"}, {"sel"});
  b.Op("MatMul", "head", {"sel", "W2"}, {"logits"});
  b.Op("Relu", "act", {"logits"}, {"out"});
  b.Op("ScatterND", "put", {"h", "idx", "sel"}, {"back"});
  b.Op("Relu", "after_put", {"back"}, {"after"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : CostReport{};
}

TEST(SelectionShare, MarksWhatIsComputedFromTheSelection) {
  const CostReport bound = MaskedHead(4);
  std::vector<std::string> marked;
  for (const NodeCost& n : bound.nodes)
    if (n.selection_bound) marked.push_back(n.name);
  // Not the encoder, not the NonZero (it reads the mask), not the scatter into h nor what follows it.
  EXPECT_EQ(marked, (std::vector<std::string>{"tr", "pick", "head", "act"}));
  EXPECT_EQ(bound.SelectionBoundNodes(), 4);
  EXPECT_EQ(MaskedHead(1).SelectionBoundNodes(), 0);  // a selection of known size is not a bound
}

// At a quarter of the upper bound's 4 rows, every marked node costs what it costs with 1 row
// selected (each is linear in the rows), the other nodes what they cost at the bound; input
// bytes are the bound's quarter.
TEST(SelectionShare, AFractionCostsWhatThatManyRowsCost) {
  const CostReport bound = MaskedHead(4), one = MaskedHead(1);
  Result<CostReport> quarter = SelectionShare(bound, 0.25);
  ASSERT_TRUE(quarter.ok()) << quarter.message();
  ASSERT_EQ(quarter->nodes.size(), one.nodes.size());
  for (size_t i = 0; i < one.nodes.size(); ++i) {
    const NodeCost &q = quarter->nodes[i], &o = one.nodes[i], &b = bound.nodes[i];
    SCOPED_TRACE(q.name);
    const NodeCost& want = q.selection_bound ? o : b;
    EXPECT_EQ(q.forward_flops, want.forward_flops);
    EXPECT_EQ(q.backward_flops, want.backward_flops);
    EXPECT_EQ(q.activation_bytes, want.activation_bytes);
    // Input traffic is scaled, not recounted: the gather's rule counts all of h read.
    EXPECT_EQ(q.input_bytes, q.selection_bound ? b.input_bytes / 4 : b.input_bytes);
    EXPECT_EQ(q.saved_bytes, want.saved_bytes);
    EXPECT_EQ(q.weight_bytes, b.weight_bytes);  // the weights are read whatever is selected
  }
  // The head by hand: [1,8] @ [8,5] is 40 MACs: 80 FLOPs forward, 160 backward (dX and dW).
  EXPECT_EQ(quarter->nodes[4].forward_flops, 80);
  EXPECT_EQ(quarter->nodes[4].backward_flops, 160);
  EXPECT_EQ(bound.nodes[4].forward_flops, 320);
  // Totals are the nodes' sums; the network (parameters, nodes) is unchanged.
  int64_t fwd = 0, bwd = 0, act = 0, saved = 0;
  for (const NodeCost& n : quarter->nodes) {
    fwd += n.forward_flops;
    bwd += n.backward_flops;
    act += n.activation_bytes;
    saved += n.saved_bytes;
  }
  EXPECT_EQ(quarter->totals.forward_flops, fwd);
  EXPECT_EQ(quarter->totals.backward_flops, bwd);
  EXPECT_EQ(quarter->totals.activation_bytes, act);
  EXPECT_EQ(quarter->totals.saved_bytes, saved);
  EXPECT_LT(quarter->totals.forward_flops, bound.totals.forward_flops);
  EXPECT_EQ(quarter->totals.params, bound.totals.params);
  EXPECT_EQ(quarter->totals.num_nodes, bound.totals.num_nodes);
  // None selected: the marked nodes cost nothing; all selected: the bound itself.
  Result<CostReport> none = SelectionShare(bound, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->nodes[4].forward_flops, 0);
  EXPECT_EQ(none->nodes[0].forward_flops, bound.nodes[0].forward_flops);
  Result<CostReport> all = SelectionShare(bound, 1);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->totals.forward_flops, bound.totals.forward_flops);
  EXPECT_EQ(all->totals.saved_bytes, bound.totals.saved_bytes);
}

TEST(SelectionShare, FractionsOutsideZeroToOneAreErrors) {
  const CostReport bound = MaskedHead(4);
  EXPECT_EQ(SelectionShare(bound, 1.5).message(), "mlm.onnx: selected fraction must be in [0, 1], got 1.500000");
  EXPECT_EQ(SelectionShare(bound, -0.1).message(), "mlm.onnx: selected fraction must be in [0, 1], got -0.100000");
  EXPECT_FALSE(SelectionShare(bound, std::nan("")).ok());
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
