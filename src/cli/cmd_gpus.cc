// gpucast gpus: the GPU table (src/features/gpu_table.cc), or the rows of the
// names given (any accepted spelling: nvidia-smi names, short names).
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flags.h"
#include "features/gpu_specs.h"
#include "features/site_gpus.h"
#include "util/json_text.h"

namespace gpucast::cli {
namespace {

struct GpusFlags {
  std::string gpu_table;  // --gpu-table
  std::vector<std::string> names;  // empty: every GPU
  bool json = false;
};

// "PCIe 4.0 x16, NVLink 3 bridge 112.5 GB/s" (NVLink both directions added, as datasheets print it).
std::string Interconnect(const GpuSpec& s) {
  std::string out = s.pcie_gen > 0 ? "PCIe " + std::to_string(s.pcie_gen) + ".0 x" + std::to_string(s.pcie_lanes)
                                   : "PCIe: not stated";
  if (s.nvlink_gen > 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ", NVLink %d %s%s %.1f GB/s", s.nvlink_gen, s.nvlink_bridge ? "bridge" : "fabric",
                  s.nvlink_links > 0 ? (" " + std::to_string(s.nvlink_links) + " links").c_str() : "",
                  2 * s.nvlink_bandwidth / 1e9);
    out += buf;
  }
  return out;
}

nlohmann::json Json(const GpuSpec& s) {
  nlohmann::json mig = nlohmann::json::array();
  for (const MigProfile& p : MigProfiles(s.name))
    mig.push_back({{"name", p.name}, {"sms", p.sms}, {"memory_gib", p.memory_gib},
                   {"mem_bw_fraction", p.mem_bw_fraction}});
  return {{"name", s.name},
          {"aliases", GpuAliases(s.name)},
          {"class", s.gpu_class},
          {"architecture", s.architecture},
          {"form_factor", s.form_factor},
          {"fp32_tflops", s.fp32_flops / 1e12},
          {"fp16_tensor_tflops", s.fp16_tensor_flops / 1e12},
          {"bf16_tensor_tflops", s.bf16_tensor_flops / 1e12},
          {"tf32_tensor_tflops", s.tf32_tensor_flops / 1e12},
          {"memory_gbps", s.mem_bandwidth / 1e9},
          {"memory_gb", s.memory_gib},
          {"sms", s.sms},
          {"boost_mhz", {{"min", s.boost_mhz_min}, {"max", s.boost_mhz}}},
          {"power_w", {{"min", s.power_w_min}, {"max", s.power_w}}},
          {"pcie", {{"gen", s.pcie_gen}, {"lanes", s.pcie_lanes}}},
          {"nvlink",
           {{"gen", s.nvlink_gen},
            {"links", s.nvlink_links},
            {"gbps_per_direction", s.nvlink_bandwidth / 1e9},
            {"bridge", s.nvlink_bridge}}},
          {"mig_profiles", mig},
          {"source", s.source},
          {"site_table", s.site_table.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.site_table)}};
}

int RunGpus(const GpusFlags& f) {
  if (Status t = InstallSiteGpuTable(f.gpu_table); !t.ok()) return Fail("gpus", t.message());
  std::vector<const GpuSpec*> rows;
  if (f.names.empty()) {
    for (const GpuSpec& s : GpuSpecs()) rows.push_back(&s);
  } else {
    for (const std::string& n : f.names) {
      Result<std::string> c = CanonicalGpuName(n);
      if (!c.ok()) return Fail("gpus", c.message());
      rows.push_back(FindGpuSpec(*c));
    }
  }
  if (f.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const GpuSpec* s : rows) j.push_back(Json(*s));
    std::cout << JsonText(j, 2) << "\n";
    return 0;
  }
  std::printf("%-17s %-11s %-9s %-6s %7s %8s %7s %6s %5s %11s  %s\n", "name", "class", "arch", "form", "FP32",
              "FP16/BF16", "TF32", "GB/s", "GB", "W", "interconnect");
  for (const GpuSpec* s : rows) {
    std::string watts = s->power_w_min < s->power_w
                            ? std::to_string(static_cast<int>(s->power_w_min)) + "-" +
                                  std::to_string(static_cast<int>(s->power_w))
                            : std::to_string(static_cast<int>(s->power_w));
    std::printf("%-17s %-11s %-9s %-6s %7.1f %8.1f %7.1f %6.0f %5.0f %11s  %s\n", s->name.c_str(),
                s->gpu_class.c_str(), s->architecture.c_str(), s->form_factor.c_str(), s->fp32_flops / 1e12,
                s->fp16_tensor_flops / 1e12, s->tf32_tensor_flops / 1e12, s->mem_bandwidth / 1e9, s->memory_gib,
                watts.c_str(), Interconnect(*s).c_str());
    std::string aliases;
    for (const std::string& a : GpuAliases(s->name)) aliases += (aliases.empty() ? "" : ", ") + a;
    if (!aliases.empty()) std::printf("    also: %s\n", aliases.c_str());
    std::printf("    source: %s\n", s->source.c_str());
    if (!s->site_table.empty()) std::printf("    site table: %s (the site's numbers, not gpucast's)\n", s->site_table.c_str());
  }
  return 0;
}

}  // namespace

CLI::App* AddGpus(CLI::App& root, int* exit_code) {
  auto flags = std::make_shared<GpusFlags>();
  CLI::App* sub = root.add_subcommand("gpus", "List the GPU table: peaks, memory, power, interconnect, sources");
  AddGpuTable(sub, &flags->gpu_table);
  sub->add_option("name", flags->names,
                  "Show only these GPUs (any accepted spelling: canonical, short or nvidia-smi name, e.g. "
                  "\"NVIDIA GeForce RTX 3080 Laptop GPU\"); an unknown name is an error naming the closest");
  sub->add_flag("--json", flags->json,
                "Print a JSON array: name, aliases, class, architecture, form_factor, peak TFLOP/s (fp32, "
                "fp16/bf16/tf32 tensor, dense, FP32 accumulate), memory_gbps, memory_gb, sms, boost_mhz, "
                "power_w, pcie, nvlink (GB/s per direction), mig_profiles, source, site_table (the --gpu-table file "
                "of a site's row; null for gpucast's own)");
  sub->footer("Peaks are dense (no structured sparsity) with FP32 accumulate; NVLink in the text table is both "
              "directions added, as datasheets print it. Sources and conventions: docs/features.md.");
  sub->callback([flags, exit_code] { *exit_code = RunGpus(*flags); });
  return sub;
}

}  // namespace gpucast::cli
