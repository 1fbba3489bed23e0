// gpucast's own graph IR: what the cost layer needs from an ONNX model, with
// every shape resolved for one batch size. It holds no weight values and does
// not depend on the ONNX headers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpucast {

// ONNX TensorProto.DataType numbering (FLOAT=1, INT64=7, FLOAT16=10, ...).
using ElemType = int32_t;

// Bytes per element of an ONNX element type; 0 for unknown/strings.
int64_t ElemTypeBytes(ElemType t);

// Whether an ONNX element type is floating point (FLOAT, FLOAT16, DOUBLE, BFLOAT16).
bool IsFloatElemType(ElemType t);

// Whether an op's domain is ONNX's default one ("" or "ai.onnx").
inline bool IsDefaultDomain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

// "[2,3,224,224]": dims as messages and the analyze table print them.
std::string DimsString(const std::vector<int64_t>& dims);

// The ONNX model metadata entry (ModelProto.metadata_props) that lists the model's buffers, one
// name per line (tools/gpucast-export writes it from the module's named_buffers(); a weight-free
// export makes buffers graph inputs exactly like parameters).
inline constexpr std::string_view kBuffersMetadataKey = "gpucast.buffers";
// The entry that lists the model's frozen parameters (requires_grad off: a fine-tuned backbone,
// the base weights under LoRA adapters), one name per line, as gpucast-export writes them.
inline constexpr std::string_view kFrozenMetadataKey = "gpucast.frozen";
// The entry that lists the embedding tables trained with sparse gradients (nn.Embedding or
// nn.EmbeddingBag with sparse=True: a step's gradient holds only the rows it looked up), one name
// per line, as gpucast-export writes them.
inline constexpr std::string_view kSparseGradMetadataKey = "gpucast.sparse_grad";

struct TensorInfo {
  std::string name;
  ElemType elem_type = 0;
  // Concrete dims, all >= 0, when shape_known. Scalars have rank 0.
  std::vector<int64_t> dims;
  bool shape_known = false;
  // A trained parameter: a float initializer, a float graph input that is not
  // a data input (weight-free exports), or an Identity/Cast of one.
  bool is_param = false;
  // A parameter tensor that is one of the model's buffers (a registered tensor that is not an
  // nn.Parameter: normalization constants, a positional-encoding table, a causal mask), named in
  // the model's metadata entry kBuffersMetadataKey: resident like a weight, never trained (no
  // gradient, not counted in params).
  bool is_buffer = false;
  // A parameter the job does not train (requires_grad off), named in the metadata entry
  // kFrozenMetadataKey: a parameter of the model (counted in params) that gets no gradient and no
  // optimizer state, and computes no gradient for what only it feeds.
  bool is_frozen = false;
  // A trained parameter whose gradient is sparse (an embedding table with sparse=True), named in
  // the metadata entry kSparseGradMetadataKey, or an Identity/Cast copy of one: the table's name
  // (the named parameter itself for the table). Where only lookups read the table, its gradient
  // is the looked-up rows, not the table (cost.h NodeCost::sparse_grad_bytes). "" otherwise.
  std::string sparse_table;
  // For a parameter the exporter wrote twice (param_ties.h: the transpose of
  // a tied matrix, constant-folded): the parameter it is a copy of, counted
  // in its place. "" otherwise.
  std::string tied_to;
  // An Identity output that is a parameter of its own (param_ties.h: PyTorch's
  // eval-mode export merged parameters of equal value into one): counted as
  // its own parameter, not as the one it was merged into.
  bool own_param = false;
  // A graph input that carries the sample data (batch dimension substituted).
  bool is_data_input = false;
  // The output of a NonZero of data (a boolean mask's selection, pattern_fills.h
  // SelectingNonZeroOutput): sized as selecting every element, an upper bound.
  // The cost layer marks what is computed from it (NodeCost::selection_bound).
  bool selection_bound = false;
  // Value of small integer tensors (shape constants, folded shape
  // sub-graphs); empty when unknown or not an integer tensor.
  std::optional<std::vector<int64_t>> int_value;
  // Value of small real (FLOAT / DOUBLE) tensors the loader folded (constants:
  // Dropout's ratio, scalar factors); empty when unknown or not real.
  std::optional<std::vector<double>> real_value;

  // Number of elements; nullopt if the shape is unknown or overflows int64.
  std::optional<int64_t> NumElements() const;
};

// One attribute of a node. Only the kinds the cost rules need are kept.
struct Attribute {
  std::optional<int64_t> i;
  std::optional<double> f;
  std::optional<std::string> s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

struct Node {
  std::string name;      // ONNX node name, or "<op_type>_<index>" if empty
  std::string op_type;
  std::string domain;    // "" for the default ai.onnx domain
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attrs;

  std::optional<int64_t> AttrInt(const std::string& key) const;
  std::vector<int64_t> AttrInts(const std::string& key) const;
  std::optional<double> AttrFloat(const std::string& key) const;
  std::optional<std::string> AttrString(const std::string& key) const;
};

struct Graph {
  std::string path;             // file the graph was loaded from
  int64_t opset = 0;            // default-domain opset
  int64_t batch = 0;            // batch size substituted into the data inputs
  std::vector<Node> nodes;      // topological order
  std::map<std::string, TensorInfo> tensors;  // every named value
  std::vector<std::string> data_inputs;       // names, graph input order
  std::vector<std::string> outputs;           // graph output names
  // Names of tensors consumed or produced by a node whose shape stayed unknown.
  std::vector<std::string> unknown_shapes;
  // Things the loader noticed but did not treat as errors: opset newer than
  // the schemas known, ops without a schema (custom domains), If/Loop nodes
  // whose subgraphs were not analysed, shape-inference exceptions. Each names
  // the file and the node or op.
  std::vector<std::string> warnings;

  // REQUIRES: name is "" or a key of tensors. nullptr for "" (omitted input).
  const TensorInfo* Tensor(const std::string& name) const;
};

}  // namespace gpucast
