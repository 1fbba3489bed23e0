// Einsum: the contraction's exact iteration space. For one or two operands
// with index extents e (the distinct letters, and the broadcast "..." dims):
//   two operands: forward 2·∏e (one multiply-add per point of the iteration
//     space, as MatMul); backward 2·∏e per operand needing a gradient (each
//     operand's gradient is an Einsum of the same space).
//   one operand: a sum over the indices missing from the output costs ∏e
//     (one add per point, as ReduceSum), backward ∏e; a pure permutation or
//     diagonal is a copy (data_movement, no FLOPs).
//   three or more: unsupported (the contraction order decides the cost).
#include <algorithm>
#include <map>

#include "cost/rules.h"

namespace gpucast {
namespace {

constexpr size_t kMaxEquation = 1024;

struct Term {
  std::string letters;   // index letters in order, without the ellipsis
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

std::string Dims(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace

Result<OpCost> EinsumRule(const OpArgs& a) {
  std::optional<std::string> eq_attr = a.node.AttrString("equation");
  if (!eq_attr) return Status::Error("attribute 'equation' missing");
  if (eq_attr->size() > kMaxEquation)
    return Status::Error("equation has " + std::to_string(eq_attr->size()) + " characters, limit " +
                         std::to_string(kMaxEquation));
  std::string eq;
  for (char c : *eq_attr)
    if (c != ' ') eq += c;
  std::vector<const TensorInfo*> ops;
  for (const TensorInfo* t : a.inputs)
    if (t) ops.push_back(t);
  if (ops.empty() || !a.Out(0)) return Status::Error("needs at least one input and an output");
  if (ops.size() > 2) {
    OpCost c;
    c.unsupported = "einsum of " + std::to_string(ops.size()) +
                    " operands is not costed: its cost depends on the contraction order";
    return c;
  }

  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> parts;
  for (size_t from = 0;;) {
    size_t comma = lhs.find(',', from);
    parts.push_back(lhs.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (parts.size() != ops.size())
    return Status::Error("equation '" + eq + "' has " + std::to_string(parts.size()) + " operand terms, node has " +
                         std::to_string(ops.size()) + " inputs");

  std::map<char, int64_t> extent;
  std::map<char, int> uses;
  std::vector<int64_t> ell;  // broadcast "..." dims, right-aligned
  bool any_ellipsis = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    ASSIGN_OR_RETURN(Term t, ParseTerm(parts[i], "operand " + std::to_string(i)));
    const std::vector<int64_t>& d = ops[i]->dims;
    if (t.ellipsis ? d.size() < t.letters.size() : d.size() != t.letters.size())
      return RankError("input " + std::to_string(i) + " (term '" + parts[i] + "')", d.size(),
                       std::to_string(t.letters.size()) + (t.ellipsis ? " or more" : ""));
    const size_t ell_rank = d.size() - t.letters.size();
    any_ellipsis = any_ellipsis || t.ellipsis;
    for (size_t k = 0; k < t.letters.size(); ++k) {
      const char c = t.letters[k];
      const int64_t e = d[k < t.ellipsis_at || !t.ellipsis ? k : k + ell_rank];
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
      if (b == 1) b = e;
      else if (e != 1 && e != b)
        return Status::Error("'...' dims do not broadcast: " + std::to_string(b) + " and " + std::to_string(e) +
                             " (input " + std::to_string(i) + ")");
    }
  }

  // Output term: explicit, or numpy's implicit one ("..." then the letters used once, sorted).
  Term out;
  if (arrow != std::string::npos) {
    ASSIGN_OR_RETURN(out, ParseTerm(eq.substr(arrow + 2), "output"));
    for (size_t k = 0; k < out.letters.size(); ++k) {
      const char c = out.letters[k];
      if (!extent.count(c))
        return Status::Error("output index '" + std::string(1, c) + "' is in no input term");
      if (out.letters.find(c) != k)
        return Status::Error("output index '" + std::string(1, c) + "' appears twice");
    }
  } else {
    out.ellipsis = any_ellipsis;
    for (const auto& [c, n] : uses)
      if (n == 1) out.letters += c;
  }
  std::vector<int64_t> want;
  for (size_t k = 0; k <= out.letters.size(); ++k) {
    if (out.ellipsis && k == out.ellipsis_at) want.insert(want.end(), ell.begin(), ell.end());
    if (k < out.letters.size()) want.push_back(extent.at(out.letters[k]));
  }
  if (want != a.Out(0)->dims)
    return Status::Error("output has shape " + Dims(a.Out(0)->dims) + ", equation '" + eq + "' gives " + Dims(want));

  Count space = Product(ell, 0, ell.size());
  for (const auto& [c, e] : extent) space *= e;
  OpCost c;
  if (ops.size() == 2) {
    c.forward_flops = Count(2) * space;
    if (a.Grad(0)) c.backward_flops += Count(2) * space;
    if (a.Grad(1)) c.backward_flops += Count(2) * space;
    return c;
  }
  bool sums = any_ellipsis && !out.ellipsis && !ell.empty();
  for (const auto& [ch, e] : extent) sums = sums || out.letters.find(ch) == std::string::npos;
  if (!sums) {  // a permutation or diagonal: a copy, as Transpose
    c.category = Category::kDataMovement;
    c.trainable_inputs = std::vector<int>{};
    c.consumes_params = false;
    return c;
  }
  c.category = Category::kElementwise;
  c.forward_flops = space;
  if (a.Grad(0)) c.backward_flops = space;
  return c;
}

}  // namespace gpucast
