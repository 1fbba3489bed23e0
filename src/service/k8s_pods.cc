#include "service/k8s_pods.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "service/http_util.h"
#include "service/k8s_share.h"

namespace gpucast::service::k8s {

using nlohmann::json;

namespace {

constexpr size_t kMaxHeadBytes = 64 << 10;
constexpr size_t kMaxListPageBytes = 64 << 20;  // one page of at most 500 pods
constexpr size_t kMaxEventBytes = 16 << 20;     // one watch event (a pod)
constexpr int kPageSize = 500;
const char* kPodsPath = "/api/v1/pods?fieldSelector=spec.nodeName%21%3D";

const json* Member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string StringAt(const json& j, const char* a, const char* b) {
  const json* x = Member(j, a);
  const json* y = x ? Member(*x, b) : nullptr;
  return y && y->is_string() ? y->get<std::string>() : "";
}

// A device count: "2" or 2; -1 if neither.
int64_t Count(const json& v) {
  int64_t n = -1;
  if (v.is_number_integer() || v.is_number_unsigned()) {
    n = v.get<int64_t>();
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size()) n = -1;
  }
  return n >= 0 && n <= 1024 ? n : -1;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Url {
  bool tls = false;
  std::string host, port;
};

Result<Url> ParseUrl(const std::string& url) {
  Url u;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    u.tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return Status::Error("Kubernetes API server '" + url + "': want https://HOST:PORT (or http:// for a test's stub)");
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) {
    return Status::Error("Kubernetes API server '" + url + "': want no path, only https://HOST[:PORT]");
  }
  if (!rest.empty() && rest[0] == '[') {  // [IPv6]:port
    size_t close = rest.find(']');
    if (close == std::string::npos) return Status::Error("Kubernetes API server '" + url + "': unclosed '['");
    u.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') u.port = rest.substr(close + 2);
  } else {
    size_t colon = rest.rfind(':');
    u.host = rest.substr(0, colon);
    if (colon != std::string::npos) u.port = rest.substr(colon + 1);
  }
  if (u.host.empty()) return Status::Error("Kubernetes API server '" + url + "': no host");
  if (u.port.empty()) u.port = u.tls ? "443" : "80";
  return u;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return e ? buf : "unknown error";
}

// A connected socket, plain or TLS; blocking with timeouts.
class Conn {
 public:
  ~Conn() {
    if (ssl_) SSL_free(ssl_);
    if (ctx_) SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }
  Status Open(const Url& u, const std::string& ca_file, double connect_s, double read_s, std::atomic<int>* fd_out,
              const std::string& what) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(u.host.c_str(), u.port.c_str(), &hints, &res);
    if (rc != 0) return Status::Error(what + ": cannot resolve: " + gai_strerror(rc));
    std::string err = "no address";
    for (addrinfo* a = res; a && fd_ < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
        err = std::strerror(errno);
        ::close(fd);
        continue;
      }
      pollfd p{fd, POLLOUT, 0};
      int soerr = 0;
      socklen_t len = sizeof soerr;
      if (::poll(&p, 1, static_cast<int>(connect_s * 1000)) != 1 ||
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
        err = soerr ? std::strerror(soerr) : "connect timed out";
        ::close(fd);
        continue;
      }
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      timeval tv{static_cast<time_t>(read_s), 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      fd_ = fd;
    }
    ::freeaddrinfo(res);
    if (fd_ < 0) return Status::Error(what + ": cannot connect: " + err);
    if (fd_out) fd_out->store(fd_);
    if (!u.tls) return Status::Ok();
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ctx_) return Status::Error(what + ": TLS: " + OpenSslError());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx_) != 1
                        : SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr) != 1) {
      return Status::Error(what + ": CA file '" + ca_file + "': " + OpenSslError());
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    in6_addr a6;
    in_addr a4;
    const bool ip = ::inet_pton(AF_INET, u.host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, u.host.c_str(), &a6) == 1;
    if (ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), u.host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl_, u.host.c_str());
      SSL_set1_host(ssl_, u.host.c_str());
    }
    if (SSL_connect(ssl_) != 1) {
      long v = SSL_get_verify_result(ssl_);
      std::string why = v != X509_V_OK ? X509_verify_cert_error_string(v) : OpenSslError();
      return Status::Error(what + ": TLS handshake: " + why);
    }
    return Status::Ok();
  }
  bool Write(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ssl_ ? SSL_write(ssl_, s.data() + off, static_cast<int>(s.size() - off))
                       : ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // > 0 bytes, 0 at the end, < 0 an error or timeout.
  ssize_t Read(char* buf, size_t cap) {
    if (ssl_) {
      int n = SSL_read(ssl_, buf, static_cast<int>(cap));
      if (n > 0) return n;
      return SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
    }
    return ::recv(fd_, buf, cap, 0);
  }

 private:
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

}  // namespace

Status HttpGet(const ApiServer& api, const std::string& path, int* status,
               const std::function<bool(std::string_view)>& on_data, std::atomic<int>* fd_out, double connect_s,
               double read_s) {
  ASSIGN_OR_RETURN(Url u, ParseUrl(api.url));
  const std::string what = "Kubernetes API server " + api.url;
  Conn c;
  Status opened = c.Open(u, api.ca_file, connect_s, read_s, fd_out, what);
  struct Release {
    std::atomic<int>* f;
    ~Release() {
      if (f) f->store(-1);
    }
  } release{fd_out};
  RETURN_IF_ERROR(opened);
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + u.host + ":" + u.port +
                    "\r\nAccept: application/json\r\nUser-Agent: gpucast-serve\r\nConnection: close\r\n";
  if (!api.token_file.empty()) {
    const std::string token = ReadSmallFile(api.token_file);
    if (token.empty()) return Status::Error(what + ": token file '" + api.token_file + "' is empty or unreadable");
    req += "Authorization: Bearer " + token + "\r\n";
  }
  req += "\r\n";
  if (!c.Write(req)) return Status::Error(what + ": cannot send the request");
  // The head.
  std::string buf;
  char tmp[16384];
  size_t head_end = std::string::npos;
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (buf.size() > kMaxHeadBytes) return Status::Error(what + ": response head longer than 64 KiB");
    ssize_t n = c.Read(tmp, sizeof tmp);
    if (n <= 0) return Status::Error(what + ": connection closed before a response");
    buf.append(tmp, static_cast<size_t>(n));
  }
  const std::string head = buf.substr(0, head_end);
  buf.erase(0, head_end + 4);
  if (head.rfind("HTTP/1.", 0) != 0 || head.size() < 12) return Status::Error(what + ": not an HTTP response");
  *status = std::atoi(head.c_str() + 9);
  bool chunked = false;
  int64_t length = -1;
  std::istringstream lines(head);
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = Lower(line.substr(0, colon)), value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(value.begin());
    if (name == "transfer-encoding" && Lower(value).find("chunked") != std::string::npos) chunked = true;
    if (name == "content-length") length = std::atoll(value.c_str());
  }
  auto more = [&]() {
    ssize_t n = c.Read(tmp, sizeof tmp);
    if (n > 0) buf.append(tmp, static_cast<size_t>(n));
    return n;
  };
  if (!chunked) {
    int64_t got = 0;
    for (;;) {
      if (!buf.empty()) {
        size_t take = length >= 0 ? std::min<size_t>(buf.size(), static_cast<size_t>(length - got)) : buf.size();
        if (!on_data(std::string_view(buf).substr(0, take))) return Status::Ok();
        got += static_cast<int64_t>(take);
        buf.clear();
      }
      if (length >= 0 && got >= length) return Status::Ok();
      ssize_t n = more();
      if (n == 0) return length < 0 ? Status::Ok() : Status::Error(what + ": body ended early");
      if (n < 0) return Status::Error(what + ": read failed or timed out");
    }
  }
  for (;;) {  // chunked: SIZE\r\n DATA \r\n ... 0\r\n\r\n
    size_t eol;
    while ((eol = buf.find("\r\n")) == std::string::npos) {
      if (buf.size() > 1024) return Status::Error(what + ": bad chunk header");
      ssize_t n = more();
      if (n == 0) return Status::Ok();  // the server closed the stream
      if (n < 0) return Status::Error(what + ": read failed or timed out");
    }
    size_t size = 0;
    auto [end, ec] = std::from_chars(buf.data(), buf.data() + eol, size, 16);
    if (ec != std::errc() || end == buf.data()) return Status::Error(what + ": bad chunk size");
    buf.erase(0, eol + 2);
    if (size == 0) return Status::Ok();
    // The chunk's data, handed on as it arrives (a watch stream's chunk may be long).
    while (size > 0) {
      if (buf.empty()) {
        ssize_t n = more();
        if (n == 0) return Status::Error(what + ": stream ended inside a chunk");
        if (n < 0) return Status::Error(what + ": read failed or timed out");
      }
      const size_t give = std::min(buf.size(), size);
      if (!on_data(std::string_view(buf).substr(0, give))) return Status::Ok();
      buf.erase(0, give);
      size -= give;
    }
    while (buf.size() < 2) {
      ssize_t n = more();
      if (n == 0) return Status::Ok();
      if (n < 0) return Status::Error(what + ": read failed or timed out");
    }
    buf.erase(0, 2);
  }
}

std::optional<RunningPod> PodFromJson(const json& pod, const std::string& share_key) {
  RunningPod p;
  const std::string name = StringAt(pod, "metadata", "name"), ns = StringAt(pod, "metadata", "namespace");
  p.node = StringAt(pod, "spec", "nodeName");
  const std::string phase = StringAt(pod, "status", "phase");
  if (name.empty() || p.node.empty() || phase == "Succeeded" || phase == "Failed") return std::nullopt;
  p.key = ns + "/" + name;
  const json* spec = Member(pod, "spec");
  const json* containers = spec ? Member(*spec, "containers") : nullptr;
  if (containers && containers->is_array()) {
    for (const json& c : *containers) {
      const json* res = Member(c, "resources");
      for (const char* list : {"limits", "requests"}) {
        const json* l = res ? Member(*res, list) : nullptr;
        const json* q = l ? Member(*l, "nvidia.com/gpu") : nullptr;
        if (!q) continue;
        p.gpus += std::max<int64_t>(0, Count(*q));
        break;
      }
    }
  }
  Result<PodShare> share = ReadPodShare(pod);
  if (share.ok() && share->sized && ShareVerifies(share_key, ns, pod)) {
    p.share = *share;
    p.verified = true;
  }
  return p;
}

void AddPods(std::map<std::string, std::vector<GpuLoad>>* nodes, const std::vector<RunningPod>& pods) {
  auto load = [](const GpuLoad& g) {
    double s = 0;
    for (double u : g.utils) s += u;
    return s + (g.exclusive ? 1000 : 0);
  };
  // Whole-GPU pods first (they need idle GPUs), then shares, largest first.
  std::vector<const RunningPod*> order;
  for (const RunningPod& p : pods) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const RunningPod* a, const RunningPod* b) {
    const bool wa = !a->verified || a->share.gpus > 1, wb = !b->verified || b->share.gpus > 1;
    if (wa != wb) return wa;
    return a->share.util > b->share.util;
  });
  for (const RunningPod* p : order) {
    // A MIG slice is an isolated partition, not a load on gpucast's whole-GPU view.
    if (p->verified && !p->share.mig.empty()) continue;
    auto it = nodes->find(p->node);
    if (it == nodes->end()) continue;
    std::vector<GpuLoad>& gpus = it->second;
    RunningPod on_node = *p;  // a mixed cluster's pod counts by its share on this node's GPU type
    on_node.share = ForNode(p->share, gpus);
    p = &on_node;
    if (p->verified && p->share.gpus == 1) {
      GpuLoad* best = nullptr;
      for (GpuLoad& g : gpus) {
        if (g.type != p->share.gpu || g.exclusive || g.mem_used_mib + p->share.mem_mib > g.mem_mib + 1e-6) continue;
        if (!best || load(g) < load(*best)) best = &g;
      }
      if (!best) {  // no GPU of its type has its memory: the least loaded of the type
        for (GpuLoad& g : gpus)
          if (g.type == p->share.gpu && (!best || load(g) < load(*best))) best = &g;
      }
      if (best) {
        best->utils.push_back(p->share.util);
        best->mem_used_mib += p->share.mem_mib;
      }
      continue;
    }
    // Whole GPUs: the pod's count (a share's gpus, else its nvidia.com/gpu), idle ones first.
    int64_t want = p->verified ? p->share.gpus : p->gpus;
    for (int64_t k = 0; k < want; ++k) {
      GpuLoad* best = nullptr;
      for (GpuLoad& g : gpus) {
        if (p->verified && g.type != p->share.gpu) continue;
        if (!best || load(g) < load(*best)) best = &g;
      }
      if (!best) break;
      best->utils.push_back(p->verified ? p->share.util : 100.0);
      best->mem_used_mib = p->verified ? best->mem_used_mib + p->share.mem_mib : best->mem_mib;
      best->exclusive = true;
    }
  }
}

Result<ApiServer> InClusterApiServer() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port) {
    return Status::Error("--k8s-watch-pods: not in a Kubernetes pod (KUBERNETES_SERVICE_HOST/PORT unset); give "
                         "--k8s-api-server URL");
  }
  ApiServer a;
  const std::string h = host;
  a.url = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  a.token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  a.ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  return a;
}

PodView::~PodView() {
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  cv_.notify_all();
  int fd = fd_.load();
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
}

Status PodView::StartWatching(const ApiServer& api, const std::string& share_key) {
  ASSIGN_OR_RETURN(Url u, ParseUrl(api.url));
  (void)u;
  if (thread_.joinable()) return Status::Error("the pods are watched already");
  thread_ = std::thread([this, api, share_key] { Run(api, share_key); });
  return Status::Ok();
}

std::optional<std::vector<RunningPod>> PodView::Pods() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!synced_) return std::nullopt;
  std::vector<RunningPod> out;
  out.reserve(pods_.size());
  for (const auto& [k, p] : pods_) out.push_back(p);
  return out;
}

void PodView::Replace(std::vector<RunningPod> pods) {
  std::lock_guard<std::mutex> lock(mu_);
  pods_.clear();
  for (RunningPod& p : pods) pods_[p.key] = std::move(p);
  synced_ = true;
  ++stats_.lists;
}

void PodView::Apply(const std::string& type, const json& object, const std::string& share_key) {
  const std::string key = StringAt(object, "metadata", "namespace") + "/" + StringAt(object, "metadata", "name");
  std::optional<RunningPod> p;
  if (type != "DELETED") p = PodFromJson(object, share_key);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.events;
  if (p) pods_[key] = std::move(*p);
  else pods_.erase(key);
}

PodView::Stats PodView::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Status PodView::ListAndWatch(const ApiServer& api, const std::string& share_key) {
  // The list, a page at a time.
  std::vector<RunningPod> pods;
  std::string cont, version;
  do {
    std::string path = std::string(kPodsPath) + "&limit=" + std::to_string(kPageSize);
    if (!cont.empty()) path += "&continue=" + cont;
    std::string body;
    int status = 0;
    bool too_big = false;
    RETURN_IF_ERROR(HttpGet(api, path, &status, [&](std::string_view d) {
      if (body.size() + d.size() > kMaxListPageBytes) return !(too_big = true);
      body.append(d);
      return true;
    }, &fd_, 10, 60));
    if (too_big) return Status::Error("list of pods: a page larger than 64 MiB");
    if (status != 200) return Status::Error("list of pods: HTTP " + std::to_string(status) + ": " + body.substr(0, 200));
    json page = json::parse(body, nullptr, false);
    if (page.is_discarded() || !page.is_object()) return Status::Error("list of pods: not JSON");
    const json* items = Member(page, "items");
    if (items && items->is_array()) {
      for (const json& item : *items) {
        if (auto p = PodFromJson(item, share_key)) pods.push_back(std::move(*p));
      }
    }
    version = StringAt(page, "metadata", "resourceVersion");
    cont = StringAt(page, "metadata", "continue");
    // The continue token goes back percent-encoded (it may hold '+', '/', '=').
    std::string escaped;
    for (unsigned char c : cont) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
        escaped += static_cast<char>(c);
      } else {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%%%02X", c);
        escaped += hex;
      }
    }
    cont = escaped;
  } while (!cont.empty() && !stop_);
  Replace(std::move(pods));
  // Watches from the list's version until one fails (the caller relists).
  while (!stop_) {
    std::string path = std::string(kPodsPath) + "&watch=1&allowWatchBookmarks=true&resourceVersion=" + version +
                       "&timeoutSeconds=" + std::to_string(api.watch_timeout_s);
    std::string line;
    int status = 0;
    Status event_error = Status::Ok();
    const auto started = std::chrono::steady_clock::now();
    int64_t events = 0;
    Status got = HttpGet(api, path, &status, [&](std::string_view d) {
      if (status != 200) {
        line.append(d.substr(0, 512));
        return line.size() < 512;
      }
      for (char ch : d) {
        if (ch != '\n') {
          line += ch;
          if (line.size() > kMaxEventBytes) {
            event_error = Status::Error("watch of pods: an event larger than 16 MiB");
            return false;
          }
          continue;
        }
        json ev = json::parse(line, nullptr, false);
        line.clear();
        if (ev.is_discarded() || !ev.is_object()) continue;
        const std::string type = ev.value("type", "");
        const json* obj = Member(ev, "object");
        if (!obj) continue;
        if (type == "ERROR") {  // 410 Gone: the version is too old; relist
          event_error = Status::Error("watch of pods: " + obj->value("message", std::string("error event")));
          return false;
        }
        const std::string v = StringAt(*obj, "metadata", "resourceVersion");
        if (!v.empty()) version = v;
        if (type == "ADDED" || type == "MODIFIED" || type == "DELETED") Apply(type, *obj, share_key);
        ++events;
      }
      return true;
    }, &fd_, 10, api.watch_timeout_s + 30.0);
    if (status != 200 && got.ok()) {
      return Status::Error("watch of pods: HTTP " + std::to_string(status) + ": " + line);
    }
    RETURN_IF_ERROR(got);
    RETURN_IF_ERROR(event_error);
    // A server that ends watches at once is not asked again in a tight loop.
    if (events == 0 && std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::duration<double>(api.retry_s), [this] { return stop_.load(); });
    }
  }
  return Status::Ok();
}

void PodView::Run(ApiServer api, std::string share_key) {
  double wait_s = api.retry_s;  // doubles after each failure in a row, up to a minute
  while (!stop_) {
    const int64_t lists_before = stats().lists;
    Status s = ListAndWatch(api, share_key);
    if (stop_) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.failures;
      stats_.last_error = s.ok() ? "watch ended" : s.message();
    }
    if (stats().lists > lists_before) wait_s = api.retry_s;  // it listed: start the back-off afresh
    if (!s.ok()) {
      std::fprintf(stderr, "gpucast serve: k8s: pods: %s (relisting in %.0f s)\n", ForLog(s.message(), 512).c_str(),
                   wait_s);
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(wait_s), [this] { return stop_.load(); });
    wait_s = std::min(60.0, wait_s * 2);
  }
}

}  // namespace gpucast::service::k8s
