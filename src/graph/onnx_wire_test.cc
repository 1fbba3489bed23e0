#include "graph/onnx_wire.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <gtest/gtest.h>

#include "graph/test_models.h"

namespace gpucast {
namespace {

using testing::ModelBuilder;
using testing::SetAttr;

onnx::ModelProto Filtered(const ModelBuilder& b) {
  auto bytes = FilterModelBytesWithoutWeights(b.Bytes());
  EXPECT_TRUE(bytes.ok()) << bytes.message();
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(*bytes));
  return m;
}

TEST(OnnxWire, DropsLargePayloadsKeepsEverythingElse) {
  ModelBuilder b(15);
  b.model().set_producer_name("torch");
  b.model().set_doc_string("doc");
  b.Input("x", testing::kFloat, {std::string("N"), 4});
  b.FloatInit("big", {2048});   // 8192 bytes raw_data: dropped
  b.FloatInit("small", {16});   // 64 bytes: kept
  b.Int64Init("shape", {2}, {-1, 4});
  auto* packed = b.model().mutable_graph()->add_initializer();  // 1000 int64 = 6000 packed bytes
  packed->set_name("ids");
  packed->set_data_type(testing::kInt64);
  packed->add_dims(1000);
  for (int i = 0; i < 1000; ++i) packed->add_int64_data((int64_t{1} << 40) + i);
  auto& c = b.Node("Constant", {}, {"k"}, "const");
  auto t = testing::Int64Tensor({600}, std::vector<int64_t>(600, 1000));  // packed ~1200 bytes: kept
  SetAttr(&c, "value", t);
  b.Node("Reshape", {"x", "shape"}, {"y"});
  b.Output("y");

  onnx::ModelProto m = Filtered(b);
  EXPECT_EQ(m.producer_name(), "torch");
  EXPECT_EQ(m.doc_string(), "doc");
  EXPECT_EQ(m.opset_import(0).version(), 15);
  const auto& g = m.graph();
  ASSERT_EQ(g.initializer_size(), 4);
  EXPECT_EQ(g.initializer(0).name(), "big");
  EXPECT_EQ(g.initializer(0).dims(0), 2048);
  EXPECT_FALSE(g.initializer(0).has_raw_data());
  EXPECT_EQ(g.initializer(1).raw_data().size(), 64u);
  EXPECT_EQ(g.initializer(2).int64_data_size(), 2);
  EXPECT_EQ(g.initializer(2).int64_data(0), -1);
  EXPECT_EQ(g.initializer(3).int64_data_size(), 0);  // 6000 bytes > 4096: dropped
  EXPECT_EQ(g.initializer(3).dims(0), 1000);
  EXPECT_EQ(g.node(0).attribute(0).t().int64_data_size(), 600);
  EXPECT_EQ(g.node_size(), 2);
  EXPECT_EQ(g.input(0).type().tensor_type().shape().dim(0).dim_param(), "N");
}

TEST(OnnxWire, FunctionBodiesLoseLargePayloadsAndCountTheirNodes) {
  ModelBuilder b(17);
  b.Input("x", testing::kFloat, {std::string("N"), 4});
  b.Node("F", {"x"}, {"y"}, "call").set_domain("local");
  b.Output("y");
  auto* f = b.model().add_functions();
  f->set_name("F");
  f->set_domain("local");
  f->add_input("i");
  f->add_output("o");
  auto* c = f->add_node();
  c->set_op_type("Constant");
  c->add_output("k");
  onnx::TensorProto big;
  big.set_data_type(testing::kFloat);
  big.add_dims(2048);
  big.set_raw_data(std::string(8192, '\0'));  // dropped
  SetAttr(c, "value", big);
  auto* add = f->add_node();
  add->set_op_type("Add");
  add->add_input("i");
  add->add_input("k");
  add->add_output("o");
  onnx::AttributeProto def;  // attribute_proto (IR 9), an unknown field to libonnx 1.12: kept
  def.set_name("alpha");
  def.set_type(onnx::AttributeProto::FLOAT);
  def.set_f(0.5f);
  f->GetReflection()->MutableUnknownFields(f)->AddLengthDelimited(11, def.SerializeAsString());

  onnx::ModelProto m = Filtered(b);
  ASSERT_EQ(m.functions_size(), 1);
  const auto& fn = m.functions(0);
  EXPECT_EQ(fn.name(), "F");
  ASSERT_EQ(fn.node_size(), 2);
  EXPECT_EQ(fn.node(0).attribute(0).t().dims(0), 2048);
  EXPECT_FALSE(fn.node(0).attribute(0).t().has_raw_data());
  EXPECT_EQ(fn.node(1).input(1), "k");
  ASSERT_EQ(fn.GetReflection()->GetUnknownFields(fn).field_count(), 1);
  EXPECT_EQ(fn.GetReflection()->GetUnknownFields(fn).field(0).length_delimited(), def.SerializeAsString());

  WireLimits limits;
  limits.max_nodes = 2;  // the call and the function's two nodes
  LoadFailure why = LoadFailure::kNone;
  auto over = FilterModelBytesWithoutWeights(b.Bytes(), limits, &why);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(why, LoadFailure::kTooManyNodes);
}

TEST(OnnxWire, UnpackedElementsCountTowardsTheLimit) {
  // Hand-written unpacked int64_data (field 7, varint) elements: 3000 x 3 bytes.
  std::string tensor;
  tensor += std::string("\x08\xb8\x17", 3);  // dims: 3000
  tensor += std::string("\x10\x07", 2);      // data_type INT64
  for (int i = 0; i < 3000; ++i) tensor += std::string("\x38\x7f", 2);  // int64_data 127
  std::string graph = "\x2a" + std::string(1, static_cast<char>(0x80 | (tensor.size() & 0x7f))) +
                      std::string(1, static_cast<char>(tensor.size() >> 7)) + tensor;
  std::string model = "\x3a" + std::string(1, static_cast<char>(0x80 | (graph.size() & 0x7f))) +
                      std::string(1, static_cast<char>(graph.size() >> 7)) + graph;
  ASSERT_LT(graph.size(), 16384u);
  auto bytes = FilterModelBytesWithoutWeights(model);
  ASSERT_TRUE(bytes.ok()) << bytes.message();
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(*bytes));
  EXPECT_EQ(m.graph().initializer(0).dims(0), 3000);
  EXPECT_EQ(m.graph().initializer(0).int64_data_size(), 0);
}

TEST(OnnxWire, Errors) {
  EXPECT_EQ(FilterModelBytesWithoutWeights("").message(), "empty file");
  // graph field claiming 100 bytes with 2 present.
  EXPECT_EQ(FilterModelBytesWithoutWeights(std::string("\x3a\x64\x0a\x00", 4)).message(), "truncated file");
  // wire type 7 does not exist.
  EXPECT_EQ(FilterModelBytesWithoutWeights(std::string("\x0f", 1)).message(),
            "not an ONNX model (malformed protobuf)");
  // Truncated varint.
  EXPECT_EQ(FilterModelBytesWithoutWeights(std::string("\x08\xff", 2)).message(), "truncated file");
  EXPECT_EQ(ReadModelBytesWithoutWeights("/nonexistent.onnx").message(),
            "cannot open: No such file or directory");
}

// A PyTorch file where an ONNX graph is expected says what it is and how to
// export it, from a file (fd path) and from bytes alike.
TEST(OnnxWire, PyTorchFilesGetAnExportHint) {
  const std::string hint =
      "; gpucast reads the ONNX graph of a model: export it with tools/gpucast-export (a TorchScript or pickled "
      "module file, or MODULE:FACTORY for the code that builds the model) or torch.onnx.export in training mode "
      "(docs/models.md)";
  // torch.save since PyTorch 1.6 and torch.jit.save: a zip archive (local file header).
  const std::string zip = std::string("PK\x03\x04\x00\x00\x08\x08", 8) + "archive/data.pkl";
  // torch.save(..., _use_new_zipfile_serialization=False): pickle protocol 2, magic number first.
  const std::string pickle = std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15);
  const std::string zip_msg =
      "not an ONNX model but a zip archive (a PyTorch torch.save checkpoint or TorchScript module, .pt/.pth)" + hint;
  const std::string pickle_msg =
      "not an ONNX model but a Python pickle (a PyTorch torch.save file in the legacy format, .pt/.pth/.pkl)" + hint;
  EXPECT_EQ(FilterModelBytesWithoutWeights(zip).message(), zip_msg);
  EXPECT_EQ(FilterModelBytesWithoutWeights(pickle).message(), pickle_msg);
  const std::string path = testing::TempPath("model.pt");
  ASSERT_TRUE(testing::WriteFile(path, zip));
  EXPECT_EQ(ReadModelBytesWithoutWeights(path).message(), zip_msg);
  // Near misses stay protobuf errors.
  EXPECT_EQ(FilterModelBytesWithoutWeights(std::string("PK\x05\x06", 4)).message().find("PyTorch"),
            std::string::npos);
  EXPECT_EQ(FilterModelBytesWithoutWeights(std::string("\x80\x07", 2)).message().find("PyTorch"),
            std::string::npos);
}

// A FIFO without a writer would block a plain open forever; a device never ends.
TEST(OnnxWire, NonRegularFilesAreRefusedWithoutBlocking) {
  char dir[] = "/tmp/gpucast-onnx-wire.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/model.onnx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadModelBytesWithoutWeights(fifo).message(), "not a regular file");
  EXPECT_EQ(ReadModelBytesWithoutWeights("/dev/zero").message(), "not a regular file");
  EXPECT_EQ(ReadModelBytesWithoutWeights(dir).message(), "not a regular file");
  ::unlink(fifo.c_str());
  ::rmdir(dir);
}

TEST(OnnxWire, DeeplyNestedSubgraphsAreRejected) {
  onnx::GraphProto inner;
  for (int depth = 0; depth < 40; ++depth) {
    onnx::GraphProto outer;
    auto* n = outer.add_node();
    n->set_op_type("If");
    auto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = inner;
    inner = outer;
  }
  onnx::ModelProto m;
  *m.mutable_graph() = inner;
  EXPECT_EQ(FilterModelBytesWithoutWeights(m.SerializeAsString()).message(),
            "subgraphs nested deeper than 32 levels");
}

}  // namespace
}  // namespace gpucast
