#include "features/gpu_specs.h"

namespace gpucast {

const std::vector<GpuSpec>& GpuSpecs() {
  static const std::vector<GpuSpec> specs = {
      // GeForce parts run FP16 tensor math with FP32 accumulate at half the
      // FP16-accumulate rate (71 TFLOP/s); autocast accumulates in FP32.
      {"RTX3090", 35.6e12, 35.6e12, 936e9,
       "NVIDIA Ampere GA102 GPU Architecture whitepaper, Appendix A (GeForce RTX 3090)"},
      {"V100", 15.7e12, 125e12, 900e9, "NVIDIA Tesla V100 datasheet (SXM2)"},
      {"A100", 19.5e12, 312e12, 1555e9, "NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB)"},
      {"A100-80GB", 19.5e12, 312e12, 2039e9, "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB)"},
      {"H100", 67e12, 989.4e12, 3350e9, "NVIDIA H100 Tensor Core GPU datasheet (SXM5)"},
      {"H200", 67e12, 989.4e12, 4800e9, "NVIDIA H200 Tensor Core GPU datasheet (SXM)"},
      {"T4", 8.1e12, 65e12, 320e9, "NVIDIA T4 Tensor Core GPU datasheet"},
      {"P100", 10.6e12, 21.2e12, 732e9,
       "NVIDIA Tesla P100 datasheet (SXM2; no tensor cores: FP16 is the 2x half-precision rate)"},
  };
  return specs;
}

const GpuSpec* FindGpuSpec(const std::string& name) {
  for (const GpuSpec& s : GpuSpecs())
    if (name == s.name) return &s;
  return nullptr;
}

}  // namespace gpucast
