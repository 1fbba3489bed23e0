// Activations, elementwise arithmetic, reductions and dropout. Constants are
// FLOPs per element, counting every arithmetic operation, comparison or
// transcendental function evaluation as 1 (docs/cost-rules.md derives each).
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
Result<OpCost> DropoutRule(const OpArgs& a) {
  if (!a.Out(0)) return Status::Error("has no output");
  Count n = Numel(*a.Out(0));
  OpCost c;
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
