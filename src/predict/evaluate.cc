#include "predict/evaluate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "predict/predictor.h"

namespace gpucast {

std::string Split::ToString() const {
  char buf[64];
  switch (kind) {
    case kRandom: std::snprintf(buf, sizeof buf, "random:%g", test_fraction); return buf;
    case kLowo: return "lowo";
    case kKfold: return "kfold:" + std::to_string(k);
  }
  return "?";
}

Result<Split> ParseSplit(const std::string& text) {
  Split s;
  auto bad = [&](const char* why) {
    return Status::Error("split '" + text + "': " + why + " (want random:F, lowo or kfold:K)");
  };
  if (text == "lowo") {
    s.kind = Split::kLowo;
    return s;
  }
  if (text.rfind("random:", 0) == 0) {
    std::string v = text.substr(7);
    double f = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), f);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size() || !(f > 0 && f < 1))
      return bad("test fraction must be a number in (0, 1)");
    s.kind = Split::kRandom;
    s.test_fraction = f;
    return s;
  }
  if (text.rfind("kfold:", 0) == 0) {
    std::string v = text.substr(6);
    int k = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), k);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size() || k < 2)
      return bad("K must be an integer >= 2");
    s.kind = Split::kKfold;
    s.k = k;
    return s;
  }
  return bad("unknown kind");
}

namespace {
// Deterministic Fisher-Yates with mt19937_64 (std::shuffle's distribution is
// implementation-defined; this is the same everywhere).
void Shuffle(std::vector<size_t>* v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = v->size(); i > 1; --i) std::swap((*v)[i - 1], (*v)[rng() % i]);
}
}  // namespace

Result<std::vector<Fold>> MakeFolds(const Split& split, const std::vector<int>& group, uint64_t seed) {
  size_t n = group.size();
  if (n < 2) return Status::Error("split " + split.ToString() + ": need at least 2 rows");
  std::vector<Fold> folds;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  switch (split.kind) {
    case Split::kLowo: {
      std::vector<int> ids(group.begin(), group.end());
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      if (ids.size() < 2) return Status::Error("split lowo: need at least 2 workloads");
      for (int g : ids) {
        Fold f;
        for (size_t i = 0; i < n; ++i) (group[i] == g ? f.test : f.train).push_back(i);
        folds.push_back(std::move(f));
      }
      break;
    }
    case Split::kRandom: {
      Shuffle(&order, seed);
      size_t nt = static_cast<size_t>(std::lround(split.test_fraction * n));
      if (nt == 0 || nt >= n) return Status::Error("split " + split.ToString() + ": empty train or test set");
      Fold f;
      f.test.assign(order.begin(), order.begin() + nt);
      f.train.assign(order.begin() + nt, order.end());
      std::sort(f.test.begin(), f.test.end());
      std::sort(f.train.begin(), f.train.end());
      folds.push_back(std::move(f));
      break;
    }
    case Split::kKfold: {
      if (static_cast<size_t>(split.k) > n)
        return Status::Error("split " + split.ToString() + ": more folds than rows");
      Shuffle(&order, seed);
      for (int k = 0; k < split.k; ++k) {
        Fold f;
        for (size_t i = 0; i < n; ++i) (static_cast<int>(i % split.k) == k ? f.test : f.train).push_back(order[i]);
        std::sort(f.test.begin(), f.test.end());
        std::sort(f.train.begin(), f.train.end());
        folds.push_back(std::move(f));
      }
      break;
    }
  }
  return folds;
}

Result<std::vector<RowPrediction>> CrossValidatedPredictions(const Dataset& data,
                                                             const std::vector<Fold>& folds,
                                                             const std::string& algo, uint64_t seed,
                                                             const std::string& feature_set) {
  ASSIGN_OR_RETURN(std::vector<size_t> cols, SelectFeatures(data.feature_names, feature_set));
  std::vector<double> labels = data.Labels();
  std::vector<RowPrediction> out;
  for (size_t fi = 0; fi < folds.size(); ++fi) {
    const Fold& f = folds[fi];
    Matrix xtr, xte;
    std::vector<double> ytr;
    for (size_t i : f.train) {
      xtr.push_back(data.x[i]);
      ytr.push_back(labels[i]);
    }
    for (size_t i : f.test) xte.push_back(data.x[i]);
    auto m = UtilModel::Fit(xtr, ytr, data.feature_names, cols, algo, nullptr, seed * 7919 + fi);
    if (!m.ok()) return m.status().Prefixed("fold " + std::to_string(fi));
    ASSIGN_OR_RETURN(std::vector<UtilPrediction> p, m->Predict(xte));
    for (size_t j = 0; j < f.test.size(); ++j) {
      const Measurement& r = data.rows[f.test[j]];
      out.push_back({r.model, r.dataset, r.batch, r.amp, r.gpu_util, p[j].util, p[j].low, p[j].high,
                     f.test[j]});
    }
  }
  return out;
}

Result<std::vector<RowPrediction>> LeaveOneWorkloadOutPredictions(const Dataset& data,
                                                                  const std::string& algo,
                                                                  uint64_t seed) {
  Split s;
  s.kind = Split::kLowo;
  ASSIGN_OR_RETURN(std::vector<Fold> folds, MakeFolds(s, data.group, seed));
  ASSIGN_OR_RETURN(std::vector<RowPrediction> p, CrossValidatedPredictions(data, folds, algo, seed, DefaultFeatureSet(algo)));
  std::sort(p.begin(), p.end(), [](const RowPrediction& a, const RowPrediction& b) { return a.row < b.row; });
  return p;
}

Result<Scores> Score(const std::vector<RowPrediction>& preds) {
  std::vector<double> y, yh, lo, hi;
  for (const auto& p : preds) {
    y.push_back(p.measured);
    yh.push_back(p.predicted);
    lo.push_back(p.low);
    hi.push_back(p.high);
  }
  Scores s;
  ASSIGN_OR_RETURN(s.rmsle, Rmsle(yh, y));
  ASSIGN_OR_RETURN(s.mae, Mae(yh, y));
  auto r2 = RSquared(yh, y);
  s.r2 = r2.ok() ? *r2 : std::nan("");
  ASSIGN_OR_RETURN(s.coverage, Coverage(lo, hi, y));
  return s;
}

Result<EvalResult> Evaluate(const Dataset& data, const EvalOptions& opts) {
  if (opts.repeats < 1) return Status::Error("evaluate: repeats must be >= 1");
  EvalResult res;
  res.options = opts;
  std::vector<double> rmsle, mae, r2, cov, base;
  std::vector<double> labels = data.Labels();
  for (int rep = 0; rep < opts.repeats; ++rep) {
    uint64_t seed = opts.seed + rep;
    ASSIGN_OR_RETURN(std::vector<Fold> folds, MakeFolds(opts.split, data.group, seed));
    ASSIGN_OR_RETURN(std::vector<RowPrediction> p,
                     CrossValidatedPredictions(data, folds, opts.algo, seed, opts.feature_set));
    ASSIGN_OR_RETURN(Scores s, Score(p));
    rmsle.push_back(s.rmsle);
    mae.push_back(s.mae);
    if (!std::isnan(s.r2)) r2.push_back(s.r2);
    cov.push_back(s.coverage);
    // Baseline: predict the mean training label, same folds.
    std::vector<double> bp, by;
    for (const Fold& f : folds) {
      double m = 0;
      for (size_t i : f.train) m += labels[i];
      m /= f.train.size();
      for (size_t i : f.test) {
        bp.push_back(m);
        by.push_back(labels[i]);
      }
    }
    ASSIGN_OR_RETURN(double b, Rmsle(bp, by));
    base.push_back(b);
    res.predictions.insert(res.predictions.end(), p.begin(), p.end());
  }
  res.rmsle = MeanAndSd(rmsle);
  res.mae = MeanAndSd(mae);
  res.r2 = MeanAndSd(r2);
  res.coverage = MeanAndSd(cov);
  res.mean_baseline_rmsle = MeanAndSd(base).mean;
  for (const std::string& w : data.groups) {
    WorkloadError e;
    e.workload = w;
    std::vector<double> y, yh;
    for (const auto& p : res.predictions)
      if (p.model + "/" + p.dataset == w) {
        y.push_back(p.measured);
        yh.push_back(p.predicted);
      }
    e.predictions = y.size();
    if (y.empty()) continue;  // never drawn into a test set
    e.rmsle = *Rmsle(yh, y);
    e.mae = *Mae(yh, y);
    e.mean_measured = MeanAndSd(y).mean;
    e.mean_predicted = MeanAndSd(yh).mean;
    res.per_workload.push_back(e);
  }
  return res;
}

std::string PredictionPlotSvg(const std::vector<RowPrediction>& preds, const std::string& title) {
  const double w = 560, h = 520, left = 60, top = 40, size = 420;
  auto px = [&](double v) { return left + v / 100 * size; };
  auto py = [&](double v) { return top + size - v / 100 * size; };
  static const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"};
  std::vector<std::string> workloads;
  for (const auto& p : preds) {
    std::string k = p.model + "/" + p.dataset;
    if (std::find(workloads.begin(), workloads.end(), k) == workloads.end()) workloads.push_back(k);
  }
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '<') o += "&lt;";
      else if (c == '>') o += "&gt;";
      else if (c == '&') o += "&amp;";
      else o += c;
    }
    return o;
  };
  char buf[512];
  std::string s;
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
                "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                w + 200, h);
  s += buf;
  s += "<text x=\"" + std::to_string(int(left)) + "\" y=\"24\" font-size=\"13\">" + esc(title) + "</text>\n";
  for (int v = 0; v <= 100; v += 20) {
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>"
                  "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>"
                  "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%d</text>"
                  "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%d</text>\n",
                  px(v), py(0), px(v), py(100), px(0), py(v), px(100), py(v), px(v), py(0) + 16, v,
                  px(0) - 6, py(v) + 4, v);
    s += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n"
                "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">measured GPU utilization (%%)</text>\n"
                "<text transform=\"translate(%g,%g) rotate(-90)\" text-anchor=\"middle\">predicted (%%), bar = "
                "interval</text>\n",
                px(0), py(0), px(100), py(100), px(50), py(0) + 34, left - 38, py(50));
  s += buf;
  for (const auto& p : preds) {
    size_t wi = std::find(workloads.begin(), workloads.end(), p.model + "/" + p.dataset) - workloads.begin();
    const char* c = kColours[wi % (sizeof kColours / sizeof *kColours)];
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-opacity=\"0.35\"/>"
                  "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\" fill-opacity=\"0.8\"/>\n",
                  px(p.measured), py(p.low), px(p.measured), py(p.high), c, px(p.measured), py(p.predicted), c);
    s += buf;
  }
  for (size_t i = 0; i < workloads.size(); ++i) {
    std::snprintf(buf, sizeof buf,
                  "<circle cx=\"%g\" cy=\"%g\" r=\"4\" fill=\"%s\"/><text x=\"%g\" y=\"%g\">%s</text>\n",
                  left + size + 30, top + 10 + 18.0 * i, kColours[i % (sizeof kColours / sizeof *kColours)],
                  left + size + 40, top + 14 + 18.0 * i, esc(workloads[i]).c_str());
    s += buf;
  }
  s += "</svg>\n";
  return s;
}

}  // namespace gpucast
