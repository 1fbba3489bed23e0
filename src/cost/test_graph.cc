#include "cost/test_graph.h"

#include <utility>

namespace gpucast::testing {

GraphBuilder::GraphBuilder(std::string path, int64_t batch) {
  g_.path = std::move(path);
  g_.batch = batch;
  g_.opset = 13;
}

TensorInfo& GraphBuilder::Add(const std::string& name, std::vector<int64_t> dims, ElemType t) {
  TensorInfo& ti = g_.tensors[name];
  ti.name = name;
  ti.elem_type = t;
  ti.dims = std::move(dims);
  ti.shape_known = true;
  return ti;
}

GraphBuilder& GraphBuilder::Data(const std::string& name, std::vector<int64_t> dims, ElemType t) {
  Add(name, std::move(dims), t).is_data_input = true;
  g_.data_inputs.push_back(name);
  return *this;
}

GraphBuilder& GraphBuilder::Param(const std::string& name, std::vector<int64_t> dims, ElemType t) {
  Add(name, std::move(dims), t).is_param = true;
  return *this;
}

GraphBuilder& GraphBuilder::Buffer(const std::string& name, std::vector<int64_t> dims) {
  TensorInfo& t = Add(name, std::move(dims), kFloat);
  t.is_param = true;
  t.is_buffer = true;
  return *this;
}

GraphBuilder& GraphBuilder::Frozen(const std::string& name, std::vector<int64_t> dims) {
  TensorInfo& t = Add(name, std::move(dims), kFloat);
  t.is_param = true;
  t.is_frozen = true;
  return *this;
}

GraphBuilder& GraphBuilder::SparseTable(const std::string& name, std::vector<int64_t> dims) {
  TensorInfo& t = Add(name, std::move(dims), kFloat);
  t.is_param = true;
  t.sparse_table = name;
  return *this;
}

GraphBuilder& GraphBuilder::Value(const std::string& name, std::vector<int64_t> dims, ElemType t) {
  Add(name, std::move(dims), t);
  return *this;
}

GraphBuilder& GraphBuilder::Output(const std::string& name) {
  g_.outputs.push_back(name);
  return *this;
}

GraphBuilder& GraphBuilder::SelectionBound(const std::string& name) {
  g_.tensors.at(name).selection_bound = true;
  return *this;
}

GraphBuilder& GraphBuilder::Unknown(const std::string& name) {
  Add(name, {}, kFloat).shape_known = false;
  g_.unknown_shapes.push_back(name);
  return *this;
}

GraphBuilder& GraphBuilder::Warn(const std::string& message) {
  g_.warnings.push_back(message);
  return *this;
}

Node& GraphBuilder::Op(const std::string& op_type, const std::string& name,
                       std::vector<std::string> inputs, std::vector<std::string> outputs) {
  Node n;
  n.op_type = op_type;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  g_.nodes.push_back(std::move(n));
  return g_.nodes.back();
}

Attribute IntAttr(int64_t v) {
  Attribute a;
  a.i = v;
  return a;
}

Attribute IntsAttr(std::vector<int64_t> v) {
  Attribute a;
  a.ints = std::move(v);
  return a;
}

void DecomposedLayerNorm(GraphBuilder& b, const std::string& p, const std::string& in, const std::string& out,
                         const std::vector<int64_t>& dims) {
  std::vector<int64_t> row = dims;
  row.back() = 1;
  b.Param(p + "gamma", {dims.back()}).Param(p + "beta", {dims.back()}).Value(p + "two", {}).Value(p + "eps", {});
  for (const char* v : {"mu", "var", "ve", "sd"}) b.Value(p + v, row);
  for (const char* v : {"d", "p", "n", "g"}) b.Value(p + v, dims);
  b.Value(out, dims);
  b.Op("Constant", p + "k2", {}, {p + "two"});
  b.Op("Constant", p + "ke", {}, {p + "eps"});
  b.Op("ReduceMean", p + "mean", {in}, {p + "mu"});
  b.Op("Sub", p + "sub", {in, p + "mu"}, {p + "d"});
  b.Op("Pow", p + "pow", {p + "d", p + "two"}, {p + "p"});
  b.Op("ReduceMean", p + "mean2", {p + "p"}, {p + "var"});
  b.Op("Add", p + "addeps", {p + "var", p + "eps"}, {p + "ve"});
  b.Op("Sqrt", p + "sqrt", {p + "ve"}, {p + "sd"});
  b.Op("Div", p + "div", {p + "d", p + "sd"}, {p + "n"});
  b.Op("Mul", p + "scale", {p + "n", p + "gamma"}, {p + "g"});
  b.Op("Add", p + "shift", {p + "g", p + "beta"}, {out});
}

GraphBuilder LayerNormMlp(const std::string& file, int64_t batch, bool decomposed, int64_t width) {
  const int64_t w = width;
  GraphBuilder b(file, batch);
  b.Data("x", {batch, w}).Param("w", {w, w}).Value("h", {batch, w});
  b.Param("w2", {4, w}).Value("y", {batch, 4});
  b.Op("Gemm", "fc1", {"x", "w"}, {"h"}).attrs["transB"] = IntAttr(1);
  if (decomposed) {
    DecomposedLayerNorm(b, "", "h", "o", {batch, w});
  } else {
    b.Param("gamma", {w}).Param("beta", {w}).Value("o", {batch, w});
    b.Op("LayerNormalization", "ln", {"h", "gamma", "beta"}, {"o"}).attrs["axis"] = IntAttr(-1);
  }
  b.Op("Gemm", "fc2", {"o", "w2"}, {"y"}).attrs["transB"] = IntAttr(1);
  return b;
}

}  // namespace gpucast::testing
