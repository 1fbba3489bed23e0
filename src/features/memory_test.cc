// The physical memory estimate, by hand on a small MLP.
#include "features/memory.h"

#include <optional>

#include <gtest/gtest.h>

#include "cost/job_cost.h"
#include "cost/test_graph.h"
#include "features/gpu_specs.h"
#include "util/paths.h"

namespace gpucast {
namespace {

using testing::GraphBuilder;
using testing::IntAttr;

constexpr double kMiB = 1024.0 * 1024.0;

// x[B,256] -> Gemm(w1[512,256]^T, b1[512]) -> h -> Relu -> r -> Gemm(w2[10,512]^T, b2[10]) -> y[B,10].
CostReport Mlp(int64_t batch, bool amp = false) {
  GraphBuilder b("mlp.onnx", batch);
  b.Data("x", {batch, 256}).Param("w1", {512, 256}).Param("b1", {512}).Value("h", {batch, 512});
  b.Value("r", {batch, 512}).Param("w2", {10, 512}).Param("b2", {10}).Value("y", {batch, 10}).Output("y");
  b.Op("Gemm", "fc1", {"x", "w1", "b1"}, {"h"}).attrs["transB"] = IntAttr(1);
  b.Op("Relu", "relu", {"h"}, {"r"});
  b.Op("Gemm", "fc2", {"r", "w2", "b2"}, {"y"}).attrs["transB"] = IntAttr(1);
  Result<CostReport> r = AnalyzeCost(b.graph(), CostOptions{amp});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? r.value() : CostReport{};
}

JobConfig Job(int64_t batch, bool amp = false) {
  JobConfig job;
  job.batch = batch;
  job.amp = amp;
  return job;
}

// Parameters: 512·256 + 512 + 10·512 + 10 = 136,714 (fp32: 546,856 bytes).
constexpr double kParams = 512 * 256 + 512 + 10 * 512 + 10;

TEST(EstimateMemory, SmallMlpByHand) {
  const int64_t batch = 1024;
  JobConfig job = Job(batch);
  job.attrs.optimizer = Optimizer::kAdam;
  Result<MemoryEstimate> e = EstimateMemory({Mlp(batch)}, job);
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_DOUBLE_EQ(e->weights_mib, kParams * 4 / kMiB);
  EXPECT_DOUBLE_EQ(e->gradients_mib, kParams * 4 / kMiB);
  EXPECT_DOUBLE_EQ(e->optimizer_mib, 2 * kParams * 4 / kMiB);  // Adam: exp_avg and exp_avg_sq
  EXPECT_DOUBLE_EQ(e->autocast_mib, 0);
  EXPECT_DOUBLE_EQ(e->data_mib, 1024.0 * 256 * 4 / kMiB);  // x: 1 MiB
  // fc1 keeps x (a data input, resident already); relu keeps r (B·512·4 = 2 MiB); fc2 keeps r again.
  EXPECT_DOUBLE_EQ(e->activations_mib, 2.0);
  EXPECT_DOUBLE_EQ(e->largest_tensor_mib, 2.0);  // h and r
  // The loss on y [B, 10]: three fp32 tensors of its size.
  EXPECT_DOUBLE_EQ(e->loss_head_mib, 3 * 4 * 1024.0 * 10 / kMiB);
  EXPECT_DOUBLE_EQ(e->rounding_mib, 0);          // 2 MiB is a whole number of 512-byte blocks
  EXPECT_DOUBLE_EQ(e->ddp_buckets_mib, 0);
  EXPECT_EQ(e->gpu, "RTX3090");
  EXPECT_EQ(e->sms, 82);
  EXPECT_EQ(e->gpu_sms, 82);
  EXPECT_DOUBLE_EQ(e->capacity_mib, 24 * 1024);
  // cuBLAS (Gemm): 2 x 4 MiB + 8 x 16 KiB, and cuBLASLt's 4 MiB on an Ampere GPU with 24 GB.
  EXPECT_TRUE(e->uses_cublas);
  EXPECT_FALSE(e->uses_cudnn);
  EXPECT_DOUBLE_EQ(e->cublas_workspace_mib, 8.125 + 4);
  // r (2 MiB, between 1 and 10 MiB) sits in one of the allocator's 20 MiB segments.
  EXPECT_DOUBLE_EQ(e->segments_mib, 20);
  EXPECT_DOUBLE_EQ(e->trained_params, kParams);
  EXPECT_DOUBLE_EQ(e->uncertain_mib, 0);
  EXPECT_DOUBLE_EQ(e->StaticMib(), (4 * kParams * 4 + 1024.0 * 256 * 4) / kMiB + 8.125 + 4 + 20);
}

TEST(EstimateMemory, OptimizerStatesAndDefault) {
  const double p = kParams * 4 / kMiB;
  for (auto [o, states] : {std::pair{Optimizer::kSgd, 0}, std::pair{Optimizer::kSgdMomentum, 1},
                           std::pair{Optimizer::kAdam, 2}, std::pair{Optimizer::kAdamW, 2}}) {
    JobConfig job = Job(8);
    job.attrs.optimizer = o;
    EXPECT_DOUBLE_EQ(EstimateMemory({Mlp(8)}, job)->optimizer_mib, states * p) << OptimizerName(o);
  }
  // Unknown optimizer: the documented default (Adam).
  Result<MemoryEstimate> d = EstimateMemory({Mlp(8)}, Job(8));
  EXPECT_EQ(d->optimizer, kDefaultOptimizer);
  EXPECT_DOUBLE_EQ(d->optimizer_mib, 2 * p);
}

TEST(EstimateMemory, AmpHalvesWhatAutocastCasts) {
  const int64_t batch = 1024;
  Result<MemoryEstimate> e = EstimateMemory({Mlp(batch, true)}, Job(batch, true));
  ASSERT_TRUE(e.ok()) << e.message();
  // fc1 keeps an fp16 copy of x (B·256·2 = 0.5 MiB); h and r are fp16 (1 MiB each), relu keeps r.
  EXPECT_DOUBLE_EQ(e->activations_mib, 1.5);
  EXPECT_DOUBLE_EQ(e->largest_tensor_mib, 1.0);
  EXPECT_DOUBLE_EQ(e->autocast_mib, kParams * 2 / kMiB);  // fp16 copies of both layers' weights
  EXPECT_DOUBLE_EQ(e->weights_mib, kParams * 4 / kMiB);   // fp32 master weights stay
}

// Outside the data: weights do not grow with the batch, activations grow exactly linearly.
TEST(EstimateMemory, PhysicalInTheBatch) {
  Result<MemoryEstimate> a = EstimateMemory({Mlp(1)}, Job(1));
  ASSERT_TRUE(a.ok());
  for (int64_t batch : {int64_t{2}, int64_t{64}, int64_t{4096}, int64_t{1} << 20}) {
    Result<MemoryEstimate> b = EstimateMemory({Mlp(batch)}, Job(batch));
    ASSERT_TRUE(b.ok()) << b.message();
    EXPECT_DOUBLE_EQ(b->weights_mib, a->weights_mib);
    EXPECT_DOUBLE_EQ(b->gradients_mib, a->gradients_mib);
    EXPECT_DOUBLE_EQ(b->optimizer_mib, a->optimizer_mib);
    EXPECT_NEAR(b->activations_mib, batch * a->activations_mib, 1e-9 * batch);
    EXPECT_NEAR(b->data_mib, batch * a->data_mib, 1e-9 * batch);
  }
}

TEST(EstimateMemory, NetworksAndPasses) {
  // The same network run 3 times per step (a GAN discriminator): weights, gradients, optimizer
  // state and one pass of kept tensors, not three.
  Result<CostReport> three = StepReport(Mlp(64), 3, 0);
  ASSERT_TRUE(three.ok());
  Result<MemoryEstimate> once = EstimateMemory({Mlp(64)}, Job(64));
  Result<MemoryEstimate> thrice = EstimateMemory({*three}, Job(64));
  EXPECT_DOUBLE_EQ(thrice->activations_mib, once->activations_mib);
  EXPECT_DOUBLE_EQ(thrice->weights_mib, once->weights_mib);
  EXPECT_DOUBLE_EQ(thrice->optimizer_mib, once->optimizer_mib);
  // Two networks: everything adds up, the largest tensor is the larger one's.
  Result<MemoryEstimate> two = EstimateMemory({Mlp(64), Mlp(64)}, Job(64));
  EXPECT_DOUBLE_EQ(two->weights_mib, 2 * once->weights_mib);
  EXPECT_DOUBLE_EQ(two->activations_mib, 2 * once->activations_mib);
  EXPECT_DOUBLE_EQ(two->largest_tensor_mib, once->largest_tensor_mib);
  // A forward-only network (a target network): weights only.
  Result<CostReport> fwd = StepReport(Mlp(64), 0, 1);
  ASSERT_TRUE(fwd.ok());
  Result<MemoryEstimate> f = EstimateMemory({*fwd}, Job(64));
  EXPECT_DOUBLE_EQ(f->weights_mib, once->weights_mib);
  EXPECT_DOUBLE_EQ(f->gradients_mib, 0);
  EXPECT_DOUBLE_EQ(f->optimizer_mib, 0);
  EXPECT_DOUBLE_EQ(f->activations_mib, 0);
  // The loss head: the largest float output of a network with a backward (three fp32 tensors of
  // y [64, 10]), not summed over networks; a forward-only network's output gets none.
  EXPECT_DOUBLE_EQ(once->loss_head_mib, 3 * 4 * 64.0 * 10 / kMiB);
  EXPECT_DOUBLE_EQ(two->loss_head_mib, once->loss_head_mib);
  EXPECT_DOUBLE_EQ(f->loss_head_mib, 0);
}

// A language model's head: h[T·B, 200] -> Gemm(w[V, 200]^T) -> logits -> LogSoftmax -> log_probs
// [T·B, V], V = 33,278 (Wikitext-2): three fp32 tensors of log_probs (under AMP too: autocast runs
// the loss in fp32), 3 x 4 x 35·64 x 33,278 B = 853.07 MiB.
TEST(EstimateMemory, LossHeadOfALanguageModel) {
  const int64_t rows = 35 * 64, vocab = 33278;
  for (bool amp : {false, true}) {
    GraphBuilder b("lm_head.onnx", 64);
    b.Data("h", {rows, 200}).Param("w", {vocab, 200}).Value("logits", {rows, vocab}).Value("log_probs", {rows, vocab});
    b.Output("log_probs");
    b.Op("Gemm", "decoder", {"h", "w"}, {"logits"}).attrs["transB"] = IntAttr(1);
    b.Op("LogSoftmax", "log_softmax", {"logits"}, {"log_probs"}).attrs["axis"] = IntAttr(1);
    Result<CostReport> r = AnalyzeCost(b.graph(), CostOptions{amp});
    ASSERT_TRUE(r.ok()) << r.message();
    Result<MemoryEstimate> e = EstimateMemory({*r}, Job(64, amp));
    ASSERT_TRUE(e.ok()) << e.message();
    EXPECT_DOUBLE_EQ(e->loss_head_mib, 3.0 * 4 * rows * vocab / kMiB) << "amp " << amp;
    EXPECT_NEAR(e->loss_head_mib, 853.07, 0.01);
  }
}

TEST(EstimateMemory, DataParallelRanksAddGradientBuckets) {
  Result<MemoryEstimate> one = EstimateMemory({Mlp(64)}, Job(64), 1);
  Result<MemoryEstimate> four = EstimateMemory({Mlp(64)}, Job(64), 4);
  ASSERT_TRUE(one.ok() && four.ok());
  EXPECT_DOUBLE_EQ(one->ddp_buckets_mib, 0);
  EXPECT_DOUBLE_EQ(four->ddp_buckets_mib, four->gradients_mib);
  EXPECT_DOUBLE_EQ(four->StaticMib() - one->StaticMib(), four->gradients_mib);
  EXPECT_EQ(four->ranks, 4);
}

// CUBLAS_WORKSPACE_CONFIG's default (8.125 MiB) plus cuBLASLt's, by compute capability and memory
// (pytorch/pytorch#120925): 1 MiB, 4 MiB on 8.x with >= 24 GB, 32 MiB from Hopper.
// Lucid's BERT/SQuAD graph, by hand (bytes; T tokens, hidden 768, 12 heads, FFN 3072).
// What each layer keeps under PyTorch >= 1.11 (derivatives.yaml: softmax keeps its result, the
// fused dropout a 1-byte mask, bmm both operands, the matmul's reshape of a permuted q, k^T or v a
// contiguous copy, layer norm its input and a mean and rstd per token, gelu its input, linear its
// input): x, q, k^T, v, the attention context, layer norm 1's input and output, layer norm 2's
// input (8 x T x 768 floats), gelu's input and output (2 x T x 3072), the softmax result and, in
// train mode, the attention dropout's mask and output and two hidden dropout masks.
TEST(EstimateMemory, BertSquadByHand) {
  const double H = 768, F = 3072, kStats = 2 * 4;  // layer norm: a mean and an rstd per token
  auto load = [](const char* file, int64_t batch, int64_t seq, bool amp = false) {
    LoadOptions lo;
    lo.batch = batch;
    lo.dims["seq"] = seq;
    Result<CostReport> r = CostFileForPrediction(HomeDir() + "/models/" + file, lo, CostOptions{amp});
    EXPECT_TRUE(r.ok()) << r.message();
    return r.ok() ? r.value() : CostReport{};
  };
  JobConfig job = Job(32);
  job.gpu = "A100-80GB";
  job.attrs.optimizer = Optimizer::kAdamW;

  // Lucid's BERT/SQuAD (bert.onnx: HF BertForQuestionAnswering, bert-base-uncased, train mode) at
  // batch 32, seq 384: 13,676,937,216 bytes = 13,043.3 MiB.
  {
    const double T = 32 * 384, scores = 32 * 12 * 384.0 * 384;
    const double layer = 8 * T * H * 4 + 2 * T * kStats + 2 * T * F * 4 + scores * (4 + 1 + 4) + 2 * T * H;
    // embeddings: layer norm's input and statistics, the dropout mask; the QA head: its input.
    const double kept = 12 * layer + (T * H * 4 + T * kStats) + T * H + T * H * 4;
    Result<MemoryEstimate> e = EstimateMemory({load("bert.onnx", 32, 384)}, job);
    ASSERT_TRUE(e.ok()) << e.message();
    EXPECT_NEAR(e->activations_mib, kept / kMiB, 0.01);
    EXPECT_NEAR(e->activations_mib, 13043.3, 0.1);
    // Under autocast (matmuls fp16, each casting an fp32 input anew; softmax and layer norm fp32;
    // the scores fp32 from the fp32 mask bias on): per layer three fp16 casts of x for q, k, v,
    // the fp16 q, k^T, v and context, the fp32 softmax result, the mask, the dropped probabilities'
    // fp16 cast, the fp32 layer norm inputs, layer norm 1's output cast, gelu's fp16 input and
    // output; the QA head an fp16 cast of its input. 9,581,199,360 bytes = 9,137.4 MiB; 3,906 MiB
    // less than fp32 (measured: 20,162 - 16,334 = 3,828, of which autocast's weight cache is 81).
    const double amp_layer = (3 + 4) * T * H * 2 + scores * (4 + 1 + 2) + 2 * T * H + (T * H * 2 + T * F * 4) +
                             2 * (T * H * 4 + T * kStats);
    const double amp_kept = 12 * amp_layer + (T * H * 4 + T * kStats) + T * H + T * H * 2;
    JobConfig amp_job = job;
    amp_job.amp = true;
    Result<MemoryEstimate> a = EstimateMemory({load("bert.onnx", 32, 384, true)}, amp_job);
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_NEAR(a->activations_mib, amp_kept / kMiB, 0.01);
    EXPECT_NEAR(e->activations_mib - a->activations_mib, 3906, 0.5);
    // bert-base-uncased without its pooler (QA does not use it): embeddings and their layer norm
    // (30,522 + 512 + 2 + 2) x 768, 12 layers of 7,087,872, the QA head 768 x 2 + 2: 108,893,186.
    EXPECT_DOUBLE_EQ(e->weights_mib, ((30522 + 512 + 2 + 2) * H + 12 * 7087872.0 + 1538) * 4 / kMiB);
  }
}

// The caching allocator rounds each kept tensor on its own, not a node's sum: a LayerNorm
// exported before opset 17 keeps h [4096, 4096] fp32 (64 MiB, a whole number of 2 MiB) and
// its mean and standard deviation (16 KiB each, whole 512-byte blocks) on one node, as the
// LayerNormalization of opset 17 keeps h, mean and rstd: nothing to round in either. Rounding
// the node's 64 MiB + 32 KiB as one block gave the decomposed export 2 MiB - 32 KiB more.
TEST(EstimateMemory, EachKeptTensorIsRoundedOnItsOwn) {
  const int64_t batch = 4096, width = 4096;
  auto estimate = [&](bool decomposed) {
    Result<CostReport> r = AnalyzeCost(testing::LayerNormMlp("ln.onnx", batch, decomposed, width).graph(),
                                       CostOptions{false});
    EXPECT_TRUE(r.ok()) << r.message();
    Result<MemoryEstimate> e = EstimateMemory({r.ok() ? *r : CostReport{}}, Job(batch));
    EXPECT_TRUE(e.ok()) << e.message();
    return e.ok() ? *e : MemoryEstimate{};
  };
  const MemoryEstimate d = estimate(true), f = estimate(false);
  // h with its statistics, and fc2's input o: 2 x 64 MiB + 2 x 16 KiB.
  EXPECT_DOUBLE_EQ(d.activations_mib, 128 + 32.0 / 1024);
  EXPECT_DOUBLE_EQ(f.activations_mib, d.activations_mib);
  EXPECT_DOUBLE_EQ(d.rounding_mib, 0);
  EXPECT_DOUBLE_EQ(f.rounding_mib, 0);
  // The statistics are small blocks (<= 1 MiB): a 2 MiB small-pool segment; the 64 MiB ones
  // their own segments.
  EXPECT_DOUBLE_EQ(d.segments_mib, 2);
  EXPECT_DOUBLE_EQ(f.segments_mib, 2);
}

TEST(CublasWorkspaceMib, ByArchitectureAndMemory) {
  EXPECT_DOUBLE_EQ(CublasWorkspaceMib("Pascal", 16), 9.125);
  EXPECT_DOUBLE_EQ(CublasWorkspaceMib("Turing", 24), 9.125);
  EXPECT_DOUBLE_EQ(CublasWorkspaceMib("Ampere", 10), 9.125);
  EXPECT_DOUBLE_EQ(CublasWorkspaceMib("Ampere", 24), 12.125);
  EXPECT_DOUBLE_EQ(CublasWorkspaceMib("Ada", 48), 12.125);
  EXPECT_DOUBLE_EQ(CublasWorkspaceMib("Hopper", 80), 40.125);
  EXPECT_DOUBLE_EQ(CublasWorkspaceMib("Blackwell", 192), 40.125);
}

// Fine-tuning: only the trained fraction gets gradients and optimizer state.
TEST(EstimateMemory, TrainableFraction) {
  JobConfig job = Job(64);
  ASSERT_TRUE(ParseJobAttr("trainable_fraction=0.25", &job.attrs).ok());
  Result<MemoryEstimate> all = EstimateMemory({Mlp(64)}, Job(64));
  Result<MemoryEstimate> part = EstimateMemory({Mlp(64)}, job);
  ASSERT_TRUE(all.ok() && part.ok());
  EXPECT_DOUBLE_EQ(part->weights_mib, all->weights_mib);
  EXPECT_DOUBLE_EQ(part->gradients_mib, 0.25 * all->gradients_mib);
  EXPECT_DOUBLE_EQ(part->optimizer_mib, 0.25 * all->optimizer_mib);
  EXPECT_DOUBLE_EQ(part->trained_params, 0.25 * kParams);
  EXPECT_DOUBLE_EQ(part->activations_mib, all->activations_mib);  // not modelled: the high end holds
  EXPECT_DOUBLE_EQ(part->trainable_fraction, 0.25);
}

// Frozen parameters the export names (a frozen first layer): no gradient or optimizer state for
// them, the rest trained; trainable_fraction scales what is left.
TEST(EstimateMemory, FrozenParametersByHand) {
  CostReport frozen = Mlp(64);
  frozen.totals.frozen_params = 512 * 256 + 512;  // fc1
  const double trained = 10 * 512 + 10;
  Result<MemoryEstimate> all = EstimateMemory({Mlp(64)}, Job(64));
  Result<MemoryEstimate> e = EstimateMemory({frozen}, Job(64));
  ASSERT_TRUE(all.ok() && e.ok());
  EXPECT_DOUBLE_EQ(e->weights_mib, all->weights_mib);
  EXPECT_DOUBLE_EQ(e->trained_params, trained);
  EXPECT_DOUBLE_EQ(e->gradients_mib, trained * 4 / kMiB);
  EXPECT_DOUBLE_EQ(e->optimizer_mib, 2 * trained * 4 / kMiB);  // adam, the default
  JobConfig half = Job(64);
  ASSERT_TRUE(ParseJobAttr("trainable_fraction=0.5", &half.attrs).ok());
  Result<MemoryEstimate> h = EstimateMemory({frozen}, half);
  ASSERT_TRUE(h.ok());
  EXPECT_DOUBLE_EQ(h->trained_params, 0.5 * trained);
}

// A table trained with sparse gradients (say fc1's weight were one, 512·256, and a step looked up
// 640 rows of it): its gradient is the looked-up rows' bytes (x the micro-batches of a gradient
// accumulation), not the table's; its optimizer state stays the table's (SparseAdam keeps Adam's
// two dense tensors).
TEST(EstimateMemory, SparseGradientsByHand) {
  CostReport sparse = Mlp(64);
  const double table = 512 * 256, rows_bytes = 640 * (256 * 4 + 8);
  sparse.totals.sparse_grad_params = 512 * 256;
  sparse.totals.sparse_grad_bytes = 640 * (256 * 4 + 8);
  Result<MemoryEstimate> all = EstimateMemory({Mlp(64)}, Job(64));
  Result<MemoryEstimate> e = EstimateMemory({sparse}, Job(64));
  ASSERT_TRUE(all.ok() && e.ok());
  EXPECT_DOUBLE_EQ(e->trained_params, kParams);
  EXPECT_DOUBLE_EQ(e->sparse_grad_params, table);
  EXPECT_DOUBLE_EQ(e->gradients_mib, (kParams - table) * 4 / kMiB + rows_bytes / kMiB);
  EXPECT_DOUBLE_EQ(e->optimizer_mib, all->optimizer_mib);
  EXPECT_DOUBLE_EQ(e->weights_mib, all->weights_mib);
  JobConfig accumulate = Job(64);
  ASSERT_TRUE(ParseJobAttr("grad_accumulation=4", &accumulate.attrs).ok());
  Result<MemoryEstimate> a4 = EstimateMemory({sparse}, accumulate);
  ASSERT_TRUE(a4.ok());
  EXPECT_DOUBLE_EQ(a4->gradients_mib, (kParams - table) * 4 / kMiB + 4 * rows_bytes / kMiB);
}

// ZeRO across 4 ranks, by hand: the largest layer is fc1 (512·256 + 512 parameters).
TEST(EstimateMemory, ZeroStagesShardAcrossRanks) {
  const double p = kParams * 4 / kMiB, fc1 = (512.0 * 256 + 512) * 4 / kMiB;
  auto est = [](int stage, int64_t ranks) {
    JobConfig job = Job(64);
    job.attrs.memory.zero_stage = stage;
    Result<MemoryEstimate> e = EstimateMemory({Mlp(64)}, job, ranks);
    EXPECT_TRUE(e.ok()) << e.message();
    return *e;
  };
  MemoryEstimate z0 = est(0, 4), z1 = est(1, 4), z2 = est(2, 4), z3 = est(3, 4);
  EXPECT_DOUBLE_EQ(z0.ddp_buckets_mib, p);  // DDP: a copy of the gradients
  EXPECT_DOUBLE_EQ(z0.zero_buffers_mib, 0);
  EXPECT_DOUBLE_EQ(z1.optimizer_mib, 2 * p / 4);
  EXPECT_DOUBLE_EQ(z1.gradients_mib, p);
  EXPECT_DOUBLE_EQ(z1.ddp_buckets_mib, 0);
  EXPECT_DOUBLE_EQ(z1.zero_buffers_mib, fc1);  // the layer's unsharded gradient being reduced
  EXPECT_DOUBLE_EQ(z2.gradients_mib, p / 4);
  EXPECT_DOUBLE_EQ(z2.weights_mib, p);
  EXPECT_DOUBLE_EQ(z3.weights_mib, p / 4);
  EXPECT_DOUBLE_EQ(z3.zero_buffers_mib, fc1 + 2 * fc1);  // + the gathered layer and the next
  EXPECT_EQ(z3.zero_stage, 3);
  // One rank: nothing to shard.
  MemoryEstimate alone = est(3, 1);
  EXPECT_DOUBLE_EQ(alone.weights_mib, p);
  EXPECT_DOUBLE_EQ(alone.optimizer_mib, 2 * p);
  EXPECT_DOUBLE_EQ(alone.zero_buffers_mib, 0);
}

// 16 x (Gemm 512x512 -> Relu): each Relu keeps its output (B·512·4 bytes), the next Gemm the same
// tensor (counted once): 16 saving nodes. Checkpointed: round(sqrt(16)) = 4 segments of 4; kept are
// the inputs of segments 2-4 (h of their first Relu) and, recomputed in backward, one segment.
CostReport Deep(int64_t batch) {
  GraphBuilder b("deep.onnx", batch);
  b.Data("r0", {batch, 512});
  for (int i = 1; i <= 16; ++i) {
    const std::string k = std::to_string(i), prev = "r" + std::to_string(i - 1);
    b.Param("w" + k, {512, 512}).Value("h" + k, {batch, 512}).Value("r" + k, {batch, 512});
    b.Op("Gemm", "fc" + k, {prev, "w" + k}, {"h" + k}).attrs["transB"] = IntAttr(1);
    b.Op("Relu", "relu" + k, {"h" + k}, {"r" + k});
  }
  Result<CostReport> r = AnalyzeCost(b.graph(), CostOptions{false});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? r.value() : CostReport{};
}

TEST(EstimateMemory, ActivationCheckpointingBySegments) {
  const int64_t batch = 1024;  // one activation: 2 MiB
  JobConfig job = Job(batch);
  Result<MemoryEstimate> plain = EstimateMemory({Deep(batch)}, job);
  ASSERT_TRUE(ParseJobAttr("activation_checkpointing=1", &job.attrs).ok());
  Result<MemoryEstimate> ckpt = EstimateMemory({Deep(batch)}, job);
  ASSERT_TRUE(plain.ok() && ckpt.ok());
  EXPECT_DOUBLE_EQ(plain->activations_mib, 32);
  EXPECT_DOUBLE_EQ(ckpt->activations_full_mib, 32);
  EXPECT_DOUBLE_EQ(ckpt->checkpoint_segment_mib, 8);
  EXPECT_DOUBLE_EQ(ckpt->activations_mib, 3 * 2 + 8);
  EXPECT_DOUBLE_EQ(ckpt->uncertain_mib, 8);  // a coarser segmentation keeps up to one more segment
  EXPECT_TRUE(ckpt->checkpointing);
}

TEST(EstimateMemory, VariableShapesFragmentAnEstimateWidenedInTheHighEnd) {
  const int64_t batch = 1024;
  JobConfig job = Job(batch);
  ASSERT_TRUE(ParseJobAttr("variable_shapes=1", &job.attrs).ok());
  Result<MemoryEstimate> e = EstimateMemory({Mlp(batch)}, job);
  ASSERT_TRUE(e.ok());
  const double working = e->activations_mib + e->largest_tensor_mib + e->loss_head_mib;  // 2 + 2 + 0.12 MiB
  EXPECT_DOUBLE_EQ(e->fragmentation_mib, 0.25 * working);
  EXPECT_DOUBLE_EQ(e->uncertain_mib, 0.75 * working);
  // grad_accumulation: --batch is one micro-batch; the gradients, resident anyway, are counted.
  JobConfig acc = Job(batch);
  ASSERT_TRUE(ParseJobAttr("grad_accumulation=8", &acc.attrs).ok());
  Result<MemoryEstimate> a = EstimateMemory({Mlp(batch)}, acc), b = EstimateMemory({Mlp(batch)}, Job(batch));
  EXPECT_EQ(a->grad_accumulation, 8);
  EXPECT_DOUBLE_EQ(a->StaticMib(), b->StaticMib());
  EXPECT_DOUBLE_EQ(a->gradients_mib, kParams * 4 / kMiB);
}

TEST(ParseJobAttr, MemoryFacts) {
  JobAttrs a;
  EXPECT_FALSE(a.memory.activation_checkpointing.has_value());
  ASSERT_TRUE(ParseJobAttr("activation_checkpointing=1", &a).ok());
  ASSERT_TRUE(ParseJobAttr("trainable_fraction=0.1", &a).ok());
  ASSERT_TRUE(ParseJobAttr("zero_stage=3", &a).ok());
  ASSERT_TRUE(ParseJobAttr("grad_accumulation=4", &a).ok());
  ASSERT_TRUE(ParseJobAttr("variable_shapes=0", &a).ok());
  EXPECT_EQ(a.memory.activation_checkpointing, true);
  EXPECT_DOUBLE_EQ(*a.memory.trainable_fraction, 0.1);
  EXPECT_EQ(a.memory.zero_stage, 3);
  EXPECT_EQ(a.memory.grad_accumulation, 4);
  EXPECT_EQ(a.memory.variable_shapes, false);
  EXPECT_EQ(ParseJobAttr("activation_checkpointing=yes", &a).message(),
            "job attribute 'activation_checkpointing': value 'yes' is not 0 or 1");
  EXPECT_EQ(ParseJobAttr("trainable_fraction=0", &a).message(),
            "job attribute 'trainable_fraction': value '0' is out of range (want > 0 and <= 1)");
  EXPECT_EQ(ParseJobAttr("trainable_fraction=1.5", &a).message(),
            "job attribute 'trainable_fraction': value '1.5' is out of range (want > 0 and <= 1)");
  EXPECT_EQ(ParseJobAttr("trainable_fraction=nan", &a).message(),
            "job attribute 'trainable_fraction': value 'nan' is not a number (the fraction of parameters trained)");
  EXPECT_EQ(ParseJobAttr("zero_stage=4", &a).message(),
            "job attribute 'zero_stage': value '4' is not an integer in [0, 3]");
  EXPECT_EQ(ParseJobAttr("grad_accumulation=0", &a).message(),
            "job attribute 'grad_accumulation': value '0' is not an integer in [1, 100000]");
  EXPECT_EQ(ParseJobAttr("variable_shapes=", &a).message(),
            "job attribute 'variable_shapes': value '' is not 0 or 1");
}

// The published contexts: every row sourced, eager loading larger than lazy.
TEST(ContextSources, PublishedAndBounded) {
  double eager = 0, lazy = 1e9;
  for (const ContextSource& s : ContextSources()) {
    EXPECT_GT(std::string(s.source).size(), 10u) << s.gpu;
    if (s.lazy) lazy = std::min(lazy, s.mib);
    else eager = std::max(eager, s.mib);
  }
  EXPECT_DOUBLE_EQ(eager, 1687);  // RTX 3090, PyTorch 1.8.2+cu111 (pytorch/pytorch#55277)
  EXPECT_DOUBLE_EQ(lazy, 256);    // RTX 3090, PyTorch 2.7.1+cu128 (invoke-ai/InvokeAI#9413)
  EXPECT_DOUBLE_EQ(PublishedContextMinMib(), 256);
  EXPECT_NEAR(PublishedContextMaxMib(), 1687 + 715.26, 0.01);  // + a cuDNN 7 handle's 750 MB
}

// cuda_module_loading: CUDA_MODULE_LOADING's two values, any case; unstated stays unknown.
TEST(ParseJobAttr, CudaModuleLoading) {
  JobAttrs a;
  EXPECT_FALSE(a.memory.lazy_module_loading.has_value());
  ASSERT_TRUE(ParseJobAttr("cuda_module_loading=lazy", &a).ok());
  EXPECT_EQ(a.memory.lazy_module_loading, std::optional<bool>(true));
  ASSERT_TRUE(ParseJobAttr("cuda_module_loading=EAGER", &a).ok());
  EXPECT_EQ(a.memory.lazy_module_loading, std::optional<bool>(false));
  EXPECT_EQ(ParseJobAttr("cuda_module_loading=default", &a).message(),
            "job attribute 'cuda_module_loading': value 'default' is not lazy or eager (CUDA_MODULE_LOADING of "
            "the job's stack)");
  EXPECT_EQ(a.memory.lazy_module_loading, std::optional<bool>(false));  // the bad value changed nothing
}

// The lazy context from the published idle figures (ContextSources): the largest, a stated
// GPU's per-SM local memory (2 MiB/SM) moved to the job's SM count. Hand-computed: the RTX 6000
// Ada's 426 MiB at 142 SMs is 426 - 2 x (142 - 132) = 406 on an H100 (132 SMs), more than the
// maintainer's "around 400MB" (381.5 MiB, GPU not stated), which sets it on the A100 (108 SMs:
// 426 - 68 = 358), on a 1g.10gb slice (14 SMs) and on the RTX 3090 (measured there: 256).
TEST(ContextSources, LazyContextFromThePublishedFigures) {
  const double maintainer = 400e6 / (1 << 20);
  EXPECT_NEAR(LazyContextMib(132), 406, 1e-9);
  EXPECT_NEAR(LazyContextMib(142), 426, 1e-9);
  EXPECT_NEAR(LazyContextMib(108), maintainer, 1e-9);
  EXPECT_NEAR(LazyContextMib(14), maintainer, 1e-9);
  EXPECT_NEAR(LazyContextMib(82), maintainer, 1e-9);
  EXPECT_GE(LazyContextMib(82), 256);  // at least the RTX 3090's own lazy figure
  // The SM counts given for the sources are the spec table's where the GPU is in it.
  for (const ContextSource& s : ContextSources()) {
    const GpuSpec* g = FindGpuSpec(s.gpu);
    if (g && s.sms > 0) {
      EXPECT_EQ(s.sms, g->sms) << s.gpu;
    }
  }
  EXPECT_EQ(FindGpuSpec("RTX 3090")->sms, 82);
  // EstimateMemory carries the fact and the job's lazy context (a 1g.10gb slice: 14 SMs).
  JobConfig job = Job(8);
  job.gpu = "A100-80GB";
  job.mig_profile = "1g.10gb";
  Result<MemoryEstimate> unknown = EstimateMemory({Mlp(8)}, job);
  ASSERT_TRUE(unknown.ok()) << unknown.message();
  EXPECT_FALSE(unknown->lazy_module_loading.has_value());
  EXPECT_NEAR(unknown->lazy_context_mib, maintainer, 1e-9);
  ASSERT_TRUE(ParseJobAttr("cuda_module_loading=lazy", &job.attrs).ok());
  Result<MemoryEstimate> lazy = EstimateMemory({Mlp(8)}, job);
  ASSERT_TRUE(lazy.ok()) << lazy.message();
  EXPECT_EQ(lazy->lazy_module_loading, std::optional<bool>(true));
}

TEST(EstimateMemory, MigSliceCapacityAndSms) {
  JobConfig job = Job(8);
  job.gpu = "A100-80GB";
  job.mig_profile = "2g.20gb";
  Result<MemoryEstimate> e = EstimateMemory({Mlp(8)}, job);
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_EQ(e->gpu, "A100-80GB");
  EXPECT_EQ(e->sms, 28);
  EXPECT_EQ(e->gpu_sms, 108);
  EXPECT_DOUBLE_EQ(e->capacity_mib, 19.5 * 1024);
}

TEST(EstimateMemory, Errors) {
  EXPECT_EQ(EstimateMemory({}, Job(8)).message(), "memory: no cost reports given");
  EXPECT_EQ(EstimateMemory({Mlp(8)}, Job(0)).message(), "memory: batch 0 < 1");
  EXPECT_EQ(EstimateMemory({Mlp(8)}, Job(8), 0).message(), "memory: data-parallel ranks 0 < 1");
  JobConfig job = Job(8);
  job.gpu = "RTX3090";
  job.mig_profile = "1g.10gb";
  EXPECT_EQ(EstimateMemory({Mlp(8)}, job).message().rfind("memory: GPU 'RTX3090' has no MIG profiles", 0), 0u);
}

TEST(AllocatorBlockBytes, RoundsAsTheCachingAllocator) {
  EXPECT_EQ(AllocatorBlockBytes(0), 0);
  EXPECT_EQ(AllocatorBlockBytes(1), 512);
  EXPECT_EQ(AllocatorBlockBytes(512), 512);
  EXPECT_EQ(AllocatorBlockBytes(513), 1024);
  EXPECT_EQ(AllocatorBlockBytes(10 << 20), 10 << 20);  // at the threshold: 512-byte rounding
  EXPECT_EQ(AllocatorBlockBytes((10 << 20) + 1), 12 << 20);
  EXPECT_EQ(AllocatorBlockBytes(13 << 20), 14 << 20);
}

TEST(ParseJobAttr, Optimizer) {
  JobAttrs a;
  ASSERT_TRUE(ParseJobAttr("optimizer=AdamW", &a).ok());
  EXPECT_EQ(a.optimizer, Optimizer::kAdamW);
  ASSERT_TRUE(ParseJobAttr("optimizer=sgd_momentum", &a).ok());
  EXPECT_EQ(a.optimizer, Optimizer::kSgdMomentum);
  EXPECT_EQ(ParseJobAttr("optimizer=lamb", &a).message(),
            "job attribute 'optimizer': value 'lamb' is not one of sgd, sgd_momentum, adam, adamw");
  EXPECT_EQ(ParseJobAttr("optimizer=", &a).message(),
            "job attribute 'optimizer': value '' is not one of sgd, sgd_momentum, adam, adamw");
}

}  // namespace
}  // namespace gpucast
