// Matrix-product rules: 2 FLOPs per multiply-add. Backward: one product of
// the same size per input that requires a gradient (dA = g·Bᵀ, dB = Aᵀ·g),
// plus one add per output element for Gemm's bias C.
#include "cost/rules.h"

namespace gpucast {

Result<OpCost> GemmRule(const OpArgs& a) {
  const TensorInfo* A = a.In(0);
  const TensorInfo* B = a.In(1);
  if (!A || !B || !a.Out(0)) return Status::Error("needs inputs A and B");
  if (A->dims.size() != 2) return RankError("input A", A->dims.size(), "2");
  if (B->dims.size() != 2) return RankError("input B", B->dims.size(), "2");
  bool ta = a.node.AttrInt("transA").value_or(0) != 0;
  bool tb = a.node.AttrInt("transB").value_or(0) != 0;
  int64_t m = ta ? A->dims[1] : A->dims[0];
  int64_t k = ta ? A->dims[0] : A->dims[1];
  int64_t kb = tb ? B->dims[1] : B->dims[0];
  int64_t n = tb ? B->dims[0] : B->dims[1];
  if (k != kb)
    return Status::Error("inner dimensions differ: A gives " + std::to_string(k) + ", B gives " +
                         std::to_string(kb));
  // The output is M×N, so the bias (C, broadcast) is added M·N times.
  return WeightedCost(a, Count(m) * n * k);
}

// numpy-style MatMul: MACs = (output elements) · K, broadcasting included.
Result<OpCost> MatMulRule(const OpArgs& a) {
  const TensorInfo* A = a.In(0);
  const TensorInfo* B = a.In(1);
  if (!A || !B || !a.Out(0)) return Status::Error("needs inputs A and B");
  if (A->dims.empty()) return RankError("input A", 0, ">= 1");
  if (B->dims.empty()) return RankError("input B", 0, ">= 1");
  int64_t k = A->dims.back();
  int64_t kb = B->dims.size() == 1 ? B->dims[0] : B->dims[B->dims.size() - 2];
  if (k != kb)
    return Status::Error("inner dimensions differ: A gives " + std::to_string(k) + ", B gives " +
                         std::to_string(kb));
  Count macs = Numel(*a.Out(0)) * k;
  OpCost c;
  c.forward_flops = Count(2) * macs;
  if (a.Grad(0)) c.backward_flops += Count(2) * macs;
  if (a.Grad(1)) c.backward_flops += Count(2) * macs;
  return c;
}

}  // namespace gpucast
