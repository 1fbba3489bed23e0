// Load + shape resolution + cost analysis of one model, in process.
// Usage: analyze_bench --model=PATH --batch=N [--dim=NAME=VALUE] [benchmark flags]
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

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
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--model=", 8) == 0) {
      g_model = argv[i] + 8;
    } else if (std::strncmp(argv[i], "--batch=", 8) == 0) {
      g_opts.batch = std::atoll(argv[i] + 8);
    } else if (std::strncmp(argv[i], "--dim=", 6) == 0) {
      std::string kv = argv[i] + 6;
      size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::cerr << "analyze_bench: --dim wants NAME=VALUE\n";
        return 2;
      }
      g_opts.dims[kv.substr(0, eq)] = std::atoll(kv.c_str() + eq + 1);
    } else {
      argv[out++] = argv[i];
    }
  }
  if (g_model.empty()) {
    std::cerr << "usage: analyze_bench --model=PATH --batch=N [--dim=NAME=VALUE]\n";
    return 2;
  }
  argc = out;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
