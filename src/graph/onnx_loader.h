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
#include "graph/onnx_wire.h"
#include "graph/load_limits.h"
#include "util/status.h"

namespace gpucast {

struct LoadOptions {
  // Substituted into the batch dimension of every data input (whatever the
  // symbolic name of that dimension). Must be >= 1.
  int64_t batch = 1;
  // Other symbolic dimensions by name (sequence length...). Values >= 1.
  std::map<std::string, int64_t> dims;
  // Bounds of this load (load_limits.h); a graph over one is refused.
  LoadLimits limits;
  // Whose vocabulary messages use to say how to set a value or a limit: the
  // command line's ("set it with --dim seq=N") or the HTTP API's ("set it in
  // \"dims\": {\"seq\": N}").
  enum class Wording { kCli, kApi } wording = Wording::kCli;
};

// Loads and resolves the model at `path`. Errors name the file and the
// reason; *why (if given) says which kind of failure it was.
Result<Graph> LoadOnnxGraph(const std::string& path, const LoadOptions& opts, LoadFailure* why = nullptr);

// Same, from a file the caller opened and checked (the service opens models
// itself, race-free, under its model roots). Reads from the current offset,
// does not close `fd`; `display_name` is used in messages and as Graph::path.
Result<Graph> LoadOnnxGraphFromFd(int fd, const std::string& display_name, const LoadOptions& opts,
                                  LoadFailure* why = nullptr);

// Same, from bytes already in memory (uploads, fuzzing, bytes that
// ReadModelBytesWithoutWeights returned). `display_name` is used in messages
// and as Graph::path.
Result<Graph> LoadOnnxGraphFromBytes(std::string_view bytes, const std::string& display_name,
                                     const LoadOptions& opts, LoadFailure* why = nullptr);

// The first half of LoadOnnxGraphFromFd: the model's bytes without weight
// payloads (onnx_wire.h), within opts.limits, errors worded as the loader's.
// Give the bytes to LoadOnnxGraphFromBytes (callers that cache by content
// hash them in between).
Result<std::string> ReadModelWithoutWeights(int fd, const std::string& display_name, const LoadOptions& opts,
                                            LoadFailure* why = nullptr);

// The WireLimits (onnx_wire.h) of `limits`, with the deadline max_seconds
// from now.
WireLimits WireLimitsOf(const LoadLimits& limits);

}  // namespace gpucast
