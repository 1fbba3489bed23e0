// Rules for the fused ops of opsets 20-23 that torch's dynamo exporter writes
// where older exports had a decomposition: Gelu-20, Attention-23,
// RotaryEmbedding-23, AffineGrid-20. Each counts what the decomposition it
// replaces counts under the table's conventions (docs/cost-rules.md).
#include "cost/rules.h"

namespace gpucast {

// Gelu-20. approximate "none": x·0.5·(1 + erf(x/√2)) = divide, erf, add, two
// products = 5 forward; backward 8 (the row before opset 20). "tanh":
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) = cube 2, scale 1, add 1, scale
// 1, tanh 1, add 1, two products 2 = 9 forward; backward: t² and 1 − t² (2),
// 3·0.044715·x² + 1 (3: square, scale, add), × √(2/π) (1), × (1 − t²) (1),
// × 0.5·x (2), + 0.5·(1 + t) (3), × g (1) = 13.
Result<OpCost> GeluRule(const OpArgs& a) {
  const std::string approx = a.node.AttrString("approximate").value_or("none");
  if (approx == "none") return Elementwise(5, 8)(a);
  if (approx == "tanh") return Elementwise(9, 13)(a);
  return Status::Error("attribute 'approximate' is '" + approx + "', want 'none' or 'tanh'");
}

// Attention-23 as the MatMul -> scale -> (mask add) -> Softmax -> MatMul it
// replaces, with Hq query heads (GQA/MQA: the kv heads are shared, the
// products are still per query head), T = past + new kv length:
//   S = Q·Kᵀ: 2·B·Hq·Sq·T·D; scale: 1 per score; mask (attn_mask or
//   is_causal): 1 per score; softcap c·tanh(s/c): 3 per score; Softmax: 5
//   per score; Y = P·V: 2·B·Hq·Sq·T·Dv.
// Backward (MatMul's convention: 2·macs per operand needing a gradient; the
// scores' chain only when Q or K needs one): dP = 2·B·Hq·Sq·T·Dv, dV the
// same if V needs one; Softmax 4, scale 1, mask add 1, softcap 3 per score;
// dQ and dK 2·B·Hq·Sq·T·D each if needed. A past key/value (the cache) is
// concatenated: a copy, no FLOPs.
Result<OpCost> AttentionRule(const OpArgs& a) {
  const TensorInfo *q = a.In(0), *k = a.In(1), *v = a.In(2), *y = a.Out(0);
  if (!q || !k || !v || !y) return Status::Error("needs Q, K, V and the output Y");
  const size_t r = q->dims.size();
  if ((r != 3 && r != 4) || k->dims.size() != r || v->dims.size() != r) {
    return Status::Error("Q, K, V have ranks " + std::to_string(q->dims.size()) + ", " + std::to_string(k->dims.size()) +
                         ", " + std::to_string(v->dims.size()) + "; want all 3 or all 4");
  }
  Count b = Count(q->dims[0]), hq, sq, d, dv, skv;
  if (r == 4) {
    hq = Count(q->dims[1]), sq = Count(q->dims[2]), d = Count(q->dims[3]), skv = Count(k->dims[2]), dv = Count(v->dims[3]);
  } else {
    const std::optional<int64_t> qh = a.node.AttrInt("q_num_heads"), kh = a.node.AttrInt("kv_num_heads");
    if (!qh || !kh || *qh < 1 || *kh < 1 || q->dims[2] % *qh != 0 || v->dims[2] % *kh != 0) {
      return Status::Error("3-D inputs need q_num_heads and kv_num_heads that divide the hidden sizes");
    }
    hq = Count(*qh), sq = Count(q->dims[1]), d = Count(q->dims[2] / *qh), skv = Count(k->dims[1]),
    dv = Count(v->dims[2] / *kh);
  }
  Count total = skv;
  if (const TensorInfo* pk = a.In(4); pk && pk->dims.size() == 4) total = total + Count(pk->dims[2]);
  const Count scores = b * hq * sq * total;
  Count per_score = Count(1 + 5);  // scale, softmax
  Count per_score_bwd = Count(1 + 4);
  const bool mask = a.In(3) != nullptr || a.node.AttrInt("is_causal").value_or(0) != 0;
  if (mask) per_score = per_score + Count(1), per_score_bwd = per_score_bwd + Count(1);
  if (a.node.AttrFloat("softcap").value_or(0.0) != 0.0) {
    per_score = per_score + Count(3), per_score_bwd = per_score_bwd + Count(3);
  }
  OpCost c;
  c.forward_flops = Count(2) * scores * d + per_score * scores + Count(2) * scores * dv;
  const bool qk_grad = a.Grad(0) || a.Grad(1);
  if (qk_grad) c.backward_flops += Count(2) * scores * dv + per_score_bwd * scores;
  if (a.Grad(2)) c.backward_flops += Count(2) * scores * dv;
  if (a.Grad(0)) c.backward_flops += Count(2) * scores * d;
  if (a.Grad(1)) c.backward_flops += Count(2) * scores * d;
  return c;
}

// RotaryEmbedding-23: the first rotary_embedding_dim (0: all) of each head's
// D elements are rotated in pairs, y1 = x1·cos − x2·sin, y2 = x2·cos + x1·sin:
// 3 FLOPs per rotated element (two products, one add), the rest copied (0);
// backward the transposed rotation, 3 per rotated element if X needs a
// gradient. The cos/sin caches are tables, not trained (no parameters).
Result<OpCost> RotaryEmbeddingRule(const OpArgs& a) {
  const TensorInfo* x = a.In(0);
  if (!x || (x->dims.size() != 3 && x->dims.size() != 4)) return Status::Error("input X must have rank 3 or 4");
  int64_t head = x->dims.back(), heads = 1;  // heads folded into the last dim (3-D)
  if (x->dims.size() == 3) {
    heads = a.node.AttrInt("num_heads").value_or(0);
    if (heads < 1 || head % heads != 0) return Status::Error("3-D input needs num_heads that divides the hidden size");
    head /= heads;
  }
  int64_t rot = a.node.AttrInt("rotary_embedding_dim").value_or(0);
  if (rot == 0) rot = head;
  if (rot < 0 || rot > head) return Status::Error("rotary_embedding_dim out of range");
  const Count rotated = Product(x->dims, 0, x->dims.size() - 1) * Count(heads) * Count(rot);
  OpCost c;
  c.forward_flops = Count(3) * rotated;
  if (a.Grad(0)) c.backward_flops = Count(3) * rotated;
  c.trainable_inputs = std::vector<int>{};
  return c;
}

// AffineGrid-20: each of the d coordinates of each grid point is a row of
// theta times (base point, 1): d products and d adds = 2d per output element.
// Backward (theta needs a gradient): dθ accumulates g ⊗ (base, 1): 2(d + 1)
// per output element.
Result<OpCost> AffineGridRule(const OpArgs& a) {
  const TensorInfo* y = a.Out(0);
  if (!y || y->dims.empty()) return Status::Error("has no output grid");
  const Count d = Count(y->dims.back());
  OpCost c;
  c.forward_flops = Count(2) * d * Numel(*y);
  if (a.Grad(0)) c.backward_flops = Count(2) * (d + Count(1)) * Numel(*y);
  return c;
}

}  // namespace gpucast
