#include "graph/opset_gaps.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "graph/einsum.h"
#include "util/checked.h"

namespace gpucast {
namespace {

using Dims = std::vector<int64_t>;
using Outs = std::vector<GapOutput>;

Status Error(const std::string& m) { return Status::Error(m); }

const GapInput* In(const std::vector<GapInput>& in, size_t i) {
  return i < in.size() && in[i].present ? &in[i] : nullptr;
}

// Every output unknown but typed like input 0.
Outs Unknown(const Node& n, const std::vector<GapInput>& in) {
  Outs o(n.outputs.size());
  for (auto& g : o) g.elem_type = in.empty() ? 0 : in[0].elem_type;
  return o;
}

// Output 0 is input 0 (elementwise ops, normalisations, rotary embedding).
Result<Outs> SameAsInput(const Node& n, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  if (!o.empty() && In(in, 0)) o[0].dims = in[0].dims;
  return o;
}

// Gelu-20: approximate is "none" (erf form) or "tanh".
Result<Outs> Gelu(const Node& n, int64_t, const std::vector<GapInput>& in) {
  std::string a = n.AttrString("approximate").value_or("none");
  if (a != "none" && a != "tanh") return Error("attribute 'approximate' is '" + a + "', want 'none' or 'tanh'");
  return SameAsInput(n, in);
}

Result<Outs> Elementwise(const Node& n, int64_t, const std::vector<GapInput>& in) { return SameAsInput(n, in); }

// GroupNormalization-18/21: X [N, C, D1...]; num_groups divides C; scale and
// bias are [num_groups] at opset 18, [C] from opset 21. Y is X's shape.
Result<Outs> GroupNorm(const Node& n, int64_t opset, const std::vector<GapInput>& in) {
  std::optional<int64_t> groups = n.AttrInt("num_groups");
  if (!groups) return Error("attribute 'num_groups' missing");
  if (*groups < 1) return Error("num_groups is " + std::to_string(*groups) + ", want >= 1");
  Outs o = Unknown(n, in);
  if (!In(in, 0) || !in[0].dims) return o;
  const Dims& x = *in[0].dims;
  if (x.size() < 2) return Error("input has rank " + std::to_string(x.size()) + ", want >= 2 ([N, C, ...])");
  if (x[1] % *groups != 0) {
    return Error("channels " + std::to_string(x[1]) + " do not divide by num_groups " + std::to_string(*groups));
  }
  const int64_t want = opset >= 21 ? x[1] : *groups;
  for (size_t i : {size_t{1}, size_t{2}}) {
    const GapInput* p = In(in, i);
    if (p && p->dims && *p->dims != Dims{want}) {
      return Error(std::string(i == 1 ? "scale" : "bias") + " has shape " + DimsString(*p->dims) + ", want [" +
                   std::to_string(want) + "] (" + (opset >= 21 ? "channels, opset >= 21" : "num_groups, opset 18-20") +
                   ")");
    }
  }
  if (!o.empty()) o[0].dims = x;
  return o;
}

// RMSNormalization-23: Y is X's shape; axis in [-rank, rank).
Result<Outs> RmsNorm(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  if (!In(in, 0) || !in[0].dims) return o;
  const int64_t r = static_cast<int64_t>(in[0].dims->size());
  const int64_t axis = n.AttrInt("axis").value_or(-1);
  if (axis < -r || axis >= r) return Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (!o.empty()) o[0].dims = in[0].dims;
  return o;
}

// RotaryEmbedding-23: X is [B, H, S, D] or [B, S, H·D] (then num_heads is
// required); Y is X's shape; rotary_embedding_dim <= head size, even.
Result<Outs> Rotary(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  if (!In(in, 0) || !in[0].dims) return o;
  const Dims& x = *in[0].dims;
  int64_t head;
  if (x.size() == 4) {
    head = x[3];
  } else if (x.size() == 3) {
    std::optional<int64_t> h = n.AttrInt("num_heads");
    if (!h || *h < 1) return Error("3-D input needs attribute 'num_heads' >= 1");
    if (x[2] % *h != 0) return Error("hidden size " + std::to_string(x[2]) + " does not divide by num_heads " + std::to_string(*h));
    head = x[2] / *h;
  } else {
    return Error("input has rank " + std::to_string(x.size()) + ", want 3 or 4");
  }
  const int64_t rot = n.AttrInt("rotary_embedding_dim").value_or(0);
  if (rot < 0 || rot > head || rot % 2 != 0) {
    return Error("rotary_embedding_dim " + std::to_string(rot) + " is not even and within head size " + std::to_string(head));
  }
  if (!o.empty()) o[0].dims = x;
  return o;
}

// Attention-23. 4-D: Q [B, Hq, Sq, D], K [B, Hkv, Skv, D], V [B, Hkv, Skv, Dv]
// -> Y [B, Hq, Sq, Dv]. 3-D: Q [B, Sq, Hq·D], K [B, Skv, Hkv·D], V [B, Skv,
// Hkv·Dv] with q_num_heads/kv_num_heads attributes -> Y [B, Sq, Hq·Dv]. Hq is
// a multiple of Hkv (GQA/MQA). past_key/past_value [B, Hkv, P, D|Dv] ->
// present_key/present_value [B, Hkv, P + Skv, D|Dv]; qk_matmul_output
// [B, Hq, Sq, P + Skv].
Result<Outs> Attention(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  for (int i = 0; i < 3; ++i) {
    if (!In(in, i)) return Error(std::string("input ") + "QKV"[i] + " is missing");
    if (!in[i].dims) return o;
  }
  const Dims &q = *in[0].dims, &k = *in[1].dims, &v = *in[2].dims;
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4)) {
    return Error("Q, K, V have ranks " + std::to_string(q.size()) + ", " + std::to_string(k.size()) + ", " +
                 std::to_string(v.size()) + "; want all 3 or all 4");
  }
  int64_t b = q[0], hq, hkv, sq, skv, d, dv;
  if (q.size() == 4) {
    hq = q[1], sq = q[2], d = q[3], hkv = k[1], skv = k[2];
    if (k[3] != d) return Error("head size of K " + std::to_string(k[3]) + " differs from Q's " + std::to_string(d));
    if (v[1] != hkv || v[2] != skv) return Error("V " + DimsString(v) + " does not match K " + DimsString(k) + " in heads and sequence");
    dv = v[3];
  } else {
    std::optional<int64_t> qh = n.AttrInt("q_num_heads"), kh = n.AttrInt("kv_num_heads");
    if (!qh || !kh || *qh < 1 || *kh < 1) return Error("3-D inputs need attributes 'q_num_heads' and 'kv_num_heads' >= 1");
    hq = *qh, hkv = *kh, sq = q[1], skv = k[1];
    if (q[2] % hq != 0) return Error("Q hidden size " + std::to_string(q[2]) + " does not divide by q_num_heads " + std::to_string(hq));
    if (k[2] % hkv != 0 || v[2] % hkv != 0) {
      return Error("K/V hidden sizes " + std::to_string(k[2]) + "/" + std::to_string(v[2]) +
                   " do not divide by kv_num_heads " + std::to_string(hkv));
    }
    d = q[2] / hq, dv = v[2] / hkv;
    if (k[2] / hkv != d) return Error("head size of K " + std::to_string(k[2] / hkv) + " differs from Q's " + std::to_string(d));
    if (v[1] != skv) return Error("V sequence " + std::to_string(v[1]) + " differs from K's " + std::to_string(skv));
  }
  if (k[0] != b || v[0] != b) return Error("batch of Q, K, V differs: " + DimsString(q) + ", " + DimsString(k) + ", " + DimsString(v));
  if (hkv < 1 || hq % hkv != 0) {
    return Error("q heads " + std::to_string(hq) + " are not a multiple of kv heads " + std::to_string(hkv));
  }
  if (!o.empty()) o[0].dims = q.size() == 4 ? Dims{b, hq, sq, dv} : Dims{b, sq, CheckedMul(hq, dv).value_or(-1)};
  if (!o.empty() && o[0].dims->back() < 0) return Error("output size q_num_heads·Dv overflows");
  // The cache: present = past ++ new along the sequence.
  std::optional<int64_t> past = 0;
  const GapInput *pk = In(in, 4), *pv = In(in, 5);
  if ((pk == nullptr) != (pv == nullptr)) return Error("past_key and past_value must be given together");
  if (pk) {
    past = std::nullopt;
    if (pk->dims && pv->dims) {
      const Dims &a = *pk->dims, &c = *pv->dims;
      if (a.size() != 4 || c.size() != 4 || a[0] != b || a[1] != hkv || a[3] != d || c[0] != b || c[1] != hkv ||
          c[3] != dv || c[2] != a[2]) {
        return Error("past_key " + DimsString(a) + " / past_value " + DimsString(c) + " do not match [" + std::to_string(b) +
                     "," + std::to_string(hkv) + ",P," + std::to_string(d) + "|" + std::to_string(dv) + "]");
      }
      past = a[2];
    }
  }
  if (past) {
    const int64_t total = *past + skv;
    if (o.size() > 1) o[1].dims = Dims{b, hkv, total, d};
    if (o.size() > 2) o[2].dims = Dims{b, hkv, total, dv};
    if (o.size() > 3) o[3].dims = Dims{b, hq, sq, total};
  }
  return o;
}

// Numpy broadcasting of inputs 0 and 1 into output 0, of element type `type` (0: input 0's).
Result<Outs> BroadcastTwo(const Node& n, const std::vector<GapInput>& in, ElemType type) {
  Outs o = Unknown(n, in);
  if (type != 0)
    for (GapOutput& g : o) g.elem_type = type;
  if (!In(in, 0) || !In(in, 1) || !in[0].dims || !in[1].dims) return o;
  const Dims &a = *in[0].dims, &c = *in[1].dims;
  const size_t r = std::max(a.size(), c.size());
  Dims out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t y = i + c.size() >= r ? c[i + c.size() - r] : 1;
    if (x != y && x != 1 && y != 1) return Error("shapes " + DimsString(a) + " and " + DimsString(c) + " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  if (!o.empty()) o[0].dims = out;
  return o;
}

// BitwiseAnd/Or/Xor-18: numpy broadcasting of the two inputs, their type.
Result<Outs> Bitwise(const Node& n, int64_t, const std::vector<GapInput>& in) { return BroadcastTwo(n, in, 0); }

// LessOrEqual/GreaterOrEqual-12, -16: numpy broadcasting of the two inputs, bool.
Result<Outs> Compare(const Node& n, int64_t, const std::vector<GapInput>& in) {
  constexpr ElemType kBool = 9;  // ONNX TensorProto.BOOL
  return BroadcastTwo(n, in, kBool);
}

// CenterCropPad-18: input_data's dims on `axes` (default all) become `shape`.
Result<Outs> CenterCropPad(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  if (!In(in, 0) || !In(in, 1) || !in[0].dims || !in[1].value) return o;
  Dims out = *in[0].dims;
  const int64_t r = static_cast<int64_t>(out.size());
  Dims axes = n.AttrInts("axes");
  if (axes.empty()) for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  const std::vector<int64_t>& shape = *in[1].value;
  if (shape.size() != axes.size()) {
    return Error("shape has " + std::to_string(shape.size()) + " values for " + std::to_string(axes.size()) + " axes");
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < 0 || a >= r) return Error("axis " + std::to_string(axes[i]) + " is out of range for rank " + std::to_string(r));
    if (shape[i] < 1) return Error("shape value " + std::to_string(shape[i]) + " is < 1");
    out[a] = shape[i];
  }
  if (!o.empty()) o[0].dims = out;
  return o;
}

// Col2Im-18: input [N, C·∏block, L], image_shape and block_shape (constant
// inputs) -> [N, C, image_shape...]; L must equal the number of blocks
// ∏ ((image + pad_b + pad_e − dilation·(block − 1) − 1) / stride + 1).
Result<Outs> Col2Im(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  if (!In(in, 0) || !In(in, 1) || !In(in, 2) || !in[0].dims || !in[1].value || !in[2].value) return o;
  const Dims& x = *in[0].dims;
  const Dims &image = *in[1].value, &block = *in[2].value;
  const size_t s = image.size();
  if (x.size() != 3) return Error("input has rank " + std::to_string(x.size()) + ", want 3 ([N, C*prod(block_shape), L])");
  if (block.size() != s || s == 0) return Error("image_shape and block_shape have " + std::to_string(s) + " and " + std::to_string(block.size()) + " values");
  Dims dil = n.AttrInts("dilations"), pads = n.AttrInts("pads"), strides = n.AttrInts("strides");
  if (dil.empty()) dil.assign(s, 1);
  if (strides.empty()) strides.assign(s, 1);
  if (pads.empty()) pads.assign(2 * s, 0);
  if (dil.size() != s || strides.size() != s || pads.size() != 2 * s) return Error("dilations/strides/pads do not have one value (pads: two) per spatial dim");
  int64_t blocks = 1, kernel = 1;
  for (size_t i = 0; i < s; ++i) {
    if (image[i] < 1 || block[i] < 1 || dil[i] < 1 || strides[i] < 1 || pads[i] < 0 || pads[i + s] < 0 || image[i] > (int64_t{1} << 40) || block[i] > (int64_t{1} << 20) || dil[i] > (int64_t{1} << 20) || pads[i] > (int64_t{1} << 40) || pads[i + s] > (int64_t{1} << 40)) {
      return Error("image_shape, block_shape, dilations and strides must be >= 1 and pads >= 0 (and bounded)");
    }
    const int64_t span = image[i] + pads[i] + pads[i + s] - dil[i] * (block[i] - 1) - 1;
    if (span < 0) return Error("block of dim " + std::to_string(i) + " does not fit the padded image");
    auto b = CheckedMul(blocks, span / strides[i] + 1);
    auto k = CheckedMul(kernel, block[i]);
    if (!b || !k) return Error("block count overflows");
    blocks = *b, kernel = *k;
  }
  if (x[1] % kernel != 0) return Error("input dim 1 = " + std::to_string(x[1]) + " does not divide by prod(block_shape) " + std::to_string(kernel));
  if (x[2] != blocks) return Error("input dim 2 = " + std::to_string(x[2]) + ", want the block count " + std::to_string(blocks));
  Dims out = {x[0], x[1] / kernel};
  out.insert(out.end(), image.begin(), image.end());
  if (!o.empty()) o[0].dims = out;
  return o;
}

// AffineGrid-20: theta [N, 2, 3] with size [N, C, H, W] -> grid [N, H, W, 2];
// theta [N, 3, 4] with size [N, C, D, H, W] -> [N, D, H, W, 3].
Result<Outs> AffineGrid(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  if (!In(in, 0) || !In(in, 1) || !in[0].dims || !in[1].value) return o;
  const Dims &theta = *in[0].dims, &size = *in[1].value;
  if (size.size() != 4 && size.size() != 5) return Error("size has " + std::to_string(size.size()) + " values, want 4 or 5");
  const int64_t d = static_cast<int64_t>(size.size()) - 2;
  if (theta != Dims{size[0], d, d + 1}) {
    return Error("theta has shape " + DimsString(theta) + ", want " + DimsString({size[0], d, d + 1}) + " for size " + DimsString(size));
  }
  for (int64_t v : size) if (v < 1) return Error("size value " + std::to_string(v) + " is < 1");
  Dims out(size.begin() + 2, size.end());
  out.insert(out.begin(), size[0]);
  out.push_back(d);
  if (!o.empty()) o[0].dims = out;
  return o;
}

// Pad-18/19/21 with its 4th input, axes: the opset-13 rule libonnx 1.12 runs
// wants 2·rank pads and fails. pads holds the begins then the ends of `axes`;
// negative pads crop. Output dim a = d + begin + end, which must be >= 0.
Result<Outs> PadAxes(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  if (!In(in, 0) || !In(in, 1) || !In(in, 3) || !in[0].dims || !in[1].value || !in[3].value) return o;
  Dims out = *in[0].dims;
  const int64_t r = static_cast<int64_t>(out.size());
  const Dims &pads = *in[1].value, &axes = *in[3].value;
  if (pads.size() != 2 * axes.size()) {
    return Error("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(axes.size()) + " axes, want " +
                 std::to_string(2 * axes.size()));
  }
  std::vector<bool> seen(out.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < 0 || a >= r || seen[a]) return Error("axis " + std::to_string(axes[i]) + " is out of range or repeated for rank " + std::to_string(r));
    seen[a] = true;
    auto grown = CheckedAdd(out[a], pads[i]);
    if (grown) grown = CheckedAdd(*grown, pads[i + axes.size()]);
    if (!grown || *grown < 0) return Error("padding axis " + std::to_string(axes[i]) + " gives a negative or overflowing size");
    out[a] = *grown;
  }
  if (!o.empty()) o[0].dims = out;
  return o;
}

// AveragePool-19 with dilations (the opset-11 rule ignores them): per spatial
// dim, the window spans (k − 1)·d + 1; NOTSET: (in + pads − span) / s + 1,
// rounded down, or up with ceil_mode, where a last window that would start in
// the end padding is dropped (ONNX's reference pool, as PyTorch); VALID:
// ⌈(in − span + 1) / s⌉; SAME_*: ⌈in / s⌉.
Result<Outs> AvgPoolDilated(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  if (!In(in, 0) || !in[0].dims) return o;
  const Dims& x = *in[0].dims;
  if (x.size() < 3) return Error("input has rank " + std::to_string(x.size()) + ", want >= 3");
  const size_t s = x.size() - 2;
  Dims k = n.AttrInts("kernel_shape"), dil = n.AttrInts("dilations"), st = n.AttrInts("strides"), pads = n.AttrInts("pads");
  if (st.empty()) st.assign(s, 1);
  if (pads.empty()) pads.assign(2 * s, 0);
  if (k.size() != s || dil.size() != s || st.size() != s || pads.size() != 2 * s) {
    return Error("kernel_shape, dilations, strides (and pads, twice) need one value per spatial dim (" + std::to_string(s) + ")");
  }
  const std::string pad = n.AttrString("auto_pad").value_or("NOTSET");
  const bool ceil = n.AttrInt("ceil_mode").value_or(0) != 0;
  Dims out = {x[0], x[1]};
  for (size_t i = 0; i < s; ++i) {
    const int64_t limit = int64_t{1} << 20;  // (k − 1)·d and in + pads stay far inside int64
    if (k[i] < 1 || dil[i] < 1 || st[i] < 1 || pads[i] < 0 || pads[i + s] < 0 || k[i] > limit || dil[i] > limit ||
        pads[i] > (int64_t{1} << 40) || pads[i + s] > (int64_t{1} << 40)) {
      return Error("kernel_shape, dilations and strides must be >= 1 and pads >= 0 (and bounded)");
    }
    const int64_t span = (k[i] - 1) * dil[i] + 1, len = x[i + 2];
    int64_t v;
    if (pad == "SAME_UPPER" || pad == "SAME_LOWER") {
      v = (len + st[i] - 1) / st[i];
    } else if (pad == "VALID") {
      if (len < span) return Error("dilated window " + std::to_string(span) + " is larger than input dim " + std::to_string(len));
      v = (len - span) / st[i] + 1;
    } else if (pad == "NOTSET") {
      const int64_t room = len + pads[i] + pads[i + s] - span;
      if (room < 0) return Error("dilated window " + std::to_string(span) + " is larger than the padded input dim");
      v = (ceil ? (room + st[i] - 1) / st[i] : room / st[i]) + 1;
      if (ceil && (v - 1) * st[i] >= len + pads[i]) --v;
    } else {
      return Error("auto_pad is '" + pad + "'");
    }
    out.push_back(v);
  }
  if (!o.empty()) o[0].dims = out;
  return o;
}

// Split-18 with num_outputs (no split input): chunks of ⌈d / n⌉ along axis,
// the last smaller when d does not divide (the opset-13 rule libonnx runs
// wants an even split). Every chunk must be non-empty.
Result<Outs> SplitNumOutputs(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  const int64_t parts = n.AttrInt("num_outputs").value_or(0);
  if (parts < 1 || parts != static_cast<int64_t>(n.outputs.size())) {
    return Error("num_outputs is " + std::to_string(parts) + " for " + std::to_string(n.outputs.size()) + " outputs");
  }
  if (!In(in, 0) || !in[0].dims) return o;
  const Dims& x = *in[0].dims;
  const int64_t r = static_cast<int64_t>(x.size());
  int64_t axis = n.AttrInt("axis").value_or(0);
  if (axis < -r || axis >= r) return Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  const int64_t d = x[axis], chunk = (d + parts - 1) / parts;
  if ((parts - 1) * chunk >= d) {
    return Error("dim " + std::to_string(d) + " cannot be split into " + std::to_string(parts) + " non-empty chunks of " +
                 std::to_string(chunk));
  }
  for (int64_t i = 0; i < parts; ++i) {
    Dims y = x;
    y[axis] = i + 1 < parts ? chunk : d - (parts - 1) * chunk;
    o[i].dims = y;
  }
  return o;
}

// Resize-18/19 with `axes` or keep_aspect_ratio_policy "not_larger"/
// "not_smaller" (the opset-13 rule libonnx runs knows neither), from constant
// sizes: stretch sets each listed axis to its size; the policies take one
// scale, the min (not_larger) or max (not_smaller) of size/in over the axes,
// and set each axis to round_half_up(scale·in). Float scales with axes are
// not read here: the output stays unknown, with this reason.
Result<Outs> ResizeAxes(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  if (!In(in, 0) || !in[0].dims) return o;
  const Dims& x = *in[0].dims;
  const int64_t r = static_cast<int64_t>(x.size());
  if (!In(in, 3)) {
    if (In(in, 2)) return Error("scales with axes or a keep_aspect_ratio_policy are not read by gpucast's shape rule; give sizes");
    return Error("neither scales nor sizes given");
  }
  if (!in[3].value) return o;
  const std::vector<int64_t>& sizes = *in[3].value;
  Dims axes = n.AttrInts("axes");
  if (axes.empty()) for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  if (sizes.size() != axes.size()) {
    return Error("sizes has " + std::to_string(sizes.size()) + " values for " + std::to_string(axes.size()) + " axes");
  }
  for (int64_t& a : axes) {
    if (a < -r || a >= r) return Error("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
    if (a < 0) a += r;
  }
  for (int64_t v : sizes)
    if (v < 1 || v > (int64_t{1} << 40)) return Error("size " + std::to_string(v) + " is not in [1, 2^40]");
  const std::string policy = n.AttrString("keep_aspect_ratio_policy").value_or("stretch");
  Dims out = x;
  if (policy == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i) out[axes[i]] = sizes[i];
  } else if (policy == "not_larger" || policy == "not_smaller") {
    double scale = 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (x[axes[i]] == 0) return Error("input dim " + std::to_string(axes[i]) + " is 0");
      const double si = static_cast<double>(sizes[i]) / static_cast<double>(x[axes[i]]);
      scale = i == 0 ? si : policy == "not_larger" ? std::min(scale, si) : std::max(scale, si);
    }
    for (int64_t a : axes) out[a] = static_cast<int64_t>(std::floor(scale * static_cast<double>(x[a]) + 0.5));
  } else {
    return Error("keep_aspect_ratio_policy is '" + policy + "', want stretch, not_larger or not_smaller");
  }
  if (!o.empty()) o[0].dims = out;
  return o;
}

// DeformConv-19: X [N, C, in...], W [oC, C/group, k...], offset [N,
// offset_group·2·∏k, out...] -> Y [N, oC, out...] (the offsets are given at
// each output position).
Result<Outs> DeformConv(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  if (!In(in, 0) || !In(in, 1) || !In(in, 2)) return Error("needs X, W and offset");
  if (!in[0].dims || !in[1].dims || !in[2].dims) return o;
  const Dims &x = *in[0].dims, &w = *in[1].dims, &off = *in[2].dims;
  if (x.size() < 3 || w.size() != x.size() || off.size() != x.size()) {
    return Error("X, W, offset have ranks " + std::to_string(x.size()) + ", " + std::to_string(w.size()) + ", " +
                 std::to_string(off.size()) + "; want the same rank >= 3");
  }
  const int64_t group = n.AttrInt("group").value_or(1), og = n.AttrInt("offset_group").value_or(1);
  if (group < 1 || og < 1 || w[1] * group != x[1]) {
    return Error("W has " + std::to_string(w[1]) + " input channels per group × group " + std::to_string(group) +
                 ", X has " + std::to_string(x[1]));
  }
  int64_t k = 1;
  for (size_t i = 2; i < w.size(); ++i) {
    auto m = CheckedMul(k, w[i]);
    if (!m) return Error("kernel size overflows");
    k = *m;
  }
  auto want = CheckedMul(og, 2 * k);
  if (off[0] != x[0] || !want || off[1] != *want) {
    return Error("offset " + DimsString(off) + " does not match [" + std::to_string(x[0]) + ", offset_group·2·kernel = " +
                 (want ? std::to_string(*want) : std::string("?")) + ", ...]");
  }
  Dims out = {x[0], w[0]};
  out.insert(out.end(), off.begin() + 2, off.end());
  if (!o.empty()) o[0].dims = out;
  return o;
}

// Einsum-12: libonnx 1.12 infers only the output's rank; its dims follow from
// the equation and the input shapes (graph/einsum.h, the parser the cost rule
// uses too). An input of unknown shape leaves the output unknown.
Result<Outs> Einsum(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  std::vector<Dims> shapes;
  for (const GapInput& g : in) {
    if (!g.present || !g.dims) return o;
    shapes.push_back(*g.dims);
  }
  std::optional<std::string> equation = n.AttrString("equation");
  if (!equation || shapes.empty() || o.empty()) return o;
  ASSIGN_OR_RETURN(EinsumSpace space, ResolveEinsum(*equation, shapes));
  o[0].dims = space.output_dims;
  return o;
}

// OneHot-9/11 (F.one_hot: label smoothing, class masks): libonnx 1.12 infers only the output's
// rank; it is the indices' shape with the depth (a constant integer input) inserted at `axis`, in
// the values' type. A depth that is not a constant integer leaves the output unknown.
Result<Outs> OneHot(const Node& n, int64_t, const std::vector<GapInput>& in) {
  Outs o = Unknown(n, in);
  const GapInput *indices = In(in, 0), *depth = In(in, 1), *values = In(in, 2);
  if (o.empty() || !indices || !indices->dims || !depth || !depth->value || !values) return o;
  o[0].elem_type = values->elem_type;
  if (depth->value->size() != 1) return Error("depth has " + std::to_string(depth->value->size()) + " values, want 1");
  const int64_t d = (*depth->value)[0];
  if (d < 1) return Error("depth is " + std::to_string(d) + ", want >= 1");
  const int64_t rank = static_cast<int64_t>(indices->dims->size()) + 1;
  const int64_t axis = n.AttrInt("axis").value_or(-1);
  if (axis < -rank || axis >= rank)
    return Error("attribute 'axis' is " + std::to_string(axis) + ", output has rank " + std::to_string(rank));
  Dims out = *indices->dims;
  out.insert(out.begin() + (axis < 0 ? axis + rank : axis), d);
  o[0].dims = out;
  return o;
}

bool HasInput(const Node& n, size_t i) { return n.inputs.size() > i && !n.inputs[i].empty(); }
bool Dilated(const Node& n) {
  for (int64_t d : n.AttrInts("dilations"))
    if (d != 1) return true;
  return false;
}

using GapFn = Result<Outs> (*)(const Node&, int64_t, const std::vector<GapInput>&);
struct GapRule {
  int since;
  GapFn fn;
  // For ops libonnx 1.12 knows: whether the node uses what its older schema
  // gets wrong (then the rule here replaces it); nullptr: always.
  bool (*applies)(const Node&) = nullptr;
};

// THE table: op -> the opset it appeared in (onnx/docs/Operators.md) and its rule.
const std::map<std::string, GapRule>& Table() {
  static const std::map<std::string, GapRule> t = {
      {"Mish", {18, Elementwise}},
      {"BitwiseNot", {18, Elementwise}},
      {"BitwiseAnd", {18, Bitwise}},
      {"BitwiseOr", {18, Bitwise}},
      {"BitwiseXor", {18, Bitwise}},
      {"CenterCropPad", {18, CenterCropPad}},
      {"Col2Im", {18, Col2Im}},
      {"GroupNormalization", {18, GroupNorm}},
      {"Gelu", {20, Gelu}},
      {"AffineGrid", {20, AffineGrid}},
      {"RMSNormalization", {23, RmsNorm}},
      {"RotaryEmbedding", {23, Rotary}},
      {"Attention", {23, Attention}},
      // Known to libonnx 1.12 at an older version whose rule is wrong for these nodes.
      {"Pad", {18, PadAxes, [](const Node& n) { return HasInput(n, 3); }}},
      {"AveragePool", {19, AvgPoolDilated, Dilated}},
      {"Split", {18, SplitNumOutputs, [](const Node& n) { return n.AttrInt("num_outputs").has_value() && !HasInput(n, 1); }}},
      {"Resize", {18, ResizeAxes, [](const Node& n) {
                    return !n.AttrInts("axes").empty() ||
                           n.AttrString("keep_aspect_ratio_policy").value_or("stretch") != "stretch";
                  }}},
      {"DeformConv", {19, DeformConv}},
      // Known to libonnx 1.12 by a function body and no rule of their own (python's
      // onnx.shape_inference runs the body; the loader calls the schema's rule, which is absent).
      {"LessOrEqual", {12, Compare}},
      {"GreaterOrEqual", {12, Compare}},
      {"MeanVarianceNormalization", {9, Elementwise}},
      // Known to libonnx 1.12, which infers only the output's rank.
      {"Einsum", {12, Einsum}},
      {"OneHot", {9, OneHot}},
  };
  return t;
}

}  // namespace

int GapOpSince(const std::string& op_type) {
  auto it = Table().find(op_type);
  return it == Table().end() ? 0 : it->second.since;
}

bool GapRuleApplies(const Node& node, int64_t opset) {
  auto it = Table().find(node.op_type);
  return it != Table().end() && opset >= it->second.since && (!it->second.applies || it->second.applies(node));
}

Result<std::vector<GapOutput>> InferGapOutputs(const Node& node, int64_t opset, const std::vector<GapInput>& inputs) {
  auto it = Table().find(node.op_type);
  if (!GapRuleApplies(node, opset)) return Unknown(node, inputs);
  // Elementwise rules keep the input type; the rest set it here too.
  return it->second.fn(node, opset, inputs);
}

}  // namespace gpucast
