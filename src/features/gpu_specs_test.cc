#include "features/gpu_specs.h"

#include <gtest/gtest.h>

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
  }
  for (const char* want : {"RTX3090", "V100", "A100", "H100", "H200", "T4", "P100"})
    EXPECT_NE(FindGpuSpec(want), nullptr) << want;
  EXPECT_EQ(FindGpuSpec("rtx3090"), nullptr);
}

TEST(GpuSpecs, Rtx3090MatchesTheGa102Whitepaper) {
  // 10,496 CUDA cores × 2 FLOPs × 1.695 GHz boost = 35.58 TFLOPS; 19.5 Gbps × 384 bit / 8 = 936 GB/s.
  const GpuSpec* s = FindGpuSpec("RTX3090");
  ASSERT_NE(s, nullptr);
  EXPECT_NEAR(s->fp32_flops, 10496 * 2 * 1.695e9, 0.1e12);
  EXPECT_DOUBLE_EQ(s->mem_bandwidth, 19.5e9 * 384 / 8);
  // GeForce: FP16 tensor with FP32 accumulate (autocast) runs at the FP32 rate.
  EXPECT_DOUBLE_EQ(s->fp16_tensor_flops, 35.6e12);
}

}  // namespace
}  // namespace gpucast
