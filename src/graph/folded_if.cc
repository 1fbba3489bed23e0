#include "graph/folded_if.h"

#include <unordered_map>
#include <unordered_set>

#include "graph/graph.h"
#include "graph/subgraph_names.h"

namespace gpucast {

std::optional<std::vector<onnx::NodeProto>> TakenBranch(const onnx::NodeProto& if_node, bool condition,
                                                        const std::function<bool(const std::string&)>& taken) {
  if (!IsDefaultDomain(if_node.domain()) || if_node.op_type() != "If" ||
      if_node.input_size() != 1)
    return std::nullopt;
  const char* which = condition ? "then_branch" : "else_branch";
  const onnx::GraphProto* branch = nullptr;
  for (const auto& a : if_node.attribute())
    if (a.name() == which && a.has_g()) branch = &a.g();
  if (!branch || branch->input_size() != 0 || branch->initializer_size() != 0 ||
      branch->sparse_initializer_size() != 0 || branch->output_size() != if_node.output_size())
    return std::nullopt;
  const std::string prefix = if_node.name() + "/" + (condition ? "then" : "else");

  std::unordered_set<std::string> defined;
  for (const auto& n : branch->node())
    for (const auto& o : n.output())
      if (!o.empty() && !defined.insert(o).second) return std::nullopt;  // two producers
  // A defined name that is the branch's output k becomes the If's output k (its first listing).
  Renames renames;
  for (int k = 0; k < branch->output_size(); ++k) {
    const std::string& o = branch->output(k).name();
    if (defined.count(o) && !if_node.output(k).empty()) renames.emplace(o, if_node.output(k));
  }
  std::unordered_set<std::string> fresh_names;  // "x" and "/x" would both be prefix + "/x"
  for (const std::string& d : defined) {
    if (renames.count(d)) continue;
    std::string fresh = Under(prefix, d);
    if (taken(fresh) || !fresh_names.insert(fresh).second) return std::nullopt;
    renames.emplace(d, std::move(fresh));
  }

  std::vector<onnx::NodeProto> out;
  out.reserve(static_cast<size_t>(branch->node_size() + branch->output_size()));
  for (int i = 0; i < branch->node_size(); ++i) {
    onnx::NodeProto n = branch->node(i);
    n.set_name(Under(prefix, n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name()));
    RenameNode(&n, renames);
    out.push_back(std::move(n));
  }
  // If outputs the branch's nodes do not write: a copy of what the branch names there.
  for (int k = 0; k < branch->output_size(); ++k) {
    const std::string& want = if_node.output(k);
    if (want.empty()) continue;
    std::string from = branch->output(k).name();
    Rename(&from, renames);
    if (from == want) continue;
    if (from.empty()) return std::nullopt;
    onnx::NodeProto copy;
    copy.set_op_type("Identity");
    copy.set_name(Under(prefix, "output_" + std::to_string(k)));
    copy.add_input(from);
    copy.add_output(want);
    out.push_back(std::move(copy));
  }
  return out;
}

}  // namespace gpucast
