#include "cli/flags.h"

#include <charconv>

namespace gpucast::cli {

Status ParseDimFlags(const std::vector<std::string>& flags, std::map<std::string, int64_t>* dims) {
  for (const std::string& kv : flags) {
    size_t eq = kv.find('=');
    int64_t value = 0;
    const char* begin = kv.data() + (eq == std::string::npos ? 0 : eq + 1);
    const char* end = kv.data() + kv.size();
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (eq == std::string::npos || eq == 0 || ec != std::errc() || ptr != end || value < 1)
      return Status::Error("--dim '" + kv +
                           "': expected NAME=VALUE with VALUE a positive integer");
    if (!dims->emplace(kv.substr(0, eq), value).second)
      return Status::Error("--dim '" + kv + "': dimension given twice");
  }
  return Status::Ok();
}

}  // namespace gpucast::cli
