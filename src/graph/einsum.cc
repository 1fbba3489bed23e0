#include "graph/einsum.h"

#include <map>

namespace gpucast {
namespace {

struct Term {
  std::string letters;     // index letters in order, without the ellipsis
  bool ellipsis = false;
  size_t ellipsis_at = 0;  // letters before the "..."
};

bool IsIndex(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Parses one term ("bij", "...ij", "b...d"); `what` names it in errors.
Result<Term> ParseTerm(const std::string& s, const std::string& what) {
  Term t;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 3, "...") == 0) {
      if (t.ellipsis) return Status::Error("equation " + what + " '" + s + "' has two '...'");
      t.ellipsis = true;
      t.ellipsis_at = t.letters.size();
      i += 3;
    } else if (IsIndex(s[i])) {
      t.letters += s[i++];
    } else {
      return Status::Error("equation " + what + " '" + s + "' has character '" + std::string(1, s[i]) +
                           "', want letters and '...'");
    }
  }
  return t;
}

}  // namespace

Result<EinsumSpace> ResolveEinsum(const std::string& equation, const std::vector<std::vector<int64_t>>& inputs) {
  if (equation.size() > kMaxEinsumEquation)
    return Status::Error("equation has " + std::to_string(equation.size()) + " characters, limit " +
                         std::to_string(kMaxEinsumEquation));
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> parts;
  for (size_t from = 0;;) {
    size_t comma = lhs.find(',', from);
    parts.push_back(lhs.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (parts.size() != inputs.size())
    return Status::Error("equation '" + eq + "' has " + std::to_string(parts.size()) + " operand terms, node has " +
                         std::to_string(inputs.size()) + " inputs");

  std::map<char, int64_t> extent;
  std::map<char, int> uses;
  std::vector<int64_t> ell;  // broadcast "..." dims, right-aligned
  bool any_ellipsis = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    ASSIGN_OR_RETURN(Term t, ParseTerm(parts[i], "operand " + std::to_string(i)));
    const std::vector<int64_t>& d = inputs[i];
    if (t.ellipsis ? d.size() < t.letters.size() : d.size() != t.letters.size())
      return Status::Error("input " + std::to_string(i) + " (term '" + parts[i] + "') has rank " +
                           std::to_string(d.size()) + ", want " + std::to_string(t.letters.size()) +
                           (t.ellipsis ? " or more" : ""));
    const size_t ell_rank = d.size() - t.letters.size();
    any_ellipsis = any_ellipsis || t.ellipsis;
    for (size_t k = 0; k < t.letters.size(); ++k) {
      const char c = t.letters[k];
      const int64_t e = d[t.ellipsis && k >= t.ellipsis_at ? k + ell_rank : k];
      auto [it, fresh] = extent.emplace(c, e);
      if (!fresh && it->second != e)
        return Status::Error("index '" + std::string(1, c) + "' is " + std::to_string(it->second) + " and " +
                             std::to_string(e) + " (input " + std::to_string(i) + ")");
      ++uses[c];
    }
    if (ell_rank > ell.size()) ell.insert(ell.begin(), ell_rank - ell.size(), 1);
    for (size_t k = 0; k < ell_rank; ++k) {
      const int64_t e = d[t.ellipsis_at + k];
      int64_t& b = ell[ell.size() - ell_rank + k];
      if (b == 1) {
        b = e;
      } else if (e != 1 && e != b) {
        return Status::Error("'...' dims do not broadcast: " + std::to_string(b) + " and " + std::to_string(e) +
                             " (input " + std::to_string(i) + ")");
      }
    }
  }

  Term out;
  if (arrow != std::string::npos) {
    ASSIGN_OR_RETURN(out, ParseTerm(eq.substr(arrow + 2), "output"));
    for (size_t k = 0; k < out.letters.size(); ++k) {
      const char c = out.letters[k];
      if (!extent.count(c)) return Status::Error("output index '" + std::string(1, c) + "' is in no input term");
      if (out.letters.find(c) != k) return Status::Error("output index '" + std::string(1, c) + "' appears twice");
    }
  } else {
    out.ellipsis = any_ellipsis;
    for (const auto& [c, n] : uses)
      if (n == 1) out.letters += c;
  }

  EinsumSpace s;
  for (size_t k = 0; k <= out.letters.size(); ++k) {
    if (out.ellipsis && k == out.ellipsis_at) s.output_dims.insert(s.output_dims.end(), ell.begin(), ell.end());
    if (k < out.letters.size()) s.output_dims.push_back(extent.at(out.letters[k]));
  }
  for (const auto& [c, e] : extent) {
    s.extents.push_back(e);
    s.sums = s.sums || out.letters.find(c) == std::string::npos;
  }
  s.extents.insert(s.extents.end(), ell.begin(), ell.end());
  s.sums = s.sums || (!out.ellipsis && !ell.empty());
  return s;
}

}  // namespace gpucast
