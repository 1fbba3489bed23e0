// Test helper: the real Service (store, HTTP, scheduling loop) with the fake
// prediction engine, so durability tests need no trained predictor.
// Usage: service_testd LISTEN DB [GPUS [MODEL_ROOT]]
#include <cstdio>
#include <cstdlib>

#include "service/server.h"
#include "service/testing.h"

int main(int argc, char** argv) {
  using namespace gpucast::service;
  if (argc < 3) {
    std::fprintf(stderr, "usage: service_testd HOST:PORT DB [GPUS [MODEL_ROOT]]\n");
    return 2;
  }
  BlockStopSignals();
  ServiceOptions opts;
  opts.db_path = argv[2];
  opts.tick_s = 0.05;
  int gpus = argc > 3 ? std::atoi(argv[3]) : 2;
  if (argc > 4) opts.model_roots = {argv[4]};
  auto s = Service::Create(opts, std::make_unique<testing::FakeEngine>(),
                           std::make_unique<testing::OneJobPerGpu>(gpus));
  if (!s.ok()) {
    std::fprintf(stderr, "service_testd: %s\n", s.message().c_str());
    return 1;
  }
  gpucast::Status st = ServeUntilSignal(s->get(), argv[1]);
  if (!st.ok()) {
    std::fprintf(stderr, "service_testd: %s\n", st.message().c_str());
    return 1;
  }
  return 0;
}
