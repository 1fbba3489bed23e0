// gpucast's one error channel.
//
// Status carries success or an error message; Result<T> carries a value or a
// Status. Messages name the file, the node (or line) and the reason, in that
// order: "resnet50.onnx: node 'Conv_12' (Conv): weight input has rank 3, want 4".
// They are part of the interface: tests assert their text.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace gpucast {

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message), true); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

  // Returns a copy with "prefix: " in front of the message (ok stays ok).
  Status Prefixed(const std::string& prefix) const {
    return ok() ? *this : Error(prefix + ": " + message_);
  }

 private:
  Status(std::string m, bool failed) : message_(std::move(m)), failed_(failed) {}
  std::string message_;
  bool failed_ = false;
};

// A value or an error. REQUIRES: value() only when ok().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  const std::string& message() const { return status_.message(); }

  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace gpucast

// Early-return helpers: RETURN_IF_ERROR(status_expr);
//                       ASSIGN_OR_RETURN(auto x, result_expr);
#define GPUCAST_CONCAT_INNER(a, b) a##b
#define GPUCAST_CONCAT(a, b) GPUCAST_CONCAT_INNER(a, b)
#define RETURN_IF_ERROR(expr)                       \
  do {                                              \
    ::gpucast::Status _st = (expr);                 \
    if (!_st.ok()) return _st;                      \
  } while (0)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(GPUCAST_CONCAT(_res_, __LINE__), lhs, expr)
