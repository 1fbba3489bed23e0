// Building gpucast::Graph objects by hand for the cost and feature tests
// (no ONNX involved): every tensor gets a concrete shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace gpucast::testing {

constexpr ElemType kFloat = 1;
constexpr ElemType kInt64 = 7;

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string path = "m.onnx", int64_t batch = 1);

  // A data input (sample data), a trained parameter, or an intermediate value.
  GraphBuilder& Data(const std::string& name, std::vector<int64_t> dims, ElemType t = kFloat);
  GraphBuilder& Param(const std::string& name, std::vector<int64_t> dims, ElemType t = kFloat);
  // A float buffer of the model (TensorInfo::is_buffer: a weight that is never trained).
  GraphBuilder& Buffer(const std::string& name, std::vector<int64_t> dims);
  // A frozen float parameter (TensorInfo::is_frozen: requires_grad off).
  GraphBuilder& Frozen(const std::string& name, std::vector<int64_t> dims);
  // An embedding table trained with sparse gradients (TensorInfo::sparse_table: sparse=True).
  GraphBuilder& SparseTable(const std::string& name, std::vector<int64_t> dims);
  GraphBuilder& Value(const std::string& name, std::vector<int64_t> dims, ElemType t = kFloat);
  // Marks a declared value as a graph output (Graph::outputs).
  GraphBuilder& Output(const std::string& name);
  // Marks a declared value as a selection sized at its upper bound (the loader's
  // reading of a NonZero of data: TensorInfo::selection_bound).
  GraphBuilder& SelectionBound(const std::string& name);
  // A value whose shape is unknown.
  GraphBuilder& Unknown(const std::string& name);
  // A loader warning (Graph::warnings), e.g. a shape-inference failure.
  GraphBuilder& Warn(const std::string& message);

  // Appends a node; returns it so tests can set attributes and the domain.
  Node& Op(const std::string& op_type, const std::string& name, std::vector<std::string> inputs,
           std::vector<std::string> outputs);

  const Graph& graph() const { return g_; }

 private:
  TensorInfo& Add(const std::string& name, std::vector<int64_t> dims, ElemType t);
  Graph g_;
};

// Attribute helpers.
Attribute IntAttr(int64_t v);
Attribute IntsAttr(std::vector<int64_t> v);

// x[batch, W] -> Gemm "fc1" (w[W,W]) -> h -> LayerNorm (gamma[W], beta[W]) -> o -> Gemm "fc2"
// (w2[4,W]) -> y[batch, 4] (W = width), the LayerNorm as torch.onnx writes it before opset 17
// (decomposed: ReduceMean "mean", Sub "sub", Pow "pow", ReduceMean "mean2", Add "addeps", Sqrt
// "sqrt", Div "div", Mul "scale", Add "shift") or from 17 (one LayerNormalization "ln").
GraphBuilder LayerNormMlp(const std::string& file, int64_t batch, bool decomposed, int64_t width = 8);

// Adds a LayerNorm over the last of `dims` (in and out of shape dims) as torch.onnx writes it
// before opset 17, its nodes, tensors and affine parameters named with the prefix p: ReduceMean
// p+"mean" -> p+"mu", Sub p+"sub", Pow p+"pow", ReduceMean p+"mean2", Add p+"addeps", Sqrt
// p+"sqrt" -> p+"sd", Div p+"div", Mul p+"scale" (p+"gamma"), Add p+"shift" (p+"beta") -> out.
void DecomposedLayerNorm(GraphBuilder& b, const std::string& p, const std::string& in, const std::string& out,
                         const std::vector<int64_t>& dims);

}  // namespace gpucast::testing
