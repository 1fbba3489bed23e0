// Load + shape resolution + cost analysis of one model, in process.
// Usage: analyze_bench --model=PATH --batch=N [--dim=NAME=VALUE] [benchmark flags]
#include <benchmark/benchmark.h>

#include <iostream>
#include <string>

#include "bench_flags.h"
#include "cost/cost.h"
#include "graph/onnx_loader.h"

namespace {

std::string g_model;
gpucast::LoadOptions g_opts;

void BM_Analyze(benchmark::State& state) {
  for (auto _ : state) {
    auto graph = gpucast::LoadOnnxGraph(g_model, g_opts);
    if (!graph.ok()) {
      state.SkipWithError(graph.message().c_str());
      return;
    }
    auto report = gpucast::AnalyzeCost(*graph, gpucast::CostOptions{});
    if (!report.ok()) {
      state.SkipWithError(report.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(report->totals.forward_flops);
  }
}
BENCHMARK(BM_Analyze)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  // Our own flags first; the rest go to Google Benchmark.
  gpucast::bench::Flags flags;
  if (std::string err = gpucast::bench::TakeFlags(&argc, argv, {"--model", "--batch"}, {}, &flags); !err.empty()) {
    std::cerr << "analyze_bench: " << err << "\n";
    return 2;
  }
  g_model = flags.values["--model"];
  g_opts.dims = flags.dims;
  if (g_model.empty() || !gpucast::bench::PositiveInt(flags.values["--batch"], &g_opts.batch)) {
    std::cerr << "usage: analyze_bench --model=PATH --batch=N [--dim=NAME=VALUE]\n";
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
