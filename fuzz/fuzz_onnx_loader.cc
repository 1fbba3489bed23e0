// libFuzzer entry point for the ONNX loader: any bytes must give a Graph or
// an error message, never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/onnx_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpucast::LoadOptions opts;
  opts.batch = 2;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto g = gpucast::LoadOnnxGraphFromBytes(bytes, "fuzz.onnx", opts);
  if (!g.ok() && g.message().empty()) __builtin_trap();  // errors always explain themselves
  return 0;
}
