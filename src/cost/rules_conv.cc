// Convolution rules. MACs come from the resolved output shape, so padding,
// stride and dilation need no separate handling.
//   Conv:          MACs = N·Cout·∏out_spatial · (Cin/group)·∏kernel
//   ConvTranspose: MACs = N·Cin·∏in_spatial · (Cout/group)·∏kernel
// forward = 2·MACs + bias adds (one per output element);
// backward = 2·MACs for the weight grad + 2·MACs for the input grad (only if
// the input requires a gradient) + one add per output element for the bias.
#include "cost/rules.h"

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
  if (w[1] * group != x[1])
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
