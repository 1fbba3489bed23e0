// Parameters that an exporter wrote other than as the model holds them, so
// that a training step's parameters are counted as the framework counts them
// (docs/graph-loading.md, "Tied and merged parameters"):
//
//   - a transposed copy: a tied matrix (`head.weight = embed.weight`, as GPT-2
//     and BERT's masked-LM head tie them) used by a MatMul through a Transpose,
//     which the PyTorch exporter's constant folding (on by default) replaces
//     by a second initializer holding the transpose. One parameter, written
//     twice: the copy is counted as the original.
//   - a merged parameter: PyTorch's eval-mode export (the default) merges
//     parameters of equal value (a fresh nn.TransformerEncoder's deep-copied
//     layers, every LayerNorm's ones) into one and re-creates the others as
//     Identity nodes of it (export_mode.h). Distinct parameters, written once:
//     each Identity output is counted as a parameter of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <onnx/onnx_pb.h>

namespace gpucast {

// The values of a rank-2 tensor at 16 positions fixed by its shape, read
// without its payload (graph/onnx_wire.cc samples each large initializer
// payload it skips, with pread, and writes this into the filtered
// TensorProto as field kMatrixSampleField; the loader reads it back). `row`
// hashes the elements (i, j) of the matrix as stored, `col` the same logical
// positions of its transpose, so X = Y^T gives row(X) == col(Y). `varied`: at
// least 4 distinct values among the row sample (a constant, identity-like or
// mostly-zero matrix is never taken for a tie on samples).
struct MatrixSample {
  uint64_t row = 0, col = 0;
  bool varied = false;
};
inline constexpr uint32_t kMatrixSampleField = 4242;  // in TensorProto: no ONNX field has this number
// A tensor whose samples are taken: rank 2, both dims >= 2, of one of these element sizes.
size_t MatrixElemBytes(int32_t onnx_type);  // 0 if not a float type
// `read(flat_index, dst)` copies one element (row-major) into dst; false if it
// cannot (the sample is then not taken: nullopt).
std::optional<MatrixSample> SampleMatrix(int64_t rows, int64_t cols, size_t elem,
                                         const std::function<bool(int64_t, char*)>& read);
std::string EncodeMatrixSample(const MatrixSample& s);
std::optional<MatrixSample> DecodeMatrixSample(std::string_view bytes);

// Outputs of default-domain Identity nodes whose one input is an initializer
// or a graph input of `g`. Call before model-local functions are inlined: the
// inliner's own Identity nodes (a function passing an input through) are one
// tensor under two names, not merged parameters.
std::unordered_set<std::string> IdentityOfParameterOutputs(const onnx::GraphProto& g);

// copy -> original, for each rank-2 float initializer of `g` named in `params`
// and by the exporter ("onnx::<Op>_<n>", PyTorch's name for a tensor it
// computed) that is the transpose of a named parameter (both dims >= 2, data
// in the file: external data is never read). Matrices whose payloads the
// loader kept (small ones) are compared element by element and must not be
// constant; those it skipped are matched by their samples (MatrixSample: the
// same 16 values at positions fixed by the shape, at least 4 of them
// distinct). Two named parameters are never tied (a deep copy makes distinct
// parameters of equal values), nor two copies. Linear: one comparison per
// tensor at most.
std::unordered_map<std::string, std::string> FindTransposedCopies(const onnx::GraphProto& g,
                                                                  const std::unordered_set<std::string>& params);

}  // namespace gpucast
