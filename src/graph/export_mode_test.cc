#include "graph/export_mode.h"

#include <gtest/gtest.h>

#include "graph/onnx_loader.h"
#include "graph/test_models.h"

namespace gpucast {
namespace {

using testing::kFloat;
using testing::ModelBuilder;
using testing::SetAttr;

// The shapes of PyTorch 1.13's exports of Conv(bias=False) -> BatchNorm ->
// Relu -> Dropout, weight-free (parameters are graph inputs), as
// torch.onnx.export writes them in each mode (checked by hand on real exports).
ModelBuilder Net(int64_t opset, const std::string& conv_w, const std::string& conv_b) {
  ModelBuilder b(opset);
  b.Input("x", kFloat, {std::string("batch"), 3, 8, 8}).Input(conv_w, kFloat, {4, 3, 3, 3});
  std::vector<std::string> in = {"x", conv_w};
  if (!conv_b.empty()) {
    b.Input(conv_b, kFloat, {4});
    in.push_back(conv_b);
  }
  auto& conv = b.Node("Conv", in, {"c"}, "/c1/Conv");
  SetAttr(&conv, "kernel_shape", std::vector<int64_t>{3, 3});
  return b;
}

void AddBatchNorm(ModelBuilder& b, const std::string& in, const std::string& out, int outputs) {
  for (const char* p : {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}) b.Input(p, kFloat, {4});
  std::vector<std::string> outs = {out};
  for (int i = 1; i < outputs; ++i) outs.push_back(out + "_stat" + std::to_string(i));
  b.Node("BatchNormalization", {in, "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, outs, "/b1/BN");
}

// Dropout with a Constant training_mode input (true / false), or none (-1).
void AddDropout(ModelBuilder& b, const std::string& in, const std::string& out, int training) {
  std::vector<std::string> ins = {in};
  if (training >= 0) {
    onnx::TensorProto ratio, mode;
    ratio.set_data_type(onnx::TensorProto::FLOAT);
    ratio.add_float_data(0.5f);
    mode.set_data_type(onnx::TensorProto::BOOL);
    mode.add_int32_data(training);
    SetAttr(&b.Node("Constant", {}, {"ratio"}, "/d/Constant"), "value", ratio);
    SetAttr(&b.Node("Constant", {}, {"mode"}, "/d/Constant_1"), "value", mode);
    ins = {in, "ratio", "mode"};
  }
  b.Node("Dropout", ins, {out, out + "_mask"}, "/d/Dropout");
  b.Output(out);
}

std::string WarningOf(const ModelBuilder& b) {
  LoadOptions o;
  o.batch = 2;
  auto g = LoadOnnxGraphFromBytes(b.Bytes(), "m.onnx", o);
  EXPECT_TRUE(g.ok()) << g.message();
  if (!g.ok()) return "load failed";
  std::string from_loader;
  for (const std::string& w : g->warnings)
    if (w.find("eval-mode") != std::string::npos) from_loader = w;
  // The loader adds exactly the function's sentence, prefixed by the file.
  std::string direct = EvalModeExportWarning(*g);
  EXPECT_EQ(from_loader, direct.empty() ? "" : "m.onnx: " + direct);
  return direct;
}

TEST(EvalModeExport, TrainingModeExportHasNoWarning) {
  ModelBuilder b = Net(13, "c1.weight", "");
  AddBatchNorm(b, "c", "n", 5);
  b.Node("Relu", {"n"}, {"r"});
  AddDropout(b, "r", "y", 1);
  EXPECT_EQ(WarningOf(b), "");
}

TEST(EvalModeExport, FoldedConvIsNamed) {
  // Eval mode: BatchNorm folded into the Conv, which gains a bias; Dropout gone.
  ModelBuilder b = Net(13, "onnx::Conv_19", "onnx::Conv_20");
  b.Node("Relu", {"c"}, {"y"});
  b.Output("y");
  EXPECT_EQ(WarningOf(b),
            "looks like an eval-mode export: 1 Conv node(s) with exporter-computed weights (BatchNorm folded in; "
            "first '/c1/Conv'). gpucast costs a training step, so BatchNorm and Dropout costs are missing or wrong; "
            "re-export in training mode (tools/gpucast-export, or torch.onnx.export(..., "
            "training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False); docs/models.md)");
}

TEST(EvalModeExport, ConvWithModuleNamedBiasIsNotFolded) {
  // A Conv that has its own bias keeps module names in eval mode too: nothing to tell.
  ModelBuilder b = Net(13, "c2.weight", "c2.bias");
  b.Node("Relu", {"c"}, {"y"});
  b.Output("y");
  EXPECT_EQ(WarningOf(b), "");
}

TEST(EvalModeExport, BatchNormInInferenceFormOpset13) {
  ModelBuilder b = Net(13, "c1.weight", "");
  AddBatchNorm(b, "c", "y", 1);
  b.Output("y");
  std::string w = WarningOf(b);
  EXPECT_NE(w.find("1 BatchNormalization node(s) in inference form (first '/b1/BN')"), std::string::npos) << w;
}

TEST(EvalModeExport, BatchNormTrainingModeAttributeOpset14) {
  ModelBuilder train = Net(14, "c1.weight", "");
  AddBatchNorm(train, "c", "y", 3);
  SetAttr(train.model().mutable_graph()->mutable_node(1), "training_mode", int64_t{1});
  train.Output("y");
  EXPECT_EQ(WarningOf(train), "");
  ModelBuilder eval = Net(14, "c1.weight", "");
  AddBatchNorm(eval, "c", "y", 1);
  eval.Output("y");
  EXPECT_NE(WarningOf(eval).find("1 BatchNormalization node(s) in inference form"), std::string::npos);
}

TEST(EvalModeExport, DropoutWithoutTrainingModeOrFalse) {
  for (int training : {-1, 0}) {
    ModelBuilder b = Net(13, "c1.weight", "");
    AddDropout(b, "c", "y", training);
    std::string w = WarningOf(b);
    EXPECT_NE(w.find("1 Dropout node(s) in inference form (first '/d/Dropout')"), std::string::npos)
        << training << ": " << w;
  }
}

TEST(EvalModeExport, ParametersMergedByValue) {
  // Eval mode merges equal parameters: norm2.weight becomes Identity(norm1.weight).
  ModelBuilder b(13);
  b.Input("x", kFloat, {std::string("batch"), 4}).Input("norm1.weight", kFloat, {4});
  b.Node("Identity", {"norm1.weight"}, {"norm2.weight"}, "Identity_0");
  b.Node("Mul", {"x", "norm1.weight"}, {"a"});
  b.Node("Mul", {"a", "norm2.weight"}, {"y"});
  b.Output("y");
  EXPECT_NE(WarningOf(b).find("1 parameter(s) merged into an equal one by Identity nodes (first 'Identity_0')"),
            std::string::npos);
  // An Identity of an activation is not a signal.
  ModelBuilder c(13);
  c.Input("x", kFloat, {std::string("batch"), 4}).Input("w", kFloat, {4});
  c.Node("Mul", {"x", "w"}, {"a"});
  c.Node("Identity", {"a"}, {"y"});
  c.Output("y");
  EXPECT_EQ(WarningOf(c), "");
}

TEST(EvalModeExport, MergedParametersAreFoundInLinearTime) {
  // Found by tools/scale_probe.py (identity_fanout): each Identity of a parameter scanned every node's
  // outputs, so 49,990 Identity nodes of one initializer took 25 s in `gpucast analyze`. This graph is
  // built in memory, past the loader's node limit, so the old scan (400,000^2 name comparisons, about
  // half an hour) runs into the ctest timeout, and the set of produced names takes well under a second.
  Graph g;
  g.opset = 17;
  TensorInfo w;
  w.name = "w";
  w.is_param = true;
  g.tensors["w"] = w;
  TensorInfo produced = w;  // a parameter some node produces: not a merge
  produced.name = "p";
  g.tensors["p"] = produced;
  g.nodes.push_back(Node{"make_p", "Identity", "", {"x"}, {"p"}, {}});
  const int n = 400000;
  g.nodes.reserve(n + 2);
  for (int k = 0; k < n; ++k) g.nodes.push_back(Node{"i" + std::to_string(k), "Identity", "", {"w"}, {"o" + std::to_string(k)}, {}});
  g.nodes.push_back(Node{"of_p", "Identity", "", {"p"}, {"q"}, {}});
  const std::string warning = EvalModeExportWarning(g);
  EXPECT_NE(warning.find("400000 parameter(s) merged into an equal one by Identity nodes (first 'i0')"),
            std::string::npos)
      << warning;
}

}  // namespace
}  // namespace gpucast
