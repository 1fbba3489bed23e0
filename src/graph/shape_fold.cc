#include "graph/shape_fold.h"

#include <algorithm>
#include <cstring>
#include <limits>

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

// Numpy broadcasting of several shapes.
std::optional<Dims> BroadcastDims(const std::vector<const IntValue*>& ins) {
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

// Value of `v` at the output multi-index `idx` under broadcasting.
int64_t BroadcastAt(const IntValue& v, const Dims& idx) {
  size_t off = idx.size() - v.dims.size();
  int64_t f = 0;
  for (size_t k = 0; k < v.dims.size(); ++k) {
    f = f * v.dims[k] + (v.dims[k] == 1 ? 0 : idx[off + k]);
  }
  return v.values[f];
}

using ElemFn = std::function<std::optional<int64_t>(const Dims&)>;

// Evaluates f over the broadcast of `ins`.
std::optional<IntValue> Elementwise(const std::vector<const IntValue*>& ins, int32_t out_type,
                                    const ElemFn& f) {
  auto dims = BroadcastDims(ins);
  if (!dims) return std::nullopt;
  auto n = SmallNumel(*dims);
  if (!n) return std::nullopt;
  IntValue out{out_type, *dims, {}};
  out.values.reserve(*n);
  Dims args(ins.size());
  for (int64_t i = 0; i < *n; ++i) {
    Dims idx = Unflatten(i, *dims);
    for (size_t k = 0; k < ins.size(); ++k) args[k] = BroadcastAt(*ins[k], idx);
    auto r = f(args);
    if (!r) return std::nullopt;
    out.values.push_back(*r);
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
std::optional<IntValue> Select(const IntValue& data, const std::vector<Dims>& picks) {
  Dims out_dims;
  for (const auto& p : picks) out_dims.push_back(static_cast<int64_t>(p.size()));
  auto n = SmallNumel(out_dims);
  if (!n) return std::nullopt;
  IntValue out{data.elem_type, out_dims, {}};
  for (int64_t i = 0; i < *n; ++i) {
    Dims idx = Unflatten(i, out_dims);
    Dims src(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) src[k] = picks[k][idx[k]];
    out.values.push_back(data.values[Flatten(src, data.dims)]);
  }
  return out;
}

// Axes from the attribute (older opsets) or input `input_index` (newer).
std::optional<Dims> AxesOf(const onnx::NodeProto& n, const FoldContext& ctx, int input_index) {
  if (auto a = AttrInts(n, "axes")) return a;
  if (n.input_size() > input_index && !n.input(input_index).empty()) {
    const IntValue* v = ctx.value(n.input(input_index));
    if (!v) return std::nullopt;
    return v->values;
  }
  return Dims{};
}

std::optional<IntValue> FoldShape(const onnx::NodeProto& n, const FoldContext& ctx) {
  auto s = ctx.shape(n.input(0));
  if (!s) return std::nullopt;
  int64_t r = static_cast<int64_t>(s->size());
  int64_t start = AttrInt(n, "start", 0), end = AttrInt(n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  Dims vals(s->begin() + start, s->begin() + std::max(start, end));
  return IntValue{kInt64, {static_cast<int64_t>(vals.size())}, vals};
}

std::optional<IntValue> FoldGather(const IntValue& data, const IntValue& indices, int64_t axis_attr) {
  int64_t rank = static_cast<int64_t>(data.dims.size());
  auto axis = NormAxis(axis_attr, rank);
  if (!axis) return std::nullopt;
  int64_t len = data.dims[*axis];
  Dims out_dims(data.dims.begin(), data.dims.begin() + *axis);
  out_dims.insert(out_dims.end(), indices.dims.begin(), indices.dims.end());
  out_dims.insert(out_dims.end(), data.dims.begin() + *axis + 1, data.dims.end());
  auto n = SmallNumel(out_dims);
  if (!n) return std::nullopt;
  IntValue out{data.elem_type, out_dims, {}};
  size_t q = indices.dims.size();
  for (int64_t i = 0; i < *n; ++i) {
    Dims idx = Unflatten(i, out_dims);
    Dims ind_idx(idx.begin() + *axis, idx.begin() + *axis + q);
    int64_t g = indices.values[Flatten(ind_idx, indices.dims)];
    if (g < -len || g >= len) return std::nullopt;
    if (g < 0) g += len;
    Dims src(idx.begin(), idx.begin() + *axis);
    src.push_back(g);
    src.insert(src.end(), idx.begin() + *axis + q, idx.end());
    out.values.push_back(data.values[Flatten(src, data.dims)]);
  }
  return out;
}

std::optional<IntValue> FoldConcat(const std::vector<const IntValue*>& ins, int64_t axis_attr) {
  if (ins.empty()) return std::nullopt;
  int64_t rank = static_cast<int64_t>(ins[0]->dims.size());
  auto axis = NormAxis(axis_attr, rank);
  if (!axis) return std::nullopt;
  Dims out_dims = ins[0]->dims;
  out_dims[*axis] = 0;
  for (const auto* v : ins) {
    if (static_cast<int64_t>(v->dims.size()) != rank) return std::nullopt;
    for (int64_t k = 0; k < rank; ++k) {
      if (k != *axis && v->dims[k] != ins[0]->dims[k]) return std::nullopt;
    }
    out_dims[*axis] += v->dims[*axis];
  }
  if (!SmallNumel(out_dims)) return std::nullopt;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < *axis; ++k) outer *= out_dims[k];
  for (int64_t k = *axis + 1; k < rank; ++k) inner *= out_dims[k];
  IntValue out{ins[0]->elem_type, out_dims, {}};
  for (int64_t o = 0; o < outer; ++o) {
    for (const auto* v : ins) {
      int64_t chunk = v->dims[*axis] * inner;
      out.values.insert(out.values.end(), v->values.begin() + o * chunk,
                        v->values.begin() + (o + 1) * chunk);
    }
  }
  return out;
}

std::optional<IntValue> FoldSlice(const onnx::NodeProto& n, const FoldContext& ctx,
                                  const IntValue& data) {
  Dims starts, ends, axes, steps;
  if (ctx.opset < 10) {
    auto s = AttrInts(n, "starts"), e = AttrInts(n, "ends");
    if (!s || !e) return std::nullopt;
    starts = *s;
    ends = *e;
    if (auto a = AttrInts(n, "axes")) axes = *a;
  } else {
    auto get = [&](int i) -> const IntValue* {
      return n.input_size() > i && !n.input(i).empty() ? ctx.value(n.input(i)) : nullptr;
    };
    const IntValue *s = get(1), *e = get(2);
    if (!s || !e) return std::nullopt;
    starts = s->values;
    ends = e->values;
    for (int i : {3, 4}) {
      if (n.input_size() > i && !n.input(i).empty()) {
        const IntValue* v = get(i);
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

std::optional<IntValue> FoldReshape(const IntValue& data, const IntValue& shape, bool allowzero) {
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
  int64_t total = static_cast<int64_t>(data.values.size());
  if (infer >= 0) {
    if (known == 0 || total % known != 0) return std::nullopt;
    out[infer] = total / known;
  } else if (known != total) {
    return std::nullopt;
  }
  return IntValue{data.elem_type, out, data.values};
}

std::optional<IntValue> FoldReduce(const onnx::NodeProto& n, const FoldContext& ctx,
                                   const IntValue& data) {
  const std::string& op = n.op_type();
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
  IntValue out{data.elem_type, out_dims, {}};
  std::vector<bool> seen(*on, false);
  out.values.assign(*on, 0);
  for (int64_t i = 0; i < static_cast<int64_t>(data.values.size()); ++i) {
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
  if (op == "Min") return std::min(a, b);
  if (op == "Max") return std::max(a, b);
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  if (op == "Greater") return a > b;
  if (op == "LessOrEqual") return a <= b;
  if (op == "GreaterOrEqual") return a >= b;
  if (op == "And") return (a != 0) && (b != 0);
  if (op == "Or") return (a != 0) || (b != 0);
  if (op == "Xor") return (a != 0) != (b != 0);
  return std::nullopt;
}

bool IsComparison(const std::string& op) {
  return op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
         op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor";
}

}  // namespace

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

std::optional<IntValue> IntValueFromTensor(const TensorProto& t) {
  if (!IsIntElemType(t.data_type())) return std::nullopt;
  if (t.data_location() == TensorProto::EXTERNAL) return std::nullopt;
  Dims dims(t.dims().begin(), t.dims().end());
  auto n = SmallNumel(dims);
  if (!n) return std::nullopt;
  IntValue v{t.data_type(), dims, {}};
  int32_t dt = t.data_type();
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

TensorProto TensorFromIntValue(const IntValue& v, const std::string& name) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(v.elem_type);
  for (int64_t d : v.dims) t.add_dims(d);
  for (int64_t x : v.values) {
    switch (v.elem_type) {
      case TensorProto::INT64: t.add_int64_data(x); break;
      case TensorProto::UINT64: t.add_uint64_data(static_cast<uint64_t>(x)); break;
      default: t.add_int32_data(static_cast<int32_t>(x)); break;
    }
  }
  return t;
}

std::optional<IntValue> FoldNode(const onnx::NodeProto& n, const FoldContext& ctx) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return std::nullopt;
  if (n.output_size() < 1 || n.output(0).empty()) return std::nullopt;
  const std::string& op = n.op_type();
  auto in = [&](int i) -> const IntValue* {
    if (n.input_size() <= i || n.input(i).empty()) return nullptr;
    return ctx.value(n.input(i));
  };

  if (op == "Constant") {
    if (const auto* a = Attr(n, "value"); a && a->has_t()) return IntValueFromTensor(a->t());
    if (const auto* a = Attr(n, "value_int"); a && a->type() == onnx::AttributeProto::INT) {
      return IntValue{kInt64, {}, {a->i()}};
    }
    if (auto a = AttrInts(n, "value_ints")) {
      if (!SmallNumel({static_cast<int64_t>(a->size())})) return std::nullopt;
      return IntValue{kInt64, {static_cast<int64_t>(a->size())}, *a};
    }
    return std::nullopt;
  }
  if (op == "Shape") return n.input_size() >= 1 ? FoldShape(n, ctx) : std::nullopt;
  if (op == "Size") {
    auto s = n.input_size() >= 1 ? ctx.shape(n.input(0)) : std::nullopt;
    if (!s) return std::nullopt;
    auto c = CheckedProduct(*s);
    if (!c) return std::nullopt;
    return IntValue{kInt64, {}, {*c}};
  }
  if (op == "ConstantOfShape") {
    const IntValue* shape = in(0);
    if (!shape || shape->dims.size() != 1) return std::nullopt;
    const auto* a = Attr(n, "value");
    if (!a || !a->has_t()) return std::nullopt;  // default fill is float 0
    auto fill = IntValueFromTensor(a->t());
    if (!fill || fill->values.size() != 1) return std::nullopt;
    auto cnt = SmallNumel(shape->values);
    if (!cnt) return std::nullopt;
    return IntValue{fill->elem_type, shape->values, Dims(*cnt, fill->values[0])};
  }
  if (op == "Range") {
    const IntValue *s = in(0), *l = in(1), *d = in(2);
    if (!s || !l || !d || s->values.size() != 1 || l->values.size() != 1 || d->values.size() != 1) {
      return std::nullopt;
    }
    int64_t start = s->values[0], limit = l->values[0], delta = d->values[0];
    if (delta == 0) return std::nullopt;
    Dims vals;
    for (int64_t x = start; delta > 0 ? x < limit : x > limit;) {
      vals.push_back(x);
      if (static_cast<int64_t>(vals.size()) > kMaxFoldElements) return std::nullopt;
      auto nx = CheckedAdd(x, delta);
      if (!nx) break;
      x = *nx;
    }
    return IntValue{s->elem_type, {static_cast<int64_t>(vals.size())}, vals};
  }

  // Everything below needs the first input's value.
  const IntValue* x = in(0);
  if (!x) return std::nullopt;
  if (op == "Identity") return *x;
  if (op == "Cast") {
    int64_t to = AttrInt(n, "to", 0);
    if (!IsIntElemType(static_cast<int32_t>(to))) return std::nullopt;
    IntValue out = *x;
    out.elem_type = static_cast<int32_t>(to);
    for (int64_t& v : out.values) {
      if (to == kBool) v = v != 0;
      else if (!Fits(v, out.elem_type)) return std::nullopt;
    }
    return out;
  }
  if (op == "Neg" || op == "Abs") {
    IntValue out = *x;
    for (int64_t& v : out.values) {
      if (v == std::numeric_limits<int64_t>::min()) return std::nullopt;
      v = op == "Neg" ? -v : std::abs(v);
    }
    return out;
  }
  if (op == "Not") {
    IntValue out = *x;
    for (int64_t& v : out.values) v = v == 0;
    return out;
  }
  if (op == "Gather") {
    const IntValue* idx = in(1);
    if (!idx) return std::nullopt;
    return FoldGather(*x, *idx, AttrInt(n, "axis", 0));
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    auto axes = AxesOf(n, ctx, 1);
    if (!axes) return std::nullopt;
    IntValue out = *x;
    if (op == "Unsqueeze") {
      int64_t r = static_cast<int64_t>(x->dims.size() + axes->size());
      std::vector<bool> ins(r, false);
      for (int64_t a : *axes) {
        auto ax = NormAxis(a, r);
        if (!ax || ins[*ax]) return std::nullopt;
        ins[*ax] = true;
      }
      out.dims.clear();
      size_t j = 0;
      for (int64_t k = 0; k < r; ++k) {
        if (ins[k]) out.dims.push_back(1);
        else if (j < x->dims.size()) out.dims.push_back(x->dims[j++]);
        else return std::nullopt;
      }
      return out;
    }
    int64_t r = static_cast<int64_t>(x->dims.size());
    std::vector<bool> drop(r, axes->empty());
    for (int64_t a : *axes) {
      auto ax = NormAxis(a, r);
      if (!ax || x->dims[*ax] != 1) return std::nullopt;
      drop[*ax] = true;
    }
    out.dims.clear();
    for (int64_t k = 0; k < r; ++k) {
      if (!(drop[k] && x->dims[k] == 1)) out.dims.push_back(x->dims[k]);
    }
    return out;
  }
  if (op == "Concat") {
    std::vector<const IntValue*> ins;
    for (int i = 0; i < n.input_size(); ++i) {
      const IntValue* v = in(i);
      if (!v) return std::nullopt;
      ins.push_back(v);
    }
    return FoldConcat(ins, AttrInt(n, "axis", 0));
  }
  if (op == "Slice") return FoldSlice(n, ctx, *x);
  if (op == "Reshape") {
    const IntValue* shape = in(1);
    if (!shape) return std::nullopt;
    return FoldReshape(*x, *shape, AttrInt(n, "allowzero", 0) != 0);
  }
  if (op == "Expand") {
    const IntValue* shape = in(1);
    if (!shape || shape->dims.size() != 1) return std::nullopt;
    // Only the dims of `target` take part in broadcasting; its values are 1s.
    for (int64_t d : shape->values) {
      if (d < 0) return std::nullopt;
    }
    auto cnt = SmallNumel(shape->values);
    if (!cnt) return std::nullopt;
    IntValue target{x->elem_type, shape->values, Dims(*cnt, 1)};
    return Elementwise({x, &target}, x->elem_type, [](const Dims& a) { return a[0]; });
  }
  if (op == "Tile") {
    const IntValue* rep = in(1);
    if (!rep || rep->values.size() != x->dims.size()) return std::nullopt;
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
    const IntValue *a = in(1), *b = in(2);
    if (!a || !b) return std::nullopt;
    return Elementwise({x, a, b}, a->elem_type,
                       [](const Dims& v) { return v[0] != 0 ? v[1] : v[2]; });
  }
  if (op == "Min" || op == "Max" || op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
      op == "Mod" || IsComparison(op)) {
    if (op == "Mod" && AttrInt(n, "fmod", 0) != 0) return std::nullopt;
    std::vector<const IntValue*> ins;
    for (int i = 0; i < n.input_size(); ++i) {
      const IntValue* v = in(i);
      if (!v) return std::nullopt;
      ins.push_back(v);
    }
    if (ins.size() < (op == "Min" || op == "Max" ? 1u : 2u)) return std::nullopt;
    if (op != "Min" && op != "Max" && ins.size() != 2) return std::nullopt;
    int32_t out_type = IsComparison(op) ? kBool : x->elem_type;
    return Elementwise(ins, out_type, [&](const Dims& v) -> std::optional<int64_t> {
      int64_t acc = v[0];
      for (size_t k = 1; k < v.size(); ++k) {
        auto r = Binary(op, acc, v[k]);
        if (!r) return std::nullopt;
        acc = *r;
      }
      return acc;
    });
  }
  return std::nullopt;
}

}  // namespace gpucast
