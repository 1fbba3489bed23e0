#include "service/dcgm.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include <httplib.h>

namespace gpucast::service {

using nlohmann::json;

namespace {

constexpr std::string_view kUtilMetric = "DCGM_FI_DEV_GPU_UTIL";

// Parses `{k="v",...}` starting at s[*pos] == '{'; leaves *pos after '}'.
Status ParseLabels(std::string_view s, size_t* pos, std::map<std::string, std::string>* labels) {
  size_t i = *pos + 1;
  auto skip_ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  };
  while (true) {
    skip_ws();
    if (i < s.size() && s[i] == '}') break;
    size_t k0 = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    if (i == k0) return Status::Error("malformed label name");
    std::string key(s.substr(k0, i - k0));
    skip_ws();
    if (i >= s.size() || s[i] != '=') return Status::Error("want '=' after label " + key);
    ++i;
    skip_ws();
    if (i >= s.size() || s[i] != '"') return Status::Error("want a quoted value for label " + key);
    ++i;
    std::string value;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) {
        ++i;
        value += s[i] == 'n' ? '\n' : s[i];
      } else {
        value += s[i];
      }
      ++i;
    }
    if (i >= s.size()) return Status::Error("unterminated value of label " + key);
    ++i;
    (*labels)[key] = value;
    skip_ws();
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == '}') break;
    return Status::Error("want ',' or '}' after label " + key);
  }
  *pos = i + 1;
  return Status::Ok();
}

}  // namespace

Result<std::vector<DcgmSample>> ParseDcgmUtil(std::string_view text) {
  std::vector<DcgmSample> out;
  int line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? text.npos : nl - start);
    start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.rfind(kUtilMetric, 0) != 0) continue;  // comments, other metrics
    size_t pos = kUtilMetric.size();
    if (pos < line.size() && line[pos] != '{' && line[pos] != ' ' && line[pos] != '\t') continue;  // a longer name
    const std::string where = "line " + std::to_string(line_no) + ": " + std::string(kUtilMetric) + ": ";
    std::map<std::string, std::string> labels;
    if (pos < line.size() && line[pos] == '{') {
      Status st = ParseLabels(line, &pos, &labels);
      if (!st.ok()) return Status::Error(where + st.message());
    }
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    size_t end = line.find_first_of(" \t", pos);
    std::string value(line.substr(pos, end == std::string_view::npos ? line.npos : end - pos));
    char* stop = nullptr;
    double v = value.empty() ? NAN : std::strtod(value.c_str(), &stop);
    if (value.empty() || stop != value.c_str() + value.size() || !std::isfinite(v) || v < 0 || v > 100) {
      return Status::Error(where + "value '" + value.substr(0, 32) + "' is not a utilization in [0, 100]");
    }
    auto g = labels.find("gpu");
    int gpu = -1;
    if (g != labels.end()) {
      auto [p, ec] = std::from_chars(g->second.data(), g->second.data() + g->second.size(), gpu);
      if (ec != std::errc() || p != g->second.data() + g->second.size() || gpu < 0) gpu = -1;
    }
    if (gpu < 0) return Status::Error(where + "no gpu=\"N\" label (a device index)");
    DcgmSample s;
    s.gpu = gpu;
    s.util = v;
    if (auto h = labels.find("Hostname"); h != labels.end()) s.hostname = h->second;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<DcgmAttribution> AttributeDcgm(const json& cluster,
                                           const std::vector<std::vector<DcgmSample>>& per_exporter,
                                           const std::function<void(const std::string&)>& outcome) {
  struct GpuRef {
    std::vector<int64_t> jobs;
    std::string type;
    bool sampled = false;
    double util = 0;
  };
  std::vector<GpuRef> gpus;
  std::vector<std::string> nodes;                 // first-seen order
  std::map<std::string, std::vector<size_t>> of;  // node -> GPU positions
  const json& list = cluster.contains("gpus") ? cluster["gpus"] : json::array();
  for (const json& g : list) {
    GpuRef r;
    if (g.contains("type") && g["type"].is_string()) r.type = g["type"].get<std::string>();
    if (g.contains("jobs")) {
      for (const json& j : g["jobs"]) {
        if (j.is_number_integer()) r.jobs.push_back(j.get<int64_t>());
        else if (j.is_object() && j.contains("id")) r.jobs.push_back(j["id"].get<int64_t>());
      }
    }
    std::string node = g.contains("node") ? g["node"].dump() : "";
    if (!of.count(node)) nodes.push_back(node);
    of[node].push_back(gpus.size());
    gpus.push_back(std::move(r));
  }
  for (size_t e = 0; e < per_exporter.size(); ++e) {
    for (const DcgmSample& s : per_exporter[e]) {
      if (e >= nodes.size() || s.gpu >= static_cast<int>(of[nodes[e]].size())) {
        outcome("unknown_gpu");
        continue;
      }
      GpuRef& g = gpus[of[nodes[e]][static_cast<size_t>(s.gpu)]];
      g.sampled = true;
      g.util = s.util;
    }
  }
  // Per job: its GPUs; attributable when each is sampled and holds only it.
  std::map<int64_t, std::vector<size_t>> held;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (!gpus[i].sampled) continue;
    if (gpus[i].jobs.empty()) outcome("idle");
    else if (gpus[i].jobs.size() > 1) outcome("shared");
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (int64_t j : gpus[i].jobs) held[j].push_back(i);
  }
  std::vector<DcgmAttribution> out;
  for (const auto& [job, where] : held) {
    bool ok = true;
    double sum = 0;
    for (size_t i : where) {
      ok = ok && gpus[i].sampled && gpus[i].jobs.size() == 1;
      sum += gpus[i].util;
    }
    if (!ok) continue;
    for (size_t i = 0; i < where.size(); ++i) outcome("attributed");
    out.push_back({job, sum / static_cast<double>(where.size()), static_cast<int>(where.size()),
                   gpus[where[0]].type});
  }
  return out;
}

Result<std::pair<std::string, std::string>> SplitHttpUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    return Status::Error("--dcgm-url '" + url + "': want http://HOST:PORT/PATH (e.g. http://node1:9400/metrics)");
  }
  size_t slash = url.find('/', scheme.size());
  std::string base = url.substr(0, slash);
  std::string path = slash == std::string::npos ? "/metrics" : url.substr(slash);
  if (base.size() == scheme.size()) return Status::Error("--dcgm-url '" + url + "': no host");
  return std::make_pair(base, path);
}

Result<std::unique_ptr<DcgmScraper>> DcgmScraper::Start(const std::vector<std::string>& urls, double interval_s,
                                                        Callback on_scrape) {
  if (!(interval_s > 0)) return Status::Error("DCGM scrape interval must be > 0 seconds");
  std::unique_ptr<DcgmScraper> s(new DcgmScraper());
  for (const std::string& u : urls) {
    ASSIGN_OR_RETURN(auto t, SplitHttpUrl(u));
    s->targets_.push_back(std::move(t));
  }
  s->interval_s_ = interval_s;
  s->on_scrape_ = std::move(on_scrape);
  s->thread_ = std::thread([p = s.get()] { p->Loop(); });
  return s;
}

DcgmScraper::~DcgmScraper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DcgmScraper::Loop() {
  auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(interval_s_));
  auto next = std::chrono::steady_clock::now();
  while (true) {
    std::vector<std::vector<DcgmSample>> pages(targets_.size());
    std::vector<bool> ok(targets_.size(), false);
    for (size_t e = 0; e < targets_.size(); ++e) {
      httplib::Client cli(targets_[e].first);
      cli.set_connection_timeout(2, 0);
      cli.set_read_timeout(5, 0);
      httplib::Result r = cli.Get(targets_[e].second);
      if (!r || r->status != 200) {
        std::fprintf(stderr, "gpucast serve: DCGM scrape %s%s: %s\n", targets_[e].first.c_str(),
                     targets_[e].second.c_str(),
                     r ? ("HTTP " + std::to_string(r->status)).c_str() : httplib::to_string(r.error()).c_str());
        continue;
      }
      Result<std::vector<DcgmSample>> samples = ParseDcgmUtil(r->body);
      if (!samples.ok()) {
        std::fprintf(stderr, "gpucast serve: DCGM scrape %s%s: %s\n", targets_[e].first.c_str(),
                     targets_[e].second.c_str(), samples.message().c_str());
        continue;
      }
      pages[e] = std::move(samples).value();
      ok[e] = true;
    }
    on_scrape_(pages, ok);
    next += period;
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_until(lock, next, [this] { return stop_; })) return;
  }
}

}  // namespace gpucast::service
