// Inlining of ONNX model-local functions (ModelProto.functions).
//
// Exporters write a module as a FunctionProto and each use of it as a node
// whose (domain, op_type) names that function: torch.onnx.export with
// export_modules_as_functions, torch.onnx.dynamo_export (torch 2.1-2.4, every
// nn.Module a function, nested), onnxscript. The loader costs ONNX operators,
// so before shape inference each such node is replaced by the function's body
// (docs/graph-loading.md, "Model-local functions"):
//   - the function's formal inputs and outputs become the node's actual names
//     (an omitted optional input stays empty; an output the call leaves out
//     gets an internal name);
//   - every other value of the body, and every body node, is renamed
//     "<calling node's name>/<name in the body>", made unique in the graph, so
//     messages name the path (node '/blocks/blocks.0/Block/Mlp_1/Gemm_3');
//   - an attribute reference (ref_attr_name) takes the calling node's
//     attribute of that name, else the function's default (attribute_proto,
//     IR 9), else the attribute is dropped, as ONNX does;
//   - a body node that calls a function is inlined in turn.
// Bounded before anything is expanded: a function that calls itself, directly
// or through others, is refused naming the cycle; functions nest at most
// LoadLimits::max_function_depth levels; the graph's node count once inlined
// (computed per function without expanding) must stay within
// LoadLimits::max_nodes; while expanding, the bytes of the names and nodes
// made must stay within LoadLimits::max_graph_bytes (a long call name or a
// function of many inputs called many times).
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "graph/load_limits.h"
#include "util/status.h"

namespace gpucast {

// The function's attribute defaults (FunctionProto.attribute_proto, field 11
// of ONNX 1.13's onnx.proto; libonnx 1.12's classes keep it as an unknown
// field, read here). An entry that does not parse is an error.
Result<std::vector<onnx::AttributeProto>> FunctionAttributeDefaults(const onnx::FunctionProto& f);

struct InlineResult {
  int calls = 0;       // function call nodes replaced, nested ones included
  int functions = 0;   // distinct functions inlined
};

// Inlines every call of model->functions() in model->graph()'s nodes (not in
// If/Loop/Scan subgraphs, which the loader does not analyse) and clears
// model->functions(). Domains a function imports that the model does not are
// added to model->opset_import(). Errors carry no file name ("function
// '__main__::A' calls itself: __main__::A -> __main__::B -> __main__::A");
// *why (if given) says kTooManyNodes, kTooDeep or kTooLarge for a bound,
// else kInvalid.
Result<InlineResult> InlineFunctions(onnx::ModelProto* model, const LoadLimits& limits,
                                     LoadFailure* why = nullptr);

}  // namespace gpucast
