// A site's GPU table: what it accepts, in what units, and the errors that name the file, the
// row and the field (site_gpus.h). Installing it is tested through the binary (tests/cli_test.sh):
// this process has read the table already.
#include "features/site_gpus.h"

#include <gtest/gtest.h>

#include <string>

#include "features/gpu_specs.h"

namespace gpucast {
namespace {

// The A10's datasheet numbers (gpucast's own A10 row, gpu_table.cc) under a name of the site's.
const char* kRow = R"({"name": "Site-A10", "aliases": ["NVIDIA Site A10"], "architecture": "Ampere",
  "fp32_tflops": 31.2, "fp16_tensor_tflops": 125, "bf16_tensor_tflops": 125, "tf32_tensor_tflops": 62.5,
  "memory_gb": 24, "mem_bandwidth_gbs": 600, "sms": 72, "boost_mhz": 1695, "power_w": 150,
  "pcie_gen": 4, "pcie_lanes": 16, "gpu_class": "datacenter", "form_factor": "PCIe",
  "source": "NVIDIA A10 Tensor Core GPU datasheet"})";

std::string Table(const std::string& rows) { return "{\"gpus\": [" + rows + "]}"; }

// The row of kRow with `field` replaced by `value` (JSON text), or removed when value is empty.
std::string With(const std::string& field, const std::string& value) {
  std::string row = kRow;
  const std::string key = "\"" + field + "\": ";
  const size_t at = row.find(key);
  EXPECT_NE(at, std::string::npos) << field;
  size_t end = at + key.size();
  int depth = 0;
  for (; end < row.size(); ++end) {
    const char c = row[end];
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  if (value.empty()) {
    if (row[end] == ',') return row.substr(0, at) + row.substr(end + 1);
    return row.substr(0, row.rfind(',', at)) + row.substr(end);  // the last field: its comma before it
  }
  return row.substr(0, at) + key + value + row.substr(end);
}

std::string ErrorOf(const std::string& text) {
  Result<std::vector<GpuTableRow>> r = ParseSiteGpuTable(text, "/etc/gpucast/gpus.json");
  return r.ok() ? "(parsed)" : r.status().message();
}

TEST(SiteGpus, ARowWithTheA10sDatasheetNumbersIsTheA10InGpucastsUnits) {
  Result<std::vector<GpuTableRow>> rows = ParseSiteGpuTable(Table(kRow), "/etc/gpucast/gpus.json");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 1u);
  const GpuSpec& s = (*rows)[0].spec;
  const GpuSpec* a10 = FindGpuSpec("A10");
  ASSERT_NE(a10, nullptr);
  EXPECT_EQ(s.name, "Site-A10");
  EXPECT_EQ((*rows)[0].aliases, std::vector<std::string>{"NVIDIA Site A10"});
  EXPECT_DOUBLE_EQ(s.fp32_flops, a10->fp32_flops);
  EXPECT_DOUBLE_EQ(s.fp16_tensor_flops, a10->fp16_tensor_flops);
  EXPECT_DOUBLE_EQ(s.bf16_tensor_flops, a10->bf16_tensor_flops);
  EXPECT_DOUBLE_EQ(s.tf32_tensor_flops, a10->tf32_tensor_flops);
  EXPECT_DOUBLE_EQ(s.mem_bandwidth, a10->mem_bandwidth);
  EXPECT_DOUBLE_EQ(s.memory_gib, a10->memory_gib);
  EXPECT_EQ(s.sms, a10->sms);
  EXPECT_DOUBLE_EQ(s.boost_mhz, a10->boost_mhz);
  EXPECT_DOUBLE_EQ(s.boost_mhz_min, a10->boost_mhz_min);
  EXPECT_DOUBLE_EQ(s.power_w, a10->power_w);
  EXPECT_DOUBLE_EQ(s.power_w_min, a10->power_w_min);
  EXPECT_EQ(s.pcie_gen, a10->pcie_gen);
  EXPECT_EQ(s.pcie_lanes, a10->pcie_lanes);
  EXPECT_EQ(s.architecture, a10->architecture);
  EXPECT_EQ(s.gpu_class, a10->gpu_class);
  EXPECT_EQ(s.form_factor, a10->form_factor);
  EXPECT_DOUBLE_EQ(SustainedComputeFraction(s), SustainedComputeFraction(*a10));
  EXPECT_EQ(s.site_table, "/etc/gpucast/gpus.json");
  EXPECT_TRUE(a10->site_table.empty());
  // Optional fields left out are 0 (not stated), as in gpucast's own rows.
  rows = ParseSiteGpuTable(Table(With("power_w", "")), "t.json");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ((*rows)[0].spec.power_w, 0);
  EXPECT_EQ(SustainedComputeFraction((*rows)[0].spec), 1);
}

TEST(SiteGpus, ErrorsNameTheFileTheRowAndTheField) {
  std::string e = ErrorOf(Table(With("fp32_tflops", "-1")));
  EXPECT_EQ(e, "site GPU table /etc/gpucast/gpus.json: gpus[0] ('Site-A10'): 'fp32_tflops' is -1; want 0.001 to 1000");
  e = ErrorOf(Table(With("sms", "72.5")));
  EXPECT_EQ(e, "site GPU table /etc/gpucast/gpus.json: gpus[0] ('Site-A10'): 'sms' is 72.5; want a whole number "
               "from 1 to 1024");
  e = ErrorOf(Table(With("memory_gb", "\"24\"")));
  EXPECT_EQ(e, "site GPU table /etc/gpucast/gpus.json: gpus[0] ('Site-A10'): 'memory_gb' must be a number");
  e = ErrorOf(Table(With("source", "")));
  EXPECT_NE(e.find("gpus[0] ('Site-A10'): 'source' is required (where the numbers come from"), std::string::npos) << e;
  e = ErrorOf(Table(With("architecture", "\"Ampre\"")));
  EXPECT_NE(e.find("'architecture' must be one of Pascal, Volta, Turing, Ampere, Ada, Hopper, Blackwell"),
            std::string::npos)
      << e;
  // A misspelt field is an error, never a silent default.
  e = ErrorOf(Table(With("tf32_tensor_tflops", "62.5, \"tf32_tflops\": 62.5")));
  EXPECT_NE(e.find("gpus[0] ('Site-A10'): unknown field 'tf32_tflops' (fields: name, aliases, nvlink_bridge, "
                   "fp32_tflops"),
            std::string::npos)
      << e;
}

TEST(SiteGpus, ASiteTableAddsGpusItCannotRenameOrChangeOne) {
  // gpucast's own names and their nvidia-smi spellings are taken.
  std::string e = ErrorOf(Table(With("name", "\"A100\"")));
  EXPECT_NE(e.find("gpus[0] ('A100'): the name 'A100' is gpucast's A100-40GB already; a site table adds GPUs"),
            std::string::npos)
      << e;
  e = ErrorOf(Table(With("aliases", "[\"NVIDIA A10\"]")));
  EXPECT_NE(e.find("the name 'NVIDIA A10' is gpucast's A10 already"), std::string::npos) << e;
  // Two site rows cannot share a name either.
  e = ErrorOf(Table(std::string(kRow) + ", " + With("name", "\"Site-A10-2\"")));
  EXPECT_NE(e.find("gpus[1] ('Site-A10-2'): the name 'NVIDIA Site A10' is the site's Site-A10 already"),
            std::string::npos)
      << e;
  // A canonical name is spelled as gpucast's: what nvidia-smi prints goes in the aliases.
  e = ErrorOf(Table(With("name", "\"NVIDIA A10G\"")));
  EXPECT_NE(e.find("'name' must be 1-64 letters, digits, '.', '_' or '-'"), std::string::npos) << e;
}

TEST(SiteGpus, NumbersMustHoldTogether) {
  std::string e = ErrorOf(Table(With("fp16_tensor_tflops", "20")));
  EXPECT_NE(e.find("'fp16_tensor_tflops' is below 'fp32_tflops'"), std::string::npos) << e;
  e = ErrorOf(Table(With("pcie_lanes", "")));
  EXPECT_NE(e.find("'pcie_gen' (3 or later) and 'pcie_lanes' go together"), std::string::npos) << e;
  e = ErrorOf(Table(With("power_w", "150, \"nvlink_gen\": 3")));
  EXPECT_NE(e.find("'nvlink_gen' and 'nvlink_gbs' (one direction, all links) go together"), std::string::npos) << e;
  Result<std::vector<GpuTableRow>> r =
      ParseSiteGpuTable(Table(With("power_w", "150, \"nvlink_gen\": 3, \"nvlink_links\": 4, \"nvlink_gbs\": 56.25, "
                                              "\"nvlink_bridge\": true")),
                        "t.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ((*r)[0].spec.nvlink_bandwidth, 56.25e9);
  EXPECT_TRUE((*r)[0].spec.nvlink_bridge);
}

TEST(SiteGpus, TheFileIsBounded) {
  EXPECT_NE(ErrorOf("{\"gpus\": [}").find("not JSON: parse error"), std::string::npos);
  EXPECT_NE(ErrorOf("[" + std::string(kRow) + "]").find("want an object {\"gpus\": [ROW, ...]} and nothing else"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{\"gpus\": [], \"x\": 1}").find("and nothing else"), std::string::npos);
  EXPECT_NE(ErrorOf("{\"gpus\": []}").find("'gpus' is empty"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string(100000, '[')).find("nested deeper than"), std::string::npos);
  std::string many;
  for (size_t i = 0; i <= kMaxSiteGpus; ++i) many += std::string(i ? "," : "") + "{}";
  EXPECT_NE(ErrorOf(Table(many)).find("65 rows, over the limit of 64"), std::string::npos) << ErrorOf(Table(many));
  EXPECT_NE(ErrorOf(std::string(kMaxSiteGpuTableBytes + 1, ' ')).find("over the 1048576-byte limit"),
            std::string::npos);
}

}  // namespace
}  // namespace gpucast
