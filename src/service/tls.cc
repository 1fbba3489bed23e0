#include "service/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace gpucast::service {

namespace {

// OpenSSL's queued errors as one line (and the queue emptied).
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

std::string Name(X509_NAME* name) {
  if (!name) return "";
  char buf[512];
  X509_NAME_oneline(name, buf, sizeof buf);
  return buf;
}

}  // namespace

Result<std::shared_ptr<SSL_CTX>> NewTlsContext(const TlsFiles& files) {
  ERR_clear_error();
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return Status::Error("TLS: cannot create a context: " + OpenSslErrors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Partial writes from a buffer that may move between retries (the reply's
  // string); buffers released while a connection is idle.
  SSL_CTX_set_mode(ctx.get(),
                   SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), files.cert.c_str()) != 1) {
    return Status::Error(files.cert + ": cannot use as the TLS certificate (PEM chain): " + OpenSslErrors());
  }
  // Read first, so that a key that reads but belongs to another certificate
  // (OpenSSL 3 refuses it in SSL_CTX_use_PrivateKey) is named as such.
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(nullptr, EVP_PKEY_free);
  if (std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(files.key.c_str(), "r"), BIO_free); bio) {
    key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  }
  if (!key) return Status::Error(files.key + ": cannot use as the TLS private key (PEM): " + OpenSslErrors());
  if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 || SSL_CTX_check_private_key(ctx.get()) != 1) {
    return Status::Error(files.key + ": the private key does not match the certificate in " + files.cert + ": " +
                         OpenSslErrors());
  }
  if (!files.client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), files.client_ca.c_str(), nullptr) != 1) {
      return Status::Error(files.client_ca + ": cannot load as client CA certificates (PEM): " + OpenSslErrors());
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca.c_str());
    if (!names) return Status::Error(files.client_ca + ": no CA certificate in it: " + OpenSslErrors());
    SSL_CTX_set_client_CA_list(ctx.get(), names);  // takes ownership
    // A certificate, when presented, must verify; none is allowed (the routes decide).
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_verify_depth(ctx.get(), 4);
    // Session resumption would skip verification bookkeeping across reloads: off.
    SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx.get(), SSL_OP_NO_TICKET);
  }
  return ctx;
}

Result<std::unique_ptr<TlsServer>> TlsServer::Load(const TlsFiles& files) {
  std::unique_ptr<TlsServer> s(new TlsServer(files));
  ASSIGN_OR_RETURN(s->ctx_, NewTlsContext(files));
  return s;
}

TlsServer::~TlsServer() = default;

Status TlsServer::Reload() {
  Result<std::shared_ptr<SSL_CTX>> ctx = NewTlsContext(files_);
  if (!ctx.ok()) return Status::Error("TLS certificate not reloaded, the old one keeps serving: " + ctx.message());
  std::lock_guard<std::mutex> lock(mu_);
  ctx_ = std::move(ctx).value();  // sessions hold their own reference to the old context
  return Status::Ok();
}

std::unique_ptr<TlsSession> TlsServer::NewSession(int fd) const {
  std::shared_ptr<SSL_CTX> ctx;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ctx = ctx_;
  }
  SSL* ssl = SSL_new(ctx.get());
  if (!ssl) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return std::make_unique<TlsSession>(ssl);
}

std::string TlsServer::Describe() const {
  std::shared_ptr<SSL_CTX> ctx;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ctx = ctx_;
  }
  X509* cert = SSL_CTX_get0_certificate(ctx.get());
  if (!cert) return "no certificate";
  std::string serial;
  if (BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr)) {
    if (char* hex = BN_bn2hex(bn)) {
      serial = hex;
      OPENSSL_free(hex);
    }
    BN_free(bn);
  }
  std::string not_after;
  if (BIO* bio = BIO_new(BIO_s_mem())) {
    if (ASN1_TIME_print(bio, X509_get0_notAfter(cert)) == 1) {
      char* data = nullptr;
      long n = BIO_get_mem_data(bio, &data);
      not_after.assign(data, static_cast<size_t>(n));
    }
    BIO_free(bio);
  }
  return "subject " + Name(X509_get_subject_name(cert)) + ", serial " + serial + ", not after " + not_after;
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

TlsSession::Io TlsSession::Outcome(int ret, const char* what) {
  int err = SSL_get_error(ssl_, ret);
  switch (err) {
    case SSL_ERROR_WANT_READ: return Io::kWantRead;
    case SSL_ERROR_WANT_WRITE: return Io::kWantWrite;
    case SSL_ERROR_ZERO_RETURN: return Io::kClosed;
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0) {
        error_ = std::string(what) + ": " + (errno ? std::strerror(errno) : "the peer closed the connection");
        ERR_clear_error();
        return errno ? Io::kError : Io::kClosed;
      }
      [[fallthrough]];
    default:
      error_ = std::string(what) + ": " + OpenSslErrors();
      return Io::kError;
  }
}

TlsSession::Io TlsSession::Handshake() {
  ERR_clear_error();
  errno = 0;
  int r = SSL_do_handshake(ssl_);
  return r == 1 ? Io::kDone : Outcome(r, "TLS handshake");
}

TlsSession::Io TlsSession::Read(char* buf, size_t cap, size_t* n) {
  ERR_clear_error();
  errno = 0;
  size_t got = 0;
  int r = SSL_read_ex(ssl_, buf, cap, &got);
  if (r == 1) {
    *n = got;
    return Io::kDone;
  }
  return Outcome(r, "TLS read");
}

TlsSession::Io TlsSession::Write(const char* buf, size_t len, size_t* n) {
  ERR_clear_error();
  errno = 0;
  size_t put = 0;
  int r = SSL_write_ex(ssl_, buf, len, &put);
  if (r == 1) {
    *n = put;
    return Io::kDone;
  }
  return Outcome(r, "TLS write");
}

bool TlsSession::HasPending() const { return SSL_has_pending(ssl_) == 1; }

void TlsSession::Shutdown() {
  ERR_clear_error();
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

std::string TlsSession::VerifiedPeer() const {
  X509* peer = SSL_get0_peer_certificate(ssl_);
  if (!peer || SSL_get_verify_result(ssl_) != X509_V_OK) return "";
  return Name(X509_get_subject_name(peer));
}

}  // namespace gpucast::service
