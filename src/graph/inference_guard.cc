#include "graph/inference_guard.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <set>

namespace gpucast {
namespace {

// The node and its inputs, with the questions the rules ask.
class View {
 public:
  View(const Node& n, const std::vector<GuardInput>& in) : n_(n), in_(in) {}

  const Node& node() const { return n_; }
  // Rank of input i, -1 when absent or unknown.
  int64_t Rank(size_t i) const { return i < in_.size() && in_[i].present ? in_[i].rank : -1; }
  const std::vector<int64_t>* Value(size_t i) const {
    return i < in_.size() && in_[i].present ? in_[i].value : nullptr;
  }

  // "" or "input I (NAME) has rank R, want W" when the rank is known and not `want`.
  std::string RankIs(size_t i, const char* name, int64_t want) const {
    int64_t r = Rank(i);
    if (r < 0 || r == want) return "";
    return Input(i, name) + " has rank " + std::to_string(r) + ", want " + std::to_string(want);
  }
  std::string RankAtLeast(size_t i, const char* name, int64_t min) const {
    int64_t r = Rank(i);
    if (r < 0 || r >= min) return "";
    return Input(i, name) + " has rank " + std::to_string(r) + ", want >= " + std::to_string(min);
  }
  // Attribute `key` (when set) within [lo, hi].
  std::string IntIn(const char* key, int64_t lo, int64_t hi) const {
    auto v = n_.AttrInt(key);
    if (!v || (*v >= lo && *v <= hi)) return "";
    return "attribute '" + std::string(key) + "' is " + std::to_string(*v) + ", want " + Range(lo, hi);
  }
  // An axis attribute (default `deflt`) valid for rank `rank` (unknown: not checked).
  std::string AxisIn(const char* key, int64_t rank) const {
    if (rank < 0) return "";
    return IntIn(key, -rank, rank - 1);
  }
  // Every value of constant input i within [lo, hi].
  std::string ValuesIn(size_t i, const char* name, int64_t lo, int64_t hi) const {
    const auto* v = Value(i);
    if (!v) return "";
    for (int64_t x : *v) {
      if (x < lo || x > hi) return Input(i, name) + " holds " + std::to_string(x) + ", want " + Range(lo, hi);
    }
    return "";
  }

  static std::string Input(size_t i, const char* name) {
    return "input " + std::to_string(i) + " (" + name + ")";
  }

 private:
  static std::string Range(int64_t lo, int64_t hi) {
    if (hi == INT64_MAX) return ">= " + std::to_string(lo);
    return "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  }
  const Node& n_;
  const std::vector<GuardInput>& in_;
};

// The first non-empty reason of `checks`, evaluated in order.
std::string First(std::initializer_list<std::function<std::string()>> checks) {
  for (const auto& c : checks) {
    if (std::string r = c(); !r.empty()) return r;
  }
  return "";
}

// Convolution and pooling: the data input (index 0) has rank >= 3 (N, C and at
// least one spatial dim), the weight (index `weight`, -1: none) the same rank,
// and the per-axis attributes one value per spatial dim (pads two), strides,
// kernel and dilations >= 1, pads >= 0, group >= 1. libonnx indexes the weight
// dims and these lists by the data's rank (a rank-1 ConvTranspose weight, or
// zero strides, crashed it).
std::string Spatial(const View& v, int weight) {
  int64_t r = v.Rank(0);
  if (r < 0) return "";
  if (r < 3) return View::Input(0, "X") + " has rank " + std::to_string(r) + ", want >= 3";
  if (weight >= 0 && v.Rank(weight) >= 0 && v.Rank(weight) != r) {
    return View::Input(weight, "W") + " has rank " + std::to_string(v.Rank(weight)) + ", want " + std::to_string(r);
  }
  for (const auto& [name, a] : v.node().attrs) {
    int64_t want = name == "pads" ? 2 * (r - 2)
                   : (name == "kernel_shape" || name == "strides" || name == "dilations" ||
                      name == "output_padding" || name == "output_shape")
                       ? r - 2
                       : -1;
    if (want >= 0 && static_cast<int64_t>(a.ints.size()) != want &&
        !(name == "output_shape" && static_cast<int64_t>(a.ints.size()) == r)) {
      return "attribute '" + name + "' has " + std::to_string(a.ints.size()) + " values, want " +
             std::to_string(want);
    }
    if (name == "group" && a.i && *a.i < 1) return "attribute 'group' is " + std::to_string(*a.i) + ", want >= 1";
    int64_t min = name == "pads" || name == "output_padding"                                ? 0
                  : name == "kernel_shape" || name == "strides" || name == "dilations" ? 1
                                                                                        : INT64_MIN;
    for (int64_t x : a.ints) {
      if (x < min) {
        return "attribute '" + name + "' has value " + std::to_string(x) + ", want >= " + std::to_string(min);
      }
    }
  }
  return "";
}

// LSTM, GRU, RNN: X, W, R are 3-D, B 2-D, sequence_lens 1-D, initial_h (and
// LSTM's initial_c) 3-D, LSTM's P 2-D (the specification's shapes; libonnx
// reads dims of each without checking, onnx/onnx#6185's class).
std::string Recurrent(const View& v, bool lstm) {
  return First({[&] { return v.RankIs(0, "X", 3); }, [&] { return v.RankIs(1, "W", 3); },
                [&] { return v.RankIs(2, "R", 3); }, [&] { return v.RankIs(3, "B", 2); },
                [&] { return v.RankIs(4, "sequence_lens", 1); }, [&] { return v.RankIs(5, "initial_h", 3); },
                [&] { return lstm ? v.RankIs(6, "initial_c", 3) : ""; },
                [&] { return lstm ? v.RankIs(7, "P", 2) : ""; },
                [&] { return v.IntIn("hidden_size", 1, INT32_MAX); }, [&] { return v.IntIn("layout", 0, 1); }});
}

struct Rule {
  const char* op;
  int since_min, since_max;  // schema versions the rule applies to (inclusive)
  std::function<std::string(const View&)> check;
};

const std::vector<Rule>& Rules() {
  static const std::vector<Rule>* kRules = new std::vector<Rule>{
      {"Conv", 1, INT_MAX, [](const View& v) { return Spatial(v, 1); }},
      {"ConvTranspose", 1, INT_MAX, [](const View& v) { return Spatial(v, 1); }},
      {"ConvInteger", 1, INT_MAX, [](const View& v) { return Spatial(v, 1); }},
      // QLinearConv: x, x_scale, x_zero_point, w, ...
      {"QLinearConv", 1, INT_MAX, [](const View& v) { return Spatial(v, 3); }},
      {"MaxPool", 1, INT_MAX, [](const View& v) { return Spatial(v, -1); }},
      {"AveragePool", 1, INT_MAX, [](const View& v) { return Spatial(v, -1); }},
      {"LpPool", 1, INT_MAX, [](const View& v) { return Spatial(v, -1); }},
      // MaxUnpool's indices I have X's dims (libonnx reads I's dim 1).
      {"MaxUnpool", 1, INT_MAX,
       [](const View& v) {
         return First({[&] { return Spatial(v, -1); }, [&] { return v.Rank(0) < 0 ? "" : v.RankIs(1, "I", v.Rank(0)); }});
       }},
      {"MaxRoiPool", 1, INT_MAX,
       [](const View& v) {
         return First({[&] { return Spatial(v, -1); }, [&] { return v.RankIs(1, "rois", 2); },
                       [&]() -> std::string {
                         auto p = v.node().AttrInts("pooled_shape");
                         if (p.size() == 2 && p[0] >= 1 && p[1] >= 1) return "";
                         return "attribute 'pooled_shape' must be two values >= 1";
                       }});
       }},
      // Gemm multiplies 2-D A and B in every version (Gemm-6 and older indexed
      // a rank-0 input's dims: onnx/onnx#6185).
      {"Gemm", 1, INT_MAX,
       [](const View& v) { return First({[&] { return v.RankIs(0, "A", 2); }, [&] { return v.RankIs(1, "B", 2); }}); }},
      {"LSTM", 1, INT_MAX, [](const View& v) { return Recurrent(v, true); }},
      {"GRU", 1, INT_MAX, [](const View& v) { return Recurrent(v, false); }},
      {"RNN", 1, INT_MAX, [](const View& v) { return Recurrent(v, false); }},
      // LayerNormalization-17: X has rank >= 1 and axis is one of its dims.
      {"LayerNormalization", 1, INT_MAX,
       [](const View& v) {
         return First({[&] { return v.RankAtLeast(0, "X", 1); }, [&] { return v.AxisIn("axis", v.Rank(0)); }});
       }},
      // STFT-17: signal [batch, length, 1 or 2], frame_step and frame_length
      // scalars > 0 (frame_step divides), window 1-D.
      {"STFT", 1, INT_MAX,
       [](const View& v) {
         return First({[&] { return v.RankIs(0, "signal", 3); }, [&] { return v.RankIs(1, "frame_step", 0); },
                       [&] { return v.RankIs(2, "window", 1); }, [&] { return v.RankIs(3, "frame_length", 0); },
                       [&] { return v.ValuesIn(1, "frame_step", 1, INT64_MAX); },
                       [&] { return v.ValuesIn(3, "frame_length", 1, INT64_MAX); }});
       }},
      // GatherND: data and indices have rank >= 1, batch_dims in [0, min(ranks)).
      {"GatherND", 1, INT_MAX,
       [](const View& v) {
         return First({[&] { return v.RankAtLeast(0, "data", 1); }, [&] { return v.RankAtLeast(1, "indices", 1); },
                       [&]() -> std::string {
                         if (v.Rank(0) < 0 || v.Rank(1) < 0) return v.IntIn("batch_dims", 0, INT64_MAX);
                         return v.IntIn("batch_dims", 0, std::min(v.Rank(0), v.Rank(1)) - 1);
                       }});
       }},
      // SplitToSequence: split lengths > 0 (a scalar split divides), axis a dim of the input.
      {"SplitToSequence", 1, INT_MAX,
       [](const View& v) {
         return First({[&] { return v.ValuesIn(1, "split", 1, INT64_MAX); },
                       [&] { return v.AxisIn("axis", v.Rank(0)); }});
       }},
      // DepthToSpace / SpaceToDepth: 4-D input, blocksize >= 1 (it divides).
      {"DepthToSpace", 1, INT_MAX,
       [](const View& v) {
         return First({[&] { return v.RankIs(0, "input", 4); }, [&] { return v.IntIn("blocksize", 1, INT32_MAX); }});
       }},
      {"SpaceToDepth", 1, INT_MAX,
       [](const View& v) {
         return First({[&] { return v.RankIs(0, "input", 4); }, [&] { return v.IntIn("blocksize", 1, INT32_MAX); }});
       }},
  };
  return *kRules;
}

}  // namespace

std::string CheckBeforeInference(const Node& node, int since_version, const std::vector<GuardInput>& in) {
  if (!node.domain.empty()) return "";
  View v(node, in);
  for (const Rule& r : Rules()) {
    if (node.op_type != r.op || since_version < r.since_min || since_version > r.since_max) continue;
    if (std::string why = r.check(v); !why.empty()) return why;
  }
  return "";
}

bool SkipsInference(const std::string& op_type) {
  return op_type == "If" || op_type == "Loop" || op_type == "Scan" || op_type == "SequenceMap";
}

}  // namespace gpucast
