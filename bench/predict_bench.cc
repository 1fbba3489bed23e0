// Predictor::Predict in process, on a graph costed once: what a request costs
// beyond loading and costing its graph, with every job fact the unknown-fact
// variants depend on stated (one feature variant) and with them unstated (up
// to 3 x 2 x 2 combinations: TF32's two other values, selection, memory format;
// predictor.cc). The graph
// should have no boolean-mask selection (its fraction is not stated here).
// Usage: predict_bench --predictor=MODEL.json --model=PATH --batch=N
//          [--gpu=KEY] [--dim=NAME=VALUE] [--amp] [benchmark flags]
#include <benchmark/benchmark.h>

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench_flags.h"
#include "cost/job_cost.h"
#include "predict/predictor.h"

namespace {

std::string g_predictor_path;
std::string g_model;
std::string g_gpu = "A100-80GB";
int64_t g_batch = 32;
std::map<std::string, int64_t> g_dims;
bool g_amp = false;

struct Loaded {
  gpucast::Predictor predictor;
  std::vector<gpucast::CostReport> reports;
};

const Loaded& Load() {
  static Loaded* loaded = [] {
    auto p = gpucast::Predictor::Load(g_predictor_path);
    if (!p.ok()) {
      std::cerr << "predict_bench: " << p.message() << "\n";
      std::exit(2);
    }
    gpucast::LoadOptions lo;
    lo.batch = g_batch;
    lo.dims = g_dims;
    auto r = gpucast::JobStepReports({g_model}, lo, gpucast::CostOptions{.amp = g_amp});
    if (!r.ok()) {
      std::cerr << "predict_bench: " << r.message() << "\n";
      std::exit(2);
    }
    return new Loaded{std::move(*p), std::move(*r)};
  }();
  return *loaded;
}

gpucast::JobConfig Job(bool stated) {
  gpucast::JobConfig job;
  job.batch = g_batch;
  job.amp = g_amp;
  job.gpu = g_gpu;
  if (stated) {
    job.attrs.tf32 = false;
    job.attrs.channels_last = false;
  }
  return job;
}

void Run(benchmark::State& state, bool stated) {
  const Loaded& l = Load();
  gpucast::JobConfig job = Job(stated);
  for (auto _ : state) {
    auto res = l.predictor.Predict(l.reports, job);
    if (!res.ok()) {
      state.SkipWithError(res.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(res->prediction.util);
  }
}
void BM_PredictFactsStated(benchmark::State& state) { Run(state, true); }
void BM_PredictFactsUnstated(benchmark::State& state) { Run(state, false); }
BENCHMARK(BM_PredictFactsStated)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PredictFactsUnstated)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  // Our own flags first; the rest go to Google Benchmark.
  gpucast::bench::Flags flags;
  if (std::string err = gpucast::bench::TakeFlags(&argc, argv, {"--predictor", "--model", "--batch", "--gpu"},
                                                  {"--amp"}, &flags);
      !err.empty()) {
    std::cerr << "predict_bench: " << err << "\n";
    return 2;
  }
  g_predictor_path = flags.values["--predictor"];
  g_model = flags.values["--model"];
  if (flags.values.count("--gpu")) g_gpu = flags.values["--gpu"];
  g_dims = flags.dims;
  g_amp = flags.switches.count("--amp") > 0;
  if (g_predictor_path.empty() || g_model.empty() || !gpucast::bench::PositiveInt(flags.values["--batch"], &g_batch)) {
    std::cerr << "usage: predict_bench --predictor=MODEL.json --model=PATH --batch=N [--gpu=KEY] [--dim=NAME=VALUE] [--amp]\n";
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
