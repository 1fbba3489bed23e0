#include "sim/interference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "sim/text.h"

namespace gpucast::sim {

namespace {

constexpr std::uintmax_t kMaxInputBytes = 64u << 20;  // both inputs are well under 1 MiB

// Reads a whole input file of bounded size.
Result<std::string> ReadBounded(const std::string& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) return Status::Error(path + ": cannot open");
  if (size > kMaxInputBytes)
    return Status::Error(BaseName(path) + ": " + std::to_string(size) + " bytes is more than the limit of " +
                         std::to_string(kMaxInputBytes));
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return *text;
}

// One measured row of colocate_info.csv, with workload indices.
struct Row {
  int a, b;
  double sa, sb, util;
  size_t line;
};

Result<std::vector<Row>> ReadColocate(const std::vector<WorkloadProfile>& w, const std::string& path) {
  const std::string file = BaseName(path);
  ASSIGN_OR_RETURN(std::string text, ReadBounded(path));
  auto lines = Lines(text);
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
  const WorkloadIndex index(w);
  std::vector<Row> rows;
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    auto f = Split(lines[ln], ',');
    const std::string where = file + ": line " + std::to_string(ln + 1) + ": ";
    // The fit's time grows with the rows (each is a sample): as many as a workload table may hold.
    if (rows.size() >= kMaxWorkloads)
      return Status::Error(where + "more than " + std::to_string(kMaxWorkloads) + " pair rows");
    if (static_cast<int>(f.size()) <= need) return Status::Error(where + "too few fields");
    auto b1 = ParseInt(f[c[2]]), a1 = ParseInt(f[c[3]]), b2 = ParseInt(f[c[7]]), a2 = ParseInt(f[c[8]]);
    auto s1 = ParseDouble(f[c[4]]), s2 = ParseDouble(f[c[9]]), u = ParseDouble(f[c[10]]);
    if (!b1 || !a1 || !b2 || !a2 || !s1 || !s2 || !u || *s1 <= 0 || *s2 <= 0 || *u < 0 || *u > 100 ||
        *b1 <= 0 || *b2 <= 0 || *b1 > (1 << 30) || *b2 > (1 << 30) || *a1 < 0 || *a1 > 1 || *a2 < 0 || *a2 > 1)
      return Status::Error(where + "malformed batch size, amp, speed or gpu_util");
    int i1 = index.Find(f[c[0]], f[c[1]], *b1, *a1);
    int i2 = index.Find(f[c[5]], f[c[6]], *b2, *a2);
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

// A fitting sample: (u_a, u_b, rate_a, rate_b) and the groups (model or job
// family ids) of its two jobs, for leave-one-group-out.
struct Sample {
  std::array<double, 4> x;
  int g[2];
};

std::vector<Sample> LucidSamples(const std::vector<WorkloadProfile>& w, const std::vector<Row>& rows,
                                 std::vector<std::string>* group_names) {
  std::map<std::string, int> id;
  auto gid = [&](const std::string& m) {
    auto [it, fresh] = id.emplace(m, static_cast<int>(id.size()));
    if (fresh) group_names->push_back(m);
    return it->second;
  };
  std::vector<Sample> s;
  for (const Row& r : rows)
    s.push_back({{w[r.a].true_util, w[r.b].true_util, std::min(1.0, r.sa), std::min(1.0, r.sb)},
                 {gid(w[r.a].model), gid(w[r.b].model)}});
  return s;
}

std::vector<std::array<double, 4>> Plain(const std::vector<Sample>& s) {
  std::vector<std::array<double, 4>> out;
  out.reserve(s.size());
  for (const Sample& x : s) out.push_back(x.x);
  return out;
}

// Utilization as a device fraction; NaN and negatives are 0.
inline double Frac(double u) { return u > 0 ? std::min(u, 100.0) / 100.0 : 0.0; }

// e of one job: occupancy on this GPU type, inflated by the switching cost.
inline double Effective(double u, double k, double inflate) {
  double d = Frac(u);
  if (k != 1.0) d = k * d / (1.0 - d + k * d);
  return d * inflate;
}

InterferenceParams Sanitized(InterferenceParams p) {
  p.beta = p.beta > 0 ? std::min(p.beta, 1.0) : 0.0;
  p.switch_cost = p.switch_cost > 0 ? p.switch_cost : 0.0;
  p.occupancy = p.occupancy > 1 ? std::min(p.occupancy, 1e9) : 1.0;  // NaN -> 1
  p.sharpness = p.sharpness > 0 ? std::min(p.sharpness, 1e3) : 0.0;   // NaN -> 0 (no capacity term)
  p.capacity = p.sharpness > 0 && p.capacity > 1 ? std::min(p.capacity, 4.0) : 1.0;
  return p;
}

// The shared device's share of every job at total demand E (sum of e):
// time-slicing min(1, 1/E), or the capacity term's (1 + (E/c)^p)^(-1/p).
// Non-increasing in E; E x share(E) < c (<= 1 for time-slicing).
inline double Share(double e_sum, const InterferenceParams& p) {
  if (p.sharpness <= 0) return e_sum > 1.0 ? 1.0 / e_sum : 1.0;
  if (e_sum <= 0) return 1.0;
  return std::pow(1.0 + std::pow(e_sum / p.capacity, p.sharpness), -1.0 / p.sharpness);
}

// Both rates of a pair (the hot path of fitting).
inline void PairRates(const InterferenceParams& params, double ua, double ub, double* ra, double* rb) {
  const InterferenceParams p = Sanitized(params);
  const double inflate = 1.0 + p.switch_cost;
  double ea = Effective(ua, p.occupancy, inflate), eb = Effective(ub, p.occupancy, inflate);
  double r0 = 1.0 / (1.0 + p.beta * ea * eb), share = Share(ea + eb, p);
  *ra = *rb = std::min(r0, share);
}

double AbsError(const InterferenceParams& p, const std::vector<std::array<double, 4>>& samples) {
  double e = 0, ra, rb;
  for (const auto& s : samples) {
    PairRates(p, s[0], s[1], &ra, &rb);
    e += std::fabs(ra - s[2]) + std::fabs(rb - s[3]);
  }
  return e;
}

double SquaredError(const InterferenceParams& p, const std::vector<std::array<double, 4>>& samples) {
  double se = 0, ra, rb;
  for (const auto& s : samples) {
    PairRates(p, s[0], s[1], &ra, &rb);
    se += (ra - s[2]) * (ra - s[2]) + (rb - s[3]) * (rb - s[3]);
  }
  return se;
}

// ---- leave one group out ----

// The signed errors (model - measured) of one held-out group's samples.
struct Fold {
  int group;
  std::vector<double> err;
};

// Fits on the training samples of the fold that holds out `held` (a group id).
using FitFn = std::function<InterferenceParams(const std::vector<Sample>& train, int held)>;

std::vector<int> GroupsOf(const std::vector<Sample>& s) {
  std::set<int> g;
  for (const Sample& x : s) g.insert({x.g[0], x.g[1]});
  return {g.begin(), g.end()};
}

// For each group: fit on the samples not involving it, predict those that do.
// A group whose removal leaves nothing to fit on is skipped.
std::vector<Fold> LeaveGroupOut(const std::vector<Sample>& s, const FitFn& fit) {
  std::vector<Fold> folds;
  for (int g : GroupsOf(s)) {
    std::vector<Sample> train, test;
    for (const Sample& x : s) (x.g[0] == g || x.g[1] == g ? test : train).push_back(x);
    if (train.empty() || test.empty()) continue;
    InterferenceParams p = fit(train, g);
    Fold f{g, {}};
    for (const Sample& x : test) {
      double ra, rb;
      PairRates(p, x.x[0], x.x[1], &ra, &rb);
      f.err.push_back(ra - x.x[2]);
      f.err.push_back(rb - x.x[3]);
    }
    folds.push_back(std::move(f));
  }
  return folds;
}

// Leave one group out for a control that predicts one rate for every held-out
// sample, computed from the training samples (the same folds as LeaveGroupOut).
std::vector<Fold> ConstantFolds(const std::vector<Sample>& s,
                                const std::function<double(const std::vector<Sample>&)>& rate) {
  std::vector<Fold> folds;
  for (int g : GroupsOf(s)) {
    std::vector<Sample> train, test;
    for (const Sample& x : s) (x.g[0] == g || x.g[1] == g ? test : train).push_back(x);
    if (train.empty() || test.empty()) continue;
    const double r = rate(train);
    Fold f{g, {}};
    for (const Sample& x : test) f.err.insert(f.err.end(), {r - x.x[2], r - x.x[3]});
    folds.push_back(std::move(f));
  }
  return folds;
}

RateErrors Summarise(const std::vector<Fold>& folds) {
  RateErrors r;
  double se = 0;
  for (const Fold& f : folds)
    for (double e : f.err) {
      r.mae += std::fabs(e);
      r.bias += e;
      se += e * e;
      ++r.samples;
    }
  if (r.samples > 0) {
    r.mae /= r.samples;
    r.bias /= r.samples;
    r.rmse = std::sqrt(se / r.samples);
  }
  return r;
}

// Whether `cand` has a lower held-out MAE than `base` with 95% confidence:
// the one-sided 95% bound of a cluster bootstrap over held-out groups (2,000
// resamples, fixed seed) of the paired difference in mean absolute error is
// below 0. The folds of both come from the same groups in the same order.
bool BeatsWithConfidence(const std::vector<Fold>& cand, const std::vector<Fold>& base) {
  const size_t n = cand.size();
  if (n < 2 || base.size() != n) return false;
  std::vector<double> diff(n), count(n);
  double total = 0, total_n = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < cand[i].err.size(); ++j) diff[i] += std::fabs(cand[i].err[j]) - std::fabs(base[i].err[j]);
    count[i] = static_cast<double>(cand[i].err.size());
    total += diff[i];
    total_n += count[i];
  }
  if (!(total < 0)) return false;
  std::mt19937_64 rng(20240917);
  constexpr int kDraws = 2000;
  int not_better = 0;
  for (int d = 0; d < kDraws; ++d) {
    double s = 0, c = 0;
    for (size_t i = 0; i < n; ++i) {
      size_t k = static_cast<size_t>(rng() % n);
      s += diff[k];
      c += count[k];
    }
    if (c == 0 || s / c >= 0) ++not_better;
  }
  return not_better < kDraws / 20;  // fewer than 5% of resamples say "not better"
}

struct Choice {
  PhysicsForm form;
  InterferenceParams params;
};

// A form replaces a simpler one (earlier in the list) only if it lowers the
// held-out MAE by more than this: equal errors keep the fewer terms.
constexpr double kSimplerTolerance = 0.0005;

// The selection rule, on training samples only: each form's leave-one-group-
// out error; the best form replaces the time-slicing bound only if it beats
// the bound with confidence. Then the chosen form is fitted on all of `s`.
Choice ChooseForm(const std::vector<Sample>& s, const std::vector<PhysicsForm>& forms) {
  const PhysicsForm bound{};
  auto fit_of = [](PhysicsForm f) -> FitFn {
    return [f](const std::vector<Sample>& t, int) { return InterferenceModel::FitForm(Plain(t), f); };
  };
  std::vector<Fold> base = LeaveGroupOut(s, fit_of(bound));
  double best_mae = Summarise(base).mae;
  PhysicsForm best = bound;
  std::vector<Fold> best_folds;
  for (const PhysicsForm& f : forms) {
    if (f == bound) continue;
    auto folds = LeaveGroupOut(s, fit_of(f));
    double mae = Summarise(folds).mae;
    if (mae < best_mae - kSimplerTolerance) {
      best_mae = mae;
      best = f;
      best_folds = std::move(folds);
    }
  }
  if (!(best == bound) && !BeatsWithConfidence(best_folds, base)) best = bound;
  return {best, InterferenceModel::FitForm(Plain(s), best)};
}

const std::vector<PhysicsForm>& LucidForms() {
  // The RTX 3090 is the GPU the utilizations were measured on: occupancy 1.
  static const std::vector<PhysicsForm> f = {{false, false, false}, {false, true, false}, {false, false, true},
                                             {false, true, true},   {false, false, false, true}};
  return f;
}

const std::vector<PhysicsForm>& GavelForms() {
  static const std::vector<PhysicsForm> f = {{false, false, false}, {true, false, false},      {true, true, false},
                                             {true, false, true},   {true, true, true},        {true, false, false, true}};
  return f;
}

// ---- Gavel ----

struct GavelFamily {
  const char* gavel;
  const char* model;
  const char* dataset;
};
constexpr GavelFamily kGavelFamilies[] = {{"ResNet-50", "ResNet50", "ImageNet"},
                                          {"LM", "LSTM", "Wikitext2"},
                                          {"Recommendation", "NeuMF", "MovieLens"},
                                          {"CycleGAN", "DCGAN", "LSUN"},
                                          {"A3C", "PPO", "LunarLander"}};

// "ResNet-50 (batch size 32)" -> "ResNet-50"; "A3C" -> "A3C".
std::string FamilyOf(const std::string& type) {
  size_t p = type.find(" (");
  return p == std::string::npos ? type : type.substr(0, p);
}

// "('ResNet-50 (batch size 32)', 1)" -> type and scale; false when malformed.
bool ParseGavelKey(const std::string& k, std::string* type, int* scale) {
  if (k.size() < 8 || k.rfind("('", 0) != 0 || k.back() != ')') return false;
  size_t q = k.rfind("', ");
  if (q == std::string::npos || q < 2) return false;
  auto s = ParseInt(std::string_view(k).substr(q + 3, k.size() - q - 4));
  if (!s || *s < 0 || *s > 1'000'000) return false;
  *type = k.substr(2, q - 2);
  *scale = static_cast<int>(*s);
  return true;
}

struct GavelType {
  std::string gpu;  // "K80"
  std::vector<Sample> samples;
  std::vector<std::string> families;  // group names
  int total = 0, zero = 0, unmapped = 0;
  double all_valid_rate_sum = 0;
  int all_valid_samples = 0;
};

bool NonNegNumber(const nlohmann::json& v) {
  return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0;
}

Result<std::vector<GavelType>> ReadGavel(const std::vector<WorkloadProfile>& w, const std::string& path) {
  const std::string file = BaseName(path);
  ASSIGN_OR_RETURN(std::string text, ReadBounded(path));
  nlohmann::json d;
  try {
    d = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return Status::Error(file + ": not JSON: " + e.what());
  }
  if (!d.is_object()) return Status::Error(file + ": want an object of GPU types");
  std::vector<GavelType> out;
  for (const char* key : {"k80", "p100", "v100"}) {
    if (!d.contains(key) || !d[key].is_object())
      return Status::Error(file + ": no '" + key + "' throughputs (want an object of job types)");
    GavelType t;
    t.gpu = key;
    std::transform(t.gpu.begin(), t.gpu.end(), t.gpu.begin(), [](char c) { return std::toupper(c); });
    const nlohmann::json& g = d[key];
    // Isolated throughputs of the scale-1 job types.
    std::map<std::string, double> alone;
    for (auto& [k, entry] : g.items()) {
      std::string type;
      int scale;
      if (!ParseGavelKey(k, &type, &scale))
        return Status::Error(file + ": " + key + ": job key '" + k.substr(0, 80) + "' is not ('type', scale)");
      if (scale != 1) continue;
      if (!entry.is_object() || !entry.contains("null") || !NonNegNumber(entry["null"]))
        return Status::Error(file + ": " + key + ": " + k + ": want an object with the isolated throughput "
                             "\"null\" (a non-negative number)");
      alone[type] = entry["null"].get<double>();
    }
    std::map<std::string, int> fam_id;
    auto gid = [&](const std::string& type) {
      auto [it, fresh] = fam_id.emplace(FamilyOf(type), static_cast<int>(fam_id.size()));
      if (fresh) t.families.push_back(it->first);
      return it->second;
    };
    std::set<std::pair<std::string, std::string>> seen;
    for (auto& [k, entry] : g.items()) {
      std::string ta;
      int sa;
      ParseGavelKey(k, &ta, &sa);
      if (sa != 1) continue;
      for (auto& [k2, v] : entry.items()) {
        if (k2 == "null") continue;
        std::string tb;
        int sb;
        if (!ParseGavelKey(k2, &tb, &sb))
          return Status::Error(file + ": " + key + ": " + k + ": partner key '" + k2.substr(0, 80) +
                               "' is not ('type', scale)");
        if (sb != 1) continue;
        const std::string where = file + ": " + key + ": " + k + " with " + k2 + ": ";
        if (!v.is_array() || v.size() != 2 || !NonNegNumber(v[0]) || !NonNegNumber(v[1]))
          return Status::Error(where + "want [own, other] throughputs (non-negative numbers)");
        if (!alone.count(tb)) return Status::Error(where + "the partner has no isolated throughput");
        // Each unordered pair is stored under both jobs (mirrored); count it once.
        auto key_ab = ta <= tb ? std::make_pair(ta, tb) : std::make_pair(tb, ta);
        if (!seen.insert(key_ab).second) continue;
        // The fit's time grows with the pairs (each is a sample): as many as colocate_info.csv's rows.
        if (++t.total > static_cast<int>(kMaxWorkloads))
          return Status::Error(file + ": " + key + ": more than " + std::to_string(kMaxWorkloads) +
                               " pairs of job types");
        double own = v[0].get<double>(), other = v[1].get<double>();
        if (own <= 0 || other <= 0 || alone[ta] <= 0 || alone[tb] <= 0) {
          ++t.zero;  // not measured, or the pair did not fit on the GPU
          continue;
        }
        double ra = std::min(1.0, own / alone[ta]), rb = std::min(1.0, other / alone[tb]);
        t.all_valid_rate_sum += ra + rb;
        t.all_valid_samples += 2;
        int wa = MapGavelJobType(ta, w), wb = MapGavelJobType(tb, w);
        if (wa < 0 || wb < 0) {
          ++t.unmapped;
          continue;
        }
        t.samples.push_back({{w[wa].true_util, w[wb].true_util, ra, rb}, {gid(ta), gid(tb)}});
      }
    }
    if (t.samples.empty())
      return Status::Error(file + ": " + key + ": no measured pair of job types that map to Lucid workloads");
    out.push_back(std::move(t));
  }
  return out;
}

// The validation of one source of samples: controls, bound, current model,
// every form held out, and the nested selection.
SourceValidation ValidateSamples(const std::vector<Sample>& s, const std::vector<PhysicsForm>& forms,
                                 const std::vector<std::string>& group_names, const InterferenceParams& current_lucid,
                                 bool refit_current) {
  SourceValidation v;
  v.groups = static_cast<int>(GroupsOf(s).size());
  v.pairs_used = static_cast<int>(s.size());
  for (const Sample& x : s) v.measured_mean_rate += x.x[2] + x.x[3];
  v.measured_mean_rate /= std::max<size_t>(1, 2 * s.size());
  v.no_slowdown = Summarise(ConstantFolds(s, [](const std::vector<Sample>&) { return 1.0; }));
  v.mean_rate = Summarise(ConstantFolds(s, [](const std::vector<Sample>& t) {
    double m = 0;
    for (const Sample& x : t) m += x.x[2] + x.x[3];
    return m / (2.0 * static_cast<double>(t.size()));
  }));
  v.bound = Summarise(LeaveGroupOut(s, [](const std::vector<Sample>&, int) { return InterferenceParams{}; }));
  v.current = Summarise(LeaveGroupOut(s, [&](const std::vector<Sample>& t, int) {
    return refit_current ? InterferenceModel::FitParams(Plain(t)) : current_lucid;
  }));
  for (const PhysicsForm& f : forms) {
    SourceValidation::Form r;
    r.form = f;
    r.held_out = Summarise(LeaveGroupOut(s, [f](const std::vector<Sample>& t, int) {
      return InterferenceModel::FitForm(Plain(t), f);
    }));
    r.all = InterferenceModel::FitForm(Plain(s), f);
    v.forms.push_back(r);
  }
  // Nested: the selection rule runs inside each fold's training groups.
  v.selected = Summarise(LeaveGroupOut(s, [&](const std::vector<Sample>& t, int held) {
    Choice c = ChooseForm(t, forms);
    v.fold_choices.push_back(group_names[static_cast<size_t>(held)] + ": " + c.form.Name());
    return c.params;
  }));
  Choice all = ChooseForm(s, forms);
  v.chosen = all.form;
  v.chosen_params = all.params;
  return v;
}

}  // namespace

std::string PhysicsForm::Name() const {
  if (!occupancy && !contention && !switching && !capacity) return "time-slicing bound";
  std::string n;
  if (occupancy) n += "+occupancy";
  if (contention) n += "+contention";
  if (switching) n += "+switching";
  if (capacity) n += "+capacity";
  return n;
}

double GangRate(std::span<const double> per_gpu_rates) {
  if (per_gpu_rates.empty()) return 0.0;
  double r = per_gpu_rates[0];
  for (double x : per_gpu_rates) r = std::min(r, x);
  return r;
}

int MapGavelJobType(const std::string& type, const std::vector<WorkloadProfile>& w) {
  const std::string family = FamilyOf(type);
  int batch = 0;
  if (family != type) {
    const std::string prefix = family + " (batch size ";
    if (type.rfind(prefix, 0) != 0 || type.back() != ')') return -1;
    auto b = ParseInt(std::string_view(type).substr(prefix.size(), type.size() - prefix.size() - 1));
    if (!b || *b <= 0 || *b > (1 << 30)) return -1;
    batch = static_cast<int>(*b);
  }
  for (const GavelFamily& f : kGavelFamilies) {
    if (family != f.gavel) continue;
    int best = -1;
    double best_d = 1e18;
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i].model != f.model || w[i].dataset != f.dataset || w[i].amp != 0 || w[i].batch <= 0) continue;
      double d = batch ? std::fabs(std::log(double(w[i].batch)) - std::log(double(batch))) : w[i].batch;
      if (d < best_d - 1e-12) {
        best_d = d;
        best = static_cast<int>(i);
      }
    }
    return best;
  }
  return -1;
}

InterferenceParams InterferenceModel::FitParams(const std::vector<std::array<double, 4>>& samples) {
  // Grid search (coarse, then fine around the best): two parameters, a few
  // hundred pairs, and no local-minimum surprises.
  InterferenceParams best{0, 0};
  double best_se = SquaredError(best, samples);
  auto search = [&](double b_lo, double b_hi, double b_step, double s_lo, double s_hi, double s_step) {
    InterferenceParams c = best;
    for (double b = std::max(0.0, b_lo); b <= b_hi + 1e-12; b += b_step)
      for (double s = std::max(0.0, s_lo); s <= s_hi + 1e-12; s += s_step) {
        double se = SquaredError({b, s}, samples);
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

InterferenceParams InterferenceModel::FitForm(const std::vector<std::array<double, 4>>& samples, PhysicsForm form) {
  // Axes: log2 k_occ, beta, s, capacity c, log2 p. A fixed term has the one
  // value of the bound (the capacity term off: p = 0).
  struct Axis {
    bool free;
    double lo, hi, step;
  };
  constexpr int kAxes = 5;
  const Axis ax[kAxes] = {{form.occupancy, 0, 10, 0.5},
                          {form.contention, 0, 1, 0.05},
                          {form.switching, 0, 1, 0.05},
                          {form.capacity, 1, 1.6, 0.05},
                          {form.capacity, 0, 6, 0.5}};
  auto params = [&](const double* x) {
    InterferenceParams p{x[1], x[2], std::exp2(x[0])};
    if (form.capacity) {
      p.capacity = x[3];
      p.sharpness = std::exp2(x[4]);
    }
    return p;
  };
  double best[kAxes] = {0, 0, 0, form.capacity ? 1.0 : 0.0, 0};
  double best_e = form.capacity ? 1e300 : AbsError(params(best), samples);
  auto values = [&](int a, double centre, double half, double step) {
    std::vector<double> v;
    if (!ax[a].free) return std::vector<double>{best[a]};
    double lo = std::max(ax[a].lo, centre - half), hi = std::min(ax[a].hi, centre + half);
    for (int i = 0; lo + i * step <= hi + 1e-12; ++i) v.push_back(lo + i * step);
    return v;
  };
  auto search = [&](double scale) {
    double centre[kAxes];
    std::copy(best, best + kAxes, centre);
    std::vector<double> v[kAxes];
    for (int a = 0; a < kAxes; ++a) {
      double half = scale == 1 ? 1e9 : ax[a].step;
      v[a] = values(a, scale == 1 ? ax[a].lo : centre[a], half, ax[a].step * scale);
    }
    double x[kAxes];
    for (double lk : v[0])
      for (double b : v[1])
        for (double s : v[2])
          for (double c : v[3])
            for (double lp : v[4]) {
              x[0] = lk, x[1] = b, x[2] = s, x[3] = c, x[4] = lp;
              double e = AbsError(params(x), samples);
              if (e < best_e - 1e-12) {  // ties keep the earlier (smaller) values
                best_e = e;
                std::copy(x, x + kAxes, best);
              }
            }
  };
  search(1.0);
  search(0.25);
  return params(best);
}

Result<InterferenceModel> InterferenceModel::Fit(const std::vector<WorkloadProfile>& w,
                                                 const std::string& colocate_csv, const std::string& gavel_json) {
  ASSIGN_OR_RETURN(auto rows, ReadColocate(w, colocate_csv));
  if (rows.empty()) return Status::Error(BaseName(colocate_csv) + ": no measured pairs");
  std::vector<GavelType> types;
  if (!gavel_json.empty()) {  // bad input fails before any fitting
    ASSIGN_OR_RETURN(types, ReadGavel(w, gavel_json));
  }
  std::vector<std::string> names;
  Choice c = ChooseForm(LucidSamples(w, rows, &names), LucidForms());
  InterferenceModel m(c.params, Aggregate(rows));
  m.form_ = c.form;
  if (!gavel_json.empty()) {
    for (const GavelType& t : types) {
      Choice g = ChooseForm(t.samples, GavelForms());
      m.gpu_fits_.push_back({t.gpu, g.form, g.params});
    }
  }
  return m;
}

namespace {

// The fit a cluster GPU type uses: "V100M16" -> "V100"; nullptr: the default.
const InterferenceModel::GpuFit* FindFit(const std::vector<InterferenceModel::GpuFit>& fits, std::string_view type) {
  for (const auto& f : fits)
    if (type.size() >= f.gpu.size() && std::equal(f.gpu.begin(), f.gpu.end(), type.begin(), [](char a, char b) {
          return std::toupper(static_cast<unsigned char>(a)) == std::toupper(static_cast<unsigned char>(b));
        }))
      return &f;
  return nullptr;
}

}  // namespace

InterferenceModel InterferenceModel::ForGpu(std::string_view gpu_type) const {
  const GpuFit* f = FindFit(gpu_fits_, gpu_type);
  if (!f) return *this;
  InterferenceModel m(f->params);
  m.form_ = f->form;
  return m;
}

bool InterferenceModel::HasFit(std::string_view gpu_type) const {
  std::string up(gpu_type);
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  return up == "RTX3090" || FindFit(gpu_fits_, gpu_type) != nullptr;
}

void InterferenceModel::Rates(const double* u, int k, double* rates, double* busy) const {
  if (k <= 0) {
    *busy = 0;
    return;
  }
  if (k == 1) {
    rates[0] = 1.0;
    *busy = 100.0 * Frac(u[0]);
    return;
  }
  const InterferenceParams p = Sanitized(p_);
  const double inflate = 1.0 + p.switch_cost;
  double e_sum = 0;
  for (int i = 0; i < k; ++i) e_sum += Effective(u[i], p.occupancy, inflate);
  const double share = Share(e_sum, p);
  double load = 0;
  for (int i = 0; i < k; ++i) {
    double e = Effective(u[i], p.occupancy, inflate);
    rates[i] = std::min(1.0 / (1.0 + p.beta * e * (e_sum - e)), share);
    load += rates[i] * e;
  }
  *busy = 100.0 * std::min(1.0, load);
}

void InterferenceModel::RatesCapped(const double* u, const double* caps, int k, double* rates, double* busy,
                                     double* free_rates) const {
  bool any = false;
  for (int i = 0; i < k; ++i) any = any || caps[i] < 1.0;
  if (!any || k <= 1) {
    Rates(u, k, rates, busy);
    if (free_rates)
      for (int i = 0; i < k; ++i) free_rates[i] = rates[i];
    if (k == 1) rates[0] = std::min(1.0, std::max(0.0, caps[0]));
    if (k == 1) *busy = 100.0 * Frac(u[0]) * rates[0];
    return;
  }
  const InterferenceParams p = Sanitized(p_);
  const double inflate = 1.0 + p.switch_cost;
  constexpr int kMax = 64;
  double e[kMax], r0[kMax];
  std::vector<double> ev, r0v;
  double* ep = e;
  double* r0p = r0;
  if (k > kMax) {
    ev.resize(static_cast<size_t>(k));
    r0v.resize(static_cast<size_t>(k));
    ep = ev.data();
    r0p = r0v.data();
  }
  double e_sum = 0;
  for (int i = 0; i < k; ++i) e_sum += (ep[i] = Effective(u[i], p.occupancy, inflate));
  // Contention uses the jobs' full occupancies (the capped ones still run the same kernels).
  for (int i = 0; i < k; ++i) r0p[i] = 1.0 / (1.0 + p.beta * ep[i] * (e_sum - ep[i]));
  double share = Share(e_sum, p);
  auto capped = [&](int i, double s) { return caps[i] < std::min(r0p[i], s); };
  // No cap binds at the full share: the plain rates.
  bool binds = false;
  for (int i = 0; i < k && !binds; ++i) binds = capped(i, share);
  if (!binds) {
    Rates(u, k, rates, busy);
    if (free_rates)
      for (int i = 0; i < k; ++i) free_rates[i] = rates[i];
    return;
  }
  // The capped set only grows as the share rises; at most k rounds.
  for (int round = 0; round < k; ++round) {
    double d = 0, f = 0;
    for (int i = 0; i < k; ++i) (capped(i, share) ? d += std::max(0.0, caps[i]) * ep[i] : f += ep[i]);
    double lo = share, hi = 1.0;
    if (f <= 0) break;
    // share = Share(f + d / share): g(s) = s - Share(f + d / s) is <= 0 at the
    // current share and >= 0 at 1.
    if (p.sharpness <= 0) {
      // Time-slicing: min(1, 1 / (f + d / s)) = s  ->  s = (1 - d) / f, or 1.
      lo = f + d <= 1.0 ? 1.0 : std::clamp((1.0 - d) / f, lo, 1.0);
    } else {
      // Newton's method kept inside the bracket [lo, hi] (a bisection step
      // when it leaves it): g'(s) = 1 - Share'(x) d / s^2, x = f + d / s,
      // Share'(x) = -Share(x) t / (x (1 + t)), t = (x / c)^p.
      double s_ = lo;
      for (int it = 0; it < 60; ++it) {
        const double x = f + d / s_;
        const double t = std::pow(x / p.capacity, p.sharpness);
        const double sh = std::pow(1.0 + t, -1.0 / p.sharpness);
        const double g = s_ - sh;
        if (g < 0) lo = s_;
        else hi = s_;
        if (std::fabs(g) < 1e-14 || hi - lo < 1e-14) break;
        const double dsh = -sh * t / (x * (1.0 + t));
        const double dg = 1.0 - dsh * d / (s_ * s_);
        double next = dg > 0 ? s_ - g / dg : 0.5 * (lo + hi);
        if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
        s_ = next;
      }
      lo = s_;
    }
    bool grew = false;
    for (int i = 0; i < k; ++i) grew = grew || (capped(i, lo) && !capped(i, share));
    share = lo;
    if (!grew) break;
  }
  double load = 0;
  for (int i = 0; i < k; ++i) {
    rates[i] = capped(i, share) ? std::max(0.0, caps[i]) : std::min(r0p[i], share);
    if (free_rates) free_rates[i] = std::min(r0p[i], share);
    load += rates[i] * ep[i];
  }
  *busy = 100.0 * std::min(1.0, load);
}

namespace {

bool SameBits(const std::vector<double>& kept, const double* x, int k) {
  return kept.size() == static_cast<size_t>(k) &&
         (k == 0 || std::memcmp(kept.data(), x, static_cast<size_t>(k) * sizeof(double)) == 0);
}

bool SameParams(const InterferenceParams& a, const InterferenceParams& b) {
  return std::memcmp(&a, &b, sizeof(InterferenceParams)) == 0;
}

}  // namespace

bool RatesMemo::RatesCapped(const InterferenceModel& m, const double* u, const double* caps, int k, double* rates,
                            double* busy, double* free_rates) {
  const size_t n = static_cast<size_t>(std::max(k, 0));
  const bool compute = !(valid_ && SameParams(p_, m.params()) && SameBits(u_, u, static_cast<int>(n)) &&
                         SameBits(caps_, caps, static_cast<int>(n)));
  if (compute) {
    u_.assign(u, u + n);
    caps_.assign(caps, caps + n);
    rates_.resize(n);
    free_.resize(n);
    m.RatesCapped(u, caps, k, rates_.data(), &busy_, free_.data());
    p_ = m.params();
    valid_ = true;
  }
  std::copy(rates_.begin(), rates_.end(), rates);
  if (free_rates) std::copy(free_.begin(), free_.end(), free_rates);
  *busy = busy_;
  return compute;
}

double InterferenceModel::WorkCapacity() const { return Sanitized(p_).capacity; }

double InterferenceModel::MaxExtra(const double* u, int k, double floor) const {
  if (MinRate(u, k, 0.0) < floor) return -1;
  if (MinRate(u, k, 100.0) >= floor) return 100;
  const InterferenceParams p = Sanitized(p_);
  if (p.beta <= 0 && floor > 0 && floor < 1) {
    // share(E) >= floor  <=>  E <= E*: time-slicing E* = 1 / floor; capacity
    // E* = c (floor^-p - 1)^(1/p). Then the newcomer's occupancy e <= E* - E,
    // and u from e by inverting the occupancy and the switching inflation.
    const double inflate = 1.0 + p.switch_cost;
    double e_sum = 0;
    for (int i = 0; i < k; ++i) e_sum += Effective(u[i], p.occupancy, inflate);
    const double e_star = p.sharpness <= 0 ? 1.0 / floor
                                            : p.capacity * std::pow(std::pow(floor, -p.sharpness) - 1.0,
                                                                    1.0 / p.sharpness);
    const double o = std::max(0.0, e_star - e_sum) / inflate;
    if (o >= 1.0) return 100;
    const double kk = p.occupancy;
    const double d = kk == 1.0 ? o : o / (kk - (kk - 1.0) * o);
    double x = std::clamp(100.0 * d, 0.0, 100.0);
    // Guard the floating edge: step down until the exact test passes.
    for (int it = 0; it < 8 && MinRate(u, k, x) < floor; ++it) x = std::max(0.0, x - 1e-9 * (1 << it));
    return x;
  }
  double lo = 0, hi = 100;
  for (int it = 0; it < 40; ++it) {
    const double mid = 0.5 * (lo + hi);
    (MinRate(u, k, mid) >= floor ? lo : hi) = mid;
  }
  return lo;
}

double InterferenceModel::MinRate(const double* u, int k, double u_extra) const {
  if (k <= 0) return 1.0;
  // r_i = min(r0_i, share): the least rate is min(least r0, share).
  const InterferenceParams p = Sanitized(p_);
  const double inflate = 1.0 + p.switch_cost;
  auto e_of = [&](double x) { return Effective(x, p.occupancy, inflate); };
  double e_sum = e_of(u_extra);
  for (int i = 0; i < k; ++i) e_sum += e_of(u[i]);
  double e = e_of(u_extra);
  double min_r0 = 1.0 / (1.0 + p.beta * e * (e_sum - e));
  for (int i = 0; i < k; ++i) {
    e = e_of(u[i]);
    min_r0 = std::min(min_r0, 1.0 / (1.0 + p.beta * e * (e_sum - e)));
  }
  return std::min(min_r0, Share(e_sum, p));
}

double InterferenceModel::ModelCombinedUtil(const double* utils, int k) {
  double idle = 1.0;
  for (int i = 0; i < k; ++i) idle *= 1.0 - Frac(utils[i]);
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

Result<std::vector<SourceValidation>> Validate(const std::vector<WorkloadProfile>& w, const std::string& colocate_csv,
                                               const std::string& gavel_json) {
  ASSIGN_OR_RETURN(auto rows, ReadColocate(w, colocate_csv));
  if (rows.empty()) return Status::Error(BaseName(colocate_csv) + ": no measured pairs");
  ASSIGN_OR_RETURN(auto gavel, ReadGavel(w, gavel_json));
  std::vector<std::string> names;
  std::vector<Sample> lucid = LucidSamples(w, rows, &names);
  // The previous model: (beta, s) least squares on every Lucid pair.
  const InterferenceParams current = InterferenceModel::FitParams(Plain(lucid));
  std::vector<SourceValidation> out;
  SourceValidation l = ValidateSamples(lucid, LucidForms(), names, current, /*refit_current=*/true);
  l.source = "lucid";
  l.gpu = "RTX3090";
  l.grouping = "model";
  l.pairs_total = static_cast<int>(rows.size());
  auto busy_mae = [&](const InterferenceModel& m) {
    double err = 0;
    for (const Row& r : rows) {
      double u[2] = {w[r.a].true_util, w[r.b].true_util}, rates[2], busy;
      m.Rates(u, 2, rates, &busy);
      err += std::fabs(busy - r.util);
    }
    return err / static_cast<double>(rows.size());
  };
  l.device_busy_mae = busy_mae(InterferenceModel(l.chosen_params));
  l.device_busy_mae_current = busy_mae(InterferenceModel(current));
  out.push_back(std::move(l));
  for (const GavelType& t : gavel) {
    SourceValidation g = ValidateSamples(t.samples, GavelForms(), t.families, current, /*refit_current=*/false);
    g.source = "gavel";
    g.gpu = t.gpu;
    g.grouping = "job family";
    g.pairs_total = t.total;
    g.pairs_zero = t.zero;
    g.pairs_unmapped = t.unmapped;
    g.all_valid_mean_rate = t.all_valid_rate_sum / std::max(1, t.all_valid_samples);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace gpucast::sim
