// Resampling rules: Resize/Upsample, GridSample, RoiAlign. An interpolated
// output element is a weighted sum of T input taps: T products + (T − 1)
// sums = 2T − 1 FLOPs; its backward scatters the gradient to the same taps
// (T products + T adds = 2T). T per interpolated dim: nearest 1, linear 2,
// cubic 4 (T = taps^d over d dims). Nearest is a gather: no arithmetic
// forward, one add per output element backward (scatter-add, as Gather).
#include "cost/rules.h"

namespace gpucast {
namespace {

// Taps per interpolated dim of `mode`, or an error naming it.
Result<int64_t> TapsPerDim(const std::string& mode, const std::string& nearest, const std::string& linear,
                           const std::string& cubic) {
  if (mode == nearest) return int64_t{1};
  if (mode == linear || (linear == "linear" && mode == "bilinear")) return int64_t{2};  // Upsample-1's name
  if (mode == cubic) return int64_t{4};
  return Status::Error("attribute 'mode' is '" + mode + "', want " + nearest + ", " + linear + " or " + cubic);
}

Count Power(int64_t base, int64_t exp) {
  Count c = 1;
  for (int64_t i = 0; i < exp; ++i) c *= base;
  return c;
}

}  // namespace

// Resize (opset 10+) and Upsample: d = the dims whose extent changes (scale 1
// dims are not interpolated). Inputs other than X (roi, scales, sizes) are
// constants, never parameters.
Result<OpCost> ResizeRule(const OpArgs& a) {
  const TensorInfo* x = a.In(0);
  const TensorInfo* y = a.Out(0);
  if (!x || !y) return Status::Error("needs input X and an output");
  if (y->dims.size() != x->dims.size())
    return RankError("output", y->dims.size(), std::to_string(x->dims.size()) + " (the input's)");
  ASSIGN_OR_RETURN(int64_t taps,
                   TapsPerDim(a.node.AttrString("mode").value_or("nearest"), "nearest", "linear", "cubic"));
  int64_t d = 0;
  for (size_t i = 0; i < x->dims.size(); ++i) d += x->dims[i] != y->dims[i] ? 1 : 0;
  const Count out = Numel(*y);
  OpCost c;
  c.trainable_inputs = std::vector<int>{};
  c.no_grad_outputs = !a.Grad(0);  // float scales/roi initializers do not make Y need a gradient
  if (taps == 1) {
    c.category = Category::kDataMovement;
    if (a.Grad(0)) c.backward_flops = out;
    return c;
  }
  const Count t = Power(taps, d);
  c.forward_flops = out * (Count(2) * t + Count(-1));
  if (a.Grad(0)) c.backward_flops = Count(2) * out * t;
  return c;
}

// GridSample (opset 16): X [N,C,spatial...], grid [N,out_spatial...,d]. Per
// output element the interpolation above over the d spatial dims; per grid
// point 2·d to unnormalise its coordinates (multiply, add). Backward: the
// input gradient (interpolating modes 2T per output element, nearest 1), and
// for the grid gradient (interpolating modes only: nearest is piecewise
// constant) the weights' derivative per tap and coordinate, 2·T·d per output
// element, plus 2·d per grid point.
Result<OpCost> GridSampleRule(const OpArgs& a) {
  const TensorInfo* x = a.In(0);
  const TensorInfo* grid = a.In(1);
  const TensorInfo* y = a.Out(0);
  if (!x || !grid || !y) return Status::Error("needs inputs X and grid and an output");
  if (x->dims.size() < 3) return RankError("input X", x->dims.size(), ">= 3");
  const int64_t d = static_cast<int64_t>(x->dims.size()) - 2;
  if (grid->dims.size() != x->dims.size() || grid->dims.back() != d)
    return Status::Error("grid has shape of rank " + std::to_string(grid->dims.size()) + " and last dim " +
                         (grid->dims.empty() ? std::string("none") : std::to_string(grid->dims.back())) +
                         ", want rank " + std::to_string(x->dims.size()) + " and last dim " + std::to_string(d));
  ASSIGN_OR_RETURN(int64_t taps,
                   TapsPerDim(a.node.AttrString("mode").value_or("bilinear"), "nearest", "bilinear", "bicubic"));
  const Count out = Numel(*y);
  const Count points = Product(grid->dims, 0, grid->dims.size() - 1);
  const Count t = Power(taps, d);
  const Count unnormalise = Count(2 * d) * points;
  OpCost c;
  c.trainable_inputs = std::vector<int>{};
  c.no_grad_outputs = !a.Grad(0) && !a.Grad(1);
  c.forward_flops = unnormalise + (taps == 1 ? Count(0) : out * (Count(2) * t + Count(-1)));
  if (a.Grad(0)) c.backward_flops += taps == 1 ? out : Count(2) * out * t;
  if (a.Grad(1) && taps > 1) c.backward_flops += Count(2 * d) * out * t + unnormalise;
  return c;
}

// RoiAlign: X [N,C,H,W], rois [R,4] -> [R,C,oh,ow]. Each output bin averages
// (mode avg) or takes the max of (mode max) s×s bilinear samples, s =
// sampling_ratio: per sample 7 (4 products, 3 sums) + 1 (accumulate or
// compare), plus 1 divide per bin for avg. Backward (input gradient):
// per sample 8 (4 weighted scatter-adds), plus the divide for avg. With
// sampling_ratio 0 (adaptive) s depends on each ROI's size: unsupported.
Result<OpCost> RoiAlignRule(const OpArgs& a) {
  if (!a.In(0) || !a.Out(0)) return Status::Error("needs input X and an output");
  const int64_t s = a.node.AttrInt("sampling_ratio").value_or(0);
  OpCost c;
  c.trainable_inputs = std::vector<int>{};
  c.no_grad_outputs = !a.Grad(0);  // the rois get no gradient
  if (s == 0) {
    c.unsupported = "sampling_ratio 0 (adaptive): the samples per bin depend on each ROI's size";
    return c;
  }
  if (s < 0) return Status::Error("attribute 'sampling_ratio' is " + std::to_string(s) + ", want >= 0");
  const std::string mode = a.node.AttrString("mode").value_or("avg");
  if (mode != "avg" && mode != "max")
    return Status::Error("attribute 'mode' is '" + mode + "', want avg or max");
  const Count out = Numel(*a.Out(0));
  const Count per_bin = Count(8) * s * s + Count(mode == "avg" ? 1 : 0);
  c.forward_flops = out * per_bin;
  if (a.Grad(0)) c.backward_flops = out * per_bin;
  return c;
}

}  // namespace gpucast
