#include "graph/embedding_bag.h"

#include <unordered_map>
#include <unordered_set>

namespace gpucast {
namespace {

bool DefaultDomain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

const onnx::AttributeProto* Attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

}  // namespace

std::optional<EmbeddingBagLoop> MatchEmbeddingBagLoop(const onnx::NodeProto& loop) {
  if (!DefaultDomain(loop) || loop.op_type() != "Loop") return std::nullopt;
  // Inputs: trip count, condition, no loop-carried value; one scan output.
  if (loop.input_size() != 2 || loop.input(0).empty() || loop.output_size() != 1 || loop.output(0).empty())
    return std::nullopt;
  const onnx::AttributeProto* body_attr = Attr(loop, "body");
  if (!body_attr || !body_attr->has_g()) return std::nullopt;
  const onnx::GraphProto& body = body_attr->g();
  if (body.node_size() > kMaxEmbeddingBagBodyNodes || body.input_size() != 2 || body.output_size() != 2)
    return std::nullopt;

  std::unordered_map<std::string, const onnx::NodeProto*> producer;
  for (const auto& n : body.node())
    for (const auto& o : n.output())
      if (!o.empty() && !producer.emplace(o, &n).second) return std::nullopt;  // two producers
  std::unordered_set<std::string> local;
  for (const auto& i : body.input()) local.insert(i.name());
  for (const auto& t : body.initializer()) local.insert(t.name());
  auto outer = [&](const std::string& name) { return !name.empty() && !producer.count(name) && !local.count(name); };
  auto made_by = [&](const std::string& name, const char* op) -> const onnx::NodeProto* {
    auto it = producer.find(name);
    return it != producer.end() && DefaultDomain(*it->second) && it->second->op_type() == op ? it->second : nullptr;
  };

  // The scan output: a reduction of the gathered rows over the bag's axis.
  const std::string& scan = body.output(1).name();
  const onnx::NodeProto* reduce = nullptr;
  std::string mode;
  if ((reduce = made_by(scan, "ReduceSum"))) mode = "sum";
  else if ((reduce = made_by(scan, "ReduceMean"))) mode = "mean";
  else return std::nullopt;
  const onnx::AttributeProto* keep = Attr(*reduce, "keepdims");
  if (!keep || keep->i() != 0 || reduce->input_size() < 1) return std::nullopt;
  const onnx::NodeProto* gather = made_by(reduce->input(0), "Gather");
  if (!gather || gather->input_size() != 2 || !outer(gather->input(0))) return std::nullopt;
  if (const onnx::AttributeProto* axis = Attr(*gather, "axis"); axis && axis->i() != 0) return std::nullopt;
  const onnx::NodeProto* slice = made_by(gather->input(1), "Slice");
  if (!slice || slice->input_size() < 1 || !outer(slice->input(0))) return std::nullopt;
  return EmbeddingBagLoop{gather->input(0), slice->input(0), mode, loop.output(0)};
}

}  // namespace gpucast
