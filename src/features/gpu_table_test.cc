// The GPU table against independent references: the per-SM, per-clock rates
// of NVIDIA's architecture whitepapers (a typo in a row's peak, SMs or clock
// breaks the product), and the physical rules every row must obey.
#include "features/gpu_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

namespace gpucast {
namespace {

bool StartsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// GA100 (A100, A800, A30) and GP100 (P100) are the HPC dies: 64 FP32 lanes per SM.
bool IsHpcDie(const GpuSpec& s) {
  return StartsWith(s.name, "A100") || StartsWith(s.name, "A800") || s.name == "A30" || StartsWith(s.name, "P100");
}

// GeForce parts (not TITAN) and the L40 run FP16 tensor math with FP32 accumulate at half rate.
bool HalfRateFp32Accumulate(const GpuSpec& s) {
  return ((s.gpu_class == "desktop" || s.gpu_class == "laptop") && !StartsWith(s.name, "TITAN")) ||
         s.name == "L40";
}

// FP32 FLOP per clock per SM (2 per FMA lane): whitepapers of each architecture.
double Fp32PerSmClock(const GpuSpec& s) {
  if (s.architecture == "Volta" || s.architecture == "Turing") return 64 * 2;
  if (s.architecture == "Pascal" || s.architecture == "Ampere") return IsHpcDie(s) ? 64 * 2 : 128 * 2;
  if (s.architecture == "Ada") return 128 * 2;
  if (s.architecture == "Blackwell" && s.gpu_class == "desktop") return 128 * 2;  // GeForce RTX 50
  return 0;  // Hopper, Blackwell data centre: no single clock stated (rows leave boost_mhz 0)
}

// FP16 (tensor where there are tensor cores) FLOP per clock per SM, dense, FP32 accumulate.
double Fp16PerSmClock(const GpuSpec& s) {
  if (s.architecture == "Pascal") return 256;  // GP100: 2 x FP32; GP10x: the FP32 rate (no fast FP16)
  if (s.architecture == "Volta") return 8 * 64 * 2;  // 8 tensor cores x 64 FMA
  double full = 0;
  if (s.architecture == "Turing") full = 8 * 64 * 2;
  if (s.architecture == "Ampere") full = IsHpcDie(s) ? 4 * 256 * 2 : 4 * 128 * 2;
  if (s.architecture == "Ada") full = 4 * 128 * 2;
  if (s.architecture == "Blackwell" && s.gpu_class == "desktop") full = 4 * 128 * 2;  // as Ada, per SM
  return HalfRateFp32Accumulate(s) ? full / 2 : full;
}

// The roofline's delivered-bandwidth share (GpuSpec::mem_bw_delivered): the V100 whitepaper
// ("1.5x delivered memory bandwidth versus Pascal GP100, with up to 95% utilization") makes a
// GP100 deliver 0.95 x 900 / 1.5 = 570 of its 732 GB/s, i.e. 900 / 1.5 = 600 GB/s counted at a
// Volta-like efficiency. Every P100 row (GP100) carries it, every other row is 1.
TEST(GpuTable, OnlyGp100RowsDeliverLessThanTheirPeakBandwidth) {
  int gp100 = 0;
  for (const GpuTableRow& r : GpuTable()) {
    const GpuSpec& s = r.spec;
    if (StartsWith(s.name, "P100")) {
      ++gp100;
      EXPECT_NEAR(s.mem_bw_delivered * 732, 600, 1e-9) << s.name;
    } else {
      EXPECT_EQ(s.mem_bw_delivered, 1) << s.name;
    }
  }
  EXPECT_EQ(gp100, 3);
}

TEST(GpuTable, PeaksFollowFromSmsAndClock) {
  int checked = 0;
  for (const GpuTableRow& r : GpuTable()) {
    const GpuSpec& s = r.spec;
    if (s.sms == 0 || s.boost_mhz == 0 || Fp32PerSmClock(s) == 0) continue;
    ++checked;
    double fp32 = s.sms * Fp32PerSmClock(s) * s.boost_mhz * 1e6;
    EXPECT_NEAR(s.fp32_flops / fp32, 1, 0.02) << s.name << " FP32 " << s.fp32_flops / 1e12 << " vs "
                                              << fp32 / 1e12;
    double fp16 = s.sms * Fp16PerSmClock(s) * s.boost_mhz * 1e6;
    // TITAN V: NVIDIA states 110 tensor TFLOPS, 8% below 80 SMs x 1024 x 1.455 GHz.
    double tolerance = s.name == "TITAN-V" ? 0.09 : 0.02;
    EXPECT_NEAR(s.fp16_tensor_flops / fp16, 1, tolerance)
        << s.name << " FP16 " << s.fp16_tensor_flops / 1e12 << " vs " << fp16 / 1e12;
    if (s.tf32_tensor_flops > 0) {
      EXPECT_NEAR(s.tf32_tensor_flops / (s.fp16_tensor_flops / 2), 1, 0.02) << s.name;
    }
  }
  EXPECT_GE(checked, 60);
}

TEST(GpuTable, RowsArePhysical) {
  const std::set<std::string> classes = {"datacenter", "workstation", "desktop", "laptop"};
  const std::set<std::string> archs = {"Pascal", "Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell"};
  const std::set<std::string> forms = {"SXM2", "SXM4", "SXM5", "SXM6", "PCIe", "laptop", "superchip"};
  for (const GpuTableRow& r : GpuTable()) {
    const GpuSpec& s = r.spec;
    SCOPED_TRACE(s.name);
    EXPECT_TRUE(classes.count(s.gpu_class));
    EXPECT_TRUE(archs.count(s.architecture));
    EXPECT_TRUE(forms.count(s.form_factor));
    EXPECT_FALSE(s.source.empty());
    EXPECT_GT(s.fp32_flops, 1e12);
    EXPECT_GE(s.fp16_tensor_flops, s.fp32_flops);
    EXPECT_GT(s.mem_bandwidth, 1e11);
    EXPECT_GE(s.memory_gib, 6);
    EXPECT_GT(s.power_w, 0);
    EXPECT_LE(s.power_w_min, s.power_w);
    EXPECT_LE(s.boost_mhz_min, s.boost_mhz);
    // BF16 / TF32 tensor math exists from Ampere on; BF16 runs at the FP16 rate.
    bool ampere_on = s.architecture != "Pascal" && s.architecture != "Volta" && s.architecture != "Turing";
    EXPECT_EQ(s.bf16_tensor_flops > 0, ampere_on);
    EXPECT_EQ(s.tf32_tensor_flops > 0, ampere_on);
    if (ampere_on) {
      EXPECT_EQ(s.bf16_tensor_flops, s.fp16_tensor_flops);
      EXPECT_LT(s.tf32_tensor_flops, s.fp16_tensor_flops);
    }
    // Interconnect: SXM parts sit on an NVLink board fabric; laptops have none; a card's NVLink is a bridge.
    EXPECT_EQ(s.nvlink_gen > 0, s.nvlink_bandwidth > 0);
    if (StartsWith(s.form_factor, "SXM")) {
      EXPECT_GT(s.nvlink_gen, 0);
      EXPECT_FALSE(s.nvlink_bridge);
    }
    if (s.form_factor == "PCIe" && s.nvlink_gen > 0) {
      EXPECT_TRUE(s.nvlink_bridge);
    }
    if (s.gpu_class == "laptop") {
      EXPECT_EQ(s.form_factor, "laptop");
      EXPECT_EQ(s.nvlink_gen, 0);
    }
    if (s.form_factor == "superchip") {  // GH200: the GPU meets its CPU over NVLink-C2C, not PCIe
      EXPECT_EQ(s.pcie_gen, 0);
      EXPECT_GT(s.nvlink_gen, 0);
      EXPECT_FALSE(s.nvlink_bridge);
    } else if (s.form_factor != "SXM6") {  // B200: host link not stated by its datasheet
      EXPECT_GE(s.pcie_gen, 3);
      EXPECT_TRUE(s.pcie_lanes == 8 || s.pcie_lanes == 16);
    }
    // Per-link NVLink rates (one direction): 1.0 20 GB/s, 2.0-4.0 25 GB/s, 5.0 50 GB/s.
    if (s.nvlink_links > 0) {
      double per_link = s.nvlink_bandwidth / s.nvlink_links;
      double want = s.nvlink_gen == 1 ? 20e9 : s.nvlink_gen == 5 ? 50e9 : 25e9;
      EXPECT_DOUBLE_EQ(per_link, want);
    }
  }
}

// The export variants (A800, H800) are their base GPU with NVLink held to 400 GB/s both
// directions (Reuters on NVIDIA's statement of 7 November 2022: "the A100's performance", NVLink
// 400 GB/s against 600; the H800 the same with the H100's 900): every peak, the memory and the SMs
// are the base row's, the link is 400 / 2 one way.
TEST(GpuTable, ExportVariantsAreTheirBaseGpuWithNvlinkAt400) {
  auto row = [](const std::string& name) -> const GpuSpec* {
    for (const GpuTableRow& r : GpuTable())
      if (r.spec.name == name) return &r.spec;
    return nullptr;
  };
  const std::pair<const char*, const char*> pairs[] = {
      {"A800-80GB", "A100-80GB"}, {"A800-PCIE-80GB", "A100-PCIE-80GB"}, {"H800", "H100"}, {"H800-PCIE", "H100-PCIE"}};
  for (const auto& [variant, base] : pairs) {
    const GpuSpec* v = row(variant);
    const GpuSpec* b = row(base);
    ASSERT_NE(v, nullptr) << variant;
    ASSERT_NE(b, nullptr) << base;
    EXPECT_EQ(v->fp32_flops, b->fp32_flops) << variant;
    EXPECT_EQ(v->fp16_tensor_flops, b->fp16_tensor_flops) << variant;
    EXPECT_EQ(v->tf32_tensor_flops, b->tf32_tensor_flops) << variant;
    EXPECT_EQ(v->mem_bandwidth, b->mem_bandwidth) << variant;
    EXPECT_EQ(v->memory_gib, b->memory_gib) << variant;
    EXPECT_EQ(v->sms, b->sms) << variant;
    EXPECT_EQ(v->power_w, b->power_w) << variant;
    EXPECT_EQ(v->form_factor, b->form_factor) << variant;
    EXPECT_EQ(v->nvlink_gen, b->nvlink_gen) << variant;
    EXPECT_DOUBLE_EQ(v->nvlink_bandwidth, 200e9) << variant;
    EXPECT_LT(v->nvlink_bandwidth, b->nvlink_bandwidth) << variant;
  }
}

// RTX PRO 6000 Blackwell: NVIDIA states 188 SMs, 125 FP32 TFLOPS and 4,000 AI TOPS (FP4, 2:4
// sparse). FP4 sparse is 8x the dense FP16 rate on GB202 (the RTX 5090's 3,352 TOPS at 170 SMs x
// 2.407 GHz is 8,192 per SM per clock: 1,024 dense FP16 x 4 for FP4 x 2 for sparsity), so the row's
// dense FP16 must be 4,000 / 8, and at the clock its FP32 peak implies (128 lanes x 2 per SM) that is
// the full rate, 1,024 per SM per clock; TF32 one half.
TEST(GpuTable, RtxPro6000TensorPeakFollowsFromNvidiasFigures) {
  const GpuSpec* s = nullptr;
  for (const GpuTableRow& r : GpuTable())
    if (r.spec.name == "RTX-PRO-6000-Blackwell") s = &r.spec;
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->sms, 188);
  EXPECT_DOUBLE_EQ(s->fp32_flops, 125e12);
  EXPECT_NEAR(s->fp16_tensor_flops, 4000e12 / 8, 1e12);
  const double clock = s->fp32_flops / (s->sms * 256.0);
  EXPECT_NEAR(s->fp16_tensor_flops / (s->sms * 1024 * clock), 1, 0.002);
  EXPECT_DOUBLE_EQ(s->tf32_tensor_flops, s->fp16_tensor_flops / 2);
}

TEST(GpuTable, LaptopPartsAreNotTheirDesktopNamesakes) {
  int laptops = 0;
  for (const GpuTableRow& r : GpuTable()) {
    const GpuSpec& s = r.spec;
    if (s.gpu_class != "laptop") continue;
    ++laptops;
    // "RTX3080-Laptop" -> "RTX3080", "RTX2080-SUPER-MaxQ" -> "RTX2080-SUPER".
    std::string desktop = s.name.substr(0, s.name.rfind('-'));
    const GpuSpec* d = nullptr;
    for (const GpuTableRow& o : GpuTable())
      if (o.spec.name == desktop) d = &o.spec;
    // Laptop-only parts have no desktop card of that name.
    if (desktop == "RTX4050") {
      EXPECT_EQ(d, nullptr);
      continue;
    }
    ASSERT_NE(d, nullptr) << s.name;
    EXPECT_NE(s.fp32_flops, d->fp32_flops) << s.name;
    EXPECT_LE(s.power_w, d->power_w) << s.name;
    EXPECT_LT(s.power_w_min, d->power_w) << s.name;
    EXPECT_LT(s.boost_mhz_min, d->boost_mhz) << s.name;
  }
  EXPECT_GE(laptops, 10);
}

TEST(GpuTable, EveryGpuOfTheIssueIsThere) {
  std::set<std::string> names;
  for (const GpuTableRow& r : GpuTable()) names.insert(r.spec.name);
  for (const char* want :
       {"P100", "P100-PCIE-16GB", "P40", "V100-16GB", "V100-32GB", "V100-PCIE-16GB", "V100-PCIE-32GB",
        "V100S-PCIE-32GB", "T4", "A2", "A10", "A16", "A30", "A40", "A100-40GB", "A100-80GB", "A100-PCIE-40GB",
        "A100-PCIE-80GB", "L4", "L40", "L40S", "H100", "H100-PCIE", "H100-NVL", "H200", "B200",
        "Quadro-RTX4000", "Quadro-RTX5000", "Quadro-RTX6000", "Quadro-RTX8000", "RTX-A2000", "RTX-A4000",
        "RTX-A4500", "RTX-A5000", "RTX-A5500", "RTX-A6000", "RTX4000-Ada", "RTX4500-Ada", "RTX5000-Ada", "RTX6000-Ada", "GTX1080", "GTX1080Ti", "TITAN-Xp", "TITAN-V",
        "TITAN-RTX", "RTX2060", "RTX2070", "RTX2080", "RTX2080Ti", "RTX3060", "RTX3060Ti", "RTX3070",
        "RTX3080", "RTX3080Ti", "RTX3090", "RTX3090Ti", "RTX4060", "RTX4060Ti", "RTX4070", "RTX4070Ti",
        "RTX4080", "RTX4090", "RTX3080-Laptop", "RTX2080-MaxQ", "RTX2080-SUPER-MaxQ", "RTX4090-Laptop"})
    EXPECT_TRUE(names.count(want)) << want;
}

}  // namespace
}  // namespace gpucast
