#include "graph/param_ties.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/unknown_field_set.h>

namespace gpucast {
namespace {

using onnx::TensorProto;

// A float matrix stored as raw_data (as PyTorch writes initializers).
TensorProto Matrix(const std::string& name, int64_t rows, int64_t cols, const std::vector<float>& v) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(TensorProto::FLOAT);
  t.add_dims(rows);
  t.add_dims(cols);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  return t;
}

std::vector<float> Values(int64_t rows, int64_t cols, float seed) {
  std::vector<float> v;
  for (int64_t i = 0; i < rows * cols; ++i) v.push_back(seed + 0.37f * static_cast<float>(i * i % 17) - 0.01f * i);
  return v;
}

std::vector<float> Transposed(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
  return t;
}

struct Fixture {
  onnx::GraphProto g;
  std::unordered_set<std::string> params;
  void Add(const TensorProto& t) {
    *g.add_initializer() = t;
    params.insert(t.name());
  }
};

TEST(TransposedCopies, TheExportersTransposeOfANamedParameterIsTiedToIt) {
  Fixture f;
  std::vector<float> e = Values(6, 4, 0.5f);
  f.Add(Matrix("embed.weight", 6, 4, e));
  f.Add(Matrix("onnx::MatMul_23", 4, 6, Transposed(e, 6, 4)));
  auto tied = FindTransposedCopies(f.g, f.params);
  ASSERT_EQ(tied.size(), 1u);
  EXPECT_EQ(tied.at("onnx::MatMul_23"), "embed.weight");
}

TEST(TransposedCopies, OrderInTheFileDoesNotMatterAndFloatDataCounts) {
  Fixture f;
  std::vector<float> e = Values(5, 3, -1.0f);
  TensorProto copy;
  copy.set_name("onnx::MatMul_7");
  copy.set_data_type(TensorProto::FLOAT);
  copy.add_dims(3);
  copy.add_dims(5);
  for (float x : Transposed(e, 5, 3)) copy.add_float_data(x);
  f.Add(copy);  // the copy first, its values in float_data
  f.Add(Matrix("tok.weight", 5, 3, e));
  auto tied = FindTransposedCopies(f.g, f.params);
  ASSERT_EQ(tied.size(), 1u);
  EXPECT_EQ(tied.at("onnx::MatMul_7"), "tok.weight");
}

TEST(TransposedCopies, DistinctParametersOfEqualValueAreNotTied) {
  // A deep copy (nn.TransformerEncoder's layers) makes named parameters of equal
  // values, and two square ones may be each other's transpose: distinct parameters.
  Fixture f;
  std::vector<float> w = Values(4, 4, 0.1f);
  f.Add(Matrix("layers.0.linear.weight", 4, 4, w));
  f.Add(Matrix("layers.1.linear.weight", 4, 4, w));
  f.Add(Matrix("layers.2.linear.weight", 4, 4, Transposed(w, 4, 4)));
  // Two exporter copies that are each other's transpose: neither is a named parameter.
  std::vector<float> u = Values(3, 5, 2.0f);
  f.Add(Matrix("onnx::MatMul_1", 3, 5, u));
  f.Add(Matrix("onnx::MatMul_2", 5, 3, Transposed(u, 3, 5)));
  EXPECT_TRUE(FindTransposedCopies(f.g, f.params).empty());
}

TEST(TransposedCopies, EqualNotTransposedConstantVectorsAndUnreadDataAreNotTied) {
  Fixture f;
  std::vector<float> w = Values(3, 5, 0.2f);
  f.Add(Matrix("a.weight", 3, 5, w));
  f.Add(Matrix("onnx::MatMul_3", 3, 5, w));  // equal, not a transpose
  f.Add(Matrix("zeros.weight", 2, 3, std::vector<float>(6, 0.0f)));
  f.Add(Matrix("onnx::MatMul_4", 3, 2, std::vector<float>(6, 0.0f)));  // a constant: no evidence of a tie
  std::vector<float> r = Values(1, 4, 0.3f);
  f.Add(Matrix("row.weight", 1, 4, r));
  f.Add(Matrix("onnx::MatMul_5", 4, 1, r));  // a vector: its "transpose" is the same bytes
  std::vector<float> x = Values(4, 2, 0.4f);
  TensorProto ext = Matrix("ext.weight", 4, 2, x);
  ext.set_data_location(TensorProto::EXTERNAL);
  f.Add(ext);
  f.Add(Matrix("onnx::MatMul_6", 2, 4, Transposed(x, 4, 2)));
  std::vector<float> y = Values(4, 3, 0.6f);
  f.g.add_initializer()->CopyFrom(Matrix("not_a_param", 4, 3, y));  // not in params
  f.Add(Matrix("onnx::MatMul_8", 3, 4, Transposed(y, 4, 3)));
  EXPECT_TRUE(FindTransposedCopies(f.g, f.params).empty());
}

TEST(TransposedCopies, AFingerprintMatchIsCheckedElementByElement) {
  // 4 x 40: 160 elements, 16 sampled. Change one element no sample reads.
  Fixture f;
  std::vector<float> e = Values(4, 40, 0.7f);
  f.Add(Matrix("embed.weight", 4, 40, e));
  std::vector<float> t = Transposed(e, 4, 40);
  std::vector<bool> sampled(t.size());
  for (int k = 0; k < 16; ++k) {
    int64_t i = (k * 7919 + 3) % 4, j = (k * 104729 + 11) % 40;
    sampled[j * 4 + i] = true;
  }
  size_t unsampled = 0;
  while (sampled[unsampled]) ++unsampled;
  const float kept = t[unsampled];
  t[unsampled] += 1.0f;
  f.Add(Matrix("onnx::MatMul_9", 40, 4, t));
  EXPECT_TRUE(FindTransposedCopies(f.g, f.params).empty());
  t[unsampled] = kept;
  *f.g.mutable_initializer(1) = Matrix("onnx::MatMul_9", 40, 4, t);
  EXPECT_EQ(FindTransposedCopies(f.g, f.params).size(), 1u);
}

TEST(TransposedCopies, ManyLookAlikeMatricesCostOneComparisonEach) {
  // 20,000 exporter copies with the same sampled values as one named parameter's
  // transpose but each differing at one unsampled element: each is compared with
  // the first candidate only, so this is linear (quadratic would be 4e8 compares).
  Fixture f;
  std::vector<float> e = Values(2, 40, 0.9f);
  f.Add(Matrix("embed.weight", 2, 40, e));
  std::vector<float> t = Transposed(e, 2, 40);
  std::vector<bool> sampled(t.size());
  for (int k = 0; k < 16; ++k) sampled[((k * 104729 + 11) % 40) * 2 + (k * 7919 + 3) % 2] = true;
  size_t unsampled = 0;
  while (sampled[unsampled]) ++unsampled;
  for (int k = 0; k < 20000; ++k) {
    std::vector<float> c = t;
    c[unsampled] = 100.0f + static_cast<float>(k);
    f.Add(Matrix("onnx::MatMul_" + std::to_string(k), 40, 2, c));
  }
  EXPECT_TRUE(FindTransposedCopies(f.g, f.params).empty());
}

// A TensorProto as the wire filter leaves a large one: shape, no payload, its sample.
TensorProto Sampled(const std::string& name, int64_t rows, int64_t cols, const std::vector<float>& v) {
  TensorProto t = Matrix(name, rows, cols, v);
  std::optional<MatrixSample> s = SampleMatrix(rows, cols, 4, [&v](int64_t k, char* dst) {
    std::memcpy(dst, &v[static_cast<size_t>(k)], 4);
    return true;
  });
  EXPECT_TRUE(s.has_value());
  t.clear_raw_data();
  t.GetReflection()->MutableUnknownFields(&t)->AddLengthDelimited(kMatrixSampleField, EncodeMatrixSample(*s));
  return t;
}

TEST(TransposedCopies, SkippedPayloadsAreMatchedOnTheirSamples) {
  Fixture f;
  std::vector<float> e = Values(64, 48, 0.25f);
  f.Add(Sampled("embed.weight", 64, 48, e));
  f.Add(Sampled("onnx::MatMul_12", 48, 64, Transposed(e, 64, 48)));
  std::vector<float> other = Values(64, 48, 0.5f);  // an untied head of the same shape
  f.Add(Sampled("onnx::MatMul_13", 48, 64, Transposed(other, 64, 48)));
  std::vector<float> zeros(64 * 48, 0.0f);  // too few distinct values to be taken on samples
  f.Add(Sampled("zero.weight", 64, 48, zeros));
  f.Add(Sampled("onnx::MatMul_14", 48, 64, zeros));
  auto tied = FindTransposedCopies(f.g, f.params);
  ASSERT_EQ(tied.size(), 1u);
  EXPECT_EQ(tied.at("onnx::MatMul_12"), "embed.weight");
}

TEST(MatrixSample, RoundTripsAndRefusesMalformedBytes) {
  MatrixSample s{0x0123456789abcdefull, 0xfedcba9876543210ull, true};
  std::optional<MatrixSample> back = DecodeMatrixSample(EncodeMatrixSample(s));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->row, s.row);
  EXPECT_EQ(back->col, s.col);
  EXPECT_TRUE(back->varied);
  EXPECT_FALSE(DecodeMatrixSample("short").has_value());
  EXPECT_FALSE(DecodeMatrixSample(std::string(16, '\0') + "\x02").has_value());
  // A matrix and its transpose: row(X) == col(X^T), and not the other way for a non-symmetric one.
  std::vector<float> x = Values(3, 7, 1.5f), xt = Transposed(x, 3, 7);
  auto reader = [](const std::vector<float>& v) {
    return [&v](int64_t k, char* dst) {
      std::memcpy(dst, &v[static_cast<size_t>(k)], 4);
      return true;
    };
  };
  auto sx = SampleMatrix(3, 7, 4, reader(x)), st = SampleMatrix(7, 3, 4, reader(xt));
  ASSERT_TRUE(sx && st);
  EXPECT_EQ(sx->row, st->col);
  EXPECT_EQ(sx->col, st->row);
  EXPECT_NE(sx->row, st->row);
  EXPECT_FALSE(SampleMatrix(1, 7, 4, reader(x)).has_value());  // a vector
}

TEST(IdentityOfParameter, OnlyIdentityNodesOfStoredTensors) {
  onnx::GraphProto g;
  g.add_initializer()->set_name("w");
  g.add_input()->set_name("p");
  auto node = [&g](const std::string& op, const std::string& in, const std::string& out, const std::string& domain) {
    auto* n = g.add_node();
    n->set_op_type(op);
    n->set_domain(domain);
    n->add_input(in);
    n->add_output(out);
  };
  node("Identity", "w", "w2", "");
  node("Identity", "p", "p2", "ai.onnx");
  node("Identity", "w2", "w3", "");     // of a node's output
  node("Relu", "w", "r", "");           // not an Identity
  node("Identity", "w", "c", "custom");  // another domain
  auto out = IdentityOfParameterOutputs(g);
  EXPECT_EQ(out, (std::unordered_set<std::string>{"w2", "p2"}));
}

}  // namespace
}  // namespace gpucast
