// Integration: forward convolution + matmul FLOPs of real ONNX exports
// (models/torchvision/*.onnx, weight-free, eval mode) against independent
// references recorded in models/torchvision/reference_flops.json:
// torchvision's published GMACs per image and torch.profiler's FLOP count.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cost/cost.h"
#include "graph/onnx_loader.h"
#include "util/paths.h"

namespace gpucast {
namespace {

nlohmann::json References() {
  std::ifstream in(HomeDir() + "/models/torchvision/reference_flops.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// Forward FLOPs of convolution and matmul nodes (incl. bias adds, < 0.3% here).
int64_t ConvMatmulForward(const std::string& file, const LoadOptions& opts) {
  Result<Graph> g = LoadOnnxGraph(HomeDir() + "/models/" + file, opts);
  EXPECT_TRUE(g.ok()) << g.message();
  if (!g.ok()) return -1;
  Result<CostReport> r = AnalyzeCost(*g, {});
  EXPECT_TRUE(r.ok()) << r.message();
  if (!r.ok()) return -1;
  EXPECT_TRUE(r->unsupported.empty()) << file << ": " << r->unsupported[0].op_type;
  int64_t sum = 0;
  for (const NodeCost& n : r->nodes)
    if (n.category == Category::kConvolution || n.category == Category::kMatmul) sum += n.forward_flops;
  return sum;
}

TEST(Torchvision, ForwardMacsWithinOnePercentOfPublished) {
  nlohmann::json ref = References();
  ASSERT_TRUE(ref.is_object());
  int checked = 0;
  for (const auto& [name, m] : ref["models"].items()) {
    if (!m.contains("published_gmacs")) continue;
    LoadOptions opts;
    opts.batch = m["batch"].get<int64_t>();
    int64_t flops = ConvMatmulForward(m["file"].get<std::string>(), opts);
    double gmacs = flops / 2.0 / 1e9;
    double published = m["published_gmacs"].get<double>();
    double profiler = m["profiler_flops"].get<double>();
    EXPECT_NEAR(gmacs / published, 1.0, 0.01) << name << ": " << gmacs << " GMACs";
    EXPECT_NEAR(flops / profiler, 1.0, 0.01) << name;
    std::printf("%-14s gpucast %.4f GMACs  published %.2f  ratio %.4f  vs profiler %.4f\n",
                name.c_str(), gmacs, published, gmacs / published, flops / profiler);
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(Torchvision, SixLayerTransformerMatchesProfiler) {
  nlohmann::json ref = References();
  ASSERT_TRUE(ref.is_object());
  const nlohmann::json& m = ref["models"]["transformer6"];
  LoadOptions opts;
  opts.batch = m["batch"].get<int64_t>();
  for (const auto& [k, v] : m["dims"].items()) opts.dims[k] = v.get<int64_t>();
  int64_t flops = ConvMatmulForward(m["file"].get<std::string>(), opts);
  // Hand count: per token and layer 4·d² + 2·d·ffn + 2·S·d MACs = 3,276,800;
  // × 32·128 tokens × 6 layers × 2 = 161,061,273,600, which is also the profiler's number.
  const double profiler = m["profiler_flops"].get<double>();
  EXPECT_EQ(profiler, 161061273600.0);
  std::printf("transformer6 gpucast %lld  profiler %.0f  ratio %.5f\n", static_cast<long long>(flops),
              profiler, flops / profiler);
  EXPECT_NEAR(flops / profiler, 1.0, 0.01);
}

}  // namespace
}  // namespace gpucast
