#include "graph/graph.h"

#include "util/checked.h"

namespace gpucast {

bool IsFloatElemType(ElemType t) { return t == 1 || t == 10 || t == 11 || t == 16; }  // FLOAT, FLOAT16, DOUBLE, BFLOAT16

int64_t ElemTypeBytes(ElemType t) {
  // ONNX TensorProto.DataType numbering.
  switch (t) {
    case 1: return 4;   // FLOAT
    case 2: return 1;   // UINT8
    case 3: return 1;   // INT8
    case 4: return 2;   // UINT16
    case 5: return 2;   // INT16
    case 6: return 4;   // INT32
    case 7: return 8;   // INT64
    case 9: return 1;   // BOOL
    case 10: return 2;  // FLOAT16
    case 11: return 8;  // DOUBLE
    case 12: return 4;  // UINT32
    case 13: return 8;  // UINT64
    case 14: return 8;  // COMPLEX64
    case 15: return 16; // COMPLEX128
    case 16: return 2;  // BFLOAT16
    default: return 0;  // UNDEFINED, STRING, unknown
  }
}

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

std::optional<int64_t> TensorInfo::NumElements() const {
  if (!shape_known) return std::nullopt;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
  }
  return CheckedProduct(dims);
}

namespace {
const Attribute* Find(const std::map<std::string, Attribute>& attrs, const std::string& key) {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : &it->second;
}
}  // namespace

std::optional<int64_t> Node::AttrInt(const std::string& key) const {
  const Attribute* a = Find(attrs, key);
  return a ? a->i : std::nullopt;
}

std::vector<int64_t> Node::AttrInts(const std::string& key) const {
  const Attribute* a = Find(attrs, key);
  return a ? a->ints : std::vector<int64_t>{};
}

std::optional<double> Node::AttrFloat(const std::string& key) const {
  const Attribute* a = Find(attrs, key);
  return a ? a->f : std::nullopt;
}

std::optional<std::string> Node::AttrString(const std::string& key) const {
  const Attribute* a = Find(attrs, key);
  return a ? a->s : std::nullopt;
}

const TensorInfo* Graph::Tensor(const std::string& name) const {
  if (name.empty()) return nullptr;
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

}  // namespace gpucast
