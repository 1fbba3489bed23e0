// Count: an int64 that turns "overflowed" instead of wrapping, so cost rules
// can be written as plain arithmetic and the driver reports an overflow once.
#pragma once

#include <cstdint>
#include <optional>

#include "util/checked.h"

namespace gpucast {

class Count {
 public:
  Count(int64_t v = 0) : v_(v) {}  // NOLINT: implicit by design
  static Count Overflowed() { Count c; c.v_.reset(); return c; }

  bool ok() const { return v_.has_value(); }
  // REQUIRES: ok().
  int64_t value() const { return *v_; }

  friend Count operator+(Count a, Count b) {
    if (!a.ok() || !b.ok()) return Overflowed();
    auto r = CheckedAdd(*a.v_, *b.v_);
    return r ? Count(*r) : Overflowed();
  }
  friend Count operator*(Count a, Count b) {
    if (!a.ok() || !b.ok()) return Overflowed();
    auto r = CheckedMul(*a.v_, *b.v_);
    return r ? Count(*r) : Overflowed();
  }
  Count& operator+=(Count b) { return *this = *this + b; }
  Count& operator*=(Count b) { return *this = *this * b; }

 private:
  std::optional<int64_t> v_;
};

}  // namespace gpucast
