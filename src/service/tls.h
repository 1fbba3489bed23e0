// TLS for the service's front end (Debian's OpenSSL, libssl-dev): the
// certificate and key (gpucast serve --tls-cert, --tls-key), reloaded on
// SIGHUP, optional client-certificate verification (--tls-client-ca), and the
// non-blocking server side of one connection, which HttpFront drives from its
// event loop (every call returns at once: done, or which readiness it waits for).
//
// Policy: TLS 1.2 or newer, no renegotiation, only the key exchange groups
// of kTlsGroups (no finite-field Diffie-Hellman: a ClientHello offering only
// ffdhe8192 would cost 109 ms of server CPU; it fails at once instead). With
// a client CA, a client that presents a certificate must present one that CA
// signed (the handshake fails otherwise); a client without one is let
// through, and the routes decide (docs/security.md: the Kubernetes routes
// accept a verified client certificate instead of the bearer token). With
// --tls-client-subject, a verified certificate counts only if its subject CN
// or a subjectAltName (DNS, URI, email) equals one of the names given; any
// other is treated as no certificate. The files are read with
// ReadFileBounded (util/bounded_read.h): a FIFO, a device or a hung mount at
// --tls-key is an error, never a blocked thread.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "util/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace gpucast::service {

struct TlsFiles {
  std::string cert;       // PEM: the server certificate, then its chain
  std::string key;        // PEM: its private key
  std::string client_ca;  // PEM: CA(s) whose client certificates are accepted; "" = none asked
  // --tls-client-subject: the names a verified client certificate must carry
  // (its subject CN, or a DNS, URI or email subjectAltName); empty = any the CA signed.
  std::vector<std::string> client_subjects{};
};

// Key exchange groups offered (TLS 1.3 and ECDHE of TLS 1.2), cheapest first.
inline constexpr const char* kTlsGroups = "X25519:P-256:P-384";
// TLS 1.2 suites: ECDHE with AEAD ciphers only (no DHE, no RSA key transport).
inline constexpr const char* kTls12Ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20";
// Each of the certificate, key and CA files: at most this large, read within this time.
inline constexpr size_t kTlsFileMaxBytes = 1u << 20;
inline constexpr double kTlsFileTimeoutS = 5;

// Whether a client certificate's subject CN or one of its DNS, URI or email
// subjectAltNames equals one of `allowed` (exact, case-sensitive).
// `cert` is an X509*.
bool ClientSubjectAllowed(const void* cert, const std::vector<std::string>& allowed);
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
  // `allowed_subjects`: TlsFiles::client_subjects (not owned; outlives the session).
  explicit TlsSession(SSL* ssl, const std::vector<std::string>* allowed_subjects = nullptr)
      : ssl_(ssl), allowed_(allowed_subjects) {}
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
  // The verified client certificate's subject ("/CN=kube-apiserver/O=..."),
  // "" when the client presented none, or one whose names are not in
  // --tls-client-subject (RefusedPeer then says which).
  std::string VerifiedPeer() const;
  // The subject of a verified certificate refused by --tls-client-subject, else "".
  std::string RefusedPeer() const;
  const std::string& error() const { return error_; }

 private:
  Io Outcome(int ret, const char* what);
  SSL* ssl_;
  const std::vector<std::string>* allowed_ = nullptr;
  std::string error_;
};

}  // namespace gpucast::service
