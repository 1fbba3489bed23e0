#include "graph/onnx_loader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <nlohmann/json.hpp>

#include "graph/test_models.h"

namespace gpucast {
namespace {

using testing::ModelBuilder;
using testing::kFloat;
using testing::kInt64;
using testing::SetAttr;

LoadOptions Opts(int64_t batch, std::map<std::string, int64_t> dims = {}) {
  LoadOptions o;
  o.batch = batch;
  o.dims = std::move(dims);
  return o;
}

Result<Graph> Load(const ModelBuilder& b, LoadOptions opts = {}) {
  return LoadOnnxGraphFromBytes(b.Bytes(), "m.onnx", opts);
}

// x[N,3,8,8] -> Conv(w[4,3,3,3], b[4], pad 1) -> Relu -> y
ModelBuilder ConvNet() {
  ModelBuilder b;
  b.Input("x", kFloat, {std::string("N"), 3, 8, 8}).FloatInit("w", {4, 3, 3, 3}).FloatInit("b", {4});
  auto& conv = b.Node("Conv", {"x", "w", "b"}, {"c"}, "conv1");
  SetAttr(&conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  SetAttr(&conv, "kernel_shape", std::vector<int64_t>{3, 3});
  b.Node("Relu", {"c"}, {"y"});
  b.Output("y");
  return b;
}

TEST(LoadOnnx, ConvNetBatchSubstituted) {
  auto g = Load(ConvNet(), Opts(32));
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_EQ(g->batch, 32);
  EXPECT_EQ(g->opset, 13);
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].name, "conv1");
  EXPECT_EQ(g->nodes[1].name, "Relu_1");
  EXPECT_EQ(g->nodes[0].AttrInts("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(g->data_inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(g->Tensor("x")->dims, (std::vector<int64_t>{32, 3, 8, 8}));
  EXPECT_TRUE(g->Tensor("x")->is_data_input);
  EXPECT_FALSE(g->Tensor("x")->is_param);
  EXPECT_TRUE(g->Tensor("w")->is_param);
  EXPECT_TRUE(g->Tensor("b")->is_param);
  EXPECT_EQ(g->Tensor("y")->dims, (std::vector<int64_t>{32, 4, 8, 8}));
  EXPECT_TRUE(g->unknown_shapes.empty());
  EXPECT_TRUE(g->warnings.empty());
}

// Every model the workload export and the reference export committed loads
// with batch 32 (and the catalog's dims) with every shape known.
TEST(LoadOnnx, CommittedModelsResolveEveryShape) {
  const std::string dir = std::string(GPUCAST_SOURCE_DIR) + "/models/";
  std::ifstream f(dir + "catalog.json");
  ASSERT_TRUE(f) << "missing models/catalog.json";
  auto catalog = nlohmann::json::parse(f);
  std::vector<std::pair<std::string, LoadOptions>> cases;
  for (const auto& w : catalog["workloads"]) {
    LoadOptions o = Opts(32);
    for (const auto& [k, v] : w["dims"].items()) o.dims[k] = v.get<int64_t>();
    for (const auto& gr : w["graphs"]) cases.push_back({dir + gr["file"].get<std::string>(), o});
  }
  cases.push_back({dir + "transformer6.onnx", Opts(32, {{"seq", 128}})});
  for (const char* tv : {"alexnet", "googlenet", "inception_v3", "mobilenet_v2", "resnet18", "resnet50", "vgg16"}) {
    cases.push_back({dir + "torchvision/" + tv + ".onnx", Opts(32)});
  }
  ASSERT_GE(cases.size(), 20u);
  for (const auto& [path, opts] : cases) {
    SCOPED_TRACE(path);
    auto g = LoadOnnxGraph(path, opts);
    ASSERT_TRUE(g.ok()) << g.message();
    std::string unknown;
    for (const auto& u : g->unknown_shapes) unknown += u + " ";
    EXPECT_TRUE(g->unknown_shapes.empty()) << g->unknown_shapes.size() << " unknown: " << unknown;
    EXPECT_TRUE(g->warnings.empty()) << g->warnings[0];
    ASSERT_FALSE(g->data_inputs.empty());
    EXPECT_EQ(g->Tensor(g->data_inputs[0])->dims[g->data_inputs[0] == "tokens" ? 1 : 0], 32);
  }
}

}  // namespace
}  // namespace gpucast
