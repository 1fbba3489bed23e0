// Reading an ONNX ModelProto without its weight payloads.
//
// Walks the protobuf wire format and copies every field of the model except
// large tensor payloads: raw_data and the typed data fields of TensorProtos
// (initializers, Constant/attribute tensors, sparse tensors) bigger than
// kMaxKeptTensorDataBytes are skipped with CodedInputStream::Skip, which for a
// file lseeks past them, so the bytes are never read. dims, data_type, name
// and small (shape-constant) payloads are kept; the same holds inside
// model-local functions (ModelProto.functions), whose nodes count as a
// graph's. ModelProto.training_info is
// dropped, and so is GraphProto.value_info (shape annotations the loader
// infers itself; its entries still count towards max_entries). External data
// files are never opened. A skipped raw_data payload of a graph initializer of
// rank 2 and a float type is sampled first (16 elements and 16 of its
// transpose, read with pread or from memory: graph/param_ties.h), and the
// sample written into the filtered TensorProto as field kMatrixSampleField,
// for at most 4,096 matrices per file: how a tied weight the exporter copied
// is told from a distinct one without reading the weights.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "graph/load_limits.h"
#include "util/status.h"

namespace gpucast {

// Tensor payload fields larger than this (bytes on the wire) are skipped.
inline constexpr int64_t kMaxKeptTensorDataBytes = 4096;

// What the filter checks while it walks the model (load_limits.h): nodes
// counted in every graph and subgraph, subgraph nesting, the bytes kept, and
// a deadline; the walk stops at the first one passed, so a hostile file costs
// at most these, however large it is. 0 = no limit on nodes / bytes.
struct WireLimits {
  int64_t max_nodes = 0;
  int64_t max_entries = 0;  // repeated entries of graphs and nodes (load_limits.h); 0 = no limit
  int max_graph_depth = 32;
  int64_t max_kept_bytes = 0;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Returns the filtered serialized ModelProto of the file at `path`. Error
// messages carry no file prefix ("truncated file", "empty file", "more than
// 50000 nodes, counting subgraphs", ...); *why (if given) says which kind:
// kNotAModel, or the limit passed. Anything but a regular file (a FIFO,
// device, socket, directory) is "not a regular file", at once: the open does
// not block.
Result<std::string> ReadModelBytesWithoutWeights(const std::string& path, const WireLimits& limits = {},
                                                 LoadFailure* why = nullptr);
// Same, from an open regular file (read from its current offset; not closed).
Result<std::string> ReadModelBytesWithoutWeightsFromFd(int fd, const WireLimits& limits = {},
                                                       LoadFailure* why = nullptr);

// Same for bytes in memory.
Result<std::string> FilterModelBytesWithoutWeights(std::string_view bytes, const WireLimits& limits = {},
                                                   LoadFailure* why = nullptr);

}  // namespace gpucast
