// Evaluation of the small integer sub-graphs that exporters emit to compute
// shapes (Shape -> Gather -> Unsqueeze -> Concat -> Reshape and friends).
//
// Folded values are fed back to ONNX shape inference as Constant nodes (see
// onnx_loader.cc). Integer, bool and real (float, double) tensors of at most
// kMaxFoldElements elements are evaluated (reals: Resize scales built as
// Concat(Constant, Constant), sizes computed as Floor(Cast(Shape) * scale));
// anything else is left alone. The loader also caps the elements kept across
// the whole graph (kMaxFoldTotalElements): past it, values stay unfolded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace gpucast {

// Elements of one folded value.
inline constexpr int64_t kMaxFoldElements = 4096;
// Elements of all folded values of one graph together (the loader's budget:
// about 24 bytes each are kept, so at most ~25 MB; a graph of many large
// constant chains, a "fold bomb", cannot grow memory past it).
inline constexpr int64_t kMaxFoldTotalElements = int64_t{1} << 20;

// A small constant tensor: ONNX element type, dims and row-major values:
// `values` for integer and bool types (bools as 0/1), `reals` for FLOAT and
// DOUBLE (FLOAT values rounded to float after every operation).
struct FoldValue {
  int32_t elem_type = 0;
  std::vector<int64_t> dims;
  std::vector<int64_t> values;
  std::vector<double> reals;

  bool IsReal() const;
  int64_t Size() const { return static_cast<int64_t>(IsReal() ? reals.size() : values.size()); }
};

// True for the ONNX integer and bool element types.
bool IsIntElemType(int32_t t);
// True for FLOAT and DOUBLE (the real types folded).
bool IsRealElemType(int32_t t);

// The value of an integer or real TensorProto whose data is present (not
// skipped, not external) and has at most kMaxFoldElements elements; else nullopt.
std::optional<FoldValue> FoldValueFromTensor(const onnx::TensorProto& t);

// A TensorProto holding `v` (int64_data, int32_data, uint64_data, float_data
// or double_data by type), named `name`.
onnx::TensorProto TensorFromFoldValue(const FoldValue& v, const std::string& name);

// What the folder may ask about a node's inputs.
struct FoldContext {
  int64_t opset = 0;  // default-domain opset of the model
  // The known value of a tensor, or nullptr.
  std::function<const FoldValue*(const std::string&)> value;
  // The fully known shape of a tensor, or nullopt.
  std::function<std::optional<std::vector<int64_t>>(const std::string&)> shape;
};

// Evaluates the single output of `n` when it is a foldable op whose needed
// inputs are known; nullopt otherwise (never throws, never overflows: an
// overflow, an invalid index or a non-finite real leaves the node unfolded).
std::optional<FoldValue> FoldNode(const onnx::NodeProto& n, const FoldContext& ctx);

// Every output of a Split of a folded 1-D tensor on axis 0 (torch's repeat_interleave splits its
// repeat counts so), by the folded `split` input, the `split` attribute, or equal chunks of
// ceil(n / outputs) with a smaller last one; empty when any of that is not known or consistent.
// FoldNode gives the first of them.
std::vector<FoldValue> FoldSplit(const onnx::NodeProto& n, const FoldContext& ctx);

}  // namespace gpucast
