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

}  // namespace gpucast::testing
