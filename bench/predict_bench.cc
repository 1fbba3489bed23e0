// Predictor::Predict in process, on a graph costed once: what a request costs
// beyond loading and costing its graph, with every job fact the unknown-fact
// variants depend on stated (one feature variant) and with them unstated (up
// to 2^3 variants: selection, memory format, TF32; predictor.cc). The graph
// should have no boolean-mask selection (its fraction is not stated here).
// Usage: predict_bench --predictor=MODEL.json --model=PATH --batch=N
//          [--gpu=KEY] [--dim=NAME=VALUE] [--amp] [benchmark flags]
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

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
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--predictor=", 12) == 0) {
      g_predictor_path = argv[i] + 12;
    } else if (std::strncmp(argv[i], "--model=", 8) == 0) {
      g_model = argv[i] + 8;
    } else if (std::strncmp(argv[i], "--batch=", 8) == 0) {
      g_batch = std::atoll(argv[i] + 8);
    } else if (std::strncmp(argv[i], "--gpu=", 6) == 0) {
      g_gpu = argv[i] + 6;
    } else if (std::strncmp(argv[i], "--dim=", 6) == 0) {
      std::string kv = argv[i] + 6;
      size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::cerr << "predict_bench: --dim wants NAME=VALUE\n";
        return 2;
      }
      g_dims[kv.substr(0, eq)] = std::atoll(kv.c_str() + eq + 1);
    } else if (std::strcmp(argv[i], "--amp") == 0) {
      g_amp = true;
    } else {
      argv[out++] = argv[i];
    }
  }
  if (g_predictor_path.empty() || g_model.empty() || g_batch < 1) {
    std::cerr << "usage: predict_bench --predictor=MODEL.json --model=PATH --batch=N [--gpu=KEY] [--dim=NAME=VALUE] [--amp]\n";
    return 2;
  }
  argc = out;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
