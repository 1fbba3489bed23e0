// THE GPU table. One row per GPU model: dense peak rates (tensor rates with
// FP32 accumulate, what torch.autocast runs), DRAM bandwidth and size, SMs,
// boost clock, power, host link and NVLink, and the document every number
// comes from (docs/features.md repeats them). A number the source does not
// state is left 0 and said so in the row. Conventions:
// - "sparse" datasheet rates (2:4 structured sparsity) are halved to dense.
// - GeForce (and L40) parts run FP16/BF16 tensor math with FP32 accumulate at
//   half their FP16-accumulate rate; Quadro/RTX A/RTX Ada, TITAN and data
//   centre parts at the full rate. TF32 is half the FP16 rate on Ampere/Ada.
// - Pascal GP102/GP104 have no fast FP16 (1/64 rate): autocast's FP16 matmuls
//   run on the FP32 units there, so their "fp16" rate is the FP32 rate. P100
//   (GP100) runs FP16 at twice FP32 on its CUDA cores (no tensor cores).
// - NVLink bandwidth is ONE direction (datasheets add both: halved here).
// - Laptop parts: NVIDIA gives a boost-clock and a TGP range per model; the
//   peaks are at the top of the range (boost_mhz), boost_mhz_min / power_w_min
//   keep the bottom. A laptop part is its own row, never its desktop namesake.
#include "features/gpu_table.h"

#include <atomic>

namespace gpucast {
namespace {

constexpr double T = 1e12;  // TFLOP/s -> FLOP/s
constexpr double G = 1e9;   // GB/s -> bytes/s
// GP100's memory controller delivers less of its peak than Volta's: "1.5x delivered memory
// bandwidth versus Pascal GP100, with up to 95% memory bandwidth utilization" (NVIDIA Tesla V100
// GPU Architecture whitepaper, "HBM2 memory"): GP100 delivers 0.95 * 900 / 1.5 = 570 GB/s of its
// 732, so at a Volta-like efficiency its peak counts as 900 / (1.5 * 732) of itself.
constexpr double kGp100Delivered = 900.0 / (1.5 * 732.0);

// MIG User Guide, A100 table (A100-SXM4-40GB / A100-PCIE-40GB) and its `nvidia-smi mig -lgip` listing.
const std::vector<MigProfile> kA100_40Mig = {{"1g.5gb", 1, 14, 4.75, 1.0 / 8},
                                            {"2g.10gb", 2, 28, 9.75, 2.0 / 8},
                                            {"3g.20gb", 3, 42, 19.62, 4.0 / 8},
                                            {"4g.20gb", 4, 56, 19.62, 4.0 / 8},
                                            {"7g.40gb", 7, 98, 39.50, 1.0}};
// MIG User Guide, A100 table (names for the 80GB parts) and the -lgip listing of an A100 80GB:
// 1g.10gb 14 SMs 9.50 GiB, 2g.20gb 28 / 19.50, 3g.40gb 42 / 39.25, 4g.40gb 56 / 39.25, 7g.80gb 98 / 79.00.
const std::vector<MigProfile> kA100_80Mig = {{"1g.10gb", 1, 14, 9.50, 1.0 / 8},
                                            {"2g.20gb", 2, 28, 19.50, 2.0 / 8},
                                            {"3g.40gb", 3, 42, 39.25, 4.0 / 8},
                                            {"4g.40gb", 4, 56, 39.25, 4.0 / 8},
                                            {"7g.80gb", 7, 98, 79.00, 1.0}};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
std::vector<GpuTableRow> MakeTable() {
  std::vector<GpuTableRow> rows = {
      // ---------------------------------------------------------------- data centre
      // Pascal
      {{.name = "P100", .fp32_flops = 10.6 * T, .fp16_tensor_flops = 21.2 * T, .mem_bandwidth = 732 * G,
        .source = "NVIDIA Tesla P100 datasheet, SXM2 column (FP32 10.6 TFLOPS; FP16 21.2 on the CUDA cores, no "
                  "tensor cores; 16 GB HBM2 at 732 GB/s; 300 W; NVLink 160 GB/s); 56 SMs, 1480 MHz boost, 4 "
                  "NVLink 1.0 links: NVIDIA Tesla P100 whitepaper",
        .memory_gib = 16, .sms = 56, .gpu_class = "datacenter", .architecture = "Pascal", .form_factor = "SXM2",
        .boost_mhz = 1480, .power_w = 300, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 1, .nvlink_links = 4, .nvlink_bandwidth = 80 * G, .mem_bw_delivered = kGp100Delivered},
       {"Tesla P100", "P100-SXM2-16GB", "P100 SXM2 16GB"}, {}},
      {{.name = "P100-PCIE-16GB", .fp32_flops = 9.3 * T, .fp16_tensor_flops = 18.7 * T, .mem_bandwidth = 732 * G,
        .source = "NVIDIA Tesla P100 datasheet, PCIe 16GB column (FP32 9.3, FP16 18.7 TFLOPS; 16 GB HBM2 at 732 "
                  "GB/s; 250 W; PCIe Gen3 x16); 56 SMs, 1303 MHz boost: NVIDIA Tesla P100 whitepaper",
        .memory_gib = 16, .sms = 56, .gpu_class = "datacenter", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1303, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16, .mem_bw_delivered = kGp100Delivered},
       {"P100 PCIe 16GB"}, {}},
      {{.name = "P100-PCIE-12GB", .fp32_flops = 9.3 * T, .fp16_tensor_flops = 18.7 * T, .mem_bandwidth = 549 * G,
        .source = "NVIDIA Tesla P100 datasheet, PCIe 12GB column (FP32 9.3, FP16 18.7 TFLOPS; 12 GB HBM2 at 549 "
                  "GB/s; 250 W; PCIe Gen3 x16); 56 SMs, 1303 MHz boost: NVIDIA Tesla P100 whitepaper",
        .memory_gib = 12, .sms = 56, .gpu_class = "datacenter", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1303, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16, .mem_bw_delivered = kGp100Delivered},
       {"P100 PCIe 12GB"}, {}},
      {{.name = "P40", .fp32_flops = 11.76 * T, .fp16_tensor_flops = 11.76 * T, .mem_bandwidth = 346 * G,
        .source = "NVIDIA Tesla P40 datasheet (3,840 CUDA cores, FP32 12 TFLOPS = 3,840 x 2 x 1.531 GHz boost = "
                  "11.76; 24 GB GDDR5 at 346 GB/s; 250 W; PCIe Gen3 x16); GP102 has no fast FP16 (autocast "
                  "runs at the FP32 rate); 30 SMs of 128 cores",
        .memory_gib = 24, .sms = 30, .gpu_class = "datacenter", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1531, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16},
       {"Tesla P40"}, {}},
      {{.name = "P4", .fp32_flops = 5.5 * T, .fp16_tensor_flops = 5.5 * T, .mem_bandwidth = 192 * G,
        .source = "NVIDIA Tesla P4 datasheet (2,560 CUDA cores, FP32 5.5 TFLOPS, 8 GB GDDR5 at 192 GB/s, 50 W "
                  "or 75 W, PCIe Gen3 x16, low profile); GP104: 20 SMs of 128, 1063 MHz boost (Tesla P4 product "
                  "brief); no fast FP16 (autocast runs at the FP32 rate)",
        .memory_gib = 8, .sms = 20, .gpu_class = "datacenter", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1063, .power_w = 75, .power_w_min = 50, .pcie_gen = 3, .pcie_lanes = 16},
       {"Tesla P4"}, {}},
      // Volta
      {{.name = "V100-16GB", .fp32_flops = 15.7 * T, .fp16_tensor_flops = 125 * T, .mem_bandwidth = 900 * G,
        .source = "NVIDIA Tesla V100 datasheet, SXM2 column (FP32 15.7 TFLOPS, tensor 125 TFLOPS, 16 GB HBM2 "
                  "at 900 GB/s, 300 W, NVLink 300 GB/s); 80 SMs, 1530 MHz boost, 6 NVLink 2.0 links: NVIDIA "
                  "Tesla V100 GPU Architecture whitepaper",
        .memory_gib = 16, .sms = 80, .gpu_class = "datacenter", .architecture = "Volta", .form_factor = "SXM2",
        .boost_mhz = 1530, .power_w = 300, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_links = 6, .nvlink_bandwidth = 150 * G},
       {"V100", "V100M16", "V100-SXM2-16GB", "V100 16GB", "V100 SXM2 16GB"}, {}},
      {{.name = "V100-32GB", .fp32_flops = 15.7 * T, .fp16_tensor_flops = 125 * T, .mem_bandwidth = 900 * G,
        .source = "NVIDIA Tesla V100 datasheet, SXM2 column (FP32 15.7 TFLOPS, tensor 125 TFLOPS, 32 GB HBM2 "
                  "at 900 GB/s, 300 W, NVLink 300 GB/s); 80 SMs, 1530 MHz boost, 6 NVLink 2.0 links: NVIDIA "
                  "Tesla V100 GPU Architecture whitepaper",
        .memory_gib = 32, .sms = 80, .gpu_class = "datacenter", .architecture = "Volta", .form_factor = "SXM2",
        .boost_mhz = 1530, .power_w = 300, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_links = 6, .nvlink_bandwidth = 150 * G},
       {"V100M32", "V100-SXM2-32GB", "V100 32GB", "V100 SXM2 32GB"}, {}},
      {{.name = "V100-PCIE-16GB", .fp32_flops = 14 * T, .fp16_tensor_flops = 112 * T, .mem_bandwidth = 900 * G,
        .source = "NVIDIA Tesla V100 datasheet, PCIe column (FP32 14 TFLOPS, tensor 112 TFLOPS, 16 GB HBM2 at "
                  "900 GB/s, 250 W, PCIe Gen3 x16); 80 SMs, 1380 MHz boost: Tesla V100 whitepaper",
        .memory_gib = 16, .sms = 80, .gpu_class = "datacenter", .architecture = "Volta", .form_factor = "PCIe",
        .boost_mhz = 1380, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16},
       {"V100 PCIe 16GB"}, {}},
      {{.name = "V100-PCIE-32GB", .fp32_flops = 14 * T, .fp16_tensor_flops = 112 * T, .mem_bandwidth = 900 * G,
        .source = "NVIDIA Tesla V100 datasheet, PCIe column (FP32 14 TFLOPS, tensor 112 TFLOPS, 32 GB HBM2 at "
                  "900 GB/s, 250 W, PCIe Gen3 x16); 80 SMs, 1380 MHz boost: Tesla V100 whitepaper",
        .memory_gib = 32, .sms = 80, .gpu_class = "datacenter", .architecture = "Volta", .form_factor = "PCIe",
        .boost_mhz = 1380, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16},
       {"V100 PCIe 32GB"}, {}},
      {{.name = "V100S-PCIE-32GB", .fp32_flops = 16.4 * T, .fp16_tensor_flops = 130 * T, .mem_bandwidth = 1134 * G,
        .source = "NVIDIA V100S datasheet (Tesla V100S PCIe: FP32 16.4 TFLOPS, tensor 130 TFLOPS, 32 GB HBM2 at "
                  "1,134 GB/s, 250 W, PCIe Gen3 x16); 80 SMs at 1601 MHz boost",
        .memory_gib = 32, .sms = 80, .gpu_class = "datacenter", .architecture = "Volta", .form_factor = "PCIe",
        .boost_mhz = 1601, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16},
       {"V100S", "V100S PCIe 32GB"}, {}},
      // Turing
      {{.name = "T4", .fp32_flops = 8.1 * T, .fp16_tensor_flops = 65 * T, .mem_bandwidth = 320 * G,
        .source = "NVIDIA T4 Tensor Core GPU datasheet (FP32 8.1 TFLOPS, mixed precision FP16/FP32 65 TFLOPS, "
                  "16 GB GDDR6 at 320 GB/s, 70 W, PCIe Gen3 x16); 40 SMs (2,560 CUDA cores) at 1590 MHz: NVIDIA "
                  "Turing GPU Architecture whitepaper, Tesla T4",
        .memory_gib = 16, .sms = 40, .gpu_class = "datacenter", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1590, .power_w = 70, .pcie_gen = 3, .pcie_lanes = 16},
       {"Tesla T4"}, {}},
      // Ampere
      {{.name = "A2", .fp32_flops = 4.5 * T, .fp16_tensor_flops = 18 * T, .mem_bandwidth = 200 * G,
        .source = "NVIDIA A2 Tensor Core GPU datasheet (FP32 4.5 TFLOPS; TF32 18 and BF16/FP16 36 TFLOPS with "
                  "sparsity, dense is one half: 9 and 18; 16 GB GDDR6 at 200 GB/s; 40-60 W configurable; PCIe "
                  "Gen4 x8); 1,280 CUDA cores = 10 SMs of 128, 1770 MHz boost",
        .bf16_tensor_flops = 18 * T, .tf32_tensor_flops = 9 * T, .memory_gib = 16, .sms = 10,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1770,
        .power_w = 60, .power_w_min = 40, .pcie_gen = 4, .pcie_lanes = 8},
       {}, {}},
      {{.name = "A10", .fp32_flops = 31.2 * T, .fp16_tensor_flops = 125 * T, .mem_bandwidth = 600 * G,
        .source = "NVIDIA A10 Tensor Core GPU datasheet (FP32 31.2 TFLOPS, TF32 62.5, BF16/FP16 tensor 125 "
                  "dense (250 with sparsity), 24 GB GDDR6 at 600 GB/s, 150 W, PCIe Gen4 x16); 72 SMs (9,216 "
                  "CUDA cores, 128 per GA10x SM) at 1695 MHz",
        .bf16_tensor_flops = 125 * T, .tf32_tensor_flops = 62.5 * T, .memory_gib = 24, .sms = 72,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1695,
        .power_w = 150, .pcie_gen = 4, .pcie_lanes = 16},
       {}, {}},
      {{.name = "A16", .fp32_flops = 4.5 * T, .fp16_tensor_flops = 17.9 * T, .mem_bandwidth = 200 * G,
        .source = "NVIDIA A16 datasheet (one board = 4 GPUs; each: 1,280 CUDA cores, FP32 4.5 TFLOPS, TF32 18 "
                  "and FP16/BF16 35.9 TFLOPS with sparsity (dense: 9 and 17.9), 16 GB GDDR6 at 200 GB/s; board "
                  "250 W (62.5 W a GPU), PCIe Gen4 x16 board link shared by its 4 GPUs); 10 SMs of 128",
        .bf16_tensor_flops = 17.9 * T, .tf32_tensor_flops = 9 * T, .memory_gib = 16, .sms = 10,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1755,
        .power_w = 62.5, .pcie_gen = 4, .pcie_lanes = 16},
       {}, {}},
      {{.name = "A30", .fp32_flops = 10.3 * T, .fp16_tensor_flops = 165 * T, .mem_bandwidth = 933 * G,
        .source = "NVIDIA A30 Tensor Core GPU datasheet (FP32 10.3 TFLOPS, TF32 82, BF16/FP16 165 dense (330 "
                  "with sparsity), 24 GB HBM2 at 933 GB/s, 165 W, PCIe Gen4 x16, NVLink bridge 200 GB/s for 2 "
                  "GPUs); 56 SMs at 1440 MHz (3,584 CUDA cores). Its MIG profiles (quarters) are not in this table",
        .bf16_tensor_flops = 165 * T, .tf32_tensor_flops = 82 * T, .memory_gib = 24, .sms = 56,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1440,
        .power_w = 165, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_bandwidth = 100 * G, .nvlink_bridge = true},
       {}, {}},
      {{.name = "A40", .fp32_flops = 37.4 * T, .fp16_tensor_flops = 149.7 * T, .mem_bandwidth = 696 * G,
        .source = "NVIDIA A40 datasheet (10,752 CUDA cores, FP32 37.4 TFLOPS, TF32 74.8, BF16/FP16 tensor 149.7 "
                  "dense (299.4 with sparsity), 48 GB GDDR6 at 696 GB/s, 300 W, PCIe Gen4 x16, NVLink bridge "
                  "112.5 GB/s bidirectional for 2 GPUs); 84 SMs at 1740 MHz",
        .bf16_tensor_flops = 149.7 * T, .tf32_tensor_flops = 74.8 * T, .memory_gib = 48, .sms = 84,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1740,
        .power_w = 300, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_bandwidth = 56.25 * G, .nvlink_bridge = true},
       {}, {}},
      {{.name = "A100-40GB", .fp32_flops = 19.5 * T, .fp16_tensor_flops = 312 * T, .mem_bandwidth = 1555 * G,
        .source = "NVIDIA A100 Tensor Core GPU datasheet, A100 40GB SXM column (FP32 19.5 TFLOPS, TF32 156, "
                  "BF16/FP16 tensor 312 dense, 40 GB HBM2 at 1,555 GB/s, 400 W, NVLink 600 GB/s, PCIe Gen4); 108 "
                  "SMs at 1410 MHz, 12 NVLink 3.0 links: NVIDIA A100 Tensor Core GPU Architecture whitepaper",
        .bf16_tensor_flops = 312 * T, .tf32_tensor_flops = 156 * T, .memory_gib = 40, .sms = 108,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "SXM4", .boost_mhz = 1410,
        .power_w = 400, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_links = 12, .nvlink_bandwidth = 300 * G},
       {"A100", "A100-SXM4-40GB", "A100 40GB", "A100 SXM4 40GB", "A100-SXM-40GB"}, kA100_40Mig},
      {{.name = "A100-80GB", .fp32_flops = 19.5 * T, .fp16_tensor_flops = 312 * T, .mem_bandwidth = 2039 * G,
        .source = "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column (FP32 19.5 TFLOPS, TF32 156, "
                  "BF16/FP16 tensor 312 dense, 80 GB HBM2e at 2,039 GB/s, 400 W, NVLink 600 GB/s, PCIe Gen4); "
                  "108 SMs, 12 NVLink 3.0 links: NVIDIA A100 Tensor Core GPU Architecture whitepaper",
        .bf16_tensor_flops = 312 * T, .tf32_tensor_flops = 156 * T, .memory_gib = 80, .sms = 108,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "SXM4", .boost_mhz = 1410,
        .power_w = 400, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_links = 12, .nvlink_bandwidth = 300 * G},
       {"A100-SXM4-80GB", "A100 80GB", "A100 SXM4 80GB", "A100-SXM-80GB"}, kA100_80Mig},
      {{.name = "A100-PCIE-40GB", .fp32_flops = 19.5 * T, .fp16_tensor_flops = 312 * T, .mem_bandwidth = 1555 * G,
        .source = "NVIDIA A100 Tensor Core GPU datasheet, A100 40GB PCIe column (FP32 19.5 TFLOPS, TF32 156, "
                  "BF16/FP16 tensor 312 dense, 40 GB HBM2 at 1,555 GB/s, 250 W, PCIe Gen4 x16, NVLink bridge "
                  "600 GB/s for 2 GPUs); 108 SMs; MIG profiles as the A100 40GB (MIG User Guide)",
        .bf16_tensor_flops = 312 * T, .tf32_tensor_flops = 156 * T, .memory_gib = 40, .sms = 108,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1410,
        .power_w = 250, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_links = 12, .nvlink_bandwidth = 300 * G, .nvlink_bridge = true},
       {"A100 PCIe 40GB"}, kA100_40Mig},
      {{.name = "A100-PCIE-80GB", .fp32_flops = 19.5 * T, .fp16_tensor_flops = 312 * T, .mem_bandwidth = 1935 * G,
        .source = "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB PCIe column (FP32 19.5 TFLOPS, TF32 156, "
                  "BF16/FP16 tensor 312 dense, 80 GB HBM2e at 1,935 GB/s, 300 W, PCIe Gen4 x16, NVLink bridge "
                  "600 GB/s for 2 GPUs); 108 SMs; MIG profiles as the A100 80GB (MIG User Guide)",
        .bf16_tensor_flops = 312 * T, .tf32_tensor_flops = 156 * T, .memory_gib = 80, .sms = 108,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1410,
        .power_w = 300, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_links = 12, .nvlink_bandwidth = 300 * G, .nvlink_bridge = true},
       {"A100 80GB PCIe", "A100 PCIe 80GB"}, kA100_80Mig},
      // A800: the A100's GA100 configuration (108 SMs at 1410 MHz, the same peaks and memory) with NVLink
      // cut to 400 GB/s both directions (8 links of NVLink 3 instead of 12), made for the markets the
      // October 2022 US export rules closed to the A100. No NVIDIA datasheet of these parts was found;
      // the MIG User Guide does not list the A800, so no MIG profiles here.
      {{.name = "A800-80GB", .fp32_flops = 19.5 * T, .fp16_tensor_flops = 312 * T, .mem_bandwidth = 2039 * G,
        .source = "A800 SXM4 80GB: the A100 80GB SXM's GA100 (FP32 19.5 TFLOPS, TF32 156, BF16/FP16 tensor 312 "
                  "dense, 80 GB HBM2e at 2,039 GB/s, 400 W, PCIe Gen4; 108 SMs at 1410 MHz) with NVLink 400 "
                  "GB/s bidirectional (8 NVLink 3.0 links): spec databases (hmc-tech.com: 6,912 shaders, 1410 "
                  "MHz, FP32 19.49, tensor 311.87 TFLOPS dense) and Reuters' report of NVIDIA's statement of 7 "
                  "November 2022 (tweakers.net 203182: the A100's performance, memory and TDPs, 400 W SXM and "
                  "300 W PCIe; NVLink 400 GB/s against the A100's 600)",
        .bf16_tensor_flops = 312 * T, .tf32_tensor_flops = 156 * T, .memory_gib = 80, .sms = 108,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "SXM4", .boost_mhz = 1410,
        .power_w = 400, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_links = 8, .nvlink_bandwidth = 200 * G},
       {"A800-SXM4-80GB", "A800 80GB", "A800 SXM4 80GB"}, {}},
      {{.name = "A800-PCIE-80GB", .fp32_flops = 19.5 * T, .fp16_tensor_flops = 312 * T, .mem_bandwidth = 1935 * G,
        .source = "A800 80GB PCIe: the A100 80GB PCIe's GA100 (FP32 19.5 TFLOPS, TF32 156, BF16/FP16 tensor 312 "
                  "dense, 80 GB HBM2e at 1,935 GB/s, 300 W, PCIe Gen4 x16; 108 SMs at 1410 MHz) with an NVLink "
                  "bridge of 400 GB/s bidirectional for 2 GPUs: spec databases (hmc-tech.com: 6,912 shaders, "
                  "1410 MHz, FP32 19.49, tensor 311.87 TFLOPS dense) and Reuters' report (tweakers.net 203182: "
                  "the A100's performance, 300 W PCIe, NVLink 400 GB/s)",
        .bf16_tensor_flops = 312 * T, .tf32_tensor_flops = 156 * T, .memory_gib = 80, .sms = 108,
        .gpu_class = "datacenter", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1410,
        .power_w = 300, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_bandwidth = 200 * G, .nvlink_bridge = true},
       {"A800 80GB PCIe", "A800 PCIe 80GB"}, {}},
      // Ada
      {{.name = "L4", .fp32_flops = 30.3 * T, .fp16_tensor_flops = 121 * T, .mem_bandwidth = 300 * G,
        .source = "NVIDIA L4 Tensor Core GPU datasheet (FP32 30.3 TFLOPS; TF32 120 and FP16/BF16 242 TFLOPS "
                  "with sparsity, dense is one half: 60 and 121; 24 GB GDDR6 at 300 GB/s; 72 W; PCIe Gen4 x16); "
                  "58 SMs (7,424 CUDA cores, 128 per Ada SM) at 2040 MHz",
        .bf16_tensor_flops = 121 * T, .tf32_tensor_flops = 60 * T, .memory_gib = 24, .sms = 58,
        .gpu_class = "datacenter", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2040,
        .power_w = 72, .pcie_gen = 4, .pcie_lanes = 16},
       {}, {}},
      {{.name = "L40", .fp32_flops = 90.5 * T, .fp16_tensor_flops = 181.05 * T, .mem_bandwidth = 864 * G,
        .source = "NVIDIA L40 GPU datasheet (18,176 CUDA cores, FP32 90.5 TFLOPS, TF32 90.5 and BF16/FP16 "
                  "181.05 TFLOPS dense (181 / 362.1 with sparsity), 48 GB GDDR6 at 864 GB/s, 300 W, PCIe Gen4 "
                  "x16, no NVLink); 142 SMs at 2490 MHz (Ada whitepaper v2.01 appendix)",
        .bf16_tensor_flops = 181.05 * T, .tf32_tensor_flops = 90.5 * T, .memory_gib = 48, .sms = 142,
        .gpu_class = "datacenter", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2490,
        .power_w = 300, .pcie_gen = 4, .pcie_lanes = 16},
       {}, {}},
      {{.name = "L40S", .fp32_flops = 91.6 * T, .fp16_tensor_flops = 362.05 * T, .mem_bandwidth = 864 * G,
        .source = "NVIDIA L40S GPU datasheet (18,176 CUDA cores, FP32 91.6 TFLOPS, TF32 183 and BF16/FP16 "
                  "362.05 TFLOPS dense (366 / 733 with sparsity), 48 GB GDDR6 at 864 GB/s, 350 W, PCIe Gen4 "
                  "x16, no NVLink); 142 SMs at 2520 MHz",
        .bf16_tensor_flops = 362.05 * T, .tf32_tensor_flops = 183 * T, .memory_gib = 48, .sms = 142,
        .gpu_class = "datacenter", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2520,
        .power_w = 350, .pcie_gen = 4, .pcie_lanes = 16},
       {}, {}},
      // Hopper
      {{.name = "H100", .fp32_flops = 67 * T, .fp16_tensor_flops = 989.4 * T, .mem_bandwidth = 3350 * G,
        .source = "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (FP32 67 TFLOPS, 80 GB HBM3 at 3.35 "
                  "TB/s, up to 700 W, NVLink 900 GB/s, PCIe Gen5 128 GB/s); dense tensor rates, 132 SMs and 18 "
                  "NVLink 4 links: NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5: FP16/BF16 with "
                  "FP32 accumulate 989.4, TF32 494.7). Boost clock: the FP32 and tensor peaks imply different "
                  "clocks (1980 / 1830 MHz), so none is given (0)",
        .bf16_tensor_flops = 989.4 * T, .tf32_tensor_flops = 494.7 * T, .memory_gib = 80, .sms = 132,
        .gpu_class = "datacenter", .architecture = "Hopper", .form_factor = "SXM5",
        .power_w = 700, .pcie_gen = 5, .pcie_lanes = 16,
        .nvlink_gen = 4, .nvlink_links = 18, .nvlink_bandwidth = 450 * G},
       {"H100-80GB", "H100 SXM", "H100-SXM5-80GB", "H100 80GB HBM3", "H100 SXM5 80GB"},
       // MIG User Guide, H100 table and its -lgip listing of an H100 SXM5 80GB.
       {{"1g.10gb", 1, 16, 9.75, 1.0 / 8},
        {"1g.20gb", 1, 26, 19.62, 2.0 / 8},
        {"2g.20gb", 2, 32, 19.62, 2.0 / 8},
        {"3g.40gb", 3, 60, 39.50, 4.0 / 8},
        {"4g.40gb", 4, 64, 39.50, 4.0 / 8},
        {"7g.80gb", 7, 132, 79.25, 1.0}}},
      {{.name = "H100-PCIE", .fp32_flops = 51 * T, .fp16_tensor_flops = 756.5 * T, .mem_bandwidth = 2000 * G,
        .source = "NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column (FP32 51 TFLOPS; TF32 756 and "
                  "BF16/FP16 1,513 TFLOPS with sparsity, dense is one half; 80 GB HBM2e at 2 TB/s; 300-350 W; "
                  "PCIe Gen5 128 GB/s; NVLink bridge 600 GB/s); 114 SMs: H100 architecture whitepaper. Its MIG "
                  "instance sizes are not in this table",
        .bf16_tensor_flops = 756.5 * T, .tf32_tensor_flops = 378 * T, .memory_gib = 80, .sms = 114,
        .gpu_class = "datacenter", .architecture = "Hopper", .form_factor = "PCIe", .power_w = 350,
        .power_w_min = 300, .pcie_gen = 5, .pcie_lanes = 16,
        .nvlink_gen = 4, .nvlink_bandwidth = 300 * G, .nvlink_bridge = true},
       {"H100 PCIe", "H100 PCIe 80GB", "H100-PCIE-80GB"}, {}},
      {{.name = "H100-NVL", .fp32_flops = 60 * T, .fp16_tensor_flops = 835.5 * T, .mem_bandwidth = 3900 * G,
        .source = "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column (FP32 60 TFLOPS; TF32 835 and "
                  "BF16/FP16 1,671 TFLOPS with sparsity, dense is one half; 94 GB HBM3 at 3.9 TB/s; 350-400 W; "
                  "PCIe Gen5 128 GB/s; NVLink bridge 600 GB/s); 132 SMs",
        .bf16_tensor_flops = 835.5 * T, .tf32_tensor_flops = 417.5 * T, .memory_gib = 94, .sms = 132,
        .gpu_class = "datacenter", .architecture = "Hopper", .form_factor = "PCIe", .power_w = 400,
        .power_w_min = 350, .pcie_gen = 5, .pcie_lanes = 16,
        .nvlink_gen = 4, .nvlink_bandwidth = 300 * G, .nvlink_bridge = true},
       {"H100 NVL"}, {}},
      // H800: the H100's GH100 configurations (SXM5 and PCIe: the same SMs, peaks, memory and power) with
      // NVLink cut to 400 GB/s both directions and FP64 to 1 TFLOPS (which no training step here uses),
      // for the markets the 2022 export rules closed to the H100; sold March-October 2023. No public
      // NVIDIA datasheet; not in the MIG User Guide's list, so no MIG profiles here.
      {{.name = "H800", .fp32_flops = 67 * T, .fp16_tensor_flops = 989.4 * T, .mem_bandwidth = 3350 * G,
        .source = "H800 SXM5: the H100 SXM5's GH100 (FP32 67 TFLOPS, BF16/FP16 tensor 989.4 and TF32 494.7 "
                  "dense, 132 SMs, 80 GB HBM3 at 3.35 TB/s, up to 700 W, PCIe Gen5) with NVLink 400 GB/s "
                  "bidirectional (8 NVLink 4 links) and FP64 1 TFLOPS: aiwiki.ai 'NVIDIA H800', philisun.com "
                  "'NVIDIA H800 vs H100' (same silicon and memory; NVLink 900 -> 400 GB/s, FP64 60 -> 1 TFLOPS)",
        .bf16_tensor_flops = 989.4 * T, .tf32_tensor_flops = 494.7 * T, .memory_gib = 80, .sms = 132,
        .gpu_class = "datacenter", .architecture = "Hopper", .form_factor = "SXM5",
        .power_w = 700, .pcie_gen = 5, .pcie_lanes = 16,
        .nvlink_gen = 4, .nvlink_links = 8, .nvlink_bandwidth = 200 * G},
       {"H800 SXM", "H800 80GB HBM3", "H800-SXM5-80GB"}, {}},
      {{.name = "H800-PCIE", .fp32_flops = 51 * T, .fp16_tensor_flops = 756.5 * T, .mem_bandwidth = 2000 * G,
        .source = "H800 PCIe: the H100 PCIe's GH100 (FP32 51 TFLOPS, BF16/FP16 tensor 756.5 and TF32 378 dense, "
                  "114 SMs, 80 GB HBM2e at 2 TB/s, 300-350 W, PCIe Gen5 x16) with an NVLink bridge of 400 GB/s "
                  "bidirectional: aiwiki.ai 'NVIDIA H800' (the H100's compute, NVLink and FP64 cut)",
        .bf16_tensor_flops = 756.5 * T, .tf32_tensor_flops = 378 * T, .memory_gib = 80, .sms = 114,
        .gpu_class = "datacenter", .architecture = "Hopper", .form_factor = "PCIe", .power_w = 350,
        .power_w_min = 300, .pcie_gen = 5, .pcie_lanes = 16,
        .nvlink_gen = 4, .nvlink_bandwidth = 200 * G, .nvlink_bridge = true},
       {"H800 PCIe", "H800 PCIe 80GB", "H800-PCIE-80GB"}, {}},
      {{.name = "H200", .fp32_flops = 67 * T, .fp16_tensor_flops = 989.5 * T, .mem_bandwidth = 4800 * G,
        .source = "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column (FP32 67 TFLOPS; TF32 989 and "
                  "BF16/FP16 1,979 TFLOPS with sparsity, dense is one half; 141 GB HBM3e at 4.8 TB/s; up to 700 "
                  "W; NVLink 900 GB/s; PCIe Gen5 128 GB/s); 132 SMs (GH100, as the 7g.141gb MIG listing)",
        .bf16_tensor_flops = 989.5 * T, .tf32_tensor_flops = 494.5 * T, .memory_gib = 141, .sms = 132,
        .gpu_class = "datacenter", .architecture = "Hopper", .form_factor = "SXM5",
        .power_w = 700, .pcie_gen = 5, .pcie_lanes = 16,
        .nvlink_gen = 4, .nvlink_links = 18, .nvlink_bandwidth = 450 * G},
       {"H200-141GB", "H200 SXM", "H200-SXM5-141GB", "H200 SXM 141GB"},
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
      {{.name = "H200-NVL", .fp32_flops = 60 * T, .fp16_tensor_flops = 835.5 * T, .mem_bandwidth = 4800 * G,
        .source = "NVIDIA H200 Tensor Core GPU datasheet, H200 NVL column (FP32 60 TFLOPS; TF32 835 and "
                  "BF16/FP16 1,671 TFLOPS with sparsity, dense is one half; 141 GB HBM3e at 4.8 TB/s; up to 600 "
                  "W; 2- or 4-way NVLink bridge 900 GB/s; PCIe Gen5 128 GB/s); 132 SMs",
        .bf16_tensor_flops = 835.5 * T, .tf32_tensor_flops = 417.5 * T, .memory_gib = 141, .sms = 132,
        .gpu_class = "datacenter", .architecture = "Hopper", .form_factor = "PCIe", .power_w = 600,
        .pcie_gen = 5, .pcie_lanes = 16, .nvlink_gen = 4, .nvlink_bandwidth = 450 * G, .nvlink_bridge = true},
       {"H200 NVL"}, {}},
      // Blackwell
      {{.name = "GH200", .fp32_flops = 67 * T, .fp16_tensor_flops = 989.5 * T, .mem_bandwidth = 4000 * G,
        .source = "NVIDIA GH200 Grace Hopper Superchip datasheet, the 96 GB HBM3 version that nvidia-smi names "
                  "'GH200 480GB' (GPU: FP32 67 TFLOPS; TF32 989 and BF16/FP16 1,979 TFLOPS with sparsity, dense "
                  "is one half; 96 GB HBM3 at 4 TB/s; module 450-1,000 W for CPU, GPU and memory together; "
                  "NVLink-C2C 900 GB/s to the Grace CPU, no PCIe host link (0); GPU NVLink 4, 18 links, 900 "
                  "GB/s); 132 SMs (GH100 as in H100 SXM5)",
        .bf16_tensor_flops = 989.5 * T, .tf32_tensor_flops = 494.5 * T, .memory_gib = 96, .sms = 132,
        .gpu_class = "datacenter", .architecture = "Hopper", .form_factor = "superchip", .power_w = 1000,
        .power_w_min = 450, .nvlink_gen = 4, .nvlink_links = 18, .nvlink_bandwidth = 450 * G},
       {"GH200 480GB", "GH200-96GB", "GH200 Grace Hopper"}, {}},
      {{.name = "B200", .fp32_flops = 80 * T, .fp16_tensor_flops = 2250 * T, .mem_bandwidth = 8000 * G,
        .source = "NVIDIA HGX B200 datasheet, per GPU of the 8-GPU board (FP32 80 TFLOPS; TF32 2.2 and "
                  "FP16/BF16 4.5 PFLOPS with sparsity, dense is one half; 1.44 TB HBM3e per board = 180 GB, 8 "
                  "TB/s; 1,000 W; NVLink 5 1.8 TB/s, 18 links). SMs and host PCIe link: not stated there (0)",
        .bf16_tensor_flops = 2250 * T, .tf32_tensor_flops = 1100 * T, .memory_gib = 180, .sms = 0,
        .gpu_class = "datacenter", .architecture = "Blackwell", .form_factor = "SXM6", .power_w = 1000,
        .nvlink_gen = 5, .nvlink_links = 18, .nvlink_bandwidth = 900 * G},
       {"HGX B200", "B200 SXM"}, {}},

      // ---------------------------------------------------------------- workstation
      // Turing (Quadro: full-rate FP32 accumulate)
      // Pascal and Volta (Quadro)
      {{.name = "Quadro-P4000", .fp32_flops = 5.3 * T, .fp16_tensor_flops = 5.3 * T, .mem_bandwidth = 243 * G,
        .source = "NVIDIA Quadro P4000 datasheet (1,792 CUDA cores, FP32 5.3 TFLOPS, 8 GB GDDR5 at 243 GB/s, "
                  "105 W, PCIe 3.0 x16); GP104: 14 SMs of 128 at 1480 MHz boost; no fast FP16",
        .memory_gib = 8, .sms = 14, .gpu_class = "workstation", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1480, .power_w = 105, .pcie_gen = 3, .pcie_lanes = 16},
       {"Quadro P4000"}, {}},
      {{.name = "Quadro-P5000", .fp32_flops = 8.9 * T, .fp16_tensor_flops = 8.9 * T, .mem_bandwidth = 288 * G,
        .source = "NVIDIA Quadro P5000 datasheet (2,560 CUDA cores, FP32 8.9 TFLOPS, 16 GB GDDR5X at 288 GB/s, "
                  "180 W, PCIe 3.0 x16); GP104: 20 SMs of 128 at 1733 MHz boost; no fast FP16",
        .memory_gib = 16, .sms = 20, .gpu_class = "workstation", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1733, .power_w = 180, .pcie_gen = 3, .pcie_lanes = 16},
       {"Quadro P5000"}, {}},
      {{.name = "Quadro-P6000", .fp32_flops = 12.0 * T, .fp16_tensor_flops = 12.0 * T, .mem_bandwidth = 432 * G,
        .source = "NVIDIA Quadro P6000 datasheet (3,840 CUDA cores, FP32 12 TFLOPS, 24 GB GDDR5X at 432 GB/s, "
                  "250 W, PCIe 3.0 x16); GP102: 30 SMs of 128 at 1560 MHz boost; no fast FP16",
        .memory_gib = 24, .sms = 30, .gpu_class = "workstation", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1560, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16},
       {"Quadro P6000"}, {}},
      {{.name = "Quadro-GV100", .fp32_flops = 14.8 * T, .fp16_tensor_flops = 118.5 * T, .mem_bandwidth = 870 * G,
        .source = "NVIDIA Quadro GV100 datasheet (5,120 CUDA cores, 640 tensor cores, FP32 14.8 TFLOPS, tensor "
                  "118.5 TFLOPS, 32 GB HBM2 at 870 GB/s, 250 W, PCIe 3.0 x16, two NVLink bridges 200 GB/s "
                  "bidirectional = 4 NVLink 2 links); 80 SMs, 1450 MHz = 14.8 / (5,120 x 2)",
        .memory_gib = 32, .sms = 80, .gpu_class = "workstation", .architecture = "Volta", .form_factor = "PCIe",
        .boost_mhz = 1450, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_links = 4, .nvlink_bandwidth = 100 * G, .nvlink_bridge = true},
       {"Quadro GV100"}, {}},
      {{.name = "Quadro-RTX4000", .fp32_flops = 7.1 * T, .fp16_tensor_flops = 57 * T, .mem_bandwidth = 416 * G,
        .source = "NVIDIA Quadro RTX 4000 datasheet (2,304 CUDA cores, FP32 7.1 TFLOPS, tensor 57 TFLOPS, 8 GB "
                  "GDDR6 at 416 GB/s, 160 W, PCIe 3.0 x16, no NVLink); 36 SMs at 1545 MHz",
        .memory_gib = 8, .sms = 36, .gpu_class = "workstation", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1545, .power_w = 160, .pcie_gen = 3, .pcie_lanes = 16},
       {"Quadro RTX 4000", "RTX 4000"}, {}},
      {{.name = "Quadro-RTX5000", .fp32_flops = 11.2 * T, .fp16_tensor_flops = 89.2 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA Quadro RTX 5000 datasheet (3,072 CUDA cores, FP32 11.2 TFLOPS, tensor 89.2 TFLOPS, 16 "
                  "GB GDDR6 at 448 GB/s, 230 W, PCIe 3.0 x16, NVLink bridge 50 GB/s bidirectional); 48 SMs at "
                  "1815 MHz",
        .memory_gib = 16, .sms = 48, .gpu_class = "workstation", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1815, .power_w = 230, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_bandwidth = 25 * G, .nvlink_bridge = true},
       {"Quadro RTX 5000", "RTX 5000"}, {}},
      {{.name = "Quadro-RTX6000", .fp32_flops = 16.3 * T, .fp16_tensor_flops = 130.5 * T, .mem_bandwidth = 672 * G,
        .source = "NVIDIA Quadro RTX 6000 datasheet (4,608 CUDA cores, FP32 16.3 TFLOPS, tensor 130.5 TFLOPS, "
                  "24 GB GDDR6 at 672 GB/s, 295 W, PCIe 3.0 x16, NVLink bridge 100 GB/s bidirectional); 72 SMs "
                  "at 1770 MHz",
        .memory_gib = 24, .sms = 72, .gpu_class = "workstation", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1770, .power_w = 295, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_bandwidth = 50 * G, .nvlink_bridge = true},
       {"Quadro RTX 6000", "RTX 6000"}, {}},
      {{.name = "Quadro-RTX8000", .fp32_flops = 16.3 * T, .fp16_tensor_flops = 130.5 * T, .mem_bandwidth = 672 * G,
        .source = "NVIDIA Quadro RTX 8000 datasheet (4,608 CUDA cores, FP32 16.3 TFLOPS, tensor 130.5 TFLOPS, "
                  "48 GB GDDR6 at 672 GB/s, 295 W, PCIe 3.0 x16, NVLink bridge 100 GB/s bidirectional); 72 SMs "
                  "at 1770 MHz",
        .memory_gib = 48, .sms = 72, .gpu_class = "workstation", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1770, .power_w = 295, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_bandwidth = 50 * G, .nvlink_bridge = true},
       {"Quadro RTX 8000", "RTX 8000"}, {}},
      // Ampere (RTX A: datasheets give "tensor performance" with sparsity; dense is one half)
      {{.name = "RTX-A2000", .fp32_flops = 8.0 * T, .fp16_tensor_flops = 31.95 * T, .mem_bandwidth = 288 * G,
        .source = "NVIDIA RTX A2000 datasheet (3,328 CUDA cores, FP32 8.0 TFLOPS, tensor 63.9 TFLOPS with "
                  "sparsity = 31.95 dense, 6 GB GDDR6 at 288 GB/s, 70 W, PCIe 4.0 x16); 26 SMs at 1200 MHz",
        .bf16_tensor_flops = 31.95 * T, .tf32_tensor_flops = 15.98 * T, .memory_gib = 6, .sms = 26,
        .gpu_class = "workstation", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1200,
        .power_w = 70, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX A2000"}, {}},
      {{.name = "RTX-A2000-12GB", .fp32_flops = 8.0 * T, .fp16_tensor_flops = 31.95 * T, .mem_bandwidth = 288 * G,
        .source = "NVIDIA RTX A2000 12GB datasheet (3,328 CUDA cores, FP32 8.0 TFLOPS, tensor 63.9 TFLOPS with "
                  "sparsity = 31.95 dense, 12 GB GDDR6 at 288 GB/s, 70 W, PCIe 4.0 x16); 26 SMs at 1200 MHz",
        .bf16_tensor_flops = 31.95 * T, .tf32_tensor_flops = 15.98 * T, .memory_gib = 12, .sms = 26,
        .gpu_class = "workstation", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1200,
        .power_w = 70, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX A2000 12GB"}, {}},
      {{.name = "RTX-A4000", .fp32_flops = 19.2 * T, .fp16_tensor_flops = 76.7 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA RTX A4000 datasheet (6,144 CUDA cores, FP32 19.2 TFLOPS, tensor 153.4 TFLOPS with "
                  "sparsity = 76.7 dense, 16 GB GDDR6 at 448 GB/s, 140 W, PCIe 4.0 x16); 48 SMs at 1560 MHz",
        .bf16_tensor_flops = 76.7 * T, .tf32_tensor_flops = 38.35 * T, .memory_gib = 16, .sms = 48,
        .gpu_class = "workstation", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1560,
        .power_w = 140, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX A4000", "A4000"}, {}},
      {{.name = "RTX-A4500", .fp32_flops = 23.7 * T, .fp16_tensor_flops = 94.6 * T, .mem_bandwidth = 640 * G,
        .source = "NVIDIA RTX A4500 datasheet (7,168 CUDA cores, FP32 23.7 TFLOPS, tensor 189.2 TFLOPS with "
                  "sparsity = 94.6 dense, 20 GB GDDR6 at 640 GB/s, 200 W, PCIe 4.0 x16, NVLink bridge 112.5 "
                  "GB/s bidirectional); 56 SMs at 1650 MHz",
        .bf16_tensor_flops = 94.6 * T, .tf32_tensor_flops = 47.3 * T, .memory_gib = 20, .sms = 56,
        .gpu_class = "workstation", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1650,
        .power_w = 200, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_bandwidth = 56.25 * G, .nvlink_bridge = true},
       {"RTX A4500", "A4500"}, {}},
      {{.name = "RTX-A5000", .fp32_flops = 27.8 * T, .fp16_tensor_flops = 111.1 * T, .mem_bandwidth = 768 * G,
        .source = "NVIDIA RTX A5000 datasheet (8,192 CUDA cores, FP32 27.8 TFLOPS, tensor 222.2 TFLOPS with "
                  "sparsity = 111.1 dense, 24 GB GDDR6 at 768 GB/s, 230 W, PCIe 4.0 x16, NVLink bridge 112.5 "
                  "GB/s bidirectional); 64 SMs at 1695 MHz",
        .bf16_tensor_flops = 111.1 * T, .tf32_tensor_flops = 55.55 * T, .memory_gib = 24, .sms = 64,
        .gpu_class = "workstation", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1695,
        .power_w = 230, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_bandwidth = 56.25 * G, .nvlink_bridge = true},
       {"RTX A5000", "A5000"}, {}},
      {{.name = "RTX-A5500", .fp32_flops = 34.1 * T, .fp16_tensor_flops = 136.4 * T, .mem_bandwidth = 768 * G,
        .source = "NVIDIA RTX A5500 datasheet (10,240 CUDA cores, FP32 34.1 TFLOPS, tensor 272.8 TFLOPS with "
                  "sparsity = 136.4 dense, 24 GB GDDR6 at 768 GB/s, 230 W, PCIe 4.0 x16, NVLink bridge 112.5 "
                  "GB/s bidirectional); 80 SMs at 1665 MHz",
        .bf16_tensor_flops = 136.4 * T, .tf32_tensor_flops = 68.2 * T, .memory_gib = 24, .sms = 80,
        .gpu_class = "workstation", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1665,
        .power_w = 230, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_bandwidth = 56.25 * G, .nvlink_bridge = true},
       {"RTX A5500", "A5500"}, {}},
      {{.name = "RTX-A6000", .fp32_flops = 38.7 * T, .fp16_tensor_flops = 154.85 * T, .mem_bandwidth = 768 * G,
        .source = "NVIDIA RTX A6000 datasheet (10,752 CUDA cores, FP32 38.7 TFLOPS, tensor 309.7 TFLOPS with "
                  "sparsity = 154.85 dense, 48 GB GDDR6 at 768 GB/s, 300 W, PCIe 4.0 x16, NVLink bridge 112.5 "
                  "GB/s bidirectional); 84 SMs at 1800 MHz",
        .bf16_tensor_flops = 154.85 * T, .tf32_tensor_flops = 77.4 * T, .memory_gib = 48, .sms = 84,
        .gpu_class = "workstation", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1800,
        .power_w = 300, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_bandwidth = 56.25 * G, .nvlink_bridge = true},
       {"RTX A6000", "A6000"}, {}},
      // Ada
      {{.name = "RTX4000-SFF-Ada", .fp32_flops = 19.2 * T, .fp16_tensor_flops = 76.9 * T, .mem_bandwidth = 280 * G,
        .source = "NVIDIA RTX 4000 SFF Ada Generation datasheet (6,144 CUDA cores, FP32 19.2 TFLOPS, 20 GB GDDR6 "
                  "at 280 GB/s, 70 W, PCIe 4.0 x16, no NVLink); 48 SMs, 1565 MHz = 19.2 / (6,144 x 2); FP16 "
                  "tensor with FP32 accumulate 48 x 1,024 x 1.565 GHz = 76.9 (the per-SM rate of the RTX 6000 "
                  "Ada in the Ada whitepaper appendix)",
        .bf16_tensor_flops = 76.9 * T, .tf32_tensor_flops = 38.45 * T, .memory_gib = 20, .sms = 48,
        .gpu_class = "workstation", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 1565,
        .power_w = 70, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4000 SFF Ada Generation", "RTX 4000 SFF Ada"}, {}},
      {{.name = "RTX4000-Ada", .fp32_flops = 26.7 * T, .fp16_tensor_flops = 106.9 * T, .mem_bandwidth = 360 * G,
        .source = "NVIDIA RTX 4000 Ada Generation datasheet (6,144 CUDA cores, FP32 26.7 TFLOPS, 20 GB GDDR6 at "
                  "360 GB/s, 130 W, PCIe 4.0 x16, no NVLink); 48 SMs, 2175 MHz = 26.7 / (6,144 x 2); FP16 tensor "
                  "with FP32 accumulate 48 x 1,024 x 2.175 GHz = 106.9 (the per-SM rate of the RTX 6000 Ada in "
                  "the Ada whitepaper appendix)",
        .bf16_tensor_flops = 106.9 * T, .tf32_tensor_flops = 53.45 * T, .memory_gib = 20, .sms = 48,
        .gpu_class = "workstation", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2175,
        .power_w = 130, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4000 Ada Generation", "RTX 4000 Ada"}, {}},
      {{.name = "RTX4500-Ada", .fp32_flops = 39.6 * T, .fp16_tensor_flops = 158.5 * T, .mem_bandwidth = 432 * G,
        .source = "NVIDIA RTX 4500 Ada Generation datasheet (7,680 CUDA cores, FP32 39.6 TFLOPS, 24 GB GDDR6 at "
                  "432 GB/s, 210 W, PCIe 4.0 x16, no NVLink); 60 SMs, 2580 MHz = 39.6 / (7,680 x 2); FP16 tensor "
                  "with FP32 accumulate 60 x 1,024 x 2.58 GHz = 158.5 (the per-SM rate of the RTX 6000 Ada)",
        .bf16_tensor_flops = 158.5 * T, .tf32_tensor_flops = 79.25 * T, .memory_gib = 24, .sms = 60,
        .gpu_class = "workstation", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2580,
        .power_w = 210, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4500 Ada Generation", "RTX 4500 Ada"}, {}},
      {{.name = "RTX5000-Ada", .fp32_flops = 65.3 * T, .fp16_tensor_flops = 261.1 * T, .mem_bandwidth = 576 * G,
        .source = "NVIDIA RTX 5000 Ada Generation datasheet (12,800 CUDA cores, FP32 65.3 TFLOPS, 32 GB GDDR6 at "
                  "576 GB/s, 250 W, PCIe 4.0 x16, no NVLink); 100 SMs, 2550 MHz = 65.3 / (12,800 x 2); FP16 "
                  "tensor with FP32 accumulate 100 x 1,024 x 2.55 GHz = 261.1 (the per-SM rate of the RTX 6000 Ada)",
        .bf16_tensor_flops = 261.1 * T, .tf32_tensor_flops = 130.55 * T, .memory_gib = 32, .sms = 100,
        .gpu_class = "workstation", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2550,
        .power_w = 250, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 5000 Ada Generation", "RTX 5000 Ada"}, {}},
      {{.name = "RTX6000-Ada", .fp32_flops = 91.1 * T, .fp16_tensor_flops = 364.2 * T, .mem_bandwidth = 960 * G,
        .source = "NVIDIA RTX 6000 Ada Generation datasheet (18,176 CUDA cores, FP32 91.1 TFLOPS, 48 GB GDDR6 at "
                  "960 GB/s, 300 W, PCIe 4.0 x16, no NVLink); FP16 tensor with FP32 accumulate 364.2 dense "
                  "(728.5 with sparsity), 142 SMs at 2505 MHz: NVIDIA Ada GPU Architecture whitepaper appendix",
        .bf16_tensor_flops = 364.2 * T, .tf32_tensor_flops = 182.1 * T, .memory_gib = 48, .sms = 142,
        .gpu_class = "workstation", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2505,
        .power_w = 300, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 6000 Ada Generation", "RTX 6000 Ada"}, {}},
      // Blackwell (RTX PRO). GB202 as the GeForce RTX 5090, 188 of its 192 SMs.
      {{.name = "RTX-PRO-6000-Blackwell", .fp32_flops = 125 * T, .fp16_tensor_flops = 500 * T,
        .mem_bandwidth = 1792 * G,
        .source = "NVIDIA RTX PRO 6000 Blackwell Workstation and Server Editions, as NVIDIA announced them "
                  "at GTC 2025 (press reports: VideoCardz via gpu.name, topcpu.net): 24,064 CUDA cores = 188 SMs, "
                  "FP32 up to 125 TFLOPS, 4,000 AI TOPS = FP4 with sparsity; 96 GB GDDR7 at 28 Gbps x 512 bit = "
                  "1,792 GB/s; 600 W; PCIe 5.0 x16; no NVLink. Tensor: the RTX 5090's 4,096 FP4 ops per SM per clock at the clock "
                  "125 TFLOPS implies (125 / (24,064 x 2) = 2.597 GHz) give 188 x 4,096 x 2 x 2.597 GHz = 4,000 "
                  "TOPS sparse, so FP16 dense is 188 x 1,024 x 2.597 GHz = 500; with FP32 accumulate at the full "
                  "rate, as the RTX 6000 Ada's (a professional part); TF32 one half. The boost clock is not "
                  "stated (0). MIG: 4 instances (MIG User Guide, supported GPUs); their sizes are not in this "
                  "table. The Max-Q Workstation Edition (300 W) is not this row",
        .bf16_tensor_flops = 500 * T, .tf32_tensor_flops = 250 * T, .memory_gib = 96, .sms = 188,
        .gpu_class = "workstation", .architecture = "Blackwell", .form_factor = "PCIe",
        .power_w = 600, .pcie_gen = 5, .pcie_lanes = 16},
       {"RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell Server Edition",
        "RTX PRO 6000 Blackwell", "RTX PRO 6000"}, {}},

      // ---------------------------------------------------------------- desktop (GeForce, TITAN)
      // Pascal (no fast FP16: the "fp16" rate is the FP32 rate, see top)
      {{.name = "GTX1060", .fp32_flops = 4.37 * T, .fp16_tensor_flops = 4.37 * T, .mem_bandwidth = 192 * G,
        .source = "NVIDIA GeForce GTX 1060 6GB specifications (GP106: 1,280 CUDA cores = 10 SMs, 1708 MHz boost = "
                  "4.37 TFLOPS, 6 GB GDDR5 at 8 Gbps x 192 bit = 192 GB/s, 120 W, PCIe 3.0 x16); no fast FP16",
        .memory_gib = 6, .sms = 10, .gpu_class = "desktop", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1708, .power_w = 120, .pcie_gen = 3, .pcie_lanes = 16},
       {"GTX 1060", "GTX 1060 6GB"}, {}},
      {{.name = "GTX1070", .fp32_flops = 6.46 * T, .fp16_tensor_flops = 6.46 * T, .mem_bandwidth = 256 * G,
        .source = "NVIDIA GeForce GTX 1070 specifications (GP104: 1,920 CUDA cores = 15 SMs, 1683 MHz boost = "
                  "6.46 TFLOPS, 8 GB GDDR5 at 8 Gbps x 256 bit = 256 GB/s, 150 W, PCIe 3.0 x16); no fast FP16",
        .memory_gib = 8, .sms = 15, .gpu_class = "desktop", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1683, .power_w = 150, .pcie_gen = 3, .pcie_lanes = 16},
       {"GTX 1070"}, {}},
      {{.name = "GTX1080", .fp32_flops = 8.87 * T, .fp16_tensor_flops = 8.87 * T, .mem_bandwidth = 320 * G,
        .source = "NVIDIA GeForce GTX 1080 whitepaper (GP104: 2,560 CUDA cores = 20 SMs, 1733 MHz boost, 8.87 "
                  "TFLOPS, 8 GB GDDR5X at 10 Gbps x 256 bit = 320 GB/s, 180 W, PCIe 3.0 x16)",
        .memory_gib = 8, .sms = 20, .gpu_class = "desktop", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1733, .power_w = 180, .pcie_gen = 3, .pcie_lanes = 16},
       {"GTX 1080"}, {}},
      {{.name = "GTX1080Ti", .fp32_flops = 11.34 * T, .fp16_tensor_flops = 11.34 * T, .mem_bandwidth = 484 * G,
        .source = "NVIDIA GeForce GTX 1080 Ti specifications (GP102: 3,584 CUDA cores = 28 SMs, 1582 MHz boost = "
                  "11.34 TFLOPS, 11 GB GDDR5X at 11 Gbps x 352 bit = 484 GB/s, 250 W, PCIe 3.0 x16)",
        .memory_gib = 11, .sms = 28, .gpu_class = "desktop", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1582, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16},
       {"GTX 1080 Ti"}, {}},
      {{.name = "TITAN-X-Pascal", .fp32_flops = 10.97 * T, .fp16_tensor_flops = 10.97 * T, .mem_bandwidth = 480 * G,
        .source = "NVIDIA TITAN X (Pascal) specifications (GP102: 3,584 CUDA cores = 28 SMs, 1531 MHz boost = "
                  "10.97 TFLOPS, 12 GB GDDR5X at 10 Gbps x 384 bit = 480 GB/s, 250 W, PCIe 3.0 x16)",
        .memory_gib = 12, .sms = 28, .gpu_class = "desktop", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1531, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16},
       {"TITAN X (Pascal)", "TITAN X Pascal"}, {}},
      {{.name = "TITAN-Xp", .fp32_flops = 12.15 * T, .fp16_tensor_flops = 12.15 * T, .mem_bandwidth = 547.7 * G,
        .source = "NVIDIA TITAN Xp specifications (GP102: 3,840 CUDA cores = 30 SMs, 1582 MHz boost = 12.15 "
                  "TFLOPS, 12 GB GDDR5X at 11.4 Gbps x 384 bit = 547.7 GB/s, 250 W, PCIe 3.0 x16)",
        .memory_gib = 12, .sms = 30, .gpu_class = "desktop", .architecture = "Pascal", .form_factor = "PCIe",
        .boost_mhz = 1582, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16},
       {"TITAN Xp"}, {}},
      // Volta
      {{.name = "TITAN-V", .fp32_flops = 14.9 * T, .fp16_tensor_flops = 110 * T, .mem_bandwidth = 652.8 * G,
        .source = "NVIDIA TITAN V specifications (5,120 CUDA cores = 80 SMs, 1455 MHz boost, FP32 14.9 TFLOPS, "
                  "tensor 110 TFLOPS as NVIDIA states it, 12 GB HBM2 at 652.8 GB/s, 250 W, PCIe 3.0 x16)",
        .memory_gib = 12, .sms = 80, .gpu_class = "desktop", .architecture = "Volta", .form_factor = "PCIe",
        .boost_mhz = 1455, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16},
       {"TITAN V"}, {}},
      // Turing (GeForce: FP32 accumulate at half rate; the Turing whitepaper appendix gives both)
      {{.name = "TITAN-RTX", .fp32_flops = 16.3 * T, .fp16_tensor_flops = 130 * T, .mem_bandwidth = 672 * G,
        .source = "NVIDIA TITAN RTX specifications (4,608 CUDA cores = 72 SMs, 1770 MHz boost, FP32 16.3 TFLOPS, "
                  "130 tensor TFLOPS (full-rate FP32 accumulate), 24 GB GDDR6 at 672 GB/s, 280 W, PCIe 3.0 x16, "
                  "NVLink bridge 100 GB/s bidirectional)",
        .memory_gib = 24, .sms = 72, .gpu_class = "desktop", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1770, .power_w = 280, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_bandwidth = 50 * G, .nvlink_bridge = true},
       {"TITAN RTX"}, {}},
      {{.name = "RTX2060", .fp32_flops = 6.45 * T, .fp16_tensor_flops = 25.8 * T, .mem_bandwidth = 336 * G,
        .source = "NVIDIA GeForce RTX 2060 specifications (1,920 CUDA cores = 30 SMs, 1680 MHz boost = 6.45 "
                  "TFLOPS; 6 GB GDDR6 at 14 Gbps x 192 bit = 336 GB/s; 160 W; PCIe 3.0 x16); tensor FP16 with FP32 "
                  "accumulate 30 SMs x 512 FLOP/clock x 1.68 GHz = 25.8 (Turing whitepaper per-SM rates)",
        .memory_gib = 6, .sms = 30, .gpu_class = "desktop", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1680, .power_w = 160, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2060"}, {}},
      {{.name = "RTX2060-SUPER", .fp32_flops = 7.18 * T, .fp16_tensor_flops = 28.7 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA GeForce RTX 2060 SUPER specifications (2,176 CUDA cores = 34 SMs, 1650 MHz boost = "
                  "7.18 TFLOPS; 8 GB GDDR6 at 14 Gbps x 256 bit = 448 GB/s; 175 W; PCIe 3.0 x16); tensor 34 x 512 x "
                  "1.65 GHz = 28.7 (FP32 accumulate)",
        .memory_gib = 8, .sms = 34, .gpu_class = "desktop", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1650, .power_w = 175, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2060 SUPER"}, {}},
      {{.name = "RTX2070", .fp32_flops = 7.46 * T, .fp16_tensor_flops = 29.9 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA Turing GPU Architecture whitepaper, appendix (GeForce RTX 2070 reference: 2,304 CUDA "
                  "cores = 36 SMs, 1620 MHz boost, 7.5 TFLOPS, FP16 tensor with FP32 accumulate 29.9, 8 GB GDDR6 "
                  "at 448 GB/s, 175 W); PCIe 3.0 x16",
        .memory_gib = 8, .sms = 36, .gpu_class = "desktop", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1620, .power_w = 175, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2070"}, {}},
      {{.name = "RTX2070-SUPER", .fp32_flops = 9.06 * T, .fp16_tensor_flops = 36.3 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA GeForce RTX 2070 SUPER specifications (2,560 CUDA cores = 40 SMs, 1770 MHz boost = "
                  "9.06 TFLOPS; 8 GB GDDR6 at 448 GB/s; 215 W; PCIe 3.0 x16; NVLink bridge, one x8 link, 50 GB/s "
                  "bidirectional); tensor 40 x 512 x 1.77 GHz = 36.3 (FP32 accumulate)",
        .memory_gib = 8, .sms = 40, .gpu_class = "desktop", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1770, .power_w = 215, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_links = 1, .nvlink_bandwidth = 25 * G, .nvlink_bridge = true},
       {"RTX 2070 SUPER"}, {}},
      {{.name = "RTX2080", .fp32_flops = 10.07 * T, .fp16_tensor_flops = 40.3 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA Turing GPU Architecture whitepaper, appendix (GeForce RTX 2080 reference: 2,944 CUDA "
                  "cores = 46 SMs, 1710 MHz boost, 10.1 TFLOPS, FP16 tensor with FP32 accumulate 40.3, 8 GB GDDR6 "
                  "at 448 GB/s, 215 W, NVLink one x8 link 50 GB/s bidirectional); PCIe 3.0 x16",
        .memory_gib = 8, .sms = 46, .gpu_class = "desktop", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1710, .power_w = 215, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_links = 1, .nvlink_bandwidth = 25 * G, .nvlink_bridge = true},
       {"RTX 2080"}, {}},
      {{.name = "RTX2080-SUPER", .fp32_flops = 11.15 * T, .fp16_tensor_flops = 44.6 * T, .mem_bandwidth = 496 * G,
        .source = "NVIDIA GeForce RTX 2080 SUPER specifications (3,072 CUDA cores = 48 SMs, 1815 MHz boost = "
                  "11.15 TFLOPS; 8 GB GDDR6 at 15.5 Gbps x 256 bit = 496 GB/s; 250 W; PCIe 3.0 x16; NVLink one x8 "
                  "link 50 GB/s bidirectional); tensor 48 x 512 x 1.815 GHz = 44.6 (FP32 accumulate)",
        .memory_gib = 8, .sms = 48, .gpu_class = "desktop", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1815, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_links = 1, .nvlink_bandwidth = 25 * G, .nvlink_bridge = true},
       {"RTX 2080 SUPER"}, {}},
      {{.name = "RTX2080Ti", .fp32_flops = 13.45 * T, .fp16_tensor_flops = 53.8 * T, .mem_bandwidth = 616 * G,
        .source = "NVIDIA Turing GPU Architecture whitepaper, appendix (GeForce RTX 2080 Ti reference: 4,352 "
                  "CUDA cores = 68 SMs, 1545 MHz boost, 13.4 TFLOPS, FP16 tensor with FP32 accumulate 53.8 (107.6 "
                  "with FP16 accumulate), 11 GB GDDR6 at 616 GB/s, 250 W, NVLink two x8 links 100 GB/s "
                  "bidirectional); PCIe 3.0 x16",
        .memory_gib = 11, .sms = 68, .gpu_class = "desktop", .architecture = "Turing", .form_factor = "PCIe",
        .boost_mhz = 1545, .power_w = 250, .pcie_gen = 3, .pcie_lanes = 16,
        .nvlink_gen = 2, .nvlink_links = 2, .nvlink_bandwidth = 50 * G, .nvlink_bridge = true},
       {"RTX 2080 Ti"}, {}},
      // Ampere (GeForce: FP32 accumulate at half rate, 512 FLOP/clock/SM; TF32 half of that)
      {{.name = "RTX3050", .fp32_flops = 9.10 * T, .fp16_tensor_flops = 18.2 * T, .mem_bandwidth = 224 * G,
        .source = "NVIDIA GeForce RTX 3050 specifications, 8 GB (2,560 CUDA cores = 20 SMs, 1777 MHz boost, 8 GB "
                  "GDDR6 x 128 bit, 130 W, PCIe 4.0 x8); 14 Gbps = 224 GB/s; FP32 2,560 x 2 x 1.777 GHz = 9.10, "
                  "tensor 20 x 512 x 1.777 GHz = 18.2 (FP32 accumulate)",
        .bf16_tensor_flops = 18.2 * T, .tf32_tensor_flops = 9.10 * T, .memory_gib = 8, .sms = 20,
        .gpu_class = "desktop", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1777,
        .power_w = 130, .pcie_gen = 4, .pcie_lanes = 8},
       {"RTX 3050"}, {}},
      {{.name = "RTX3060", .fp32_flops = 12.74 * T, .fp16_tensor_flops = 25.5 * T, .mem_bandwidth = 360 * G,
        .source = "NVIDIA GeForce RTX 3060 specifications (3,584 CUDA cores = 28 SMs, 1777 MHz boost = 12.74 "
                  "TFLOPS; 12 GB GDDR6 at 15 Gbps x 192 bit = 360 GB/s; 170 W; PCIe 4.0 x16); tensor 28 x 512 x "
                  "1.777 GHz = 25.5 (GA10x rates of the GA102 whitepaper)",
        .bf16_tensor_flops = 25.5 * T, .tf32_tensor_flops = 12.74 * T, .memory_gib = 12, .sms = 28,
        .gpu_class = "desktop", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1777,
        .power_w = 170, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3060"}, {}},
      {{.name = "RTX3060Ti", .fp32_flops = 16.2 * T, .fp16_tensor_flops = 32.4 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA GeForce RTX 3060 Ti specifications (4,864 CUDA cores = 38 SMs, 1665 MHz boost = 16.2 "
                  "TFLOPS; 8 GB GDDR6 at 14 Gbps x 256 bit = 448 GB/s; 200 W; PCIe 4.0 x16); tensor 38 x 512 x "
                  "1.665 GHz = 32.4",
        .bf16_tensor_flops = 32.4 * T, .tf32_tensor_flops = 16.2 * T, .memory_gib = 8, .sms = 38,
        .gpu_class = "desktop", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1665,
        .power_w = 200, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3060 Ti"}, {}},
      {{.name = "RTX3070", .fp32_flops = 20.3 * T, .fp16_tensor_flops = 40.6 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA Ampere GA102 GPU Architecture whitepaper, appendix (GeForce RTX 3070: 5,888 CUDA cores "
                  "= 46 SMs, 1725 MHz boost, 20.3 TFLOPS, FP16 tensor with FP32 accumulate 40.6, 8 GB GDDR6 at "
                  "448 GB/s, 220 W); PCIe 4.0 x16",
        .bf16_tensor_flops = 40.6 * T, .tf32_tensor_flops = 20.3 * T, .memory_gib = 8, .sms = 46,
        .gpu_class = "desktop", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1725,
        .power_w = 220, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3070"}, {}},
      {{.name = "RTX3070Ti", .fp32_flops = 21.7 * T, .fp16_tensor_flops = 43.5 * T, .mem_bandwidth = 608 * G,
        .source = "NVIDIA GeForce RTX 3070 Ti specifications (6,144 CUDA cores = 48 SMs, 1770 MHz boost = 21.7 "
                  "TFLOPS; 8 GB GDDR6X at 19 Gbps x 256 bit = 608 GB/s; 290 W; PCIe 4.0 x16); tensor 48 x 512 x "
                  "1.77 GHz = 43.5",
        .bf16_tensor_flops = 43.5 * T, .tf32_tensor_flops = 21.7 * T, .memory_gib = 8, .sms = 48,
        .gpu_class = "desktop", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1770,
        .power_w = 290, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3070 Ti"}, {}},
      {{.name = "RTX3080", .fp32_flops = 29.8 * T, .fp16_tensor_flops = 59.5 * T, .mem_bandwidth = 760 * G,
        .source = "NVIDIA Ampere GA102 GPU Architecture whitepaper, appendix (GeForce RTX 3080: 8,704 CUDA cores "
                  "= 68 SMs, 1710 MHz boost, 29.8 TFLOPS, FP16 tensor with FP32 accumulate 59.5, 10 GB GDDR6X at "
                  "19 Gbps x 320 bit = 760 GB/s, 320 W); PCIe 4.0 x16",
        .bf16_tensor_flops = 59.5 * T, .tf32_tensor_flops = 29.8 * T, .memory_gib = 10, .sms = 68,
        .gpu_class = "desktop", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1710,
        .power_w = 320, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3080"}, {}},
      {{.name = "RTX3080-12GB", .fp32_flops = 30.6 * T, .fp16_tensor_flops = 61.3 * T, .mem_bandwidth = 912 * G,
        .source = "NVIDIA GeForce RTX 3080 (12 GB) specifications (8,960 CUDA cores = 70 SMs, 1710 MHz boost = "
                  "30.6 TFLOPS; 12 GB GDDR6X at 19 Gbps x 384 bit = 912 GB/s; 350 W; PCIe 4.0 x16); tensor 70 x "
                  "512 x 1.71 GHz = 61.3. nvidia-smi prints the 10 GB card's name for it: give RTX3080-12GB",
        .bf16_tensor_flops = 61.3 * T, .tf32_tensor_flops = 30.6 * T, .memory_gib = 12, .sms = 70,
        .gpu_class = "desktop", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1710,
        .power_w = 350, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3080 12GB"}, {}},
      {{.name = "RTX3080Ti", .fp32_flops = 34.1 * T, .fp16_tensor_flops = 68.2 * T, .mem_bandwidth = 912 * G,
        .source = "NVIDIA GeForce RTX 3080 Ti specifications (10,240 CUDA cores = 80 SMs, 1665 MHz boost = 34.1 "
                  "TFLOPS; 12 GB GDDR6X at 19 Gbps x 384 bit = 912 GB/s; 350 W; PCIe 4.0 x16); tensor 80 x 512 x "
                  "1.665 GHz = 68.2",
        .bf16_tensor_flops = 68.2 * T, .tf32_tensor_flops = 34.1 * T, .memory_gib = 12, .sms = 80,
        .gpu_class = "desktop", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1665,
        .power_w = 350, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3080 Ti"}, {}},
      {{.name = "RTX3090", .fp32_flops = 35.6 * T,
        // GeForce GA102 runs FP16/BF16 tensor math with FP32 accumulate at half the
        // FP16-accumulate rate: 71 dense (142 with FP16 accumulate); TF32 35.6.
        .fp16_tensor_flops = 71 * T, .mem_bandwidth = 936 * G,
        .source = "NVIDIA Ampere GA102 GPU Architecture whitepaper v2.0, Appendix A (GeForce RTX 3090: 82 SMs, "
                  "10,496 CUDA cores at 1.695 GHz; FP16/BF16 tensor with FP32 accumulate 71 TFLOPS dense; TF32 "
                  "35.6; 24 GB GDDR6X, 19.5 Gbps x 384 bit = 936 GB/s; 350 W; NVLink bridge 112.5 GB/s "
                  "bidirectional); PCIe 4.0 x16",
        .bf16_tensor_flops = 71 * T, .tf32_tensor_flops = 35.6 * T, .memory_gib = 24, .sms = 82,
        .gpu_class = "desktop", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1695,
        .power_w = 350, .pcie_gen = 4, .pcie_lanes = 16,
        .nvlink_gen = 3, .nvlink_bandwidth = 56.25 * G, .nvlink_bridge = true},
       {"RTX 3090"}, {}},
      {{.name = "RTX3090Ti", .fp32_flops = 40 * T, .fp16_tensor_flops = 80 * T, .mem_bandwidth = 1008 * G,
        .source = "NVIDIA GeForce RTX 3090 Ti specifications (10,752 CUDA cores = 84 SMs, 1860 MHz boost = 40.0 "
                  "TFLOPS; 24 GB GDDR6X at 21 Gbps x 384 bit = 1,008 GB/s; 450 W; PCIe 4.0 x16); tensor 84 x 512 "
                  "x 1.86 GHz = 80.0. NVLink: not in the source used (0)",
        .bf16_tensor_flops = 80 * T, .tf32_tensor_flops = 40 * T, .memory_gib = 24, .sms = 84,
        .gpu_class = "desktop", .architecture = "Ampere", .form_factor = "PCIe", .boost_mhz = 1860,
        .power_w = 450, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3090 Ti"}, {}},
      // Ada (GeForce: FP32 accumulate at half rate; Ada whitepaper appendix: RTX 4090 165.2 of 330.3)
      {{.name = "RTX4060", .fp32_flops = 15.1 * T, .fp16_tensor_flops = 30.2 * T, .mem_bandwidth = 272 * G,
        .source = "NVIDIA GeForce RTX 4060 specifications (3,072 CUDA cores = 24 SMs, 2460 MHz boost = 15.1 "
                  "TFLOPS; 8 GB GDDR6 at 17 Gbps x 128 bit = 272 GB/s; 115 W; PCIe 4.0 x8); tensor 24 x 512 x "
                  "2.46 GHz = 30.2",
        .bf16_tensor_flops = 30.2 * T, .tf32_tensor_flops = 15.1 * T, .memory_gib = 8, .sms = 24,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2460,
        .power_w = 115, .pcie_gen = 4, .pcie_lanes = 8},
       {"RTX 4060"}, {}},
      {{.name = "RTX4060Ti", .fp32_flops = 22.1 * T, .fp16_tensor_flops = 44.1 * T, .mem_bandwidth = 288 * G,
        .source = "NVIDIA GeForce RTX 4060 Ti 8GB specifications (4,352 CUDA cores = 34 SMs, 2535 MHz boost = "
                  "22.1 TFLOPS; 8 GB GDDR6 at 18 Gbps x 128 bit = 288 GB/s; 160 W; PCIe 4.0 x8); tensor 34 x 512 "
                  "x 2.535 GHz = 44.1",
        .bf16_tensor_flops = 44.1 * T, .tf32_tensor_flops = 22.1 * T, .memory_gib = 8, .sms = 34,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2535,
        .power_w = 160, .pcie_gen = 4, .pcie_lanes = 8},
       {"RTX 4060 Ti"}, {}},
      {{.name = "RTX4060Ti-16GB", .fp32_flops = 22.1 * T, .fp16_tensor_flops = 44.1 * T, .mem_bandwidth = 288 * G,
        .source = "NVIDIA GeForce RTX 4060 Ti 16GB specifications (as the 8 GB card, 16 GB GDDR6 at 288 GB/s, "
                  "165 W); nvidia-smi prints the same name as the 8 GB card: give RTX4060Ti-16GB",
        .bf16_tensor_flops = 44.1 * T, .tf32_tensor_flops = 22.1 * T, .memory_gib = 16, .sms = 34,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2535,
        .power_w = 165, .pcie_gen = 4, .pcie_lanes = 8},
       {"RTX 4060 Ti 16GB"}, {}},
      {{.name = "RTX4070", .fp32_flops = 29.1 * T, .fp16_tensor_flops = 58.3 * T, .mem_bandwidth = 504 * G,
        .source = "NVIDIA GeForce RTX 4070 specifications (5,888 CUDA cores = 46 SMs, 2475 MHz boost = 29.1 "
                  "TFLOPS; 12 GB GDDR6X at 21 Gbps x 192 bit = 504 GB/s; 200 W; PCIe 4.0 x16); tensor 46 x 512 x "
                  "2.475 GHz = 58.3",
        .bf16_tensor_flops = 58.3 * T, .tf32_tensor_flops = 29.1 * T, .memory_gib = 12, .sms = 46,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2475,
        .power_w = 200, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4070"}, {}},
      {{.name = "RTX4070-SUPER", .fp32_flops = 35.5 * T, .fp16_tensor_flops = 71 * T, .mem_bandwidth = 504 * G,
        .source = "NVIDIA GeForce RTX 4070 SUPER specifications (7,168 CUDA cores = 56 SMs, 2475 MHz boost = "
                  "35.5 TFLOPS; 12 GB GDDR6X at 504 GB/s; 220 W; PCIe 4.0 x16); tensor 56 x 512 x 2.475 GHz = 71.0",
        .bf16_tensor_flops = 71 * T, .tf32_tensor_flops = 35.5 * T, .memory_gib = 12, .sms = 56,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2475,
        .power_w = 220, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4070 SUPER"}, {}},
      {{.name = "RTX4070Ti", .fp32_flops = 40.1 * T, .fp16_tensor_flops = 80.2 * T, .mem_bandwidth = 504 * G,
        .source = "NVIDIA GeForce RTX 4070 Ti specifications (7,680 CUDA cores = 60 SMs, 2610 MHz boost = 40.1 "
                  "TFLOPS; 12 GB GDDR6X at 21 Gbps x 192 bit = 504 GB/s; 285 W; PCIe 4.0 x16); tensor 60 x 512 x "
                  "2.61 GHz = 80.2",
        .bf16_tensor_flops = 80.2 * T, .tf32_tensor_flops = 40.1 * T, .memory_gib = 12, .sms = 60,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2610,
        .power_w = 285, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4070 Ti"}, {}},
      {{.name = "RTX4070Ti-SUPER", .fp32_flops = 44.1 * T, .fp16_tensor_flops = 88.2 * T, .mem_bandwidth = 672 * G,
        .source = "NVIDIA GeForce RTX 4070 Ti SUPER specifications (8,448 CUDA cores = 66 SMs, 2610 MHz boost = "
                  "44.1 TFLOPS; 16 GB GDDR6X at 21 Gbps x 256 bit = 672 GB/s; 285 W; PCIe 4.0 x16); tensor 66 x "
                  "512 x 2.61 GHz = 88.2",
        .bf16_tensor_flops = 88.2 * T, .tf32_tensor_flops = 44.1 * T, .memory_gib = 16, .sms = 66,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2610,
        .power_w = 285, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4070 Ti SUPER"}, {}},
      {{.name = "RTX4080", .fp32_flops = 48.7 * T, .fp16_tensor_flops = 97.5 * T, .mem_bandwidth = 716.8 * G,
        .source = "NVIDIA Ada GPU Architecture whitepaper, appendix (GeForce RTX 4080: 9,728 CUDA cores = 76 SMs, "
                  "2505 MHz boost, 48.7 TFLOPS, FP16 tensor with FP32 accumulate 97.5, 16 GB GDDR6X at 22.4 Gbps "
                  "x 256 bit = 716.8 GB/s, 320 W); PCIe 4.0 x16",
        .bf16_tensor_flops = 97.5 * T, .tf32_tensor_flops = 48.7 * T, .memory_gib = 16, .sms = 76,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2505,
        .power_w = 320, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4080"}, {}},
      {{.name = "RTX4080-SUPER", .fp32_flops = 52.2 * T, .fp16_tensor_flops = 104.4 * T, .mem_bandwidth = 736 * G,
        .source = "NVIDIA GeForce RTX 4080 SUPER specifications (10,240 CUDA cores = 80 SMs, 2550 MHz boost = "
                  "52.2 TFLOPS; 16 GB GDDR6X at 23 Gbps x 256 bit = 736 GB/s; 320 W; PCIe 4.0 x16); tensor 80 x "
                  "512 x 2.55 GHz = 104.4",
        .bf16_tensor_flops = 104.4 * T, .tf32_tensor_flops = 52.2 * T, .memory_gib = 16, .sms = 80,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2550,
        .power_w = 320, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4080 SUPER"}, {}},
      {{.name = "RTX4090", .fp32_flops = 82.6 * T, .fp16_tensor_flops = 165.2 * T, .mem_bandwidth = 1008 * G,
        .source = "NVIDIA Ada GPU Architecture whitepaper, appendix (GeForce RTX 4090: 16,384 CUDA cores = 128 "
                  "SMs, 2520 MHz boost, 82.6 TFLOPS, FP16 tensor with FP32 accumulate 165.2 (330.3 with FP16 "
                  "accumulate), TF32 82.6, 24 GB GDDR6X at 21 Gbps x 384 bit = 1,008 GB/s, 450 W); PCIe 4.0 x16",
        .bf16_tensor_flops = 165.2 * T, .tf32_tensor_flops = 82.6 * T, .memory_gib = 24, .sms = 128,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2520,
        .power_w = 450, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4090"}, {}},
      {{.name = "RTX4090D", .fp32_flops = 73.5 * T, .fp16_tensor_flops = 147.1 * T, .mem_bandwidth = 1008 * G,
        .source = "GeForce RTX 4090 D (China, December 2023), as spec databases give it (hardwaredb.net, "
                  "fpsbench.com, hmc-tech.com): 14,592 CUDA cores = 114 SMs of the AD102, 2520 MHz boost, 425 W; "
                  "24 GB GDDR6X at 21 Gbps x 384 bit = 1,008 GB/s; PCIe 4.0 x16; "
                  "FP32 14,592 x 2 x 2.52 GHz = 73.5; tensor with FP32 accumulate at the GeForce half rate 114 x "
                  "512 x 2.52 GHz = 147.1 (the RTX 4090's per-SM rate), TF32 one half",
        .bf16_tensor_flops = 147.1 * T, .tf32_tensor_flops = 73.5 * T, .memory_gib = 24, .sms = 114,
        .gpu_class = "desktop", .architecture = "Ada", .form_factor = "PCIe", .boost_mhz = 2520,
        .power_w = 425, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4090 D", "RTX 4090D"}, {}},

      // Blackwell (GeForce RTX 50). NVIDIA RTX Blackwell GPU Architecture whitepaper, appendix.
      {{.name = "RTX5080", .fp32_flops = 56.3 * T, .fp16_tensor_flops = 112.6 * T, .mem_bandwidth = 960 * G,
        .source = "NVIDIA RTX Blackwell GPU Architecture whitepaper, appendix (GeForce RTX 5080: 10,752 CUDA "
                  "cores = 84 SMs, 2617 MHz boost, 56.3 TFLOPS; FP16 tensor with FP32 accumulate 84 x 512 x "
                  "2.617 GHz = 112.6 dense; 16 GB GDDR7 at 30 Gbps x 256 bit = 960 GB/s; 360 W; PCIe 5.0 x16)",
        .bf16_tensor_flops = 112.6 * T, .tf32_tensor_flops = 56.3 * T, .memory_gib = 16, .sms = 84,
        .gpu_class = "desktop", .architecture = "Blackwell", .form_factor = "PCIe", .boost_mhz = 2617,
        .power_w = 360, .pcie_gen = 5, .pcie_lanes = 16},
       {"RTX 5080"}, {}},
      {{.name = "RTX5090", .fp32_flops = 104.8 * T, .fp16_tensor_flops = 209.5 * T, .mem_bandwidth = 1792 * G,
        .source = "NVIDIA RTX Blackwell GPU Architecture whitepaper, appendix (GeForce RTX 5090: 21,760 CUDA "
                  "cores = 170 SMs, 2407 MHz boost, 104.8 TFLOPS; FP16 tensor with FP32 accumulate 209.5 dense "
                  "(419 with FP16 accumulate); 32 GB GDDR7 at 28 Gbps x 512 bit = 1,792 GB/s; 575 W; PCIe 5.0 x16)",
        .bf16_tensor_flops = 209.5 * T, .tf32_tensor_flops = 104.8 * T, .memory_gib = 32, .sms = 170,
        .gpu_class = "desktop", .architecture = "Blackwell", .form_factor = "PCIe", .boost_mhz = 2407,
        .power_w = 575, .pcie_gen = 5, .pcie_lanes = 16},
       {"RTX 5090"}, {}},
      // ---------------------------------------------------------------- laptop
      // Turing. NVIDIA's GeForce RTX 20 laptop specifications (January 2019) give cores, clock and
      // TGP ranges; memory speeds of the Max-Q parts are from the TechPowerUp GPU database (NVIDIA
      // states only the bus width). nvidia-smi names a Turing Max-P laptop part like the desktop
      // card ("GeForce RTX 2080"): give RTX2080-Laptop.
      {{.name = "RTX2060-Laptop", .fp32_flops = 4.61 * T, .fp16_tensor_flops = 18.4 * T, .mem_bandwidth = 336 * G,
        .source = "NVIDIA GeForce RTX 20 Series laptop specifications (RTX 2060: 1,920 CUDA cores = 30 SMs, "
                  "boost 1200 MHz, 80-90 W, 6 GB GDDR6 at 14 Gbps x 192 bit = 336 GB/s); FP32 1,920 x 2 x 1.2 "
                  "GHz = 4.61, tensor 30 x 512 x 1.2 GHz = 18.4; PCIe 3.0 x16",
        .memory_gib = 6, .sms = 30, .gpu_class = "laptop", .architecture = "Turing", .form_factor = "laptop",
        .boost_mhz = 1200, .power_w = 90, .power_w_min = 80, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2060 Laptop", "RTX 2060 Mobile"}, {}},
      {{.name = "RTX2060-MaxQ", .fp32_flops = 4.55 * T, .fp16_tensor_flops = 18.2 * T, .mem_bandwidth = 264 * G,
        .source = "NVIDIA GeForce RTX 20 Series laptop specifications (RTX 2060 Max-Q: 1,920 CUDA cores = 30 "
                  "SMs, boost 1185 MHz, 65 W); 6 GB GDDR6 at 11 Gbps x 192 bit = 264 GB/s: TechPowerUp GPU "
                  "database; FP32 1,920 x 2 x 1.185 GHz = 4.55, tensor 30 x 512 x 1.185 GHz = 18.2",
        .memory_gib = 6, .sms = 30, .gpu_class = "laptop", .architecture = "Turing", .form_factor = "laptop",
        .boost_mhz = 1185, .power_w = 65, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2060 with Max-Q Design", "RTX 2060 Max-Q"}, {}},
      {{.name = "RTX2070-Laptop", .fp32_flops = 6.64 * T, .fp16_tensor_flops = 26.5 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA GeForce RTX 20 Series laptop specifications (RTX 2070: 2,304 CUDA cores = 36 SMs, "
                  "boost 1440 MHz, 115 W, 8 GB GDDR6 at 14 Gbps x 256 bit = 448 GB/s); FP32 2,304 x 2 x 1.44 GHz "
                  "= 6.64, tensor 36 x 512 x 1.44 GHz = 26.5; PCIe 3.0 x16",
        .memory_gib = 8, .sms = 36, .gpu_class = "laptop", .architecture = "Turing", .form_factor = "laptop",
        .boost_mhz = 1440, .power_w = 115, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2070 Laptop", "RTX 2070 Mobile"}, {}},
      {{.name = "RTX2070-MaxQ", .fp32_flops = 5.46 * T, .fp16_tensor_flops = 21.8 * T, .mem_bandwidth = 384 * G,
        .source = "NVIDIA GeForce RTX 20 Series laptop specifications (RTX 2070 Max-Q: 2,304 CUDA cores = 36 "
                  "SMs, boost 1185 MHz, 80 W); 8 GB GDDR6 at 12 Gbps x 256 bit = 384 GB/s: TechPowerUp GPU "
                  "database; FP32 2,304 x 2 x 1.185 GHz = 5.46, tensor 36 x 512 x 1.185 GHz = 21.8",
        .memory_gib = 8, .sms = 36, .gpu_class = "laptop", .architecture = "Turing", .form_factor = "laptop",
        .boost_mhz = 1185, .power_w = 80, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2070 with Max-Q Design", "RTX 2070 Max-Q"}, {}},
      {{.name = "RTX2080-Laptop", .fp32_flops = 9.36 * T, .fp16_tensor_flops = 37.4 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA GeForce RTX 20 Series laptop specifications (RTX 2080: 2,944 CUDA cores = 46 SMs, "
                  "boost 1380-1590 MHz, 150 W and up, 8 GB GDDR6 at 14 Gbps x 256 bit = 448 GB/s); FP32 2,944 x 2 "
                  "x 1.59 GHz = 9.36, tensor 46 x 512 x 1.59 GHz = 37.4; PCIe 3.0 x16",
        .memory_gib = 8, .sms = 46, .gpu_class = "laptop", .architecture = "Turing", .form_factor = "laptop",
        .boost_mhz = 1590, .boost_mhz_min = 1380, .power_w = 150, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2080 Laptop", "RTX 2080 Mobile"}, {}},
      {{.name = "RTX2080-MaxQ", .fp32_flops = 7.24 * T, .fp16_tensor_flops = 29.0 * T, .mem_bandwidth = 384 * G,
        .source = "NVIDIA GeForce RTX 20 Series laptop specifications (RTX 2080 Max-Q: 2,944 CUDA cores = 46 "
                  "SMs, boost 1095-1230 MHz, 80-90 W); 8 GB GDDR6 at 12 Gbps x 256 bit = 384 GB/s: TechPowerUp "
                  "GPU database; FP32 2,944 x 2 x 1.23 GHz = 7.24, tensor 46 x 512 x 1.23 GHz = 29.0",
        .memory_gib = 8, .sms = 46, .gpu_class = "laptop", .architecture = "Turing", .form_factor = "laptop",
        .boost_mhz = 1230, .boost_mhz_min = 1095, .power_w = 90, .power_w_min = 80, .pcie_gen = 3,
        .pcie_lanes = 16},
       {"RTX 2080 with Max-Q Design", "RTX 2080 Max-Q"}, {}},
      // Turing SUPER laptop parts: NVIDIA's GeForce RTX 20 SUPER laptop specifications (April 2020) give
      // cores and boost-clock and TGP ranges; memory speeds: TechPowerUp GPU database. nvidia-smi names
      // the Max-P part like the desktop card ("GeForce RTX 2080 Super"): give RTX2080-SUPER-Laptop.
      {{.name = "RTX2070-SUPER-Laptop", .fp32_flops = 7.07 * T, .fp16_tensor_flops = 28.3 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA GeForce RTX 20 SUPER laptop specifications (RTX 2070 SUPER: 2,560 CUDA cores = 40 SMs, "
                  "boost 1140-1380 MHz, 115 W); 8 GB GDDR6 at 14 Gbps x 256 bit = 448 GB/s: TechPowerUp GPU "
                  "database; FP32 2,560 x 2 x 1.38 GHz = 7.07, tensor 40 x 512 x 1.38 GHz = 28.3",
        .memory_gib = 8, .sms = 40, .gpu_class = "laptop", .architecture = "Turing", .form_factor = "laptop",
        .boost_mhz = 1380, .boost_mhz_min = 1140, .power_w = 115, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2070 SUPER Laptop", "RTX 2070 SUPER Mobile"}, {}},
      {{.name = "RTX2070-SUPER-MaxQ", .fp32_flops = 5.91 * T, .fp16_tensor_flops = 23.7 * T, .mem_bandwidth = 352 * G,
        .source = "NVIDIA GeForce RTX 20 SUPER laptop specifications (RTX 2070 SUPER Max-Q: 2,560 CUDA cores = 40 "
                  "SMs, boost 930-1155 MHz, 80 W); 8 GB GDDR6 at 11 Gbps x 256 bit = 352 GB/s: TechPowerUp GPU "
                  "database; FP32 2,560 x 2 x 1.155 GHz = 5.91, tensor 40 x 512 x 1.155 GHz = 23.7",
        .memory_gib = 8, .sms = 40, .gpu_class = "laptop", .architecture = "Turing", .form_factor = "laptop",
        .boost_mhz = 1155, .boost_mhz_min = 930, .power_w = 80, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2070 SUPER with Max-Q Design", "RTX 2070 SUPER Max-Q"}, {}},
      {{.name = "RTX2080-SUPER-Laptop", .fp32_flops = 9.58 * T, .fp16_tensor_flops = 38.3 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA GeForce RTX 20 SUPER laptop specifications (RTX 2080 SUPER: 3,072 CUDA cores = 48 SMs, "
                  "boost 1365-1560 MHz, 150 W and up); 8 GB GDDR6 at 14 Gbps x 256 bit = 448 GB/s: TechPowerUp "
                  "GPU database; FP32 3,072 x 2 x 1.56 GHz = 9.58, tensor 48 x 512 x 1.56 GHz = 38.3",
        .memory_gib = 8, .sms = 48, .gpu_class = "laptop", .architecture = "Turing", .form_factor = "laptop",
        .boost_mhz = 1560, .boost_mhz_min = 1365, .power_w = 150, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2080 SUPER Laptop", "RTX 2080 SUPER Mobile"}, {}},
      {{.name = "RTX2080-SUPER-MaxQ", .fp32_flops = 7.56 * T, .fp16_tensor_flops = 30.2 * T, .mem_bandwidth = 352 * G,
        .source = "NVIDIA GeForce RTX 20 SUPER laptop specifications (RTX 2080 SUPER Max-Q: 3,072 CUDA cores = 48 "
                  "SMs, boost 975-1230 MHz, 80 W); 8 GB GDDR6 at 11 Gbps x 256 bit = 352 GB/s: TechPowerUp GPU "
                  "database; FP32 3,072 x 2 x 1.23 GHz = 7.56, tensor 48 x 512 x 1.23 GHz = 30.2",
        .memory_gib = 8, .sms = 48, .gpu_class = "laptop", .architecture = "Turing", .form_factor = "laptop",
        .boost_mhz = 1230, .boost_mhz_min = 975, .power_w = 80, .pcie_gen = 3, .pcie_lanes = 16},
       {"RTX 2080 SUPER with Max-Q Design", "RTX 2080 SUPER Max-Q"}, {}},
      // Ampere. NVIDIA's GeForce RTX 30 Series laptop specifications give cores, boost-clock and TGP
      // ranges, memory size and bus; the memory data rates are the TechPowerUp GPU database's.
      {{.name = "RTX3060-Laptop", .fp32_flops = 13.08 * T, .fp16_tensor_flops = 26.2 * T, .mem_bandwidth = 336 * G,
        .source = "NVIDIA GeForce RTX 30 Series laptop specifications (RTX 3060 Laptop GPU: 3,840 CUDA cores = "
                  "30 SMs, boost 1283-1703 MHz, 60-115 W, 6 GB GDDR6 x 192 bit); 14 Gbps = 336 GB/s: TechPowerUp "
                  "GPU database; FP32 3,840 x 2 x 1.703 GHz = 13.08, tensor 30 x 512 x 1.703 GHz = 26.2",
        .bf16_tensor_flops = 26.2 * T, .tf32_tensor_flops = 13.08 * T, .memory_gib = 6, .sms = 30,
        .gpu_class = "laptop", .architecture = "Ampere", .form_factor = "laptop", .boost_mhz = 1703,
        .boost_mhz_min = 1283, .power_w = 115, .power_w_min = 60, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3060 Laptop GPU", "RTX 3060 Mobile"}, {}},
      {{.name = "RTX3070-Laptop", .fp32_flops = 16.59 * T, .fp16_tensor_flops = 33.2 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA GeForce RTX 30 Series laptop specifications (RTX 3070 Laptop GPU: 5,120 CUDA cores = "
                  "40 SMs, boost 1290-1620 MHz, 80-125 W, 8 GB GDDR6 x 256 bit); 14 Gbps = 448 GB/s: TechPowerUp "
                  "GPU database; FP32 5,120 x 2 x 1.62 GHz = 16.59, tensor 40 x 512 x 1.62 GHz = 33.2",
        .bf16_tensor_flops = 33.2 * T, .tf32_tensor_flops = 16.59 * T, .memory_gib = 8, .sms = 40,
        .gpu_class = "laptop", .architecture = "Ampere", .form_factor = "laptop", .boost_mhz = 1620,
        .boost_mhz_min = 1290, .power_w = 125, .power_w_min = 80, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3070 Laptop GPU", "RTX 3070 Mobile"}, {}},
      {{.name = "RTX3070Ti-Laptop", .fp32_flops = 17.49 * T, .fp16_tensor_flops = 35.0 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA GeForce RTX 30 Series laptop specifications (RTX 3070 Ti Laptop GPU: 5,888 CUDA cores "
                  "= 46 SMs, boost 1035-1485 MHz, 80-125 W, 8 GB GDDR6 x 256 bit); 14 Gbps = 448 GB/s: "
                  "TechPowerUp GPU database; FP32 5,888 x 2 x 1.485 GHz = 17.49, tensor 46 x 512 x 1.485 GHz = 35.0",
        .bf16_tensor_flops = 35.0 * T, .tf32_tensor_flops = 17.49 * T, .memory_gib = 8, .sms = 46,
        .gpu_class = "laptop", .architecture = "Ampere", .form_factor = "laptop", .boost_mhz = 1485,
        .boost_mhz_min = 1035, .power_w = 125, .power_w_min = 80, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3070 Ti Laptop GPU", "RTX 3070 Ti Mobile"}, {}},
      {{.name = "RTX3080-Laptop", .fp32_flops = 21.01 * T, .fp16_tensor_flops = 42.0 * T, .mem_bandwidth = 448 * G,
        .source = "NVIDIA GeForce RTX 30 Series laptop specifications (RTX 3080 Laptop GPU: 6,144 CUDA cores = "
                  "48 SMs, boost 1245-1710 MHz, 80-150+ W, 8 or 16 GB GDDR6 x 256 bit); 14 Gbps = 448 GB/s: "
                  "TechPowerUp GPU database; FP32 6,144 x 2 x 1.71 GHz = 21.01, tensor 48 x 512 x 1.71 GHz = 42.0",
        .bf16_tensor_flops = 42.0 * T, .tf32_tensor_flops = 21.01 * T, .memory_gib = 16, .sms = 48,
        .gpu_class = "laptop", .architecture = "Ampere", .form_factor = "laptop", .boost_mhz = 1710,
        .boost_mhz_min = 1245, .power_w = 150, .power_w_min = 80, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3080 Laptop GPU", "RTX 3080 Mobile"}, {}},
      {{.name = "RTX3080Ti-Laptop", .fp32_flops = 23.61 * T, .fp16_tensor_flops = 47.2 * T, .mem_bandwidth = 512 * G,
        .source = "NVIDIA GeForce RTX 30 Series laptop specifications (RTX 3080 Ti Laptop GPU: 7,424 CUDA cores "
                  "= 58 SMs, boost 1125-1590 MHz, 80-150+ W, 16 GB GDDR6 x 256 bit); 16 Gbps = 512 GB/s: "
                  "TechPowerUp GPU database; FP32 7,424 x 2 x 1.59 GHz = 23.61, tensor 58 x 512 x 1.59 GHz = 47.2",
        .bf16_tensor_flops = 47.2 * T, .tf32_tensor_flops = 23.61 * T, .memory_gib = 16, .sms = 58,
        .gpu_class = "laptop", .architecture = "Ampere", .form_factor = "laptop", .boost_mhz = 1590,
        .boost_mhz_min = 1125, .power_w = 150, .power_w_min = 80, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 3080 Ti Laptop GPU", "RTX 3080 Ti Mobile"}, {}},
      // Ada. NVIDIA's GeForce RTX 40 Series laptop specifications (cores, boost-clock and TGP
      // ranges, memory size and bus); memory data rates: TechPowerUp GPU database.
      {{.name = "RTX4050-Laptop", .fp32_flops = 12.13 * T, .fp16_tensor_flops = 24.3 * T, .mem_bandwidth = 192 * G,
        .source = "NVIDIA GeForce RTX 40 Series laptop specifications (RTX 4050 Laptop GPU: 2,560 CUDA cores = "
                  "20 SMs, boost 1605-2370 MHz, 35-115 W, 6 GB GDDR6 x 96 bit); 16 Gbps = 192 GB/s: TechPowerUp "
                  "GPU database; FP32 2,560 x 2 x 2.37 GHz = 12.13, tensor 20 x 512 x 2.37 GHz = 24.3; PCIe 4.0 x8",
        .bf16_tensor_flops = 24.3 * T, .tf32_tensor_flops = 12.13 * T, .memory_gib = 6, .sms = 20,
        .gpu_class = "laptop", .architecture = "Ada", .form_factor = "laptop", .boost_mhz = 2370,
        .boost_mhz_min = 1605, .power_w = 115, .power_w_min = 35, .pcie_gen = 4, .pcie_lanes = 8},
       {"RTX 4050 Laptop GPU", "RTX 4050 Mobile"}, {}},
      {{.name = "RTX4060-Laptop", .fp32_flops = 14.56 * T, .fp16_tensor_flops = 29.1 * T, .mem_bandwidth = 256 * G,
        .source = "NVIDIA GeForce RTX 40 Series laptop specifications (RTX 4060 Laptop GPU: 3,072 CUDA cores = "
                  "24 SMs, boost 1470-2370 MHz, 35-115 W, 8 GB GDDR6 x 128 bit); 16 Gbps = 256 GB/s: TechPowerUp "
                  "GPU database; FP32 3,072 x 2 x 2.37 GHz = 14.56, tensor 24 x 512 x 2.37 GHz = 29.1; PCIe 4.0 x8",
        .bf16_tensor_flops = 29.1 * T, .tf32_tensor_flops = 14.56 * T, .memory_gib = 8, .sms = 24,
        .gpu_class = "laptop", .architecture = "Ada", .form_factor = "laptop", .boost_mhz = 2370,
        .boost_mhz_min = 1470, .power_w = 115, .power_w_min = 35, .pcie_gen = 4, .pcie_lanes = 8},
       {"RTX 4060 Laptop GPU", "RTX 4060 Mobile"}, {}},
      {{.name = "RTX4070-Laptop", .fp32_flops = 20.04 * T, .fp16_tensor_flops = 40.1 * T, .mem_bandwidth = 256 * G,
        .source = "NVIDIA GeForce RTX 40 Series laptop specifications (RTX 4070 Laptop GPU: 4,608 CUDA cores = "
                  "36 SMs, boost 1230-2175 MHz, 35-115 W, 8 GB GDDR6 x 128 bit); 16 Gbps = 256 GB/s: TechPowerUp "
                  "GPU database; FP32 4,608 x 2 x 2.175 GHz = 20.04, tensor 36 x 512 x 2.175 GHz = 40.1",
        .bf16_tensor_flops = 40.1 * T, .tf32_tensor_flops = 20.04 * T, .memory_gib = 8, .sms = 36,
        .gpu_class = "laptop", .architecture = "Ada", .form_factor = "laptop", .boost_mhz = 2175,
        .boost_mhz_min = 1230, .power_w = 115, .power_w_min = 35, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4070 Laptop GPU", "RTX 4070 Mobile"}, {}},
      {{.name = "RTX4080-Laptop", .fp32_flops = 33.85 * T, .fp16_tensor_flops = 67.7 * T, .mem_bandwidth = 432 * G,
        .source = "NVIDIA GeForce RTX 40 Series laptop specifications (RTX 4080 Laptop GPU: 7,424 CUDA cores = "
                  "58 SMs, boost 1350-2280 MHz, 60-150 W, 12 GB GDDR6 x 192 bit); 18 Gbps = 432 GB/s: "
                  "TechPowerUp GPU database; FP32 7,424 x 2 x 2.28 GHz = 33.85, tensor 58 x 512 x 2.28 GHz = 67.7",
        .bf16_tensor_flops = 67.7 * T, .tf32_tensor_flops = 33.85 * T, .memory_gib = 12, .sms = 58,
        .gpu_class = "laptop", .architecture = "Ada", .form_factor = "laptop", .boost_mhz = 2280,
        .boost_mhz_min = 1350, .power_w = 150, .power_w_min = 60, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4080 Laptop GPU", "RTX 4080 Mobile"}, {}},
      {{.name = "RTX4090-Laptop", .fp32_flops = 39.69 * T, .fp16_tensor_flops = 79.4 * T, .mem_bandwidth = 576 * G,
        .source = "NVIDIA GeForce RTX 40 Series laptop specifications (RTX 4090 Laptop GPU: 9,728 CUDA cores = "
                  "76 SMs, boost 1455-2040 MHz, 80-150 W, 16 GB GDDR6 x 256 bit); 18 Gbps = 576 GB/s: "
                  "TechPowerUp GPU database; FP32 9,728 x 2 x 2.04 GHz = 39.69, tensor 76 x 512 x 2.04 GHz = 79.4",
        .bf16_tensor_flops = 79.4 * T, .tf32_tensor_flops = 39.69 * T, .memory_gib = 16, .sms = 76,
        .gpu_class = "laptop", .architecture = "Ada", .form_factor = "laptop", .boost_mhz = 2040,
        .boost_mhz_min = 1455, .power_w = 150, .power_w_min = 80, .pcie_gen = 4, .pcie_lanes = 16},
       {"RTX 4090 Laptop GPU", "RTX 4090 Mobile"}, {}},
  };
  // A single clock / power figure is both ends of its range.
  for (GpuTableRow& r : rows) {
    if (r.spec.boost_mhz_min == 0) r.spec.boost_mhz_min = r.spec.boost_mhz;
    if (r.spec.power_w_min == 0) r.spec.power_w_min = r.spec.power_w;
  }
  return rows;
}
#pragma GCC diagnostic pop

}  // namespace

const std::vector<GpuTableRow>& BuiltinGpuTable() {
  static const std::vector<GpuTableRow> table = MakeTable();
  return table;
}

namespace {
// The site's rows until GpuTable() first runs; `sealed` from then on. Written by AddSiteGpuRows,
// which a front end calls at start-up, before any thread that looks GPUs up exists.
std::vector<GpuTableRow>& SiteRows() {
  static std::vector<GpuTableRow> rows;
  return rows;
}
std::atomic<bool> g_sealed{false};
bool g_site_added = false;
}  // namespace

const std::vector<GpuTableRow>& GpuTable() {
  static const std::vector<GpuTableRow> table = [] {
    g_sealed = true;
    std::vector<GpuTableRow> t = BuiltinGpuTable();
    t.insert(t.end(), SiteRows().begin(), SiteRows().end());
    return t;
  }();
  return table;
}

Status AddSiteGpuRows(std::vector<GpuTableRow> rows) {
  if (g_sealed) return Status::Error("a site GPU table must be added before any GPU name is looked up");
  if (g_site_added) return Status::Error("a site GPU table was added already (one per process)");
  g_site_added = true;
  SiteRows() = std::move(rows);
  return Status::Ok();
}

}  // namespace gpucast
