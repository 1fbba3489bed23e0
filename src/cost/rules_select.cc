// Selection rules: TopK, NonZero, NonMaxSuppression. Their output sizes can
// depend on input values; the driver costs them only when shape inference
// resolved every output (else: unsupported, "output size depends on input
// values ..."). Comparisons count 1 FLOP each.
#include "cost/rules.h"

namespace gpucast {
namespace {

// ⌈log2(n)⌉ for n >= 1.
int64_t CeilLog2(int64_t n) {
  int64_t bits = 0;
  while (bits < 63 && (int64_t{1} << bits) < n) ++bits;
  return bits;
}

}  // namespace

// TopK: k = the output's extent on `axis`. Forward: each input element is
// compared into a heap of the k best, ⌈log2(k + 1)⌉ comparisons (k = 1: one,
// as ArgMax). Backward: the value gradients are scattered back to their
// indices, one add per output element (as Gather's backward).
Result<OpCost> TopKRule(const OpArgs& a) {
  const TensorInfo* x = a.In(0);
  const TensorInfo* v = a.Out(0);
  if (!x || !v) return Status::Error("needs input X and output Values");
  if (x->dims.empty()) return RankError("input X", 0, ">= 1");
  if (v->dims.size() != x->dims.size())
    return RankError("output Values", v->dims.size(), std::to_string(x->dims.size()) + " (the input's)");
  const int64_t rank = static_cast<int64_t>(x->dims.size());
  int64_t axis = a.node.AttrInt("axis").value_or(-1);
  if (axis < -rank || axis >= rank)
    return Status::Error("attribute 'axis' is " + std::to_string(axis) + ", input has rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const int64_t k = v->dims[static_cast<size_t>(axis)];
  OpCost c;
  c.forward_flops = Numel(*x) * CeilLog2(k + 1);
  if (a.Grad(0)) c.backward_flops = Numel(*v);
  return c;
}

// NonZero: one comparison per input element; int64 output, no gradient.
Result<OpCost> NonZeroRule(const OpArgs& a) {
  if (!a.In(0) || !a.Out(0)) return Status::Error("needs an input and an output");
  OpCost c;
  c.forward_flops = Numel(*a.In(0));
  c.trainable_inputs = std::vector<int>{};
  return c;
}

// NonMaxSuppression: boxes [N,B,4], scores [N,C,B]. Worst case (no box is
// suppressed early), per batch and class: sort the B scores (B·⌈log2 B⌉
// comparisons), the B box areas (3 each: 2 subtractions, 1 product), and
// every pair's IoU test, B·(B−1)/2 × 13 (intersection: 2 max, 2 min, 2
// subtractions, 2 clamps, 1 product; union: 2; divide 1; threshold 1).
// int64 output, no gradient.
Result<OpCost> NonMaxSuppressionRule(const OpArgs& a) {
  const TensorInfo* boxes = a.In(0);
  const TensorInfo* scores = a.In(1);
  if (!boxes || !scores) return Status::Error("needs inputs boxes and scores");
  if (boxes->dims.size() != 3) return RankError("input boxes", boxes->dims.size(), "3 (batch, boxes, 4)");
  if (scores->dims.size() != 3) return RankError("input scores", scores->dims.size(), "3 (batch, classes, boxes)");
  const int64_t b = boxes->dims[1];
  if (scores->dims[2] != b)
    return Status::Error("scores have " + std::to_string(scores->dims[2]) + " boxes, boxes input has " +
                         std::to_string(b));
  const Count lists = Count(scores->dims[0]) * scores->dims[1];
  // B·(B−1)/2 without overflow before the checked product: halve the even factor.
  const Count pairs = b < 2 ? Count(0) : (b % 2 == 0 ? Count(b / 2) * (b - 1) : Count(b) * ((b - 1) / 2));
  OpCost c;
  c.trainable_inputs = std::vector<int>{};
  c.forward_flops = lists * (Count(b) * CeilLog2(b) + Count(3) * b + Count(13) * pairs);
  return c;
}

}  // namespace gpucast
