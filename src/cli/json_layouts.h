// The JSON layouts the commands print with --json: one row each. Every layout
// carries "schema": {"name", "version"}; a change that removes or renames a
// field, or changes its meaning or unit, bumps the version. docs/json.md lists
// every layout's fields (tests/json_layouts.sh checks them against real output).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace gpucast::cli {

struct JsonLayout {
  const char* name;     // "gpucast.predict"
  int version;
  const char* command;  // the command line that prints it
};

inline constexpr JsonLayout kJsonLayouts[] = {
    {"gpucast.analyze", 1, "gpucast analyze --json"},
    {"gpucast.predict", 1, "gpucast predict --json"},
    {"gpucast.evaluate", 1, "gpucast evaluate --json"},
    {"gpucast.learning-curve", 1, "gpucast evaluate --observations DB --json"},
    {"gpucast.evaluate.steps", 1, "gpucast evaluate --steps DIR --json"},
    {"gpucast.memory-evaluation", 1, "gpucast evaluate --memory-only --json"},
    {"gpucast.simulate", 1, "gpucast simulate --json (also OUT/run.json, OUT/runs.json)"},
    {"gpucast.interference", 1, "gpucast interference --json"},
};

// {"name": NAME, "version": V} of the row named `name`. REQUIRES: a row of
// kJsonLayouts is named so (a typo is a programming error: it aborts).
nlohmann::json SchemaField(std::string_view name);

}  // namespace gpucast::cli
