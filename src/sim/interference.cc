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

std::vector<std::array<double, 4>> Samples(const std::vector<WorkloadProfile>& w,
                                           const std::vector<Row>& rows) {
  std::vector<std::array<double, 4>> s;
  for (const Row& r : rows)
    s.push_back({w[r.a].true_util, w[r.b].true_util, std::min(1.0, r.sa), std::min(1.0, r.sb)});
  return s;
}

double SquaredError(const InterferenceModel& m, const std::vector<std::array<double, 4>>& samples) {
  double se = 0, r[2], busy;
  for (const auto& s : samples) {
    m.Rates(s.data(), 2, r, &busy);
    se += (r[0] - s[2]) * (r[0] - s[2]) + (r[1] - s[3]) * (r[1] - s[3]);
  }
  return se;
}

}  // namespace

InterferenceParams InterferenceModel::FitParams(const std::vector<std::array<double, 4>>& samples) {
  // Grid search (coarse, then fine around the best): two parameters, a few
  // hundred pairs, and no local-minimum surprises.
  InterferenceParams best{0, 0};
  double best_se = SquaredError(InterferenceModel(best), samples);
  auto search = [&](double b_lo, double b_hi, double b_step, double s_lo, double s_hi, double s_step) {
    InterferenceParams c = best;
    for (double b = std::max(0.0, b_lo); b <= b_hi + 1e-12; b += b_step)
      for (double s = std::max(0.0, s_lo); s <= s_hi + 1e-12; s += s_step) {
        double se = SquaredError(InterferenceModel({b, s}), samples);
        if (se < best_se - 1e-12) {
          best_se = se;
          c = {b, s};
        }
      }
    best = c;
  };
  search(0, 4, 0.1, 0, 0.5, 0.05);
  search(best.beta - 0.1, best.beta + 0.1, 0.005, best.switch_cost - 0.05, best.switch_cost + 0.05, 0.0025);
  return best;
}

Result<InterferenceModel> InterferenceModel::Fit(const std::vector<WorkloadProfile>& w,
                                                 const std::string& colocate_csv) {
  ASSIGN_OR_RETURN(auto rows, ReadColocate(w, colocate_csv));
  if (rows.empty()) return Status::Error(BaseName(colocate_csv) + ": no measured pairs");
  return InterferenceModel(FitParams(Samples(w, rows)), Aggregate(rows));
}

void InterferenceModel::Rates(const double* u, int k, double* rates, double* busy) const {
  if (k <= 0) {
    *busy = 0;
    return;
  }
  if (k == 1) {
    rates[0] = 1.0;
    *busy = std::clamp(u[0], 0.0, 100.0);
    return;
  }
  const double inflate = 1.0 + p_.switch_cost;
  double e_sum = 0;
  for (int i = 0; i < k; ++i) e_sum += std::clamp(u[i], 0.0, 100.0) / 100.0 * inflate;
  double load = 0;
  for (int i = 0; i < k; ++i) {
    double e = std::clamp(u[i], 0.0, 100.0) / 100.0 * inflate;
    rates[i] = 1.0 / (1.0 + p_.beta * e * (e_sum - e));
    load += rates[i] * e;
  }
  if (load > 1.0) {
    for (int i = 0; i < k; ++i) rates[i] /= load;
    load = 1.0;
  }
  *busy = 100.0 * load;
}

double InterferenceModel::MinRate(const double* u, int k, double u_extra) const {
  if (k <= 0) return 1.0;
  // r_i = r0_i / max(1, load): the least rate is the least r0 over the load.
  const double inflate = 1.0 + p_.switch_cost;
  auto e_of = [&](double x) { return std::clamp(x, 0.0, 100.0) / 100.0 * inflate; };
  double e_sum = e_of(u_extra);
  for (int i = 0; i < k; ++i) e_sum += e_of(u[i]);
  double e = e_of(u_extra);
  double r0 = 1.0 / (1.0 + p_.beta * e * (e_sum - e));
  double min_r0 = r0, load = r0 * e;
  for (int i = 0; i < k; ++i) {
    e = e_of(u[i]);
    r0 = 1.0 / (1.0 + p_.beta * e * (e_sum - e));
    min_r0 = std::min(min_r0, r0);
    load += r0 * e;
  }
  return load > 1.0 ? min_r0 / load : min_r0;
}

double InterferenceModel::ModelCombinedUtil(const double* utils, int k) {
  double idle = 1.0;
  for (int i = 0; i < k; ++i) idle *= 1.0 - std::clamp(utils[i], 0.0, 100.0) / 100.0;
  return std::min(100.0, 100.0 * (1.0 - idle));
}

void InterferenceModel::Physics(const int* wl, int k, const std::vector<WorkloadProfile>& w,
                                double* rates, double* util) const {
  double u[64];
  if (k <= 64) {
    for (int i = 0; i < k; ++i) u[i] = w[wl[i]].true_util;
    Rates(u, k, rates, util);
    return;
  }
  std::vector<double> v(static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) v[i] = w[wl[i]].true_util;
  Rates(v.data(), k, rates, util);
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
    InterferenceModel m(InterferenceModel::FitParams(tr));
    double mean = 0;
    for (auto& s : tr) mean += s[2] + s[3];
    mean /= 2.0 * static_cast<double>(tr.size());
    ++rep.groups;
    for (auto& s : Samples(w, test)) {
      double r[2], busy;
      m.Rates(s.data(), 2, r, &busy);
      for (int i = 0; i < 2; ++i) {
        double truth = s[2 + i];
        rep.mae += std::fabs(r[i] - truth);
        rep.bias += r[i] - truth;
        se += (r[i] - truth) * (r[i] - truth);
        rep.baseline_mae += std::fabs(mean - truth);
        rep.no_slowdown_mae += std::fabs(1.0 - truth);
        ++rep.samples;
      }
    }
  }
  if (rep.samples == 0) return Status::Error(BaseName(colocate_csv) + ": nothing to cross-validate");
  rep.mae /= rep.samples;
  rep.bias /= rep.samples;
  rep.baseline_mae /= rep.samples;
  rep.no_slowdown_mae /= rep.samples;
  rep.rmse = std::sqrt(se / rep.samples);
  InterferenceModel full(InterferenceModel::FitParams(Samples(w, rows)));
  for (const Row& r : rows) {
    double u[2] = {w[r.a].true_util, w[r.b].true_util}, rates[2], busy;
    full.Rates(u, 2, rates, &busy);
    rep.util_mae += std::fabs(busy - r.util);
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
      double u[2] = {w[wa].true_util, w[wb].true_util}, r[2], busy;
      m.Rates(u, 2, r, &busy);
      double model = r[0];
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
  g.bias = g.model_mean_rate - g.gavel_mean_rate;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double dx = xs[i] - g.model_mean_rate, dy = ys[i] - g.gavel_mean_rate;
    sxy += dx * dy; sxx += dx * dx; syy += dy * dy;
  }
  g.corr = sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
  return g;
}

}  // namespace gpucast::sim
