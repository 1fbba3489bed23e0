#include "sim/workload.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <tuple>

#include "sim/text.h"
#include "util/measured.h"

namespace gpucast::sim {

std::string WorkloadProfile::Name() const {
  return model + "/" + dataset + "/b" + std::to_string(batch) + "/amp" + std::to_string(amp);
}

WorkloadIndex::WorkloadIndex(const std::vector<WorkloadProfile>& workloads) {
  for (size_t i = 0; i < workloads.size(); ++i) Insert(workloads[i], static_cast<int>(i));
}

int WorkloadIndex::Find(std::string_view model, std::string_view dataset, int64_t batch, int64_t amp) const {
  if (batch < std::numeric_limits<int>::min() || batch > std::numeric_limits<int>::max() ||
      amp < std::numeric_limits<int>::min() || amp > std::numeric_limits<int>::max())
    return -1;
  auto it = index_.find(Key{std::string(model), std::string(dataset), static_cast<int>(batch), static_cast<int>(amp)});
  return it == index_.end() ? -1 : it->second;
}

int WorkloadIndex::Insert(const WorkloadProfile& w, int i) {
  auto [it, fresh] = index_.emplace(Key{w.model, w.dataset, w.batch, w.amp}, i);
  return fresh ? -1 : it->second;
}

namespace {

// Finds each named column in the header or fails naming the first missing one.
Result<std::vector<int>> RequireColumns(const std::string& file,
                                        const std::vector<std::string_view>& header,
                                        std::initializer_list<const char*> names) {
  std::vector<int> out;
  for (const char* n : names) {
    int i = ColumnIndex(header, n);
    if (i < 0) return Status::Error(file + ": line 1: missing column '" + n + "'");
    out.push_back(i);
  }
  return out;
}

}  // namespace

Result<std::vector<WorkloadProfile>> LoadWorkloads(const std::string& path) {
  const std::string file = BaseName(path);
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto lines = Lines(*text);
  if (lines.empty()) return Status::Error(file + ": empty file");
  ASSIGN_OR_RETURN(auto col, RequireColumns(file, Split(lines[0], ','),
                                            {"model", "dataset", "batchsize", "amp", "speed",
                                             "gpu_util", "gmem"}));
  std::vector<WorkloadProfile> out;
  WorkloadIndex index;
  std::vector<size_t> line_of;  // each workload's line, for repeats
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    auto f = Split(lines[ln], ',');
    const std::string where = file + ": line " + std::to_string(ln + 1) + ": ";
    if (out.size() >= kMaxWorkloads)
      return Status::Error(where + "more than " + std::to_string(kMaxWorkloads) + " workload rows");
    for (int c : col)
      if (c >= static_cast<int>(f.size()))
        return Status::Error(where + "has " + std::to_string(f.size()) + " fields, want at least " +
                             std::to_string(c + 1));
    auto cell = [&](int i) { return std::string(f[col[i]]); };
    WorkloadProfile w;
    w.model = cell(0);
    w.dataset = cell(1);
    if (w.model.empty()) return Status::Error(where + "model is empty");
    if (w.dataset.empty()) return Status::Error(where + "dataset is empty");
    auto b = ParseInt(f[col[2]]), a = ParseInt(f[col[3]]);
    auto sp = ParseDouble(f[col[4]]), u = ParseDouble(f[col[5]]), m = ParseDouble(f[col[6]]);
    // ParseDouble refuses nan, inf, out-of-range text (1e999) and hex floats.
    if (!b || *b <= 0 || *b > std::numeric_limits<int>::max())
      return Status::Error(where + "batchsize '" + cell(2) + "' is not an integer in [1, " +
                           std::to_string(std::numeric_limits<int>::max()) + "]");
    if (!a || (*a != 0 && *a != 1)) return Status::Error(where + "amp '" + cell(3) + "' is not 0 or 1");
    // Speed and memory obey train --data's rules (util/measured.h).
    if (!sp) return Status::Error(where + "speed '" + cell(4) + "' is not a number");
    if (std::string why = SpeedProblem(*sp, *b); !why.empty())
      return Status::Error(where + "speed '" + cell(4) + "' " + why);
    if (!u || *u < 0 || *u > 100) return Status::Error(where + "gpu_util '" + cell(5) + "' is not in [0, 100]");
    if (!m) return Status::Error(where + "gmem '" + cell(6) + "' is not a number");
    if (std::string why = MemMibProblem(*m); !why.empty())
      return Status::Error(where + "gmem '" + cell(6) + "' " + why);
    w.batch = static_cast<int>(*b);
    w.amp = static_cast<int>(*a);
    w.speed = *sp;
    w.true_util = *u;
    w.gmem_mib = *m;
    // A repeated configuration would take the first row's predictions and
    // leave the second without any.
    if (int first = index.Insert(w, static_cast<int>(out.size())); first >= 0)
      return Status::Error(where + "workload " + w.Name() + " repeats line " + std::to_string(line_of[first]));
    line_of.push_back(ln + 1);
    out.push_back(std::move(w));
  }
  if (out.empty()) return Status::Error(file + ": no workload rows");
  return out;
}

Status LoadPredictionsCsv(const std::string& path, std::vector<WorkloadProfile>* workloads) {
  const std::string file = BaseName(path);
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto lines = Lines(*text);
  if (lines.empty()) return Status::Error(file + ": empty file");
  ASSIGN_OR_RETURN(auto col, RequireColumns(file, Split(lines[0], ','),
                                            {"model", "dataset", "batchsize", "amp", "predicted_util"}));
  const auto header = Split(lines[0], ',');
  const int c_mem = ColumnIndex(header, "pred_mem_mib"), c_high = ColumnIndex(header, "pred_mem_high_mib");
  const int c_lo = ColumnIndex(header, "predicted_low"), c_hi = ColumnIndex(header, "predicted_high");
  const WorkloadIndex index(*workloads);
  std::vector<size_t> seen_line(workloads->size(), 0);  // the line of each workload's prediction; 0 = none
  for (size_t ln = 1; ln < lines.size(); ++ln) {
    if (lines[ln].empty()) continue;
    auto f = Split(lines[ln], ',');
    const std::string where = file + ": line " + std::to_string(ln + 1) + ": ";
    int need = *std::max_element(col.begin(), col.end());
    if (need >= static_cast<int>(f.size()))
      return Status::Error(where + "has " + std::to_string(f.size()) + " fields, want at least " +
                           std::to_string(need + 1));
    auto b = ParseInt(f[col[2]]), a = ParseInt(f[col[3]]);
    auto p = ParseDouble(f[col[4]]);
    if (!b || !a) return Status::Error(where + "batchsize/amp are not integers");
    if (!p || *p < 0) return Status::Error(where + "predicted_util '" + std::string(f[col[4]]) + "' is not a non-negative number");
    int i = index.Find(f[col[0]], f[col[1]], *b, *a);
    if (i < 0)
      return Status::Error(where + "workload " + std::string(f[col[0]]) + "/" + std::string(f[col[1]]) +
                           "/b" + std::to_string(*b) + "/amp" + std::to_string(*a) +
                           " is not in single_data.csv");
    if (*p > 100) return Status::Error(where + "predicted_util '" + std::string(f[col[4]]) + "' is above 100");
    if (seen_line[i] > 0)
      return Status::Error(where + "a second prediction for workload " + (*workloads)[i].Name() + " (line " +
                           std::to_string(seen_line[i]) + ")");
    seen_line[i] = ln + 1;
    (*workloads)[i].predicted_util = *p;
    using Col = std::tuple<int, double*, const char*>;
    for (auto [c, dst, what] : {Col{c_mem, &(*workloads)[i].pred_mem_mib, "pred_mem_mib"},
                                Col{c_high, &(*workloads)[i].pred_mem_high_mib, "pred_mem_high_mib"}}) {
      if (c < 0 || c >= static_cast<int>(f.size()) || f[c].empty()) continue;
      auto m = ParseDouble(f[c]);
      if (!m || *m <= 0 || *m > 16.0 * 1024 * 1024)
        return Status::Error(where + what + " '" + std::string(f[c]) + "' is not a memory size in (0, 16 TiB] (MiB)");
      *dst = *m;
    }
    // The utilization interval (optional; both ends or none).
    WorkloadProfile& wi = (*workloads)[i];
    wi.pred_util_low = wi.pred_util_high = NAN;
    if (c_lo >= 0 && c_hi >= 0 && c_lo < static_cast<int>(f.size()) && c_hi < static_cast<int>(f.size()) &&
        !f[c_lo].empty() && !f[c_hi].empty()) {
      auto lo = ParseDouble(f[c_lo]), hi = ParseDouble(f[c_hi]);
      if (!lo || !hi || *lo < 0 || *hi > 100 || *lo > *p + 1e-9 || *hi < *p - 1e-9)
        return Status::Error(where + "predicted_low/predicted_high '" + std::string(f[c_lo]) + "', '" +
                             std::string(f[c_hi]) + "' are not an interval in [0, 100] around predicted_util");
      wi.pred_util_low = *lo;
      wi.pred_util_high = *hi;
    }
  }
  for (size_t i = 0; i < seen_line.size(); ++i)
    if (seen_line[i] == 0)
      return Status::Error(file + ": no prediction for workload " + (*workloads)[i].Name());
  return Status::Ok();
}

namespace {

std::string Num(double v) {
  if (std::isnan(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

double NoisyLog1pSd(double sd_points) { return sd_points / (1.0 + 50.0); }

namespace {
double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
}  // namespace

double NoisyMean(double u, double shift, double s) {
  const double mu = std::log1p(u) + shift;  // Y = 1 + prediction before the clamp: lognormal(mu, s)
  if (!(s > 0)) return std::clamp(std::expm1(mu), 0.0, 100.0);
  const double l1 = 0.0, l101 = std::log(101.0);  // prediction 0 <=> Y = 1; 100 <=> Y = 101
  // E[Y; a < Y <= b] = e^(mu + s^2/2) (Phi((ln b - mu - s^2)/s) - Phi((ln a - mu - s^2)/s)).
  const double partial = std::exp(mu + 0.5 * s * s) * (Phi((l101 - mu - s * s) / s) - Phi((l1 - mu - s * s) / s));
  const double p_mid = Phi((l101 - mu) / s) - Phi((l1 - mu) / s), p_top = 1.0 - Phi((l101 - mu) / s);
  return partial - p_mid + 100.0 * p_top;
}

double NoisyShift(double u, double s) {
  if (!(s > 0) || !(u > 0) || !(u < 100)) return 0.0;
  // NoisyMean rises with the shift from 0 to 100: bisection.
  double lo = -30.0, hi = 30.0;
  for (int i = 0; i < 200 && hi - lo > 1e-13; ++i) {
    const double mid = 0.5 * (lo + hi);
    (NoisyMean(u, mid, s) < u ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

uint64_t NoisyDrawSalt(int draw) {
  return 0x401553ULL + static_cast<uint64_t>(draw) * 0xA0761D6478BD642FULL;
}

double SeededNormal(uint64_t seed, int64_t index, uint64_t salt) {
  uint64_t a = Mix(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ULL + salt);
  uint64_t b = Mix(a + 0x632BE59BD9B4E019ULL);
  double u1 = (static_cast<double>(a >> 11) + 0.5) / 9007199254740992.0;
  double u2 = static_cast<double>(b >> 11) / 9007199254740992.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

double CsvRounded(double v) {
  if (std::isnan(v)) return v;
  return std::strtod(Num(v).c_str(), nullptr);
}

std::string PredictionsCsv(const std::vector<WorkloadProfile>& w) {
  std::string out = "model,dataset,batchsize,amp,predicted_util,pred_mem_mib,pred_mem_high_mib,predicted_low,predicted_high\n";
  for (const WorkloadProfile& x : w)
    out += x.model + "," + x.dataset + "," + std::to_string(x.batch) + "," + std::to_string(x.amp) + "," +
           Num(x.predicted_util) + "," + Num(x.pred_mem_mib) + "," + Num(x.pred_mem_high_mib) + "," +
           Num(x.pred_util_low) + "," + Num(x.pred_util_high) + "\n";
  return out;
}

std::string PredictionSource::Label() const {
  switch (kind) {
    case kOracle: return "oracle";
    case kNoisy: return "noisy:" + Num(value) + (draw > 0 ? "@" + std::to_string(draw) : "");
    case kConstant: return "constant:" + Num(value);
    case kShuffled: return "shuffled:lowo:" + name;
    case kCsv: return "csv:" + name;
    case kAlgo: return "lowo:" + name;
  }
  return "";
}

Result<PredictionSource> ParsePredictionSource(const std::string& text, const std::string& default_algo) {
  PredictionSource s;
  auto number = [&](const std::string& what, size_t skip, size_t len = std::string::npos) -> Result<double> {
    auto v = ParseDouble(std::string_view(text).substr(skip, len));
    if (!v || *v < 0 || *v > 100)
      return Status::Error("--predictions '" + text + "': " + what + " must be a number in [0, 100] (points)");
    return *v;
  };
  if (text.empty()) {
    s.kind = PredictionSource::kAlgo;
    s.name = default_algo;
  } else if (text == "oracle") {
    s.kind = PredictionSource::kOracle;
  } else if (text.rfind("noisy:", 0) == 0) {
    s.kind = PredictionSource::kNoisy;
    const size_t at = text.find('@');
    if (at != std::string::npos) {
      auto k = ParseDouble(std::string_view(text).substr(at + 1));
      if (!k || *k < 0 || *k > 1e6 || *k != std::floor(*k))
        return Status::Error("--predictions '" + text + "': the noise draw after '@' must be an integer in [0, 1000000]");
      s.draw = static_cast<int>(*k);
    }
    ASSIGN_OR_RETURN(s.value, number("the noise sd", 6, at == std::string::npos ? at : at - 6));
  } else if (text.rfind("constant:", 0) == 0) {
    s.kind = PredictionSource::kConstant;
    ASSIGN_OR_RETURN(s.value, number("the constant", 9));
  } else if (text == "shuffled" || text.rfind("shuffled:", 0) == 0) {
    s.kind = PredictionSource::kShuffled;
    s.name = text == "shuffled" ? default_algo : text.substr(9);
    if (s.name.empty()) return Status::Error("--predictions '" + text + "': want shuffled or shuffled:ALGO");
  } else if (text.find('/') != std::string::npos ||
             (text.size() > 4 && text.compare(text.size() - 4, 4, ".csv") == 0)) {
    s.kind = PredictionSource::kCsv;
    s.name = text;
  } else {
    for (char c : text)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
        return Status::Error("--predictions '" + text +
                             "': want oracle, noisy:SD, constant:U, shuffled[:ALGO], a CSV path or an algorithm name");
    s.kind = PredictionSource::kAlgo;
    s.name = text;
  }
  return s;
}

Status ApplyPredictionSource(const PredictionSource& src, uint64_t seed, std::vector<WorkloadProfile>* w) {
  switch (src.kind) {
    case PredictionSource::kOracle:
      // The truth, and sure of it: a zero-width interval.
      for (WorkloadProfile& x : *w) x.predicted_util = x.pred_util_low = x.pred_util_high = x.true_util;
      break;
    case PredictionSource::kNoisy: {
      // Noise where a predictor's errors live: in log1p of the utilization,
      // the space of the predictor's loss, accuracy (RMSLE) and intervals;
      // sd NoisyLog1pSd(SD), which is SD points at 50% utilization. A real
      // predictor's error is relative: a job is never predicted free (the
      // former additive noise, clamped at 0, predicted a row of u% at 0 with
      // probability Phi(-u/SD), one in four at 10% under SD 15, and a policy
      // capped at a sum of 100 stacked those anywhere). Its error's sd is known by construction: the
      // 80% interval is +-1.2816 sd around the prediction in the same space.
      // Mean-preserving: the draw is recentred (NoisyShift) so that the
      // clamped prediction's expectation is the true utilization. A control
      // for "worse predictions" must not also move the policies' currency (a
      // sum of predicted points): clamped at 100 without the shift, a
      // workload at 98 was predicted 89.2 on average under SD 15 (82.2 under
      // SD 30), and a capped policy packed the heavy jobs more densely the
      // noisier its predictions. At 0 and 100 the only unbiased bounded
      // prediction is the truth.
      // Draw K (noisy:SD@K) salts the same stream differently; draw 0 is the
      // control's one draw of before.
      const double s = NoisyLog1pSd(src.value);
      const uint64_t salt = NoisyDrawSalt(src.draw);
      for (size_t i = 0; i < w->size(); ++i) {
        const double z = SeededNormal(seed, static_cast<int64_t>(i), salt);
        WorkloadProfile& x = (*w)[i];
        if (!(s > 0) || !(x.true_util > 0) || !(x.true_util < 100)) {
          x.predicted_util = x.pred_util_low = x.pred_util_high = x.true_util;  // noisy:0 is the oracle
          continue;
        }
        const double shift = NoisyShift(x.true_util, s);
        x.predicted_util = std::clamp(std::expm1(std::log1p(x.true_util) + shift + s * z), 0.0, 100.0);
        const double lp = std::log1p(x.predicted_util);
        x.pred_util_low = std::clamp(std::expm1(lp - 1.2815515655446004 * s), 0.0, 100.0);
        x.pred_util_high = std::clamp(std::expm1(lp + 1.2815515655446004 * s), 0.0, 100.0);
      }
      break;
    }
    case PredictionSource::kConstant:
      // A predictor that knows nothing says so: no interval.
      for (WorkloadProfile& x : *w) {
        x.predicted_util = src.value;
        x.pred_util_low = x.pred_util_high = NAN;
      }
      break;
    case PredictionSource::kShuffled: {
      std::vector<double> p;
      for (const WorkloadProfile& x : *w) {
        if (!x.HasPrediction()) return Status::Error("shuffled predictions: workload " + x.Name() + " has no prediction");
        p.push_back(x.predicted_util);
      }
      // Fisher-Yates, seeded.
      uint64_t z = seed * 0x9E3779B97F4A7C15ULL + 0x5AFF1EULL;
      for (size_t i = p.size(); i > 1; --i) {
        z = Mix(z + 0x9E3779B97F4A7C15ULL);
        std::swap(p[i - 1], p[z % i]);
      }
      // Each row takes another row's prediction with that row's interval.
      std::vector<std::pair<double, double>> iv;
      for (const WorkloadProfile& x : *w) iv.push_back({x.pred_util_low, x.pred_util_high});
      z = seed * 0x9E3779B97F4A7C15ULL + 0x5AFF1EULL;
      for (size_t i = iv.size(); i > 1; --i) {
        z = Mix(z + 0x9E3779B97F4A7C15ULL);
        std::swap(iv[i - 1], iv[z % i]);
      }
      for (size_t i = 0; i < p.size(); ++i) {
        (*w)[i].predicted_util = p[i];
        (*w)[i].pred_util_low = iv[i].first;
        (*w)[i].pred_util_high = iv[i].second;
      }
      break;
    }
    case PredictionSource::kCsv:
    case PredictionSource::kAlgo:
      for (const WorkloadProfile& x : *w)
        if (!x.HasPrediction()) return Status::Error(src.Label() + ": workload " + x.Name() + " has no prediction");
      break;
  }
  return Status::Ok();
}

double PredictionMae(const std::vector<WorkloadProfile>& w) {
  double s = 0;
  for (const WorkloadProfile& x : w) s += std::fabs(x.predicted_util - x.true_util);
  return w.empty() ? 0 : s / static_cast<double>(w.size());
}

}  // namespace gpucast::sim
