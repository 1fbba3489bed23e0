#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/text.h"

namespace gpucast::sim {

std::vector<UtilPoint> BinSeries(const std::vector<UtilPoint>& steps, double end_s, int bins) {
  std::vector<UtilPoint> out;
  if (bins <= 0 || end_s <= 0) return out;
  double w = end_s / bins;
  std::vector<double> acc(bins, 0.0);
  for (size_t i = 0; i < steps.size(); ++i) {
    double a = steps[i].t_s, b = i + 1 < steps.size() ? steps[i + 1].t_s : end_s;
    a = std::max(0.0, a);
    b = std::min(end_s, b);
    if (b <= a) continue;
    int lo = std::min(bins - 1, static_cast<int>(a / w)), hi = std::min(bins - 1, static_cast<int>(b / w));
    for (int k = lo; k <= hi; ++k) {
      double s = std::max(a, k * w), e = std::min(b, (k + 1) * w);
      if (e > s) acc[k] += steps[i].util_pct * (e - s);
    }
  }
  for (int k = 0; k < bins; ++k) out.push_back({k * w, acc[k] / w});
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

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string Human(double s) {
  if (s >= 86400) return F(s / 86400, 1) + " d";
  if (s >= 3600) return F(s / 3600, 1) + " h";
  if (s >= 60) return F(s / 60, 1) + " min";
  return F(s, 0) + " s";
}

// Line chart: x in [0, xmax] (or log10 when logx), y in [0, ymax].
std::string Chart(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                  const std::vector<std::vector<std::pair<double, double>>>& lines,
                  const std::vector<std::string>& names, double xmin, double xmax, double ymax, bool logx) {
  // The legend sits below the plot, one row per line.
  const double W = 1000, L = 70, R = 20, T = 30, B = 50, LEG = 18.0 * static_cast<double>(lines.size()) + 8;
  const double H = 360 + LEG, P = 360;  // P: bottom of the plot block
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
      s << "<text x='" << X(x) << "' y='" << P - B + 16 << "' text-anchor='middle'>" << Human(x) << "</text>\n";
    }
  }
  s << "<line x1='" << L << "' x2='" << L << "' y1='" << T << "' y2='" << P - B << "' stroke='#333'/>"
    << "<line x1='" << L << "' x2='" << W - R << "' y1='" << P - B << "' y2='" << P - B << "' stroke='#333'/>\n";
  s << "<text x='" << (L + W - R) / 2 << "' y='" << P - 14 << "' text-anchor='middle'>" << Esc(xlabel) << "</text>\n";
  s << "<text transform='translate(16," << (T + P - B) / 2 << ") rotate(-90)' text-anchor='middle'>" << Esc(ylabel) << "</text>\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    const char* c = kColors[i % 8];
    s << "<polyline fill='none' stroke='" << c << "' stroke-width='1.6' points='";
    for (auto& [x, y] : lines[i]) s << F(X(x), 1) << ',' << F(Y(std::min(y, ymax)), 1) << ' ';
    s << "'/>\n";
    double ly = P + 18.0 * static_cast<double>(i);
    s << "<rect x='" << L << "' y='" << ly - 6 << "' width='18' height='4' fill='" << c << "'/>"
      << "<text x='" << L + 24 << "' y='" << ly << "'>" << Esc(names[i]) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace

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
  r.label = j["policy"].get<std::string>() + " (" + j["trace"].get<std::string>() + ", " +
            std::to_string(j["num_gpus"].get<int>()) + " GPUs)";
  for (auto& [k, v] : j.items())
    if (v.is_number()) r.metrics.push_back({k, v.get<double>()});
  auto uc = ReadFile(dir + "/utilization.csv");
  if (!uc) return Status::Error(dir + "/utilization.csv: cannot open");
  auto ul = Lines(*uc);
  for (size_t i = 1; i < ul.size(); ++i) {
    if (ul[i].empty()) continue;
    auto f = Split(ul[i], ',');
    auto t = f.size() == 2 ? ParseDouble(f[0]) : std::nullopt;
    auto u = f.size() == 2 ? ParseDouble(f[1]) : std::nullopt;
    if (!t || !u) return Status::Error("utilization.csv: line " + std::to_string(i + 1) + ": want t_s,util_pct numbers");
    r.util.push_back({*t, *u});
  }
  auto jc = ReadFile(dir + "/jobs.csv");
  if (!jc) return Status::Error(dir + "/jobs.csv: cannot open");
  auto jl = Lines(*jc);
  if (jl.empty()) return Status::Error("jobs.csv: empty file");
  auto h = Split(jl[0], ',');
  int cs = ColumnIndex(h, "submit_s"), ce = ColumnIndex(h, "end_s");
  if (cs < 0 || ce < 0) return Status::Error("jobs.csv: line 1: want columns submit_s,end_s");
  for (size_t i = 1; i < jl.size(); ++i) {
    if (jl[i].empty()) continue;
    auto f = Split(jl[i], ',');
    if (static_cast<int>(f.size()) <= std::max(cs, ce)) return Status::Error("jobs.csv: line " + std::to_string(i + 1) + ": too few fields");
    auto s = ParseDouble(f[cs]), e = ParseDouble(f[ce]);
    if (s && e) r.jct_s.push_back(*e - *s);
  }
  std::sort(r.jct_s.begin(), r.jct_s.end());
  return r;
}

std::string RenderReport(const std::vector<RunData>& runs) {
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>gpucast simulation report</title>\n"
    << "<style>body{font-family:sans-serif;margin:24px;max-width:1060px}table{border-collapse:collapse;font-size:13px}"
    << "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f3f3f3}"
    << "td:first-child,th:first-child{text-align:left}</style></head><body>\n"
    << "<h1>gpucast simulation report</h1>\n<p>" << runs.size()
    << " run(s). Cluster utilization = 100 &times; &int; &Sigma;<sub>g</sub> busy<sub>g</sub>(t) dt / (GPUs &times; (last end &minus; first submit)), "
       "busy<sub>g</sub> the GPU's measured (alone) or modelled (shared) utilization.</p>\n";
  // Summary table: the union of numeric fields, rows = metrics, columns = runs.
  std::vector<std::string> keys;
  for (const RunData& r : runs)
    for (auto& [k, v] : r.metrics)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  h << "<h2>Summary</h2>\n<table><tr><th>metric</th>";
  for (const RunData& r : runs) h << "<th>" << Esc(r.label) << "</th>";
  h << "</tr>\n";
  for (const std::string& k : keys) {
    h << "<tr><td>" << Esc(k) << "</td>";
    for (const RunData& r : runs) {
      auto it = std::find_if(r.metrics.begin(), r.metrics.end(), [&](auto& m) { return m.first == k; });
      std::string cell;
      if (it != r.metrics.end())
        cell = it->second == std::floor(it->second) && std::fabs(it->second) < 1e15
                   ? F(it->second, 0)
                   : F(it->second, std::fabs(it->second) < 10 ? 3 : 1);
      h << "<td>" << cell << "</td>";
    }
    h << "</tr>\n";
  }
  h << "</table>\n";
  // Utilization over time (binned so every run shows on one time axis).
  double tmax = 1;
  for (const RunData& r : runs)
    if (!r.util.empty()) tmax = std::max(tmax, r.util.back().t_s);
  std::vector<std::vector<std::pair<double, double>>> lines;
  std::vector<std::string> names;
  for (const RunData& r : runs) {
    double end = r.util.empty() ? tmax : r.util.back().t_s;
    int bins = std::max(1, static_cast<int>(300 * end / tmax));
    std::vector<std::pair<double, double>> pts;
    for (const UtilPoint& p : BinSeries(r.util, end, bins)) pts.push_back({p.t_s + end / bins / 2, p.util_pct});
    lines.push_back(std::move(pts));
    names.push_back(r.label);
  }
  h << "<h2>Cluster utilization over time</h2>\n"
    << Chart("Utilization (mean over GPUs of busy_g, time-binned)", "time since first submit", "utilization (%)",
             lines, names, 0, tmax, 100, false);
  // JCT CDFs, log time axis.
  lines.clear();
  double jmin = 1e18, jmax = 1;
  for (const RunData& r : runs)
    if (!r.jct_s.empty()) {
      jmin = std::min(jmin, std::max(1.0, r.jct_s.front()));
      jmax = std::max(jmax, r.jct_s.back());
    }
  if (jmin > jmax) jmin = 1;
  for (const RunData& r : runs) {
    std::vector<std::pair<double, double>> pts;
    size_t n = r.jct_s.size();
    size_t step = std::max<size_t>(1, n / 400);
    for (size_t i = 0; i < n; i += step) pts.push_back({r.jct_s[i], static_cast<double>(i + 1) / n});
    if (n) pts.push_back({r.jct_s.back(), 1.0});
    lines.push_back(std::move(pts));
  }
  h << "<h2>Job completion time</h2>\n"
    << Chart("CDF of job completion time (end - submit)", "JCT (log scale)", "fraction of jobs", lines, names,
             jmin, jmax, 1.0, true);
  h << "<h2>Runs</h2>\n<ul>";
  for (const RunData& r : runs) h << "<li>" << Esc(r.label) << ": <code>" << Esc(r.dir) << "</code></li>";
  h << "</ul>\n</body></html>\n";
  return h.str();
}

}  // namespace gpucast::sim
