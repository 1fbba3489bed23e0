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
#include <vector>

#include "util/bounded_read.h"

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

namespace {

// A BIO over bytes in memory (the file read by ReadFileBounded).
std::unique_ptr<BIO, decltype(&BIO_free)> MemBio(const std::string& bytes) {
  return {BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())), BIO_free};
}

// Every certificate in PEM `bytes`, in order (empty when none parses).
std::vector<std::unique_ptr<X509, decltype(&X509_free)>> PemCerts(const std::string& bytes) {
  std::vector<std::unique_ptr<X509, decltype(&X509_free)>> out;
  auto bio = MemBio(bytes);
  if (!bio) return out;
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(x, X509_free);
  ERR_clear_error();  // the end of the input reads as an error
  return out;
}

}  // namespace

Result<std::shared_ptr<SSL_CTX>> NewTlsContext(const TlsFiles& files) {
  ERR_clear_error();
  // Each file read without blocking: a FIFO or a hung mount at --tls-key is an
  // error within kTlsFileTimeoutS, never a SIGHUP thread stuck for ever.
  Result<std::string> cert_pem = ReadFileBounded(files.cert, kTlsFileMaxBytes, kTlsFileTimeoutS);
  if (!cert_pem.ok()) return Status::Error(files.cert + ": cannot use as the TLS certificate (PEM chain): " + cert_pem.message());
  Result<std::string> key_pem = ReadFileBounded(files.key, kTlsFileMaxBytes, kTlsFileTimeoutS);
  if (!key_pem.ok()) return Status::Error(files.key + ": cannot use as the TLS private key (PEM): " + key_pem.message());
  std::string ca_pem;
  if (!files.client_ca.empty()) {
    Result<std::string> ca = ReadFileBounded(files.client_ca, kTlsFileMaxBytes, kTlsFileTimeoutS);
    if (!ca.ok()) return Status::Error(files.client_ca + ": cannot load as client CA certificates (PEM): " + ca.message());
    ca_pem = std::move(ca).value();
  }
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) return Status::Error("TLS: cannot create a context: " + OpenSslErrors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Only key exchanges that cost the server well under a millisecond: a
  // ClientHello offering only ffdhe8192 (109 ms of server CPU each, issue 31)
  // fails at once with handshake_failure. TLS 1.2 without DHE suites.
  if (SSL_CTX_set1_groups_list(ctx.get(), kTlsGroups) != 1 ||
      SSL_CTX_set_cipher_list(ctx.get(), kTls12Ciphers) != 1) {
    return Status::Error("TLS: cannot set the key exchange groups: " + OpenSslErrors());
  }
  SSL_CTX_set_dh_auto(ctx.get(), 0);
  // Partial writes from a buffer that may move between retries (the reply's
  // string); buffers released while a connection is idle.
  SSL_CTX_set_mode(ctx.get(),
                   SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  auto chain = PemCerts(*cert_pem);
  if (chain.empty() || SSL_CTX_use_certificate(ctx.get(), chain[0].get()) != 1) {
    return Status::Error(files.cert + ": cannot use as the TLS certificate (PEM chain): " + OpenSslErrors());
  }
  SSL_CTX_clear_chain_certs(ctx.get());
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add0_chain_cert(ctx.get(), chain[i].get()) != 1) {
      return Status::Error(files.cert + ": cannot use as the TLS certificate (PEM chain): " + OpenSslErrors());
    }
    chain[i].release();  // owned by the context now
  }
  // Read first, so that a key that reads but belongs to another certificate
  // (OpenSSL 3 refuses it in SSL_CTX_use_PrivateKey) is named as such.
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(nullptr, EVP_PKEY_free);
  if (auto bio = MemBio(*key_pem); bio) key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return Status::Error(files.key + ": cannot use as the TLS private key (PEM): " + OpenSslErrors());
  if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 || SSL_CTX_check_private_key(ctx.get()) != 1) {
    return Status::Error(files.key + ": the private key does not match the certificate in " + files.cert + ": " +
                         OpenSslErrors());
  }
  if (!files.client_ca.empty()) {
    auto cas = PemCerts(ca_pem);
    if (cas.empty()) {
      return Status::Error(files.client_ca + ": cannot load as client CA certificates (PEM): no certificate in it");
    }
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
    for (const auto& ca : cas) {
      if (X509_STORE_add_cert(store, ca.get()) != 1) {
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return Status::Error(files.client_ca + ": cannot load as client CA certificates (PEM): " + OpenSslErrors());
      }
      sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca.get())));
    }
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
  return std::make_unique<TlsSession>(ssl, &files_.client_subjects);
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

bool ClientSubjectAllowed(const void* cert, const std::vector<std::string>& allowed) {
  X509* x = const_cast<X509*>(static_cast<const X509*>(cert));
  auto listed = [&](const unsigned char* data, int len) {
    if (!data || len < 0) return false;
    const std::string v(reinterpret_cast<const char*>(data), static_cast<size_t>(len));
    for (const std::string& a : allowed) {
      if (a == v) return true;
    }
    return false;
  };
  X509_NAME* subject = X509_get_subject_name(x);
  for (int i = -1; (i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) >= 0;) {
    ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
    if (cn && listed(ASN1_STRING_get0_data(cn), ASN1_STRING_length(cn))) return true;
  }
  GENERAL_NAMES* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(x, NID_subject_alt_name, nullptr, nullptr));
  bool found = false;
  for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && !found; ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
    if (g->type == GEN_DNS || g->type == GEN_URI || g->type == GEN_EMAIL) {
      found = listed(ASN1_STRING_get0_data(g->d.ia5), ASN1_STRING_length(g->d.ia5));
    }
  }
  GENERAL_NAMES_free(sans);
  return found;
}

std::string TlsSession::VerifiedPeer() const {
  X509* peer = SSL_get0_peer_certificate(ssl_);
  if (!peer || SSL_get_verify_result(ssl_) != X509_V_OK) return "";
  if (allowed_ && !allowed_->empty() && !ClientSubjectAllowed(peer, *allowed_)) return "";
  return Name(X509_get_subject_name(peer));
}

std::string TlsSession::RefusedPeer() const {
  X509* peer = SSL_get0_peer_certificate(ssl_);
  if (!peer || SSL_get_verify_result(ssl_) != X509_V_OK || !allowed_ || allowed_->empty() ||
      ClientSubjectAllowed(peer, *allowed_)) {
    return "";
  }
  return Name(X509_get_subject_name(peer));
}

}  // namespace gpucast::service
