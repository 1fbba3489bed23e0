// Test-only helpers: small ONNX models built in code with the onnx protobuf
// classes. Not part of gpucast_graph.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include "util/status.h"

namespace gpucast::testing {

// A dimension: a fixed value, or a symbolic name ("" = unnamed dynamic).
using Dim = std::variant<int64_t, std::string>;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13);

  ModelBuilder& Input(const std::string& name, int32_t elem_type, const std::vector<Dim>& dims);
  // Output with element type only (shape left to inference).
  ModelBuilder& Output(const std::string& name, int32_t elem_type = kFloat);
  // Float initializer with zero raw_data.
  ModelBuilder& FloatInit(const std::string& name, const std::vector<int64_t>& dims);
  // int64 initializer in int64_data.
  ModelBuilder& Int64Init(const std::string& name, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& values);
  // Adds a node; the reference stays valid for attribute setting.
  onnx::NodeProto& Node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "");

  onnx::ModelProto& model() { return model_; }
  std::string Bytes() const;

 private:
  onnx::ModelProto model_;
};

void SetAttr(onnx::NodeProto* n, const std::string& name, int64_t v);
void SetAttr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v);
void SetAttr(onnx::NodeProto* n, const std::string& name, float v);
void SetAttr(onnx::NodeProto* n, const std::string& name, const std::string& v);
void SetAttr(onnx::NodeProto* n, const std::string& name, const onnx::TensorProto& t);

onnx::TensorProto Int64Tensor(const std::vector<int64_t>& dims, const std::vector<int64_t>& values);

// A node on its own (for subgraph bodies and branches built by hand).
onnx::NodeProto MakeNode(const std::string& op_type, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name = "");

// Writes `m` to `path`, then appends (protobuf merge) one more float
// initializer `name` with `dims` whose raw_data (4 bytes per element) is
// streamed as zeros, so the test process never holds the payload.
Status WriteModelWithLargeInitializer(const std::string& path, const onnx::ModelProto& m,
                                      const std::string& name, const std::vector<int64_t>& dims);

// Writes bytes to a file; returns false on failure.
bool WriteFile(const std::string& path, const std::string& bytes);

// A fresh path under the test temp dir.
std::string TempPath(const std::string& file_name);

// This process's peak resident set (VmHWM of /proc/self/status), KiB; -1 if unreadable.
int64_t PeakRssKiB();

}  // namespace gpucast::testing
