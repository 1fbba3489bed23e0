#include "service/dcgm.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "service/http_util.h"

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

namespace {

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string Secs(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

// The body of a chunked answer; false if it is malformed.
bool Dechunk(std::string_view in, std::string* out) {
  size_t pos = 0;
  for (;;) {
    size_t eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos) return false;
    std::string hex(in.substr(pos, eol - pos));
    hex = hex.substr(0, hex.find(';'));
    char* end = nullptr;
    errno = 0;
    unsigned long long n = std::strtoull(hex.c_str(), &end, 16);
    if (hex.empty() || *end != '\0' || errno != 0) return false;
    pos = eol + 2;
    if (n == 0) return true;
    if (n > in.size() - pos) return false;
    out->append(in.substr(pos, n));
    pos += n;
    if (in.substr(pos, 2) != "\r\n") return false;
    pos += 2;
  }
}

}  // namespace

Result<std::string> HttpGetBounded(const std::string& base, const std::string& path, size_t max_bytes,
                                   double timeout_s, const std::function<bool()>& stopping) {
  const auto t0 = std::chrono::steady_clock::now();
  // "http://HOST[:PORT]", HOST possibly "[v6]".
  std::string hostport = base.substr(base.find("://") == std::string::npos ? 0 : base.find("://") + 3);
  std::string host = hostport, port = "80";
  if (!hostport.empty() && hostport[0] == '[') {
    size_t close = hostport.find(']');
    if (close == std::string::npos) return Status::Error("malformed host '" + hostport + "'");
    host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') port = hostport.substr(close + 2);
  } else if (size_t colon = hostport.rfind(':'); colon != std::string::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  // Name resolution can hang on a dead DNS server: on a helper thread, abandoned at the deadline.
  struct Lookup {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    int rc = 0;
    addrinfo* res = nullptr;
    bool abandoned = false;
  };
  auto lookup = std::make_shared<Lookup>();
  std::thread([lookup, host, port] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
    std::lock_guard<std::mutex> lock(lookup->mu);
    if (lookup->abandoned) {
      if (rc == 0 && res) freeaddrinfo(res);
      return;
    }
    lookup->rc = rc;
    lookup->res = res;
    lookup->done = true;
    lookup->cv.notify_all();
  }).detach();
  addrinfo* res = nullptr;
  {
    std::unique_lock<std::mutex> lock(lookup->mu);
    while (!lookup->done) {
      if ((stopping && stopping()) || Since(t0) >= timeout_s) {
        lookup->abandoned = true;
        return Status::Error(stopping && stopping() ? "stopped" : "cannot resolve " + hostport + " within " + Secs(timeout_s) + " s");
      }
      lookup->cv.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (lookup->rc != 0 || !lookup->res) {
      return Status::Error("cannot resolve " + hostport + ": " + gai_strerror(lookup->rc));
    }
    res = lookup->res;
  }
  int fd = -1;
  std::string why = "cannot connect";
  auto wait_for = [&](short events) -> Status {  // until the socket is ready, the deadline or a stop
    for (;;) {
      if (stopping && stopping()) return Status::Error("stopped");
      const double left = timeout_s - Since(t0);
      if (left <= 0) return Status::Error("not answered within " + Secs(timeout_s) + " s");
      pollfd p{fd, events, 0};
      int n = ::poll(&p, 1, static_cast<int>(std::min(100.0, left * 1000) + 1));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::Error(std::string("poll: ") + std::strerror(errno));
      if (n > 0) return Status::Ok();
    }
  };
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = std::string("cannot connect: ") + std::strerror(errno);
      ::close(fd);
      fd = -1;
      continue;
    }
    Status ready = wait_for(POLLOUT);
    int err = 0;
    socklen_t len = sizeof err;
    if (ready.ok()) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (!ready.ok() || err != 0) {
      why = ready.ok() ? std::string("cannot connect: ") + std::strerror(err) : ready.message();
      ::close(fd);
      fd = -1;
      if (!ready.ok()) break;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return Status::Error(why);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + hostport +
                              "\r\nAccept: text/plain\r\nConnection: close\r\n\r\n";
  for (size_t sent = 0; sent < request.size();) {
    RETURN_IF_ERROR(wait_for(POLLOUT));
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return Status::Error(std::string("cannot send the request: ") + std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  std::string in;
  char buf[65536];
  for (;;) {
    RETURN_IF_ERROR(wait_for(POLLIN));
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return Status::Error(std::string("cannot read the answer: ") + std::strerror(errno));
    if (n == 0) break;
    if (in.size() + static_cast<size_t>(n) > max_bytes) {
      return Status::Error("answer larger than " + std::to_string(max_bytes) + " bytes");
    }
    in.append(buf, static_cast<size_t>(n));
  }
  const size_t head_end = in.find("\r\n\r\n");
  if (in.compare(0, 5, "HTTP/") != 0 || head_end == std::string::npos) {
    return Status::Error("not an HTTP answer");
  }
  const size_t sp = in.find(' ');
  const std::string code = sp == std::string::npos ? "" : in.substr(sp + 1, 3);
  if (code != "200") return Status::Error("HTTP " + code);
  std::string head = in.substr(0, head_end + 2);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string body = in.substr(head_end + 4);
  if (head.find("\r\ntransfer-encoding:") != std::string::npos && head.find("chunked") != std::string::npos) {
    std::string decoded;
    if (!Dechunk(body, &decoded)) return Status::Error("malformed chunked answer");
    return decoded;
  }
  if (size_t cl = head.find("\r\ncontent-length:"); cl != std::string::npos) {
    const unsigned long long want = std::strtoull(head.c_str() + cl + 17, nullptr, 10);
    if (body.size() < want) return Status::Error("answer cut short (" + std::to_string(body.size()) + " of " +
                                                 std::to_string(want) + " bytes)");
    body.resize(static_cast<size_t>(want));
  }
  return body;
}

std::string DcgmScrapeLogLine(const std::string& target, const std::string& why) {
  return "gpucast serve: DCGM scrape " + ForLog(target, 256) + ": " + ForLog(why, 1024);
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
  stopping_ = true;
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
    const double timeout = std::min(kDcgmScrapeTimeoutS, interval_s_);
    for (size_t e = 0; e < targets_.size(); ++e) {
      if (stopping_) return;
      const std::string target = targets_[e].first + targets_[e].second;
      Result<std::string> page = HttpGetBounded(targets_[e].first, targets_[e].second, kDcgmMaxPageBytes, timeout,
                                                [this] { return stopping_.load(); });
      if (stopping_) return;
      if (!page.ok()) {
        std::fprintf(stderr, "%s\n", DcgmScrapeLogLine(target, page.message()).c_str());
        continue;
      }
      Result<std::vector<DcgmSample>> samples = ParseDcgmUtil(*page);
      if (!samples.ok()) {
        std::fprintf(stderr, "%s\n", DcgmScrapeLogLine(target, samples.message()).c_str());
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
