// The XGBoost regressors: `forest` (random-forest mode) and `gbm` (boosting).
// Booster state is stored as base64 of XGBoost's UBJSON model buffer.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "predict/regressor.h"
#include "predict/xgb_api.h"

namespace gpucast {
namespace {

using nlohmann::json;

Status XgbError(const std::string& algo, const char* call) {
  return Status::Error(algo + ": xgboost " + call + ": " + xgb::GetLastError());
}

std::string Base64Encode(const char* data, size_t n) {
  static const char* kAlpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = static_cast<uint8_t>(data[i]) << 16;
    if (i + 1 < n) v |= static_cast<uint8_t>(data[i + 1]) << 8;
    if (i + 2 < n) v |= static_cast<uint8_t>(data[i + 2]);
    out += kAlpha[(v >> 18) & 63];
    out += kAlpha[(v >> 12) & 63];
    out += i + 1 < n ? kAlpha[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlpha[v & 63] : '=';
  }
  return out;
}

bool Base64Decode(const std::string& s, std::string* out) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (s.size() % 4) return false;
  out->clear();
  out->reserve(s.size() / 4 * 3);
  for (size_t i = 0; i < s.size(); i += 4) {
    int a = val(s[i]), b = val(s[i + 1]);
    if (a < 0 || b < 0) return false;
    uint32_t v = (a << 18) | (b << 12);
    out->push_back(static_cast<char>((v >> 16) & 255));
    if (s[i + 2] == '=') break;
    int c = val(s[i + 2]);
    if (c < 0) return false;
    v |= c << 6;
    out->push_back(static_cast<char>((v >> 8) & 255));
    if (s[i + 3] == '=') break;
    int d = val(s[i + 3]);
    if (d < 0) return false;
    out->push_back(static_cast<char>((v | d) & 255));
  }
  return true;
}

// RAII DMatrix from a dense matrix (float32, row-major).
struct DMatrix {
  DMatrixHandle h = nullptr;
  ~DMatrix() { if (h) xgb::DMatrixFree(h); }
};

Status MakeDMatrix(const std::string& algo, const Matrix& x, const std::vector<double>* y, DMatrix* out) {
  size_t cols = x.empty() ? 0 : x[0].size();
  std::vector<float> flat;
  flat.reserve(x.size() * cols);
  for (const auto& row : x)
    for (double v : row) flat.push_back(static_cast<float>(v));
  if (xgb::DMatrixCreateFromMat(flat.data(), x.size(), cols, std::nanf(""), &out->h) != 0)
    return XgbError(algo, "XGDMatrixCreateFromMat");
  if (y) {
    std::vector<float> labels(y->begin(), y->end());
    if (xgb::DMatrixSetFloatInfo(out->h, "label", labels.data(), labels.size()) != 0)
      return XgbError(algo, "XGDMatrixSetFloatInfo");
  }
  return Status::Ok();
}

// One XGBoost booster. Predict is serialised by a mutex (the service calls
// it from several threads).
class Booster {
 public:
  ~Booster() { if (h_) xgb::BoosterFree(h_); }

  Status Train(const std::string& algo, const Matrix& x, const std::vector<double>& y,
               const std::vector<std::pair<std::string, std::string>>& params, int rounds) {
    DMatrix d;
    RETURN_IF_ERROR(MakeDMatrix(algo, x, &y, &d));
    if (xgb::BoosterCreate(&d.h, 1, &h_) != 0) return XgbError(algo, "XGBoosterCreate");
    for (const auto& [k, v] : params)
      if (xgb::BoosterSetParam(h_, k.c_str(), v.c_str()) != 0) return XgbError(algo, "XGBoosterSetParam");
    for (int i = 0; i < rounds; ++i)
      if (xgb::BoosterUpdateOneIter(h_, i, d.h) != 0) return XgbError(algo, "XGBoosterUpdateOneIter");
    cols_ = x[0].size();
    return Status::Ok();
  }

  // type 0: values (rows), type 6: leaf indices (rows x trees).
  Result<std::vector<float>> Predict(const std::string& algo, const Matrix& x, int type) const {
    DMatrix d;
    RETURN_IF_ERROR(MakeDMatrix(algo, x, nullptr, &d));
    std::string config = "{\"type\": " + std::to_string(type) +
                         ", \"training\": false, \"iteration_begin\": 0, \"iteration_end\": 0,"
                         " \"strict_shape\": false, \"cache_id\": 0}";
    std::lock_guard<std::mutex> lock(mu_);
    const bst_ulong* shape = nullptr;
    bst_ulong dim = 0;
    const float* out = nullptr;
    if (xgb::BoosterPredictFromDMatrix(h_, d.h, config.c_str(), &shape, &dim, &out) != 0)
      return XgbError(algo, "XGBoosterPredictFromDMatrix");
    size_t n = 1;
    for (bst_ulong i = 0; i < dim; ++i) n *= shape[i];
    return std::vector<float>(out, out + n);
  }

  Result<std::string> Buffer(const std::string& algo, const char* format) const {
    bst_ulong len = 0;
    const char* buf = nullptr;
    std::string config = std::string("{\"format\": \"") + format + "\"}";
    if (xgb::BoosterSaveModelToBuffer(h_, config.c_str(), &len, &buf) != 0)
      return XgbError(algo, "XGBoosterSaveModelToBuffer");
    return std::string(buf, len);
  }

  Status LoadBuffer(const std::string& algo, const std::string& bytes, size_t cols) {
    if (xgb::BoosterCreate(nullptr, 0, &h_) != 0) return XgbError(algo, "XGBoosterCreate");
    if (xgb::BoosterLoadModelFromBuffer(h_, bytes.data(), bytes.size()) != 0)
      return XgbError(algo, "XGBoosterLoadModelFromBuffer");
    cols_ = cols;
    return Status::Ok();
  }

  size_t cols() const { return cols_; }

 private:
  BoosterHandle h_ = nullptr;
  size_t cols_ = 0;
  mutable std::mutex mu_;
};

json SaveBooster(const std::string& algo, const Booster& b, Status* st) {
  auto buf = b.Buffer(algo, "ubj");
  if (!buf.ok()) {
    *st = buf.status();
    return json();
  }
  return Base64Encode(buf->data(), buf->size());
}

Status LoadBooster(const std::string& algo, const json& j, size_t cols, Booster* b) {
  std::string bytes;
  if (!j.is_string() || !Base64Decode(j.get<std::string>(), &bytes))
    return Status::Error(algo + ": booster: want a base64 string");
  return b->LoadBuffer(algo, bytes, cols);
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// ---- forest ---------------------------------------------------------------

// Random forest: one boosting round of `trees` parallel trees with eta 1,
// trained by XGBoost. The fitted trees are then copied out of XGBoost's JSON
// model into a flat node table and evaluated here, after Fit and after Load
// alike (so a model file needs no XGBoost booster and loads fast; predictions
// round-trip bit for bit). XGBoost scales each tree's leaves by 1/trees, so
// the forest predicts base_score + sum_t leaf_t(x) (their mean), and tree t
// alone predicts base_score + trees * leaf_t(x); the interval is the central
// `interval` fraction of those per-tree outputs, widened to contain the mean.
class Forest : public Regressor {
 public:
  std::string Algo() const override { return "forest"; }
  Status Configure(const json& p) override { return ApplyParams(Algo(), p, Specs()); }
  json Params() const override { return ParamsJson(const_cast<Forest*>(this)->Specs()); }

  Status Fit(const Matrix& x, const std::vector<double>& y, uint64_t seed) override {
    RETURN_IF_ERROR(CheckTrainingSet(Algo(), x, y));
    double mean = 0;
    for (double v : y) mean += v;
    mean /= y.size();
    Booster booster;
    RETURN_IF_ERROR(booster.Train(
        Algo(), x, y,
        {{"booster", "gbtree"}, {"objective", "reg:squarederror"}, {"tree_method", "exact"},
         {"nthread", "1"}, {"eta", "1"}, {"num_parallel_tree", Num(trees_)},
         {"subsample", Num(subsample_)}, {"colsample_bynode", Num(colsample_)},
         {"max_depth", Num(max_depth_)}, {"min_child_weight", Num(min_child_weight_)},
         {"reg_lambda", Num(lambda_)}, {"base_score", Num(static_cast<float>(mean))},
         {"seed", std::to_string(seed % 2147483647)}},
        1));
    cols_ = x[0].size();
    RETURN_IF_ERROR(ReadTrees(booster));
    // Self-check of the node table against XGBoost's own prediction (float sums: 1e-4 slack).
    ASSIGN_OR_RETURN(std::vector<float> want, booster.Predict(Algo(), x, 0));
    ASSIGN_OR_RETURN(std::vector<Estimate> got, Predict(x));
    for (size_t r = 0; r < x.size(); ++r)
      if (!(std::fabs(got[r].mean - want[r]) <= 1e-4 * (1 + std::fabs(want[r]))))
        return Status::Error("forest: tree table disagrees with xgboost on training row " + std::to_string(r));
    return Status::Ok();
  }

  Result<std::vector<Estimate>> Predict(const Matrix& x) const override {
    if (tree_start_.empty()) return Status::Error("forest: not fitted");
    RETURN_IF_ERROR(CheckColumns(Algo(), x, cols_));
    size_t nt = tree_start_.size();
    std::vector<Estimate> out;
    std::vector<double> members(nt);
    for (const auto& row : x) {
      double sum = 0;
      for (size_t t = 0; t < nt; ++t) {
        double leaf = Leaf(t, row);
        sum += leaf;
        members[t] = base_score_ + static_cast<double>(nt) * leaf;
      }
      Estimate e = Summarise(members, interval_);
      e.mean = base_score_ + sum;  // the forest's prediction: mean of the trees
      e.low = std::min(e.low, e.mean);  // the mean can lie outside the central quantiles
      e.high = std::max(e.high, e.mean);
      out.push_back(e);
    }
    return out;
  }

  // State: {"cols", "base_score", "tree_start": [first node of each tree],
  // "nodes": base64 of little-endian int32 left, int32 feature, float32 value
  // per node (right child = left + 1; value = split threshold, or leaf value if left < 0)}.
  Result<json> Save() const override {
    if (tree_start_.empty()) return Status::Error("forest: not fitted");
    std::string bytes;
    bytes.reserve(nodes_.size() * kNodeBytes);
    auto put = [&](const void* p) {
      uint32_t v;
      std::memcpy(&v, p, 4);
      for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<char>((v >> (8 * k)) & 255));
    };
    for (const Node& n : nodes_) {
      put(&n.left);
      put(&n.feature);
      put(&n.value);
    }
    return json{{"cols", cols_}, {"base_score", base_score_}, {"tree_start", tree_start_},
                {"nodes", Base64Encode(bytes.data(), bytes.size())}};
  }

  Status Load(const json& j) override {
    std::string bytes;
    try {
      cols_ = j.at("cols").get<size_t>();
      base_score_ = j.at("base_score").get<double>();
      tree_start_ = j.at("tree_start").get<std::vector<int32_t>>();
      if (!Base64Decode(j.at("nodes").get<std::string>(), &bytes) || bytes.size() % kNodeBytes)
        return Status::Error("forest: nodes: want base64 of 12-byte records");
    } catch (const json::exception& e) {
      return Status::Error(std::string("forest: state: ") + e.what());
    }
    auto get = [&](size_t off, void* p) {
      uint32_t v = 0;
      for (int k = 0; k < 4; ++k) v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[off + k])) << (8 * k);
      std::memcpy(p, &v, 4);
    };
    nodes_.resize(bytes.size() / kNodeBytes);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      get(kNodeBytes * i, &nodes_[i].left);
      get(kNodeBytes * i + 4, &nodes_[i].feature);
      get(kNodeBytes * i + 8, &nodes_[i].value);
    }
    return Validate();
  }

 private:
  struct Node {
    int32_t left;     // left child, relative to the tree's first node (right = left + 1); < 0: leaf
    int32_t feature;  // split column
    float value;      // split threshold (go left if float(x) < value) or leaf value
  };
  static constexpr size_t kNodeBytes = 12;

  std::vector<ParamSpec> Specs() {
    return {{"trees", &trees_, 1, 5000, true},
            {"subsample", &subsample_, 0.05, 1, false},
            {"colsample_bynode", &colsample_, 0.05, 1, false},
            {"max_depth", &max_depth_, 1, 30, true},
            {"min_child_weight", &min_child_weight_, 0, 1e6, false},
            {"reg_lambda", &lambda_, 0, 1e6, false},
            {"interval", &interval_, 0.01, 1, false}};
  }

  // Leaf value of tree t for a row (XGBoost's rule: left iff float(x) < threshold;
  // inputs are finite, so the missing-value direction never applies).
  double Leaf(size_t t, const std::vector<double>& row) const {
    const Node* tree = &nodes_[tree_start_[t]];
    int32_t n = 0;
    while (tree[n].left >= 0) n = static_cast<float>(row[tree[n].feature]) < tree[n].value ? tree[n].left : tree[n].left + 1;
    return tree[n].value;
  }

  // Structural checks so that Leaf cannot index out of range or loop: every
  // child lies after its parent inside its tree; features < cols.
  Status Validate() const {
    if (tree_start_.empty()) return Status::Error("forest: no trees");
    for (size_t t = 0; t < tree_start_.size(); ++t) {
      int64_t begin = tree_start_[t];
      int64_t end = t + 1 < tree_start_.size() ? tree_start_[t + 1] : static_cast<int64_t>(nodes_.size());
      if (begin < 0 || end <= begin || end > static_cast<int64_t>(nodes_.size()))
        return Status::Error("forest: tree " + std::to_string(t) + ": bad node range");
      for (int64_t i = begin; i < end; ++i) {
        const Node& n = nodes_[i];
        if (n.left < 0) continue;
        int64_t size = end - begin, self = i - begin;
        if (n.left <= self || n.left + 1 >= size || n.feature < 0 ||
            static_cast<size_t>(n.feature) >= cols_)
          return Status::Error("forest: tree " + std::to_string(t) + " node " + std::to_string(self) +
                               ": bad child or feature index");
      }
    }
    return Status::Ok();
  }

  // The trees of XGBoost's JSON model as a node table.
  Status ReadTrees(const Booster& booster) {
    ASSIGN_OR_RETURN(std::string text, booster.Buffer(Algo(), "json"));
    json m = json::parse(text, nullptr, false);
    if (m.is_discarded()) return Status::Error("forest: xgboost model JSON does not parse");
    nodes_.clear();
    tree_start_.clear();
    try {
      const json& learner = m.at("learner");
      base_score_ = std::stod(learner.at("learner_model_param").at("base_score").get<std::string>());
      for (const json& tree : learner.at("gradient_booster").at("model").at("trees")) {
        auto left = tree.at("left_children").get<std::vector<int32_t>>();
        auto right = tree.at("right_children").get<std::vector<int32_t>>();
        auto feature = tree.at("split_indices").get<std::vector<int32_t>>();
        auto cond = tree.at("split_conditions").get<std::vector<float>>();
        if (right.size() != left.size() || feature.size() != left.size() || cond.size() != left.size())
          return Status::Error("forest: xgboost tree arrays differ in length");
        tree_start_.push_back(static_cast<int32_t>(nodes_.size()));
        for (size_t n = 0; n < left.size(); ++n) {
          bool leaf = left[n] < 0;
          if (!leaf && right[n] != left[n] + 1)
            return Status::Error("forest: xgboost tree node " + std::to_string(n) + ": right child is not left + 1");
          nodes_.push_back({leaf ? -1 : left[n], leaf ? 0 : feature[n], cond[n]});
        }
      }
    } catch (const json::exception& e) {
      return Status::Error(std::string("forest: reading xgboost model JSON: ") + e.what());
    }
    return Validate();
  }

  double trees_ = 100, subsample_ = 0.632, colsample_ = 0.6, max_depth_ = 8, min_child_weight_ = 1,
         lambda_ = 1e-6, interval_ = 0.8;
  size_t cols_ = 0;
  double base_score_ = 0;
  std::vector<int32_t> tree_start_;
  std::vector<Node> nodes_;
};

// ---- gbm ------------------------------------------------------------------

// Gradient boosting; `members` boosters with different seeds (row and column
// subsampling make them differ). Mean of members; interval from their spread.
//
// `mono` is the same with XGBoost monotone_constraints where physics fixes
// the sign of the effect, all else equal (MonotoneDirection below): e.g.
// utilization never falls when only the batch, the FLOPs or the GPU time per
// step grow, or when the data moves onto the GPU; it never rises with more
// kernels at the same GPU time, or with a CPU environment in the loop.
int MonotoneDirection(const std::string& name) {
  static const char* kUp[] = {"batch_size", "total_flops", "forward_flops", "backward_flops",
                              "log10_total_flops", "est_gpu_busy_ms", "log10_est_gpu_busy_ms",
                              "est_compute_ms", "est_memory_ms", "est_busy_launch_ratio",
                              "log10_est_busy_launch_ratio", "est_util_launch_bound", "data_on_gpu",
                              "loader_workers"};
  static const char* kDown[] = {"kernel_count", "est_launch_ms", "log10_est_launch_ms", "rl_env",
                                "loader_ms_per_sample", "env_steps_per_update"};
  for (const char* n : kUp)
    if (name == n) return 1;
  for (const char* n : kDown)
    if (name == n) return -1;
  return 0;
}

class Gbm : public Regressor {
 public:
  explicit Gbm(bool monotone = false) : monotone_(monotone) {}
  std::string Algo() const override { return monotone_ ? "mono" : "gbm"; }
  Status SetFeatureNames(const std::vector<std::string>& names) override {
    constraints_ = "(";
    for (size_t i = 0; i < names.size(); ++i)
      constraints_ += (i ? "," : "") + std::to_string(monotone_ ? MonotoneDirection(names[i]) : 0);
    constraints_ += ")";
    return Status::Ok();
  }
  Status Configure(const json& p) override { return ApplyParams(Algo(), p, Specs()); }
  json Params() const override { return ParamsJson(const_cast<Gbm*>(this)->Specs()); }

  Status Fit(const Matrix& x, const std::vector<double>& y, uint64_t seed) override {
    RETURN_IF_ERROR(CheckTrainingSet(Algo(), x, y));
    double mean = 0;
    for (double v : y) mean += v;
    mean /= y.size();
    members_.clear();
    for (int m = 0; m < static_cast<int>(members_count_); ++m) {
      auto b = std::make_unique<Booster>();
      RETURN_IF_ERROR(b->Train(
          Algo(), x, y,
          {{"booster", "gbtree"}, {"objective", "reg:squarederror"}, {"tree_method", "exact"},
           {"nthread", "1"}, {"eta", Num(eta_)}, {"subsample", Num(subsample_)},
           {"colsample_bynode", Num(colsample_)}, {"max_depth", Num(max_depth_)},
           {"min_child_weight", Num(min_child_weight_)}, {"reg_lambda", Num(lambda_)},
           {"base_score", Num(static_cast<float>(mean))},
           {"monotone_constraints", monotone_ && !constraints_.empty() ? constraints_ : "()"},
           {"seed", std::to_string((seed * 1000003 + m) % 2147483647)}},
          static_cast<int>(rounds_)));
      members_.push_back(std::move(b));
    }
    return Status::Ok();
  }

  Result<std::vector<Estimate>> Predict(const Matrix& x) const override {
    if (members_.empty()) return Status::Error("gbm: not fitted");
    RETURN_IF_ERROR(CheckColumns(Algo(), x, members_[0]->cols()));
    std::vector<std::vector<float>> preds;
    for (const auto& b : members_) {
      ASSIGN_OR_RETURN(std::vector<float> p, b->Predict(Algo(), x, 0));
      if (p.size() != x.size()) return Status::Error("gbm: unexpected prediction shape from xgboost");
      preds.push_back(std::move(p));
    }
    std::vector<Estimate> out;
    std::vector<double> m(preds.size());
    for (size_t r = 0; r < x.size(); ++r) {
      for (size_t k = 0; k < preds.size(); ++k) m[k] = preds[k][r];
      out.push_back(Summarise(m, interval_));
    }
    return out;
  }

  Result<json> Save() const override {
    if (members_.empty()) return Status::Error("gbm: not fitted");
    Status st;
    json boosters = json::array();
    for (const auto& b : members_) {
      boosters.push_back(SaveBooster(Algo(), *b, &st));
      RETURN_IF_ERROR(st);
    }
    return json{{"boosters", boosters}, {"cols", members_[0]->cols()}};
  }

  Status Load(const json& j) override {
    if (!j.is_object() || !j.contains("boosters") || !j["boosters"].is_array() || j["boosters"].empty() ||
        !j.contains("cols"))
      return Status::Error("gbm: state lacks boosters/cols");
    members_.clear();
    for (const json& b : j["boosters"]) {
      auto booster = std::make_unique<Booster>();
      RETURN_IF_ERROR(LoadBooster(Algo(), b, j["cols"].get<size_t>(), booster.get()));
      members_.push_back(std::move(booster));
    }
    return Status::Ok();
  }

 private:
  std::vector<ParamSpec> Specs() {
    return {{"rounds", &rounds_, 1, 10000, true},
            {"eta", &eta_, 1e-4, 1, false},
            {"max_depth", &max_depth_, 1, 30, true},
            {"subsample", &subsample_, 0.05, 1, false},
            {"colsample_bynode", &colsample_, 0.05, 1, false},
            {"min_child_weight", &min_child_weight_, 0, 1e6, false},
            {"reg_lambda", &lambda_, 0, 1e6, false},
            {"members", &members_count_, 1, 100, true},
            {"interval", &interval_, 0.01, 1, false}};
  }

  double rounds_ = 200, eta_ = 0.05, max_depth_ = 3, subsample_ = 0.7, colsample_ = 0.8,
         min_child_weight_ = 1, lambda_ = 1, members_count_ = 10, interval_ = 0.8;
  std::vector<std::unique_ptr<Booster>> members_;
  bool monotone_ = false;
  std::string constraints_;
};

}  // namespace

std::unique_ptr<Regressor> MakeForest() { return std::make_unique<Forest>(); }
std::unique_ptr<Regressor> MakeGbm() { return std::make_unique<Gbm>(); }
std::unique_ptr<Regressor> MakeMono() { return std::make_unique<Gbm>(true); }

}  // namespace gpucast
