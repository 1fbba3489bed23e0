// Renaming what a subgraph defines when its nodes are written into the main graph
// (folded_if.h: an If's taken branch; unrolled_loop.h: a Loop's iterations), and reading
// what a graph and its subgraphs read.
#pragma once

#include <string>
#include <unordered_map>

#include <onnx/onnx_pb.h>

namespace gpucast {

// Old name -> new name.
using Renames = std::unordered_map<std::string, std::string>;

inline void Rename(std::string* name, const Renames& renames) {
  if (auto it = renames.find(*name); it != renames.end()) *name = it->second;
}

// Reads of renamed names inside a subgraph (outer-scope references), at any depth, and its outputs.
inline void RenameReads(onnx::GraphProto* g, const Renames& renames) {
  for (auto& n : *g->mutable_node()) {
    for (auto& in : *n.mutable_input()) Rename(&in, renames);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) RenameReads(a.mutable_g(), renames);
      for (auto& sub : *a.mutable_graphs()) RenameReads(&sub, renames);
    }
  }
  for (auto& o : *g->mutable_output()) Rename(o.mutable_name(), renames);
}

// A node's inputs and outputs renamed, and the reads inside its subgraphs.
inline void RenameNode(onnx::NodeProto* n, const Renames& renames) {
  for (auto& in : *n->mutable_input()) Rename(&in, renames);
  for (auto& o : *n->mutable_output()) Rename(&o, renames);
  for (auto& a : *n->mutable_attribute()) {
    if (a.has_g()) RenameReads(a.mutable_g(), renames);
    for (auto& sub : *a.mutable_graphs()) RenameReads(&sub, renames);
  }
}

// Calls fn(name) for every input a node of `g` reads, inside nested subgraphs too (outer-scope
// references; "" for an omitted input), in graph order.
template <class Fn>
void ForEachRead(const onnx::GraphProto& g, Fn&& fn) {
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) fn(in);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) ForEachRead(a.g(), fn);
      for (const auto& sub : a.graphs()) ForEachRead(sub, fn);
    }
  }
}

// prefix + name, one '/' between them (torch's names start with one: "/If/then" + "/Squeeze").
inline std::string Under(const std::string& prefix, const std::string& name) {
  return !name.empty() && name[0] == '/' ? prefix + name : prefix + "/" + name;
}

}  // namespace gpucast
