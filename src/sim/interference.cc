#include "sim/interference.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "sim/text.h"

namespace gpucast::sim {

namespace {

constexpr double kMinRate = InterferenceModel::kMinRate;

std::array<double, 5> Features(double u_self, double u_others) {
  double x = u_self / 100.0, y = u_others / 100.0;
  return {1.0, x, y, x * y, std::max(0.0, x + y - 1.0)};
}

// One measured row of colocate_info.csv, with workload indices.
struct Row {
  int a, b;
  double sa, sb, util;
  size_t line;
};

Result<std::vector<Row>> ReadColocate(const std::vector<WorkloadProfile>& w, const std::string& path) {
  const std::string file = BaseName(path);
  auto text = ReadFile(path);
  if (!text) return Status::Error(path + ": cannot open");
  auto lines = Lines(*text);
  if (lines.empty()) return Status::Error(file + ": empty file");
  auto h = Split(lines[0], ',');
  const char* names[] = {"model1", "dataset1", "batchsize1", "amp1", "speed1", "model2",
                         "dataset2", "batchsize2", "amp2", "speed2", "gpu_util"};
  int c[11];
  for (int i = 0; i < 11; ++i) {
    c[i] = ColumnIndex(h, names[i]);
    if (c[i] < 0) return Status::Error(file + ": line 1: missing column '" + names[i] + "'");
  }
  int need = *std::max_element(c, c + 11);
  std::vector<Row> rows;
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    auto f = Split(lines[ln], ',');
    const std::string where = file + ": line " + std::to_string(ln + 1) + ": ";
    if (static_cast<int>(f.size()) <= need) return Status::Error(where + "too few fields");
    auto b1 = ParseInt(f[c[2]]), a1 = ParseInt(f[c[3]]), b2 = ParseInt(f[c[7]]), a2 = ParseInt(f[c[8]]);
    auto s1 = ParseDouble(f[c[4]]), s2 = ParseDouble(f[c[9]]), u = ParseDouble(f[c[10]]);
    if (!b1 || !a1 || !b2 || !a2 || !s1 || !s2 || !u || *s1 <= 0 || *s2 <= 0 || *u < 0 || *u > 100)
      return Status::Error(where + "malformed batch size, amp, speed or gpu_util");
    int i1 = FindWorkload(w, std::string(f[c[0]]), std::string(f[c[1]]), int(*b1), int(*a1));
    int i2 = FindWorkload(w, std::string(f[c[5]]), std::string(f[c[6]]), int(*b2), int(*a2));
    if (i1 < 0 || i2 < 0) return Status::Error(where + "workload not in single_data.csv");
    rows.push_back({i1, i2, *s1, *s2, *u, ln + 1});
  }
  return rows;
}

std::vector<PairMeasurement> Aggregate(const std::vector<Row>& rows) {
  std::map<std::pair<int, int>, PairMeasurement> m;
  for (const Row& r : rows) {
    bool swap = r.a > r.b;
    auto key = swap ? std::make_pair(r.b, r.a) : std::make_pair(r.a, r.b);
    PairMeasurement& p = m[key];
    p.a = key.first;
    p.b = key.second;
    double sa = swap ? r.sb : r.sa, sb = swap ? r.sa : r.sb;
    // Running mean over repeats.
    p.repeats += 1;
    p.speed_a += (sa - p.speed_a) / p.repeats;
    p.speed_b += (sb - p.speed_b) / p.repeats;
    p.util += (r.util - p.util) / p.repeats;
  }
  std::vector<PairMeasurement> out;
  for (auto& [k, p] : m) out.push_back(p);
  return out;
}

std::vector<std::array<double, 3>> Samples(const std::vector<WorkloadProfile>& w,
                                           const std::vector<Row>& rows) {
  std::vector<std::array<double, 3>> s;
  for (const Row& r : rows) {
    s.push_back({w[r.a].true_util, w[r.b].true_util, std::min(1.0, r.sa)});
    s.push_back({w[r.b].true_util, w[r.a].true_util, std::min(1.0, r.sb)});
  }
  return s;
}

}  // namespace

InterferenceModel::Coef InterferenceModel::FitCoef(const std::vector<std::array<double, 3>>& samples) {
  // Normal equations (X'X + tiny ridge) b = X'y, solved by Gaussian elimination.
  constexpr int K = 5;
  double A[K][K + 1] = {};
  for (const auto& s : samples) {
    auto f = Features(s[0], s[1]);
    for (int i = 0; i < K; ++i) {
      for (int j = 0; j < K; ++j) A[i][j] += f[i] * f[j];
      A[i][K] += f[i] * s[2];
    }
  }
  for (int i = 0; i < K; ++i) A[i][i] += 1e-6;
  for (int col = 0; col < K; ++col) {
    int piv = col;
    for (int r = col + 1; r < K; ++r)
      if (std::fabs(A[r][col]) > std::fabs(A[piv][col])) piv = r;
    for (int j = 0; j <= K; ++j) std::swap(A[col][j], A[piv][j]);
    for (int r = 0; r < K; ++r) {
      if (r == col) continue;
      double f = A[r][col] / A[col][col];
      for (int j = col; j <= K; ++j) A[r][j] -= f * A[col][j];
    }
  }
  Coef c;
  for (int i = 0; i < K; ++i) c[i] = A[i][K] / A[i][i];
  return c;
}

InterferenceModel::InterferenceModel(int n, Coef coef, std::vector<PairMeasurement> pairs)
    : n_(n), coef_(coef), pairs_(std::move(pairs)), index_(static_cast<size_t>(n) * n, -1) {
  for (size_t i = 0; i < pairs_.size(); ++i) {
    index_[static_cast<size_t>(pairs_[i].a) * n_ + pairs_[i].b] = static_cast<int>(i);
    index_[static_cast<size_t>(pairs_[i].b) * n_ + pairs_[i].a] = static_cast<int>(i);
  }
}

Result<InterferenceModel> InterferenceModel::Fit(const std::vector<WorkloadProfile>& w,
                                                 const std::string& colocate_csv) {
  ASSIGN_OR_RETURN(auto rows, ReadColocate(w, colocate_csv));
  if (rows.empty()) return Status::Error(BaseName(colocate_csv) + ": no measured pairs");
  return InterferenceModel(static_cast<int>(w.size()), FitCoef(Samples(w, rows)), Aggregate(rows));
}

double InterferenceModel::ModelCombinedUtil(const double* utils, int k) {
  double idle = 1.0;
  for (int i = 0; i < k; ++i) idle *= 1.0 - std::clamp(utils[i], 0.0, 100.0) / 100.0;
  return std::min(100.0, 100.0 * (1.0 - idle));
}

const PairMeasurement* InterferenceModel::FindPair(int a, int b) const {
  if (a < 0 || b < 0 || a >= n_ || b >= n_) return nullptr;
  int i = index_[static_cast<size_t>(a) * n_ + b];
  return i < 0 ? nullptr : &pairs_[i];
}

void InterferenceModel::Physics(const int* wl, int k, const std::vector<WorkloadProfile>& w,
                                double* rates, double* util) const {
  if (k <= 0) {
    *util = 0;
    return;
  }
  if (k == 1) {
    rates[0] = 1.0;
    *util = w[wl[0]].true_util;
    return;
  }
  if (k == 2) {
    if (const PairMeasurement* p = FindPair(wl[0], wl[1])) {
      bool first_is_a = p->a == wl[0];
      rates[0] = std::clamp(first_is_a ? p->speed_a : p->speed_b, kMinRate, 1.0);
      rates[1] = std::clamp(first_is_a ? p->speed_b : p->speed_a, kMinRate, 1.0);
      *util = std::min(100.0, p->util);
      return;
    }
  }
  double sum = 0;
  double u[64];
  int kk = std::min(k, 64);
  for (int i = 0; i < kk; ++i) {
    u[i] = w[wl[i]].true_util;
    sum += u[i];
  }
  for (int i = 0; i < k; ++i) {
    double ui = w[wl[i]].true_util;
    rates[i] = ModelRate(ui, sum - ui);
  }
  *util = ModelCombinedUtil(u, kk);
}

Result<CvReport> CrossValidate(const std::vector<WorkloadProfile>& w, const std::string& colocate_csv,
                               const std::string& grouping) {
  if (grouping != "pair" && grouping != "model")
    return Status::Error("unknown cross-validation grouping '" + grouping + "': want pair or model");
  ASSIGN_OR_RETURN(auto rows, ReadColocate(w, colocate_csv));
  std::set<std::string> groups;
  auto pair_key = [&](const Row& r) {
    auto a = w[r.a].model, b = w[r.b].model;
    return a < b ? a + "+" + b : b + "+" + a;
  };
  for (const Row& r : rows) {
    if (grouping == "pair") groups.insert(pair_key(r));
    else { groups.insert(w[r.a].model); groups.insert(w[r.b].model); }
  }
  CvReport rep;
  rep.grouping = grouping;
  double se = 0;
  for (const std::string& g : groups) {
    std::vector<Row> train, test;
    for (const Row& r : rows) {
      bool held = grouping == "pair" ? pair_key(r) == g : (w[r.a].model == g || w[r.b].model == g);
      (held ? test : train).push_back(r);
    }
    if (test.empty() || train.empty()) continue;
    auto tr = Samples(w, train);
    InterferenceModel m(static_cast<int>(w.size()), InterferenceModel::FitCoef(tr), {});
    double mean = 0;
    for (auto& s : tr) mean += s[2];
    mean /= static_cast<double>(tr.size());
    ++rep.groups;
    for (auto& s : Samples(w, test)) {
      double p = m.ModelRate(s[0], s[1]);
      rep.mae += std::fabs(p - s[2]);
      se += (p - s[2]) * (p - s[2]);
      rep.baseline_mae += std::fabs(mean - s[2]);
      rep.no_slowdown_mae += std::fabs(1.0 - s[2]);
      ++rep.samples;
    }
  }
  if (rep.samples == 0) return Status::Error(BaseName(colocate_csv) + ": nothing to cross-validate");
  rep.mae /= rep.samples;
  rep.baseline_mae /= rep.samples;
  rep.no_slowdown_mae /= rep.samples;
  rep.rmse = std::sqrt(se / rep.samples);
  for (const PairMeasurement& p : Aggregate(rows)) {
    double u[2] = {w[p.a].true_util, w[p.b].true_util};
    rep.util_mae += std::fabs(InterferenceModel::ModelCombinedUtil(u, 2) - p.util);
    ++rep.util_pairs;
  }
  rep.util_mae /= std::max(1, rep.util_pairs);
  return rep;
}

namespace {

// Gavel job type -> nearest Lucid workload (amp 0), or -1.
int MapGavelType(const std::string& type, const std::vector<WorkloadProfile>& w) {
  struct Family { const char* gavel; const char* model; const char* dataset; };
  static const Family kFamilies[] = {
      {"ResNet-50", "ResNet50", "ImageNet"}, {"LM", "LSTM", "Wikitext2"},
      {"Recommendation", "NeuMF", "MovieLens"}, {"CycleGAN", "DCGAN", "LSUN"},
      {"A3C", "PPO", "LunarLander"}};
  int batch = 0;
  size_t p = type.find("(batch size ");
  if (p != std::string::npos) batch = std::atoi(type.c_str() + p + 12);
  for (const Family& f : kFamilies) {
    if (type.rfind(std::string(f.gavel) + (batch ? " (" : ""), 0) != 0 &&
        type != f.gavel) continue;
    int best = -1;
    double best_d = 1e18;
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i].model != f.model || w[i].dataset != f.dataset || w[i].amp != 0) continue;
      double d = batch ? std::fabs(std::log(double(w[i].batch)) - std::log(double(batch))) : w[i].batch;
      if (d < best_d) { best_d = d; best = static_cast<int>(i); }
    }
    return best;
  }
  return -1;
}

}  // namespace

Result<GavelCheck> CheckAgainstGavel(const InterferenceModel& m, const std::vector<WorkloadProfile>& w,
                                     const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Error(path + ": cannot open");
  nlohmann::json d;
  try {
    d = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    return Status::Error(BaseName(path) + ": " + e.what());
  }
  if (!d.contains("v100")) return Status::Error(BaseName(path) + ": no 'v100' throughputs");
  double lucid_mean = 0;
  int nl = 0;
  for (const PairMeasurement& p : m.pairs()) {
    lucid_mean += std::min(1.0, p.speed_a) + std::min(1.0, p.speed_b);
    nl += 2;
  }
  lucid_mean /= std::max(1, nl);
  // "('ResNet-50 (batch size 32)', 1)" -> type, scale
  auto parse_key = [](const std::string& k, std::string* type) {
    if (k.size() < 8 || k.rfind("('", 0) != 0) return -1;
    size_t q = k.rfind("', ");
    if (q == std::string::npos) return -1;
    *type = k.substr(2, q - 2);
    return std::atoi(k.c_str() + q + 3);
  };
  GavelCheck g;
  std::vector<double> xs, ys;
  for (auto& [key, entry] : d["v100"].items()) {
    std::string ta;
    if (parse_key(key, &ta) != 1 || !entry.contains("null") || !entry["null"].is_number()) continue;
    double alone = entry["null"].get<double>();
    int wa = MapGavelType(ta, w);
    if (wa < 0 || alone <= 0) continue;
    for (auto& [k2, v] : entry.items()) {
      std::string tb;
      if (k2 == "null" || parse_key(k2, &tb) != 1 || !v.is_array() || v.size() != 2) continue;
      int wb = MapGavelType(tb, w);
      double own = v[0].get<double>();
      if (wb < 0 || own <= 0) continue;  // zero: did not fit / not measured
      double gavel = std::min(1.0, own / alone);
      double model = m.ModelRate(w[wa].true_util, w[wb].true_util);
      g.model_mae += std::fabs(model - gavel);
      g.no_slowdown_mae += std::fabs(1.0 - gavel);
      g.lucid_mean_mae += std::fabs(lucid_mean - gavel);
      g.gavel_mean_rate += gavel;
      g.model_mean_rate += model;
      xs.push_back(model);
      ys.push_back(gavel);
      ++g.pairs;
    }
  }
  if (g.pairs == 0) return Status::Error(BaseName(path) + ": no V100 pairs map to Lucid workloads");
  double n = g.pairs;
  g.model_mae /= n;
  g.no_slowdown_mae /= n;
  g.lucid_mean_mae /= n;
  g.gavel_mean_rate /= n;
  g.model_mean_rate /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double dx = xs[i] - g.model_mean_rate, dy = ys[i] - g.gavel_mean_rate;
    sxy += dx * dy; sxx += dx * dx; syy += dy * dy;
  }
  g.corr = sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
  return g;
}

}  // namespace gpucast::sim
