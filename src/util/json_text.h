// JSON text that cannot throw on the strings in it. nlohmann's dump() throws
// type_error 316 on a string that is not UTF-8, and strings reach the JSON
// the commands print and write from outside: file paths (a Linux file name is
// any bytes but '/' and NUL), trace names, names in a graph. Uncaught, the
// throw aborted `gpucast predict --json`, `simulate --json` and `train` (its
// predictor file holds the --data paths). Here each invalid byte becomes
// U+FFFD, as the service's replies do (service/http_util.h Dump).
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpucast {

// j.dump(indent) with invalid UTF-8 replaced by U+FFFD; never throws.
template <typename Json>
std::string JsonText(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// The reason a nlohmann exception gives, without its "[json.exception.<kind>.<id>] "
// prefix ("[json.exception.parse_error.101] parse error at line 1, column 2: ..."
// -> "parse error at line 1, column 2: ..."); any other text unchanged. The
// messages of malformed JSON (a predictor file, a request body) show it.
inline std::string JsonErrorReason(const std::exception& e) {
  std::string what = e.what();
  if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos)
    what = what.substr(what.find("] ") + 2);
  return what;
}

// Whether JSON text nests arrays and objects deeper than max_depth (0: any
// '[' or '{' outside a string is too deep), by a scan of its bytes that skips
// strings and their escapes: a bound checked before the recursive parser runs.
// Text that is not JSON is scanned the same way (the parser rejects it after).
inline bool JsonNestedDeeperThan(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace gpucast
