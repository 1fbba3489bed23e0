#include "graph/shape_fold.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "graph/graph.h"
#include "util/checked.h"

namespace gpucast {
namespace {

using Dims = std::vector<int64_t>;
using onnx::TensorProto;

constexpr int32_t kInt64 = TensorProto::INT64;
constexpr int32_t kBool = TensorProto::BOOL;

// Element count when it is at most kMaxFoldElements.
std::optional<int64_t> SmallNumel(const Dims& dims) {
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
  }
  auto n = CheckedProduct(dims);
  if (!n || *n > kMaxFoldElements) return std::nullopt;
  return n;
}

const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t AttrInt(const onnx::NodeProto& n, const char* name, int64_t dflt) {
  const auto* a = Attr(n, name);
  return a && a->type() == onnx::AttributeProto::INT ? a->i() : dflt;
}

std::optional<Dims> AttrInts(const onnx::NodeProto& n, const char* name) {
  const auto* a = Attr(n, name);
  if (!a || a->type() != onnx::AttributeProto::INTS) return std::nullopt;
  return Dims(a->ints().begin(), a->ints().end());
}

// Normalizes axis into [0, rank); nullopt when out of range.
std::optional<int64_t> NormAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

// Row-major multi-index of flat index i.
Dims Unflatten(int64_t i, const Dims& dims) {
  Dims idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    idx[k] = i % dims[k];
    i /= dims[k];
  }
  return idx;
}

int64_t Flatten(const Dims& idx, const Dims& dims) {
  int64_t f = 0;
  for (size_t k = 0; k < dims.size(); ++k) f = f * dims[k] + idx[k];
  return f;
}

// A real rounded to its element type (FLOAT: to float); nullopt when not finite.
std::optional<double> RoundReal(double x, int32_t t) {
  if (!std::isfinite(x)) return std::nullopt;
  if (t == TensorProto::FLOAT) {
    if (std::abs(x) > std::numeric_limits<float>::max()) return std::nullopt;  // the cast would be UB
    x = static_cast<float>(x);
  }
  return x;
}

// The value of type `t` and dims `dims` made of the elements `src` of `v`
// (flat indices): every data-movement op (Gather, Slice, Concat, Transpose,
// Expand, Tile) is such a pick.
FoldValue Pick(const FoldValue& v, Dims dims, const Dims& src) {
  FoldValue out{v.elem_type, std::move(dims), {}, {}};
  if (v.IsReal()) {
    out.reals.reserve(src.size());
    for (int64_t i : src) out.reals.push_back(v.reals[i]);
  } else {
    out.values.reserve(src.size());
    for (int64_t i : src) out.values.push_back(v.values[i]);
  }
  return out;
}

// Numpy broadcasting of several shapes.
std::optional<Dims> BroadcastDims(const std::vector<const FoldValue*>& ins) {
  size_t rank = 0;
  for (const auto* v : ins) rank = std::max(rank, v->dims.size());
  Dims out(rank, 1);
  for (const auto* v : ins) {
    size_t off = rank - v->dims.size();
    for (size_t k = 0; k < v->dims.size(); ++k) {
      int64_t d = v->dims[k];
      if (d == out[off + k] || d == 1) continue;
      if (out[off + k] != 1) return std::nullopt;
      out[off + k] = d;
    }
  }
  return out;
}

// Flat index into `v` of the output multi-index `idx` under broadcasting.
int64_t BroadcastIndex(const FoldValue& v, const Dims& idx) {
  size_t off = idx.size() - v.dims.size();
  int64_t f = 0;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    f = f * v.dims[k] + (v.dims[k] == 1 ? 0 : idx[off + k]);
  }
  return f;
}

// The broadcast output dims of `ins` and, per input, the flat source index of
// each output element; nullopt when they do not broadcast or are too large.
struct Broadcast {
  Dims dims;
  std::vector<Dims> src;  // [input][output element]
};
std::optional<Broadcast> BroadcastAll(const std::vector<const FoldValue*>& ins) {
  auto dims = BroadcastDims(ins);
  if (!dims) return std::nullopt;
  auto n = SmallNumel(*dims);
  if (!n) return std::nullopt;
  Broadcast b{*dims, std::vector<Dims>(ins.size())};
  for (auto& s : b.src) s.reserve(*n);
  for (int64_t i = 0; i < *n; ++i) {
    Dims idx = Unflatten(i, *dims);
    for (size_t k = 0; k < ins.size(); ++k) b.src[k].push_back(BroadcastIndex(*ins[k], idx));
  }
  return b;
}

using IntFn = std::function<std::optional<int64_t>(const Dims&)>;
using RealFn = std::function<std::optional<double>(const std::vector<double>&)>;

// Evaluates an elementwise op over the broadcast of `ins`, which all have the
// same element type: `f` on integers, `g` on reals (null: not defined on
// reals). The output has type `out_type` (0: the inputs').
std::optional<FoldValue> Elementwise(const std::vector<const FoldValue*>& ins, int32_t out_type,
                                     const IntFn& f, const RealFn& g) {
  if (ins.empty()) return std::nullopt;
  for (const auto* v : ins) {
    if (v->elem_type != ins[0]->elem_type) return std::nullopt;
  }
  const bool real = ins[0]->IsReal();
  if (real ? !g : !f) return std::nullopt;
  auto b = BroadcastAll(ins);
  if (!b) return std::nullopt;
  if (out_type == 0) out_type = ins[0]->elem_type;
  FoldValue out{out_type, b->dims, {}, {}};
  const bool real_out = out.IsReal();
  const size_t n = b->src.empty() ? 0 : b->src[0].size();
  Dims iargs(ins.size());
  std::vector<double> rargs(ins.size());
  for (size_t i = 0; i < n; ++i) {
    std::optional<double> r;
    std::optional<int64_t> v;
    if (real) {
      for (size_t k = 0; k < ins.size(); ++k) rargs[k] = ins[k]->reals[b->src[k][i]];
      r = g(rargs);
      if (!r) return std::nullopt;
    } else {
      for (size_t k = 0; k < ins.size(); ++k) iargs[k] = ins[k]->values[b->src[k][i]];
      v = f(iargs);
      if (!v) return std::nullopt;
    }
    if (real_out) {
      auto x = RoundReal(real ? *r : static_cast<double>(*v), out_type);
      if (!x) return std::nullopt;
      out.reals.push_back(*x);
    } else if (real) {
      out.values.push_back(*r != 0);  // comparisons of reals give bools
    } else {
      out.values.push_back(*v);
    }
  }
  return out;
}

// Whether a value fits the element type (for Cast).
bool Fits(int64_t v, int32_t t) {
  switch (t) {
    case TensorProto::INT8: return v >= INT8_MIN && v <= INT8_MAX;
    case TensorProto::UINT8: return v >= 0 && v <= UINT8_MAX;
    case TensorProto::INT16: return v >= INT16_MIN && v <= INT16_MAX;
    case TensorProto::UINT16: return v >= 0 && v <= UINT16_MAX;
    case TensorProto::INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case TensorProto::UINT32: return v >= 0 && v <= UINT32_MAX;
    case TensorProto::UINT64: return v >= 0;
    default: return true;
  }
}

// Selects, per dim, a list of source indices; the output is their product.
std::optional<FoldValue> Select(const FoldValue& data, const std::vector<Dims>& picks) {
  Dims out_dims;
  for (const auto& p : picks) out_dims.push_back(static_cast<int64_t>(p.size()));
  auto n = SmallNumel(out_dims);
  if (!n) return std::nullopt;
  Dims src;
  src.reserve(*n);
  for (int64_t i = 0; i < *n; ++i) {
    Dims idx = Unflatten(i, out_dims);
    for (size_t k = 0; k < idx.size(); ++k) idx[k] = picks[k][idx[k]];
    src.push_back(Flatten(idx, data.dims));
  }
  return Pick(data, out_dims, src);
}

// Axes from the attribute (older opsets) or input `input_index` (newer).
std::optional<Dims> AxesOf(const onnx::NodeProto& n, const FoldContext& ctx, int input_index) {
  if (auto a = AttrInts(n, "axes")) return a;
  if (n.input_size() > input_index && !n.input(input_index).empty()) {
    const FoldValue* v = ctx.value(n.input(input_index));
    if (!v || v->IsReal()) return std::nullopt;
    return v->values;
  }
  return Dims{};
}

// The integer value of input i (nullptr when unknown or real).
const FoldValue* IntInput(const onnx::NodeProto& n, const FoldContext& ctx, int i) {
  if (n.input_size() <= i || n.input(i).empty()) return nullptr;
  const FoldValue* v = ctx.value(n.input(i));
  return v && !v->IsReal() ? v : nullptr;
}

std::optional<FoldValue> FoldShape(const onnx::NodeProto& n, const FoldContext& ctx) {
  auto s = ctx.shape(n.input(0));
  if (!s) return std::nullopt;
  int64_t r = static_cast<int64_t>(s->size());
  int64_t start = AttrInt(n, "start", 0), end = AttrInt(n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  Dims vals(s->begin() + start, s->begin() + std::max(start, end));
  return FoldValue{kInt64, {static_cast<int64_t>(vals.size())}, vals, {}};
}

std::optional<FoldValue> FoldGather(const FoldValue& data, const FoldValue& indices, int64_t axis_attr) {
  int64_t rank = static_cast<int64_t>(data.dims.size());
  auto axis = NormAxis(axis_attr, rank);
  if (!axis || indices.IsReal()) return std::nullopt;
  int64_t len = data.dims[*axis];
  Dims out_dims(data.dims.begin(), data.dims.begin() + *axis);
  out_dims.insert(out_dims.end(), indices.dims.begin(), indices.dims.end());
  out_dims.insert(out_dims.end(), data.dims.begin() + *axis + 1, data.dims.end());
  auto n = SmallNumel(out_dims);
  if (!n) return std::nullopt;
  size_t q = indices.dims.size();
  Dims src;
  for (int64_t i = 0; i < *n; ++i) {
    Dims idx = Unflatten(i, out_dims);
    Dims ind_idx(idx.begin() + *axis, idx.begin() + *axis + q);
    int64_t g = indices.values[Flatten(ind_idx, indices.dims)];
    if (g < -len || g >= len) return std::nullopt;
    if (g < 0) g += len;
    Dims from(idx.begin(), idx.begin() + *axis);
    from.push_back(g);
    from.insert(from.end(), idx.begin() + *axis + q, idx.end());
    src.push_back(Flatten(from, data.dims));
  }
  return Pick(data, out_dims, src);
}

std::optional<FoldValue> FoldConcat(const std::vector<const FoldValue*>& ins, int64_t axis_attr) {
  if (ins.empty()) return std::nullopt;
  int64_t rank = static_cast<int64_t>(ins[0]->dims.size());
  auto axis = NormAxis(axis_attr, rank);
  if (!axis) return std::nullopt;
  Dims out_dims = ins[0]->dims;
  out_dims[*axis] = 0;
  for (const auto* v : ins) {
    if (static_cast<int64_t>(v->dims.size()) != rank || v->elem_type != ins[0]->elem_type) return std::nullopt;
    for (int64_t k = 0; k < rank; ++k) {
      if (k != *axis && v->dims[k] != ins[0]->dims[k]) return std::nullopt;
    }
    out_dims[*axis] += v->dims[*axis];
  }
  if (!SmallNumel(out_dims)) return std::nullopt;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < *axis; ++k) outer *= out_dims[k];
  for (int64_t k = *axis + 1; k < rank; ++k) inner *= out_dims[k];
  FoldValue out{ins[0]->elem_type, out_dims, {}, {}};
  for (int64_t o = 0; o < outer; ++o) {
    for (const auto* v : ins) {
      int64_t chunk = v->dims[*axis] * inner;
      if (v->IsReal()) {
        out.reals.insert(out.reals.end(), v->reals.begin() + o * chunk, v->reals.begin() + (o + 1) * chunk);
      } else {
        out.values.insert(out.values.end(), v->values.begin() + o * chunk, v->values.begin() + (o + 1) * chunk);
      }
    }
  }
  return out;
}

std::optional<FoldValue> FoldSlice(const onnx::NodeProto& n, const FoldContext& ctx,
                                   const FoldValue& data) {
  Dims starts, ends, axes, steps;
  if (ctx.opset < 10) {
    auto s = AttrInts(n, "starts"), e = AttrInts(n, "ends");
    if (!s || !e) return std::nullopt;
    starts = *s;
    ends = *e;
    if (auto a = AttrInts(n, "axes")) axes = *a;
  } else {
    const FoldValue *s = IntInput(n, ctx, 1), *e = IntInput(n, ctx, 2);
    if (!s || !e) return std::nullopt;
    starts = s->values;
    ends = e->values;
    for (int i : {3, 4}) {
      if (n.input_size() > i && !n.input(i).empty()) {
        const FoldValue* v = IntInput(n, ctx, i);
        if (!v) return std::nullopt;
        (i == 3 ? axes : steps) = v->values;
      }
    }
  }
  int64_t rank = static_cast<int64_t>(data.dims.size());
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return std::nullopt;
  }
  std::vector<Dims> picks(rank);
  for (int64_t k = 0; k < rank; ++k) {
    for (int64_t i = 0; i < data.dims[k]; ++i) picks[k].push_back(i);
  }
  for (size_t j = 0; j < axes.size(); ++j) {
    auto axis = NormAxis(axes[j], rank);
    if (!axis || steps[j] == 0) return std::nullopt;
    int64_t dim = data.dims[*axis], step = steps[j];
    // ONNX Slice: negative values count from the end; starts clamp to
    // [0, dim] (step > 0) or [0, dim - 1] (step < 0), ends to [0, dim] or [-1, dim - 1].
    if (dim == 0) {
      picks[*axis].clear();
      continue;
    }
    auto wrap = [&](int64_t v) { return v < 0 ? (v < -dim ? -1 : v + dim) : v; };
    int64_t s = wrap(starts[j]), e = wrap(ends[j]);
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    Dims p;
    for (int64_t i = s; step > 0 ? i < e : i > e;) {
      p.push_back(i);
      auto next = CheckedAdd(i, step);
      if (!next) break;
      i = *next;
    }
    picks[*axis] = p;
  }
  return Select(data, picks);
}

std::optional<FoldValue> FoldReshape(const FoldValue& data, const FoldValue& shape, bool allowzero) {
  Dims out = shape.values;
  int64_t infer = -1, known = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k] == 0 && !allowzero) {
      if (k >= data.dims.size()) return std::nullopt;
      out[k] = data.dims[k];
    }
    if (out[k] == -1) {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<int64_t>(k);
    } else if (out[k] < 0) {
      return std::nullopt;
    } else {
      auto m = CheckedMul(known, out[k]);
      if (!m) return std::nullopt;
      known = *m;
    }
  }
  int64_t total = data.Size();
  if (infer >= 0) {
    if (known == 0 || total % known != 0) return std::nullopt;
    out[infer] = total / known;
  } else if (known != total) {
    return std::nullopt;
  }
  FoldValue r = data;
  r.dims = out;
  return r;
}

std::optional<FoldValue> FoldTranspose(const onnx::NodeProto& n, const FoldValue& x) {
  int64_t rank = static_cast<int64_t>(x.dims.size());
  Dims perm;
  if (auto p = AttrInts(n, "perm")) {
    perm = *p;
  } else {
    for (int64_t k = rank; k-- > 0;) perm.push_back(k);
  }
  if (static_cast<int64_t>(perm.size()) != rank) return std::nullopt;
  std::vector<bool> used(rank, false);
  Dims out_dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || used[p]) return std::nullopt;
    used[p] = true;
    out_dims.push_back(x.dims[p]);
  }
  Dims src;
  src.reserve(x.Size());
  for (int64_t i = 0; i < x.Size(); ++i) {
    Dims idx = Unflatten(i, out_dims), from(rank);
    for (int64_t k = 0; k < rank; ++k) from[perm[k]] = idx[k];
    src.push_back(Flatten(from, x.dims));
  }
  return Pick(x, out_dims, src);
}

std::optional<FoldValue> FoldReduce(const onnx::NodeProto& n, const FoldContext& ctx,
                                    const FoldValue& data) {
  const std::string& op = n.op_type();
  if (data.IsReal()) return std::nullopt;
  // ReduceSum takes axes as an input from opset 13 on; the others from 18.
  bool axes_input = (op == "ReduceSum" && ctx.opset >= 13) || ctx.opset >= 18;
  Dims axes;
  if (axes_input) {
    auto a = AxesOf(n, ctx, 1);
    if (!a) return std::nullopt;
    axes = *a;
  } else if (auto a = AttrInts(n, "axes")) {
    axes = *a;
  }
  bool keepdims = AttrInt(n, "keepdims", 1) != 0;
  int64_t rank = static_cast<int64_t>(data.dims.size());
  std::vector<bool> reduce(rank, axes.empty());
  if (axes.empty() && AttrInt(n, "noop_with_empty_axes", 0) != 0) return data;
  for (int64_t a : axes) {
    auto ax = NormAxis(a, rank);
    if (!ax) return std::nullopt;
    reduce[*ax] = true;
  }
  Dims out_dims;
  for (int64_t k = 0; k < rank; ++k) {
    if (!reduce[k]) out_dims.push_back(data.dims[k]);
    else if (keepdims) out_dims.push_back(1);
  }
  auto on = SmallNumel(out_dims);
  if (!on) return std::nullopt;
  FoldValue out{data.elem_type, out_dims, {}, {}};
  std::vector<bool> seen(*on, false);
  out.values.assign(*on, 0);
  for (int64_t i = 0; i < data.Size(); ++i) {
    Dims idx = Unflatten(i, data.dims), oidx;
    for (int64_t k = 0; k < rank; ++k) {
      if (!reduce[k]) oidx.push_back(idx[k]);
      else if (keepdims) oidx.push_back(0);
    }
    int64_t f = Flatten(oidx, out_dims);
    int64_t v = data.values[i];
    if (!seen[f]) {
      out.values[f] = v;
      seen[f] = true;
      continue;
    }
    int64_t& acc = out.values[f];
    if (op == "ReduceProd") {
      auto m = CheckedMul(acc, v);
      if (!m) return std::nullopt;
      acc = *m;
    } else if (op == "ReduceSum") {
      auto s = CheckedAdd(acc, v);
      if (!s) return std::nullopt;
      acc = *s;
    } else if (op == "ReduceMax") {
      acc = std::max(acc, v);
    } else {
      acc = std::min(acc, v);
    }
  }
  for (int64_t f = 0; f < *on; ++f) {
    if (!seen[f]) out.values[f] = op == "ReduceProd" ? 1 : 0;
    if (!seen[f] && (op == "ReduceMax" || op == "ReduceMin")) return std::nullopt;
  }
  return out;
}

// Min, Max and the comparisons, the same on integers and reals (a comparison
// folds to 1 or 0 of the inputs' type); nullopt for any other op.
template <typename T>
std::optional<T> MinMaxCompare(const std::string& op, T a, T b) {
  if (op == "Min") return std::min(a, b);
  if (op == "Max") return std::max(a, b);
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  if (op == "Greater") return a > b;
  if (op == "LessOrEqual") return a <= b;
  if (op == "GreaterOrEqual") return a >= b;
  return std::nullopt;
}

std::optional<int64_t> Binary(const std::string& op, int64_t a, int64_t b) {
  if (op == "Add") return CheckedAdd(a, b);
  if (op == "Sub") {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
    return r;
  }
  if (op == "Mul") return CheckedMul(a, b);
  if (op == "Div" || op == "Mod") {
    if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
    if (op == "Div") return a / b;  // C truncation, as ONNX runtimes do for integers
    int64_t m = a % b;                // fmod=0: sign follows the divisor
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
  }
  if (op == "And") return (a != 0) && (b != 0);
  if (op == "Or") return (a != 0) || (b != 0);
  if (op == "Xor") return (a != 0) != (b != 0);
  return MinMaxCompare(op, a, b);
}

// The same ops on reals (the inputs of an ONNX op share one type); nullopt
// for ops not defined on reals (Mod without fmod, the logical ops).
std::optional<double> BinaryReal(const std::string& op, double a, double b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return b == 0 ? std::nullopt : std::optional<double>(a / b);
  if (op == "Pow") return std::pow(a, b);
  return MinMaxCompare(op, a, b);
}

bool IsComparison(const std::string& op) {
  return op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
         op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor";
}

std::optional<FoldValue> FoldCast(const FoldValue& x, int64_t to_attr) {
  const int32_t to = static_cast<int32_t>(to_attr);
  if (!IsIntElemType(to) && !IsRealElemType(to)) return std::nullopt;
  FoldValue out{to, x.dims, {}, {}};
  if (IsRealElemType(to)) {
    for (int64_t i = 0; i < x.Size(); ++i) {
      auto r = RoundReal(x.IsReal() ? x.reals[i] : static_cast<double>(x.values[i]), to);
      if (!r) return std::nullopt;
      out.reals.push_back(*r);
    }
    return out;
  }
  for (int64_t i = 0; i < x.Size(); ++i) {
    int64_t v;
    if (x.IsReal()) {
      double r = x.reals[i];
      if (to == kBool) {
        v = r != 0;
      } else {
        r = std::trunc(r);  // toward zero, as C and ONNX runtimes cast
        if (!(r >= -9.2e18 && r <= 9.2e18)) return std::nullopt;
        v = static_cast<int64_t>(r);
      }
    } else {
      v = x.values[i];
      if (to == kBool) v = v != 0;
    }
    if (!Fits(v, to)) return std::nullopt;
    out.values.push_back(v);
  }
  return out;
}

std::optional<FoldValue> FoldRange(const FoldValue& s, const FoldValue& l, const FoldValue& d) {
  if (s.Size() != 1 || l.Size() != 1 || d.Size() != 1) return std::nullopt;
  if (s.elem_type != l.elem_type || s.elem_type != d.elem_type) return std::nullopt;
  if (s.IsReal()) {
    double start = s.reals[0], limit = l.reals[0], delta = d.reals[0];
    if (delta == 0) return std::nullopt;
    double count = std::max(std::ceil((limit - start) / delta), 0.0);  // ONNX Range's element count
    if (!(count <= static_cast<double>(kMaxFoldElements))) return std::nullopt;
    FoldValue out{s.elem_type, {static_cast<int64_t>(count)}, {}, {}};
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
      auto r = RoundReal(start + static_cast<double>(i) * delta, s.elem_type);
      if (!r) return std::nullopt;
      out.reals.push_back(*r);
    }
    return out;
  }
  int64_t start = s.values[0], limit = l.values[0], delta = d.values[0];
  if (delta == 0) return std::nullopt;
  Dims vals;
  for (int64_t x = start; delta > 0 ? x < limit : x > limit;) {
    vals.push_back(x);
    if (static_cast<int64_t>(vals.size()) > kMaxFoldElements) return std::nullopt;
    auto nx = CheckedAdd(x, delta);
    if (!nx) break;
    x = *nx;
  }
  return FoldValue{s.elem_type, {static_cast<int64_t>(vals.size())}, vals, {}};
}

std::optional<FoldValue> FoldUnsqueezeSqueeze(const onnx::NodeProto& n, const FoldContext& ctx,
                                              const FoldValue& x) {
  auto axes = AxesOf(n, ctx, 1);
  if (!axes) return std::nullopt;
  FoldValue out = x;
  out.dims.clear();
  if (n.op_type() == "Unsqueeze") {
    int64_t r = static_cast<int64_t>(x.dims.size() + axes->size());
    std::vector<bool> ins(r, false);
    for (int64_t a : *axes) {
      auto ax = NormAxis(a, r);
      if (!ax || ins[*ax]) return std::nullopt;
      ins[*ax] = true;
    }
    size_t j = 0;
    for (int64_t k = 0; k < r; ++k) {
      if (ins[k]) out.dims.push_back(1);
      else if (j < x.dims.size()) out.dims.push_back(x.dims[j++]);
      else return std::nullopt;
    }
    return out;
  }
  int64_t r = static_cast<int64_t>(x.dims.size());
  std::vector<bool> drop(r, axes->empty());
  for (int64_t a : *axes) {
    auto ax = NormAxis(a, r);
    if (!ax || x.dims[*ax] != 1) return std::nullopt;
    drop[*ax] = true;
  }
  for (int64_t k = 0; k < r; ++k) {
    if (!(drop[k] && x.dims[k] == 1)) out.dims.push_back(x.dims[k]);
  }
  return out;
}

}  // namespace

bool FoldValue::IsReal() const { return IsRealElemType(elem_type); }

bool IsIntElemType(int32_t t) {
  switch (t) {
    case TensorProto::INT8: case TensorProto::UINT8: case TensorProto::INT16:
    case TensorProto::UINT16: case TensorProto::INT32: case TensorProto::UINT32:
    case TensorProto::INT64: case TensorProto::UINT64: case TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

bool IsRealElemType(int32_t t) { return t == TensorProto::FLOAT || t == TensorProto::DOUBLE; }

std::optional<FoldValue> FoldValueFromTensor(const TensorProto& t) {
  const int32_t dt = t.data_type();
  if (!IsIntElemType(dt) && !IsRealElemType(dt)) return std::nullopt;
  if (t.data_location() == TensorProto::EXTERNAL) return std::nullopt;
  Dims dims(t.dims().begin(), t.dims().end());
  auto n = SmallNumel(dims);
  if (!n) return std::nullopt;
  FoldValue v{dt, dims, {}, {}};
  if (IsRealElemType(dt)) {
    const size_t width = dt == TensorProto::FLOAT ? 4 : 8;
    if (t.has_raw_data()) {
      const std::string& raw = t.raw_data();
      if (raw.size() != static_cast<size_t>(*n) * width) return std::nullopt;
      for (int64_t i = 0; i < *n; ++i) {
        double x;
        if (dt == TensorProto::FLOAT) {
          float y;
          std::memcpy(&y, raw.data() + i * width, 4);
          x = y;
        } else {
          std::memcpy(&x, raw.data() + i * width, 8);
        }
        v.reals.push_back(x);
      }
    } else if (dt == TensorProto::FLOAT) {
      v.reals.assign(t.float_data().begin(), t.float_data().end());
    } else {
      v.reals.assign(t.double_data().begin(), t.double_data().end());
    }
    if (static_cast<int64_t>(v.reals.size()) != *n) return std::nullopt;
    for (double x : v.reals) {
      if (!std::isfinite(x)) return std::nullopt;
    }
    return v;
  }
  if (t.has_raw_data()) {
    size_t width = dt == TensorProto::INT64 || dt == TensorProto::UINT64 ? 8
                   : dt == TensorProto::INT32 || dt == TensorProto::UINT32 ? 4
                   : dt == TensorProto::INT16 || dt == TensorProto::UINT16 ? 2 : 1;
    const std::string& raw = t.raw_data();
    if (raw.size() != static_cast<size_t>(*n) * width) return std::nullopt;
    for (int64_t i = 0; i < *n; ++i) {
      const char* p = raw.data() + i * width;
      int64_t x = 0;
      switch (dt) {
        case TensorProto::INT64: case TensorProto::UINT64: std::memcpy(&x, p, 8); break;
        case TensorProto::INT32: { int32_t y; std::memcpy(&y, p, 4); x = y; break; }
        case TensorProto::UINT32: { uint32_t y; std::memcpy(&y, p, 4); x = y; break; }
        case TensorProto::INT16: { int16_t y; std::memcpy(&y, p, 2); x = y; break; }
        case TensorProto::UINT16: { uint16_t y; std::memcpy(&y, p, 2); x = y; break; }
        case TensorProto::INT8: x = static_cast<int8_t>(*p); break;
        default: x = static_cast<uint8_t>(*p); break;
      }
      if (dt == TensorProto::UINT64 && x < 0) return std::nullopt;
      v.values.push_back(dt == TensorProto::BOOL ? x != 0 : x);
    }
    return v;
  }
  if (dt == TensorProto::INT64) {
    v.values.assign(t.int64_data().begin(), t.int64_data().end());
  } else if (dt == TensorProto::UINT64) {
    for (uint64_t x : t.uint64_data()) {
      if (x > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
      v.values.push_back(static_cast<int64_t>(x));
    }
  } else {
    v.values.assign(t.int32_data().begin(), t.int32_data().end());
  }
  if (static_cast<int64_t>(v.values.size()) != *n) return std::nullopt;
  return v;
}

TensorProto TensorFromFoldValue(const FoldValue& v, const std::string& name) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(v.elem_type);
  for (int64_t d : v.dims) t.add_dims(d);
  if (v.elem_type == TensorProto::FLOAT) {
    for (double x : v.reals) t.add_float_data(static_cast<float>(x));
    return t;
  }
  if (v.elem_type == TensorProto::DOUBLE) {
    for (double x : v.reals) t.add_double_data(x);
    return t;
  }
  for (int64_t x : v.values) {
    switch (v.elem_type) {
      case TensorProto::INT64: t.add_int64_data(x); break;
      case TensorProto::UINT64: t.add_uint64_data(static_cast<uint64_t>(x)); break;
      default: t.add_int32_data(static_cast<int32_t>(x)); break;
    }
  }
  return t;
}

std::vector<FoldValue> FoldSplit(const onnx::NodeProto& n, const FoldContext& ctx) {
  if (!IsDefaultDomain(n.domain()) || n.op_type() != "Split" || n.input_size() < 1 ||
      n.output_size() < 1)
    return {};
  const FoldValue* x = ctx.value(n.input(0));
  const int64_t axis = AttrInt(n, "axis", 0);
  if (!x || x->dims.size() != 1 || (axis != 0 && axis != -1)) return {};
  const int64_t size = x->dims[0], parts = n.output_size();
  std::vector<int64_t> sizes;
  const FoldValue* split = n.input_size() >= 2 && !n.input(1).empty() ? ctx.value(n.input(1)) : nullptr;
  if (split && !split->IsReal()) {
    sizes = split->values;
  } else if (auto attr = AttrInts(n, "split"); attr && !attr->empty()) {
    sizes = *attr;
  } else if (n.input_size() >= 2 && !n.input(1).empty()) {
    return {};  // split sizes given but not folded
  } else {
    const int64_t chunk = size / parts + (size % parts != 0);  // opset 18's num_outputs rounds up too
    for (int64_t left = size; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
  }
  if (static_cast<int64_t>(sizes.size()) != parts) return {};
  std::vector<FoldValue> out;
  int64_t at = 0;
  for (int64_t k : sizes) {
    if (k < 0 || at > size - k) return {};
    FoldValue v;
    v.elem_type = x->elem_type;
    v.dims = {k};
    if (x->IsReal()) v.reals.assign(x->reals.begin() + at, x->reals.begin() + at + k);
    else v.values.assign(x->values.begin() + at, x->values.begin() + at + k);
    out.push_back(std::move(v));
    at += k;
  }
  if (at != size) return {};
  return out;
}

std::optional<FoldValue> FoldNode(const onnx::NodeProto& n, const FoldContext& ctx) {
  if (!IsDefaultDomain(n.domain())) return std::nullopt;
  if (n.output_size() < 1 || n.output(0).empty()) return std::nullopt;
  const std::string& op = n.op_type();
  auto in = [&](int i) -> const FoldValue* {
    if (n.input_size() <= i || n.input(i).empty()) return nullptr;
    return ctx.value(n.input(i));
  };

  if (op == "Constant") {
    if (const auto* a = Attr(n, "value"); a && a->has_t()) return FoldValueFromTensor(a->t());
    if (const auto* a = Attr(n, "value_int"); a && a->type() == onnx::AttributeProto::INT) {
      return FoldValue{kInt64, {}, {a->i()}, {}};
    }
    if (auto a = AttrInts(n, "value_ints")) {
      if (!SmallNumel({static_cast<int64_t>(a->size())})) return std::nullopt;
      return FoldValue{kInt64, {static_cast<int64_t>(a->size())}, *a, {}};
    }
    if (const auto* a = Attr(n, "value_float"); a && a->type() == onnx::AttributeProto::FLOAT) {
      return FoldValueFromTensor([&] {
        TensorProto t;
        t.set_data_type(TensorProto::FLOAT);
        t.add_float_data(a->f());
        return t;
      }());
    }
    return std::nullopt;
  }
  if (op == "Shape") return n.input_size() >= 1 ? FoldShape(n, ctx) : std::nullopt;
  if (op == "Size") {
    auto s = n.input_size() >= 1 ? ctx.shape(n.input(0)) : std::nullopt;
    if (!s) return std::nullopt;
    auto c = CheckedProduct(*s);
    if (!c) return std::nullopt;
    return FoldValue{kInt64, {}, {*c}, {}};
  }
  if (op == "ConstantOfShape") {
    const FoldValue* shape = IntInput(n, ctx, 0);
    if (!shape || shape->dims.size() != 1) return std::nullopt;
    auto cnt = SmallNumel(shape->values);
    if (!cnt) return std::nullopt;
    const auto* a = Attr(n, "value");
    if (!a || !a->has_t()) {  // the default fill is float 0
      return FoldValue{TensorProto::FLOAT, shape->values, {}, std::vector<double>(*cnt, 0.0)};
    }
    auto fill = FoldValueFromTensor(a->t());
    if (!fill || fill->Size() != 1) return std::nullopt;
    FoldValue out{fill->elem_type, shape->values, {}, {}};
    if (fill->IsReal()) {
      out.reals.assign(*cnt, fill->reals[0]);
    } else {
      out.values.assign(*cnt, fill->values[0]);
    }
    return out;
  }
  if (op == "Range") {
    const FoldValue *s = in(0), *l = in(1), *d = in(2);
    if (!s || !l || !d) return std::nullopt;
    return FoldRange(*s, *l, *d);
  }

  // Everything below needs the first input's value.
  const FoldValue* x = in(0);
  if (!x) return std::nullopt;
  if (op == "Identity") return *x;
  // Split of a 1-D tensor: its first output (FoldSplit gives every output).
  if (op == "Split") {
    auto parts = FoldSplit(n, ctx);
    if (parts.empty()) return std::nullopt;
    return std::move(parts[0]);
  }
  if (op == "Cast") return FoldCast(*x, AttrInt(n, "to", 0));
  if (op == "Neg" || op == "Abs") {
    if (x->IsReal()) {
      return Elementwise({x}, 0, nullptr, [&](const std::vector<double>& v) -> std::optional<double> {
        return op == "Neg" ? -v[0] : std::abs(v[0]);
      });
    }
    FoldValue out = *x;
    for (int64_t& v : out.values) {
      if (v == std::numeric_limits<int64_t>::min()) return std::nullopt;
      v = op == "Neg" ? -v : std::abs(v);
    }
    return out;
  }
  if (op == "Floor" || op == "Ceil" || op == "Round" || op == "Sqrt" || op == "Reciprocal") {
    return Elementwise({x}, 0, nullptr, [&](const std::vector<double>& v) -> std::optional<double> {
      if (op == "Floor") return std::floor(v[0]);
      if (op == "Ceil") return std::ceil(v[0]);
      if (op == "Round") return std::nearbyint(v[0]);  // half to even, as ONNX Round
      if (op == "Sqrt") return v[0] < 0 ? std::nullopt : std::optional<double>(std::sqrt(v[0]));
      return v[0] == 0 ? std::nullopt : std::optional<double>(1.0 / v[0]);
    });
  }
  if (op == "Not") {
    if (x->IsReal()) return std::nullopt;
    FoldValue out = *x;
    for (int64_t& v : out.values) v = v == 0;
    return out;
  }
  if (op == "Gather") {
    const FoldValue* idx = in(1);
    if (!idx) return std::nullopt;
    return FoldGather(*x, *idx, AttrInt(n, "axis", 0));
  }
  if (op == "Unsqueeze" || op == "Squeeze") return FoldUnsqueezeSqueeze(n, ctx, *x);
  if (op == "Concat") {
    std::vector<const FoldValue*> ins;
    for (int i = 0; i < n.input_size(); ++i) {
      const FoldValue* v = in(i);
      if (!v) return std::nullopt;
      ins.push_back(v);
    }
    return FoldConcat(ins, AttrInt(n, "axis", 0));
  }
  if (op == "Slice") return FoldSlice(n, ctx, *x);
  if (op == "Transpose") return FoldTranspose(n, *x);
  if (op == "Reshape") {
    const FoldValue* shape = IntInput(n, ctx, 1);
    if (!shape) return std::nullopt;
    return FoldReshape(*x, *shape, AttrInt(n, "allowzero", 0) != 0);
  }
  if (op == "Flatten") {
    int64_t rank = static_cast<int64_t>(x->dims.size());
    int64_t axis = AttrInt(n, "axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return std::nullopt;
    int64_t outer = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= x->dims[k];
    FoldValue out = *x;
    out.dims = {outer, outer == 0 ? 0 : x->Size() / outer};
    return out;
  }
  if (op == "Expand") {
    const FoldValue* shape = IntInput(n, ctx, 1);
    if (!shape || shape->dims.size() != 1) return std::nullopt;
    // Only the dims of `target` take part in broadcasting.
    for (int64_t d : shape->values) {
      if (d < 0) return std::nullopt;
    }
    if (!SmallNumel(shape->values)) return std::nullopt;
    FoldValue target{x->elem_type, shape->values, {}, {}};
    auto b = BroadcastAll({x, &target});
    if (!b) return std::nullopt;
    return Pick(*x, b->dims, b->src[0]);
  }
  if (op == "Tile") {
    const FoldValue* rep = IntInput(n, ctx, 1);
    if (!rep || rep->Size() != static_cast<int64_t>(x->dims.size())) return std::nullopt;
    std::vector<Dims> picks(x->dims.size());
    for (size_t k = 0; k < x->dims.size(); ++k) {
      if (rep->values[k] < 0) return std::nullopt;
      auto len = CheckedMul(x->dims[k], rep->values[k]);
      if (!len || *len > kMaxFoldElements) return std::nullopt;
      for (int64_t i = 0; i < *len; ++i) picks[k].push_back(i % x->dims[k]);
    }
    return Select(*x, picks);
  }
  if (op == "ReduceProd" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin") {
    return FoldReduce(n, ctx, *x);
  }
  if (op == "Where") {
    const FoldValue *a = in(1), *b = in(2);
    if (!a || !b || x->IsReal() || a->elem_type != b->elem_type) return std::nullopt;
    auto bc = BroadcastAll({x, a, b});
    if (!bc) return std::nullopt;
    FoldValue out{a->elem_type, bc->dims, {}, {}};
    for (size_t i = 0; i < bc->src[0].size(); ++i) {
      const bool c = x->values[bc->src[0][i]] != 0;
      const FoldValue& from = c ? *a : *b;
      const int64_t j = bc->src[c ? 1 : 2][i];
      if (from.IsReal()) {
        out.reals.push_back(from.reals[j]);
      } else {
        out.values.push_back(from.values[j]);
      }
    }
    return out;
  }
  if (op == "Min" || op == "Max" || op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
      op == "Mod" || op == "Pow" || IsComparison(op)) {
    if (op == "Mod" && AttrInt(n, "fmod", 0) != 0) return std::nullopt;
    std::vector<const FoldValue*> ins;
    for (int i = 0; i < n.input_size(); ++i) {
      const FoldValue* v = in(i);
      if (!v) return std::nullopt;
      ins.push_back(v);
    }
    if (ins.size() < (op == "Min" || op == "Max" ? 1u : 2u)) return std::nullopt;
    if (op != "Min" && op != "Max" && ins.size() != 2) return std::nullopt;
    int32_t out_type = IsComparison(op) ? kBool : 0;
    return Elementwise(
        ins, out_type,
        [&](const Dims& v) -> std::optional<int64_t> {
          int64_t acc = v[0];
          for (size_t k = 1; k < v.size(); ++k) {
            auto r = Binary(op, acc, v[k]);
            if (!r) return std::nullopt;
            acc = *r;
          }
          return acc;
        },
        [&](const std::vector<double>& v) -> std::optional<double> {
          double acc = v[0];
          for (size_t k = 1; k < v.size(); ++k) {
            auto r = BinaryReal(op, acc, v[k]);
            if (!r) return std::nullopt;
            acc = *r;
          }
          return acc;
        });
  }
  return std::nullopt;
}

}  // namespace gpucast
