// The JSON form of a CostReport (the `nodes`, `totals` and `unsupported`
// members of `gpucast analyze --json`). Field names are stable; see
// docs/cost-rules.md.
#pragma once

#include <nlohmann/json.hpp>

#include "cost/cost.h"

namespace gpucast {

// {"nodes": [{"name", "op_type", "category", "input_shapes", "output_shapes",
//   "forward_flops", "backward_flops", "params", "activation_bytes",
//   "weight_bytes"}...], "totals": {...}, "unsupported": [{"op_type", "count",
//   "reason"}...]}. Unknown or omitted shapes are [].
nlohmann::json CostReportToJson(const CostReport& report);

}  // namespace gpucast
