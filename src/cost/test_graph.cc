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

GraphBuilder LayerNormMlp(const std::string& file, int64_t batch, bool decomposed, int64_t width) {
  const int64_t w = width;
  GraphBuilder b(file, batch);
  b.Data("x", {batch, w}).Param("w", {w, w}).Value("h", {batch, w}).Param("gamma", {w}).Param("beta", {w});
  b.Value("o", {batch, w}).Param("w2", {4, w}).Value("y", {batch, 4});
  b.Op("Gemm", "fc1", {"x", "w"}, {"h"}).attrs["transB"] = IntAttr(1);
  if (decomposed) {
    b.Value("mu", {batch, 1}).Value("d", {batch, w}).Value("two", {}).Value("p", {batch, w}).Value("var", {batch, 1});
    b.Value("eps", {}).Value("ve", {batch, 1}).Value("sd", {batch, 1}).Value("n", {batch, w}).Value("g", {batch, w});
    b.Op("Constant", "k2", {}, {"two"});
    b.Op("Constant", "ke", {}, {"eps"});
    b.Op("ReduceMean", "mean", {"h"}, {"mu"});
    b.Op("Sub", "sub", {"h", "mu"}, {"d"});
    b.Op("Pow", "pow", {"d", "two"}, {"p"});
    b.Op("ReduceMean", "mean2", {"p"}, {"var"});
    b.Op("Add", "addeps", {"var", "eps"}, {"ve"});
    b.Op("Sqrt", "sqrt", {"ve"}, {"sd"});
    b.Op("Div", "div", {"d", "sd"}, {"n"});
    b.Op("Mul", "scale", {"n", "gamma"}, {"g"});
    b.Op("Add", "shift", {"g", "beta"}, {"o"});
  } else {
    b.Op("LayerNormalization", "ln", {"h", "gamma", "beta"}, {"o"}).attrs["axis"] = IntAttr(-1);
  }
  b.Op("Gemm", "fc2", {"o", "w2"}, {"y"}).attrs["transB"] = IntAttr(1);
  return b;
}

}  // namespace gpucast::testing
