// gpucast_op_sweep: a single-node graph of every operator schema libonnx
// knows, in every version and domain, with inputs of every rank, constant
// inputs, random and missing attributes and subgraph bodies; each graph is
// loaded (graph/onnx_loader.h) and costed (cost/cost.h) as a user's upload
// would be. Every schema runs in a child process, so a crash, a hang or a
// memory blow-up is caught and attributed to its schema and case; the case is
// rebuilt (the generator is deterministic: --seed) and saved for replay.
//
//   gpucast_op_sweep [--cases N] [--seed S] [--only OP] [--save DIR] [--timeout S]
//   gpucast_op_sweep --replay FILE.onnx   (load and cost one saved case in this process)
//
// Exit status: 0 when every case gave a graph or an error with a message; 1
// otherwise (each failure printed: schema, case, signal or reason). `make
// test` runs a short sweep (CTest OpSweep.*), `make fuzz` a long one.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <onnx/defs/data_type_utils.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "cost/cost.h"
#include "graph/onnx_loader.h"

namespace {

using onnx::AttributeProto;
using onnx::OpSchema;
using onnx::TensorProto;

struct Options {
  int cases = 8;            // random cases per schema (plus the rank sweep)
  uint64_t seed = 1;
  std::string only;         // one op type (all its versions and domains)
  std::string save_dir;     // where failing cases are written
  double timeout_s = 60;    // per schema (all its cases)
  std::string replay;       // one saved case
};

// A deterministic generator per (schema, case).
class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T>
  const T& Pick(const std::vector<T>& v) { return v[static_cast<size_t>(Int(0, static_cast<int>(v.size()) - 1))]; }

 private:
  std::mt19937_64 rng_;
};

uint64_t Hash(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string SchemaId(const OpSchema& s) {
  return (s.domain().empty() ? std::string("ai.onnx") : s.domain()) + "::" + s.Name() + "-" +
         std::to_string(s.SinceVersion());
}

int32_t ElemTypeOf(const std::string& type_str) {
  try {
    const onnx::TypeProto& t =
        onnx::Utils::DataTypeUtils::ToTypeProto(onnx::Utils::DataTypeUtils::ToType(type_str));
    return t.has_tensor_type() ? t.tensor_type().elem_type() : 0;
  } catch (...) {
    return TensorProto::FLOAT;
  }
}

bool IsIntType(int32_t t) {
  return t == TensorProto::INT64 || t == TensorProto::INT32 || t == TensorProto::INT16 || t == TensorProto::INT8 ||
         t == TensorProto::UINT8 || t == TensorProto::UINT16 || t == TensorProto::UINT32 ||
         t == TensorProto::UINT64 || t == TensorProto::BOOL;
}

// Values that make shape arithmetic go wrong: zero, negatives, the extremes.
int64_t NastyInt(Gen& g) {
  static const std::vector<int64_t> kValues = {0, 1, 2, 3, 4, -1, -2, 7, 8, 16, 1 << 20, int64_t{1} << 40,
                                               std::numeric_limits<int64_t>::max(),
                                               std::numeric_limits<int64_t>::min(), -(int64_t{1} << 40)};
  return g.Chance(0.8) ? g.Int(-3, 8) : g.Pick(kValues);
}

std::vector<int64_t> RandomDims(Gen& g, int rank, bool allow_zero) {
  std::vector<int64_t> d;
  for (int i = 0; i < rank; ++i) d.push_back(allow_zero && g.Chance(0.05) ? 0 : g.Int(1, 5));
  return d;
}

// A tensor with these dims and, when small, data.
TensorProto RandomTensor(Gen& g, const std::string& name, int32_t elem, const std::vector<int64_t>& dims) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(elem == 0 ? TensorProto::FLOAT : elem);
  int64_t n = 1;
  for (int64_t d : dims) {
    t.add_dims(d);
    n *= d;
  }
  if (n > 64 || g.Chance(0.1)) return t;  // header only (as a weight-free export's large weights)
  for (int64_t i = 0; i < n; ++i) {
    switch (t.data_type()) {
      case TensorProto::INT64: t.add_int64_data(NastyInt(g)); break;
      case TensorProto::UINT64: t.add_uint64_data(static_cast<uint64_t>(g.Int(0, 9))); break;
      case TensorProto::DOUBLE: t.add_double_data(g.Int(-4, 4) * 0.5); break;
      case TensorProto::FLOAT: t.add_float_data(static_cast<float>(g.Int(-4, 8)) * 0.5f); break;
      case TensorProto::STRING: t.add_string_data(g.Chance(0.5) ? "a" : ""); break;
      default: t.add_int32_data(IsIntType(t.data_type()) ? static_cast<int32_t>(NastyInt(g) & 0x7f) : g.Int(0, 3));
    }
  }
  return t;
}

onnx::GraphProto RandomBody(Gen& g, int depth, int like_inputs = -1, int like_outputs = -1);

// A value for attribute `a` of type `type` (sometimes another type: a hostile file).
void FillAttribute(Gen& g, AttributeProto* a, AttributeProto::AttributeType type, const AttributeProto* deflt,
                   int depth, int like_inputs = -1, int like_outputs = -1) {
  static const std::vector<std::string> kStrings = {
      "", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "constant", "reflect", "edge", "wrap", "linear",
      "nearest", "cubic", "bilinear", "bicubic", "DCR", "CRD", "forward", "reverse", "bidirectional", "Tanh",
      "Sigmoid", "Relu", "mean", "sum", "none", "max", "min", "tanh", "half_pixel", "asymmetric",
      "align_corners", "pytorch_half_pixel", "round_prefer_floor", "floor", "ceil", "ij,jk->ik", "bij,bjk",
      "...ii->...i", "i,i", "a,b,c->", "zeros", "border", "reflection", "stretch", "not_larger", "xyz\x01"};
  if (g.Chance(0.05)) type = static_cast<AttributeProto::AttributeType>(g.Int(1, 10));  // the wrong kind
  a->set_type(type);
  switch (type) {
    case AttributeProto::FLOAT: a->set_f(g.Chance(0.1) ? std::numeric_limits<float>::quiet_NaN()
                                                       : static_cast<float>(g.Int(-2, 4)) * 0.5f); break;
    case AttributeProto::INT: a->set_i(deflt && deflt->has_i() && g.Chance(0.3) ? deflt->i() : NastyInt(g)); break;
    case AttributeProto::STRING:
      a->set_s(deflt && deflt->has_s() && g.Chance(0.3) ? deflt->s() : g.Pick(kStrings));
      break;
    case AttributeProto::FLOATS:
      for (int i = g.Int(0, 6); i > 0; --i) a->add_floats(static_cast<float>(g.Int(-2, 4)) * 0.5f);
      break;
    case AttributeProto::INTS:
      for (int i = g.Int(0, 6); i > 0; --i) a->add_ints(NastyInt(g));
      break;
    case AttributeProto::STRINGS:
      for (int i = g.Int(0, 3); i > 0; --i) a->add_strings(g.Pick(kStrings));
      break;
    case AttributeProto::TENSOR:
      *a->mutable_t() = RandomTensor(g, "", g.Chance(0.5) ? TensorProto::INT64 : TensorProto::FLOAT,
                                     RandomDims(g, g.Int(0, 2), true));
      break;
    case AttributeProto::TENSORS:
      for (int i = g.Int(0, 2); i > 0; --i) *a->add_tensors() = RandomTensor(g, "", TensorProto::FLOAT, {2});
      break;
    case AttributeProto::GRAPH: *a->mutable_g() = RandomBody(g, depth + 1, like_inputs, like_outputs); break;
    case AttributeProto::GRAPHS:
      for (int i = g.Int(0, 2); i > 0; --i) *a->add_graphs() = RandomBody(g, depth + 1, like_inputs, like_outputs);
      break;
    case AttributeProto::TYPE_PROTO: {
      auto* tt = a->mutable_tp()->mutable_tensor_type();
      tt->set_elem_type(TensorProto::FLOAT);
      for (int64_t d : RandomDims(g, g.Int(0, 3), false)) tt->mutable_shape()->add_dim()->set_dim_value(d);
      break;
    }
    case AttributeProto::SPARSE_TENSOR: {
      auto* s = a->mutable_sparse_tensor();
      s->add_dims(4);
      *s->mutable_values() = RandomTensor(g, "v", TensorProto::FLOAT, {2});
      *s->mutable_indices() = RandomTensor(g, "i", TensorProto::INT64, {2});
      break;
    }
    default: break;
  }
}

// A subgraph body (If/Loop/Scan): 0-3 inputs and outputs of any rank, through
// Identity or Add nodes; sometimes empty or with dangling names.
onnx::GraphProto RandomBody(Gen& g, int depth, int like_inputs, int like_outputs) {
  onnx::GraphProto b;
  b.set_name("body" + std::to_string(depth));
  if (depth > 3 || g.Chance(0.1)) return b;
  // Often as many inputs and outputs as the node around it has (what Loop and
  // Scan bodies need, give or take one), else any number.
  auto count = [&](int like) { return like >= 0 && g.Chance(0.7) ? std::max(0, like + g.Int(-1, 1)) : g.Int(0, 3); };
  int ins = count(like_inputs), outs = count(like_outputs);
  for (int i = 0; i < ins; ++i) {
    auto* vi = b.add_input();
    vi->set_name("b" + std::to_string(depth) + "_in" + std::to_string(i));
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(g.Pick(std::vector<int32_t>{TensorProto::FLOAT, TensorProto::INT64, TensorProto::BOOL}));
    if (g.Chance(0.8)) {
      auto* shape = tt->mutable_shape();
      for (int64_t d : RandomDims(g, g.Int(0, 3), false)) shape->add_dim()->set_dim_value(d);
    }
  }
  for (int o = 0; o < outs; ++o) {
    std::string out = "b" + std::to_string(depth) + "_out" + std::to_string(o);
    auto* n = b.add_node();
    if (ins > 0) {
      n->set_op_type(g.Chance(0.7) ? "Identity" : "Add");
      n->add_input(b.input(g.Int(0, ins - 1)).name());
      if (n->op_type() == "Add") n->add_input(b.input(g.Int(0, ins - 1)).name());
    } else {
      n->set_op_type("Constant");
      auto* a = n->add_attribute();
      a->set_name("value");
      FillAttribute(g, a, AttributeProto::TENSOR, nullptr, depth);
    }
    n->add_output(out);
    auto* vo = b.add_output();
    vo->set_name(g.Chance(0.05) ? "dangling" : out);
    if (g.Chance(0.5)) {
      auto* tt = vo->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(TensorProto::FLOAT);
      for (int64_t d : RandomDims(g, g.Int(0, 3), false)) tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }
  return b;
}

struct Case {
  std::string bytes;
  gpucast::LoadOptions load;
  bool amp = false;
};

// Case `k` of schema `s`. Cases 0..rank_cases-1 give every input the same
// rank (0..5) with every required attribute at its default or a plain value;
// later ones are random.
Case MakeCase(const OpSchema& s, int k, uint64_t seed) {
  Gen g(Hash(SchemaId(s) + "#" + std::to_string(k), seed));
  const bool rank_sweep = k < 6;
  const int sweep_rank = k;
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("gpucast_op_sweep");
  auto* def = m.add_opset_import();
  def->set_domain("");
  def->set_version(s.domain().empty() ? s.SinceVersion() : 17);
  if (!s.domain().empty()) {
    auto* o = m.add_opset_import();
    o->set_domain(s.domain());
    o->set_version(s.SinceVersion());
  }
  auto* graph = m.mutable_graph();
  graph->set_name("sweep");
  auto* node = graph->add_node();
  node->set_op_type(s.Name());
  node->set_domain(s.domain());
  node->set_name("n");

  Case c;
  c.load.batch = g.Int(1, 3);
  c.load.limits.max_seconds = 10;
  c.amp = g.Chance(0.3);
  std::map<std::string, int32_t> param_types;  // homogeneous type parameters
  int index = 0;
  const auto& inputs = s.inputs();
  for (size_t p = 0; p < inputs.size(); ++p) {
    const auto& f = inputs[p];
    int copies = 1;
    if (f.GetOption() == OpSchema::Variadic) copies = rank_sweep ? 2 : g.Int(std::max(0, f.GetMinArity() - 1), 3);
    if (f.GetOption() == OpSchema::Optional && !rank_sweep && g.Chance(0.3)) copies = 0;
    if (copies == 0) {
      // An absent optional input: "" when later inputs follow.
      if (p + 1 < inputs.size()) node->add_input("");
      continue;
    }
    for (int cpy = 0; cpy < copies; ++cpy) {
      std::string name = "x" + std::to_string(index++);
      node->add_input(name);
      std::vector<std::string> allowed;
      for (const auto* t : f.GetTypes()) allowed.push_back(*t);
      std::sort(allowed.begin(), allowed.end());
      int32_t elem = TensorProto::FLOAT;
      if (!allowed.empty()) {
        auto it = param_types.find(f.GetTypeStr());
        if (it != param_types.end() && !g.Chance(0.05)) {
          elem = it->second;
        } else {
          // Prefer float and int64 (what exporters write), else any allowed type.
          std::string want = g.Chance(0.5) ? "tensor(float)" : "tensor(int64)";
          std::string pick = std::count(allowed.begin(), allowed.end(), want) ? want : g.Pick(allowed);
          elem = ElemTypeOf(pick);
          if (elem == 0) elem = TensorProto::FLOAT;  // a sequence or map input given a tensor
          param_types[f.GetTypeStr()] = elem;
        }
      }
      int rank = rank_sweep ? sweep_rank : g.Int(0, 5);
      std::vector<int64_t> dims = RandomDims(g, rank, !rank_sweep);
      if (!rank_sweep && (g.Chance(0.35) || IsIntType(elem))) {
        if (g.Chance(0.8)) {
          *graph->add_initializer() = RandomTensor(g, name, elem, dims);
          continue;
        }
      }
      auto* vi = graph->add_input();
      vi->set_name(name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(elem);
      auto* shape = tt->mutable_shape();
      for (size_t d = 0; d < dims.size(); ++d) {
        auto* dim = shape->add_dim();
        if (d == 0) {
          dim->set_dim_param("N");  // the batch
        } else if (!rank_sweep && g.Chance(0.1)) {
          dim->set_dim_param("S");
          c.load.dims["S"] = g.Int(1, 4);
        } else {
          dim->set_dim_value(std::max<int64_t>(dims[d], 1));
        }
      }
    }
  }
  // Drop trailing empty inputs.
  while (node->input_size() > 0 && node->input(node->input_size() - 1).empty()) node->mutable_input()->RemoveLast();
  // The loader wants every symbolic dimension to have a value.
  bool has_s = false;
  for (const auto& in : graph->input()) {
    for (const auto& d : in.type().tensor_type().shape().dim()) has_s = has_s || d.dim_param() == "S";
  }
  if (!has_s) c.load.dims.clear();

  int out_index = 0;
  const auto& outputs = s.outputs();
  for (size_t p = 0; p < outputs.size(); ++p) {
    int copies = outputs[p].GetOption() == OpSchema::Variadic ? g.Int(1, 3) : 1;
    if (outputs[p].GetOption() == OpSchema::Optional && g.Chance(0.3)) {
      if (p + 1 < outputs.size()) node->add_output("");
      continue;
    }
    for (int cpy = 0; cpy < copies; ++cpy) {
      std::string name = "y" + std::to_string(out_index++);
      node->add_output(name);
      graph->add_output()->set_name(name);
    }
  }
  if (node->output_size() == 0) {
    node->add_output("y");
    graph->add_output()->set_name("y");
  }
  for (const auto& [name, attr] : s.attributes()) {
    const bool has_default = attr.default_value.type() != AttributeProto::UNDEFINED;
    if (!attr.required && (rank_sweep ? true : g.Chance(0.5))) continue;
    auto* a = node->add_attribute();
    a->set_name(name);
    if (rank_sweep && has_default) {
      *a = attr.default_value;
      a->set_name(name);
      continue;
    }
    FillAttribute(g, a, attr.type, has_default ? &attr.default_value : nullptr, 0, node->input_size(),
                  node->output_size());
  }
  if (!rank_sweep && g.Chance(0.05)) {  // an attribute the schema does not have
    auto* a = node->add_attribute();
    a->set_name("unexpected");
    FillAttribute(g, a, AttributeProto::INTS, nullptr, 0);
  }
  m.SerializeToString(&c.bytes);
  return c;
}

// How far a case got: refused by the loader, loaded, costed, costed completely.
enum Outcome { kRefused, kLoaded, kCosted, kComplete, kNumOutcomes };

// Loads and costs one case; returns "" or what went wrong (an error without a message).
std::string RunCase(const Case& c, const std::string& name, Outcome* outcome) {
  *outcome = kRefused;
  auto graph = gpucast::LoadOnnxGraphFromBytes(c.bytes, name, c.load);
  if (!graph.ok()) return graph.message().empty() ? "load error without a message" : "";
  *outcome = kLoaded;
  gpucast::CostOptions opts;
  opts.amp = c.amp;
  auto cost = gpucast::AnalyzeCost(*graph, opts);
  if (!cost.ok()) return cost.message().empty() ? "cost error without a message" : "";
  *outcome = kCosted;
  gpucast::Status complete = gpucast::RequireCompleteCost(*cost);
  if (!complete.ok()) return complete.message().empty() ? "incomplete cost without a message" : "";
  *outcome = kComplete;
  return "";
}

std::string SignalName(int sig) {
  const char* s = strsignal(sig);
  return s ? s : "signal " + std::to_string(sig);
}

struct Failure {
  std::string schema;
  int case_index;
  std::string what;
};

// Runs every case of `s` in a child; the child reports the case it starts on
// a pipe, so the parent knows which one crashed or hung.
std::vector<Failure> SweepSchema(const OpSchema& s, const Options& o, int64_t* cases_run, int64_t* outcomes) {
  const int total = 6 + o.cases;
  int fds[2];
  if (pipe(fds) != 0) return {{SchemaId(s), -1, "pipe failed"}};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
#if !defined(__SANITIZE_ADDRESS__)
    rlimit as{size_t{4} << 30, size_t{4} << 30};  // a memory blow-up is a failure, not a swap storm
    setrlimit(RLIMIT_AS, &as);
#endif
    int32_t counts[kNumOutcomes] = {};
    for (int k = 0; k < total; ++k) {
      int32_t idx = k;
      if (write(fds[1], &idx, sizeof idx) != sizeof idx) _exit(3);
      std::string what;
      Outcome outcome = kRefused;
      try {
        what = RunCase(MakeCase(s, k, o.seed), "sweep/" + SchemaId(s) + "#" + std::to_string(k) + ".onnx",
                       &outcome);
      } catch (const std::exception& e) {
        what = std::string("uncaught exception: ") + e.what();
      }
      if (!what.empty()) {
        std::fprintf(stderr, "%s case %d: %s\n", SchemaId(s).c_str(), k, what.c_str());
        _exit(2);
      }
      ++counts[outcome];
    }
    // -1 ends the progress; the outcome counts follow.
    int32_t end = -1;
    if (write(fds[1], &end, sizeof end) != sizeof end || write(fds[1], counts, sizeof counts) != sizeof counts) {
      _exit(3);
    }
    _exit(0);
  }
  close(fds[1]);
  int last = -1, status = 0;
  bool ended = false;
  int32_t counts[kNumOutcomes] = {};
  // Progress indices, then -1 and the counts.
  auto drain = [&] {
    int32_t idx;
    while (!ended && read(fds[0], &idx, sizeof idx) == sizeof idx) {
      if (idx == -1) {
        ended = true;
      } else {
        last = idx;
      }
    }
    if (ended && counts[0] + counts[1] + counts[2] + counts[3] == 0) {
      ssize_t n = read(fds[0], counts, sizeof counts);
      if (n != static_cast<ssize_t>(sizeof counts)) std::fill(std::begin(counts), std::end(counts), 0);
    }
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout_s);
  bool timed_out = false;
  // Non-blocking poll of the child: read progress, kill it at the deadline.
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  for (;;) {
    drain();
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  drain();
  close(fds[0]);
  for (int k = 0; k < kNumOutcomes; ++k) outcomes[k] += counts[k];
  *cases_run += timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? last + 1 : total;
  if (timed_out) return {{SchemaId(s), last, "did not finish within " + std::to_string(o.timeout_s) + " s"}};
  if (WIFSIGNALED(status)) return {{SchemaId(s), last, SignalName(WTERMSIG(status))}};
  if (WEXITSTATUS(status) != 0) return {{SchemaId(s), last, "exit status " + std::to_string(WEXITSTATUS(status))}};
  return {};
}

int Replay(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "%s: cannot read\n", path.c_str());
    return 2;
  }
  Case c;
  c.bytes = ss.str();
  c.load.batch = 2;
  c.load.limits.max_seconds = 10;
  Outcome outcome;
  std::string what = RunCase(c, path, &outcome);
  auto g = gpucast::LoadOnnxGraphFromBytes(c.bytes, path, c.load);
  std::printf("%s\n", g.ok() ? "loaded" : g.message().c_str());
  return what.empty() ? 0 : 1;
}

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--cases N] [--seed S] [--only OP] [--save DIR] [--timeout SECONDS]\n"
               "       %s --replay FILE.onnx\n"
               "Loads and costs a single-node graph of every ONNX operator schema (every version and\n"
               "domain libonnx knows): 6 rank cases and N random cases each (default 8), one child\n"
               "process per schema. Exit 0 when nothing crashed, hung or gave an error without a message.\n",
               argv0, argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--cases") {
      o.cases = std::atoi(next().c_str());
    } else if (a == "--seed") {
      o.seed = std::strtoull(next().c_str(), nullptr, 10);
    } else if (a == "--only") {
      o.only = next();
    } else if (a == "--save") {
      o.save_dir = next();
    } else if (a == "--timeout") {
      o.timeout_s = std::atof(next().c_str());
    } else if (a == "--replay") {
      o.replay = next();
    } else {
      return Usage(argv[0]);
    }
  }
  if (!o.replay.empty()) return Replay(o.replay);
  if (o.cases < 0 || o.timeout_s <= 0) return Usage(argv[0]);

  std::vector<OpSchema> schemas = onnx::OpSchemaRegistry::get_all_schemas_with_history();
  std::set<std::string> ops;
  int64_t swept = 0, cases_run = 0, outcomes[kNumOutcomes] = {};
  std::vector<Failure> failures;
  auto start = std::chrono::steady_clock::now();
  for (const OpSchema& s : schemas) {
    if (!o.only.empty() && s.Name() != o.only) continue;
    ops.insert(s.domain() + "::" + s.Name());
    ++swept;
    for (Failure& f : SweepSchema(s, o, &cases_run, outcomes)) {
      std::fprintf(stderr, "FAIL %s case %d: %s\n", f.schema.c_str(), f.case_index, f.what.c_str());
      if (!o.save_dir.empty() && f.case_index >= 0) {
        std::string path = o.save_dir + "/" + f.schema + "-" + std::to_string(f.case_index) + ".onnx";
        for (char& ch : path) ch = ch == ':' ? '_' : ch;
        std::ofstream(path, std::ios::binary) << MakeCase(s, f.case_index, o.seed).bytes;
        std::fprintf(stderr, "  saved %s (replay: --replay %s)\n", path.c_str(), path.c_str());
      }
      failures.push_back(std::move(f));
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("op sweep: %lld schemas of %zu ops, %lld cases (seed %llu) in %.1f s: %zu failed\n",
              static_cast<long long>(swept), ops.size(), static_cast<long long>(cases_run),
              static_cast<unsigned long long>(o.seed), secs, failures.size());
  std::printf("  of the cases that finished: %lld refused with a message, %lld loaded but not costed, "
              "%lld costed in part, %lld costed completely\n",
              static_cast<long long>(outcomes[kRefused]), static_cast<long long>(outcomes[kLoaded]),
              static_cast<long long>(outcomes[kCosted]), static_cast<long long>(outcomes[kComplete]));
  if (swept == 0) {
    std::fprintf(stderr, "no schema matched --only %s\n", o.only.c_str());
    return 1;
  }
  return failures.empty() ? 0 : 1;
}
