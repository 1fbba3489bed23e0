// The service's network front end: it owns the listening socket and every
// connection, reads each request completely (headers and body, chunked bodies
// decoded) in one event-loop thread, and only then hands it to a worker.
// A client that drip-feeds bytes therefore holds a file descriptor and a
// bounded buffer, never a worker thread, and is cut off at a whole-request
// deadline; clients are capped in number, per address and in total, and the
// bytes buffered for all of them are capped too.
//
// RequestFramer is the incremental HTTP/1.1 request parser it uses (exposed
// for tests and the fuzzer). It turns a well-formed request into a normalized
// one (request line, the client's headers minus framing headers, one
// Content-Length, the decoded body) and refuses, with an HTTP status and a
// message, everything it does not accept: conflicting Content-Length headers,
// Content-Length with Transfer-Encoding, transfer codings other than chunked,
// bodies over the limit (also chunked ones), header sections over the limit,
// control bytes (NUL included) in header names and values, invalid UTF-8 in
// values, a bare LF or CR anywhere in the head (refused as soon as it
// arrives, not when the head would end).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "util/status.h"

namespace gpucast::service {

class TlsServer;
class TlsSession;

struct FrontLimits {
  size_t max_header_bytes = 16 << 10;     // request line + headers (431 over it)
  size_t max_body_bytes = 128u << 20;     // application/octet-stream bodies (413 over it)
  size_t max_json_body_bytes = 1u << 20;  // every other body (413 over it)
  double read_timeout_s = 5;              // silence while a request or a reply is under way; keep-alive idle
  double request_timeout_s = 30;          // first byte of a request to its last (408 after it)
  int max_connections = 1024;             // open connections in total (503 over it)
  int max_connections_per_client = 256;   // open connections per client IP address (503 over it)
  size_t max_buffered_bytes = 512u << 20; // request bytes buffered for all connections (503 over it)
  int threads = 16;                       // workers running handlers
};

// true if `s` is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view s);

class RequestFramer {
 public:
  enum class State { kNeedMore, kComplete, kError };
  explicit RequestFramer(const FrontLimits& limits) : limits_(limits) {}

  // Appends bytes and parses as far as they go.
  State Feed(std::string_view bytes);
  // Parses what is buffered (after TakeRequest, for pipelined requests).
  State Parse();

  // Bytes of the current request received (0 while between requests).
  bool started() const { return started_; }
  // The client sent "Expect: 100-continue" and its body may come: send
  // "100 Continue" once (then call ContinueSent).
  bool wants_continue() const { return want_continue_ && !continue_sent_; }
  void ContinueSent() { continue_sent_ = true; }
  // Once per request, as soon as its head is parsed and before its body is
  // read: true and the normalized head (request line and headers). The
  // front checks it (admission) so that a refused client's body is never
  // buffered.
  bool TakeHeadForCheck(std::string* head);
  // After the head: whether a body follows (Content-Length > 0 or chunked).
  bool body_expected() const { return body_expected_; }
  // After kComplete: the normalized request; the framer is then ready for
  // the next request on the connection (bytes after this one stay buffered).
  std::string TakeRequest();
  // After kComplete: whether the connection stays open after the reply.
  bool keep_alive() const { return keep_alive_; }
  // After kError: the HTTP status and a message (never client bytes).
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }
  // Bytes held (input buffer and body so far), for the front's memory budget.
  size_t buffered() const { return in_.size() + body_.size() + head_out_.size(); }

 private:
  enum class Phase { kHead, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kDone, kFailed };
  State Fail(int status, std::string message);
  State ParseHead(size_t head_len);

  FrontLimits limits_;
  std::string in_;     // unparsed input
  Phase phase_ = Phase::kHead;
  bool started_ = false;
  bool want_continue_ = false, continue_sent_ = false;
  bool head_checked_ = false;
  bool head_parsed_ = false;  // the current request's head is whole (head_out_ holds it)
  bool body_expected_ = false;
  bool keep_alive_ = true;
  size_t scanned_ = 0;  // bytes of the head checked for bare CR/LF so far
  std::string head_out_;  // normalized request line + headers (without Content-Length)
  std::string body_;
  size_t body_limit_ = 0;
  uint64_t remaining_ = 0;  // body bytes still to come (Content-Length or current chunk)
  int error_status_ = 0;
  std::string error_message_;
};

// The header that carries a connection's verified TLS client certificate to
// the routes ("X-Gpucast-Client-Cert: <subject>"). HttpFront removes every
// copy a client sent and adds it for a verified certificate only.
inline constexpr const char* kClientCertHeader = "X-Gpucast-Client-Cert";
// `request` (a normalized request or head) without any client-sent
// kClientCertHeader line, and with one for `verified_peer` when not "".
std::string WithClientCert(std::string request, const std::string& verified_peer);

// A JSON error response ("HTTP/1.1 <status> ...", {"error": message});
// `extra_headers`: more "Name: value\r\n" lines.
std::string ErrorResponse(int status, const std::string& message, bool close,
                          const std::string& extra_headers = "");

class HttpFront {
 public:
  // Runs in a worker: the normalized request, the client's address, whether
  // the connection closes after this reply. Returns the whole response bytes
  // (empty: close the connection without a reply).
  using Handler = std::function<std::string(const std::string& request, const std::string& remote_ip,
                                            int remote_port, bool close)>;
  // Called (from the event loop) for each response the front makes itself
  // (408, 413, 431, 400, 503, ...), for metrics.
  using Observer = std::function<void(int status)>;
  // Called (from the event loop) with a request's head, and whether a body
  // follows, before its body is read; a non-empty return is sent as the
  // reply and the connection closed.
  using HeadCheck = std::function<std::string(const std::string& head, bool has_body)>;

  HttpFront(const FrontLimits& limits, Handler handler, Observer observer, HeadCheck head_check = nullptr);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  // Binds host:port (0 = any free port); returns the bound port.
  Result<int> Bind(const std::string& host, int port);
  // Speak TLS on every connection (service/tls.h; not owned, outlives Run).
  // The handshake counts against the request limits: silent for
  // read_timeout_s or not done within request_timeout_s, the connection is
  // closed. Without TLS no reply can be sent before the handshake, so
  // connections over the caps are closed without one. Call before Run.
  void UseTls(const TlsServer* tls) { tls_ = tls; }
  // Serves until Stop(). REQUIRES: Bind succeeded.
  Status Run();
  // Thread-safe; Run returns soon after (requests being handled finish first).
  void Stop();

  // Open connections now (tests).
  int open_connections() const { return open_.load(); }

 private:
  struct Conn;
  struct Done {
    uint64_t id;
    std::string response;
    bool close;
  };
  void Accept();
  void OnReadable(Conn& c);
  void OnWritable(Conn& c);
  void StartReply(Conn& c, std::string bytes, bool close);
  void Advance(Conn& c);  // parse buffered input; dispatch or answer
  void CloseConn(uint64_t id);
  void CheckTimers(double now);
  void SetInterest(Conn& c, bool read, bool write);
  // TLS handshakes run on handshake threads, never on the event loop: one
  // step (SSL_do_handshake until it wants the socket) per dispatch.
  void StartHandshake(Conn& c);
  void FinishHandshake(Conn& c, int io);
  void HandshakeWorker();
  // One read or write on the socket, through TLS when the connection has it:
  // > 0 bytes, 0 the peer closed, -1 error (closed), -2 would block (interest set).
  ssize_t ReadSome(Conn& c, char* buf, size_t cap);
  ssize_t WriteSome(Conn& c, const char* buf, size_t len);
  void Worker(bool light_only);
  void Wake();

  FrontLimits limits_;
  Handler handler_;
  Observer observer_;
  HeadCheck head_check_;
  const TlsServer* tls_ = nullptr;
  std::vector<uint64_t> tls_pending_;  // event-loop thread only: connections with data buffered in TLS
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stopping_{false};
  bool accept_starved_ = false;  // accept failed for want of descriptors
  std::atomic<int> open_{0};
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::unique_ptr<Conn>> conns_;  // event-loop thread only
  std::map<std::string, int> per_client_;            // event-loop thread only
  size_t buffered_total_ = 0;                        // event-loop thread only

  struct Job {
    uint64_t id;
    std::string request, ip;
    int port;
    bool close;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;        // GUARDED_BY(mu_)
  std::deque<Job> light_jobs_;  // GUARDED_BY(mu_): GET and HEAD, also served by a worker of their own
  std::deque<Done> done_;  // GUARDED_BY(mu_)
  bool workers_stop_ = false;  // GUARDED_BY(mu_)
  std::vector<std::thread> workers_;

  static constexpr int kHandshakeThreads = 2;
  struct HandshakeJob {
    uint64_t id = 0;
    TlsSession* tls = nullptr;  // the connection's; only the handshake thread touches it meanwhile
  };
  struct HandshakeDone {
    uint64_t id;
    int io;  // TlsSession::Io
  };
  std::condition_variable hs_cv_;
  std::deque<HandshakeJob> hs_jobs_;    // GUARDED_BY(mu_)
  std::deque<HandshakeDone> hs_done_;   // GUARDED_BY(mu_)
  bool hs_stop_ = false;                // GUARDED_BY(mu_)
  std::vector<std::thread> hs_workers_;
};

}  // namespace gpucast::service
