// The GPU spec table and the MIG profile table. Every number comes from the
// source named in its row (docs/features.md repeats them with the sources).
#include "features/gpu_specs.h"

#include <cctype>
#include <map>

namespace gpucast {

namespace {

struct GpuRow {
  GpuSpec spec;
  std::vector<std::string> aliases;
  std::vector<MigProfile> mig;  // empty: no MIG
};

// THE table. Dense peak rates; tensor rates with FP32 accumulate. Fields not named
// keep their defaults (0 = not supported; the MIG fields of a whole GPU).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
const std::vector<GpuRow>& Rows() {
  static const std::vector<GpuRow> rows = {
      {{.name = "RTX3090",
        .fp32_flops = 35.6e12,
        // GeForce GA102 runs FP16/BF16 tensor math with FP32 accumulate at half the
        // FP16-accumulate rate: 71 dense (142 with FP16 accumulate); TF32 35.6.
        .fp16_tensor_flops = 71e12,
        .mem_bandwidth = 936e9,
        .source = "NVIDIA Ampere GA102 GPU Architecture whitepaper v2.0, Appendix A (GeForce RTX 3090: "
                  "82 SMs, 10,496 CUDA cores at 1.695 GHz; FP16/BF16 tensor with FP32 accumulate 71 "
                  "TFLOPS dense; TF32 35.6; 24 GB GDDR6X, 19.5 Gbps x 384 bit = 936 GB/s)",
        .bf16_tensor_flops = 71e12,
        .tf32_tensor_flops = 35.6e12,
        .memory_gib = 24,
        .sms = 82},
       {"RTX 3090", "GeForce RTX 3090"},
       {}},
      {{.name = "V100-16GB",
        .fp32_flops = 15.7e12,
        .fp16_tensor_flops = 125e12,
        .mem_bandwidth = 900e9,
        .source = "NVIDIA Tesla V100 datasheet (SXM2: FP32 15.7 TFLOPS, tensor 125 TFLOPS, 16 GB HBM2 "
                  "at 900 GB/s); 80 SMs: NVIDIA Tesla V100 GPU Architecture whitepaper",
        .memory_gib = 16,
        .sms = 80},
       {"V100", "V100M16", "V100-SXM2-16GB", "V100 16GB"},
       {}},
      {{.name = "V100-32GB",
        .fp32_flops = 15.7e12,
        .fp16_tensor_flops = 125e12,
        .mem_bandwidth = 900e9,
        .source = "NVIDIA Tesla V100 datasheet (SXM2: FP32 15.7 TFLOPS, tensor 125 TFLOPS, 32 GB HBM2 "
                  "at 900 GB/s); 80 SMs: NVIDIA Tesla V100 GPU Architecture whitepaper",
        .memory_gib = 32,
        .sms = 80},
       {"V100M32", "V100-SXM2-32GB", "V100 32GB"},
       {}},
      {{.name = "T4",
        .fp32_flops = 8.1e12,
        .fp16_tensor_flops = 65e12,
        .mem_bandwidth = 320e9,
        .source = "NVIDIA T4 Tensor Core GPU datasheet (FP32 8.1 TFLOPS, mixed precision FP16/FP32 65 "
                  "TFLOPS, 16 GB GDDR6 at 320 GB/s); 40 SMs (2,560 CUDA cores): NVIDIA Turing GPU "
                  "Architecture whitepaper, Tesla T4",
        .memory_gib = 16,
        .sms = 40},
       {"Tesla T4"},
       {}},
      {{.name = "A10",
        .fp32_flops = 31.2e12,
        .fp16_tensor_flops = 125e12,
        .mem_bandwidth = 600e9,
        .source = "NVIDIA A10 Tensor Core GPU datasheet (FP32 31.2 TFLOPS, TF32 62.5, BF16/FP16 tensor "
                  "125 dense (250 with sparsity), 24 GB GDDR6 at 600 GB/s); 72 SMs (9,216 CUDA cores, 128 "
                  "per GA10x SM)",
        .bf16_tensor_flops = 125e12,
        .tf32_tensor_flops = 62.5e12,
        .memory_gib = 24,
        .sms = 72},
       {},
       {}},
      {{.name = "L4",
        .fp32_flops = 30.3e12,
        .fp16_tensor_flops = 121e12,
        .mem_bandwidth = 300e9,
        .source = "NVIDIA L4 Tensor Core GPU datasheet (FP32 30.3 TFLOPS; TF32 120 and FP16/BF16 242 "
                  "TFLOPS with sparsity, dense is one half: 60 and 121; 24 GB GDDR6 at 300 GB/s); 58 SMs "
                  "(7,424 CUDA cores, 128 per Ada SM)",
        .bf16_tensor_flops = 121e12,
        .tf32_tensor_flops = 60e12,
        .memory_gib = 24,
        .sms = 58},
       {},
       {}},
      {{.name = "A100-40GB",
        .fp32_flops = 19.5e12,
        .fp16_tensor_flops = 312e12,
        .mem_bandwidth = 1555e9,
        .source = "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM: FP32 19.5 TFLOPS, TF32 156, "
                  "BF16/FP16 tensor 312 dense, 40 GB HBM2 at 1,555 GB/s); 108 SMs: NVIDIA A100 Tensor "
                  "Core GPU Architecture whitepaper",
        .bf16_tensor_flops = 312e12,
        .tf32_tensor_flops = 156e12,
        .memory_gib = 40,
        .sms = 108},
       {"A100", "A100-SXM4-40GB", "A100 40GB"},
       // MIG User Guide, A100 table (A100-SXM4-40GB) and its `nvidia-smi mig -lgip` listing.
       {{"1g.5gb", 1, 14, 4.75, 1.0 / 8},
        {"2g.10gb", 2, 28, 9.75, 2.0 / 8},
        {"3g.20gb", 3, 42, 19.62, 4.0 / 8},
        {"4g.20gb", 4, 56, 19.62, 4.0 / 8},
        {"7g.40gb", 7, 98, 39.50, 1.0}}},
      {{.name = "A100-80GB",
        .fp32_flops = 19.5e12,
        .fp16_tensor_flops = 312e12,
        .mem_bandwidth = 2039e9,
        .source = "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM: FP32 19.5 TFLOPS, TF32 156, "
                  "BF16/FP16 tensor 312 dense, 80 GB HBM2e at 2,039 GB/s); 108 SMs: NVIDIA A100 Tensor "
                  "Core GPU Architecture whitepaper",
        .bf16_tensor_flops = 312e12,
        .tf32_tensor_flops = 156e12,
        .memory_gib = 80,
        .sms = 108},
       {"A100-SXM4-80GB", "A100 80GB"},
       // MIG User Guide, A100 table (names for A100-SXM4-80GB) and the -lgip listing of an
       // A100 80GB: 1g.10gb 14 SMs 9.50 GiB, 2g.20gb 28 / 19.50, 3g.40gb 42 / 39.25,
       // 4g.40gb 56 / 39.25, 7g.80gb 98 / 79.00.
       {{"1g.10gb", 1, 14, 9.50, 1.0 / 8},
        {"2g.20gb", 2, 28, 19.50, 2.0 / 8},
        {"3g.40gb", 3, 42, 39.25, 4.0 / 8},
        {"4g.40gb", 4, 56, 39.25, 4.0 / 8},
        {"7g.80gb", 7, 98, 79.00, 1.0}}},
      {{.name = "H100",
        .fp32_flops = 67e12,
        .fp16_tensor_flops = 989.4e12,
        .mem_bandwidth = 3350e9,
        .source = "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: FP32 67 TFLOPS, 80 GB HBM3 at 3.35 "
                  "TB/s); dense tensor rates and 132 SMs: NVIDIA H100 Tensor Core GPU Architecture "
                  "whitepaper (H100 SXM5: FP16/BF16 with FP32 accumulate 989.4, TF32 494.7)",
        .bf16_tensor_flops = 989.4e12,
        .tf32_tensor_flops = 494.7e12,
        .memory_gib = 80,
        .sms = 132},
       {"H100-80GB", "H100 SXM", "H100-SXM5-80GB", "H100 80GB HBM3"},
       // MIG User Guide, H100 table and its -lgip listing of an H100 SXM5 80GB.
       {{"1g.10gb", 1, 16, 9.75, 1.0 / 8},
        {"1g.20gb", 1, 26, 19.62, 2.0 / 8},
        {"2g.20gb", 2, 32, 19.62, 2.0 / 8},
        {"3g.40gb", 3, 60, 39.50, 4.0 / 8},
        {"4g.40gb", 4, 64, 39.50, 4.0 / 8},
        {"7g.80gb", 7, 132, 79.25, 1.0}}},
      {{.name = "H200",
        .fp32_flops = 67e12,
        .fp16_tensor_flops = 989.5e12,
        .mem_bandwidth = 4800e9,
        .source = "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: FP32 67 TFLOPS; TF32 989 and "
                  "BF16/FP16 1,979 TFLOPS with sparsity, dense is one half; 141 GB HBM3e at 4.8 TB/s); "
                  "132 SMs (GH100, as the 7g.141gb MIG listing)",
        .bf16_tensor_flops = 989.5e12,
        .tf32_tensor_flops = 494.5e12,
        .memory_gib = 141,
        .sms = 132},
       {"H200-141GB", "H200 SXM", "H200-SXM5-141GB"},
       // MIG User Guide, H200 table. -lgip listing of an H200: 1g.18gb 16 SMs 16.00 GiB,
       // 2g.35gb 32 / 32.50, 7g.141gb 132 / 140.00. Not in that listing (docs/features.md):
       // 1g.35gb (memory 2/8 as 2g.35gb; SMs 26 as H100's 1g.20gb), 3g.71gb / 4g.71gb (SMs
       // 60 / 64 as H100 SXM5's 3g / 4g on the same 132-SM GH100; memory 4/8 x 140.00).
       {{"1g.18gb", 1, 16, 16.00, 1.0 / 8},
        {"1g.35gb", 1, 26, 32.50, 2.0 / 8},
        {"2g.35gb", 2, 32, 32.50, 2.0 / 8},
        {"3g.71gb", 3, 60, 70.00, 4.0 / 8},
        {"4g.71gb", 4, 64, 70.00, 4.0 / 8},
        {"7g.141gb", 7, 132, 140.00, 1.0}}},
      {{.name = "P100",
        .fp32_flops = 10.6e12,
        .fp16_tensor_flops = 21.2e12,
        .mem_bandwidth = 732e9,
        .source = "NVIDIA Tesla P100 datasheet (SXM2: FP32 10.6 TFLOPS; no tensor cores, FP16 at twice "
                  "the FP32 rate 21.2; 16 GB HBM2 at 732 GB/s); 56 SMs: NVIDIA Tesla P100 whitepaper",
        .memory_gib = 16,
        .sms = 56},
       {"Tesla P100"},
       {}},
  };
  return rows;
}
#pragma GCC diagnostic pop

std::string Lower(const std::string& s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Lower-case alphanumerics only, without a leading nvidia/tesla/geforce and with
// "gb" shortened to "g": "NVIDIA A100-SXM4-80GB" -> "a100sxm480g".
std::string GpuKey(const std::string& name) {
  std::string s = Lower(name), out;
  for (const char* prefix : {"nvidia", "tesla", "geforce"}) {
    size_t n = std::string(prefix).size();
    size_t i = s.find_first_not_of(" -_.");
    if (i != std::string::npos && s.compare(i, n, prefix) == 0) s = s.substr(i + n);
  }
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += c;
  for (size_t p; (p = out.find("gb")) != std::string::npos;) out.replace(p, 2, "g");
  return out;
}

// "MIG 3g.40gb", "3G.40GB", "3g.40g" -> "3g40g".
std::string MigKey(const std::string& name) {
  std::string s = Lower(name);
  size_t i = s.find_first_not_of(" ");
  if (i != std::string::npos && s.compare(i, 3, "mig") == 0) s = s.substr(i + 3);
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += c;
  for (size_t p; (p = out.find("gb")) != std::string::npos;) out.replace(p, 2, "g");
  return out;
}

const GpuRow* FindRow(const std::string& name) {
  static const std::map<std::string, const GpuRow*> index = [] {
    std::map<std::string, const GpuRow*> m;
    for (const GpuRow& r : Rows()) {
      m[GpuKey(r.spec.name)] = &r;
      for (const std::string& a : r.aliases) m[GpuKey(a)] = &r;
    }
    return m;
  }();
  std::string key = GpuKey(name);
  if (key.empty()) return nullptr;
  auto it = index.find(key);
  return it == index.end() ? nullptr : it->second;
}

}  // namespace

const std::vector<GpuSpec>& GpuSpecs() {
  static const std::vector<GpuSpec> specs = [] {
    std::vector<GpuSpec> v;
    for (const GpuRow& r : Rows()) v.push_back(r.spec);
    return v;
  }();
  return specs;
}

const GpuSpec* FindGpuSpec(const std::string& name) {
  const GpuRow* row = FindRow(name);
  if (!row) return nullptr;
  return &GpuSpecs()[static_cast<size_t>(row - Rows().data())];
}

const std::vector<MigProfile>& MigProfiles(const std::string& gpu) {
  static const std::vector<MigProfile> none;
  const GpuRow* row = FindRow(gpu);
  return row ? row->mig : none;
}

std::string KnownGpuNames() {
  std::string known;
  for (const GpuSpec& s : GpuSpecs()) known += (known.empty() ? "" : ", ") + s.name;
  return known;
}

Result<GpuSpec> ResolveGpu(const std::string& gpu, const std::string& mig_profile) {
  const GpuRow* row = FindRow(gpu);
  if (!row) return Status::Error("unknown GPU '" + gpu + "' (known: " + KnownGpuNames() + ")");
  GpuSpec s = row->spec;
  if (mig_profile.empty()) return s;
  if (row->mig.empty()) {
    std::string capable;
    for (const GpuRow& r : Rows())
      if (!r.mig.empty()) capable += (capable.empty() ? "" : ", ") + r.spec.name;
    return Status::Error("GPU '" + s.name + "' has no MIG profiles (MIG-capable: " + capable + ")");
  }
  const std::string key = MigKey(mig_profile);
  for (const MigProfile& p : row->mig) {
    if (MigKey(p.name) != key) continue;
    const double f = static_cast<double>(p.sms) / s.sms;
    s.fp32_flops *= f;
    s.fp16_tensor_flops *= f;
    s.bf16_tensor_flops *= f;
    s.tf32_tensor_flops *= f;
    s.mem_bandwidth *= p.mem_bw_fraction;
    s.memory_gib = p.memory_gib;
    s.sms = p.sms;
    s.mig_profile = p.name;
    s.compute_fraction = f;
    s.mem_bw_fraction = p.mem_bw_fraction;
    return s;
  }
  std::string names;
  for (const MigProfile& p : row->mig) names += (names.empty() ? "" : ", ") + p.name;
  return Status::Error("GPU '" + s.name + "' has no MIG profile '" + mig_profile + "' (profiles: " +
                       names + ")");
}

}  // namespace gpucast
