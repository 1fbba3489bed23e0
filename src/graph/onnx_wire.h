// Reading an ONNX ModelProto without its weight payloads.
//
// Walks the protobuf wire format and copies every field of the model except
// large tensor payloads: raw_data and the typed data fields of TensorProtos
// (initializers, Constant/attribute tensors, sparse tensors) bigger than
// kMaxKeptTensorDataBytes are skipped with CodedInputStream::Skip, which for a
// file lseeks past them, so the bytes are never read. dims, data_type, name
// and small (shape-constant) payloads are kept. ModelProto.training_info is
// dropped. External data files are never opened.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace gpucast {

// Tensor payload fields larger than this (bytes on the wire) are skipped.
inline constexpr int64_t kMaxKeptTensorDataBytes = 4096;

// Returns the filtered serialized ModelProto of the file at `path`. Error
// messages carry no file prefix ("truncated file", "empty file", ...). Anything but a
// regular file (a FIFO, device, socket, directory) is "not a regular file", at once:
// the open does not block.
Result<std::string> ReadModelBytesWithoutWeights(const std::string& path);
// Same, from an open regular file (read from its current offset; not closed).
Result<std::string> ReadModelBytesWithoutWeightsFromFd(int fd);

// Same for bytes in memory.
Result<std::string> FilterModelBytesWithoutWeights(std::string_view bytes);

}  // namespace gpucast
