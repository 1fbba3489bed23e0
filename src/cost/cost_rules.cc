// THE table of per-op cost rules: op_type -> {category, rule}. One row per
// default-domain op. Constants are documented in docs/cost-rules.md.
#include <map>

#include "cost/rules.h"

namespace gpucast {
namespace {

constexpr Category kConv = Category::kConvolution;
constexpr Category kMat = Category::kMatmul;
constexpr Category kRnn = Category::kRecurrent;
constexpr Category kAct = Category::kActivation;
constexpr Category kNorm = Category::kNormalization;
constexpr Category kPool = Category::kPooling;
constexpr Category kElem = Category::kElementwise;
constexpr Category kMove = Category::kDataMovement;

std::vector<CostRule> MakeTable() {
  const RuleFn view = Free(/*view=*/true);
  const RuleFn copy = Free(/*view=*/false);
  const RuleFn compare = Elementwise(1, 0);
  const RuleFn norm = Normalization(7, 3, 4, {1, 2});  // scale, bias trainable
  return {
      // Convolution, matmul, recurrent (rules_conv.cc, rules_matmul.cc, rules_recurrent.cc)
      {"Conv", kConv, ConvRule},
      {"ConvTranspose", kConv, ConvTransposeRule},
      {"DeformConv", kConv, DeformConvRule},  // opset 19: bilinear samples, then a conv
      {"Gemm", kMat, GemmRule},
      {"MatMul", kMat, MatMulRule},
      {"LSTM", kRnn, LstmRule},
      {"GRU", kRnn, GruRule},
      {"RNN", kRnn, RnnRule},
      {"Einsum", kMat, EinsumRule},  // one or two operands; matmul or, for one, elementwise/copy
      // Activations: Elementwise(forward per element, backward per element)
      {"Relu", kAct, Elementwise(1, 1)},
      {"LeakyRelu", kAct, Elementwise(2, 2)},
      {"PRelu", kAct, PReluRule},
      {"ThresholdedRelu", kAct, Elementwise(1, 1)},
      {"Sigmoid", kAct, Elementwise(4, 3)},
      {"Tanh", kAct, Elementwise(1, 3)},
      {"Erf", kAct, Elementwise(1, 4)},
      {"Gelu", kAct, GeluRule},  // approximate "none" 5/8, "tanh" 9/13
      {"Attention", kMat, AttentionRule},  // opset 23: as MatMul-Softmax-MatMul
      {"Softmax", kAct, Elementwise(5, 4)},
      {"LogSoftmax", kAct, Elementwise(5, 4)},
      {"Clip", kAct, Elementwise(2, 2)},
      {"HardSigmoid", kAct, Elementwise(4, 3)},
      {"HardSwish", kAct, Elementwise(5, 4)},
      {"Elu", kAct, Elementwise(4, 3)},
      {"Celu", kAct, Elementwise(4, 3)},
      {"Selu", kAct, Elementwise(5, 4)},
      {"Softplus", kAct, Elementwise(3, 5)},
      {"Softsign", kAct, Elementwise(3, 3)},
      {"Mish", kAct, Elementwise(5, 14)},
      {"Shrink", kAct, Elementwise(3, 2)},
      {"Hardmax", kAct, NoGradient(1)},
      {"SoftmaxCrossEntropyLoss", kAct, ClassLoss(/*softmax=*/true)},
      {"NegativeLogLikelihoodLoss", kAct, ClassLoss(/*softmax=*/false)},
      // Elementwise arithmetic (backward is per input that needs a gradient)
      {"Add", kElem, Elementwise(1, 1)},
      {"Sub", kElem, Elementwise(1, 1)},
      {"Mul", kElem, Elementwise(1, 1)},
      {"Div", kElem, Elementwise(1, 2)},
      {"Pow", kElem, Elementwise(1, 3)},
      {"Sqrt", kElem, Elementwise(1, 2)},
      {"Reciprocal", kElem, Elementwise(1, 2)},
      {"Exp", kElem, Elementwise(1, 1)},
      {"Log", kElem, Elementwise(1, 1)},
      {"Neg", kElem, Elementwise(1, 1)},
      {"Abs", kElem, Elementwise(1, 1)},
      {"Sin", kElem, Elementwise(1, 2)},
      {"Cos", kElem, Elementwise(1, 2)},
      {"Tan", kElem, Elementwise(1, 3)},
      {"Asin", kElem, Elementwise(1, 4)},
      {"Acos", kElem, Elementwise(1, 5)},
      {"Atan", kElem, Elementwise(1, 3)},
      {"Sinh", kElem, Elementwise(1, 2)},
      {"Cosh", kElem, Elementwise(1, 2)},
      {"Asinh", kElem, Elementwise(1, 4)},
      {"Acosh", kElem, Elementwise(1, 4)},
      {"Atanh", kElem, Elementwise(1, 3)},
      {"Sum", kElem, Elementwise(1, 1)},
      {"Mean", kElem, Elementwise(2, 1)},
      {"Max", kElem, Elementwise(1, 1)},
      {"Min", kElem, Elementwise(1, 1)},
      {"Sign", kElem, compare},
      {"Floor", kElem, compare},
      {"Ceil", kElem, compare},
      {"Round", kElem, compare},
      {"Mod", kElem, compare},
      {"Equal", kElem, compare},
      {"Less", kElem, compare},
      {"LessOrEqual", kElem, compare},
      {"Greater", kElem, compare},
      {"GreaterOrEqual", kElem, compare},
      {"Not", kElem, compare},
      {"And", kElem, compare},
      {"Or", kElem, compare},
      {"Xor", kElem, compare},
      {"IsNaN", kElem, compare},
      {"IsInf", kElem, compare},
      {"BitwiseAnd", kElem, compare},  // opset 18: integers, no gradient
      {"BitwiseOr", kElem, compare},
      {"BitwiseXor", kElem, compare},
      {"BitwiseNot", kElem, compare},
      {"RotaryEmbedding", kElem, RotaryEmbeddingRule},  // opset 23
      {"AffineGrid", kElem, AffineGridRule},            // opset 20
      {"Col2Im", kElem, Reduction(1, 0, 0)},  // opset 18: one add per input element; backward a gather
      {"Dropout", kElem, DropoutRule},
      // Random draws (draw, scale, shift; Bernoulli: draw, compare): no gradient
      {"RandomUniform", kElem, NoGradient(3)},
      {"RandomUniformLike", kElem, NoGradient(3)},
      {"RandomNormal", kElem, NoGradient(3)},
      {"RandomNormalLike", kElem, NoGradient(3)},
      {"Bernoulli", kElem, NoGradient(2)},
      {"Multinomial", kElem, MultinomialRule},  // exp, running sum; per sample draw + binary search
      // Resampling (rules_sample.cc) and selection (rules_select.cc)
      {"Resize", kElem, ResizeRule},
      {"Upsample", kElem, ResizeRule},
      {"GridSample", kElem, GridSampleRule},
      {"TopK", kElem, TopKRule, /*value_sized=*/true},
      {"NonZero", kElem, NonZeroRule, /*value_sized=*/true},
      {"NonMaxSuppression", kElem, NonMaxSuppressionRule, /*value_sized=*/true},
      // Reductions: Reduction(per input element, per output element, backward per input element)
      {"ReduceMean", kElem, Reduction(1, 1, 1)},
      {"ReduceSum", kElem, Reduction(1, 0, 1)},
      {"ReduceMin", kElem, Reduction(1, 0, 1)},
      {"ReduceProd", kElem, Reduction(1, 0, 2)},
      {"ReduceL1", kElem, Reduction(2, 0, 2)},
      {"ReduceL2", kElem, Reduction(2, 1, 2)},
      {"ReduceSumSquare", kElem, Reduction(2, 0, 2)},
      {"ReduceLogSumExp", kElem, Reduction(3, 1, 3)},
      {"ReduceLogSum", kElem, Reduction(1, 1, 1)},
      {"ArgMax", kElem, Reduction(1, 0, 0)},
      {"ArgMin", kElem, Reduction(1, 0, 0)},
      {"CumSum", kElem, Reduction(1, 0, 1)},
      // Normalisation (training mode), pooling
      {"BatchNormalization", kNorm, norm},
      {"LayerNormalization", kNorm, norm},
      {"InstanceNormalization", kNorm, norm},
      {"GroupNormalization", kNorm, norm},
      // RMSNormalization (opset 23): LayerNorm's 7 without the mean (1) and bias (1): square, sum,
      // normalise, scale = 4; grads: scale 2, input 3 (no mean-of-gradient term).
      {"RMSNormalization", kNorm, Normalization(4, 2, 3, {1})},
      {"MeanVarianceNormalization", kNorm, Normalization(5, 0, 4, {})},  // no affine, no params
      {"LpNormalization", kNorm, Elementwise(3, 5)},
      {"LRN", kNorm, LrnRule},
      {"MaxPool", kPool, WindowPool(1, 0, 0, 1)},
      {"AveragePool", kPool, WindowPool(1, 1, 1, 0)},
      {"GlobalAveragePool", kPool, Reduction(1, 1, 1)},
      {"GlobalMaxPool", kPool, Reduction(1, 0, 1)},
      {"ReduceMax", kPool, Reduction(1, 0, 1)},
      {"RoiAlign", kPool, RoiAlignRule},
      // Embedding lookup or copy, decided by the data input (rules_free.cc)
      {"Gather", kMove, GatherRule},
      // Not an ONNX op: torch's nn.EmbeddingBag, whose Loop export the loader reads as one
      // node (graph/torch_loops.h); embedding or sum of copies, as Gather.
      {"EmbeddingBag", kMove, EmbeddingBagRule},
      {"EmbeddingBagMax", kMove, EmbeddingBagMaxRule},
      // Free views and metadata: no FLOPs, no bytes written
      {"Reshape", kMove, view},
      {"Flatten", kMove, view},
      {"Squeeze", kMove, view},
      {"Unsqueeze", kMove, view},
      {"Identity", kMove, view},
      {"Shape", kMove, view},
      {"Size", kMove, view},
      {"Constant", kMove, view},
      // Free copies: no FLOPs, outputs written
      {"Transpose", kMove, copy},
      {"Concat", kMove, copy},
      {"Split", kMove, copy},
      {"Slice", kMove, copy},
      {"Expand", kMove, copy},
      {"Tile", kMove, copy},
      {"Pad", kMove, copy},
      {"Cast", kMove, copy},
      {"CastLike", kMove, copy},
      {"Where", kMove, copy},
      {"ConstantOfShape", kMove, copy},
      {"Range", kMove, copy},
      {"GatherElements", kMove, copy},
      {"GatherND", kMove, copy},
      {"ScatterND", kMove, copy},
      {"ScatterElements", kMove, copy},
      {"OneHot", kMove, copy},
      {"DepthToSpace", kMove, copy},
      {"SpaceToDepth", kMove, copy},
      {"Trilu", kMove, copy},
      {"EyeLike", kMove, copy},
      {"ReverseSequence", kMove, copy},
      {"Compress", kMove, copy, /*value_sized=*/true},
      {"CenterCropPad", kMove, copy},  // opset 18: a crop and/or zero pad
  };
}

}  // namespace

const std::vector<CostRule>& CostRuleTable() {
  static const std::vector<CostRule> table = MakeTable();
  return table;
}

Result<std::vector<const CostRule*>> CheckRuleTable(const std::vector<CostRule>& table) {
  std::map<std::string, const CostRule*> seen;
  std::vector<const CostRule*> out;
  for (const CostRule& r : table) {
    if (!seen.emplace(r.op_type, &r).second)
      return Status::Error(std::string("cost rule table: duplicate op '") + r.op_type + "'");
    out.push_back(&r);
  }
  return out;
}

const CostRule* FindCostRule(const std::string& op_type) {
  // Built once; a duplicate in the table is caught by cost_rules_test.
  static const std::map<std::string, const CostRule*> index = [] {
    std::map<std::string, const CostRule*> m;
    for (const CostRule& r : CostRuleTable()) m.emplace(r.op_type, &r);
    return m;
  }();
  auto it = index.find(op_type);
  return it == index.end() ? nullptr : it->second;
}

}  // namespace gpucast
