#include "service/http_util.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include <httplib.h>

#include "service/http_front.h"
#include "util/json_text.h"

namespace gpucast::service {

using nlohmann::json;

std::string Dump(const json& j) { return JsonText(j); }

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(Dump(body), "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, status, json{{"error", NoControlBytes(message)}});
}

std::string NoControlBytes(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  return out;
}

std::string Shown(const std::string& s, size_t max) { return s.size() > max ? s.substr(0, max) + "..." : s; }

Result<int64_t> ParseIntParam(const std::string& field, const std::string& s, int64_t lo, int64_t hi) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
    return Status::Error("parameter '" + Shown(field) + "': want an integer in [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "], got '" + Shown(s) + "'");
  }
  return v;
}

Result<bool> ParseBoolParam(const std::string& field, const std::string& s) {
  if (s == "1" || s == "true") return true;
  if (s == "0" || s == "false") return false;
  return Status::Error("parameter '" + Shown(field) + "': want 0, 1, true or false, got '" + Shown(s) + "'");
}

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool HasControlByte(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return true;
  }
  return false;
}

Status CheckPrintableName(const std::string& what, const std::string& noun, const std::string& example,
                          std::string_view name) {
  auto printable = [](char c) { return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7F; };
  if (std::all_of(name.begin(), name.end(), printable)) return Status::Ok();
  std::string shown(name.substr(0, 64));
  for (char& c : shown)
    if (!printable(c)) c = '?';
  return Status::Error(what + ": " + noun + " is printable ASCII (such as " + example + "), got '" + shown +
                       (name.size() > 64 ? "..." : "") + "' (a control or non-ASCII byte shown as ?)");
}

namespace {

// Finds the first key given twice in one object, as a SAX pass (linear). The
// parser callback did this before, but nlohmann's callback parser is quadratic
// in the objects of an array: an 800 KB body of 200000 "{}" held a worker 11 s
// (35 s in a bench of json::parse with a callback that keeps everything).
class RepeatedKeyFinder {
 public:
  using json_t = nlohmann::json;
  std::string repeated;
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json_t::number_integer_t) { return true; }
  bool number_unsigned(json_t::number_unsigned_t) { return true; }
  bool number_float(json_t::number_float_t, const json_t::string_t&) { return true; }
  bool string(json_t::string_t&) { return true; }
  bool binary(json_t::binary_t&) { return true; }
  bool start_object(std::size_t) {
    open_.emplace_back();
    return true;
  }
  bool key(json_t::string_t& k) {
    if (!open_.empty() && !open_.back().insert(k).second) {
      repeated = k;
      return false;  // the first one found: stop
    }
    return true;
  }
  bool end_object() {
    if (!open_.empty()) open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  std::vector<std::set<std::string>> open_;  // the keys of each open object, innermost last
};

}  // namespace

Result<nlohmann::json> ParseJson(std::string_view body) {
  // A key twice in one object ({"batch": 8, "batch": 64}) was the last one's value, silently
  // (nlohmann keeps the last): refused, naming the key.
  try {
    json j = nlohmann::json::parse(body);
    RepeatedKeyFinder finder;
    nlohmann::json::sax_parse(body, &finder);
    if (!finder.repeated.empty()) {
      return Status::Error("malformed JSON: key '" + Shown(finder.repeated) + "' given twice in one object");
    }
    return j;
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range 406: a number
                                                   // past double's range (1e400) was a 500
    return Status::Error("malformed JSON: " + JsonErrorReason(e));
  }
}

Status CheckJsonBody(std::string_view body, int max_depth) {
  if (!IsValidUtf8(body)) return Status::Error("request body: not valid UTF-8");
  if (JsonNestedDeeperThan(body, max_depth))
    return Status::Error("request body: JSON nested deeper than " + std::to_string(max_depth) + " levels");
  return Status::Ok();
}

std::string ForLog(std::string_view s, size_t max) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace gpucast::service
