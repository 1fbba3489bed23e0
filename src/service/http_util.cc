#include "service/http_util.h"

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
  SendJson(res, status, json{{"error", message}});
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

Result<nlohmann::json> ParseJson(std::string_view body) {
  // A key twice in one object ({"batch": 8, "batch": 64}) was the last one's value, silently
  // (nlohmann keeps the last): the keys of each open object, innermost last.
  std::vector<std::set<std::string>> open_objects;
  std::string repeated;
  auto check_keys = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    else if (event == json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    else if (event == json::parse_event_t::key && !open_objects.empty() && repeated.empty() &&
             !open_objects.back().insert(parsed.get<std::string>()).second)
      repeated = parsed.get<std::string>();
    return true;
  };
  try {
    json j = nlohmann::json::parse(body, check_keys);
    if (!repeated.empty()) return Status::Error("malformed JSON: key '" + Shown(repeated) + "' given twice in one object");
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
