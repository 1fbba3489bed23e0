// UTF-8 well-formedness (RFC 3629: no overlong forms, no surrogates, no code
// points past U+10FFFF, no truncated sequences), for the places that check or
// show text from a model file.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpucast {

// Length in bytes (1-4) of the well-formed UTF-8 sequence that starts at
// s[i], or 0 when the byte there does not start one. REQUIRES: i < s.size().
inline size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n = 0;                        // continuation bytes
  unsigned char lo = 0x80, hi = 0xBF;  // range of the first continuation byte
  if (c >= 0xC2 && c <= 0xDF) n = 1;
  else if (c == 0xE0) n = 2, lo = 0xA0;
  else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 2;
  else if (c == 0xED) n = 2, hi = 0x9F;
  else if (c == 0xF0) n = 3, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 3;
  else if (c == 0xF4) n = 3, hi = 0x8F;
  else return 0;
  if (i + n >= s.size()) return 0;
  for (size_t k = 1; k <= n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF)) return 0;
  }
  return n + 1;
}

// Offset of the first byte of `s` that does not start a well-formed UTF-8
// sequence; npos when all of `s` is well formed.
inline size_t FirstInvalidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

}  // namespace gpucast
