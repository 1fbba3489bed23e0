// THE table of what each op keeps for its backward pass, from PyTorch's
// autograd formulas (tools/autograd/derivatives.yaml: the `self`, `other`,
// `result` a derivative reads) and torch.autocast's op lists (CUDA "ops that
// can autocast to float16 / float32", PyTorch AMP docs). One row per op of the
// cost rule table; an op without a row would have no memory rule
// (cost_rules_test checks that every cost rule has one). docs/cost-rules.md.
#include "cost/saved_rules.h"

#include <algorithm>
#include <map>

#include "cost/rules.h"

namespace gpucast {
namespace {

constexpr uint32_t kI0 = 1, kI1 = 2, kI01 = 3;  // inputs kept
constexpr uint32_t kO0 = 1;                     // output 0 kept
constexpr AmpType kHalf = AmpType::kHalf, kFloat = AmpType::kFloat, kPromote = AmpType::kPromote;
constexpr uint32_t kP = kSavedPartner;

std::vector<SavedRule> MakeTable() {
  return {
      // Products keep each operand for the other's gradient (partner): Conv its input for dW,
      // matmul the operands whose partner needs a gradient; cuDNN RNNs their input, output and a reserve space of 4 gates + the cell
      // (LSTM), 3 gates + the hidden candidate (GRU) or the pre-activation (RNN) per output element.
      {"Conv", kI01 | kP, 0, 0, 0, kHalf},
      {"ConvTranspose", kI01 | kP, 0, 0, 0, kHalf},
      // torchvision's deform_conv2d keeps X, offset and mask; its autocast wrapper runs it in fp32.
      {"DeformConv", kI0 | 4 | 16, 0, 0, 0, kFloat},
      {"Gemm", kI01 | kP, 0, 0, 0, kHalf},
      {"MatMul", kI01 | kP, 0, 0, 0, kHalf},
      {"LSTM", kI0, kO0, 5, 0, kHalf},
      {"GRU", kI0, kO0, 4, 0, kHalf},
      {"RNN", kI0, kO0, 1, 0, kHalf},
      {"Einsum", kI01 | kP, 0, 0, 0, kHalf},  // as matmul (einsum runs bmm)
      // Attention (opset 23) as torch's scaled_dot_product_attention (flash/memory-efficient
      // kernels): Q, K, V and the output (its logsumexp, one per row, not counted); fp16.
      {"Attention", kI01 | 4, kO0, 0, 0, kHalf},
      // Activations: the input or the result, as the derivative reads it.
      {"Relu", 0, kO0, 0, 0, kPromote},
      {"LeakyRelu", kI0, 0, 0, 0, kPromote},
      {"PRelu", kI01, 0, 0, 0, kPromote},
      {"ThresholdedRelu", kI0, 0, 0, 0, kPromote},
      {"Sigmoid", 0, kO0, 0, 0, kPromote},
      {"Tanh", 0, kO0, 0, 0, kPromote},
      {"Erf", kI0, 0, 0, 0, kPromote},
      {"Gelu", kI0, 0, 0, 0, kPromote},
      {"Softmax", 0, kO0, 0, 0, kFloat},
      {"LogSoftmax", 0, kO0, 0, 0, kFloat},
      {"Clip", kI0, 0, 0, 0, kPromote},
      {"HardSigmoid", kI0, 0, 0, 0, kPromote},
      {"HardSwish", kI0, 0, 0, 0, kPromote},
      {"Elu", kI0, 0, 0, 0, kPromote},
      {"Celu", kI0, 0, 0, 0, kPromote},
      {"Selu", kI0, 0, 0, 0, kPromote},
      {"Softplus", kI0, 0, 0, 0, kFloat},
      {"Softsign", kI0, 0, 0, 0, kPromote},
      {"Mish", kI0, 0, 0, 0, kPromote},
      {"RotaryEmbedding", 0, 0, 0, 0, kPromote},  // linear in X: its backward reads only cos/sin
      {"AffineGrid", 0, 0, 0, 0, kPromote},       // linear in theta: dθ reads the base grid
      {"Shrink", kI0, 0, 0, 0, kPromote},
      {"Hardmax", 0, 0, 0, 0, kPromote},
      // Losses: the log-probabilities (as large as the scores) and the labels; autocast fp32.
      {"SoftmaxCrossEntropyLoss", kI01, 0, 0, 0, kFloat},
      {"NegativeLogLikelihoodLoss", kI01, 0, 0, 0, kFloat},
      // Elementwise: add/sub/neg need nothing; products and quotients their operands (partner:
      // x / const keeps nothing); pow(x, p) its base.
      {"Add", 0, 0, 0, 0, kPromote},
      {"Sub", 0, 0, 0, 0, kPromote},
      {"Mul", kI01 | kP, 0, 0, 0, kPromote},
      {"Div", kI01 | kP, 0, 0, 0, kPromote},
      {"Pow", kI0, 0, 0, 0, kFloat},
      {"Sqrt", 0, kO0, 0, 0, kPromote},
      {"Reciprocal", 0, kO0, 0, 0, kFloat},
      {"Exp", 0, kO0, 0, 0, kFloat},
      {"Log", kI0, 0, 0, 0, kFloat},
      {"Neg", 0, 0, 0, 0, kPromote},
      {"Abs", kI0, 0, 0, 0, kPromote},
      {"Sin", kI0, 0, 0, 0, kPromote},
      {"Cos", kI0, 0, 0, 0, kPromote},
      // Trigonometric and hyperbolic: tan its result, the others their input; autocast runs
      // tan, asin, acos, sinh and cosh in fp32.
      {"Tan", 0, kO0, 0, 0, kFloat},
      {"Asin", kI0, 0, 0, 0, kFloat},
      {"Acos", kI0, 0, 0, 0, kFloat},
      {"Atan", kI0, 0, 0, 0, kPromote},
      {"Sinh", kI0, 0, 0, 0, kFloat},
      {"Cosh", kI0, 0, 0, 0, kFloat},
      {"Asinh", kI0, 0, 0, 0, kPromote},
      {"Acosh", kI0, 0, 0, 0, kPromote},
      {"Atanh", kI0, 0, 0, 0, kPromote},
      {"Sum", 0, 0, 0, 0, kPromote},
      {"Mean", 0, 0, 0, 0, kPromote},
      {"Max", kI01, 0, 0, 0, kPromote},
      {"Min", kI01, 0, 0, 0, kPromote},
      {"Sign", 0, 0, 0, 0, kPromote},
      {"Floor", 0, 0, 0, 0, kPromote},
      {"Ceil", 0, 0, 0, 0, kPromote},
      {"Round", 0, 0, 0, 0, kPromote},
      {"Mod", 0, 0, 0, 0, kPromote},
      {"Equal", 0, 0, 0, 0, kPromote},
      {"Less", 0, 0, 0, 0, kPromote},
      {"LessOrEqual", 0, 0, 0, 0, kPromote},
      {"Greater", 0, 0, 0, 0, kPromote},
      {"GreaterOrEqual", 0, 0, 0, 0, kPromote},
      {"Not", 0, 0, 0, 0, kPromote},
      {"And", 0, 0, 0, 0, kPromote},
      {"BitwiseAnd", 0, 0, 0, 0, kPromote},
      {"BitwiseOr", 0, 0, 0, 0, kPromote},
      {"BitwiseXor", 0, 0, 0, 0, kPromote},
      {"BitwiseNot", 0, 0, 0, 0, kPromote},
      {"Col2Im", 0, 0, 0, 0, kPromote},
      {"CenterCropPad", 0, 0, 0, 0, kPromote},
      {"Or", 0, 0, 0, 0, kPromote},
      {"Xor", 0, 0, 0, 0, kPromote},
      {"IsNaN", 0, 0, 0, 0, kPromote},
      {"IsInf", 0, 0, 0, 0, kPromote},
      {"Dropout", 0, 0, 0, 1, kPromote},  // the bool mask, 1 byte per element
      // Random draws, selection: no backward (TopK keeps its indices for the scatter).
      {"RandomUniform", 0, 0, 0, 0, kPromote},
      {"RandomUniformLike", 0, 0, 0, 0, kPromote},
      {"RandomNormal", 0, 0, 0, 0, kPromote},
      {"RandomNormalLike", 0, 0, 0, 0, kPromote},
      {"Bernoulli", 0, 0, 0, 0, kPromote},
      {"Multinomial", 0, 0, 0, 0, kPromote},
      {"TopK", 0, 2, 0, 0, kPromote},
      {"NonZero", 0, 0, 0, 0, kPromote},
      {"NonMaxSuppression", 0, 0, 0, 0, kPromote},
      // Resampling: Resize/Upsample need only the sizes; grid_sampler its input and grid.
      {"Resize", 0, 0, 0, 0, kPromote},
      {"Upsample", 0, 0, 0, 0, kPromote},
      {"GridSample", kI01, 0, 0, 0, kPromote},
      // Reductions: sum/mean need only the shape; min/max/prod/norms input and result.
      {"ReduceMean", 0, 0, 0, 0, kPromote},
      {"ReduceSum", 0, 0, 0, 0, kFloat},
      {"ReduceMin", kI0, kO0, 0, 0, kPromote},
      {"ReduceProd", kI0, kO0, 0, 0, kFloat},
      {"ReduceL1", kI0, 0, 0, 0, kFloat},
      {"ReduceL2", kI0, kO0, 0, 0, kFloat},
      {"ReduceSumSquare", kI0, 0, 0, 0, kFloat},
      {"ReduceLogSumExp", kI0, kO0, 0, 0, kFloat},
      {"ReduceLogSum", 0, kO0, 0, 0, kFloat},
      {"ArgMax", 0, 0, 0, 0, kPromote},
      {"ArgMin", 0, 0, 0, 0, kPromote},
      {"CumSum", 0, 0, 0, 0, kFloat},
      // Normalisation saves its input and fp32 statistics per group (NormGroups): native_layer_norm
      // and native_group_norm their mean and rstd, cuDNN batch norm save_mean and save_invstd (per
      // channel; instance norm runs it on N x C channels), torch's fused rms_norm its rstd; autocast
      // runs layer and group norm in fp32, batch and instance norm in the input type.
      {"BatchNormalization", kI0, 0, 0, 0, kPromote, 2},
      {"LayerNormalization", kI0, 0, 0, 0, kFloat, 2},
      {"InstanceNormalization", kI0, 0, 0, 0, kPromote, 2},
      {"GroupNormalization", kI0, 0, 0, 0, kFloat, 2},
      {"RMSNormalization", kI0, 0, 0, 0, kFloat, 1},
      {"MeanVarianceNormalization", kI0, 0, 0, 0, kPromote},
      {"LpNormalization", kI0, kO0, 0, 0, kFloat},  // F.normalize: input and result; fp32 list
      {"LRN", kI0, kO0, 1, 0, kPromote},            // input, output and the scale s
      // Pooling: max pooling its input and int64 indices; average pooling its input (shape).
      {"MaxPool", kI0, 0, 0, 8, kPromote},
      {"AveragePool", kI0, 0, 0, 0, kPromote},
      {"GlobalAveragePool", kI0, 0, 0, 0, kPromote},
      {"GlobalMaxPool", kI0, 0, 0, 8, kPromote},
      {"ReduceMax", kI0, kO0, 0, 0, kPromote},
      {"RoiAlign", kI1, 0, 0, 0, kPromote},  // the rois
      // Gather (embedding or activation): the indices.
      {"Gather", kI1, 0, 0, 0, kPromote},
      // EmbeddingBag (sum, mean): the indices and the per-sample weights (input 3, when there are
      // any: the table's gradient reads them); torch's backward also reads each lookup's bag, as
      // many int64 again, and the offsets: not counted. Mode max: the indices and max_indices, one
      // int64 per output element (which row held each maximum).
      {"EmbeddingBag", kI1 | 8, 0, 0, 0, kPromote},
      {"EmbeddingBagMax", kI1, 0, 0, 8, kPromote},
      // Views, metadata and copies: nothing (their backward is a view, a scatter or a
      // transpose of the gradient); Where its condition, the gathers their indices.
      {"Reshape", 0, 0, 0, 0, kPromote},
      {"Flatten", 0, 0, 0, 0, kPromote},
      {"Squeeze", 0, 0, 0, 0, kPromote},
      {"Unsqueeze", 0, 0, 0, 0, kPromote},
      {"Identity", 0, 0, 0, 0, kPromote},
      {"Shape", 0, 0, 0, 0, kPromote},
      {"Size", 0, 0, 0, 0, kPromote},
      {"Constant", 0, 0, 0, 0, kPromote},
      {"Transpose", 0, 0, 0, 0, kPromote},
      {"Concat", 0, 0, 0, 0, kPromote},
      {"Split", 0, 0, 0, 0, kPromote},
      {"Slice", 0, 0, 0, 0, kPromote},
      {"Expand", 0, 0, 0, 0, kPromote},
      {"Tile", 0, 0, 0, 0, kPromote},
      {"Pad", 0, 0, 0, 0, kPromote},
      {"Cast", 0, 0, 0, 0, kPromote},
      {"CastLike", 0, 0, 0, 0, kPromote},
      {"Where", kI0, 0, 0, 0, kPromote},
      {"ConstantOfShape", 0, 0, 0, 0, kPromote},
      {"Range", 0, 0, 0, 0, kPromote},
      {"GatherElements", kI1, 0, 0, 0, kPromote},
      {"GatherND", kI1, 0, 0, 0, kPromote},
      {"ScatterND", kI1, 0, 0, 0, kPromote},
      {"ScatterElements", kI1, 0, 0, 0, kPromote},
      {"OneHot", 0, 0, 0, 0, kPromote},
      {"DepthToSpace", 0, 0, 0, 0, kPromote},
      {"SpaceToDepth", 0, 0, 0, 0, kPromote},
      {"Trilu", 0, 0, 0, 0, kPromote},
      {"EyeLike", 0, 0, 0, 0, kPromote},
      {"ReverseSequence", 0, 0, 0, 0, kPromote},
      {"Compress", kI1, 0, 0, 0, kPromote},  // its condition
  };
}

}  // namespace

const std::vector<SavedRule>& SavedRuleTable() {
  static const std::vector<SavedRule> table = MakeTable();
  return table;
}

std::map<size_t, FusedMemory> FindFusedExports(const Graph& graph) {
  const std::vector<Node>& nodes = graph.nodes;
  std::map<std::string, size_t> producer;
  std::map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& o : nodes[i].outputs) producer[o] = i;
    for (const std::string& in : nodes[i].inputs)
      if (!in.empty()) consumers[in].push_back(i);
  }
  // The node `op` producing `t`, or -1.
  auto made_by = [&](const std::string& t, const char* op) -> long {
    auto it = producer.find(t);
    return it != producer.end() && nodes[it->second].op_type == op ? static_cast<long>(it->second) : -1;
  };
  // The only consumer of `t` if it is an `op`, or -1.
  auto only_user = [&](const std::string& t, const char* op) -> long {
    auto it = consumers.find(t);
    if (it == consumers.end() || it->second.size() != 1 || nodes[it->second[0]].op_type != op) return -1;
    return static_cast<long>(it->second[0]);
  };
  auto scalar = [&](const std::string& t) {
    const TensorInfo* ti = t.empty() ? nullptr : graph.Tensor(t);
    auto n = ti ? ti->NumElements() : std::nullopt;
    return n && *n <= 1;
  };
  // A value the graph holds (an initializer or a Constant's output), not one it computes.
  auto constant = [&](const std::string& t) {
    auto it = producer.find(t);
    if (it != producer.end()) return nodes[it->second].op_type == "Constant";
    const TensorInfo* ti = graph.Tensor(t);
    return ti != nullptr && !ti->is_data_input;
  };
  auto binary = [&](long k) { return k >= 0 && nodes[k].inputs.size() == 2 && nodes[k].outputs.size() == 1; };
  // Of a binary node with one scalar input, the other input ("" if not so). Where both have one
  // element (a LayerNorm over the channels of a 1x1 map at batch 1: its variance is one number),
  // the scalar is the constant one, so a pattern is found at every batch.
  auto by_scalar = [&](long k) -> std::string {
    if (!binary(k)) return "";
    const auto& in = nodes[k].inputs;
    if (scalar(in[1]) && !scalar(in[0])) return in[0];
    if (scalar(in[0]) && !scalar(in[1])) return in[1];
    if (scalar(in[0]) && scalar(in[1]) && constant(in[0]) != constant(in[1])) return constant(in[1]) ? in[0] : in[1];
    return "";
  };
  std::map<size_t, FusedMemory> out;
  auto claim = [&](std::vector<long> region, std::vector<std::string> keep) {
    std::sort(region.begin(), region.end());
    for (long k : region)
      if (out.count(static_cast<size_t>(k))) return;
    const size_t first = static_cast<size_t>(region[0]);
    const std::vector<std::string>& last_out = nodes[static_cast<size_t>(region.back())].outputs;
    out[first] = {std::move(keep), false, first, last_out.empty() ? "" : last_out[0]};
    for (size_t j = 1; j < region.size(); ++j) out[static_cast<size_t>(region[j])] = {{}, true, first, ""};
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.op_type == "Erf" && n.inputs.size() == 1 && n.outputs.size() == 1) {
      // GELU: Div(x, sqrt 2) or Mul(x, 1/sqrt 2) -> Erf -> Add(1) -> Mul(x or 0.5x, .) [-> Mul(0.5)].
      long d = made_by(n.inputs[0], "Div");
      if (d < 0) d = made_by(n.inputs[0], "Mul");
      const std::string x = by_scalar(d);
      const long a = only_user(n.outputs[0], "Add");
      if (x.empty() || by_scalar(a) != n.outputs[0]) continue;
      const long m = only_user(nodes[a].outputs[0], "Mul");
      if (!binary(m)) continue;
      const std::string& other = nodes[m].inputs[0] == nodes[a].outputs[0] ? nodes[m].inputs[1] : nodes[m].inputs[0];
      std::vector<long> region = {d, static_cast<long>(i), a, m};
      if (other != x) {  // 0.5 * x first
        const long h = made_by(other, "Mul");
        if (by_scalar(h) != x) continue;
        region.push_back(h);
      } else if (const long h = only_user(nodes[m].outputs[0], "Mul"); by_scalar(h) == nodes[m].outputs[0]) {
        region.push_back(h);
      }
      claim(region, {x});
    }
    if ((n.op_type == "Sigmoid" || n.op_type == "HardSigmoid") && n.inputs.size() == 1 && n.outputs.size() == 1) {
      // SiLU (torch.onnx before opset 20 has no Silu): Sigmoid(x) -> Mul(x, .); hardswish before
      // opset 14 (no HardSwish): HardSigmoid(x) -> Mul(x, .). torch's silu and hardswish keep x
      // and run as one kernel each way; node by node the export would keep the gate too.
      const std::string& x = n.inputs[0];
      const long m = only_user(n.outputs[0], "Mul");
      if (!binary(m)) continue;
      const auto& in = nodes[m].inputs;
      if (!((in[0] == x && in[1] == n.outputs[0]) || (in[1] == x && in[0] == n.outputs[0]))) continue;
      claim({static_cast<long>(i), m}, {x});
    }
    if (n.op_type == "Tanh" && n.inputs.size() == 1 && n.outputs.size() == 1) {
      // GELU with approximate='tanh' as torch.onnx writes it: Mul(x, x), Mul(x, .) = x^3,
      // Mul(kappa, .), Add(x, .), Mul(beta, .), Tanh, Add(1, .), Mul(x, .), Mul(0.5, .).
      // torch's gelu keeps x.
      const long beta = made_by(n.inputs[0], "Mul");
      const std::string sum = by_scalar(beta);
      const long add = made_by(sum, "Add");
      if (!binary(add)) continue;
      long kappa = -1;
      std::string x;
      for (int k = 0; k < 2 && kappa < 0; ++k) {
        const long c = made_by(nodes[add].inputs[k], "Mul");
        if (c >= 0 && !by_scalar(c).empty()) kappa = c, x = nodes[add].inputs[1 - k];
      }
      if (kappa < 0) continue;
      const long cube = made_by(by_scalar(kappa), "Mul");
      if (!binary(cube)) continue;
      const auto& ci = nodes[cube].inputs;
      const std::string sq_name = ci[0] == x ? ci[1] : ci[1] == x ? ci[0] : "";
      const long sq = made_by(sq_name, "Mul");
      if (!binary(sq) || nodes[sq].inputs[0] != x || nodes[sq].inputs[1] != x) continue;
      const long one = only_user(n.outputs[0], "Add");
      if (by_scalar(one) != n.outputs[0]) continue;
      const long m = only_user(nodes[one].outputs[0], "Mul");
      if (!binary(m) || (nodes[m].inputs[0] != x && nodes[m].inputs[1] != x)) continue;
      std::vector<long> region = {sq, cube, kappa, add, beta, static_cast<long>(i), one, m};
      if (const long h = only_user(nodes[m].outputs[0], "Mul"); by_scalar(h) == nodes[m].outputs[0]) region.push_back(h);
      claim(region, {x});
    }
    if (n.op_type == "InstanceNormalization" && !n.inputs.empty() && n.outputs.size() == 1) {
      // GroupNorm as torch.onnx writes it before opset 18: Reshape(x, [N, G, -1]), InstanceNormalization
      // (scale 1, bias 0), Reshape back [-> Mul(gamma) -> Add(beta)]. torch's native_group_norm keeps x
      // and a mean and rstd per group (the InstanceNormalization's statistics over its N x G
      // channels: cost.cc counts a rule's stats inside a pattern too); node by node it would be the
      // reshaped x and the normalized tensor.
      const long r1 = made_by(n.inputs[0], "Reshape");
      const long r2 = only_user(n.outputs[0], "Reshape");
      if (r1 < 0 || r2 < 0 || nodes[r1].inputs.empty()) continue;
      std::vector<long> region = {r1, static_cast<long>(i), r2};
      if (const long g = only_user(nodes[r2].outputs[0], "Mul"); binary(g)) {
        region.push_back(g);
        if (const long b = only_user(nodes[g].outputs[0], "Add"); binary(b)) region.push_back(b);
      }
      claim(region, {nodes[r1].inputs[0]});
    }
    if (n.op_type == "Sub" && n.inputs.size() == 2 && n.outputs.size() == 1) {
      // LayerNorm: ReduceMean(x) = mu; Sub(x, mu) = d; Pow(d, 2) -> ReduceMean -> Add(eps) -> Sqrt = sigma;
      // Div(d, sigma) [-> Mul(gamma) -> Add(beta)].
      const std::string& x = n.inputs[0];
      const long r1 = made_by(n.inputs[1], "ReduceMean");
      if (r1 < 0 || nodes[r1].inputs.empty() || nodes[r1].inputs[0] != x) continue;
      const std::string& dv = n.outputs[0];
      auto users = consumers.find(dv);
      if (users == consumers.end() || users->second.size() != 2) continue;
      long p = -1, v = -1;
      for (size_t k : users->second) {
        if (nodes[k].op_type == "Pow") p = static_cast<long>(k);
        if (nodes[k].op_type == "Div") v = static_cast<long>(k);
      }
      if (by_scalar(p) != dv || !binary(v) || nodes[v].inputs[0] != dv) continue;
      const long r2 = only_user(nodes[p].outputs[0], "ReduceMean");
      const long a = r2 < 0 ? -1 : only_user(nodes[r2].outputs[0], "Add");
      const long q = a < 0 || by_scalar(a) != nodes[r2].outputs[0] ? -1 : only_user(nodes[a].outputs[0], "Sqrt");
      if (q < 0 || nodes[v].inputs[1] != nodes[q].outputs[0]) continue;
      std::vector<long> region = {r1, static_cast<long>(i), p, r2, a, q, v};
      if (const long g = only_user(nodes[v].outputs[0], "Mul"); binary(g)) {
        region.push_back(g);
        if (const long b = only_user(nodes[g].outputs[0], "Add"); binary(b)) region.push_back(b);
      }
      claim(region, {x, nodes[r1].outputs[0], nodes[q].outputs[0]});
    }
  }
  return out;
}

Count NormGroups(const Node& node, const TensorInfo& x) {
  const std::vector<int64_t>& d = x.dims;
  const int64_t rank = static_cast<int64_t>(d.size());
  if (!x.shape_known || rank < 2) return 0;
  const std::string& op = node.op_type;
  if (op == "LayerNormalization" || op == "RMSNormalization") {
    int64_t axis = node.AttrInt("axis").value_or(-1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return 0;
    return Product(d, 0, static_cast<size_t>(axis));
  }
  if (op == "GroupNormalization") {
    const int64_t groups = node.AttrInt("num_groups").value_or(0);
    return groups > 0 ? Count(d[0]) * groups : Count(0);
  }
  if (op == "BatchNormalization") return d[1];
  if (op == "InstanceNormalization") return Count(d[0]) * d[1];
  return 0;
}

const SavedRule* FindSavedRule(const std::string& op_type) {
  static const std::map<std::string, const SavedRule*> index = [] {
    std::map<std::string, const SavedRule*> m;
    for (const SavedRule& r : SavedRuleTable()) m.emplace(r.op_type, &r);
    return m;
  }();
  auto it = index.find(op_type);
  return it == index.end() ? nullptr : it->second;
}

}  // namespace gpucast
