#include "graph/export_mode.h"

#include <cstdint>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace gpucast {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

struct Signal {
  int64_t count = 0;
  std::string first;  // the first node that shows it
  void Add(const Node& n) {
    if (count++ == 0) first = "'" + n.name + "'";
  }
};

bool BatchNormInInferenceForm(const Graph& g, const Node& n) {
  if (g.opset >= 14) {
    auto mode = n.AttrInt("training_mode");
    return !(mode && *mode == 1) && n.outputs.size() <= 1;
  }
  size_t outputs = 0;
  for (const std::string& o : n.outputs) outputs += !o.empty();
  return outputs <= 1;
}

bool DropoutInInferenceForm(const Graph& g, const Node& n) {
  if (g.opset < 12) return false;  // no training flag before opset 12
  if (n.inputs.size() < 3 || n.inputs[2].empty()) return true;
  const TensorInfo* t = g.Tensor(n.inputs[2]);
  return t && t->int_value && t->int_value->size() == 1 && (*t->int_value)[0] == 0;
}

bool ExporterComputedConvParam(const Graph& g, const Node& n) {
  for (size_t i = 1; i < n.inputs.size() && i <= 2; ++i) {
    const TensorInfo* t = g.Tensor(n.inputs[i]);
    if (t && t->is_param && StartsWith(t->name, "onnx::Conv_")) return true;
  }
  return false;
}

// Every name some node produces, built once per graph (on the first Identity
// that reads a parameter): scanning every node's outputs for each Identity was
// quadratic, 25 s for 50,000 Identity nodes (tools/scale_probe.py, identity_fanout).
class ProducedNames {
 public:
  explicit ProducedNames(const Graph& g) : g_(g) {}
  bool Contains(const std::string& name) {
    if (!built_) {
      for (const Node& m : g_.nodes)
        for (const std::string& o : m.outputs) names_.insert(o);
      built_ = true;
    }
    return names_.count(name) != 0;
  }

 private:
  const Graph& g_;
  bool built_ = false;
  std::unordered_set<std::string_view> names_;
};

bool MergedParameter(const Graph& g, const Node& n, ProducedNames& produced) {
  if (n.inputs.size() != 1) return false;
  const TensorInfo* t = g.Tensor(n.inputs[0]);
  if (!t || !t->is_param) return false;
  // A graph input or initializer: no node produces it.
  return !produced.Contains(t->name);
}

}  // namespace

std::string EvalModeExportWarning(const Graph& graph) {
  Signal bn, dropout, folded, merged;
  ProducedNames produced(graph);
  for (const Node& n : graph.nodes) {
    if (!n.domain.empty()) continue;
    if (n.op_type == "BatchNormalization" && BatchNormInInferenceForm(graph, n)) bn.Add(n);
    if (n.op_type == "Dropout" && DropoutInInferenceForm(graph, n)) dropout.Add(n);
    if (n.op_type == "Conv" && ExporterComputedConvParam(graph, n)) folded.Add(n);
    if (n.op_type == "Identity" && MergedParameter(graph, n, produced)) merged.Add(n);
  }
  std::vector<std::string> parts;
  if (folded.count)
    parts.push_back(std::to_string(folded.count) + " Conv node(s) with exporter-computed weights (BatchNorm folded "
                    "in; first " + folded.first + ")");
  if (bn.count)
    parts.push_back(std::to_string(bn.count) + " BatchNormalization node(s) in inference form (first " + bn.first +
                    ")");
  if (dropout.count)
    parts.push_back(std::to_string(dropout.count) + " Dropout node(s) in inference form (first " + dropout.first +
                    ")");
  if (merged.count)
    parts.push_back(std::to_string(merged.count) + " parameter(s) merged into an equal one by Identity nodes (first " +
                    merged.first + ")");
  if (parts.empty()) return "";
  std::string s = "looks like an eval-mode export: ";
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? "; " : "") + parts[i];
  return s +
         ". gpucast costs a training step, so BatchNorm and Dropout costs are missing or wrong; re-export in "
         "training mode (tools/gpucast-export, or torch.onnx.export(..., training=torch.onnx.TrainingMode.TRAINING, "
         "do_constant_folding=False); docs/models.md)";
}

}  // namespace gpucast
