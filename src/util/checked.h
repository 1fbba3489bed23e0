// Overflow-checked 64-bit integer arithmetic for shape and FLOP counting.
// A count that does not fit in int64 is an error, never a silent wrap.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

namespace gpucast {

inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of all factors, or nullopt on overflow. Empty product is 1.
inline std::optional<int64_t> CheckedProduct(std::initializer_list<int64_t> xs) {
  int64_t r = 1;
  for (int64_t x : xs) {
    auto m = CheckedMul(r, x);
    if (!m) return std::nullopt;
    r = *m;
  }
  return r;
}

inline std::optional<int64_t> CheckedProduct(const std::vector<int64_t>& xs) {
  int64_t r = 1;
  for (int64_t x : xs) {
    auto m = CheckedMul(r, x);
    if (!m) return std::nullopt;
    r = *m;
  }
  return r;
}

}  // namespace gpucast
