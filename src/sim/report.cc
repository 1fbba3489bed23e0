#include "sim/report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sim/policy.h"
#include "sim/text.h"

namespace gpucast::sim {

std::vector<UtilPoint> BinSeries(const std::vector<UtilPoint>& steps, double end_s, int bins) {
  std::vector<UtilPoint> out;
  if (bins <= 0 || end_s <= 0) return out;
  double w = end_s / bins;
  std::vector<std::array<double, 3>> acc(bins, {0.0, 0.0, 0.0});
  for (size_t i = 0; i < steps.size(); ++i) {
    double a = steps[i].t_s, b = i + 1 < steps.size() ? steps[i + 1].t_s : end_s;
    a = std::max(0.0, a);
    b = std::min(end_s, b);
    if (b <= a) continue;
    int lo = std::min(bins - 1, static_cast<int>(a / w)), hi = std::min(bins - 1, static_cast<int>(b / w));
    for (int k = lo; k <= hi; ++k) {
      double s = std::max(a, k * w), e = std::min(b, (k + 1) * w);
      if (e > s) {
        acc[k][0] += steps[i].util_pct * (e - s);
        acc[k][1] += steps[i].useful_pct * (e - s);
        acc[k][2] += steps[i].queued * (e - s);
      }
    }
  }
  for (int k = 0; k < bins; ++k) out.push_back({k * w, acc[k][0] / w, acc[k][1] / w, acc[k][2] / w});
  return out;
}

namespace {

std::string Esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else if (c == '\'') o += "&#39;";
    else o += c;
  }
  return o;
}

std::string F(double v, int prec = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

// A --load-factor as given: 2, 1.5.
std::string G(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string Signed(double v, int prec = 1) { return (v >= 0 ? "+" : "") + F(v, prec); }

// The policy palette (Tableau 10: the first eight are the policy rows) and the
// measure palette (near-black and magenta, in none of the policy colours).
// Oracle runs are drawn dashed in their policy's colour.
const std::vector<std::string> kPolicyColors = {"#4e79a7", "#e15759", "#59a14f", "#b07aa1", "#f28e2b",
                                                "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac"};
const std::vector<std::string> kMeasureColors = {"#252525", "#c51b7d"};

// Seconds as hours, the report's one time unit.
std::string Hours(double s, int prec = 1) { return std::isnan(s) ? "" : F(s / 3600, prec); }

// An axis tick: as many decimals as its size needs.
std::string Tick(double v) {
  double a = std::fabs(v);
  return F(v, a == 0 || a >= 10 ? 0 : a >= 1 ? 1 : a >= 0.1 ? 2 : 3);
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> pts;
  std::string color;
  bool dashed = false;
  std::vector<std::array<double, 3>> band;  // (x, low, high): a shaded range (the seeds' spread)
};

// A single point drawn as a shape: 's' square, 't' triangle, 'd' diamond.
struct Marker {
  double x, y;
  std::string color;
  char shape;
  std::string title;  // tooltip
};

std::string Shape(char shape, double x, double y, const std::string& color, const std::string& title) {
  std::ostringstream s;
  const double r = 5;
  if (shape == 's')
    s << "<rect x='" << F(x - r, 1) << "' y='" << F(y - r, 1) << "' width='" << 2 * r << "' height='" << 2 * r << "'";
  else if (shape == 't')
    s << "<polygon points='" << F(x, 1) << ',' << F(y - r - 1, 1) << ' ' << F(x - r, 1) << ',' << F(y + r, 1) << ' '
      << F(x + r, 1) << ',' << F(y + r, 1) << "'";
  else
    s << "<polygon points='" << F(x, 1) << ',' << F(y - r - 1, 1) << ' ' << F(x + r + 1, 1) << ',' << F(y, 1) << ' '
      << F(x, 1) << ',' << F(y + r + 1, 1) << ' ' << F(x - r - 1, 1) << ',' << F(y, 1) << "'";
  s << " fill='" << color << "' stroke='#000' stroke-width='0.6'>";
  if (!title.empty()) s << "<title>" << Esc(title) << "</title>";
  s << (shape == 's' ? "</rect>" : "</polygon>");
  return s.str();
}

// Line chart with id `id`: x in [xmin, xmax] (log10 when logx), y in [0,
// ymax]; bands under the lines; markers on top, their shapes explained by
// marker_legend (shape, text).
std::string Chart(const std::string& id, const std::string& title, const std::string& xlabel,
                  const std::string& ylabel, const std::vector<Series>& lines, double xmin, double xmax, double ymax,
                  bool logx, const std::vector<Marker>& markers = {},
                  const std::vector<std::pair<char, std::string>>& marker_legend = {}) {
  const size_t legend_rows = (lines.size() + 1) / 2 + (marker_legend.empty() ? 0 : 1);
  const double W = 1000, L = 70, R = 20, T = 30, B = 50, LEG = 18.0 * static_cast<double>(legend_rows) + 8;
  const double H = 340 + LEG, P = 340;
  if (!(ymax > 0)) ymax = 1;
  if (!(xmax > xmin)) xmax = xmin + 1;
  auto X = [&](double x) {
    double a = logx ? std::log10(std::max(x, xmin)) : x, lo = logx ? std::log10(xmin) : xmin,
           hi = logx ? std::log10(xmax) : xmax;
    return L + (W - L - R) * (hi > lo ? (a - lo) / (hi - lo) : 0);
  };
  auto Y = [&](double y) { return T + (P - T - B) * (1 - std::clamp(y, 0.0, ymax) / ymax); };
  std::ostringstream s;
  s << "<svg id='" << Esc(id) << "' xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' viewBox='0 0 " << W << " " << H << "' font-family='sans-serif' font-size='12'>\n";
  s << "<text x='" << L << "' y='18' font-size='15' font-weight='bold'>" << Esc(title) << "</text>\n";
  for (int i = 0; i <= 4; ++i) {
    double y = ymax * i / 4;
    s << "<line x1='" << L << "' x2='" << W - R << "' y1='" << Y(y) << "' y2='" << Y(y) << "' stroke='#ddd'/>"
      << "<text x='" << L - 6 << "' y='" << Y(y) + 4 << "' text-anchor='end'>" << Tick(y) << "</text>\n";
  }
  if (logx) {
    for (double d = std::pow(10, std::floor(std::log10(xmin))); d <= xmax * 1.0001; d *= 10) {
      if (d < xmin) continue;
      s << "<line x1='" << X(d) << "' x2='" << X(d) << "' y1='" << T << "' y2='" << P - B << "' stroke='#eee'/>"
        << "<text x='" << X(d) << "' y='" << P - B + 16 << "' text-anchor='middle'>" << Tick(d) << "</text>\n";
    }
  } else {
    for (int i = 0; i <= 5; ++i) {
      double x = xmin + (xmax - xmin) * i / 5;
      s << "<text x='" << X(x) << "' y='" << P - B + 16 << "' text-anchor='middle'>" << Tick(x) << "</text>\n";
    }
  }
  s << "<line x1='" << L << "' x2='" << L << "' y1='" << T << "' y2='" << P - B << "' stroke='#333'/>"
    << "<line x1='" << L << "' x2='" << W - R << "' y1='" << P - B << "' y2='" << P - B << "' stroke='#333'/>\n";
  s << "<text x='" << (L + W - R) / 2 << "' y='" << P - 14 << "' text-anchor='middle'>" << Esc(xlabel) << "</text>\n";
  s << "<text transform='translate(16," << (T + P - B) / 2 << ") rotate(-90)' text-anchor='middle'>" << Esc(ylabel)
    << "</text>\n";
  for (const Series& l : lines) {  // bands first, under every line
    if (l.band.size() < 2) continue;
    s << "<polygon class='band' fill='" << l.color << "' fill-opacity='0.15' stroke='none' points='";
    for (const auto& b : l.band) s << F(X(b[0]), 1) << ',' << F(Y(b[2]), 1) << ' ';
    for (auto it = l.band.rbegin(); it != l.band.rend(); ++it) s << F(X((*it)[0]), 1) << ',' << F(Y((*it)[1]), 1) << ' ';
    s << "'/>\n";
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const Series& l = lines[i];
    s << "<polyline fill='none' stroke='" << l.color << "' stroke-width='1.8'"
      << (l.dashed ? " stroke-dasharray='6,4'" : "") << " points='";
    for (auto& [x, y] : l.pts) s << F(X(x), 1) << ',' << F(Y(y), 1) << ' ';
    s << "'/>\n";
    if (l.pts.size() <= 12)
      for (auto& [x, y] : l.pts)
        s << "<circle cx='" << F(X(x), 1) << "' cy='" << F(Y(y), 1) << "' r='3' fill='" << l.color << "'/>";
    double lx = L + static_cast<double>(i % 2) * 460.0, ly = P + 18.0 * static_cast<double>(i / 2);
    s << "<line x1='" << lx << "' x2='" << lx + 22 << "' y1='" << ly - 4 << "' y2='" << ly - 4 << "' stroke='"
      << l.color << "' stroke-width='3'" << (l.dashed ? " stroke-dasharray='6,4'" : "") << "/>"
      << "<text x='" << lx + 28 << "' y='" << ly << "'>" << Esc(l.name) << "</text>\n";
  }
  for (const Marker& m : markers) s << Shape(m.shape, X(m.x), Y(m.y), m.color, m.title) << "\n";
  double ly = P + 18.0 * static_cast<double>((lines.size() + 1) / 2), lx = L;
  for (const auto& [shape, text] : marker_legend) {
    s << Shape(shape, lx + 6, ly - 4, "#ffffff", "") << "<text x='" << lx + 16 << "' y='" << ly << "'>" << Esc(text)
      << "</text>\n";
    lx += 30 + 7.0 * static_cast<double>(text.size());
  }
  s << "</svg>\n";
  return s.str();
}

// Grouped horizontal bars: per row, one bar per value (values in [0, vmax]),
// an error bar where errs > 0, plus an optional vertical reference line.
std::string Bars(const std::string& id, const std::string& title, const std::vector<std::string>& rows,
                 const std::vector<std::vector<double>>& vals, const std::vector<std::vector<double>>& errs,
                 const std::vector<std::string>& series, const std::vector<std::string>& colors, double vmax,
                 double ref, const std::string& ref_label) {
  const double W = 1000, L = 260, R = 60, T = 40, rowh = 14.0 * static_cast<double>(series.size()) + 10;
  const double H = T + rowh * static_cast<double>(rows.size()) + 50;
  auto X = [&](double v) { return L + (W - L - R) * std::clamp(v / vmax, 0.0, 1.0); };
  std::ostringstream s;
  s << "<svg id='" << Esc(id) << "' xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' viewBox='0 0 " << W << " " << H << "' font-family='sans-serif' font-size='12'>\n";
  s << "<text x='10' y='18' font-size='15' font-weight='bold'>" << Esc(title) << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k)
    s << "<rect x='" << L + 200.0 * static_cast<double>(k) << "' y='24' width='14' height='10' fill='" << colors[k]
      << "'/><text x='" << L + 200.0 * static_cast<double>(k) + 18 << "' y='33'>" << Esc(series[k]) << "</text>\n";
  for (int i = 0; i <= 5; ++i) {
    double v = vmax * i / 5;
    s << "<line x1='" << X(v) << "' x2='" << X(v) << "' y1='" << T << "' y2='" << H - 40 << "' stroke='#eee'/>"
      << "<text x='" << X(v) << "' y='" << H - 26 << "' text-anchor='middle'>" << F(v, 0) << "%</text>\n";
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    double y0 = T + rowh * static_cast<double>(r) + 4;
    s << "<text x='" << L - 8 << "' y='" << y0 + rowh / 2 << "' text-anchor='end'>" << Esc(rows[r]) << "</text>\n";
    for (size_t k = 0; k < series.size(); ++k) {
      double v = vals[r][k], y = y0 + 14.0 * static_cast<double>(k);
      s << "<rect x='" << L << "' y='" << y << "' width='" << X(v) - L << "' height='11' fill='" << colors[k] << "'/>"
        << "<text x='" << X(v) + 4 << "' y='" << y + 10 << "' font-size='11'>" << F(v, 1) << "</text>\n";
      double e = errs[r][k];
      if (e > 0)
        s << "<line x1='" << X(v - e) << "' x2='" << X(v + e) << "' y1='" << y + 5.5 << "' y2='" << y + 5.5
          << "' stroke='#000'/>";
    }
  }
  if (ref > 0)
    s << "<line x1='" << X(ref) << "' x2='" << X(ref) << "' y1='" << T << "' y2='" << H - 40
      << "' stroke='#000' stroke-dasharray='5,3'/><text x='" << X(ref) + 4 << "' y='" << H - 42 << "'>"
      << Esc(ref_label) << "</text>\n";
  s << "</svg>\n";
  return s.str();
}

std::vector<double> Values(const std::vector<const RunData*>& rs, const std::string& key) {
  std::vector<double> v;
  for (const RunData* r : rs) {
    double x = r->Metric(key, NAN);
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

// One value per seed (the mean of that seed's runs): for what every policy
// of a seed shares (the ideal bound, the measured load).
std::vector<double> PerSeed(const std::vector<const RunData*>& rs, const std::string& key) {
  std::map<double, std::pair<double, int>> by;
  for (const RunData* r : rs) {
    double x = r->Metric(key, NAN);
    if (!std::isfinite(x)) continue;
    by[r->seed].first += x;
    by[r->seed].second += 1;
  }
  std::vector<double> v;
  for (auto& [seed, sn] : by) v.push_back(sn.first / sn.second);
  return v;
}

// Mean and sample sd (0 for one value; NaN for none).
std::pair<double, double> MeanSd(const std::vector<double>& v) {
  if (v.empty()) return {NAN, NAN};
  double m = 0, ss = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) ss += (x - m) * (x - m);
  return {m, v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0};
}

double Mean(const std::vector<const RunData*>& rs, const std::string& key) { return MeanSd(Values(rs, key)).first; }

std::string PM(const std::vector<const RunData*>& rs, const std::string& key, double scale, int prec) {
  return PlusMinus(Values(rs, key), scale, prec);
}

// Per-seed paired gain of `a` over `b` in a metric, percent: mean (+- sd over
// more than one seed) over the seeds both have.
std::string Gain(const std::vector<const RunData*>& a, const std::vector<const RunData*>& b, const std::string& key) {
  std::vector<double> g;
  for (const RunData* x : a)
    for (const RunData* y : b)
      if (x->seed == y->seed && y->Metric(key) != 0) g.push_back(100.0 * (x->Metric(key) / y->Metric(key) - 1.0));
  if (g.empty()) return "";
  auto [m, sd] = MeanSd(g);
  std::string s = Signed(m) + "%";
  if (g.size() > 1) s += " &plusmn; " + F(sd, 1);
  return s;
}

// A run's variant: its policy, with the prediction source when it is the
// oracle or an accuracy control (the default predictions go unnamed).
std::string NameOf(const RunData& r) {
  return r.policy + (r.oracle() || r.control() ? " (" + r.predictions + ")" : "");
}

// Min and max of a metric over runs (the seeds' range), scaled.
std::pair<double, double> Range(const std::vector<const RunData*>& rs, const std::string& key, double scale = 1) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : Values(rs, key)) {
    lo = std::min(lo, v / scale);
    hi = std::max(hi, v / scale);
  }
  return {lo, hi};
}

// "n = 3 seeds", "n = 1-3 seeds" from the smallest and largest count.
std::string SeedCount(size_t nmin, size_t nmax) {
  if (nmin == nmax) return "n = " + std::to_string(nmax) + (nmax == 1 ? " seed" : " seeds");
  return "n = " + std::to_string(nmin) + "&ndash;" + std::to_string(nmax) + " seeds";
}

// What the &plusmn; of a table means, or that there is none.
std::string SpreadNote(size_t nmin, size_t nmax) {
  if (nmax <= 1) return "One seed per entry: no &plusmn; (no spread to show).";
  std::string s = "Mean &plusmn; sample sd over " + SeedCount(nmin, nmax) + ".";
  if (nmin <= 1) s += " Entries of one seed show no &plusmn;.";
  return s;
}

bool IsProfiling(const std::string& policy) { return policy.rfind("profiling", 0) == 0; }

bool PredictionDriven(const std::string& policy) {
  const PolicyRow* row = FindPolicy(policy);
  return row != nullptr && row->needs_predictions;
}

}  // namespace

const std::vector<std::string>& PolicyPalette() { return kPolicyColors; }
const std::vector<std::string>& MeasurePalette() { return kMeasureColors; }

std::string PlusMinus(const std::vector<double>& values, double scale, int prec) {
  if (values.empty()) return "";
  auto [m, sd] = MeanSd(values);
  std::string s = F(m / scale, prec);
  if (values.size() > 1) s += " &plusmn; " + F(sd / scale, prec);
  return s;
}

std::string Verdict(const std::vector<const RunData*>& runs, int head_gpus, double head_load_scale) {
  using Point = std::pair<int, double>;  // GPUs, --load-factor
  std::map<Point, std::map<std::string, std::vector<const RunData*>>> at;
  std::set<int> gpus;
  for (const RunData* r : runs) {
    if (r->oracle() || r->control()) continue;
    at[{r->num_gpus, r->Metric("load_scale", 1)}][r->policy].push_back(r);
    gpus.insert(r->num_gpus);
  }
  std::vector<Point> points;
  if (at.count({head_gpus, head_load_scale})) points.push_back({head_gpus, head_load_scale});
  for (auto& [pt, pols] : at)
    if (pt != Point{head_gpus, head_load_scale}) points.push_back(pt);
  std::vector<std::string> clauses;
  for (const Point& pt : points) {
    auto& pols = at[pt];
    std::string pred, base;
    double best_pred = -INFINITY, best_base = -INFINITY;
    std::vector<const RunData*> all;
    for (auto& [pol, rs] : pols) {
      all.insert(all.end(), rs.begin(), rs.end());
      double u = Mean(rs, "useful_work_utilization");
      if (!std::isfinite(u)) continue;
      if (PredictionDriven(pol) && u > best_pred) best_pred = u, pred = pol;
      if (IsProfiling(pol) && u > best_base) best_base = u, base = pol;
    }
    std::string base_text = base + ", the best profiling baseline";
    if (base.empty() && pols.count("slot")) base = "slot", base_text = "slot (no profiling baseline ran)";
    if (pred.empty() || base.empty()) continue;
    std::vector<double> du, dj;  // per seed: useful work relative to the baseline's, percent; JCT difference, h
    for (const RunData* a : pols[pred])
      for (const RunData* b : pols[base]) {
        if (a->seed != b->seed) continue;
        double ua = a->Metric("useful_work_utilization", NAN), ub = b->Metric("useful_work_utilization", NAN);
        if (std::isfinite(ua) && ub > 0) du.push_back(100.0 * (ua / ub - 1.0));
        double ja = a->Metric("jct_mean_s", NAN), jb = b->Metric("jct_mean_s", NAN);
        if (std::isfinite(ja) && std::isfinite(jb)) dj.push_back((ja - jb) / 3600);
      }
    if (du.empty()) continue;
    // +1: every seed above zero, -1: every seed below, 0: they disagree (a tie).
    auto sign = [](const std::vector<double>& v) {
      bool pos = std::all_of(v.begin(), v.end(), [](double x) { return x > 0; });
      bool neg = std::all_of(v.begin(), v.end(), [](double x) { return x < 0; });
      return pos ? 1 : neg ? -1 : 0;
    };
    auto spread = [](const std::vector<double>& v, const std::string& unit) {
      auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      if (v.size() == 1) return std::string("1 seed: no spread");
      return std::to_string(v.size()) + " seeds: " + Signed(*lo) + unit + " to " + Signed(*hi) + unit;
    };
    const double mu = MeanSd(du).first;
    std::string c = "at ";
    if (gpus.size() > 1) c += std::to_string(pt.first) + " GPUs, ";
    c += "--load-factor " + G(pt.second) + " (measured load " + F(Mean(all, "load_factor"), 2) + "), ";
    switch (sign(du)) {
      case 1:
        c += pred + " does " + F(mu) + "% more useful work than " + base_text + " (" + spread(du, "%") + ")";
        break;
      case -1:
        c += "prediction does not win: the best gpucast policy, " + pred + ", does " + F(-mu) +
             "% less useful work than " + base_text + " (" + spread(du, "%") + ")";
        break;
      default:
        c += pred + " and " + base_text + ", tie in useful work within the seeds' spread (" + spread(du, "%") + ")";
    }
    if (!dj.empty()) {
      const double mj = MeanSd(dj).first;
      switch (sign(dj)) {
        case 1: c += ", with a " + F(mj) + " h higher mean JCT"; break;
        case -1: c += ", with a " + F(-mj) + " h lower mean JCT"; break;
        default: c += ", with mean JCTs that tie within the seeds' spread (" + spread(dj, " h") + ")";
      }
    }
    // The headroom: how much more useful work than the baseline any policy could do (the ideal bound over it).
    std::vector<double> head;
    for (const RunData* b : pols[base]) {
      const double ub = b->Metric("useful_work_utilization", NAN), ib = b->Metric("ideal_work_utilization", NAN);
      if (std::isfinite(ub) && std::isfinite(ib) && ub > 0) head.push_back(100.0 * (ib / ub - 1.0));
    }
    if (!head.empty()) c += " (headroom: the ideal bound is " + F(MeanSd(head).first) + "% above " + base + ")";
    clauses.push_back(c);
  }
  std::string out;
  for (const std::string& c : clauses) out += (out.empty() ? "" : "; ") + c;
  if (out.empty()) return out;
  out[0] = 'A';
  return out + ".";
}
double RunData::Metric(const std::string& key, double fallback) const {
  for (auto& [k, v] : metrics)
    if (k == key) return v;
  return fallback;
}

Result<RunData> LoadRun(const std::string& dir) {
  RunData r;
  r.dir = dir;
  auto sj = ReadFile(dir + "/summary.json");
  if (!sj.ok()) return sj.status();
  r.summary_json = *sj;
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(*sj);
  } catch (const std::exception& e) {
    return Status::Error(dir + "/summary.json: " + e.what());
  }
  if (!j.is_object()) return Status::Error(dir + "/summary.json: want a JSON object");
  for (const char* k : {"policy", "trace"})
    if (!j.contains(k) || !j[k].is_string())
      return Status::Error(dir + "/summary.json: field '" + k + "': want a string");
  if (!j.contains("num_gpus") || !j["num_gpus"].is_number_integer() || j["num_gpus"].get<int64_t>() < 1 ||
      j["num_gpus"].get<int64_t>() > 10000000)
    return Status::Error(dir + "/summary.json: field 'num_gpus': want an integer in [1, 10000000]");
  r.policy = j["policy"].get<std::string>();
  r.trace = j["trace"].get<std::string>();
  r.num_gpus = static_cast<int>(j["num_gpus"].get<int64_t>());
  r.predictions = j.contains("predictions") && j["predictions"].is_string() ? j["predictions"].get<std::string>() : "";
  r.bound_kind = j.contains("bound_kind") && j["bound_kind"].is_string() ? j["bound_kind"].get<std::string>() : "";
  r.seed = j.contains("seed") && j["seed"].is_number() ? j["seed"].get<double>() : 0;
  r.label = NameOf(r) + " (" + r.trace + ", " + std::to_string(r.num_gpus) + " GPUs)";
  for (auto& [k, v] : j.items())
    if (v.is_number()) r.metrics.push_back({k, v.get<double>()});
  auto uc = ReadFile(dir + "/utilization.csv");
  if (!uc.ok()) return uc.status();
  auto ul = Lines(*uc);
  for (size_t i = 1; i < ul.size(); ++i) {
    if (ul[i].empty()) continue;
    auto f = Split(ul[i], ',');
    UtilPoint p{0, 0, 0, 0};
    bool ok = f.size() == 2 || f.size() == 4;
    double* dst[4] = {&p.t_s, &p.util_pct, &p.useful_pct, &p.queued};
    for (size_t c = 0; ok && c < f.size(); ++c) {
      auto v = ParseDouble(f[c]);
      if (!v) ok = false;
      else *dst[c] = *v;
    }
    if (!ok)
      return Status::Error(dir + "/utilization.csv: line " + std::to_string(i + 1) + ": want t_s,util_pct[,useful_pct,queued] numbers");
    r.util.push_back(p);
  }
  auto jc = ReadFile(dir + "/jobs.csv");
  if (!jc.ok()) return jc.status();
  auto jl = Lines(*jc);
  if (jl.empty()) return Status::Error(dir + "/jobs.csv: empty file");
  auto h = Split(jl[0], ',');
  int cs = ColumnIndex(h, "submit_s"), ce = ColumnIndex(h, "end_s");
  int cw = ColumnIndex(h, "workload"), ct = ColumnIndex(h, "true_util"), cp = ColumnIndex(h, "predicted_util");
  if (cs < 0 || ce < 0) return Status::Error(dir + "/jobs.csv: line 1: want columns submit_s,end_s");
  for (size_t i = 1; i < jl.size(); ++i) {
    if (jl[i].empty()) continue;
    auto f = Split(jl[i], ',');
    if (static_cast<int>(f.size()) <= std::max(cs, ce)) return Status::Error(dir + "/jobs.csv: line " + std::to_string(i + 1) + ": too few fields");
    auto s = ParseDouble(f[cs]), e = ParseDouble(f[ce]);
    if (s && e) r.jct_s.push_back(*e - *s);
    if (cw >= 0 && ct >= 0 && cp >= 0 && static_cast<int>(f.size()) > std::max({cw, ct, cp})) {
      auto t = ParseDouble(f[ct]), p = ParseDouble(f[cp]);
      if (t && p) r.workloads[std::string(f[cw])] = {*t, *p};
    }
  }
  std::sort(r.jct_s.begin(), r.jct_s.end());
  return r;
}


Status CheckOneDefaultSource(const std::vector<RunData>& runs) {
  const RunData* first = nullptr;
  for (const RunData& r : runs) {
    if (r.predictions == "unused" || r.predictions.empty() || r.oracle() || r.control()) continue;
    if (!first) {
      first = &r;
    } else if (r.predictions != first->predictions) {
      return Status::Error("runs of two default prediction sources, " + first->predictions + " (" + first->dir +
                           ") and " + r.predictions + " (" + r.dir +
                           "): a report compares one (an explicit --predictions ALGO is not an accuracy control); "
                           "give the other's runs to another report");
    }
  }
  return Status::Ok();
}

std::string RenderReport(const std::vector<RunData>& runs, const std::string& interference_json) {
  // Policies in the table's order (slot first), then oracle variants.
  std::vector<std::string> order;
  for (const PolicyRow& p : Policies()) order.push_back(p.name);
  auto rank = [&](const RunData& r) {
    auto it = std::find(order.begin(), order.end(), r.policy);
    return static_cast<int>(it - order.begin()) + (r.oracle() ? 100 : 0);
  };
  std::map<std::string, std::string> color;
  for (size_t i = 0; i < order.size(); ++i) color[order[i]] = kPolicyColors[i % kPolicyColors.size()];
  // Configurations: (trace, GPUs, --load-factor), in the order the runs came.
  // The headline is the one with the most runs (ties: the first given).
  using Key = std::tuple<std::string, int, double>;
  std::vector<std::pair<Key, std::vector<const RunData*>>> configs;
  bool any_plain = std::any_of(runs.begin(), runs.end(), [](const RunData& r) { return !r.control(); });
  for (const RunData& r : runs) {
    if (any_plain && r.control()) continue;  // accuracy controls have their own section
    Key key{r.trace, r.num_gpus, r.Metric("load_scale", 1)};
    auto it = std::find_if(configs.begin(), configs.end(), [&](auto& c) { return c.first == key; });
    if (it == configs.end()) configs.push_back({key, {&r}});
    else it->second.push_back(&r);
  }
  auto head = configs.begin();
  for (auto it = configs.begin(); it != configs.end(); ++it)
    if (it->second.size() > head->second.size()) head = it;
  const std::string& head_trace = std::get<0>(head->first);
  // Within the headline configuration: policy variant -> runs (over seeds).
  std::vector<std::pair<std::string, std::vector<const RunData*>>> groups;
  {
    std::vector<const RunData*> rs = head->second;
    std::stable_sort(rs.begin(), rs.end(), [&](auto* a, auto* b) { return rank(*a) < rank(*b); });
    for (const RunData* r : rs) {
      std::string n = NameOf(*r);
      if (groups.empty() || groups.back().first != n) groups.push_back({n, {}});
      groups.back().second.push_back(r);
    }
  }
  const std::vector<const RunData*>* slot = nullptr;
  const std::vector<const RunData*>* prof = nullptr;  // the best profiling baseline
  std::string prof_name;
  for (auto& [name, rs] : groups) {
    if (name == "slot") slot = &rs;
    if (IsProfiling(name) && (!prof || Mean(rs, "useful_work_utilization") > Mean(*prof, "useful_work_utilization")))
      prof = &rs, prof_name = name;
  }
  size_t nmin = SIZE_MAX, nmax = 0;
  for (auto& g : groups) nmin = std::min(nmin, g.second.size()), nmax = std::max(nmax, g.second.size());
  size_t capacity_runs = 0;
  for (const RunData* r : head->second) capacity_runs += r->bound_kind == "capacity";

  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>gpucast simulation report</title>\n"
    << "<style>body{font-family:sans-serif;margin:24px;max-width:1060px;color:#222}"
    << "table{border-collapse:collapse;font-size:13px;margin:8px 0}"
    << "td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f3f3f3}"
    << "td:first-child,th:first-child{text-align:left}.note{color:#555;font-size:13px}"
    << "#verdict{font-size:16px;background:#f6f6f6;border-left:4px solid #252525;padding:8px 12px}"
    << ".sw{display:inline-block;width:10px;height:10px;margin-right:5px}</style></head><body>\n"
    << "<h1>gpucast simulation report</h1>\n";
  {
    std::vector<const RunData*> plain;
    for (const RunData& r : runs)
      if (r.trace == head_trace) plain.push_back(&r);
    std::string v = Verdict(plain, std::get<1>(head->first), std::get<2>(head->first));
    h << "<p id='verdict'><b>Verdict:</b> "
      << (v.empty() ? "none: no load point of " + Esc(head_trace) +
                          " has a prediction-driven policy with its default predictions beside a profiling baseline "
                          "(or slot) on a common seed."
                    : Esc(v))
      << "</p>\n<p class='note'>Computed from the runs below: at each load point, the prediction-driven policy "
      << "(default predictions; oracle and accuracy controls left out) with the most useful work against the "
      << "profiling baseline with the most useful work, per seed on the same arrivals; a difference whose seeds "
      << "disagree in sign is a tie within the seeds' spread. Measured load = demand / capacity over the "
      << "measurement window.</p>\n";
  }
  h << "<p><b>" << Esc(head_trace) << "</b> on <b>" << std::get<1>(head->first) << " GPUs</b>, arrivals compressed "
    << "&times;" << F(std::get<2>(head->first), 2) << " (<code>--load-factor</code>; measured load "
    << F(Mean(head->second, "load_factor"), 2) << ": demand / capacity over the measurement window of "
    << Hours(Mean(head->second, "window_s")) << " h; capacity-bound in " << capacity_runs << " of "
    << head->second.size() << " runs), " << SeedCount(nmin, nmax) << " per policy. Ideal bound on useful work: "
    << PlusMinus(PerSeed(head->second, "ideal_work_utilization"), 1, 1) << "%.</p>\n";
  h << "<p class='note'><b>Useful work</b> = job progress made within the measurement window (first submission to "
       "the last one at which the ideal scheduler still has a backlog, else the last submission), weighted by each "
       "job's own GPU utilization and GPU count, as a share of the cluster over that window: what a GPU really got done. "
       "<b>Busy time</b> (the paper's cluster utilization) counts a shared GPU busy at its device utilization "
       "whatever its jobs' progress; it rewards stacking jobs, not finishing them. The ideal bound is the most any "
       "policy could do on the window (docs/simulator.md). Times are in hours throughout.</p>\n";
  // Headline table.
  h << "<h2 id='headline'>Headline</h2>\n<table><tr><th>policy</th><th>useful work %</th><th>vs slot</th>"
    << "<th>vs best profiling" << (prof ? " (" + Esc(prof_name) + ")" : std::string()) << "</th>"
    << "<th>busy time % (paper)</th><th>mean JCT (h)</th><th>p95 JCT (h)</th><th>mean slowdown</th>"
    << "<th>mean queue (h)</th><th>makespan (h)</th><th>OOM events</th><th>profiling GPU-h</th><th>migrations</th>"
    << "<th>prediction MAE, points</th></tr>\n";
  for (auto& [name, rs] : groups) {
    const RunData& r0 = *rs.front();
    h << "<tr><td><span class='sw' style='background:" << color[r0.policy] << "'></span>" << Esc(name) << "</td><td><b>"
      << PM(rs, "useful_work_utilization", 1, 1) << "</b></td><td>"
      << (slot ? Gain(rs, *slot, "useful_work_utilization") : "") << "</td><td>"
      << (prof ? Gain(rs, *prof, "useful_work_utilization") : "") << "</td><td>"
      << PM(rs, "cluster_utilization", 1, 1) << "</td><td>" << PM(rs, "jct_mean_s", 3600, 1) << "</td><td>"
      << PM(rs, "jct_p95_s", 3600, 1) << "</td><td>" << PM(rs, "mean_slowdown", 1, 2) << "</td><td>"
      << PM(rs, "queue_mean_s", 3600, 1) << "</td><td>" << PM(rs, "makespan_s", 3600, 0) << "</td><td>"
      << PM(rs, "oom_events", 1, 0) << "</td><td>" << PM(rs, "profiling_gpu_s", 3600, 0) << "</td><td>"
      << PM(rs, "migrations", 1, 0) << "</td><td>"
      << (r0.predictions == "unused" || r0.oracle() ? "&mdash;" : PM(rs, "prediction_mae", 1, 1)) << "</td></tr>\n";
  }
  h << "</table>\n<p class='note'>" << SpreadNote(nmin, nmax)
    << " Gains are per-seed paired ratios of useful work (the same arrivals); the best profiling baseline is the "
       "profiling policy with the most useful work here. (oracle) = the true utilization given as the prediction: "
       "the most prediction could give. Prediction MAE = mean absolute error of the predicted utilization over "
       "the workloads, percent points.</p>\n";
  // Load sweep: every load point (GPUs, --load-factor) of the headline trace,
  // at its measured load (demand / capacity over the window, mean over
  // seeds); lines are means, bands the seeds' range.
  using Point = std::pair<int, double>;  // GPUs, --load-factor
  auto variant_order = [&](const std::string& a, const std::string& b, const auto& m) {
    return rank(*m.at(a).begin()->second.front()) < rank(*m.at(b).begin()->second.front());
  };
  {
    std::map<Point, std::vector<const RunData*>> all;
    std::map<std::string, std::map<Point, std::vector<const RunData*>>> by;  // variant -> point -> runs
    for (auto& [key, rs] : configs) {
      if (std::get<0>(key) != head_trace) continue;
      Point pt{std::get<1>(key), std::get<2>(key)};
      for (const RunData* r : rs) {
        by[NameOf(*r)][pt].push_back(r);
        all[pt].push_back(r);
      }
    }
    if (all.size() > 1) {
      std::map<Point, double> x;
      double lo = INFINITY, hi = -INFINITY, umax = 10, jmax = 1;
      size_t smin = SIZE_MAX, smax = 0;
      for (auto& [pt, rs] : all) {
        x[pt] = Mean(rs, "load_factor");
        lo = std::min(lo, x[pt]);
        hi = std::max(hi, x[pt]);
      }
      std::vector<std::string> names;
      for (auto& [name, m] : by) names.push_back(name);
      std::stable_sort(names.begin(), names.end(),
                       [&](const std::string& a, const std::string& b) { return variant_order(a, b, by); });
      std::vector<Series> useful, jct;
      for (const std::string& name : names) {
        const RunData& r0 = *by[name].begin()->second.front();
        Series u{name, {}, color[r0.policy], r0.oracle(), {}}, j{name, {}, color[r0.policy], r0.oracle(), {}};
        for (auto& [pt, rs] : by[name]) {
          smin = std::min(smin, rs.size());
          smax = std::max(smax, rs.size());
          auto [ul, uh] = Range(rs, "useful_work_utilization");
          auto [jl, jh] = Range(rs, "jct_mean_s", 3600);
          u.pts.push_back({x[pt], Mean(rs, "useful_work_utilization")});
          j.pts.push_back({x[pt], Mean(rs, "jct_mean_s") / 3600});
          if (rs.size() > 1) {
            u.band.push_back({x[pt], ul, uh});
            j.band.push_back({x[pt], jl, jh});
          }
          umax = std::max(umax, uh);
          jmax = std::max(jmax, jh);
        }
        std::sort(u.pts.begin(), u.pts.end());
        std::sort(j.pts.begin(), j.pts.end());
        std::sort(u.band.begin(), u.band.end());
        std::sort(j.band.begin(), j.band.end());
        useful.push_back(std::move(u));
        jct.push_back(std::move(j));
      }
      Series ideal{"ideal bound", {}, kMeasureColors[0], true, {}};
      for (auto& [pt, rs] : all) {
        ideal.pts.push_back({x[pt], Mean(rs, "ideal_work_utilization")});
        umax = std::max(umax, ideal.pts.back().second);
      }
      std::sort(ideal.pts.begin(), ideal.pts.end());
      useful.push_back(std::move(ideal));
      const std::string band = smax > 1 ? "line = mean, band = min-max over " + SeedCount(smin, smax)
                                        : "one seed per point: no band";
      h << "<h2 id='load-sweep'>Load sweep (" << Esc(head_trace) << ")</h2>\n<p class='note'>Each point is one "
        << "(GPUs, <code>--load-factor</code>) of the runs given, placed at its measured load (demand / capacity "
        << "over the measurement window, mean over seeds). "
        << (smax > 1 ? "Lines: mean over seeds; shaded bands: the seeds' range (min to max; each seed resamples "
                       "arrivals, workloads and noise), " + SeedCount(smin, smax) + ". "
                     : std::string("One seed per point: no bands. "))
        << "Dashed: oracle predictions; black dashed: the ideal bound.</p>\n"
        << Chart("load-sweep-useful", "Useful work vs load (" + band + ")", "measured load (demand / capacity)",
                 "useful work (%)", useful, lo, hi, std::ceil(umax / 20) * 20, false)
        << Chart("load-sweep-jct", "Mean JCT vs load (" + band + ")", "measured load (demand / capacity)",
                 "mean JCT (h)", jct, lo, hi, jmax * 1.05, false);
      h << "<table><tr><th>--load-factor</th><th>GPUs</th><th>measured load</th><th>capacity-bound runs</th>"
        << "<th>ideal %</th>";
      for (const std::string& name : names) h << "<th>" << Esc(name) << "<br>useful % / mean JCT h</th>";
      h << "</tr>\n";
      for (auto& [pt, rs] : all) {
        size_t cap = 0;
        for (const RunData* r : rs) cap += r->bound_kind == "capacity";
        h << "<tr><td>" << F(pt.second, 2) << "</td><td>" << pt.first << "</td><td>" << F(x[pt], 2) << "</td><td>"
          << cap << " / " << rs.size() << "</td><td>" << F(Mean(rs, "ideal_work_utilization"), 1) << "</td>";
        for (const std::string& name : names) {
          auto it = by[name].find(pt);
          h << "<td>";
          if (it != by[name].end())
            h << PM(it->second, "useful_work_utilization", 1, 1) << " / " << PM(it->second, "jct_mean_s", 3600, 1);
          h << "</td>";
        }
        h << "</tr>\n";
      }
      h << "</table>\n<p class='note'>" << SpreadNote(smin, smax) << "</p>\n";
    }
  }
  // Value of accuracy: at each (GPUs, --load-factor) of the headline trace
  // where accuracy controls ran, each prediction-driven policy's useful work
  // and mean JCT against its predictions' MAE: lines through oracle (MAE 0)
  // and every noisy:SD; the default, constant:U and shuffled sources marked.
  {
    auto src_order = [](const std::string& src) {
      auto num = [&](size_t from) { return ParseDouble(std::string_view(src).substr(from)).value_or(0.0); };
      if (src == "oracle") return std::make_pair(0, 0.0);
      if (src.rfind("noisy:", 0) == 0) return std::make_pair(1, num(6));
      if (src.rfind("constant:", 0) == 0) return std::make_pair(2, num(9));
      if (src.rfind("shuffled", 0) == 0) return std::make_pair(3, 0.0);
      return std::make_pair(4, 0.0);
    };
    auto shape_of = [&](const std::string& src) {
      int k = src_order(src).first;
      return k == 2 ? 't' : k == 3 ? 'd' : 's';
    };
    // point -> policy -> prediction source -> runs
    std::map<Point, std::map<std::string, std::map<std::string, std::vector<const RunData*>>>> acc;
    for (const RunData& r : runs)
      if (r.trace == head_trace && r.predictions != "unused" && !r.predictions.empty())
        acc[{r.num_gpus, r.Metric("load_scale", 1)}][r.policy][r.predictions].push_back(&r);
    for (auto& [pt, pols] : acc) {
      bool controls = false;
      std::vector<std::string> sources, policies;
      for (auto& [pol, srcs] : pols) {
        policies.push_back(pol);
        for (auto& [src, rs] : srcs) {
          controls = controls || rs.front()->control();
          if (std::find(sources.begin(), sources.end(), src) == sources.end()) sources.push_back(src);
        }
      }
      if (!controls) continue;
      std::stable_sort(sources.begin(), sources.end(),
                       [&](const std::string& a, const std::string& b) { return src_order(a) < src_order(b); });
      std::stable_sort(policies.begin(), policies.end(), [&](const std::string& a, const std::string& b) {
        return std::find(order.begin(), order.end(), a) < std::find(order.begin(), order.end(), b);
      });
      auto mae = [](const std::string& src, const std::vector<const RunData*>& rs) {
        return src == "oracle" ? 0.0 : Mean(rs, "prediction_mae");
      };
      std::vector<Series> useful, jct;
      std::vector<Marker> mu, mj;
      std::set<char> shapes_used;
      double xmax = 1, umax = 10, jmax = 1;
      size_t smin = SIZE_MAX, smax = 0;
      for (const std::string& pol : policies) {
        Series u{pol, {}, color[pol], false, {}}, j{pol, {}, color[pol], false, {}};
        for (const std::string& src : sources) {
          auto it = pols[pol].find(src);
          if (it == pols[pol].end()) continue;
          const auto& rs = it->second;
          double m = mae(src, rs);
          if (!std::isfinite(m)) continue;
          smin = std::min(smin, rs.size());
          smax = std::max(smax, rs.size());
          auto [ul, uh] = Range(rs, "useful_work_utilization");
          auto [jl, jh] = Range(rs, "jct_mean_s", 3600);
          double um = Mean(rs, "useful_work_utilization"), jm = Mean(rs, "jct_mean_s") / 3600;
          xmax = std::max(xmax, m);
          umax = std::max(umax, uh);
          jmax = std::max(jmax, jh);
          if (src == "oracle" || src.rfind("noisy:", 0) == 0) {
            u.pts.push_back({m, um});
            j.pts.push_back({m, jm});
            if (rs.size() > 1) {
              u.band.push_back({m, ul, uh});
              j.band.push_back({m, jl, jh});
            }
          } else {
            char sh = shape_of(src);
            shapes_used.insert(sh);
            std::string t = pol + ", " + src + ": MAE " + F(m) + " points";
            mu.push_back({m, um, color[pol], sh, t + ", useful work " + F(um) + "%"});
            mj.push_back({m, jm, color[pol], sh, t + ", mean JCT " + F(jm) + " h"});
          }
        }
        std::sort(u.pts.begin(), u.pts.end());
        std::sort(u.band.begin(), u.band.end());
        std::sort(j.pts.begin(), j.pts.end());
        std::sort(j.band.begin(), j.band.end());
        if (u.pts.empty()) continue;
        useful.push_back(std::move(u));
        jct.push_back(std::move(j));
      }
      std::vector<std::pair<char, std::string>> legend;
      for (auto [sh, text] : std::vector<std::pair<char, std::string>>{
               {'s', "default predictions"}, {'t', "constant:U"}, {'d', "shuffled"}})
        if (shapes_used.count(sh)) legend.push_back({sh, text});
      const std::string id = std::to_string(pt.first) + "-" + F(pt.second, 2);
      const std::string band = smax > 1 ? "band = min-max over " + SeedCount(smin, smax) : "one seed: no band";
      h << "<h2 id='accuracy-" << id << "'>Value of accuracy (" << Esc(head_trace) << ", " << pt.first
        << " GPUs, --load-factor " << F(pt.second, 2) << ")</h2>\n<p class='note'>Each prediction-driven policy "
        << "under oracle predictions (prediction MAE 0) and <code>noisy:SD</code> (the oracle with seeded noise in log1p "
        << "of sd SD/51: SD points at 50% utilization), placed at the predictions' measured MAE (mean over seeds); lines: mean over seeds"
        << (smax > 1 ? "; shaded bands: the seeds' range (min to max), " + SeedCount(smin, smax)
                     : std::string("; one seed: no bands"))
        << ". Marked at their own MAE: the default predictions (square), <code>constant:U</code> (triangle) and "
        << "<code>shuffled</code> (diamond), in the policy's colour. The table lists every source.</p>\n"
        << Chart("accuracy-useful-" + id, "Useful work vs prediction MAE (" + band + ")", "prediction MAE, points",
                 "useful work (%)", useful, 0, std::ceil(xmax * 1.05), std::ceil(umax / 20) * 20, false, mu, legend)
        << Chart("accuracy-jct-" + id, "Mean JCT vs prediction MAE (" + band + ")", "prediction MAE, points",
                 "mean JCT (h)", jct, 0, std::ceil(xmax * 1.05), jmax * 1.05, false, mj, legend);
      h << "<table><tr><th>predictions</th><th>prediction MAE, points</th>";
      for (const std::string& pol : policies) h << "<th>" << Esc(pol) << "<br>useful % / mean JCT h</th>";
      h << "</tr>\n";
      for (const std::string& src : sources) {
        std::string m;
        for (const std::string& pol : policies) {
          auto it = pols[pol].find(src);
          if (it != pols[pol].end() && m.empty()) m = F(mae(src, it->second), 1);
        }
        h << "<tr><td>" << Esc(src) << "</td><td>" << m << "</td>";
        for (const std::string& pol : policies) {
          auto it = pols[pol].find(src);
          h << "<td>";
          if (it != pols[pol].end())
            h << PM(it->second, "useful_work_utilization", 1, 1) << " / " << PM(it->second, "jct_mean_s", 3600, 1);
          h << "</td>";
        }
        h << "</tr>\n";
      }
      h << "</table>\n<p class='note'>" << SpreadNote(smin, smax) << "</p>\n";
    }
  }
  // Useful work beside busy time.
  {
    std::vector<std::string> rows;
    std::vector<std::vector<double>> vals, errs;
    double vmax = 10;
    for (auto& [name, rs] : groups) {
      auto u = MeanSd(Values(rs, "useful_work_utilization")), b = MeanSd(Values(rs, "cluster_utilization"));
      rows.push_back(name);
      vals.push_back({u.first, b.first});
      errs.push_back({u.second, b.second});
      vmax = std::max({vmax, u.first, b.first});
    }
    double ideal = Mean(head->second, "ideal_work_utilization");
    vmax = std::ceil(std::max(vmax, std::isfinite(ideal) ? ideal : 0.0) / 10) * 10;
    h << "<h2 id='useful-vs-busy'>Useful work beside busy time</h2>\n"
      << Bars("useful-vs-busy-bars",
              "Useful work vs busy time (% of the cluster, mean over " + SeedCount(nmin, nmax) +
                  (nmax > 1 ? "; whisker = sd)" : ")"),
              rows, vals, errs, {"useful work", "busy time (paper's metric)"}, kMeasureColors, vmax, ideal,
              "ideal bound");
  }
  // Over time: every seed of each variant on one grid of hours; line = mean
  // over seeds, band = their range.
  {
    std::vector<Series> useful, queue;
    double tmax = 0, qmax = 1;
    for (auto& [name, rs] : groups)
      for (const RunData* r : rs)
        if (!r->util.empty()) tmax = std::max(tmax, r->util.back().t_s);
    if (tmax <= 0) tmax = 3600;
    const int bins = 200;
    for (auto& [name, rs] : groups) {
      const RunData& r0 = *rs.front();
      Series u{name, {}, color[r0.policy], r0.oracle(), {}}, q{name, {}, color[r0.policy], r0.oracle(), {}};
      std::vector<std::vector<UtilPoint>> per_seed;
      for (const RunData* r : rs)
        if (!r->util.empty()) per_seed.push_back(BinSeries(r->util, tmax, bins));
      if (per_seed.empty()) continue;
      for (int k = 0; k < bins; ++k) {
        double t = (k + 0.5) * tmax / bins / 3600, us = 0, qs = 0, ul = INFINITY, uh = -INFINITY, ql = INFINITY,
               qh = -INFINITY;
        for (const auto& b : per_seed) {
          us += b[k].useful_pct;
          qs += b[k].queued;
          ul = std::min(ul, b[k].useful_pct), uh = std::max(uh, b[k].useful_pct);
          ql = std::min(ql, b[k].queued), qh = std::max(qh, b[k].queued);
        }
        double n = static_cast<double>(per_seed.size());
        u.pts.push_back({t, us / n});
        q.pts.push_back({t, qs / n});
        if (per_seed.size() > 1) {
          u.band.push_back({t, ul, uh});
          q.band.push_back({t, ql, qh});
        }
        qmax = std::max(qmax, qh);
      }
      useful.push_back(std::move(u));
      queue.push_back(std::move(q));
    }
    const std::string band =
        nmax > 1 ? "line = mean, band = min-max over " + SeedCount(nmin, nmax) : "one seed: no band";
    h << "<h2 id='over-time'>Over time</h2>\n<p class='note'>Every seed's run, time-binned on one grid ("
      << bins << " bins of " << F(tmax / bins / 3600, 2) << " h); "
      << (nmax > 1 ? "lines: mean over the seeds, shaded bands: their range (min to max)."
                   : "one seed: no band.")
      << " A run that has finished counts as 0 after its end.</p>\n"
      << Chart("over-time-useful", "Useful work rate (% of the cluster; " + band + ")", "time since first submit (h)",
               "useful work (%)", useful, 0, tmax / 3600, 100, false)
      << Chart("over-time-queue", "Queue length (jobs waiting; " + band + ")", "time since first submit (h)",
               "jobs queued", queue, 0, tmax / 3600, qmax * 1.05, false);
  }
  // JCT CDFs: every seed's finished jobs pooled.
  {
    std::vector<Series> lines;
    double jmin = INFINITY, jmax = 0;
    std::vector<std::vector<double>> pooled;
    for (auto& [name, rs] : groups) {
      std::vector<double> all;
      for (const RunData* r : rs)
        for (double s : r->jct_s) all.push_back(s / 3600);
      std::sort(all.begin(), all.end());
      if (!all.empty()) {
        jmin = std::min(jmin, std::max(1e-3, all.front()));
        jmax = std::max(jmax, all.back());
      }
      pooled.push_back(std::move(all));
    }
    if (!(jmin < jmax)) jmin = 1e-3, jmax = std::max(jmax, 1.0);
    for (size_t g = 0; g < groups.size(); ++g) {
      const RunData& r = *groups[g].second.front();
      const std::vector<double>& all = pooled[g];
      Series s{groups[g].first, {}, color[r.policy], r.oracle(), {}};
      size_t n = all.size(), step = std::max<size_t>(1, n / 400);
      for (size_t i = 0; i < n; i += step) s.pts.push_back({all[i], static_cast<double>(i + 1) / n});
      if (n) s.pts.push_back({all.back(), 1.0});
      lines.push_back(std::move(s));
    }
    h << "<h2 id='jct'>Job completion time</h2>\n<p class='note'>Finished jobs of every seed pooled ("
      << SeedCount(nmin, nmax) << ").</p>\n"
      << Chart("jct-cdf", "CDF of job completion time (end - submit; every seed pooled)", "JCT (h, log scale)",
               "fraction of jobs", lines, jmin, jmax, 1.0, true);
  }
  // Predicted vs true utilization per workload (from a run that used the default predictions).
  for (auto& [name, rs] : groups) {
    const RunData& r = *rs.front();
    if (r.predictions == "unused" || r.oracle() || r.control() || r.workloads.empty()) continue;
    std::vector<std::pair<std::string, std::pair<double, double>>> wl(r.workloads.begin(), r.workloads.end());
    std::sort(wl.begin(), wl.end(), [](auto& a, auto& b) {
      return std::fabs(a.second.second - a.second.first) > std::fabs(b.second.second - b.second.first);
    });
    h << "<h2 id='workloads'>Predicted vs true utilization per workload</h2>\n<p class='note'>Predictions <code>"
      << Esc(r.predictions) << "</code> (each workload predicted by a model that never saw it), largest error first. "
      << "A job's predicted utilization is what predictive policies pack by.</p>\n<table><tr><th>workload</th>"
      << "<th>true %</th><th>predicted %</th><th>predicted &minus; true, points</th><th></th></tr>\n";
    for (auto& [w, tp] : wl) {
      double err = tp.second - tp.first;
      h << "<tr><td>" << Esc(w) << "</td><td>" << F(tp.first, 1) << "</td><td>" << F(tp.second, 1) << "</td><td>"
        << Signed(err) << "</td><td style='text-align:left'><svg width='210' height='10'>"
        << "<rect x='0' y='2' width='" << F(2 * std::clamp(tp.first, 0.0, 100.0), 1) << "' height='3' fill='"
        << kMeasureColors[0] << "'/><rect x='0' y='6' width='" << F(2 * std::clamp(tp.second, 0.0, 100.0), 1)
        << "' height='3' fill='" << kMeasureColors[1] << "'/></svg></td></tr>\n";
    }
    h << "</table><p class='note'>Bars (0&ndash;100%): <span class='sw' style='background:" << kMeasureColors[0]
      << "'></span>true, <span class='sw' style='background:" << kMeasureColors[1]
      << "'></span>predicted (colours that no policy uses).</p>\n";
    break;
  }
  // Interference model validation.
  if (!interference_json.empty()) {
    try {
      auto j = nlohmann::json::parse(interference_json);
      h << "<h2 id='interference'>Interference model validation</h2>\n<p class='note'>The co-location physics' rate error on "
           "measured pairs, leave one group out (Lucid: one model; Gavel: one job family; every pair involving it "
           "held out): MAE (bias = mean model &minus; measured) of each job's rate relative to running alone. "
           "RTX 3090 runs use the form chosen on Lucid's pairs: <b>"
        << Esc(j["params"].value("form", std::string("?"))) << "</b> (docs/simulator.md).</p>\n"
        << "<table><tr><th>source, GPU</th><th>groups</th><th>pairs used</th><th>no slowdown</th>"
           "<th>time-slicing bound</th><th>selected (nested)</th><th>chosen on all pairs</th></tr>\n";
      auto cell = [&](const nlohmann::json& t, const char* k) {
        if (!t.contains(k)) return std::string();
        return F(t[k]["mae"].get<double>(), 3) + " (" + (t[k]["bias"].get<double>() >= 0 ? "+" : "") +
               F(t[k]["bias"].get<double>(), 3) + ")";
      };
      if (j.contains("tables"))
        for (const auto& t : j["tables"])
          h << "<tr><td>" << Esc(t.value("source", std::string())) << " " << Esc(t.value("gpu", std::string()))
            << "</td><td>" << t.value("groups", 0) << "</td><td>" << t.value("pairs_used", 0) << " / "
            << t.value("pairs_total", 0) << "</td><td>" << cell(t, "no_slowdown") << "</td><td>"
            << cell(t, "time_slicing_bound") << "</td><td>" << cell(t, "selected_nested") << "</td><td>"
            << (t.contains("chosen") ? Esc(t["chosen"].value("form", std::string())) : "") << "</td></tr>\n";
      h << "</table>\n";
    } catch (const std::exception&) {
      h << "<p>interference validation: unreadable JSON</p>\n";
    }
  }
  // Every run.
  h << "<h2 id='runs'>Every run</h2>\n<table><tr><th>run</th><th>--load-factor</th><th>seed</th><th>bound</th>"
       "<th>useful %</th><th>ideal %</th><th>busy %</th><th>measured load</th><th>mean JCT (h)</th>"
       "<th>p50 JCT (h)</th><th>p99 JCT (h)</th><th>mean queue (h)</th><th>makespan (h)</th><th>OOM events</th>"
       "<th>prediction MAE, points</th><th>dir</th></tr>\n";
  std::vector<const RunData*> sorted;
  for (const RunData& r : runs) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [&](auto* a, auto* b) {
    return std::make_tuple(a->trace, a->num_gpus, a->Metric("load_scale", 1), rank(*a), a->predictions, a->seed) <
           std::make_tuple(b->trace, b->num_gpus, b->Metric("load_scale", 1), rank(*b), b->predictions, b->seed);
  });
  auto cell = [](double v, double scale, int prec) { return std::isfinite(v) ? F(v / scale, prec) : std::string(); };
  for (const RunData* r : sorted)
    h << "<tr><td>" << Esc(r->label) << "</td><td>" << G(r->Metric("load_scale", 1)) << "</td><td>"
      << F(r->seed, 0) << "</td><td>" << Esc(r->bound_kind) << "</td><td>"
      << cell(r->Metric("useful_work_utilization", NAN), 1, 1) << "</td><td>"
      << cell(r->Metric("ideal_work_utilization", NAN), 1, 1) << "</td><td>"
      << cell(r->Metric("cluster_utilization", NAN), 1, 1) << "</td><td>" << cell(r->Metric("load_factor", NAN), 1, 2)
      << "</td><td>" << cell(r->Metric("jct_mean_s", NAN), 3600, 1) << "</td><td>"
      << cell(r->Metric("jct_p50_s", NAN), 3600, 1) << "</td><td>" << cell(r->Metric("jct_p99_s", NAN), 3600, 1)
      << "</td><td>" << cell(r->Metric("queue_mean_s", NAN), 3600, 1) << "</td><td>"
      << cell(r->Metric("makespan_s", NAN), 3600, 0) << "</td><td>" << cell(r->Metric("oom_events", NAN), 1, 0)
      << "</td><td>" << cell(r->Metric("prediction_mae", NAN), 1, 1) << "</td><td style='text-align:left'><code>"
      << Esc(r->dir) << "</code></td></tr>\n";
  h << "</table>\n</body></html>\n";
  return h.str();
}

}  // namespace gpucast::sim
