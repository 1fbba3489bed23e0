// Evaluation of the small integer sub-graphs that exporters emit to compute
// shapes (Shape -> Gather -> Unsqueeze -> Concat -> Reshape and friends).
//
// Folded values are fed back to ONNX shape inference as Constant nodes (see
// onnx_loader.cc). Only integer (and bool) tensors of at most
// kMaxFoldElements elements are evaluated; anything else is left alone.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace gpucast {

inline constexpr int64_t kMaxFoldElements = 4096;

// A small integer tensor: ONNX element type, dims, row-major values (bools as 0/1).
struct IntValue {
  int32_t elem_type = 0;
  std::vector<int64_t> dims;
  std::vector<int64_t> values;
};

// True for the ONNX integer and bool element types.
bool IsIntElemType(int32_t t);

// The value of an integer TensorProto whose data is present (not skipped,
// not external) and has at most kMaxFoldElements elements; else nullopt.
std::optional<IntValue> IntValueFromTensor(const onnx::TensorProto& t);

// A TensorProto holding `v` (int64_data or int32_data by type), named `name`.
onnx::TensorProto TensorFromIntValue(const IntValue& v, const std::string& name);

// What the folder may ask about a node's inputs.
struct FoldContext {
  int64_t opset = 0;  // default-domain opset of the model
  // The known value of a tensor, or nullptr.
  std::function<const IntValue*(const std::string&)> value;
  // The fully known shape of a tensor, or nullopt.
  std::function<std::optional<std::vector<int64_t>>(const std::string&)> shape;
};

// Evaluates the single output of `n` when it is a foldable integer op whose
// needed inputs are known; nullopt otherwise (never throws, never overflows:
// an overflow or an invalid index leaves the node unfolded).
std::optional<IntValue> FoldNode(const onnx::NodeProto& n, const FoldContext& ctx);

}  // namespace gpucast
