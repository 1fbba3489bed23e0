// Small text helpers for the simulator's CSV readers: splitting, strict number
// parsing, and "file: line N: reason" error text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace gpucast::sim {

// Splits one line on `sep` (no quoting: none of the supported inputs quote).
std::vector<std::string_view> Split(std::string_view line, char sep);

// Whole-field parses; nullopt when the field is empty, has trailing junk, or is
// not finite.
std::optional<double> ParseDouble(std::string_view s);
std::optional<long long> ParseInt(std::string_view s);

// Base name of a path, for error messages ("/a/b/philly.csv" -> "philly.csv").
std::string BaseName(const std::string& path);

// The most bytes ReadFile reads by default (256 MiB; philly.csv, the largest
// input, is 3.4 MB) and how long it waits for them (a hung network mount).
inline constexpr size_t kMaxTextFileBytes = size_t{256} << 20;
inline constexpr double kTextReadSeconds = 60;

// Reads a whole regular file of at most `max_bytes`. Errors name the path and
// the reason (cannot open: strerror; not a regular file (a FIFO, a device, a
// directory): at once, without blocking; larger than max_bytes; not read
// within kTextReadSeconds) -- util/bounded_read.h. It read without a bound:
// --trace /dev/zero died of std::bad_alloc, a FIFO hung, and a directory was
// "empty file".
Result<std::string> ReadFile(const std::string& path, size_t max_bytes = kMaxTextFileBytes);

// Splits text into lines (drops '\r' before '\n'; a missing final newline is fine).
std::vector<std::string_view> Lines(std::string_view text);

// Index of `name` in a header row, or -1.
int ColumnIndex(const std::vector<std::string_view>& header, std::string_view name);

}  // namespace gpucast::sim
