// Bounds on loading one ONNX graph, so that a hostile file costs bounded time
// and memory: nodes (counting those inside If/Loop/Scan subgraphs), entries of
// every repeated field the loader keeps a record of (a graph's nodes,
// initializers, inputs, outputs and value_info, a node's attributes: one Relu
// with 600,000 header-only initializers is a few MB on the wire and cost
// seconds and gigabytes before this limit), subgraph nesting, the bytes kept
// once weight payloads are skipped, and wall-clock time. Every front end gets them (the CLI with these defaults, `gpucast
// serve` from its flags); the largest graphs in models/ (1,625 nodes, 197 kB,
// no subgraphs) are far inside them.
#pragma once

#include <cstdint>

namespace gpucast {

struct LoadLimits {
  int64_t max_nodes = 50000;           // nodes of the graph and all its subgraphs
  int64_t max_entries = 200000;        // nodes + initializers + inputs + outputs + value_info + attributes,
                                       // in every graph and subgraph (models/: at most 2,627)
  int max_subgraph_depth = 8;          // graphs nested inside node attributes (the main graph is 0)
  int max_function_depth = 32;         // model-local functions calling functions (onnx_functions.h)
  int max_rank = 64;                   // dimensions of one tensor (graph inputs, initializers, inferred
                                       // outputs): every tensor's shape is kept, so a rank-10,000 input
                                       // through 50,000 Relu nodes was 500 million dims (models/: at most 6)
  int64_t max_slot_dims = 4000000;     // dimensions of the shapes at every node input and output slot, summed
                                       // (a slot counts 1 + its tensor's rank): a shape is kept per slot,
                                       // so one Concat of 499,900 copies of a rank-64 input (a 1.5 MB file)
                                       // held 835 MB (models/: at most 3,789 slots)
  int64_t max_graph_bytes = 16 << 20;  // bytes of the model without weight payloads (onnx_wire.h)
  double max_seconds = 0;              // wall-clock time of one load; 0 = no limit
};

// Why a load failed, for callers that answer differently per kind (the
// service: 413 for bytes, 422 for the other limits; one message for every
// file a user cannot have analysed).
enum class LoadFailure {
  kNone,
  kNotAModel,     // unreadable, empty, truncated, not an ONNX protobuf
  kTooManyNodes,  // over max_nodes
  kTooManyEntries,  // over max_entries
  kTooDeep,       // over max_subgraph_depth
  kTooLarge,      // over max_graph_bytes
  kTimeout,       // over max_seconds
  kInvalid,       // an ONNX model with an invalid or unsupported graph (names the node)
};

// Whether `f` is one of the limits above.
inline bool IsLimit(LoadFailure f) {
  return f == LoadFailure::kTooManyNodes || f == LoadFailure::kTooManyEntries || f == LoadFailure::kTooDeep || f == LoadFailure::kTooLarge ||
         f == LoadFailure::kTimeout;
}

}  // namespace gpucast
