// The benchmarks' own flags, taken out of argv before Google Benchmark reads
// it: one parser for every bench main (--NAME=VALUE, --dim=NAME=VALUE repeated,
// switches such as --amp). Header-only: the bench mains are the only users.
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace gpucast::bench {

struct Flags {
  std::map<std::string, std::string> values;  // "--model" -> "x.onnx"
  std::map<std::string, int64_t> dims;        // --dim=seq=128 -> {"seq", 128}
  std::set<std::string> switches;             // "--amp"
};

// "123" -> 123 when the whole text is an integer >= 1.
inline bool PositiveInt(std::string_view s, int64_t* v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size() && *v >= 1;
}

// Moves every argument named in `value_flags` ("--model"), `switch_flags`
// ("--amp") or --dim=NAME=VALUE into `out`, compacting argv and *argc to the
// rest (Google Benchmark's). Returns an error message, empty on success.
inline std::string TakeFlags(int* argc, char** argv, const std::set<std::string>& value_flags,
                             const std::set<std::string>& switch_flags, Flags* out) {
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string_view arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string name(arg.substr(0, eq));
    if (eq != std::string_view::npos && name == "--dim") {
      const std::string_view kv = arg.substr(eq + 1);
      const size_t eq2 = kv.find('=');
      int64_t v = 0;
      if (eq2 == std::string_view::npos || eq2 == 0 || !PositiveInt(kv.substr(eq2 + 1), &v))
        return "--dim wants NAME=VALUE with VALUE an integer >= 1, got '" + std::string(kv) + "'";
      out->dims[std::string(kv.substr(0, eq2))] = v;
    } else if (eq != std::string_view::npos && value_flags.count(name)) {
      out->values[name] = std::string(arg.substr(eq + 1));
    } else if (eq == std::string_view::npos && switch_flags.count(name)) {
      out->switches.insert(name);
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  return "";
}

}  // namespace gpucast::bench
