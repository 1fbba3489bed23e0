// Activations, elementwise arithmetic, reductions and dropout. Constants are
// FLOPs per element, counting every arithmetic operation, comparison or
// transcendental function evaluation as 1 (docs/cost-rules.md derives each).
#include <optional>

#include "cost/rules.h"

namespace gpucast {

RuleFn Elementwise(int fwd, int bwd) {
  return [fwd, bwd](const OpArgs& a) -> Result<OpCost> {
    if (!a.Out(0)) return Status::Error("has no output");
    Count n = Numel(*a.Out(0));
    int64_t grads = 0;
    for (size_t i = 0; i < a.inputs.size(); ++i) grads += a.Grad(i) ? 1 : 0;
    OpCost c;
    c.forward_flops = Count(fwd) * n;
    c.backward_flops = Count(bwd) * n * grads;
    return c;
  };
}

RuleFn Reduction(int fwd, int fwd_out, int bwd) {
  return [fwd, fwd_out, bwd](const OpArgs& a) -> Result<OpCost> {
    if (!a.In(0) || !a.Out(0)) return Status::Error("needs an input and an output");
    Count in = Numel(*a.In(0));
    OpCost c;
    c.forward_flops = Count(fwd) * in + Count(fwd_out) * Numel(*a.Out(0));
    if (a.Grad(0)) c.backward_flops = Count(bwd) * in;
    return c;
  };
}

// Training-mode dropout: forward draws a random number, compares it and
// scales (3 per element); backward multiplies by the mask and scale (2).
// A ratio of 0 (torchvision's ViT and many transformer configs default to it)
// is an identity in PyTorch: ATen's dropout takes its fused CUDA kernel only
// for 0 < p < 1 (is_fused_kernel_acceptable) and otherwise returns the input
// itself when p == 0 (_dropout_impl, aten/src/ATen/native/Dropout.cpp): no
// kernel, no bytes, no mask. The ratio is the attribute (opset < 12), else
// input 1 when the loader folded it (absent: ONNX's default 0.5); a ratio that
// is not a constant keeps the training cost.
Result<OpCost> DropoutRule(const OpArgs& a) {
  if (!a.Out(0)) return Status::Error("has no output");
  std::optional<double> ratio = a.node.AttrFloat("ratio");
  if (!ratio && a.In(1) && a.In(1)->real_value && a.In(1)->real_value->size() == 1) ratio = (*a.In(1)->real_value)[0];
  OpCost c;
  if (ratio && *ratio == 0) {
    c.view = true;
    return c;
  }
  Count n = Numel(*a.Out(0));
  c.forward_flops = Count(3) * n;
  if (a.Grad(0)) c.backward_flops = Count(2) * n;
  return c;
}

// PRelu: y = x < 0 ? slope·x : x (compare + multiply); backward 2 per
// element for the input grad and 2 for the slope grad (multiply + reduce).
Result<OpCost> PReluRule(const OpArgs& a) {
  if (!a.Out(0)) return Status::Error("has no output");
  Count n = Numel(*a.Out(0));
  OpCost c;
  c.forward_flops = Count(2) * n;
  if (a.Grad(0)) c.backward_flops += Count(2) * n;
  if (a.Grad(1)) c.backward_flops += Count(2) * n;
  return c;
}

}  // namespace gpucast

namespace gpucast {

RuleFn NoGradient(int fwd) {
  return [fwd](const OpArgs& a) -> Result<OpCost> {
    if (!a.Out(0)) return Status::Error("has no output");
    OpCost c;
    c.forward_flops = Count(fwd) * Numel(*a.Out(0));
    c.no_grad_outputs = true;
    c.trainable_inputs = std::vector<int>{};
    return c;
  };
}

// Multinomial (opset 7): input [N, C] of unnormalised log-probabilities,
// output [N, S] of class indices (S = sample_size). Per input element an exp
// and a running sum (the row's cumulative distribution): 2; per sample a
// uniform draw (3, as RandomUniform) and a binary search of the row,
// ceil(log2 C) compares. No backward: the indices carry no gradient.
Result<OpCost> MultinomialRule(const OpArgs& a) {
  const TensorInfo* x = a.In(0);
  const TensorInfo* y = a.Out(0);
  if (!x || !y) return Status::Error("needs input and an output");
  if (x->dims.size() != 2) return RankError("input", x->dims.size(), "2 ([batch, classes])");
  int64_t search = 0;
  for (int64_t c = 1; c < x->dims[1]; c *= 2) ++search;
  OpCost cost;
  cost.forward_flops = Count(2) * Numel(*x) + Count(3 + search) * Numel(*y);
  cost.no_grad_outputs = true;
  cost.trainable_inputs = std::vector<int>{};
  return cost;
}

// Losses over class scores [N, C, d...] and labels [N, d...], optional class
// weights [C] (input 2: a constant, not a parameter).
//   SoftmaxCrossEntropyLoss: log-softmax of the scores (5 per score, as
//     LogSoftmax) + picking and summing the label's term (2 per label, +1
//     with weights); backward: log-softmax's 4 per score (the one-hot
//     subtraction folded in).
//   NegativeLogLikelihoodLoss: 2 per label (negate, sum), +1 with weights;
//     backward: scatter −g (·w) into the label positions, 1 per label (+1).
RuleFn ClassLoss(bool softmax) {
  return [softmax](const OpArgs& a) -> Result<OpCost> {
    const TensorInfo* scores = a.In(0);
    const TensorInfo* labels = a.In(1);
    if (!scores || !labels || !a.Out(0)) return Status::Error("needs inputs scores and labels and an output");
    if (scores->dims.size() < 2) return RankError("input scores", scores->dims.size(), ">= 2 (N, C, ...)");
    if (labels->dims.size() + 1 != scores->dims.size())
      return RankError("input labels", labels->dims.size(), std::to_string(scores->dims.size() - 1));
    const Count n = Numel(*scores);
    const Count l = Numel(*labels);
    const int64_t w = a.In(2) ? 1 : 0;
    OpCost c;
    c.trainable_inputs = std::vector<int>{};
    c.no_grad_outputs = !a.Grad(0);  // class weights are constants
    if (softmax) {
      c.forward_flops = Count(5) * n + Count(2 + w) * l;
      if (a.Grad(0)) c.backward_flops = Count(4) * n;
    } else {
      c.forward_flops = Count(2 + w) * l;
      if (a.Grad(0)) c.backward_flops = Count(1 + w) * l;
    }
    return c;
  };
}

}  // namespace gpucast
