// Graph checks at gpucast's node limit (tools/scale_probe.py finds the shapes; docs/graph-loading.md).
// BM_EvalModeIdentityFanout: EvalModeExportWarning on N Identity nodes of one parameter, the shape
// that was quadratic (49,990 nodes: 25-39 s in `gpucast analyze`); Google Benchmark fits the
// complexity over N.
// Usage: scale_bench [benchmark flags]
#include <benchmark/benchmark.h>

#include <string>

#include "graph/export_mode.h"
#include "graph/graph.h"

namespace {

gpucast::Graph IdentityFanout(int64_t n) {
  gpucast::Graph g;
  g.opset = 17;
  gpucast::TensorInfo w;
  w.name = "w";
  w.is_param = true;
  g.tensors["w"] = w;
  g.nodes.reserve(n);
  for (int64_t k = 0; k < n; ++k)
    g.nodes.push_back(gpucast::Node{"i" + std::to_string(k), "Identity", "", {"w"}, {"o" + std::to_string(k)}, {}});
  return g;
}

void BM_EvalModeIdentityFanout(benchmark::State& state) {
  const gpucast::Graph g = IdentityFanout(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(gpucast::EvalModeExportWarning(g));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_EvalModeIdentityFanout)->RangeMultiplier(4)->Range(3125, 50000)->Unit(benchmark::kMillisecond)->Complexity();

}  // namespace

BENCHMARK_MAIN();
