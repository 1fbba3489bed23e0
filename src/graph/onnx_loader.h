// Loading an ONNX model into gpucast's Graph IR with every shape resolved.
//
// Weight payloads (raw_data and large typed data fields of initializers, and
// external data files) are skipped on the wire, never read into memory: the
// analysis needs only their shapes. Small integer initializers (shape
// constants) are kept.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "graph/graph.h"
#include "util/status.h"

namespace gpucast {

struct LoadOptions {
  // Substituted into the batch dimension of every data input (whatever the
  // symbolic name of that dimension). Must be >= 1.
  int64_t batch = 1;
  // Other symbolic dimensions by name (sequence length...). Values >= 1.
  std::map<std::string, int64_t> dims;
};

// Loads and resolves the model at `path`. Errors name the file and the reason.
Result<Graph> LoadOnnxGraph(const std::string& path, const LoadOptions& opts);

// Same, from a file the caller opened and checked (the service opens models
// itself, race-free, under its model roots). Reads from the current offset,
// does not close `fd`; `display_name` is used in messages and as Graph::path.
Result<Graph> LoadOnnxGraphFromFd(int fd, const std::string& display_name, const LoadOptions& opts);

// Same, from bytes already in memory (uploads, fuzzing). `display_name` is
// used in messages and as Graph::path.
Result<Graph> LoadOnnxGraphFromBytes(std::string_view bytes, const std::string& display_name,
                                     const LoadOptions& opts);

}  // namespace gpucast
