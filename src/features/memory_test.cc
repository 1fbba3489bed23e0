// The physical memory estimate, by hand on a small MLP.
#include "features/memory.h"

#include <gtest/gtest.h>

#include "cost/job_cost.h"
#include "cost/test_graph.h"

namespace gpucast {
namespace {

using testing::GraphBuilder;
using testing::IntAttr;

constexpr double kMiB = 1024.0 * 1024.0;

// x[B,256] -> Gemm(w1[512,256]^T, b1[512]) -> h -> Relu -> r -> Gemm(w2[10,512]^T, b2[10]) -> y[B,10].
CostReport Mlp(int64_t batch, bool amp = false) {
  GraphBuilder b("mlp.onnx", batch);
  b.Data("x", {batch, 256}).Param("w1", {512, 256}).Param("b1", {512}).Value("h", {batch, 512});
  b.Value("r", {batch, 512}).Param("w2", {10, 512}).Param("b2", {10}).Value("y", {batch, 10});
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
  EXPECT_DOUBLE_EQ(e->rounding_mib, 0);          // 2 MiB is a whole number of 512-byte blocks
  EXPECT_DOUBLE_EQ(e->ddp_buckets_mib, 0);
  EXPECT_EQ(e->gpu, "RTX3090");
  EXPECT_EQ(e->sms, 82);
  EXPECT_EQ(e->gpu_sms, 82);
  EXPECT_DOUBLE_EQ(e->capacity_mib, 24 * 1024);
  EXPECT_DOUBLE_EQ(e->StaticMib(), (4 * kParams * 4 + 1024.0 * 256 * 4) / kMiB);
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
