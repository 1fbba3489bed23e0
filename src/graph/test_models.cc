#include "graph/test_models.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace gpucast::testing {
namespace {

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

onnx::AttributeProto* NewAttr(onnx::NodeProto* n, const std::string& name,
                              onnx::AttributeProto::AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

}  // namespace

ModelBuilder::ModelBuilder(int64_t opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("gpucast-test");
  auto* o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

ModelBuilder& ModelBuilder::Input(const std::string& name, int32_t elem_type,
                                  const std::vector<Dim>& dims) {
  auto* vi = model_.mutable_graph()->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (const auto* v = std::get_if<int64_t>(&d)) {
      dim->set_dim_value(*v);
    } else if (!std::get<std::string>(d).empty()) {
      dim->set_dim_param(std::get<std::string>(d));
    }
  }
  return *this;
}

ModelBuilder& ModelBuilder::Output(const std::string& name, int32_t elem_type) {
  auto* vi = model_.mutable_graph()->add_output();
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  return *this;
}

ModelBuilder& ModelBuilder::FloatInit(const std::string& name, const std::vector<int64_t>& dims) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(kFloat);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  t->set_raw_data(std::string(static_cast<size_t>(n) * 4, '\0'));
  return *this;
}

ModelBuilder& ModelBuilder::Int64Init(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& values) {
  auto* t = model_.mutable_graph()->add_initializer();
  *t = Int64Tensor(dims, values);
  t->set_name(name);
  return *this;
}

onnx::NodeProto& ModelBuilder::Node(const std::string& op_type,
                                    const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs,
                                    const std::string& name) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op_type);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

std::string ModelBuilder::Bytes() const { return model_.SerializeAsString(); }

void SetAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  NewAttr(n, name, onnx::AttributeProto::INT)->set_i(v);
}
void SetAttr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = NewAttr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void SetAttr(onnx::NodeProto* n, const std::string& name, float v) {
  NewAttr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
}
void SetAttr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  NewAttr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}
void SetAttr(onnx::NodeProto* n, const std::string& name, const onnx::TensorProto& t) {
  *NewAttr(n, name, onnx::AttributeProto::TENSOR)->mutable_t() = t;
}

onnx::NodeProto MakeNode(const std::string& op_type, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name) {
  onnx::NodeProto n;
  n.set_op_type(op_type);
  n.set_name(name);
  for (const auto& i : inputs) n.add_input(i);
  for (const auto& o : outputs) n.add_output(o);
  return n;
}

onnx::TensorProto Int64Tensor(const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_data_type(kInt64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

Status WriteModelWithLargeInitializer(const std::string& path, const onnx::ModelProto& m,
                                      const std::string& name, const std::vector<int64_t>& dims) {
  onnx::TensorProto header;  // everything but raw_data
  header.set_name(name);
  header.set_data_type(kFloat);
  uint64_t payload = 4;
  for (int64_t d : dims) {
    header.add_dims(d);
    payload *= static_cast<uint64_t>(d);
  }
  std::string raw_prefix;  // raw_data tag (field 9, length-delimited) + length
  AppendVarint(&raw_prefix, (9 << 3) | 2);
  AppendVarint(&raw_prefix, payload);
  std::string tensor_head = header.SerializeAsString() + raw_prefix;
  uint64_t tensor_len = tensor_head.size() + payload;
  std::string graph_head;  // GraphProto with one initializer (field 5)
  AppendVarint(&graph_head, (5 << 3) | 2);
  AppendVarint(&graph_head, tensor_len);
  uint64_t graph_len = graph_head.size() + tensor_len;
  std::string model_head;  // ModelProto.graph (field 7), merged into the first one
  AppendVarint(&model_head, (7 << 3) | 2);
  AppendVarint(&model_head, graph_len);

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status::Error(path + ": cannot write");
  f << m.SerializeAsString() << model_head << graph_head << tensor_head;
  const std::string zeros(1 << 20, '\0');
  for (uint64_t left = payload; left > 0;) {
    uint64_t n = std::min<uint64_t>(left, zeros.size());
    f.write(zeros.data(), static_cast<std::streamsize>(n));
    left -= n;
  }
  f.close();
  return f ? Status::Ok() : Status::Error(path + ": write failed");
}

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  f.close();
  return static_cast<bool>(f);
}

int64_t PeakRssKiB() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

std::string TempPath(const std::string& file_name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string base = dir ? dir : "/tmp";
  return base + "/gpucast_graph_" + std::to_string(::getpid()) + "_" + file_name;
}

}  // namespace gpucast::testing
