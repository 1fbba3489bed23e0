#include "sim/report.h"

#include <algorithm>
#include <array>
#include <cmath>
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
    else o += c;
  }
  return o;
}

std::string F(double v, int prec = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

// Distinct colours (Tableau 10 + 2); a series keeps its policy's colour in
// every chart. Oracle runs are drawn dashed in the same colour.
const char* kColors[] = {"#4e79a7", "#e15759", "#59a14f", "#b07aa1", "#f28e2b", "#76b7b2",
                         "#edc948", "#9c755f", "#ff9da7", "#bab0ac", "#17becf", "#1a1a1a"};

std::string Human(double s) {
  if (s >= 86400) return F(s / 86400, 1) + " d";
  if (s >= 3600) return F(s / 3600, 1) + " h";
  if (s >= 60) return F(s / 60, 1) + " min";
  return F(s, 0) + " s";
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> pts;
  std::string color;
  bool dashed = false;
  std::vector<std::array<double, 3>> band;  // (x, low, high): a shaded range (the seeds' spread)
};

// Line chart: x in [xmin, xmax] (log10 when logx; time labels when xtime), y in [0, ymax].
std::string Chart(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                  const std::vector<Series>& lines, double xmin, double xmax, double ymax, bool logx,
                  bool xtime = true) {
  const double W = 1000, L = 70, R = 20, T = 30, B = 50, LEG = 18.0 * std::ceil(lines.size() / 2.0) + 8;
  const double H = 340 + LEG, P = 340;
  if (ymax <= 0) ymax = 1;
  auto X = [&](double x) {
    double a = logx ? std::log10(std::max(x, xmin)) : x, lo = logx ? std::log10(xmin) : xmin,
           hi = logx ? std::log10(xmax) : xmax;
    return L + (W - L - R) * (hi > lo ? (a - lo) / (hi - lo) : 0);
  };
  auto Y = [&](double y) { return T + (P - T - B) * (1 - y / ymax); };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' viewBox='0 0 " << W << " " << H
    << "' font-family='sans-serif' font-size='12'>\n";
  s << "<text x='" << L << "' y='18' font-size='15' font-weight='bold'>" << Esc(title) << "</text>\n";
  for (int i = 0; i <= 4; ++i) {
    double y = ymax * i / 4;
    s << "<line x1='" << L << "' x2='" << W - R << "' y1='" << Y(y) << "' y2='" << Y(y) << "' stroke='#ddd'/>"
      << "<text x='" << L - 6 << "' y='" << Y(y) + 4 << "' text-anchor='end'>" << F(y, ymax < 2 ? 2 : 0) << "</text>\n";
  }
  if (logx) {
    for (double d = std::pow(10, std::floor(std::log10(xmin))); d <= xmax * 1.0001; d *= 10) {
      if (d < xmin) continue;
      s << "<line x1='" << X(d) << "' x2='" << X(d) << "' y1='" << T << "' y2='" << P - B << "' stroke='#eee'/>"
        << "<text x='" << X(d) << "' y='" << P - B + 16 << "' text-anchor='middle'>" << Human(d) << "</text>\n";
    }
  } else {
    for (int i = 0; i <= 5; ++i) {
      double x = xmin + (xmax - xmin) * i / 5;
      s << "<text x='" << X(x) << "' y='" << P - B + 16 << "' text-anchor='middle'>" << (xtime ? Human(x) : F(x, 2))
        << "</text>\n";
    }
  }
  s << "<line x1='" << L << "' x2='" << L << "' y1='" << T << "' y2='" << P - B << "' stroke='#333'/>"
    << "<line x1='" << L << "' x2='" << W - R << "' y1='" << P - B << "' y2='" << P - B << "' stroke='#333'/>\n";
  s << "<text x='" << (L + W - R) / 2 << "' y='" << P - 14 << "' text-anchor='middle'>" << Esc(xlabel) << "</text>\n";
  s << "<text transform='translate(16," << (T + P - B) / 2 << ") rotate(-90)' text-anchor='middle'>" << Esc(ylabel)
    << "</text>\n";
  for (const Series& l : lines) {  // bands first, under every line
    if (l.band.size() < 2) continue;
    s << "<polygon fill='" << l.color << "' fill-opacity='0.15' stroke='none' points='";
    for (const auto& b : l.band) s << F(X(b[0]), 1) << ',' << F(Y(std::min(b[2], ymax)), 1) << ' ';
    for (auto it = l.band.rbegin(); it != l.band.rend(); ++it)
      s << F(X((*it)[0]), 1) << ',' << F(Y(std::min((*it)[1], ymax)), 1) << ' ';
    s << "'/>\n";
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const Series& l = lines[i];
    s << "<polyline fill='none' stroke='" << l.color << "' stroke-width='1.8'"
      << (l.dashed ? " stroke-dasharray='6,4'" : "") << " points='";
    for (auto& [x, y] : l.pts) s << F(X(x), 1) << ',' << F(Y(std::min(y, ymax)), 1) << ' ';
    s << "'/>\n";
    if (l.pts.size() <= 12)
      for (auto& [x, y] : l.pts)
        s << "<circle cx='" << F(X(x), 1) << "' cy='" << F(Y(std::min(y, ymax)), 1) << "' r='3' fill='" << l.color
          << "'/>";
    double lx = L + (i % 2) * 460.0, ly = P + 18.0 * static_cast<double>(i / 2);
    s << "<line x1='" << lx << "' x2='" << lx + 22 << "' y1='" << ly - 4 << "' y2='" << ly - 4 << "' stroke='"
      << l.color << "' stroke-width='3'" << (l.dashed ? " stroke-dasharray='6,4'" : "") << "/>"
      << "<text x='" << lx + 28 << "' y='" << ly << "'>" << Esc(l.name) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

// Grouped horizontal bars: per row, one bar per value (values in [0, vmax]),
// plus an optional vertical reference line (the ideal bound).
std::string Bars(const std::string& title, const std::vector<std::string>& rows,
                 const std::vector<std::vector<double>>& vals, const std::vector<std::vector<double>>& errs,
                 const std::vector<std::string>& series, const std::vector<std::string>& colors, double vmax,
                 double ref, const std::string& ref_label) {
  const double W = 1000, L = 260, R = 60, T = 40, rowh = 14.0 * static_cast<double>(series.size()) + 10;
  const double H = T + rowh * static_cast<double>(rows.size()) + 50;
  auto X = [&](double v) { return L + (W - L - R) * std::clamp(v / vmax, 0.0, 1.0); };
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' viewBox='0 0 " << W << " " << H
    << "' font-family='sans-serif' font-size='12'>\n";
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

// Mean and sample sd of a metric over runs.
std::pair<double, double> MeanSd(const std::vector<const RunData*>& rs, const std::string& key) {
  if (rs.empty()) return {NAN, NAN};
  double m = 0, ss = 0;
  for (const RunData* r : rs) m += r->Metric(key, NAN);
  m /= static_cast<double>(rs.size());
  for (const RunData* r : rs) ss += (r->Metric(key, NAN) - m) * (r->Metric(key, NAN) - m);
  return {m, rs.size() > 1 ? std::sqrt(ss / static_cast<double>(rs.size() - 1)) : 0.0};
}

std::string PlusMinus(std::pair<double, double> ms, double scale, int prec, size_t n) {
  if (std::isnan(ms.first)) return "";
  std::string s = F(ms.first / scale, prec);
  if (n > 1) s += " &plusmn; " + F(ms.second / scale, prec);
  return s;
}

// Per-seed paired gain of `a` over `b` in a metric, percent: mean +- sd over the seeds both have.
std::string Gain(const std::vector<const RunData*>& a, const std::vector<const RunData*>& b, const std::string& key) {
  std::vector<double> g;
  for (const RunData* x : a)
    for (const RunData* y : b)
      if (x->seed == y->seed && y->Metric(key) != 0) g.push_back(100.0 * (x->Metric(key) / y->Metric(key) - 1.0));
  if (g.empty()) return "";
  double m = 0, ss = 0;
  for (double v : g) m += v;
  m /= static_cast<double>(g.size());
  for (double v : g) ss += (v - m) * (v - m);
  std::string s = (m >= 0 ? "+" : "") + F(m, 1) + "%";
  if (g.size() > 1) s += " &plusmn; " + F(std::sqrt(ss / static_cast<double>(g.size() - 1)), 1);
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
  for (const RunData* r : rs) {
    lo = std::min(lo, r->Metric(key, NAN) / scale);
    hi = std::max(hi, r->Metric(key, NAN) / scale);
  }
  return {lo, hi};
}

}  // namespace

double RunData::Metric(const std::string& key, double fallback) const {
  for (auto& [k, v] : metrics)
    if (k == key) return v;
  return fallback;
}

Result<RunData> LoadRun(const std::string& dir) {
  RunData r;
  r.dir = dir;
  auto sj = ReadFile(dir + "/summary.json");
  if (!sj) return Status::Error(dir + "/summary.json: cannot open");
  r.summary_json = *sj;
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(*sj);
  } catch (const std::exception& e) {
    return Status::Error(dir + "/summary.json: " + e.what());
  }
  for (const char* k : {"policy", "trace", "num_gpus"})
    if (!j.contains(k)) return Status::Error(dir + "/summary.json: missing field '" + k + "'");
  r.policy = j["policy"].get<std::string>();
  r.trace = j["trace"].get<std::string>();
  r.num_gpus = j["num_gpus"].get<int>();
  r.predictions = j.contains("predictions") && j["predictions"].is_string() ? j["predictions"].get<std::string>() : "";
  r.bound_kind = j.contains("bound_kind") && j["bound_kind"].is_string() ? j["bound_kind"].get<std::string>() : "";
  r.seed = j.contains("seed") && j["seed"].is_number() ? j["seed"].get<double>() : 0;
  r.label = NameOf(r) + " (" + r.trace + ", " + std::to_string(r.num_gpus) + " GPUs)";
  for (auto& [k, v] : j.items())
    if (v.is_number()) r.metrics.push_back({k, v.get<double>()});
  auto uc = ReadFile(dir + "/utilization.csv");
  if (!uc) return Status::Error(dir + "/utilization.csv: cannot open");
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
      return Status::Error("utilization.csv: line " + std::to_string(i + 1) + ": want t_s,util_pct[,useful_pct,queued] numbers");
    r.util.push_back(p);
  }
  auto jc = ReadFile(dir + "/jobs.csv");
  if (!jc) return Status::Error(dir + "/jobs.csv: cannot open");
  auto jl = Lines(*jc);
  if (jl.empty()) return Status::Error("jobs.csv: empty file");
  auto h = Split(jl[0], ',');
  int cs = ColumnIndex(h, "submit_s"), ce = ColumnIndex(h, "end_s");
  int cw = ColumnIndex(h, "workload"), ct = ColumnIndex(h, "true_util"), cp = ColumnIndex(h, "predicted_util");
  if (cs < 0 || ce < 0) return Status::Error("jobs.csv: line 1: want columns submit_s,end_s");
  for (size_t i = 1; i < jl.size(); ++i) {
    if (jl[i].empty()) continue;
    auto f = Split(jl[i], ',');
    if (static_cast<int>(f.size()) <= std::max(cs, ce)) return Status::Error("jobs.csv: line " + std::to_string(i + 1) + ": too few fields");
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

std::string RenderReport(const std::vector<RunData>& runs, const std::string& interference_json) {
  // Policies in the table's order (slot first), then oracle variants.
  std::vector<std::string> order;
  for (const PolicyRow& p : Policies()) order.push_back(p.name);
  auto rank = [&](const RunData& r) {
    auto it = std::find(order.begin(), order.end(), r.policy);
    return static_cast<int>(it - order.begin()) + (r.oracle() ? 100 : 0);
  };
  // Configurations: (trace, GPUs), in the order the runs came. The headline is
  // the one with the most runs (ties: the first given).
  using Key = std::tuple<std::string, int, double>;  // trace, GPUs, --load-factor
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
  std::map<std::string, std::string> color;
  for (size_t i = 0; i < order.size(); ++i) color[order[i]] = kColors[i % 12];
  auto find_group = [&](const std::string& n) -> const std::vector<const RunData*>* {
    for (auto& g : groups)
      if (g.first == n) return &g.second;
    return nullptr;
  };
  const auto* slot = find_group("slot");
  const auto* prof = find_group("profiling");
  size_t nseeds = 0;
  for (auto& g : groups) nseeds = std::max(nseeds, g.second.size());
  const RunData& any = *head->second.front();

  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>gpucast simulation report</title>\n"
    << "<style>body{font-family:sans-serif;margin:24px;max-width:1060px;color:#222}"
    << "table{border-collapse:collapse;font-size:13px;margin:8px 0}"
    << "td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f3f3f3}"
    << "td:first-child,th:first-child{text-align:left}.note{color:#555;font-size:13px}"
    << ".sw{display:inline-block;width:10px;height:10px;margin-right:5px}</style></head><body>\n"
    << "<h1>gpucast simulation report</h1>\n";
  const std::string& head_trace = std::get<0>(head->first);
  h << "<p><b>" << Esc(head_trace) << "</b> on <b>" << std::get<1>(head->first) << " GPUs</b>, arrivals compressed "
    << "&times;" << F(std::get<2>(head->first), 2) << " (<code>--load-factor</code>; load factor "
    << F(any.Metric("load_factor"), 2) << ": demand / capacity over the submissions; measurement window "
    << Human(any.Metric("window_s")) << ", " << (any.bound_kind.empty() ? "?" : any.bound_kind) << "-bound), "
    << nseeds << " seed(s) per policy. Ideal bound on useful work: "
    << PlusMinus(MeanSd(head->second, "ideal_work_utilization"), 1, 1, nseeds) << "%.</p>\n";
  h << "<p class='note'><b>Useful work</b> = job progress made within the measurement window (first submission to "
       "the last one at which the ideal scheduler still has a backlog, else the last submission), "
       "weighted by each job's own GPU utilization and GPU count, as a share of the cluster over that window: "
       "what a GPU really got done. <b>Busy time</b> (the paper's cluster utilization) counts a shared GPU busy at "
       "its device utilization whatever its jobs' progress; it rewards stacking jobs, not finishing them. "
       "The ideal bound is the most any policy could do on the window (docs/simulator.md).</p>\n";
  // Headline table.
  h << "<h2>Headline</h2>\n<table><tr><th>policy</th><th>useful work %</th><th>vs slot</th><th>vs profiling</th>"
       "<th>busy time % (paper)</th><th>mean JCT (h)</th><th>p95 JCT (h)</th><th>mean queue (h)</th>"
       "<th>makespan (d)</th><th>profiling GPU-h</th><th>migrations</th><th>prediction error (points)</th></tr>\n";
  for (auto& [name, rs] : groups) {
    const RunData& r0 = *rs.front();
    h << "<tr><td><span class='sw' style='background:" << color[r0.policy] << "'></span>" << Esc(name) << "</td><td><b>"
      << PlusMinus(MeanSd(rs, "useful_work_utilization"), 1, 1, rs.size()) << "</b></td><td>"
      << (slot ? Gain(rs, *slot, "useful_work_utilization") : "") << "</td><td>"
      << (prof ? Gain(rs, *prof, "useful_work_utilization") : "") << "</td><td>"
      << PlusMinus(MeanSd(rs, "cluster_utilization"), 1, 1, rs.size()) << "</td><td>"
      << PlusMinus(MeanSd(rs, "jct_mean_s"), 3600, 1, rs.size()) << "</td><td>"
      << PlusMinus(MeanSd(rs, "jct_p95_s"), 3600, 1, rs.size()) << "</td><td>"
      << PlusMinus(MeanSd(rs, "queue_mean_s"), 3600, 1, rs.size()) << "</td><td>"
      << PlusMinus(MeanSd(rs, "makespan_s"), 86400, 1, rs.size()) << "</td><td>"
      << PlusMinus(MeanSd(rs, "profiling_gpu_s"), 3600, 0, rs.size()) << "</td><td>"
      << PlusMinus(MeanSd(rs, "migrations"), 1, 0, rs.size()) << "</td><td>"
      << (r0.predictions == "unused" || r0.oracle() ? "&mdash;" : PlusMinus(MeanSd(rs, "prediction_mae"), 1, 1, rs.size()))
      << "</td></tr>\n";
  }
  h << "</table>\n<p class='note'>Mean &plusmn; sd over seeds; gains are per-seed paired ratios of useful work. "
       "(oracle) = the true utilization given as the prediction: the most prediction could give.</p>\n";
  // Useful work beside busy time.
  {
    std::vector<std::string> rows;
    std::vector<std::vector<double>> vals, errs;
    double vmax = 10;
    for (auto& [name, rs] : groups) {
      auto u = MeanSd(rs, "useful_work_utilization"), b = MeanSd(rs, "cluster_utilization");
      rows.push_back(name);
      vals.push_back({u.first, b.first});
      errs.push_back({u.second, b.second});
      vmax = std::max({vmax, u.first, b.first});
    }
    double ideal = MeanSd(head->second, "ideal_work_utilization").first;
    vmax = std::ceil(std::max(vmax, ideal) / 10) * 10;
    h << "<h2>Useful work beside busy time</h2>\n"
      << Bars("Useful work vs busy time (% of the cluster, mean over seeds, bar = sd)", rows, vals, errs,
              {"useful work", "busy time (paper's metric)"}, {"#4e79a7", "#bab0ac"}, vmax, ideal, "ideal bound");
  }
  // Over time, first seed of each variant.
  {
    std::vector<Series> useful, queue;
    double tmax = 1, qmax = 1;
    for (auto& [name, rs] : groups)
      if (!rs.front()->util.empty()) tmax = std::max(tmax, rs.front()->util.back().t_s);
    for (auto& [name, rs] : groups) {
      const RunData& r = *rs.front();
      double end = r.util.empty() ? tmax : r.util.back().t_s;
      int bins = std::max(1, static_cast<int>(200 * end / tmax));
      Series u{name, {}, color[r.policy], r.oracle(), {}}, q{name, {}, color[r.policy], r.oracle(), {}};
      for (const UtilPoint& p : BinSeries(r.util, end, bins)) {
        u.pts.push_back({p.t_s + end / bins / 2, p.useful_pct});
        q.pts.push_back({p.t_s + end / bins / 2, p.queued});
        qmax = std::max(qmax, p.queued);
      }
      useful.push_back(std::move(u));
      queue.push_back(std::move(q));
    }
    h << "<h2>Over time (seed " << F(groups.front().second.front()->seed, 0) << ")</h2>\n"
      << Chart("Useful work rate (% of the cluster, time-binned)", "time since first submit", "useful work (%)", useful,
               0, tmax, 100, false)
      << Chart("Queue length (jobs waiting, time-binned)", "time since first submit", "jobs queued", queue, 0, tmax,
               qmax * 1.05, false);
  }
  // Load sweep: every load point (GPUs, --load-factor) of the headline trace,
  // at its measured load factor (demand / capacity over the window, mean over
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
      for (auto& [pt, rs] : all) {
        x[pt] = MeanSd(rs, "load_factor").first;
        lo = std::min(lo, x[pt]);
        hi = std::max(hi, x[pt]);
      }
      std::vector<std::string> names;
      for (auto& [name, m] : by) names.push_back(name);
      std::stable_sort(names.begin(), names.end(),
                       [&](const std::string& a, const std::string& b) { return variant_order(a, b, by); });
      auto by_x = [&](std::vector<std::array<double, 3>>& band, std::vector<std::pair<double, double>>& pts) {
        std::sort(band.begin(), band.end());
        std::sort(pts.begin(), pts.end());
      };
      std::vector<Series> useful, jct;
      for (const std::string& name : names) {
        const RunData& r0 = *by[name].begin()->second.front();
        Series u{name, {}, color[r0.policy], r0.oracle(), {}}, j{name, {}, color[r0.policy], r0.oracle(), {}};
        for (auto& [pt, rs] : by[name]) {
          auto [ul, uh] = Range(rs, "useful_work_utilization");
          auto [jl, jh] = Range(rs, "jct_mean_s", 3600);
          u.pts.push_back({x[pt], MeanSd(rs, "useful_work_utilization").first});
          u.band.push_back({x[pt], ul, uh});
          j.pts.push_back({x[pt], MeanSd(rs, "jct_mean_s").first / 3600});
          j.band.push_back({x[pt], jl, jh});
          umax = std::max(umax, uh);
          jmax = std::max(jmax, jh);
        }
        by_x(u.band, u.pts);
        by_x(j.band, j.pts);
        useful.push_back(std::move(u));
        jct.push_back(std::move(j));
      }
      Series ideal{"ideal bound", {}, "#000000", true, {}};
      for (auto& [pt, rs] : all) {
        ideal.pts.push_back({x[pt], MeanSd(rs, "ideal_work_utilization").first});
        umax = std::max(umax, ideal.pts.back().second);
      }
      std::sort(ideal.pts.begin(), ideal.pts.end());
      useful.push_back(std::move(ideal));
      h << "<h2 id='load-sweep'>Load sweep (" << Esc(head_trace) << ")</h2>\n<p class='note'>Each point is one (GPUs, "
        << "<code>--load-factor</code>) of the runs given, placed at its measured load factor (demand / capacity "
        << "over the measurement window, mean over seeds). Lines: mean over seeds; bands: the seeds' range "
        << "(each seed resamples arrivals, workloads and noise). Dashed: oracle predictions.</p>\n"
        << Chart("Useful work vs load (mean, band = range over seeds)", "load factor (demand / capacity)",
                 "useful work (%)", useful, lo, hi, std::ceil(umax / 20) * 20, false, false)
        << Chart("Mean JCT vs load (mean, band = range over seeds)", "load factor (demand / capacity)",
                 "mean JCT (h)", jct, lo, hi, jmax * 1.05, false, false);
      h << "<table><tr><th>--load-factor</th><th>GPUs</th><th>load factor</th><th>capacity-bound seeds</th>"
        << "<th>ideal %</th>";
      for (const std::string& name : names) h << "<th>" << Esc(name) << "<br>useful % / JCT h</th>";
      h << "</tr>\n";
      for (auto& [pt, rs] : all) {
        size_t cap = 0, n = 0;
        for (const RunData* r : rs)
          if (r->policy == rs.front()->policy && r->predictions == rs.front()->predictions) {
            ++n;
            cap += r->bound_kind == "capacity";
          }
        h << "<tr><td>" << F(pt.second, 2) << "</td><td>" << pt.first << "</td><td>" << F(x[pt], 2) << "</td><td>"
          << cap << " / " << n << "</td><td>" << F(MeanSd(rs, "ideal_work_utilization").first, 1) << "</td>";
        for (const std::string& name : names) {
          auto it = by[name].find(pt);
          h << "<td>";
          if (it != by[name].end())
            h << PlusMinus(MeanSd(it->second, "useful_work_utilization"), 1, 1, it->second.size()) << " / "
              << PlusMinus(MeanSd(it->second, "jct_mean_s"), 3600, 1, it->second.size());
          h << "</td>";
        }
        h << "</tr>\n";
      }
      h << "</table>\n";
    }
  }
  // Value of accuracy: at each (GPUs, --load-factor) of the headline trace
  // where accuracy controls ran, each prediction-driven policy's useful work
  // and mean JCT against its predictions' MAE (oracle = 0, noisy:SD); every
  // source (constant, shuffled, the default) in the table.
  {
    auto src_order = [](const std::string& src) {
      auto num = [&](size_t from) {
        try {
          return std::stod(src.substr(from));
        } catch (const std::exception&) {
          return 0.0;
        }
      };
      if (src == "oracle") return std::make_pair(0, 0.0);
      if (src.rfind("noisy:", 0) == 0) return std::make_pair(1, num(6));
      if (src.rfind("constant:", 0) == 0) return std::make_pair(2, num(9));
      if (src.rfind("shuffled", 0) == 0) return std::make_pair(3, 0.0);
      return std::make_pair(4, 0.0);
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
        return src == "oracle" ? 0.0 : MeanSd(rs, "prediction_mae").first;
      };
      std::vector<Series> useful, jct;
      double xmax = 1, umax = 10, jmax = 1;
      for (const std::string& pol : policies) {
        Series u{pol, {}, color[pol], false, {}}, j{pol, {}, color[pol], false, {}};
        for (const std::string& src : sources) {
          auto it = pols[pol].find(src);
          if (it == pols[pol].end() || (src != "oracle" && src.rfind("noisy:", 0) != 0)) continue;
          double m = mae(src, it->second);
          auto [ul, uh] = Range(it->second, "useful_work_utilization");
          auto [jl, jh] = Range(it->second, "jct_mean_s", 3600);
          u.pts.push_back({m, MeanSd(it->second, "useful_work_utilization").first});
          u.band.push_back({m, ul, uh});
          j.pts.push_back({m, MeanSd(it->second, "jct_mean_s").first / 3600});
          j.band.push_back({m, jl, jh});
          xmax = std::max(xmax, m);
          umax = std::max(umax, uh);
          jmax = std::max(jmax, jh);
        }
        if (u.pts.size() < 2) continue;
        std::sort(u.pts.begin(), u.pts.end());
        std::sort(u.band.begin(), u.band.end());
        std::sort(j.pts.begin(), j.pts.end());
        std::sort(j.band.begin(), j.band.end());
        useful.push_back(std::move(u));
        jct.push_back(std::move(j));
      }
      h << "<h2 id='accuracy-" << pt.first << "-" << F(pt.second, 2) << "'>Value of accuracy (" << Esc(head_trace) << ", " << pt.first << " GPUs, --load-factor "
        << F(pt.second, 2) << ")</h2>\n<p class='note'>Each prediction-driven policy under oracle predictions (MAE 0) "
        << "and <code>noisy:SD</code> (oracle + seeded N(0, SD) points, clamped), placed at the predictions' "
        << "measured MAE (mean over seeds). Lines: mean over seeds; bands: the seeds' range. The table adds every "
        << "other source (constant, shuffled, the default).</p>\n";
      if (!useful.empty())
        h << Chart("Useful work vs prediction error", "prediction MAE (points)", "useful work (%)", useful, 0, xmax,
                   std::ceil(umax / 20) * 20, false, false)
          << Chart("Mean JCT vs prediction error", "prediction MAE (points)", "mean JCT (h)", jct, 0, xmax,
                   jmax * 1.05, false, false);
      h << "<table><tr><th>predictions</th><th>MAE (points)</th>";
      for (const std::string& pol : policies) h << "<th>" << Esc(pol) << "<br>useful % / JCT h</th>";
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
            h << PlusMinus(MeanSd(it->second, "useful_work_utilization"), 1, 1, it->second.size()) << " / "
              << PlusMinus(MeanSd(it->second, "jct_mean_s"), 3600, 1, it->second.size());
          h << "</td>";
        }
        h << "</tr>\n";
      }
      h << "</table>\n";
    }
  }
  // JCT CDFs (first seed).
  {
    std::vector<Series> lines;
    double jmin = 1e18, jmax = 1;
    for (auto& [name, rs] : groups)
      if (!rs.front()->jct_s.empty()) {
        jmin = std::min(jmin, std::max(1.0, rs.front()->jct_s.front()));
        jmax = std::max(jmax, rs.front()->jct_s.back());
      }
    if (jmin > jmax) jmin = 1;
    for (auto& [name, rs] : groups) {
      const RunData& r = *rs.front();
      Series s{name, {}, color[r.policy], r.oracle(), {}};
      size_t n = r.jct_s.size();
      size_t step = std::max<size_t>(1, n / 400);
      for (size_t i = 0; i < n; i += step) s.pts.push_back({r.jct_s[i], static_cast<double>(i + 1) / n});
      if (n) s.pts.push_back({r.jct_s.back(), 1.0});
      lines.push_back(std::move(s));
    }
    h << "<h2>Job completion time</h2>\n"
      << Chart("CDF of job completion time (end - submit)", "JCT (log scale)", "fraction of jobs", lines, jmin, jmax,
               1.0, true);
  }
  // Predicted vs true utilization per workload (from a run that used predictions).
  for (auto& [name, rs] : groups) {
    const RunData& r = *rs.front();
    if (r.predictions == "unused" || r.oracle() || r.control() || r.workloads.empty()) continue;
    std::vector<std::pair<std::string, std::pair<double, double>>> wl(r.workloads.begin(), r.workloads.end());
    std::sort(wl.begin(), wl.end(), [](auto& a, auto& b) {
      return std::fabs(a.second.second - a.second.first) > std::fabs(b.second.second - b.second.first);
    });
    h << "<h2>Predicted vs true utilization per workload</h2>\n<p class='note'>Predictions <code>"
      << Esc(r.predictions) << "</code> (each workload predicted by a model that never saw it), largest error first. "
      << "A job's predicted utilization is what predictive policies pack by.</p>\n<table><tr><th>workload</th>"
      << "<th>true %</th><th>predicted %</th><th>error (points)</th><th></th></tr>\n";
    for (auto& [w, tp] : wl) {
      double err = tp.second - tp.first;
      h << "<tr><td>" << Esc(w) << "</td><td>" << F(tp.first, 1) << "</td><td>" << F(tp.second, 1) << "</td><td>"
        << (err >= 0 ? "+" : "") << F(err, 1) << "</td><td style='text-align:left'><svg width='210' height='10'>"
        << "<rect x='0' y='2' width='" << F(2 * std::clamp(tp.first, 0.0, 100.0), 1)
        << "' height='3' fill='#59a14f'/><rect x='0' y='6' width='" << F(2 * std::clamp(tp.second, 0.0, 100.0), 1)
        << "' height='3' fill='#e15759'/></svg></td></tr>\n";
    }
    h << "</table><p class='note'>Bars: green = true, red = predicted (0&ndash;100%).</p>\n";
    break;
  }
  // Interference model validation.
  if (!interference_json.empty()) {
    try {
      auto j = nlohmann::json::parse(interference_json);
      h << "<h2>Interference model validation</h2>\n<p class='note'>The co-location physics' rate error on "
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
  // Full summary of every run.
  h << "<h2>Every run</h2>\n<table><tr><th>run</th><th>seed</th><th>useful %</th><th>ideal %</th><th>busy %</th>"
       "<th>load</th><th>mean JCT</th><th>p50 JCT</th><th>p99 JCT</th><th>mean queue</th><th>makespan</th><th>dir</th></tr>\n";
  std::vector<const RunData*> sorted;
  for (const RunData& r : runs) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [&](auto* a, auto* b) {
    return std::make_tuple(a->trace, a->num_gpus, rank(*a), a->seed) < std::make_tuple(b->trace, b->num_gpus, rank(*b), b->seed);
  });
  for (const RunData* r : sorted)
    h << "<tr><td>" << Esc(r->label) << "</td><td>" << F(r->seed, 0) << "</td><td>"
      << F(r->Metric("useful_work_utilization"), 1) << "</td><td>" << F(r->Metric("ideal_work_utilization"), 1)
      << "</td><td>" << F(r->Metric("cluster_utilization"), 1) << "</td><td>" << F(r->Metric("load_factor"), 2)
      << "</td><td>" << Human(r->Metric("jct_mean_s")) << "</td><td>" << Human(r->Metric("jct_p50_s")) << "</td><td>"
      << Human(r->Metric("jct_p99_s")) << "</td><td>" << Human(r->Metric("queue_mean_s")) << "</td><td>"
      << Human(r->Metric("makespan_s")) << "</td><td style='text-align:left'><code>" << Esc(r->dir) << "</code></td></tr>\n";
  h << "</table>\n</body></html>\n";
  return h.str();
}

}  // namespace gpucast::sim
