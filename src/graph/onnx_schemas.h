// ONNX operator schemas without building libonnx's whole schema registry.
//
// libonnx 1.12 builds every schema of every opset (about 1,000 OpSchema
// objects, ~42 M instructions, ~10 ms) the first time its registry is asked
// for any schema. A graph uses a few dozen ops, so the default-domain schemas
// are built here one at a time, on first use, from libonnx's exported
// per-version schema functions (GetOpSchema<Op_Onnx_verN>), listed in a table
// generated at configure time from the installed onnx/defs/operator_sets.h.
// Other domains (ai.onnx.ml, training, preview) use OpSchemaRegistry.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <onnx/defs/schema.h>

namespace gpucast {

// The schema of `op_type` in `domain` ("" = ai.onnx) for a model of opset
// `version`: the newest with since_version <= version, or nullptr when there
// is none. Thread-safe; the schema lives until the process exits.
const onnx::OpSchema* FindOpSchema(const std::string& op_type, int version, const std::string& domain);

// The generated table: (op_type, since_version) of every default-domain
// schema version libonnx declares (tests compare it with the registry).
std::vector<std::pair<std::string, int>> LazyOpSchemaVersions();

}  // namespace gpucast
