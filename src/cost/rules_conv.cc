// Convolution rules. MACs come from the resolved output shape, so padding,
// stride and dilation need no separate handling.
//   Conv:          MACs = N·Cout·∏out_spatial · (Cin/group)·∏kernel
//   ConvTranspose: MACs = N·Cin·∏in_spatial · (Cout/group)·∏kernel
// forward = 2·MACs + bias adds (one per output element);
// backward = 2·MACs for the weight grad + 2·MACs for the input grad (only if
// the input requires a gradient) + one add per output element for the bias.
#include "cost/rules.h"
#include "util/checked.h"

namespace gpucast {
namespace {

// Shared checks; returns the error or ok.
Status CheckConvShapes(const OpArgs& a, const char* weight_want) {
  const TensorInfo* x = a.In(0);
  const TensorInfo* w = a.In(1);
  const TensorInfo* y = a.Out(0);
  if (!x || !w || !y) return Status::Error("needs input, weight and output");
  if (x->dims.size() < 3) return RankError("input", x->dims.size(), ">= 3");
  if (w->dims.size() != x->dims.size())
    return RankError("weight", w->dims.size(), std::to_string(x->dims.size()) + weight_want);
  if (y->dims.size() != x->dims.size())
    return RankError("output", y->dims.size(), std::to_string(x->dims.size()));
  return Status::Ok();
}

}  // namespace

Result<OpCost> ConvRule(const OpArgs& a) {
  RETURN_IF_ERROR(CheckConvShapes(a, " (Cout, Cin/group, kernel...)"));
  const auto& x = a.In(0)->dims;
  const auto& w = a.In(1)->dims;
  int64_t group = a.node.AttrInt("group").value_or(1);
  if (group < 1) return Status::Error("group " + std::to_string(group) + " < 1");
  if (std::optional<int64_t> in = CheckedMul(w[1], group); !in || *in != x[1])
    return Status::Error("weight has " + std::to_string(w[1]) + " input channels per group × group " +
                         std::to_string(group) + ", input has " + std::to_string(x[1]));
  Count macs = Numel(*a.Out(0)) * Product(w, 1, w.size());
  return WeightedCost(a, macs);
}

Result<OpCost> ConvTransposeRule(const OpArgs& a) {
  RETURN_IF_ERROR(CheckConvShapes(a, " (Cin, Cout/group, kernel...)"));
  const auto& x = a.In(0)->dims;
  const auto& w = a.In(1)->dims;
  if (w[0] != x[1])
    return Status::Error("weight has " + std::to_string(w[0]) + " input channels, input has " +
                         std::to_string(x[1]));
  Count macs = Numel(*a.In(0)) * Product(w, 1, w.size());
  return WeightedCost(a, macs);
}

}  // namespace gpucast

namespace gpucast {

// DeformConv (opset 19; torchvision's deform_conv2d): X [N, C, in...],
// W [Cout, C/group, k...], offset [N, og·2·K, out...], optional bias B and
// mask [N, og·K, out...]; K = ∏k. Each input channel is sampled bilinearly at
// each kernel point of each output position: S = N·C·K·∏out samples, each 4
// tap products + 3 adds = 7 (+ 1 with the mask); then the convolution of the
// samples: MACs = N·Cout·∏out·(C/group)·K as Conv.
// forward = 2·MACs + 7·S (+ S mask) + out (bias);
// backward = 2·MACs (dW) + out (bias) + [2·MACs for the samples' grad when X,
// offset or mask needs one] + 8·S for dX (scatter to 4 taps: product, add) +
// 16·S for d offset (2 coordinates × (4 products + 3 adds) + 2 accumulates)
// + 2·S for d mask, each when that input needs a gradient.
Result<OpCost> DeformConvRule(const OpArgs& a) {
  const TensorInfo *x = a.In(0), *w = a.In(1), *off = a.In(2), *y = a.Out(0);
  if (!x || !w || !off || !y) return Status::Error("needs X, W, offset and the output");
  if (x->dims.size() < 3 || w->dims.size() != x->dims.size() || y->dims.size() != x->dims.size())
    return RankError("X, W and Y", w->dims.size(), "the same rank >= 3");
  const int64_t group = a.node.AttrInt("group").value_or(1);
  if (std::optional<int64_t> in = CheckedMul(w->dims[1], group); group < 1 || !in || *in != x->dims[1])
    return Status::Error("weight has " + std::to_string(w->dims[1]) + " input channels per group × group " +
                         std::to_string(group) + ", input has " + std::to_string(x->dims[1]));
  const Count kernel = Product(w->dims, 2, w->dims.size());
  const Count out_pos = Product(y->dims, 2, y->dims.size());
  const Count samples = Count(x->dims[0]) * Count(x->dims[1]) * kernel * out_pos;
  const Count macs = Numel(*y) * Product(w->dims, 1, w->dims.size());
  const bool mask = a.In(4) != nullptr, bias = a.In(3) != nullptr;
  OpCost c;
  c.forward_flops = Count(2) * macs + Count(mask ? 8 : 7) * samples + (bias ? Numel(*y) : Count(0));
  if (a.Grad(1)) c.backward_flops += Count(2) * macs;
  if (a.Grad(3)) c.backward_flops += Numel(*y);
  if (a.Grad(0) || a.Grad(2) || a.Grad(4)) c.backward_flops += Count(2) * macs;
  if (a.Grad(0)) c.backward_flops += Count(8) * samples;
  if (a.Grad(2)) c.backward_flops += Count(16) * samples;
  if (a.Grad(4)) c.backward_flops += Count(2) * samples;
  c.trainable_inputs = std::vector<int>{1, 3};
  return c;
}

}  // namespace gpucast
