#include "features/gpu_specs.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
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
    EXPECT_GE(s.memory_gib, 6) << s.name;
    EXPECT_GE(s.sms, 0) << s.name;  // 0: not stated by the source (B200)
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
  EXPECT_EQ(gpus_with_mig, 6);  // A100-40GB, A100-80GB (SXM and PCIe), H100, H200
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

// MIG User Guide, "Supported MIG Profiles": an A100 / H100 / H200 has 7 compute slices and 8
// memory slices; A100 80GB 3g.40gb takes 3 compute slices and 4 memory slices ("Fraction of Memory"
// 4/8), 1g.10gb 1 and 1, 4g.40gb 4 and 4; the H100's 1g.20gb 1 compute and 2 memory slices.
TEST(MigSlices, GuideFiguresOfTheA100AndH100) {
  const MigProfile* p = FindMigProfile("A100-80GB", "3g.40gb");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "3g.40gb");
  EXPECT_EQ(MigSlicesOf(*p).compute, 3);
  EXPECT_EQ(MigSlicesOf(*p).memory, 4);
  EXPECT_EQ(MigSlicesOf(*FindMigProfile("A100-80GB", "1g.10gb")).memory, 1);
  EXPECT_EQ(MigSlicesOf(*FindMigProfile("A100-80GB", "4g.40gb")).compute, 4);
  EXPECT_EQ(MigSlicesOf(*FindMigProfile("A100-80GB", "4g.40gb")).memory, 4);
  EXPECT_EQ(MigSlicesOf(*FindMigProfile("H100", "1g.20gb")).compute, 1);
  EXPECT_EQ(MigSlicesOf(*FindMigProfile("H100", "1g.20gb")).memory, 2);
  for (const char* gpu : {"A100-40GB", "A100-80GB", "A100-PCIE-40GB", "A100-PCIE-80GB", "H100", "H200"}) {
    EXPECT_EQ(GpuMigSlices(gpu).compute, 7) << gpu;
    EXPECT_EQ(GpuMigSlices(gpu).memory, 8) << gpu;
  }
  EXPECT_EQ(GpuMigSlices("T4").compute, 0);
  EXPECT_EQ(GpuMigSlices("nope").memory, 0);
}

// Any accepted spelling of the GPU (alias, nvidia-smi name) and of the profile; a profile of
// another GPU, an unknown GPU or an empty name is none.
TEST(MigSlices, FindMigProfileTakesEverySpellingAndOnlyTheGpusOwn) {
  for (const char* gpu : {"A100-80GB", "NVIDIA A100-SXM4-80GB", "a100_80g"})
    for (const char* mig : {"3g.40gb", "MIG 3G.40GB", "3g.40g"}) {
      const MigProfile* p = FindMigProfile(gpu, mig);
      ASSERT_NE(p, nullptr) << gpu << " " << mig;
      EXPECT_EQ(p, &MigProfiles("A100-80GB")[2]) << gpu << " " << mig;
    }
  EXPECT_EQ(FindMigProfile("A100-80GB", "3g.20gb"), nullptr);  // the 40GB's
  EXPECT_EQ(FindMigProfile("RTX3090", "1g.10gb"), nullptr);
  EXPECT_EQ(FindMigProfile("nope", "1g.10gb"), nullptr);
  EXPECT_EQ(FindMigProfile("A100-80GB", ""), nullptr);
  EXPECT_EQ(FindMigProfile("A100-80GB", "MIG"), nullptr);
}

// The table's one memory fraction per profile (mem_bw_fraction) is the memory-slice count / 8 for
// every MIG GPU: a whole number of eighths, and the same count as the -lgip listing's instance
// memory gives (round(8 * memory_gib / the full profile's memory_gib)). The H200's 3g.71gb /
// 4g.71gb memory is itself 4/8 of 140 GiB (gpu_table.cc), so for them this check is no news.
TEST(MigSlices, MemorySlicesAreTheMemoryFractionInEighthsForEveryMigGpu) {
  int gpus = 0;
  for (const GpuSpec& g : GpuSpecs()) {
    const std::vector<MigProfile>& profiles = MigProfiles(g.name);
    if (profiles.empty()) continue;
    ++gpus;
    const double full_gib = profiles.back().memory_gib;
    for (const MigProfile& p : profiles) {
      const MigSlices s = MigSlicesOf(p);
      EXPECT_EQ(s.compute, p.compute_slices);
      EXPECT_DOUBLE_EQ(p.mem_bw_fraction * 8, s.memory) << g.name << " " << p.name;
      EXPECT_GE(s.memory, 1);
      EXPECT_LE(s.memory, 8);
      EXPECT_EQ(s.memory, std::lround(8 * p.memory_gib / full_gib)) << g.name << " " << p.name;
      EXPECT_EQ(FindMigProfile(g.name, p.name), &p);
    }
  }
  EXPECT_EQ(gpus, 6);  // A100-40GB, A100-80GB (SXM and PCIe), H100, H200
}

TEST(ResolveGpu, ErrorsNameTheGpuAndListTheChoices) {
  EXPECT_EQ(ResolveGpu("RTX3900", "").message(),
            "unknown GPU 'RTX3900'; closest: RTX3090, RTX3050, RTX3060, RTX3070, RTX3080 (gpucast gpus "
            "lists all; a GPU it lacks goes in a site table: --gpu-table)");
  EXPECT_EQ(ResolveGpu("a100_80g", "3g.20gb").message(),
            "GPU 'A100-80GB' has no MIG profile '3g.20gb' (profiles: 1g.10gb, 2g.20gb, 3g.40gb, "
            "4g.40gb, 7g.80gb)");
  EXPECT_EQ(ResolveGpu("RTX3090", "1g.10gb").message(),
            "GPU 'RTX3090' has no MIG profiles (MIG-capable: A100-40GB, A100-80GB, A100-PCIE-40GB, "
            "A100-PCIE-80GB, H100, H200)");
  EXPECT_FALSE(ResolveGpu("H100", "3g").ok());
  EXPECT_TRUE(MigProfiles("T4").empty());
  EXPECT_TRUE(MigProfiles("nope").empty());
}

// The front ends' check of a MIG profile name before any GPU is looked at:
// a name some GPU of the table has (any spelling ResolveGpu takes) is known,
// whichever GPU the job asks for; anything else lists the table's profiles.
TEST(CanonicalMigProfile, KnownProfilesOfAnyGpuAndTheRestListed) {
  EXPECT_EQ(*CanonicalMigProfile("1g.10gb"), "1g.10gb");
  EXPECT_EQ(*CanonicalMigProfile("MIG 3G.40GB"), "3g.40gb");
  EXPECT_EQ(*CanonicalMigProfile("1g.5gb"), "1g.5gb");     // the A100 40GB's
  EXPECT_EQ(*CanonicalMigProfile("7g.141gb"), "7g.141gb");  // the H200's
  // Every profile of every GPU is known under its own name.
  for (const GpuSpec& g : GpuSpecs())
    for (const MigProfile& p : MigProfiles(g.name)) EXPECT_EQ(*CanonicalMigProfile(p.name), p.name) << g.name;
  const std::string list = "(MIG profiles of gpucast's GPUs: 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb, 1g.10gb, "
                           "2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb, 1g.20gb, 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, "
                           "4g.71gb, 7g.141gb; gpucast gpus --json lists each GPU's)";
  EXPECT_EQ(CanonicalMigProfile("7g.99gb").message(), "unknown MIG profile '7g.99gb' " + list);
  EXPECT_EQ(CanonicalMigProfile("").message(), "unknown MIG profile '' " + list);
  EXPECT_EQ(CanonicalMigProfile("3g").message(), "unknown MIG profile '3g' " + list);
  EXPECT_EQ(CanonicalMigProfile(std::string(70, 'x') + "\n").message().substr(0, 94),
            "unknown MIG profile '" + std::string(64, 'x') + "...' (MIG");
}

std::string Canon(const std::string& name) {
  Result<std::string> r = CanonicalGpuName(name);
  return r.ok() ? *r : "error: " + r.message();
}

// What `nvidia-smi --query-gpu=name --format=csv,noheader` prints on these GPUs (driver
// names of the NVIDIA, Tesla, GeForce and Quadro eras), and the row each must reach.
TEST(GpuNames, NvidiaSmiNamesReachTheirRows) {
  const std::pair<const char*, const char*> cases[] = {
      {"Tesla P100-PCIE-16GB", "P100-PCIE-16GB"},
      {"Tesla P100-PCIE-12GB", "P100-PCIE-12GB"},
      {"Tesla P100-SXM2-16GB", "P100"},
      {"Tesla P40", "P40"},
      {"Tesla P4", "P4"},
      {"Tesla V100-SXM2-16GB", "V100-16GB"},
      {"Tesla V100-SXM2-32GB", "V100-32GB"},
      {"Tesla V100-PCIE-16GB", "V100-PCIE-16GB"},
      {"Tesla V100-PCIE-32GB", "V100-PCIE-32GB"},
      {"Tesla V100S-PCIE-32GB", "V100S-PCIE-32GB"},
      {"Tesla T4", "T4"},
      {"NVIDIA A2", "A2"},
      {"NVIDIA A10", "A10"},
      {"NVIDIA A16", "A16"},
      {"NVIDIA A30", "A30"},
      {"NVIDIA A40", "A40"},
      {"A100-PCIE-40GB", "A100-PCIE-40GB"},
      {"NVIDIA A100-PCIE-40GB", "A100-PCIE-40GB"},
      {"NVIDIA A100 80GB PCIe", "A100-PCIE-80GB"},
      {"A100-SXM4-40GB", "A100-40GB"},
      {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
      {"A100-SXM-80GB", "A100-80GB"},
      {"NVIDIA L4", "L4"},
      {"NVIDIA L40", "L40"},
      {"NVIDIA L40S", "L40S"},
      {"NVIDIA H100 80GB HBM3", "H100"},
      {"NVIDIA H100 PCIe", "H100-PCIE"},
      {"NVIDIA H100 NVL", "H100-NVL"},
      {"NVIDIA H200", "H200"},
      {"NVIDIA H200 NVL", "H200-NVL"},
      {"NVIDIA GH200 480GB", "GH200"},
      {"NVIDIA B200", "B200"},
      {"NVIDIA A800-SXM4-80GB", "A800-80GB"},
      {"NVIDIA A800 80GB PCIe", "A800-PCIE-80GB"},
      {"NVIDIA H800", "H800"},
      {"NVIDIA H800 PCIe", "H800-PCIE"},
      {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000-Blackwell"},
      {"NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000-Blackwell"},
      {"NVIDIA GeForce RTX 4090 D", "RTX4090D"},
      {"Quadro P4000", "Quadro-P4000"},
      {"Quadro P5000", "Quadro-P5000"},
      {"Quadro P6000", "Quadro-P6000"},
      {"Quadro GV100", "Quadro-GV100"},
      {"Quadro RTX 4000", "Quadro-RTX4000"},
      {"Quadro RTX 5000", "Quadro-RTX5000"},
      {"Quadro RTX 6000", "Quadro-RTX6000"},
      {"Quadro RTX 8000", "Quadro-RTX8000"},
      {"NVIDIA RTX A2000", "RTX-A2000"},
      {"NVIDIA RTX A2000 12GB", "RTX-A2000-12GB"},
      {"NVIDIA RTX A4000", "RTX-A4000"},
      {"NVIDIA RTX A4500", "RTX-A4500"},
      {"NVIDIA RTX A5000", "RTX-A5000"},
      {"NVIDIA RTX A5500", "RTX-A5500"},
      {"RTX_A5500", "RTX-A5500"},  // Lambda's benchmark logs: spaces as underscores
      {"NVIDIA RTX A6000", "RTX-A6000"},
      {"NVIDIA RTX 4000 SFF Ada Generation", "RTX4000-SFF-Ada"},
      {"NVIDIA RTX 4000 Ada Generation", "RTX4000-Ada"},
      {"NVIDIA RTX 4500 Ada Generation", "RTX4500-Ada"},
      {"NVIDIA RTX 5000 Ada Generation", "RTX5000-Ada"},
      {"NVIDIA RTX 6000 Ada Generation", "RTX6000-Ada"},
      {"GeForce GTX 1060 6GB", "GTX1060"},
      {"NVIDIA GeForce GTX 1070", "GTX1070"},
      {"GeForce GTX 1080", "GTX1080"},
      {"GeForce GTX 1080 Ti", "GTX1080Ti"},
      {"NVIDIA GeForce GTX 1080 Ti", "GTX1080Ti"},
      {"TITAN X (Pascal)", "TITAN-X-Pascal"},
      {"TITAN Xp", "TITAN-Xp"},
      {"NVIDIA TITAN Xp", "TITAN-Xp"},
      {"TITAN V", "TITAN-V"},
      {"TITAN RTX", "TITAN-RTX"},
      {"NVIDIA TITAN RTX", "TITAN-RTX"},
      {"GeForce RTX 2060", "RTX2060"},
      {"GeForce RTX 2060 SUPER", "RTX2060-SUPER"},
      {"GeForce RTX 2070", "RTX2070"},
      {"GeForce RTX 2070 SUPER", "RTX2070-SUPER"},
      {"GeForce RTX 2080", "RTX2080"},
      {"GeForce RTX 2080 SUPER", "RTX2080-SUPER"},
      {"GeForce RTX 2080 Ti", "RTX2080Ti"},
      {"NVIDIA GeForce RTX 2080 Ti", "RTX2080Ti"},
      {"GeForce RTX 2070 with Max-Q Design", "RTX2070-MaxQ"},
      {"NVIDIA GeForce RTX 2080 with Max-Q Design", "RTX2080-MaxQ"},
      {"GeForce RTX 2060 with Max-Q Design", "RTX2060-MaxQ"},
      {"GeForce RTX 2070 Super with Max-Q Design", "RTX2070-SUPER-MaxQ"},
      {"GeForce RTX 2080 Super with Max-Q Design", "RTX2080-SUPER-MaxQ"},
      {"GeForce_RTX_2080_Super_with_Max-Q_Design", "RTX2080-SUPER-MaxQ"},
      {"NVIDIA GeForce RTX 3050", "RTX3050"},
      {"NVIDIA GeForce RTX 3060", "RTX3060"},
      {"NVIDIA GeForce RTX 3060 Ti", "RTX3060Ti"},
      {"NVIDIA GeForce RTX 3070", "RTX3070"},
      {"NVIDIA GeForce RTX 3070 Ti", "RTX3070Ti"},
      {"NVIDIA GeForce RTX 3080", "RTX3080"},
      {"NVIDIA GeForce RTX 3080 Ti", "RTX3080Ti"},
      {"NVIDIA GeForce RTX 3090", "RTX3090"},
      {"NVIDIA GeForce RTX 3090 Ti", "RTX3090Ti"},
      {"NVIDIA GeForce RTX 3060 Laptop GPU", "RTX3060-Laptop"},
      {"NVIDIA GeForce RTX 3070 Laptop GPU", "RTX3070-Laptop"},
      {"NVIDIA GeForce RTX 3070 Ti Laptop GPU", "RTX3070Ti-Laptop"},
      {"NVIDIA GeForce RTX 3080 Laptop GPU", "RTX3080-Laptop"},
      {"NVIDIA GeForce RTX 3080 Ti Laptop GPU", "RTX3080Ti-Laptop"},
      {"NVIDIA GeForce RTX 4060", "RTX4060"},
      {"NVIDIA GeForce RTX 4060 Ti", "RTX4060Ti"},
      {"NVIDIA GeForce RTX 4070", "RTX4070"},
      {"NVIDIA GeForce RTX 4070 SUPER", "RTX4070-SUPER"},
      {"NVIDIA GeForce RTX 4070 Ti", "RTX4070Ti"},
      {"NVIDIA GeForce RTX 4070 Ti SUPER", "RTX4070Ti-SUPER"},
      {"NVIDIA GeForce RTX 4080", "RTX4080"},
      {"NVIDIA GeForce RTX 4080 SUPER", "RTX4080-SUPER"},
      {"NVIDIA GeForce RTX 4090", "RTX4090"},
      {"NVIDIA GeForce RTX 5080", "RTX5080"},
      {"NVIDIA GeForce RTX 5090", "RTX5090"},
      {"NVIDIA GeForce RTX 4050 Laptop GPU", "RTX4050-Laptop"},
      {"NVIDIA GeForce RTX 4060 Laptop GPU", "RTX4060-Laptop"},
      {"NVIDIA GeForce RTX 4070 Laptop GPU", "RTX4070-Laptop"},
      {"NVIDIA GeForce RTX 4080 Laptop GPU", "RTX4080-Laptop"},
      {"NVIDIA GeForce RTX 4090 Laptop GPU", "RTX4090-Laptop"},
  };
  for (const auto& [smi, want] : cases) {
    Result<std::string> got = CanonicalGpuName(smi);
    ASSERT_TRUE(got.ok()) << smi << ": " << got.message();
    EXPECT_EQ(*got, want) << smi;
    // Without the vendor words, and in any case.
    std::string bare = smi;
    for (const char* w : {"NVIDIA ", "Tesla ", "GeForce ", "Quadro "})
      if (bare.rfind(w, 0) == 0) bare = bare.substr(std::string(w).size());
    std::string lower;
    for (char c : bare) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(Canon(lower), want) << lower;
  }
}

TEST(GpuNames, ShortNamesAndSpellings) {
  const std::pair<const char*, const char*> cases[] = {
      {"A6000", "RTX-A6000"},        {"rtx a6000", "RTX-A6000"},      {"RTX 6000 Ada", "RTX6000-Ada"},
      {"RTX 6000", "Quadro-RTX6000"}, {"rtx_3090", "RTX3090"},        {"3090", ""},
      {"RTX 3080 Mobile", "RTX3080-Laptop"}, {"rtx2080 max-q", "RTX2080-MaxQ"},
      {"RTX 2080 Max Q", "RTX2080-MaxQ"}, {"H100 SXM", "H100"},       {"v100", "V100-16GB"},
      {"V100M32", "V100-32GB"},      {"a100", "A100-40GB"},           {"A100 80GB", "A100-80GB"},
      {"titan x pascal", "TITAN-X-Pascal"},
  };
  for (const auto& [name, want] : cases) {
    Result<std::string> got = CanonicalGpuName(name);
    if (std::string(want).empty()) {
      EXPECT_FALSE(got.ok()) << name;
    } else {
      ASSERT_TRUE(got.ok()) << name << ": " << got.message();
      EXPECT_EQ(*got, want) << name;
    }
  }
  // Laptop and desktop parts of one name are different rows with different specs.
  const GpuSpec* laptop = FindGpuSpec("NVIDIA GeForce RTX 3080 Laptop GPU");
  const GpuSpec* desktop = FindGpuSpec("NVIDIA GeForce RTX 3080");
  ASSERT_TRUE(laptop && desktop);
  EXPECT_NE(laptop, desktop);
  EXPECT_LT(laptop->power_w, desktop->power_w);
  EXPECT_EQ(laptop->gpu_class, "laptop");
}

TEST(GpuNames, EveryNameReachesItsOwnRow) {
  // No alias of one row is (after normalisation) a name of another.
  for (const GpuSpec& s : GpuSpecs()) {
    EXPECT_EQ(Canon(s.name), s.name);
    for (const std::string& a : GpuAliases(s.name))
      EXPECT_EQ(Canon(a), s.name) << a;
  }
  EXPECT_TRUE(GpuAliases("nope").empty());
}

TEST(GpuNames, UnknownNamesListTheClosest) {
  // By hand on the keys: "rtx3900" -> rtx3090 1 (one transposition); rtx3050, rtx3060, rtx3070,
  // rtx3080 2 with the common prefix "rtx3" (ties in table order); rtx4000 (Quadro RTX 4000) 2 with
  // prefix "rtx" only; rtx3090ti 3.
  EXPECT_EQ(CanonicalGpuName("RTX3900").message(),
            "unknown GPU 'RTX3900'; closest: RTX3090, RTX3050, RTX3060, RTX3070, RTX3080 (gpucast gpus "
            "lists all; a GPU it lacks goes in a site table: --gpu-table)");
  // A transposition is one edit; the nvidia-smi spelling of a known GPU with a typo finds it.
  EXPECT_EQ(ClosestGpuNames("NVIDIA GeForce RTX 4090 Laptp GPU", 1), std::vector<std::string>{"RTX4090-Laptop"});
  EXPECT_EQ(ClosestGpuNames("Tesla V100-SXM2-32G8", 1), std::vector<std::string>{"V100-32GB"});
  EXPECT_EQ(ClosestGpuNames("H10O", 2).size(), 2u);
  EXPECT_EQ(CanonicalGpuName("").message().substr(0, 19), "unknown GPU ''; clo");
  EXPECT_EQ(GpuNameKey("NVIDIA GeForce RTX 2080 with Max-Q Design"), "rtx2080maxq");
  EXPECT_EQ(GpuNameKey("NVIDIA GeForce RTX 3080 Laptop GPU"), "rtx3080laptop");
  EXPECT_EQ(GpuNameKey("Tesla V100-SXM2-32GB"), "v100sxm232g");
}

// The power-limited clock: min(1, ((w - 1.12) / (2.94 - 1.12))^(1/3)) at w = board watts per SM
// (tools/zeus_power_fit.py). Hand values: T4 70 W / 40 SMs = 1.75 W/SM: (0.63 / 1.82)^(1/3) =
// 0.34615^(1/3) = 0.70214 (0.70214^3 = 0.34615); A100 40GB PCIe 250 W / 108 = 2.3148 W/SM:
// (1.1948 / 1.82)^(1/3) = 0.65648^(1/3) = 0.86911.
TEST(SustainedComputeFraction, ByHandFromBoardPowerPerSm) {
  EXPECT_NEAR(SustainedComputeFraction(*FindGpuSpec("T4")), 0.70214, 1e-5);
  EXPECT_NEAR(SustainedComputeFraction(*FindGpuSpec("A100-PCIE-40GB")), 0.86911, 1e-5);
  // Power to hold the boost clock: RTX 3090 350 W / 82 SMs, A100 SXM 400 W / 108, P100 PCIe 250 W / 56.
  for (const char* g : {"RTX3090", "A100-80GB", "A100-40GB", "P100-PCIE-16GB", "V100-PCIE-32GB"})
    EXPECT_EQ(SustainedComputeFraction(*FindGpuSpec(g)), 1) << g;
  // A MIG slice has the whole board's power: the fraction of the whole GPU (1 on the SXM A100).
  Result<GpuSpec> slice = ResolveGpu("A100-80GB", "1g.10gb");
  ASSERT_TRUE(slice.ok()) << slice.message();
  EXPECT_EQ(SustainedComputeFraction(*slice), 1);
  Result<GpuSpec> pcie = ResolveGpu("A100-PCIE-40GB", "3g.20gb");
  ASSERT_TRUE(pcie.ok()) << pcie.message();
  EXPECT_NEAR(SustainedComputeFraction(*pcie), 0.86911, 1e-5);
  // Outside the architectures the fit saw: 1 (the L4, Ada, is 72 W / 58 SMs).
  EXPECT_EQ(SustainedComputeFraction(*FindGpuSpec("L4")), 1);
  GpuSpec none;  // no power stated
  none.architecture = "Turing";
  none.sms = 40;
  EXPECT_EQ(SustainedComputeFraction(none), 1);
  // Never above 1, never 0, for every row of the table.
  for (const GpuSpec& s : GpuSpecs()) {
    EXPECT_LE(SustainedComputeFraction(s), 1) << s.name;
    EXPECT_GT(SustainedComputeFraction(s), 0.3) << s.name;
  }
}

}  // namespace
}  // namespace gpucast
