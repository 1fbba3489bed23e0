#include "graph/pattern_fills.h"

#include <algorithm>

#include "graph/graph.h"
#include "util/checked.h"

namespace gpucast {
namespace {

// A NonZero node with one input and one named output.
bool IsNonZero(const onnx::NodeProto& n) {
  return IsDefaultDomain(n.domain()) && n.op_type() == "NonZero" && n.input_size() == 1 && n.output_size() == 1 &&
         !n.output(0).empty();
}

}  // namespace

std::optional<FilledOutput> EmbeddingBagOutput(const EmbeddingBagLoop& m, const std::string& trips,
                                               const KnownTensors& k) {
  const std::vector<int64_t>* n = k.ints(trips);
  auto table = k.shape(m.table);
  const int32_t type = k.elem_type(m.table);
  if (!n || n->size() != 1 || (*n)[0] < 0 || !table || table->size() != 2 || !IsFloatElemType(type)) return std::nullopt;
  return FilledOutput{type, {(*n)[0], (*table)[1]}};
}

std::optional<FilledOutput> RepeatInterleaveOutput(const RepeatInterleaveLoop& m, const KnownTensors& k) {
  auto x = k.shape(m.input);
  const int32_t type = k.elem_type(m.input);
  if (!x || x->empty() || type == 0) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x->size());
  auto norm = [rank](int64_t a) { return a < 0 ? a + rank : a; };
  if (m.axis < -rank || m.axis >= rank || norm(m.axis) != norm(m.chunk_axis)) return std::nullopt;
  const size_t axis = static_cast<size_t>(norm(m.axis));
  const int64_t chunks = (*x)[axis];
  const std::vector<int64_t>* split = k.ints(m.chunk_split);
  const std::vector<int64_t>* counts = k.ints(m.repeats);
  const std::vector<int64_t>* trips = k.ints(m.trips);
  if (!split || !counts || !trips || trips->size() != 1 || (*trips)[0] != chunks ||
      static_cast<int64_t>(counts->size()) != chunks)
    return std::nullopt;
  auto ones = [](const std::vector<int64_t>& v) { return std::all_of(v.begin(), v.end(), [](int64_t e) { return e == 1; }); };
  if (!(split->size() == 1 && (*split)[0] == 1) && !(static_cast<int64_t>(split->size()) == chunks && ones(*split)))
    return std::nullopt;
  std::optional<int64_t> total = 0;
  for (int64_t c : *counts) total = c >= 0 && total ? CheckedAdd(*total, c) : std::nullopt;
  if (!total) return std::nullopt;
  FilledOutput out{type, *x};
  out.dims[axis] = *total;
  return out;
}

std::optional<RoutedNonZero> RoutedNonZeroOutput(
    const onnx::NodeProto& nonzero, const std::function<const onnx::NodeProto*(const std::string&)>& producer,
    const KnownTensors& k) {
  if (!IsNonZero(nonzero)) return std::nullopt;
  auto made_by = [&](const std::string& name, const char* op) -> const onnx::NodeProto* {
    const onnx::NodeProto* p = producer(name);
    return p && IsDefaultDomain(p->domain()) && p->op_type() == op ? p : nullptr;
  };
  const onnx::NodeProto* eq = made_by(nonzero.input(0), "Equal");
  if (!eq || eq->input_size() != 2) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const std::string& idx = eq->input(side);
    const onnx::NodeProto* topk = made_by(idx, "TopK");
    const std::vector<int64_t>* id = k.ints(eq->input(1 - side));
    if (!topk || topk->output_size() < 2 || topk->output(1) != idx || topk->input_size() < 1 || !id ||
        id->size() != 1)
      continue;
    auto scores = k.shape(topk->input(0));
    auto indices = k.shape(idx);
    if (!scores || scores->empty() || !indices) return std::nullopt;
    int64_t axis = -1;
    for (const auto& a : topk->attribute())
      if (a.name() == "axis") axis = a.i();
    const int64_t rank = static_cast<int64_t>(scores->size());
    if (axis < -rank || axis >= rank) return std::nullopt;
    const int64_t experts = (*scores)[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    auto slots = CheckedProduct(*indices);
    if (experts < 1 || !slots) return std::nullopt;
    const int64_t e = (*id)[0];
    const int64_t count = e < 0 || e >= experts ? 0 : *slots / experts + (*slots % experts != 0);
    return RoutedNonZero{{onnx::TensorProto::INT64, {static_cast<int64_t>(indices->size()), count}}, e, experts};
  }
  return std::nullopt;
}

std::optional<FilledOutput> SelectingNonZeroOutput(const onnx::NodeProto& nonzero, const KnownTensors& k) {
  if (!IsNonZero(nonzero) || k.folded(nonzero.input(0))) return std::nullopt;
  auto in = k.shape(nonzero.input(0));
  if (!in || in->empty()) return std::nullopt;
  auto elements = CheckedProduct(*in);
  if (!elements) return std::nullopt;
  return FilledOutput{onnx::TensorProto::INT64, {static_cast<int64_t>(in->size()), *elements}};
}

}  // namespace gpucast
