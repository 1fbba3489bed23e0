// Model-local functions (onnx_functions.h): a real torch export with
// export_modules_as_functions against the plain export of the same network
// and torch's own counts (models/functions/, tools/function_export.py), and
// hand-built models for attribute references, optional inputs and outputs,
// nesting, recursion, the bounds, opset imports and a missing function.
#include "graph/onnx_functions.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include <google/protobuf/unknown_field_set.h>

#include "cost/cost.h"
#include "graph/onnx_loader.h"
#include "graph/test_models.h"
#include "util/paths.h"

namespace gpucast {
namespace {

using testing::kFloat;
using testing::ModelBuilder;
using testing::SetAttr;

// ---- the real exports ----

const std::string kDir = HomeDir() + "/models/functions/";

CostReport CostOf(const std::string& file, int64_t batch) {
  LoadOptions opts;
  opts.batch = batch;
  Result<Graph> g = LoadOnnxGraph(kDir + file, opts);
  EXPECT_TRUE(g.ok()) << g.message();
  if (!g.ok()) return {};
  EXPECT_TRUE(g->unknown_shapes.empty()) << file << ": first unknown " << g->unknown_shapes[0];
  EXPECT_TRUE(g->warnings.empty()) << file << ": " << g->warnings[0];
  Result<CostReport> r = AnalyzeCost(*g, {});
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : CostReport{};
}

TEST(OnnxFunctions, TorchExportWithFunctionsCostsAsThePlainExportAndAsTorch) {
  std::ifstream in(kDir + "reference.json");
  ASSERT_TRUE(in.good()) << "models/functions/reference.json: run tools/function_export.py";
  const nlohmann::json ref = nlohmann::json::parse(in);
  for (int64_t batch : {int64_t{1}, int64_t{8}}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const CostReport plain = CostOf("blocks-plain.onnx", batch);
    const CostReport fn = CostOf("blocks-functions.onnx", batch);
    EXPECT_TRUE(plain.unsupported.empty());
    EXPECT_TRUE(fn.unsupported.empty()) << fn.first_uncosted;
    EXPECT_EQ(fn.totals.forward_flops, plain.totals.forward_flops);
    EXPECT_EQ(fn.totals.backward_flops, plain.totals.backward_flops);
    EXPECT_EQ(fn.totals.params, plain.totals.params);
    EXPECT_EQ(fn.totals.activation_bytes, plain.totals.activation_bytes);
    EXPECT_EQ(fn.totals.weight_bytes, plain.totals.weight_bytes);
    EXPECT_EQ(fn.totals.saved_bytes, plain.totals.saved_bytes);
    EXPECT_EQ(fn.totals.num_nodes, plain.totals.num_nodes);
    ASSERT_EQ(fn.nodes.size(), plain.nodes.size());
    for (size_t i = 0; i < fn.nodes.size(); ++i) {
      const NodeCost &a = fn.nodes[i], &b = plain.nodes[i];
      SCOPED_TRACE(a.name + " vs " + b.name);
      EXPECT_EQ(a.op_type, b.op_type);
      EXPECT_EQ(a.output_shapes, b.output_shapes);
      EXPECT_EQ(a.forward_flops, b.forward_flops);
      EXPECT_EQ(a.backward_flops, b.backward_flops);
      EXPECT_EQ(a.params, b.params);
      EXPECT_EQ(a.activation_bytes, b.activation_bytes);
      EXPECT_EQ(a.saved_bytes, b.saved_bytes);
    }
    // torch's counts (batch 1): trainable parameters, and the profiler's
    // addmm FLOPs (2 per multiply-add) against the Gemm nodes' forward FLOPs,
    // which add one per output element for the bias (rules_matmul.cc).
    EXPECT_EQ(fn.totals.params, ref["params"].get<int64_t>());
    int64_t matmul = 0, bias = 0;
    for (const NodeCost& n : fn.nodes) {
      if (n.category != Category::kMatmul) continue;
      matmul += n.forward_flops;
      ASSERT_EQ(n.op_type, "Gemm");
      ASSERT_EQ(n.output_shapes.size(), 1u);
      bias += n.output_shapes[0][0] * n.output_shapes[0][1];
    }
    EXPECT_EQ(matmul - bias, ref["profiler_flops"].get<int64_t>() * batch);
  }
}

TEST(OnnxFunctions, InlinedNodesAreNamedByTheirPathAndTakeTheCallersAttributes) {
  Result<Graph> g = LoadOnnxGraph(kDir + "blocks-functions.onnx", LoadOptions{});
  ASSERT_TRUE(g.ok()) << g.message();
  std::map<std::string, const Node*> by_name;
  for (const Node& n : g->nodes) by_name[n.name] = &n;
  // Block calls Mlp, whose LeakyRelu's alpha refers to Block's attribute,
  // which each call sets (0.1 and 0.2 in tools/function_export.py).
  for (const auto& [block, alpha] : {std::pair{"/blocks/blocks.0/Block", 0.1}, std::pair{"/blocks/blocks.1/Block", 0.2}}) {
    const std::string name = std::string(block) + "/Mlp_1/LeakyRelu_4";
    ASSERT_TRUE(by_name.count(name)) << name;
    const Node& n = *by_name[name];
    EXPECT_EQ(n.op_type, "LeakyRelu");
    ASSERT_TRUE(n.attrs.count("alpha") && n.attrs.at("alpha").f);
    EXPECT_NEAR(*n.attrs.at("alpha").f, alpha, 1e-6);
  }
  for (const Node& n : g->nodes) EXPECT_TRUE(n.domain.empty()) << n.name << ": " << n.domain;
}

// ---- hand-built models ----

// A function `name` of domain "local" whose body `build` fills; the model
// imports "local" version 1.
onnx::FunctionProto& AddFunction(onnx::ModelProto& m, const std::string& name, const std::vector<std::string>& in,
                                 const std::vector<std::string>& out, int64_t opset = 17) {
  bool has_local = false;
  for (const auto& o : m.opset_import()) has_local = has_local || o.domain() == "local";
  if (!has_local) {
    auto* o = m.add_opset_import();
    o->set_domain("local");
    o->set_version(1);
  }
  auto* f = m.add_functions();
  f->set_name(name);
  f->set_domain("local");
  for (const auto& i : in) f->add_input(i);
  for (const auto& o : out) f->add_output(o);
  auto* o = f->add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  o = f->add_opset_import();
  o->set_domain("local");
  o->set_version(1);
  return *f;
}

onnx::NodeProto& BodyNode(onnx::FunctionProto& f, const std::string& op, const std::vector<std::string>& in,
                          const std::vector<std::string>& out, const std::string& domain = "") {
  auto* n = f.add_node();
  n->set_op_type(op);
  n->set_domain(domain);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return *n;
}

void RefAttr(onnx::NodeProto& n, const std::string& name, const std::string& ref,
             onnx::AttributeProto::AttributeType type = onnx::AttributeProto::FLOAT) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_ref_attr_name(ref);
  a->set_type(type);
}

// FunctionProto.attribute_proto (IR 9), which libonnx 1.12's classes lack:
// written as the unknown field 11 it is on the wire.
void AddDefault(onnx::FunctionProto& f, const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  f.GetReflection()->MutableUnknownFields(&f)->AddLengthDelimited(11, a.SerializeAsString());
}

onnx::NodeProto& Call(ModelBuilder& b, const std::string& fn, const std::vector<std::string>& in,
                      const std::vector<std::string>& out, const std::string& name) {
  onnx::NodeProto& n = b.Node(fn, in, out, name);
  n.set_domain("local");
  return n;
}

Result<Graph> Load(const ModelBuilder& b, LoadFailure* why = nullptr, LoadOptions opts = {}) {
  return LoadOnnxGraphFromBytes(b.Bytes(), "m.onnx", opts, why);
}

const Node* Find(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

TEST(OnnxFunctions, AttributeReferenceTakesTheCallersValueElseTheDefaultElseIsDropped) {
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("z");
  auto& f = AddFunction(b.model(), "Act", {"a"}, {"c"});
  f.add_attribute("alpha");
  f.add_attribute("beta");
  AddDefault(f, "alpha", 0.3f);
  RefAttr(BodyNode(f, "LeakyRelu", {"a"}, {"t"}), "alpha", "alpha");
  RefAttr(BodyNode(f, "Elu", {"t"}, {"c"}), "alpha", "beta");
  SetAttr(&Call(b, "Act", {"x"}, {"y"}, "given"), "alpha", 0.5f);
  Call(b, "Act", {"y"}, {"z"}, "defaulted");
  Result<Graph> g = Load(b);
  ASSERT_TRUE(g.ok()) << g.message();
  ASSERT_EQ(g->nodes.size(), 4u);
  const Node* given = Find(*g, "given/LeakyRelu_0");
  const Node* defaulted = Find(*g, "defaulted/LeakyRelu_0");
  const Node* elu = Find(*g, "given/Elu_1");
  ASSERT_TRUE(given && defaulted && elu);
  EXPECT_NEAR(*given->attrs.at("alpha").f, 0.5, 1e-6);
  EXPECT_NEAR(*defaulted->attrs.at("alpha").f, 0.3, 1e-6);
  EXPECT_EQ(elu->attrs.count("alpha"), 0u);  // 'beta': neither given nor defaulted
  EXPECT_EQ(elu->outputs[0], "y");
  EXPECT_EQ(given->outputs[0], "given/t");
  EXPECT_EQ(g->Tensor("z")->dims, (std::vector<int64_t>{1, 4}));
}

TEST(OnnxFunctions, ErrorsInsideABodyNameTheInlinedPath) {
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y");
  b.FloatInit("w", {});  // a rank-0 Gemm input: libonnx would read past it (inference_guard.h)
  auto& inner = AddFunction(b.model(), "Inner", {"a", "w"}, {"c"});
  BodyNode(inner, "Gemm", {"a", "w"}, {"c"}).set_name("gemm");
  auto& outer = AddFunction(b.model(), "Outer", {"a", "w"}, {"c"});
  BodyNode(outer, "Inner", {"a", "w"}, {"c"}, "local").set_name("inner");
  Call(b, "Outer", {"x", "w"}, {"y"}, "/enc/Outer");
  Result<Graph> g = Load(b);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: node '/enc/Outer/inner/gemm' (Gemm): input 1 (B) has rank 0, want 2");
}

TEST(OnnxFunctions, OptionalInputsAndOutputs) {
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y1").Output("y2").Output("z3");
  b.FloatInit("hi", {});
  auto& f = AddFunction(b.model(), "ClipRelu", {"a", "lo", "hi"}, {"c", "d"});
  BodyNode(f, "Clip", {"a", "lo", "hi"}, {"c"});
  BodyNode(f, "Relu", {"a"}, {"d"});
  Call(b, "ClipRelu", {"x", "", "hi"}, {"y1"}, "one");  // lo omitted, d not used
  Call(b, "ClipRelu", {"x"}, {"y2", ""}, "two");        // lo and hi not given
  Call(b, "ClipRelu", {"x"}, {"", "z3"}, "three");      // only the second output
  Result<Graph> g = Load(b);
  ASSERT_TRUE(g.ok()) << g.message();
  const Node* one = Find(*g, "one/Clip_0");
  const Node* two = Find(*g, "two/Clip_0");
  const Node* three = Find(*g, "three/Relu_1");
  ASSERT_TRUE(one && two && three);
  EXPECT_EQ(one->inputs, (std::vector<std::string>{"x", "", "hi"}));
  EXPECT_EQ(two->inputs, (std::vector<std::string>{"x", "", ""}));
  EXPECT_EQ(Find(*g, "one/Relu_1")->outputs[0], "one/d");  // an output the call leaves out: internal
  EXPECT_EQ(three->outputs[0], "z3");
  EXPECT_EQ(Find(*g, "three/Clip_0")->outputs[0], "three/c");
  EXPECT_TRUE(g->unknown_shapes.empty());
  EXPECT_EQ(g->Tensor("y2")->dims, (std::vector<int64_t>{1, 4}));
}

TEST(OnnxFunctions, NestedFunctionsAreInlinedAndEveryInternalNameIsUnique) {
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y");
  auto& inner = AddFunction(b.model(), "Inner", {"a"}, {"c"});
  BodyNode(inner, "Relu", {"a"}, {"t"}).set_name("relu");
  BodyNode(inner, "Neg", {"t"}, {"c"}).set_name("neg");
  auto& outer = AddFunction(b.model(), "Outer", {"a"}, {"c"});
  BodyNode(outer, "Inner", {"a"}, {"t"}, "local").set_name("in1");
  BodyNode(outer, "Inner", {"t"}, {"c"}, "local").set_name("in2");
  Call(b, "Outer", {"x"}, {"h"}, "o1");
  Call(b, "Outer", {"h"}, {"o2/in1/t"}, "o2");  // a graph name the inliner would make: made unique
  b.Node("Identity", {"o2/in1/t"}, {"y"}, "id");
  Result<Graph> g = Load(b);
  ASSERT_TRUE(g.ok()) << g.message();
  ASSERT_EQ(g->nodes.size(), 9u);
  std::vector<std::string> names;
  for (const Node& n : g->nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"o1/in1/relu", "o1/in1/neg", "o1/in2/relu", "o1/in2/neg",
                                             "o2/in1/relu", "o2/in1/neg", "o2/in2/relu", "o2/in2/neg", "id"}));
  EXPECT_EQ(Find(*g, "o2/in1/neg")->outputs[0], "o2/t");
  EXPECT_EQ(Find(*g, "o2/in1/relu")->outputs[0], "o2/in1/t_2");
  EXPECT_EQ(Find(*g, "o2/in2/neg")->outputs[0], "o2/in1/t");
  EXPECT_EQ(g->Tensor("y")->dims, (std::vector<int64_t>{1, 4}));
}

TEST(OnnxFunctions, AFunctionCallingItselfIsRefusedNamingTheCycle) {
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y");
  auto& a = AddFunction(b.model(), "A", {"i"}, {"o"});
  BodyNode(a, "B", {"i"}, {"o"}, "local");
  auto& bb = AddFunction(b.model(), "B", {"i"}, {"o"});
  BodyNode(bb, "Relu", {"i"}, {"t"});
  BodyNode(bb, "A", {"t"}, {"o"}, "local");
  Call(b, "A", {"x"}, {"y"}, "call");
  LoadFailure why = LoadFailure::kNone;
  Result<Graph> g = Load(b, &why);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: function 'local::A' calls itself: local::A -> local::B -> local::A");
  EXPECT_EQ(why, LoadFailure::kInvalid);

  ModelBuilder self(17);
  self.Input("x", kFloat, {"batch", 4}).Output("y");
  BodyNode(AddFunction(self.model(), "S", {"i"}, {"o"}), "S", {"i"}, {"o"}, "local");
  Call(self, "S", {"x"}, {"y"}, "call");
  g = Load(self);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: function 'local::S' calls itself: local::S -> local::S");
}

// F0 calls F1 `calls` times, F1 calls F2 ..., F{levels-1} holds one Relu.
ModelBuilder Chain(int levels, int calls) {
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y");
  for (int k = 0; k < levels; ++k) {
    auto& f = AddFunction(b.model(), "F" + std::to_string(k), {"i"}, {"o"});
    if (k == levels - 1) {
      BodyNode(f, "Relu", {"i"}, {"o"});
      continue;
    }
    for (int c = 0; c < calls; ++c) {
      BodyNode(f, "F" + std::to_string(k + 1), {c == 0 ? "i" : "t" + std::to_string(c - 1)},
               {c == calls - 1 ? "o" : "t" + std::to_string(c)}, "local");
    }
  }
  Call(b, "F0", {"x"}, {"y"}, "call");
  return b;
}

TEST(OnnxFunctions, NestingAndTheInlinedNodeCountAreBoundedBeforeExpanding) {
  LoadFailure why = LoadFailure::kNone;
  Result<Graph> g = Load(Chain(32, 1), &why);  // 32 levels: the limit
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].name, "call/F1_0/F2_0/F3_0/F4_0/F5_0/F6_0/F7_0/F8_0/F9_0/F10_0/F11_0/F12_0/F13_0/F14_0/"
                              "F15_0/F16_0/F17_0/F18_0/F19_0/F20_0/F21_0/F22_0/F23_0/F24_0/F25_0/F26_0/F27_0/"
                              "F28_0/F29_0/F30_0/F31_0/Relu_0");
  g = Load(Chain(33, 1), &why);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: model-local functions nested deeper than 32 levels (local::F0 -> ... -> "
                         "local::F31 -> local::F32)");
  EXPECT_EQ(why, LoadFailure::kTooDeep);

  // Two calls at each of 30 levels: 2^29 nodes once inlined, refused at once.
  const auto start = std::chrono::steady_clock::now();
  g = Load(Chain(30, 2), &why);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: graph too large: more than 50000 nodes once its model-local functions are "
                         "inlined (gpucast's limit for one graph)");
  EXPECT_EQ(why, LoadFailure::kTooManyNodes);
  EXPECT_LT(secs, 1.0);

  // Within the limit the same shape inlines: 2^10 nodes.
  g = Load(Chain(11, 2));
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_EQ(g->nodes.size(), 1024u);
  LoadOptions small;
  small.limits.max_nodes = 1000;
  g = Load(Chain(11, 2), &why, small);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(why, LoadFailure::kTooManyNodes);
}

TEST(OnnxFunctions, TheBytesMadeWhileInliningAreBounded) {
  // A 1 MiB call name prefixes each of the 20 names the body makes: 20 MiB.
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y");
  auto& f = AddFunction(b.model(), "F", {"i"}, {"o"});
  for (int k = 0; k < 20; ++k) {
    BodyNode(f, "Relu", {k == 0 ? "i" : "t" + std::to_string(k - 1)}, {k == 19 ? "o" : "t" + std::to_string(k)});
  }
  Call(b, "F", {"x"}, {"y"}, std::string(1 << 20, 'n'));
  LoadFailure why = LoadFailure::kNone;
  Result<Graph> g = Load(b, &why);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: graph too large: more than 16777216 bytes once its model-local functions are "
                         "inlined (gpucast's limit for one graph)");
  EXPECT_EQ(why, LoadFailure::kTooLarge);
}

TEST(OnnxFunctions, AnotherVersionOfTheDefaultDomainIsRefusedUnlessEveryOpIsTheSame) {
  // Relu changed at opset 14: a function importing 13 in a model of 17 binds Relu-13.
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y");
  BodyNode(AddFunction(b.model(), "F", {"i"}, {"o"}, 13), "Relu", {"i"}, {"o"});
  Call(b, "F", {"x"}, {"y"}, "call");
  Result<Graph> g = Load(b);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: function 'local::F' imports opset 13 of the default ONNX domain but the model "
                         "imports 17, and op 'Relu' differs between them (Relu-13 in the function, Relu-14 in the "
                         "model); re-export with one opset");
  // At 15, Relu (14) and Gemm (13) are the model's: harmless, inlined.
  ModelBuilder ok(17);
  ok.Input("x", kFloat, {"batch", 4}).Output("y");
  BodyNode(AddFunction(ok.model(), "F", {"i"}, {"o"}, 15), "Relu", {"i"}, {"o"});
  Call(ok, "F", {"x"}, {"y"}, "call");
  g = Load(ok);
  ASSERT_TRUE(g.ok()) << g.message();
  EXPECT_EQ(g->Tensor("y")->dims, (std::vector<int64_t>{1, 4}));
  // Past the schemas this build knows, nothing can be shown: refused.
  ModelBuilder newer(18);
  newer.Input("x", kFloat, {"batch", 4}).Output("y");
  BodyNode(AddFunction(newer.model(), "F", {"i"}, {"o"}, 17), "Relu", {"i"}, {"o"});
  Call(newer, "F", {"x"}, {"y"}, "call");
  g = Load(newer);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.message().find("function 'local::F' imports opset 17 of the default ONNX domain but the model imports "
                             "18, and this build knows"),
            std::string::npos)
      << g.message();
}

TEST(OnnxFunctions, OpsetImportsAreCheckedOncePerNode) {
  // Found while writing tools/fuzz_functions.py (a hand-made probe): each of a function's imports was
  // checked against every node of its body, so 10,000 copies of one import
  // and 10,000 nodes (a 278 KB file) took 29 s. Now each node is checked once.
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y");
  auto& f = AddFunction(b.model(), "F", {"i"}, {"o"}, 16);  // Relu-14 at 16 and 17: accepted
  for (int k = 0; k < 20000; ++k) *f.add_opset_import() = f.opset_import(0);
  const int n = 5000;
  for (int k = 0; k < n; ++k) {
    BodyNode(f, "Relu", {k == 0 ? "i" : "t" + std::to_string(k - 1)}, {k == n - 1 ? "o" : "t" + std::to_string(k)});
  }
  Call(b, "F", {"x"}, {"y"}, "call");
  onnx::ModelProto m = b.model();
  const auto t0 = std::chrono::steady_clock::now();
  Result<InlineResult> r = InlineFunctions(&m, LoadLimits{});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(m.graph().node_size(), n);
  EXPECT_LT(secs, 5.0);  // linear: well under 1 s even under ASan; quadratic: minutes
  // Two versions of one domain in one function: refused.
  f.mutable_opset_import(3)->set_version(13);
  Result<Graph> g = Load(b);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: function 'local::F' imports the default ONNX domain twice, as opset 16 and 13");
}

TEST(OnnxFunctions, AttributeReferencesAreLookedUpOncePerReference) {
  // Found while writing tools/fuzz_functions.py (a hand-made probe): each ref_attr_name scanned all the
  // call's attributes, so 20,000 references against 20,000 attributes (an
  // 800 KB file) took 6 s, and max_entries' 200,000 attributes about 2 min.
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y");
  auto& f = AddFunction(b.model(), "F", {"i"}, {"o"});
  onnx::NodeProto& body = BodyNode(f, "LeakyRelu", {"i"}, {"o"});
  const int n = 20000;
  for (int k = 0; k < n; ++k) RefAttr(body, "b" + std::to_string(k), "r" + std::to_string(k));
  RefAttr(body, "alpha", "slope");
  onnx::NodeProto& c = Call(b, "F", {"x"}, {"y"}, "call");
  for (int k = 0; k < n; ++k) SetAttr(&c, "a" + std::to_string(k), 1.0f);
  SetAttr(&c, "slope", 0.25f);
  SetAttr(&c, "slope", 0.5f);  // the last of a name is taken
  onnx::ModelProto m = b.model();
  const auto t0 = std::chrono::steady_clock::now();
  Result<InlineResult> r = InlineFunctions(&m, LoadLimits{});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_LT(secs, 5.0);  // linear: well under 1 s even under ASan; quadratic: minutes
  ASSERT_EQ(m.graph().node_size(), 1);
  ASSERT_EQ(m.graph().node(0).attribute_size(), 1);  // the others: neither given nor defaulted
  EXPECT_EQ(m.graph().node(0).attribute(0).name(), "alpha");
  EXPECT_FLOAT_EQ(m.graph().node(0).attribute(0).f(), 0.5f);
}

TEST(OnnxFunctions, MalformedCallsAndBodiesAreErrorsNamingTheNode) {
  auto one = [](auto&& edit) {
    ModelBuilder b(17);
    b.Input("x", kFloat, {"batch", 4}).Output("y");
    auto& f = AddFunction(b.model(), "F", {"i"}, {"o"});
    edit(b, f);
    return Load(b);
  };
  Result<Graph> g = one([](ModelBuilder& b, onnx::FunctionProto& f) {
    BodyNode(f, "Add", {"i", "ghost"}, {"o"}).set_name("add");
    Call(b, "F", {"x"}, {"y"}, "call");
  });
  EXPECT_EQ(g.message(), "m.onnx: node 'call' (local::F), calling function 'local::F': body node 'add' (Add) reads "
                         "'ghost', which is neither an input of the function nor produced in its body");
  g = one([](ModelBuilder& b, onnx::FunctionProto& f) {
    BodyNode(f, "Relu", {"i"}, {"o"});
    Call(b, "F", {"x", "x"}, {"y"}, "call");
  });
  EXPECT_EQ(g.message(), "m.onnx: node 'call' (local::F), calling function 'local::F': 2 inputs, but the function "
                         "takes 1");
  g = one([](ModelBuilder& b, onnx::FunctionProto& f) {
    BodyNode(f, "Relu", {"i"}, {"t"});
    Call(b, "F", {"x"}, {"y"}, "call");
  });
  EXPECT_EQ(g.message(), "m.onnx: node 'call' (local::F), calling function 'local::F': function output 'o' is not "
                         "produced by its body");
  g = one([](ModelBuilder& b, onnx::FunctionProto& f) {
    BodyNode(f, "Relu", {"i"}, {"o"});
    *b.model().add_functions() = f;
    Call(b, "F", {"x"}, {"y"}, "call");
  });
  EXPECT_EQ(g.message(), "m.onnx: function 'local::F' is defined twice");
  // A function that passes its input through: the call becomes an Identity.
  g = one([](ModelBuilder& b, onnx::FunctionProto& f) {
    f.set_output(0, "i");
    Call(b, "F", {"x"}, {"y"}, "call");
  });
  ASSERT_TRUE(g.ok()) << g.message();
  ASSERT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].op_type, "Identity");
  EXPECT_EQ(g->Tensor("y")->dims, (std::vector<int64_t>{1, 4}));
}

TEST(OnnxFunctions, AGraphLeftWithoutNodesByEmptyBodiesIsRefused) {
  // Found while writing tools/fuzz_functions.py (a hand-made probe): the only call's function has an empty
  // body, so nothing is left to cost; it was analysed as a complete graph of
  // zero cost, while a graph without nodes is refused.
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("x");
  AddFunction(b.model(), "Empty", {}, {});
  Call(b, "Empty", {}, {}, "call");
  Result<Graph> g = Load(b);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: graph has no nodes once its model-local functions are inlined");
}

TEST(OnnxFunctions, AFunctionListingAnOutputTwiceIsAnErrorNamingIt) {
  // Found while writing tools/fuzz_functions.py (a hand-made probe): the second listing took the first's
  // binding, so the call's first output was never produced and the error
  // named the graph output instead of the function.
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y").Output("z");
  BodyNode(AddFunction(b.model(), "F", {"i"}, {"o", "o"}), "Relu", {"i"}, {"o"});
  Call(b, "F", {"x"}, {"y", "z"}, "call");
  Result<Graph> g = Load(b);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: node 'call' (local::F), calling function 'local::F': the function lists output "
                         "'o' twice");
}

TEST(OnnxFunctions, OverloadsOfOneNameAreTold) {
  // NodeProto.overload (8) and FunctionProto.overload (13), IR 10: unknown fields to libonnx 1.12.
  auto overload = [](google::protobuf::Message& m, int field, const std::string& v) {
    m.GetReflection()->MutableUnknownFields(&m)->AddLengthDelimited(field, v);
  };
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y");
  auto& relu = AddFunction(b.model(), "F", {"i"}, {"o"});
  BodyNode(relu, "Relu", {"i"}, {"o"});
  overload(relu, 13, "relu");
  auto& neg = AddFunction(b.model(), "F", {"i"}, {"o"});
  BodyNode(neg, "Neg", {"i"}, {"o"});
  overload(neg, 13, "neg");
  overload(Call(b, "F", {"x"}, {"t"}, "a"), 8, "neg");
  overload(Call(b, "F", {"t"}, {"y"}, "b"), 8, "relu");
  Result<Graph> g = Load(b);
  ASSERT_TRUE(g.ok()) << g.message();
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].op_type, "Neg");
  EXPECT_EQ(g->nodes[1].op_type, "Relu");
  *b.model().add_functions() = neg;  // a second overload "neg"
  g = Load(b);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.message(), "m.onnx: function 'local::F' (overload 'neg') is defined twice");
}

// Overloads are bytes libonnx 1.12 never checks (unknown fields), and names are
// any UTF-8, control bytes included: an overload with 0xff and ESC, or a name
// with ESC, was echoed raw into the CLI's error message (a terminal runs the
// escape sequence). Each such byte is shown as \xNN, as the service's log lines
// show client text (service/http_util.h ForLog); valid UTF-8 stays as it is.
TEST(OnnxFunctions, NamesAndOverloadsInMessagesCarryNoRawControlOrInvalidByte) {
  auto clean = [](const std::string& m) {
    for (unsigned char c : m) {
      if (c < 0x20 || c >= 0x7F) return false;
    }
    return true;
  };
  auto overload = [](google::protobuf::Message& m, int field, const std::string& v) {
    m.GetReflection()->MutableUnknownFields(&m)->AddLengthDelimited(field, v);
  };
  const std::string esc = "\x1b[31m", bad = "\xff\x1b";
  {  // the same overload twice
    ModelBuilder b(17);
    b.Input("x", kFloat, {"batch", 4}).Output("y");
    auto& f = AddFunction(b.model(), "F" + esc, {"i"}, {"o"});
    BodyNode(f, "Relu", {"i"}, {"o"});
    overload(f, 13, "o" + bad);
    *b.model().add_functions() = f;
    overload(Call(b, "F" + esc, {"x"}, {"y"}, "c"), 8, "o" + bad);
    Result<Graph> g = Load(b);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.message(), "m.onnx: function 'local::F\\x1B[31m' (overload 'o\\xFF\\x1B') is defined twice");
    EXPECT_TRUE(clean(g.message())) << g.message();
  }
  {  // a body node reading a value nobody produces: the call's, the body node's and the value's names
    ModelBuilder b(17);
    b.Input("x", kFloat, {"batch", 4}).Output("y");
    auto& f = AddFunction(b.model(), "F", {"i"}, {"o"});
    BodyNode(f, "Add", {"i", "g" + esc}, {"o"}).set_name("add" + esc);
    overload(f, 13, bad);
    overload(Call(b, "F", {"x"}, {"y"}, "call" + esc), 8, bad);
    Result<Graph> g = Load(b);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.message(), "m.onnx: node 'call\\x1B[31m' (local::F), calling function 'local::F': body node "
                           "'add\\x1B[31m' (Add) reads 'g\\x1B[31m', which is neither an input of the function nor "
                           "produced in its body");
    EXPECT_TRUE(clean(g.message())) << g.message();
  }
  {  // a function calling itself through an overload; a backslash is escaped too (not taken for an escape)
    ModelBuilder b(17);
    b.Input("x", kFloat, {"batch", 4}).Output("y");
    auto& f = AddFunction(b.model(), "F\\" + esc, {"i"}, {"o"});
    overload(f, 13, bad);
    overload(BodyNode(f, "F\\" + esc, {"i"}, {"o"}, "local"), 8, bad);
    overload(Call(b, "F\\" + esc, {"x"}, {"y"}, "c"), 8, bad);
    Result<Graph> g = Load(b);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.message(), "m.onnx: function 'local::F\\x5C\\x1B[31m' calls itself: local::F\\x5C\\x1B[31m -> "
                           "local::F\\x5C\\x1B[31m");
    EXPECT_TRUE(clean(g.message())) << g.message();
  }
  {  // valid UTF-8 beyond ASCII is kept
    ModelBuilder b(17);
    b.Input("x", kFloat, {"batch", 4}).Output("y");
    BodyNode(AddFunction(b.model(), "F\xc3\xa9", {"i"}, {"o"}), "Relu", {"i"}, {"t"});
    Call(b, "F\xc3\xa9", {"x"}, {"y"}, "c");
    Result<Graph> g = Load(b);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.message(), "m.onnx: node 'c' (local::F\xc3\xa9), calling function 'local::F\xc3\xa9': function "
                           "output 'o' is not produced by its body");
  }
}

TEST(OnnxFunctions, ANodeOfACustomDomainWithoutAFunctionIsStillUnsupported) {
  ModelBuilder b(17);
  b.Input("x", kFloat, {"batch", 4}).Output("y");
  BodyNode(AddFunction(b.model(), "F", {"i"}, {"o"}), "Relu", {"i"}, {"o"});
  Call(b, "F", {"x"}, {"t"}, "call");
  Call(b, "Missing", {"t"}, {"y"}, "missing");
  Result<Graph> g = Load(b);
  ASSERT_TRUE(g.ok()) << g.message();
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[1].name, "missing");
  EXPECT_EQ(g->nodes[1].domain, "local");
  ASSERT_EQ(g->warnings.size(), 1u);
  EXPECT_EQ(g->warnings[0], "m.onnx: no ONNX schema for op 'local::Missing' (1 node); its outputs' shapes may be "
                            "unknown");
  Result<CostReport> r = AnalyzeCost(*g, {});
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->unsupported.size(), 1u);
  EXPECT_EQ(r->unsupported[0].op_type, "local::Missing");
  EXPECT_EQ(r->UncostedNodes(), 1);
}

TEST(OnnxFunctions, AttributeDefaultsAreReadFromTheUnknownField) {
  onnx::FunctionProto f;
  AddDefault(f, "alpha", 0.25f);
  AddDefault(f, "beta", 2.0f);
  Result<std::vector<onnx::AttributeProto>> d = FunctionAttributeDefaults(f);
  ASSERT_TRUE(d.ok()) << d.message();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].name(), "alpha");
  EXPECT_FLOAT_EQ((*d)[1].f(), 2.0f);
  f.GetReflection()->MutableUnknownFields(&f)->AddLengthDelimited(11, "\xff\xff");
  EXPECT_EQ(FunctionAttributeDefaults(f).message(), "attribute default 2 is not an AttributeProto");
}

}  // namespace
}  // namespace gpucast
