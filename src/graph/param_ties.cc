#include "graph/param_ties.h"

#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include <google/protobuf/unknown_field_set.h>

#include "graph/graph.h"
#include "util/checked.h"
#include "util/fnv1a.h"

namespace gpucast {
namespace {

using onnx::TensorProto;


constexpr int kSamples = 16;
// The k-th sampled logical position of an a x b matrix.
std::pair<int64_t, int64_t> SamplePos(int k, int64_t a, int64_t b) {
  return {(static_cast<int64_t>(k) * 7919 + 3) % a, (static_cast<int64_t>(k) * 104729 + 11) % b};
}

// A rank-2 candidate: its shape, its sample, and its bytes when the loader kept them.
struct Matrix {
  const std::string* name = nullptr;
  int32_t type = 0;
  int64_t rows = 0, cols = 0;
  size_t elem = 0;
  MatrixSample sample;
  std::string_view bytes;  // empty: the payload was skipped (matched on the sample)
  const char* At(int64_t r, int64_t c) const { return bytes.data() + static_cast<size_t>(r * cols + c) * elem; }
};

// The matrix's bytes as stored in the TensorProto, if they are there.
std::string_view StoredBytes(const TensorProto& t, int64_t numel, size_t elem) {
  const size_t size = static_cast<size_t>(numel) * elem;
  if (!t.raw_data().empty()) return t.raw_data().size() == size ? std::string_view(t.raw_data()) : std::string_view();
  if (t.data_type() == TensorProto::FLOAT && t.float_data_size() == numel)
    return {reinterpret_cast<const char*>(t.float_data().data()), size};
  if (t.data_type() == TensorProto::DOUBLE && t.double_data_size() == numel)
    return {reinterpret_cast<const char*>(t.double_data().data()), size};
  return {};
}

// The last kMatrixSampleField the filter wrote into `t`.
std::optional<MatrixSample> WrittenSample(const TensorProto& t) {
  const google::protobuf::UnknownFieldSet& u = t.GetReflection()->GetUnknownFields(t);
  std::optional<MatrixSample> s;
  for (int i = 0; i < u.field_count(); ++i)
    if (u.field(i).number() == static_cast<int>(kMatrixSampleField) &&
        u.field(i).type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      s = DecodeMatrixSample(u.field(i).length_delimited());
  return s;
}

std::optional<Matrix> MatrixOf(const TensorProto& t) {
  if (t.dims_size() != 2 || t.data_location() == TensorProto::EXTERNAL) return std::nullopt;
  Matrix m;
  m.name = &t.name();
  m.type = t.data_type();
  m.rows = t.dims(0);
  m.cols = t.dims(1);
  m.elem = MatrixElemBytes(m.type);
  if (m.elem == 0 || m.rows < 2 || m.cols < 2) return std::nullopt;
  std::optional<int64_t> numel = CheckedMul(m.rows, m.cols);
  if (!numel || !CheckedMul(*numel, static_cast<int64_t>(m.elem))) return std::nullopt;
  m.bytes = StoredBytes(t, *numel, m.elem);
  if (!m.bytes.empty()) {
    std::string_view b = m.bytes;
    const size_t e = m.elem;
    std::optional<MatrixSample> s = SampleMatrix(m.rows, m.cols, e, [b, e](int64_t k, char* dst) {
      std::memcpy(dst, b.data() + static_cast<size_t>(k) * e, e);
      return true;
    });
    if (!s) return std::nullopt;
    m.sample = *s;
    return m;
  }
  std::optional<MatrixSample> s = WrittenSample(t);
  if (!s) return std::nullopt;
  m.sample = *s;
  return m;
}

// Whether y is x's transpose, element by element, and x has two different elements.
bool IsTransposeOf(const Matrix& x, const Matrix& y) {
  bool varies = false;
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t c = 0; c < x.cols; ++c) {
      if (std::memcmp(x.At(r, c), y.At(c, r), x.elem) != 0) return false;
      varies = varies || std::memcmp(x.At(r, c), x.At(0, 0), x.elem) != 0;
    }
  return varies;
}

bool ExporterNamed(const std::string& n) { return n.rfind("onnx::", 0) == 0; }

}  // namespace

size_t MatrixElemBytes(int32_t type) {
  const bool real = type == TensorProto::FLOAT || type == TensorProto::DOUBLE || type == TensorProto::FLOAT16 ||
                    type == TensorProto::BFLOAT16;
  return real ? static_cast<size_t>(ElemTypeBytes(type)) : 0;  // graph.h's table
}

std::optional<MatrixSample> SampleMatrix(int64_t rows, int64_t cols, size_t elem,
                                         const std::function<bool(int64_t, char*)>& read) {
  if (rows < 2 || cols < 2 || elem == 0 || elem > 8) return std::nullopt;
  MatrixSample s;
  s.row = s.col = kFnv1a64Basis;
  std::set<std::string> distinct;
  char v[8];
  for (int k = 0; k < kSamples; ++k) {
    auto [i, j] = SamplePos(k, rows, cols);  // (i, j) of the matrix
    if (!read(i * cols + j, v)) return std::nullopt;
    s.row = Fnv1a64({v, elem}, s.row);
    distinct.emplace(v, elem);
    auto [ti, tj] = SamplePos(k, cols, rows);  // (ti, tj) of its transpose: element (tj, ti)
    if (!read(tj * cols + ti, v)) return std::nullopt;
    s.col = Fnv1a64({v, elem}, s.col);
  }
  s.varied = distinct.size() >= 4;
  return s;
}

std::string EncodeMatrixSample(const MatrixSample& s) {
  std::string out(17, '\0');
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<char>(s.row >> (8 * i));
    out[8 + i] = static_cast<char>(s.col >> (8 * i));
  }
  out[16] = s.varied ? 1 : 0;
  return out;
}

std::optional<MatrixSample> DecodeMatrixSample(std::string_view b) {
  if (b.size() != 17 || static_cast<unsigned char>(b[16]) > 1) return std::nullopt;
  MatrixSample s;
  for (int i = 0; i < 8; ++i) {
    s.row |= static_cast<uint64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
    s.col |= static_cast<uint64_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
  }
  s.varied = b[16] == 1;
  return s;
}

std::unordered_set<std::string> IdentityOfParameterOutputs(const onnx::GraphProto& g) {
  std::unordered_set<std::string_view> stored;
  for (const auto& t : g.initializer()) stored.insert(t.name());
  for (const auto& in : g.input()) stored.insert(in.name());
  std::unordered_set<std::string> out;
  for (const auto& n : g.node())
    if (IsDefaultDomain(n.domain()) && n.op_type() == "Identity" && n.input_size() == 1 && n.output_size() == 1 &&
        stored.count(n.input(0)))
      out.insert(n.output(0));
  return out;
}

std::unordered_map<std::string, std::string> FindTransposedCopies(const onnx::GraphProto& g,
                                                                  const std::unordered_set<std::string>& params) {
  std::vector<Matrix> named;
  std::vector<Matrix> copies;
  for (const TensorProto& t : g.initializer()) {
    if (!params.count(t.name())) continue;
    std::optional<Matrix> m = MatrixOf(t);
    if (!m) continue;
    (ExporterNamed(t.name()) ? copies : named).push_back(*m);
  }
  // The first named matrix of each (type, shape, sample): one candidate per
  // copy, so a file of many look-alike matrices costs one comparison each.
  std::map<std::tuple<int32_t, int64_t, int64_t, uint64_t>, size_t> first;
  for (size_t k = 0; k < named.size(); ++k)
    first.emplace(std::make_tuple(named[k].type, named[k].rows, named[k].cols, named[k].sample.row), k);
  std::unordered_map<std::string, std::string> tied;  // copy -> original
  for (const Matrix& y : copies) {
    auto it = first.find(std::make_tuple(y.type, y.cols, y.rows, y.sample.col));
    if (it == first.end()) continue;
    const Matrix& x = named[it->second];
    bool same = !x.bytes.empty() && !y.bytes.empty() ? IsTransposeOf(x, y) : x.sample.varied && y.sample.varied;
    if (same) tied.emplace(*y.name, *x.name);
  }
  return tied;
}

}  // namespace gpucast
