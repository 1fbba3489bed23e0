// Normalisation (always costed in training mode: batch statistics) and
// pooling rules.
#include "cost/rules.h"

namespace gpucast {

RuleFn Normalization(int fwd, int bwd_params, int bwd_input, std::vector<int> trainable_inputs) {
  return [=](const OpArgs& a) -> Result<OpCost> {
    if (!a.In(0)) return Status::Error("has no input");
    Count n = Numel(*a.In(0));
    OpCost c;
    c.forward_flops = Count(fwd) * n;
    bool param_grad = false;
    for (int i : trainable_inputs) param_grad = param_grad || a.Grad(i);
    if (param_grad) c.backward_flops += Count(bwd_params) * n;
    if (a.Grad(0)) c.backward_flops += Count(bwd_input) * n;
    c.trainable_inputs = trainable_inputs;
    return c;
  };
}

RuleFn WindowPool(int fwd, int fwd_out, int bwd_win, int bwd_out) {
  return [=](const OpArgs& a) -> Result<OpCost> {
    if (!a.Out(0)) return Status::Error("has no output");
    std::vector<int64_t> kernel = a.node.AttrInts("kernel_shape");
    if (kernel.empty()) return Status::Error("attribute 'kernel_shape' missing");
    Count window = Product(kernel, 0, kernel.size());
    Count out = Numel(*a.Out(0));
    OpCost c;
    c.forward_flops = Count(fwd) * out * window + Count(fwd_out) * out;
    if (a.Grad(0)) c.backward_flops = Count(bwd_win) * out * window + Count(bwd_out) * out;
    return c;
  };
}

}  // namespace gpucast

namespace gpucast {

// LRN across `size` channels: y = x / (bias + alpha/size · Σ x²)^beta.
// Forward per element: square 1, window sum `size`, scale 1, add 1, pow 1,
// divide 1 = size + 5. Backward per element: g·y/s (2), window sum of it
// (size), × x (1), × 2·alpha·beta/size (1), g·s^−beta (2), subtract (1) =
// size + 7.
Result<OpCost> LrnRule(const OpArgs& a) {
  if (!a.In(0)) return Status::Error("has no input");
  const std::optional<int64_t> size = a.node.AttrInt("size");
  if (!size) return Status::Error("attribute 'size' missing");
  if (*size < 1) return Status::Error("attribute 'size' is " + std::to_string(*size) + ", want >= 1");
  const Count n = Numel(*a.In(0));
  OpCost c;
  c.forward_flops = Count(*size + 5) * n;
  if (a.Grad(0)) c.backward_flops = Count(*size + 7) * n;
  return c;
}

}  // namespace gpucast
