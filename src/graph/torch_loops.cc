#include "graph/torch_loops.h"

#include <unordered_map>
#include <unordered_set>

#include "graph/graph.h"

namespace gpucast {
namespace {

const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

// A Loop's body with `inputs` inputs and `outputs` outputs and at most kMaxTorchLoopBodyNodes
// nodes, and the body node that writes each name (every name written once); nullopt otherwise.
struct Body {
  const onnx::GraphProto* graph = nullptr;
  std::unordered_map<std::string, const onnx::NodeProto*> producer;

  // The body node of type `op` that writes `name`, or nullptr.
  const onnx::NodeProto* Made(const std::string& name, const char* op) const {
    auto it = producer.find(name);
    return it != producer.end() && IsDefaultDomain(it->second->domain()) && it->second->op_type() == op
               ? it->second
               : nullptr;
  }
};

std::optional<Body> LoopBody(const onnx::NodeProto& loop, int inputs, int outputs) {
  const onnx::AttributeProto* attr = Attr(loop, "body");
  if (!attr || !attr->has_g()) return std::nullopt;
  Body b;
  b.graph = &attr->g();
  if (b.graph->node_size() > kMaxTorchLoopBodyNodes || b.graph->input_size() != inputs ||
      b.graph->output_size() != outputs)
    return std::nullopt;
  for (const auto& n : b.graph->node())
    for (const auto& o : n.output())
      if (!o.empty() && !b.producer.emplace(o, &n).second) return std::nullopt;  // two producers
  return b;
}

}  // namespace

std::optional<EmbeddingBagLoop> MatchEmbeddingBagLoop(const onnx::NodeProto& loop) {
  if (!IsDefaultDomain(loop.domain()) || loop.op_type() != "Loop") return std::nullopt;
  // Inputs: trip count, condition, no loop-carried value; one scan output.
  if (loop.input_size() != 2 || loop.input(0).empty() || loop.output_size() != 1 || loop.output(0).empty())
    return std::nullopt;
  auto b = LoopBody(loop, 2, 2);
  if (!b) return std::nullopt;
  const onnx::GraphProto& body = *b->graph;
  std::unordered_set<std::string> local;
  for (const auto& i : body.input()) local.insert(i.name());
  for (const auto& t : body.initializer()) local.insert(t.name());
  auto outer = [&](const std::string& name) { return !name.empty() && !b->producer.count(name) && !local.count(name); };
  auto made_by = [&](const std::string& name, const char* op) { return b->Made(name, op); };

  // The scan output: a reduction of the gathered rows over the bag's axis.
  const std::string& scan = body.output(1).name();
  const onnx::NodeProto* reduce = nullptr;
  std::string mode;
  if ((reduce = made_by(scan, "ReduceSum"))) mode = "sum";
  else if ((reduce = made_by(scan, "ReduceMean"))) mode = "mean";
  else if ((reduce = made_by(scan, "ReduceMax"))) mode = "max";
  else return std::nullopt;
  const onnx::AttributeProto* keep = Attr(*reduce, "keepdims");
  if (!keep || keep->i() != 0 || reduce->input_size() < 1) return std::nullopt;
  // Rows a Gather (axis 0) of an outer table at a Slice of outer ids; that Slice's node or nullptr.
  auto rows = [&](const std::string& name, std::string* table) -> const onnx::NodeProto* {
    const onnx::NodeProto* gather = made_by(name, "Gather");
    if (!gather || gather->input_size() != 2 || !outer(gather->input(0))) return nullptr;
    if (const onnx::AttributeProto* axis = Attr(*gather, "axis"); axis && axis->i() != 0) return nullptr;
    const onnx::NodeProto* slice = made_by(gather->input(1), "Slice");
    if (!slice || slice->input_size() < 3 || !outer(slice->input(0))) return nullptr;
    *table = gather->input(0);
    return slice;
  };
  std::string table;
  if (const onnx::NodeProto* ids = rows(reduce->input(0), &table))
    return EmbeddingBagLoop{table, ids->input(0), "", mode, loop.output(0)};
  // per_sample_weights (mode sum only): Mul(rows, Unsqueeze(Slice(weights))) in either order,
  // the weights sliced at the ids' own starts and ends.
  const onnx::NodeProto* mul = mode == "sum" ? made_by(reduce->input(0), "Mul") : nullptr;
  if (!mul || mul->input_size() != 2) return std::nullopt;
  for (int r = 0; r < 2; ++r) {
    const onnx::NodeProto* ids = rows(mul->input(r), &table);
    const onnx::NodeProto* unsqueeze = ids ? made_by(mul->input(1 - r), "Unsqueeze") : nullptr;
    const onnx::NodeProto* w = unsqueeze ? made_by(unsqueeze->input(0), "Slice") : nullptr;
    if (!w || w->input_size() < 3 || !outer(w->input(0)) || w->input(0) == ids->input(0) ||
        w->input(1) != ids->input(1) || w->input(2) != ids->input(2))
      continue;
    return EmbeddingBagLoop{table, ids->input(0), w->input(0), mode, loop.output(0)};
  }
  return std::nullopt;
}

std::optional<RepeatInterleaveLoop> MatchRepeatInterleaveLoop(
    const onnx::NodeProto& concat, const std::function<const onnx::NodeProto*(const std::string&)>& producer) {
  if (!IsDefaultDomain(concat.domain()) || concat.op_type() != "ConcatFromSequence" || concat.input_size() != 1 ||
      concat.output_size() != 1 || concat.output(0).empty())
    return std::nullopt;
  const onnx::AttributeProto* axis = Attr(concat, "axis");
  const onnx::AttributeProto* new_axis = Attr(concat, "new_axis");
  if (!axis || (new_axis && new_axis->i() != 0)) return std::nullopt;
  auto outer = [&](const std::string& name, const char* op) -> const onnx::NodeProto* {
    const onnx::NodeProto* n = name.empty() ? nullptr : producer(name);
    return n && IsDefaultDomain(n->domain()) && n->op_type() == op ? n : nullptr;
  };
  // The Loop: trip count, condition, an empty sequence carried; the sequence out.
  const onnx::NodeProto* loop = outer(concat.input(0), "Loop");
  if (!loop || loop->input_size() != 3 || loop->output_size() != 1 || loop->input(0).empty()) return std::nullopt;
  const onnx::NodeProto* empty = outer(loop->input(2), "SequenceEmpty");
  auto b = empty ? LoopBody(*loop, 3, 2) : std::nullopt;
  if (!b) return std::nullopt;
  const onnx::GraphProto& body = *b->graph;
  const auto& local = b->producer;
  auto inner = [&](const std::string& name, const char* op) { return b->Made(name, op); };
  const std::string& iter = body.input(0).name();
  // seq_out = SequenceInsert(seq_in, Reshape(Expand(Unsqueeze(SequenceAt(chunks, i)), ...), ...)).
  const onnx::NodeProto* insert = inner(body.output(1).name(), "SequenceInsert");
  if (!insert || insert->input_size() != 2 || insert->input(0) != body.input(2).name()) return std::nullopt;
  const onnx::NodeProto* reshape = inner(insert->input(1), "Reshape");
  const onnx::NodeProto* expand = reshape ? inner(reshape->input(0), "Expand") : nullptr;
  const onnx::NodeProto* unsqueeze = expand ? inner(expand->input(0), "Unsqueeze") : nullptr;
  const onnx::NodeProto* chunk_at = unsqueeze ? inner(unsqueeze->input(0), "SequenceAt") : nullptr;
  if (!chunk_at || chunk_at->input_size() != 2 || chunk_at->input(1) != iter) return std::nullopt;
  // The other SequenceAt of the body reads the repeat counts at i.
  const onnx::NodeProto* count_at = nullptr;
  for (const auto& n : body.node()) {
    if (&n == chunk_at || !IsDefaultDomain(n.domain()) || n.op_type() != "SequenceAt") continue;
    if (count_at || n.input_size() != 2 || n.input(1) != iter) return std::nullopt;
    count_at = &n;
  }
  if (!count_at || local.count(chunk_at->input(0)) || local.count(count_at->input(0))) return std::nullopt;
  const onnx::NodeProto* chunks = outer(chunk_at->input(0), "SplitToSequence");
  const onnx::NodeProto* counts = outer(count_at->input(0), "SplitToSequence");
  if (!chunks || !counts || chunks == counts || chunks->input_size() != 2 || counts->input_size() != 2)
    return std::nullopt;
  const onnx::AttributeProto* chunk_axis = Attr(*chunks, "axis");
  const onnx::AttributeProto* count_axis = Attr(*counts, "axis");
  const onnx::AttributeProto* keep = Attr(*chunks, "keepdims");
  if ((count_axis && count_axis->i() != 0) || (keep && keep->i() != 1)) return std::nullopt;
  RepeatInterleaveLoop m;
  m.input = chunks->input(0);
  m.chunk_split = chunks->input(1);
  m.repeats = counts->input(0);
  m.repeats_split = counts->input(1);
  m.trips = loop->input(0);
  m.axis = axis->i();
  m.chunk_axis = chunk_axis ? chunk_axis->i() : 0;
  m.output = concat.output(0);
  m.absorbed = {loop->output(0), empty->output(0), chunks->output(0), counts->output(0)};
  return m;
}

}  // namespace gpucast
