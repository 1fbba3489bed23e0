// TLS for the service's front end (Debian's OpenSSL, libssl-dev): the
// certificate and key (gpucast serve --tls-cert, --tls-key), reloaded on
// SIGHUP, optional client-certificate verification (--tls-client-ca), and the
// non-blocking server side of one connection, which HttpFront drives from its
// event loop (every call returns at once: done, or which readiness it waits for).
//
// Policy: TLS 1.2 or newer, no renegotiation. With a client CA, a client that
// presents a certificate must present one that CA signed (the handshake
// fails otherwise); a client without one is let through, and the routes
// decide (docs/security.md: the Kubernetes routes accept a verified client
// certificate instead of the bearer token).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "util/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace gpucast::service {

struct TlsFiles {
  std::string cert;       // PEM: the server certificate, then its chain
  std::string key;        // PEM: its private key
  std::string client_ca;  // PEM: CA(s) whose client certificates are accepted; "" = none asked
};

class TlsSession;

class TlsServer {
 public:
  // Reads and checks the files (the key matches the certificate). Errors
  // name the file and OpenSSL's reason.
  static Result<std::unique_ptr<TlsServer>> Load(const TlsFiles& files);
  ~TlsServer();

  // Reads the files again (SIGHUP). New connections get the new certificate;
  // established ones keep theirs. On error nothing changes and the message
  // says why. Thread-safe.
  Status Reload();

  // A server-side session on the connected non-blocking socket `fd` (not
  // owned). Thread-safe.
  std::unique_ptr<TlsSession> NewSession(int fd) const;

  bool verifies_clients() const { return !files_.client_ca.empty(); }
  // "subject CN=..., serial 0A1B..., not after Dec  1 12:00:00 2027 GMT" of the current certificate.
  std::string Describe() const;

 private:
  explicit TlsServer(TlsFiles files) : files_(std::move(files)) {}
  TlsFiles files_;
  mutable std::mutex mu_;
  std::shared_ptr<SSL_CTX> ctx_;  // GUARDED_BY(mu_)
};

// Loads a context from `files` (used by Load and Reload).
Result<std::shared_ptr<SSL_CTX>> NewTlsContext(const TlsFiles& files);

class TlsSession {
 public:
  enum class Io {
    kDone,       // progress: the handshake finished, or bytes moved
    kWantRead,   // call again when the socket is readable
    kWantWrite,  // call again when the socket is writable
    kClosed,     // the peer closed the connection (close_notify or EOF)
    kError,      // the connection is unusable (error() says why)
  };
  TlsSession(SSL* ssl) : ssl_(ssl) {}
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  Io Handshake();
  // Up to `cap` plaintext bytes into `buf`; *n set on kDone (> 0).
  Io Read(char* buf, size_t cap, size_t* n);
  // Writes from `buf`; *n bytes taken on kDone (> 0). After kWantRead or
  // kWantWrite the same bytes must be offered again.
  Io Write(const char* buf, size_t len, size_t* n);
  // Plaintext or undecrypted records buffered inside OpenSSL: the socket may
  // not become readable again for them.
  bool HasPending() const;
  // Sends close_notify, best effort (never blocks).
  void Shutdown();
  // The verified client certificate's subject ("CN=kube-apiserver,O=..."),
  // "" when the client presented none.
  std::string VerifiedPeer() const;
  const std::string& error() const { return error_; }

 private:
  Io Outcome(int ret, const char* what);
  SSL* ssl_;
  std::string error_;
};

}  // namespace gpucast::service
