// The lazily built schemas against libonnx's own registry (the reference).
#include "graph/onnx_schemas.h"

#include <gtest/gtest.h>

#include <set>

namespace gpucast {
namespace {

TEST(OnnxSchemas, SameSchemaAsTheRegistryForEveryOpAndOpset) {
  auto versions = LazyOpSchemaVersions();
  ASSERT_GT(versions.size(), 400u);  // libonnx 1.12 declares 419
  std::set<std::string> ops;
  for (const auto& [op, v] : versions) ops.insert(op);
  const int newest = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at("").second;
  int compared = 0;
  for (const std::string& op : ops) {
    for (int opset = 1; opset <= newest; ++opset) {
      const onnx::OpSchema* ours = FindOpSchema(op, opset, "");
      const onnx::OpSchema* ref = onnx::OpSchemaRegistry::Schema(op, opset, "");
      ASSERT_EQ(ours == nullptr, ref == nullptr) << op << " opset " << opset;
      if (!ref) continue;
      EXPECT_EQ(ours->Name(), ref->Name());
      EXPECT_EQ(ours->SinceVersion(), ref->SinceVersion()) << op << " opset " << opset;
      EXPECT_EQ(ours->Deprecated(), ref->Deprecated()) << op;
      EXPECT_EQ(ours->has_type_and_shape_inference_function(), ref->has_type_and_shape_inference_function());
      EXPECT_EQ(ours->inputs().size(), ref->inputs().size()) << op;
      ++compared;
    }
  }
  EXPECT_GT(compared, 2000);
  // The same object on every call; unknown ops and domains have none.
  EXPECT_EQ(FindOpSchema("Relu", 14, ""), FindOpSchema("Relu", 17, ""));  // Relu: 1, 6, 13, 14
  EXPECT_EQ(FindOpSchema("NoSuchOp", 13, ""), nullptr);
  EXPECT_EQ(FindOpSchema("FusedGemm", 1, "com.microsoft"), nullptr);
  ASSERT_NE(FindOpSchema("LinearClassifier", 1, "ai.onnx.ml"), nullptr);
}

}  // namespace
}  // namespace gpucast
