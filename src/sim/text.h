// Small text helpers for the simulator's CSV readers: splitting, strict number
// parsing, and "file: line N: reason" error text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpucast::sim {

// Splits one line on `sep` (no quoting: none of the supported inputs quote).
std::vector<std::string_view> Split(std::string_view line, char sep);

// Whole-field parses; nullopt when the field is empty, has trailing junk, or is
// not finite.
std::optional<double> ParseDouble(std::string_view s);
std::optional<long long> ParseInt(std::string_view s);

// Base name of a path, for error messages ("/a/b/philly.csv" -> "philly.csv").
std::string BaseName(const std::string& path);

// Reads a whole file; nullopt when it cannot be opened.
std::optional<std::string> ReadFile(const std::string& path);

// Splits text into lines (drops '\r' before '\n'; a missing final newline is fine).
std::vector<std::string_view> Lines(std::string_view text);

// Index of `name` in a header row, or -1.
int ColumnIndex(const std::vector<std::string_view>& header, std::string_view name);

}  // namespace gpucast::sim
