#include "service/http_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "service/http_util.h"
#include "service/tls.h"
#include "util/json_text.h"

namespace gpucast::service {

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr size_t kMaxHeaders = 100;
// One header line, CRLF included: cpp-httplib (Debian's libcpp-httplib, CPPHTTPLIB_HEADER_MAX_LENGTH)
// refuses a longer one with a bare 400, so the framer refuses it first, saying why.
constexpr size_t kMaxHeaderLine = 8192;
constexpr size_t kMaxChunkLine = 1024;
constexpr size_t kKeepAliveMax = 1000;  // requests per connection
constexpr double kLingerS = 2;          // reading and discarding after a refusal, so the client sees it

// RFC 9110 token characters (strchr alone would match the NUL terminator).
bool IsTchar(unsigned char c) {
  return std::isalnum(c) || (c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

std::string ErrorResponse(int status, const std::string& message, bool close, const std::string& extra_headers) {
  std::string body = JsonText(nlohmann::json{{"error", message}});
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) +
                    "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\n";
  if (close) out += "Connection: close\r\n";
  return out + extra_headers + "\r\n" + body;
}

std::string WithClientCert(std::string r, const std::string& verified_peer) {
  const size_t first = r.find("\r\n");
  if (first == std::string::npos) return r;
  const size_t blank = r.find("\r\n\r\n");
  const size_t limit = blank == std::string::npos ? r.size() : blank + 2;  // end of the last header line
  static const std::string kName = Lower(kClientCertHeader) + ":";
  std::string out = r.substr(0, first + 2);
  for (size_t pos = first + 2; pos < limit;) {
    size_t e = r.find("\r\n", pos);
    if (e == std::string::npos || e > limit) e = limit;
    std::string_view line(r.data() + pos, e - pos);
    if (!(line.size() >= kName.size() && Lower(line.substr(0, kName.size())) == kName)) {
      out.append(line).append("\r\n");
    }
    pos = e + 2;
  }
  if (!verified_peer.empty()) {
    std::string v = verified_peer;
    for (char& ch : v) {
      if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7F) ch = '?';
    }
    out.append(kClientCertHeader).append(": ").append(v).append("\r\n");
  }
  if (limit < r.size()) out.append(r, limit, std::string::npos);
  return out;
}

// ---------------------------------------------------------------- framer

RequestFramer::State RequestFramer::Fail(int status, std::string message) {
  phase_ = Phase::kFailed;
  error_status_ = status;
  error_message_ = std::move(message);
  return State::kError;
}

RequestFramer::State RequestFramer::Feed(std::string_view bytes) {
  if (phase_ == Phase::kFailed) return State::kError;
  in_.append(bytes);
  return Parse();
}

RequestFramer::State RequestFramer::ParseHead(size_t head_len) {
  std::string_view head(in_.data(), head_len);
  keep_alive_ = true;
  want_continue_ = continue_sent_ = false;
  head_out_.clear();
  head_parsed_ = false;
  body_.clear();
  // Request line.
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Fail(400, "malformed request line: want 'METHOD TARGET HTTP/1.1'");
  }
  std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                   version = line.substr(sp2 + 1);
  if (method.empty() || method.size() > 16 ||
      !std::all_of(method.begin(), method.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    return Fail(400, "malformed request line: bad method");
  }
  if (target.empty() || !std::all_of(target.begin(), target.end(), [](char c) {
        return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7F;
      })) {
    return Fail(400, "malformed request target: want printable ASCII (percent-encode other bytes)");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return Fail(505, "unsupported HTTP version: want HTTP/1.1 or HTTP/1.0");
  }
  const bool http10 = version == "HTTP/1.0";
  if (http10) keep_alive_ = false;
  head_out_.append(line).append("\r\n");

  // Header fields.
  std::string content_length;
  bool have_length = false, chunked = false, have_te = false;
  std::string content_type;
  size_t count = 0;
  size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string_view::npos) e = head.size();
    std::string_view field = head.substr(pos, e - pos);
    pos = e + 2;
    if (++count > kMaxHeaders) return Fail(431, "more than 100 header fields");
    if (field.size() + 2 > kMaxHeaderLine) {
      return Fail(431, "header line longer than " + std::to_string(kMaxHeaderLine) + " bytes");
    }
    if (!field.empty() && (field[0] == ' ' || field[0] == '\t')) {
      return Fail(400, "obsolete header line folding is not accepted");
    }
    size_t colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0) return Fail(400, "malformed header field: want 'Name: value'");
    std::string_view name = field.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), [](char c) { return IsTchar(static_cast<unsigned char>(c)); })) {
      return Fail(400, "malformed header field name");
    }
    std::string_view value = Trim(field.substr(colon + 1));
    for (char ch : value) {
      unsigned char c = static_cast<unsigned char>(ch);
      // HTAB is field whitespace (RFC 9110 5.5); every other control byte is refused.
      if ((c < 0x20 && c != '\t') || c == 0x7F) {
        return Fail(400, "header '" + std::string(name) + "': control byte in the value");
      }
    }
    if (!IsValidUtf8(value)) return Fail(400, "header '" + std::string(name) + "': value is not valid UTF-8");
    const std::string lname = Lower(name);
    if (lname == "content-length") {
      // "5", or a list "5, 5"; every value must be the same number.
      std::string_view rest = value;
      do {
        size_t comma = rest.find(',');
        std::string_view v = Trim(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        if (v.empty() || v.size() > 18 ||
            !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
          return Fail(400, "Content-Length: want a decimal number of bytes");
        }
        while (v.size() > 1 && v.front() == '0') v.remove_prefix(1);
        if (have_length && v != content_length) return Fail(400, "conflicting Content-Length headers");
        content_length = std::string(v);
        have_length = true;
        if (comma == std::string_view::npos) break;
      } while (true);
      continue;
    }
    if (lname == "transfer-encoding") {
      if (have_te || Lower(value) != "chunked") {
        return Fail(501, "Transfer-Encoding: only 'chunked' is supported");
      }
      have_te = chunked = true;
      continue;
    }
    if (lname == "expect") {
      if (Lower(value) != "100-continue") return Fail(417, "Expect: only '100-continue' is supported");
      want_continue_ = true;
      continue;
    }
    if (lname == "connection") {
      std::string v = Lower(value);
      if (v.find("close") != std::string::npos) keep_alive_ = false;
      else if (http10 && v.find("keep-alive") != std::string::npos) keep_alive_ = true;
      continue;
    }
    if (lname == "content-type") content_type = Lower(value);
    head_out_.append(name).append(": ").append(value).append("\r\n");
  }
  if (have_length && have_te) return Fail(400, "both Content-Length and Transfer-Encoding");
  if (have_te && http10) return Fail(400, "Transfer-Encoding in an HTTP/1.0 request");

  // The head is whole: admission may judge it even if the body is refused for its size.
  head_parsed_ = true;
  const bool upload = content_type.rfind("application/octet-stream", 0) == 0;
  body_limit_ = upload ? limits_.max_body_bytes : std::min(limits_.max_body_bytes, limits_.max_json_body_bytes);
  auto too_large = [&] {
    if (upload || limits_.max_body_bytes <= limits_.max_json_body_bytes) {
      return Fail(413, "request body larger than " + std::to_string(limits_.max_body_bytes) +
                           " bytes (--max-body-bytes)");
    }
    return Fail(413, "request body larger than " + std::to_string(body_limit_) +
                         " bytes (the limit for bodies other than application/octet-stream uploads)");
  };
  remaining_ = 0;
  if (chunked) {
    phase_ = Phase::kChunkSize;
  } else if (have_length && content_length != "0") {
    uint64_t len = std::stoull(content_length);
    if (len > body_limit_) return too_large();
    remaining_ = len;
    phase_ = Phase::kBody;
  } else {
    phase_ = Phase::kDone;
  }
  body_expected_ = phase_ != Phase::kDone;
  if (phase_ == Phase::kDone) want_continue_ = false;
  in_.erase(0, head_len + 4);
  return State::kNeedMore;
}

RequestFramer::State RequestFramer::Parse() {
  for (;;) {
    switch (phase_) {
      case Phase::kFailed: return State::kError;
      case Phase::kDone: return State::kComplete;
      case Phase::kHead: {
        if (!started_) {
          size_t i = 0;
          while (i < in_.size() && (in_[i] == '\r' || in_[i] == '\n')) ++i;
          in_.erase(0, i);
          if (in_.empty()) return State::kNeedMore;
          started_ = true;
        }
        size_t end = in_.find("\r\n\r\n");
        // Every byte of the head so far (each once): a bare LF or CR is
        // refused now, not after a read timeout waiting for CRLFCRLF.
        const size_t stop = std::min(end == std::string::npos ? in_.size() : end + 2, limits_.max_header_bytes);
        for (size_t i = scanned_; i < stop; ++i) {
          const bool bare_cr = in_[i] == '\r' && i + 1 < in_.size() && in_[i + 1] != '\n';
          const bool bare_lf = in_[i] == '\n' && (i == 0 || in_[i - 1] != '\r');
          if (bare_cr || bare_lf) return Fail(400, "bare CR or LF in the request head: lines end with CRLF");
          if (in_[i] == '\r' && i + 1 == in_.size()) break;  // its LF may come next
          scanned_ = i + 1;
        }
        if (end == std::string::npos) {
          if (in_.size() > limits_.max_header_bytes) {
            return Fail(431, "request line and headers larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
          }
          return State::kNeedMore;
        }
        if (end + 4 > limits_.max_header_bytes) {
          return Fail(431, "request line and headers larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
        }
        State s = ParseHead(end);
        if (s == State::kError) return s;
        break;
      }
      case Phase::kBody: {
        size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, in_.size()));
        body_.append(in_, 0, take);
        in_.erase(0, take);
        remaining_ -= take;
        if (remaining_ > 0) return State::kNeedMore;
        phase_ = Phase::kDone;
        break;
      }
      case Phase::kChunkSize: {
        size_t e = in_.find("\r\n");
        if (e == std::string::npos) {
          if (in_.size() > kMaxChunkLine) return Fail(400, "malformed chunked body: chunk-size line too long");
          return State::kNeedMore;
        }
        if (e > kMaxChunkLine) return Fail(400, "malformed chunked body: chunk-size line too long");
        std::string_view line(in_.data(), e);
        size_t semi = line.find(';');
        std::string_view hex = Trim(line.substr(0, semi));
        if (hex.empty() || hex.size() > 15 || !std::all_of(hex.begin(), hex.end(), [](char c) {
              return std::isxdigit(static_cast<unsigned char>(c));
            })) {
          return Fail(400, "malformed chunked body: bad chunk size");
        }
        for (char c : line) {
          if (static_cast<unsigned char>(c) < 0x20 && c != '\t') return Fail(400, "malformed chunked body: control byte");
        }
        uint64_t size = std::stoull(std::string(hex), nullptr, 16);
        in_.erase(0, e + 2);
        if (size == 0) {
          phase_ = Phase::kTrailers;
          remaining_ = 0;  // trailer bytes seen
          break;
        }
        if (body_.size() + size > body_limit_) {
          if (body_limit_ == limits_.max_body_bytes) {
            return Fail(413, "request body larger than " + std::to_string(limits_.max_body_bytes) +
                                 " bytes (--max-body-bytes)");
          }
          return Fail(413, "request body larger than " + std::to_string(body_limit_) +
                               " bytes (the limit for bodies other than application/octet-stream uploads)");
        }
        remaining_ = size;
        phase_ = Phase::kChunkData;
        break;
      }
      case Phase::kChunkData: {
        size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, in_.size()));
        body_.append(in_, 0, take);
        in_.erase(0, take);
        remaining_ -= take;
        if (remaining_ > 0) return State::kNeedMore;
        phase_ = Phase::kChunkDataEnd;
        break;
      }
      case Phase::kChunkDataEnd: {
        if (in_.size() < 2) return State::kNeedMore;
        if (in_[0] != '\r' || in_[1] != '\n') return Fail(400, "malformed chunked body: chunk data not followed by CRLF");
        in_.erase(0, 2);
        phase_ = Phase::kChunkSize;
        break;
      }
      case Phase::kTrailers: {
        size_t e = in_.find("\r\n");
        if (e == std::string::npos) {
          if (remaining_ + in_.size() > limits_.max_header_bytes) return Fail(431, "trailer section too large");
          return State::kNeedMore;
        }
        remaining_ += e + 2;
        if (remaining_ > limits_.max_header_bytes) return Fail(431, "trailer section too large");
        in_.erase(0, e + 2);
        if (e == 0) phase_ = Phase::kDone;  // trailers are discarded
        break;
      }
    }
  }
}

bool RequestFramer::TakeHeadForCheck(std::string* head) {
  if (head_checked_ || !head_parsed_) return false;
  head_checked_ = true;
  *head = head_out_;
  return true;
}

std::string RequestFramer::TakeRequest() {
  std::string out = std::move(head_out_);
  out += "Content-Length: " + std::to_string(body_.size()) + "\r\n\r\n";
  out += body_;
  head_out_.clear();
  body_.clear();
  body_.shrink_to_fit();
  phase_ = Phase::kHead;
  started_ = false;
  want_continue_ = continue_sent_ = false;
  head_checked_ = false;
  head_parsed_ = false;
  body_expected_ = false;
  scanned_ = 0;
  remaining_ = 0;
  return out;
}

// ---------------------------------------------------------------- front

struct HttpFront::Conn {
  Conn(uint64_t id_, int fd_, std::string ip_, int port_, const FrontLimits& l)
      : id(id_), fd(fd_), ip(std::move(ip_)), port(port_), framer(l) {}
  enum class St { kReading, kProcessing, kWriting, kClosing };
  uint64_t id;
  int fd;
  std::string ip;
  int port;
  RequestFramer framer;
  St st = St::kReading;
  double last_activity = 0, request_start = 0, write_start = 0, closing_since = 0;
  std::string out;
  size_t out_off = 0;
  bool close_after = false;
  size_t served = 0;
  size_t accounted = 0;  // bytes of this connection in buffered_total_
  uint32_t interest = 0;
  bool in_epoll = true;
  // TLS (HttpFront::UseTls): the session, whether its handshake is still
  // under way (since accepted_at), a read that waits for writability, and
  // the verified client certificate's subject.
  std::unique_ptr<TlsSession> tls;
  bool handshaking = false;
  bool handshake_busy = false;  // a handshake thread is running a step (the loop leaves the session alone)
  bool read_wants_write = false;
  double accepted_at = 0;
  std::string peer;
};

HttpFront::HttpFront(const FrontLimits& limits, Handler handler, Observer observer, HeadCheck head_check)
    : limits_(limits),
      handler_(std::move(handler)),
      observer_(std::move(observer)),
      head_check_(std::move(head_check)) {}

HttpFront::~HttpFront() {
  Stop();
  for (auto& [id, c] : conns_) ::close(c->fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Result<int> HttpFront::Bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0 || !res) {
    return Status::Error("cannot listen on " + host + ":" + service + ": cannot resolve the host");
  }
  int fd = -1;
  std::string why = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) break;
    why = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) return Status::Error("cannot listen on " + host + ":" + service + ": " + why);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  int bound = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  listen_fd_ = fd;
  return bound;
}

void HttpFront::Wake() {
  uint64_t one = 1;
  if (wake_fd_ >= 0) {
    ssize_t n = ::write(wake_fd_, &one, sizeof one);
    (void)n;
  }
}

void HttpFront::Stop() {
  stopping_ = true;
  Wake();
}

void HttpFront::SetInterest(Conn& c, bool read, bool write) {
  uint32_t ev = (read ? EPOLLIN | EPOLLRDHUP : 0u) | (write ? EPOLLOUT : 0u);
  if (ev == c.interest && c.in_epoll) return;
  epoll_event e{};
  e.events = ev;
  e.data.u64 = c.id;
  epoll_ctl(epoll_fd_, c.in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c.fd, &e);
  c.in_epoll = true;
  c.interest = ev;
}

Status HttpFront::Run() {
  if (listen_fd_ < 0) return Status::Error("HttpFront::Run before Bind");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return Status::Error(std::string("epoll: ") + std::strerror(errno));
  constexpr uint64_t kListen = 0, kWake = ~uint64_t{0};
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.u64 = kListen;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &e);
  e.data.u64 = kWake;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &e);
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers_stop_ = false;
  }
  for (int i = 0; i < std::max(1, limits_.threads); ++i) workers_.emplace_back([this] { Worker(false); });
  workers_.emplace_back([this] { Worker(true); });  // light requests only
  if (tls_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hs_stop_ = false;
    }
    for (int i = 0; i < kHandshakeThreads; ++i) hs_workers_.emplace_back([this] { HandshakeWorker(); });
  }

  bool accept_paused = false;
  double resume_accept_at = 0;
  std::vector<epoll_event> events(256);
  while (!stopping_) {
    // Connections with bytes buffered inside TLS are served without waiting.
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), tls_pending_.empty() ? 50 : 0);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      uint64_t id = events[i].data.u64;
      uint32_t ev = events[i].events;
      if (id == kListen) {
        Accept();
        continue;
      }
      if (id == kWake) {
        uint64_t v;
        while (::read(wake_fd_, &v, sizeof v) > 0) {
        }
        std::deque<Done> done;
        std::deque<HandshakeDone> hs_done;
        {
          std::lock_guard<std::mutex> lock(mu_);
          done.swap(done_);
          hs_done.swap(hs_done_);
        }
        for (Done& d : done) {
          auto it = conns_.find(d.id);
          if (it == conns_.end()) continue;
          StartReply(*it->second, std::move(d.response), d.close);
        }
        for (const HandshakeDone& d : hs_done) {
          auto it = conns_.find(d.id);
          if (it != conns_.end()) FinishHandshake(*it->second, d.io);
        }
        continue;
      }
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      Conn& c = *it->second;
      if (c.st == Conn::St::kProcessing) {
        // The client hung up while its request is handled: stop watching the
        // socket (level-triggered hang-ups would spin); the reply's write
        // finds out whether it is gone.
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
        c.in_epoll = false;
        continue;
      }
      // Over TLS a read may wait for writability and a write for readability.
      const bool tls = c.tls != nullptr;
      if (((ev & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) || (tls && (ev & EPOLLOUT))) &&
          (c.st == Conn::St::kReading || c.st == Conn::St::kClosing)) {
        OnReadable(c);
        it = conns_.find(id);
        if (it == conns_.end()) continue;
      }
      if (((ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) || (tls && (ev & EPOLLIN))) &&
          it->second->st == Conn::St::kWriting) {
        OnWritable(*it->second);
      }
    }
    if (!tls_pending_.empty()) {
      std::vector<uint64_t> pending;
      pending.swap(tls_pending_);
      for (uint64_t id : pending) {
        auto it = conns_.find(id);
        if (it != conns_.end() && it->second->st == Conn::St::kReading) OnReadable(*it->second);
      }
    }
    double now = Now();
    // Out of file descriptors: stop accepting for a moment instead of spinning.
    if (!accept_paused && accept_starved_) {
      accept_paused = true;
      accept_starved_ = false;
      resume_accept_at = now + 0.1;
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    } else if (accept_paused && now >= resume_accept_at) {
      accept_paused = false;
      e.events = EPOLLIN;
      e.data.u64 = kListen;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &e);
    }
    CheckTimers(now);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers_stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    hs_stop_ = true;
    hs_jobs_.clear();
  }
  hs_cv_.notify_all();
  for (std::thread& t : hs_workers_) t.join();
  hs_workers_.clear();
  hs_done_.clear();
  std::vector<uint64_t> ids;
  for (auto& [id, c] : conns_) ids.push_back(id);
  for (uint64_t id : ids) CloseConn(id);
  return Status::Ok();
}

void HttpFront::Accept() {
  for (int k = 0; k < 64; ++k) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {  // EAGAIN, or out of descriptors (Run then pauses accepting)
      if (errno == EMFILE || errno == ENFILE) accept_starved_ = true;
      return;
    }
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
      port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
      port = ntohs(a->sin6_port);
    }
    std::string refusal;
    if (static_cast<int>(conns_.size()) >= limits_.max_connections) {
      refusal = "too many open connections (--max-connections " + std::to_string(limits_.max_connections) + ")";
    } else if (per_client_[ip] >= limits_.max_connections_per_client) {
      refusal = "too many open connections from your address (--max-connections-per-client " +
                std::to_string(limits_.max_connections_per_client) + ")";
    }
    if (!refusal.empty()) {
      if (per_client_[ip] == 0) per_client_.erase(ip);
      if (!tls_) {  // over TLS no reply can precede the handshake: closed without one
        std::string r = ErrorResponse(503, refusal, true);
        ssize_t n = ::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)n;
      }
      ::shutdown(fd, SHUT_WR);
      ::close(fd);
      if (observer_) observer_(503);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uint64_t id = next_id_++;
    auto c = std::make_unique<Conn>(id, fd, ip, port, limits_);
    c->last_activity = c->accepted_at = Now();
    if (tls_) {
      c->tls = tls_->NewSession(fd);
      if (!c->tls) {
        ::close(fd);
        continue;
      }
      c->handshaking = true;
    }
    epoll_event e{};
    e.events = EPOLLIN | EPOLLRDHUP;
    e.data.u64 = id;
    c->interest = e.events;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e) != 0) {
      ::close(fd);
      continue;
    }
    ++per_client_[ip];
    conns_[id] = std::move(c);
    ++open_;
  }
}

void HttpFront::CloseConn(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if (c.in_epoll) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  buffered_total_ -= c.accounted;
  if (--per_client_[c.ip] <= 0) per_client_.erase(c.ip);
  conns_.erase(it);
  --open_;
}

ssize_t HttpFront::ReadSome(Conn& c, char* buf, size_t cap) {
  if (!c.tls) {
    ssize_t n = ::recv(c.fd, buf, cap, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return -2;
    return n < 0 ? -1 : n;
  }
  if (c.read_wants_write) {
    c.read_wants_write = false;
    SetInterest(c, true, false);
  }
  size_t got = 0;
  switch (c.tls->Read(buf, cap, &got)) {
    case TlsSession::Io::kDone: return static_cast<ssize_t>(got);
    case TlsSession::Io::kWantRead: return -2;
    case TlsSession::Io::kWantWrite:
      c.read_wants_write = true;
      SetInterest(c, true, true);
      return -2;
    case TlsSession::Io::kClosed: return 0;
    case TlsSession::Io::kError: return -1;
  }
  return -1;
}

ssize_t HttpFront::WriteSome(Conn& c, const char* buf, size_t len) {
  if (!c.tls) {
    ssize_t n = ::send(c.fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      SetInterest(c, false, true);
      return -2;
    }
    return n <= 0 ? -1 : n;
  }
  size_t put = 0;
  switch (c.tls->Write(buf, len, &put)) {
    case TlsSession::Io::kDone: return static_cast<ssize_t>(put);
    case TlsSession::Io::kWantWrite: SetInterest(c, false, true); return -2;
    case TlsSession::Io::kWantRead: SetInterest(c, true, false); return -2;
    case TlsSession::Io::kClosed:
    case TlsSession::Io::kError: return -1;
  }
  return -1;
}

void HttpFront::StartHandshake(Conn& c) {
  c.last_activity = Now();
  // Off the event loop: the step's key exchange and signature run on a
  // handshake thread; the socket is not watched meanwhile.
  if (c.in_epoll) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    c.in_epoll = false;
    c.interest = 0;
  }
  c.handshake_busy = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hs_jobs_.push_back({c.id, c.tls.get()});
  }
  hs_cv_.notify_one();
}

void HttpFront::FinishHandshake(Conn& c, int step) {
  const auto io = static_cast<TlsSession::Io>(step);
  c.handshake_busy = false;
  c.last_activity = Now();
  switch (io) {
    case TlsSession::Io::kDone:
      c.handshaking = false;
      c.peer = c.tls->VerifiedPeer();
      if (c.peer.empty()) {
        if (std::string refused = c.tls->RefusedPeer(); !refused.empty()) {
          std::fprintf(stderr,
                       "gpucast serve: client certificate %s from %s is not in --tls-client-subject: treated as no "
                       "certificate\n",
                       ForLog(refused).c_str(), c.ip.c_str());
        }
      }
      SetInterest(c, true, false);
      OnReadable(c);  // application data may be buffered inside TLS already
      return;
    case TlsSession::Io::kWantRead: SetInterest(c, true, false); return;
    case TlsSession::Io::kWantWrite: SetInterest(c, true, true); return;
    case TlsSession::Io::kClosed:
    case TlsSession::Io::kError: break;
  }
  CloseConn(c.id);  // a failed handshake (wrong CA, plain HTTP, garbage, no common group): nothing to answer
}

void HttpFront::HandshakeWorker() {
  for (;;) {
    HandshakeJob job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      hs_cv_.wait(lock, [this] { return hs_stop_ || !hs_jobs_.empty(); });
      if (hs_jobs_.empty()) return;
      job = hs_jobs_.front();
      hs_jobs_.pop_front();
    }
    const TlsSession::Io io = job.tls->Handshake();  // non-blocking: one step
    {
      std::lock_guard<std::mutex> lock(mu_);
      hs_done_.push_back({job.id, static_cast<int>(io)});
    }
    Wake();
  }
}

void HttpFront::OnReadable(Conn& c) {
  const uint64_t id = c.id;
  char buf[65536];
  if (c.st == Conn::St::kClosing) {  // discarding after a refusal (raw bytes, also under TLS)
    for (int round = 0; round < 4; ++round) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      if (n <= 0) {
        CloseConn(id);
        return;
      }
      c.last_activity = Now();
    }
    return;
  }
  if (c.handshaking) {
    if (!c.handshake_busy) StartHandshake(c);
    return;
  }
  for (int round = 0; round < 4; ++round) {
    ssize_t n = ReadSome(c, buf, sizeof buf);
    if (n == -2) return;
    if (n <= 0) {  // closed by the client, or an error
      CloseConn(id);
      return;
    }
    c.last_activity = Now();
    RequestFramer::State s = c.framer.Feed(std::string_view(buf, static_cast<size_t>(n)));
    buffered_total_ -= c.accounted;
    c.accounted = c.framer.buffered();
    buffered_total_ += c.accounted;
    // The framer's own refusal (413, ...) comes first; then the budget of
    // bytes held for all connections together.
    if (s != RequestFramer::State::kError && buffered_total_ > limits_.max_buffered_bytes) {
      if (observer_) observer_(503);
      StartReply(c, ErrorResponse(503, "server busy: too much request data in flight, retry later", true), true);
      return;
    }
    Advance(c);
    if (conns_.find(id) == conns_.end() || c.st != Conn::St::kReading) return;
  }
  if (c.tls && c.tls->HasPending()) tls_pending_.push_back(id);
}

void HttpFront::Advance(Conn& c) {
  RequestFramer::State s = c.framer.Parse();
  if (c.framer.started() && c.request_start == 0) c.request_start = Now();
  std::string head;
  // Admission first, also for a head whose body is refused for its size: the
  // client learns the route's own answer (405, 401...), and no body is read.
  if (head_check_ && c.framer.TakeHeadForCheck(&head)) {
    std::string refusal = head_check_(WithClientCert(std::move(head), c.peer), c.framer.body_expected());
    if (!refusal.empty()) {
      StartReply(c, std::move(refusal), true);
      return;
    }
  }
  switch (s) {
    case RequestFramer::State::kNeedMore:
      if (c.framer.wants_continue()) {
        // Best effort, and not over TLS (a write there may have to be
        // retried): a client that misses it sends the body after its own wait.
        if (!c.tls) {
          static constexpr char k100[] = "HTTP/1.1 100 Continue\r\n\r\n";
          ssize_t n = ::send(c.fd, k100, sizeof k100 - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
          (void)n;
        }
        c.framer.ContinueSent();
      }
      return;
    case RequestFramer::State::kError:
      if (observer_) observer_(c.framer.error_status());
      StartReply(c, ErrorResponse(c.framer.error_status(), c.framer.error_message(), true), true);
      return;
    case RequestFramer::State::kComplete: {
      bool close = !c.framer.keep_alive() || c.served + 1 >= kKeepAliveMax;
      Job job{c.id, WithClientCert(c.framer.TakeRequest(), c.peer), c.ip, c.port, close};
      buffered_total_ -= c.accounted;
      c.accounted = c.framer.buffered() + job.request.size();
      buffered_total_ += c.accounted;
      c.st = Conn::St::kProcessing;
      c.request_start = 0;
      SetInterest(c, false, false);
      {
        std::lock_guard<std::mutex> lock(mu_);
        // GET and HEAD (no body: admission refuses one) are light: /healthz,
        // /metrics, job reads. A worker of their own keeps them answered
        // while every other worker waits on an analysis.
        const bool light = job.request.rfind("GET ", 0) == 0 || job.request.rfind("HEAD ", 0) == 0;
        (light ? light_jobs_ : jobs_).push_back(std::move(job));
      }
      cv_.notify_all();  // the light-only worker must not swallow it
      return;
    }
  }
}

void HttpFront::StartReply(Conn& c, std::string bytes, bool close) {
  if (bytes.empty()) {
    CloseConn(c.id);
    return;
  }
  buffered_total_ -= c.accounted;
  c.accounted = c.framer.buffered();
  buffered_total_ += c.accounted;
  c.st = Conn::St::kWriting;
  c.out = std::move(bytes);
  c.out_off = 0;
  c.close_after = close;
  c.write_start = c.last_activity = Now();
  OnWritable(c);
}

void HttpFront::OnWritable(Conn& c) {
  const uint64_t id = c.id;
  while (c.out_off < c.out.size()) {
    ssize_t n = WriteSome(c, c.out.data() + c.out_off, c.out.size() - c.out_off);
    if (n == -2) return;
    if (n <= 0) {
      CloseConn(id);
      return;
    }
    c.out_off += static_cast<size_t>(n);
    c.last_activity = Now();
  }
  c.out.clear();
  c.out.shrink_to_fit();
  if (c.close_after) {
    // Half-close and discard what the client still sends for a moment, so
    // that it reads the reply rather than a reset.
    if (c.tls) c.tls->Shutdown();
    ::shutdown(c.fd, SHUT_WR);
    c.st = Conn::St::kClosing;
    c.closing_since = Now();
    buffered_total_ -= c.accounted;
    c.accounted = 0;
    SetInterest(c, true, false);
    return;
  }
  ++c.served;
  c.st = Conn::St::kReading;
  SetInterest(c, true, false);
  Advance(c);  // a pipelined request may be buffered already
  auto it = conns_.find(id);
  if (it != conns_.end() && c.st == Conn::St::kReading && c.tls && c.tls->HasPending()) tls_pending_.push_back(id);
}

void HttpFront::CheckTimers(double now) {
  std::vector<std::pair<uint64_t, int>> expired;  // id, 0 = close, 1 = 408 idle, 2 = 408 deadline
  for (auto& [id, cp] : conns_) {
    Conn& c = *cp;
    switch (c.st) {
      case Conn::St::kReading:
        if (c.handshake_busy) break;  // a handshake thread holds the session: judged when it is back
        if (c.handshaking) {  // inside the request limits: silence, and the whole handshake
          if (now - c.accepted_at > limits_.request_timeout_s || now - c.last_activity > limits_.read_timeout_s) {
            expired.push_back({id, 0});
          }
        } else if (c.framer.started()) {
          if (now - c.request_start > limits_.request_timeout_s) expired.push_back({id, 2});
          else if (now - c.last_activity > limits_.read_timeout_s) expired.push_back({id, 1});
        } else if (now - c.last_activity > limits_.read_timeout_s) {
          expired.push_back({id, 0});
        }
        break;
      case Conn::St::kWriting:
        if (now - c.last_activity > limits_.read_timeout_s || now - c.write_start > limits_.request_timeout_s) {
          expired.push_back({id, 0});
        }
        break;
      case Conn::St::kClosing:
        if (now - c.closing_since > kLingerS) expired.push_back({id, 0});
        break;
      case Conn::St::kProcessing: break;
    }
  }
  auto secs = [](double s) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", s);
    return std::string(b);
  };
  for (auto [id, why] : expired) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    if (why == 0) {
      CloseConn(id);
      continue;
    }
    std::string msg = why == 2 ? "request not received completely within " + secs(limits_.request_timeout_s) +
                                     " s (--request-timeout)"
                               : "request not received: the client sent nothing for " +
                                     secs(limits_.read_timeout_s) + " s (--read-timeout)";
    if (observer_) observer_(408);
    StartReply(*it->second, ErrorResponse(408, msg, true), true);
  }
}

void HttpFront::Worker(bool light_only) {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return workers_stop_ || !light_jobs_.empty() || (!light_only && !jobs_.empty()); });
      std::deque<Job>& from = !light_jobs_.empty() ? light_jobs_ : jobs_;
      if (from.empty() || (light_only && &from == &jobs_)) return;  // stopping and nothing left
      job = std::move(from.front());
      from.pop_front();
    }
    std::string response;
    try {
      response = handler_(job.request, job.ip, job.port, job.close);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpucast serve: request handler failed: %s\n", e.what());
      response = ErrorResponse(500, "internal error", true);
      job.close = true;
    } catch (...) {
      response = ErrorResponse(500, "internal error", true);
      job.close = true;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back({job.id, std::move(response), job.close});
    }
    Wake();
  }
}

}  // namespace gpucast::service
