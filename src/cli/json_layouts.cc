#include "cli/json_layouts.h"

#include <cstdio>
#include <cstdlib>

namespace gpucast::cli {

nlohmann::json SchemaField(std::string_view name) {
  for (const JsonLayout& l : kJsonLayouts)
    if (name == l.name) return {{"name", l.name}, {"version", l.version}};
  std::fprintf(stderr, "internal error: no JSON layout named '%.*s'\n", static_cast<int>(name.size()), name.data());
  std::abort();
}

}  // namespace gpucast::cli
