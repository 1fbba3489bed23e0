// Small pieces every route file shares: JSON replies that cannot fail on
// bytes that are not UTF-8, query-parameter parsing with messages that name
// the parameter, token comparison, and text checks for what a client sends
// (control bytes, JSON nesting) and for what goes into the service's log.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace httplib {
struct Response;
}

namespace gpucast::service {

// JSON text; bytes that are not UTF-8 are replaced, never thrown on.
std::string Dump(const nlohmann::json& j);

// Sets status and a JSON body.
void SendJson(httplib::Response& res, int status, const nlohmann::json& body);
// Sets status and {"error": message}, the message's control bytes shown as '?'
// (NoControlBytes): messages quote what clients sent.
void SendError(httplib::Response& res, int status, const std::string& message);

// `s` with each byte < 0x20 and 0x7F replaced by '?' (other bytes kept): client
// text quoted in a reply (an error, an admission denial or warning) that a
// terminal may print.
std::string NoControlBytes(std::string_view s);

// A query-string or path parameter: a decimal integer in [lo, hi].
// Error: "parameter 'limit': want an integer in [1, 1000], got 'x'".
Result<int64_t> ParseIntParam(const std::string& field, const std::string& s, int64_t lo, int64_t hi);
// A query-string parameter: 0, 1, true or false.
Result<bool> ParseBoolParam(const std::string& field, const std::string& s);

// Compares secrets in time independent of where they differ.
bool ConstantTimeEqual(const std::string& a, const std::string& b);

// Whether `s` holds a byte < 0x20 or 0x7F.
bool HasControlByte(std::string_view s);

// A name looked up in a spec table (a GPU, a MIG profile) is printable ASCII
// (bytes 0x20 to 0x7E): the tables' spelling rule ignores every byte but letters
// and digits, so "H100\0" or a right-to-left override before "H100" would read as
// the H100. Error, naming `what` and quoting the name's first 64 bytes (each byte
// outside that range shown as '?', "..." after a cut):
// "field 'gpu': a GPU name is printable ASCII (such as A100-80GB), got 'A100?-80GB'
// (a control or non-ASCII byte shown as ?)", with `noun` "a GPU name" and
// `example` "A100-80GB".
Status CheckPrintableName(const std::string& what, const std::string& noun, const std::string& example,
                          std::string_view name);

// A JSON body is checked before it is parsed: valid UTF-8, and nesting no
// deeper than `max_depth` (one linear pass; brackets inside strings do not
// count). Errors: "request body: not valid UTF-8", "request body: JSON nested
// deeper than 32 levels".
Status CheckJsonBody(std::string_view body, int max_depth);

// Parses a JSON body. Error: "malformed JSON: <the parser's reason>" (without
// nlohmann's "[json.exception.parse_error.101] " prefix), or "malformed JSON: key
// 'batch' given twice in one object"; callers prefix it with what the body was.
Result<nlohmann::json> ParseJson(std::string_view body);

// Client text made safe for one log line: control bytes and backslashes as
// \xNN escapes, cut to `max` bytes (with "..." after a cut).
std::string ForLog(std::string_view s, size_t max = 256);

// Client text shown in a reply: at most `max` bytes, "..." after a cut.
std::string Shown(const std::string& s, size_t max = 64);

}  // namespace gpucast::service
