#include "features/gpu_specs.h"

#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

namespace gpucast {
namespace {

TEST(GpuSpecs, NamesUniqueAndRatesPlausible) {
  std::set<std::string> names;
  for (const GpuSpec& s : GpuSpecs()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_GE(s.fp16_tensor_flops, s.fp32_flops) << s.name;
    EXPECT_GT(s.mem_bandwidth, 1e11) << s.name;
    EXPECT_GT(s.memory_gib, 8) << s.name;
    EXPECT_GT(s.sms, 0) << s.name;
    EXPECT_FALSE(s.source.empty()) << s.name;
    EXPECT_TRUE(s.mig_profile.empty()) << s.name;
    EXPECT_EQ(s.compute_fraction, 1) << s.name;
    // BF16/TF32 tensor math exists from Ampere on; where it exists BF16 runs at the FP16 rate.
    if (s.bf16_tensor_flops > 0) {
      EXPECT_EQ(s.bf16_tensor_flops, s.fp16_tensor_flops) << s.name;
    }
    if (s.tf32_tensor_flops > 0) {
      EXPECT_LT(s.tf32_tensor_flops, s.fp16_tensor_flops) << s.name;
    }
    EXPECT_EQ(FindGpuSpec(s.name), &s) << s.name;
  }
  for (const char* want : {"RTX3090", "V100-16GB", "V100-32GB", "T4", "A10", "L4", "A100-40GB",
                           "A100-80GB", "H100", "H200", "P100"})
    EXPECT_TRUE(names.count(want)) << want;
}

TEST(GpuSpecs, AliasesAreCaseAndSeparatorInsensitive) {
  const GpuSpec* a100 = FindGpuSpec("A100-80GB");
  ASSERT_NE(a100, nullptr);
  for (const char* alias : {"a100_80g", "A100 80GB", "a100-80gb", "NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"})
    EXPECT_EQ(FindGpuSpec(alias), a100) << alias;
  EXPECT_EQ(FindGpuSpec("rtx3090"), FindGpuSpec("RTX3090"));
  EXPECT_EQ(FindGpuSpec("NVIDIA GeForce RTX 3090"), FindGpuSpec("RTX3090"));
  EXPECT_EQ(FindGpuSpec("Tesla T4"), FindGpuSpec("T4"));
  // Names used elsewhere keep working: the A100 and V100 of earlier versions, the Alibaba trace's.
  EXPECT_EQ(FindGpuSpec("A100"), FindGpuSpec("A100-40GB"));
  EXPECT_EQ(FindGpuSpec("V100"), FindGpuSpec("V100-16GB"));
  EXPECT_EQ(FindGpuSpec("V100M32"), FindGpuSpec("V100-32GB"));
  EXPECT_NE(FindGpuSpec("A10"), FindGpuSpec("A100"));
  EXPECT_EQ(FindGpuSpec("GTX480"), nullptr);
  EXPECT_EQ(FindGpuSpec(""), nullptr);
  EXPECT_EQ(FindGpuSpec("--"), nullptr);
}

TEST(GpuSpecs, Rtx3090MatchesTheGa102Whitepaper) {
  // 10,496 CUDA cores × 2 FLOPs × 1.695 GHz boost = 35.58 TFLOPS; 19.5 Gbps × 384 bit / 8 = 936 GB/s.
  const GpuSpec* s = FindGpuSpec("RTX3090");
  ASSERT_NE(s, nullptr);
  EXPECT_NEAR(s->fp32_flops, 10496 * 2 * 1.695e9, 0.1e12);
  EXPECT_DOUBLE_EQ(s->mem_bandwidth, 19.5e9 * 384 / 8);
  // Tensor: 82 SMs × 4 tensor cores × 128 FP16 FMA/clock × 2 FLOPs × 1.695 GHz = 142 TFLOPS with
  // FP16 accumulate; GeForce halves it with FP32 accumulate (autocast): 71.
  EXPECT_NEAR(s->fp16_tensor_flops, 82 * 4 * 128 * 2 * 1.695e9 / 2, 0.2e12);
  EXPECT_EQ(s->sms, 82);
}

TEST(GpuSpecs, A100PeaksFollowFromTheSmCount) {
  // 108 SMs × 4 tensor cores × 256 FP16 FMA/clock × 2 × 1.41 GHz = 312 TFLOPS;
  // FP32: 108 × 64 cores × 2 × 1.41 GHz = 19.5 TFLOPS.
  for (const char* name : {"A100-40GB", "A100-80GB"}) {
    const GpuSpec* s = FindGpuSpec(name);
    ASSERT_NE(s, nullptr);
    EXPECT_NEAR(s->fp16_tensor_flops, 108 * 4 * 256 * 2 * 1.41e9, 0.5e12) << name;
    EXPECT_NEAR(s->fp32_flops, 108 * 64 * 2 * 1.41e9, 0.1e12) << name;
  }
}

TEST(ResolveGpu, WholeGpuIsTheTableRow) {
  Result<GpuSpec> r = ResolveGpu("a100 80gb", "");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->name, "A100-80GB");
  EXPECT_EQ(r->fp16_tensor_flops, 312e12);
  EXPECT_EQ(r->mig_profile, "");
}

TEST(ResolveGpu, EveryProfileOfEveryGpuResolves) {
  int gpus_with_mig = 0;
  for (const GpuSpec& g : GpuSpecs()) {
    const std::vector<MigProfile>& profiles = MigProfiles(g.name);
    if (profiles.empty()) continue;
    ++gpus_with_mig;
    std::set<std::string> seen;
    for (const MigProfile& p : profiles) {
      EXPECT_TRUE(seen.insert(p.name).second) << g.name << " " << p.name;
      Result<GpuSpec> r = ResolveGpu(g.name, p.name);
      ASSERT_TRUE(r.ok()) << r.message();
      EXPECT_EQ(r->name, g.name);
      EXPECT_EQ(r->mig_profile, p.name);
      EXPECT_EQ(r->sms, p.sms);
      EXPECT_LE(p.sms, g.sms) << p.name;
      EXPECT_GE(p.compute_slices, 1);
      EXPECT_LE(p.compute_slices, 7);
      // The profile name states its slices and (rounded) memory size.
      EXPECT_EQ(p.name.substr(0, 2), std::to_string(p.compute_slices) + "g") << p.name;
      EXPECT_DOUBLE_EQ(r->compute_fraction, static_cast<double>(p.sms) / g.sms);
      EXPECT_DOUBLE_EQ(r->fp32_flops, g.fp32_flops * p.sms / g.sms);
      EXPECT_DOUBLE_EQ(r->fp16_tensor_flops, g.fp16_tensor_flops * p.sms / g.sms);
      EXPECT_DOUBLE_EQ(r->mem_bandwidth, g.mem_bandwidth * p.mem_bw_fraction);
      EXPECT_EQ(r->memory_gib, p.memory_gib);
      EXPECT_LE(p.memory_gib, g.memory_gib);
      // 1/8 .. 8/8 of the memory slices.
      EXPECT_GT(p.mem_bw_fraction, 0);
      EXPECT_LE(p.mem_bw_fraction, 1);
      // Case, a "MIG " prefix and "g" for "gb" are accepted.
      std::string upper;
      for (char c : p.name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      Result<GpuSpec> again = ResolveGpu(g.name, "MIG " + upper);
      ASSERT_TRUE(again.ok()) << again.message();
      EXPECT_EQ(again->mig_profile, p.name);
    }
    // Bigger profiles never have fewer SMs.
    for (size_t i = 1; i < profiles.size(); ++i)
      EXPECT_GE(profiles[i].sms, profiles[i - 1].sms) << g.name << " " << profiles[i].name;
    EXPECT_EQ(profiles.back().compute_slices, 7) << g.name;
    EXPECT_EQ(profiles.back().mem_bw_fraction, 1) << g.name;
  }
  EXPECT_EQ(gpus_with_mig, 4);  // A100-40GB, A100-80GB, H100, H200
  for (const char* p : {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"})
    EXPECT_TRUE(ResolveGpu("A100-40GB", p).ok()) << p;
  for (const char* p : {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"})
    EXPECT_TRUE(ResolveGpu("A100-80GB", p).ok()) << p;
}

TEST(ResolveGpu, A100_80gb_3g40gbByHand) {
  // MIG User Guide: 3g.40gb = 3 of 7 compute slices, 42 SMs (the whole A100 has 108; its 7g.80gb
  // instance 98), 4 of 8 memory slices (39.25 GiB in nvidia-smi mig -lgip).
  Result<GpuSpec> r = ResolveGpu("A100-80GB", "3g.40gb");
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_NEAR(r->fp16_tensor_flops, 312e12 * 42 / 108, 1e6);  // 121.3 TFLOP/s
  EXPECT_NEAR(r->fp16_tensor_flops, 121.33e12, 0.01e12);
  EXPECT_NEAR(r->fp32_flops, 19.5e12 * 42 / 108, 1e6);  // 7.58 TFLOP/s
  EXPECT_NEAR(r->mem_bandwidth, 2039e9 / 2, 1);           // 1,019.5 GB/s
  EXPECT_EQ(r->memory_gib, 39.25);
  EXPECT_EQ(r->sms, 42);
  EXPECT_EQ(r->mig_profile, "3g.40gb");
  // The 7g.80gb instance is not the whole GPU: 98 of 108 SMs.
  Result<GpuSpec> full = ResolveGpu("A100-80GB", "7g.80gb");
  ASSERT_TRUE(full.ok());
  EXPECT_NEAR(full->fp16_tensor_flops, 312e12 * 98 / 108, 1e6);
  EXPECT_EQ(full->mem_bandwidth, 2039e9);
}

TEST(ResolveGpu, ErrorsNameTheGpuAndListTheChoices) {
  EXPECT_EQ(ResolveGpu("GTX480", "").message(),
            "unknown GPU 'GTX480' (known: RTX3090, V100-16GB, V100-32GB, T4, A10, L4, A100-40GB, "
            "A100-80GB, H100, H200, P100)");
  EXPECT_EQ(ResolveGpu("a100_80g", "3g.20gb").message(),
            "GPU 'A100-80GB' has no MIG profile '3g.20gb' (profiles: 1g.10gb, 2g.20gb, 3g.40gb, "
            "4g.40gb, 7g.80gb)");
  EXPECT_EQ(ResolveGpu("RTX3090", "1g.10gb").message(),
            "GPU 'RTX3090' has no MIG profiles (MIG-capable: A100-40GB, A100-80GB, H100, H200)");
  EXPECT_FALSE(ResolveGpu("H100", "3g").ok());
  EXPECT_TRUE(MigProfiles("T4").empty());
  EXPECT_TRUE(MigProfiles("nope").empty());
}

}  // namespace
}  // namespace gpucast
