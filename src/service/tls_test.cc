// TLS in the service's front end: certificates made here with OpenSSL (a
// throwaway CA, a server certificate, client certificates of that CA and of
// another), a real Service over HTTPS, clients from cpp-httplib (built with
// Debian's OpenSSL) and a blocking OpenSSL client to read the served
// certificate's serial. tests/k8s_test.sh does the same with the openssl and
// curl commands against the gpucast binary, SIGHUP included.
#include "service/tls.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>

#include "service/service_fixture.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A key and a certificate signed by `ca` (self-signed when null).
struct Cert {
  EVP_PKEY* key = nullptr;
  X509* x509 = nullptr;
  ~Cert() {
    X509_free(x509);
    EVP_PKEY_free(key);
  }
};

std::unique_ptr<Cert> MakeCert(const std::string& cn, long serial, const Cert* ca, bool is_ca, bool server) {
  auto c = std::make_unique<Cert>();
  c->key = EVP_EC_gen("P-256");
  c->x509 = X509_new();
  X509_set_version(c->x509, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c->x509), serial);
  X509_gmtime_adj(X509_getm_notBefore(c->x509), -60);
  X509_gmtime_adj(X509_getm_notAfter(c->x509), 3600);
  X509_set_pubkey(c->x509, c->key);
  X509_NAME* name = X509_get_subject_name(c->x509);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(c->x509, ca ? X509_get_subject_name(ca->x509) : name);
  auto ext = [&](int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, ca ? ca->x509 : c->x509, c->x509, nullptr, nullptr, 0);
    X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(c->x509, e, -1);
    X509_EXTENSION_free(e);
  };
  ext(NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "CA:FALSE");
  if (is_ca) ext(NID_key_usage, "critical,keyCertSign,cRLSign");
  if (server) ext(NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  if (!is_ca) ext(NID_ext_key_usage, server ? "serverAuth" : "clientAuth");
  X509_sign(c->x509, ca ? ca->key : c->key, EVP_sha256());
  return c;
}

void WritePem(const std::string& path, const Cert& c, bool key) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  if (key) PEM_write_PrivateKey(f, c.key, nullptr, nullptr, 0, nullptr, nullptr);
  else PEM_write_X509(f, c.x509);
  std::fclose(f);
}

// The serial (hex) of the certificate a new TLS connection to 127.0.0.1:port is served.
std::string ServedSerial(int port, const std::string& ca_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  BIO* bio = BIO_new_ssl_connect(ctx);
  BIO_set_conn_hostname(bio, ("127.0.0.1:" + std::to_string(port)).c_str());
  std::string serial = "(no connection)";
  if (BIO_do_connect(bio) == 1 && BIO_do_handshake(bio) == 1) {
    SSL* ssl = nullptr;
    BIO_get_ssl(bio, &ssl);
    X509* peer = SSL_get1_peer_certificate(ssl);
    BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(peer), nullptr);
    char* hex = BN_bn2hex(bn);
    serial = hex;
    OPENSSL_free(hex);
    BN_free(bn);
    X509_free(peer);
  }
  BIO_free_all(bio);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return serial;
}

class TlsTest : public testing::ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    ca_ = MakeCert("gpucast-test-ca", 1, nullptr, true, false);
    other_ca_ = MakeCert("some-other-ca", 2, nullptr, true, false);
    server_ = MakeCert("localhost", 0x1001, ca_.get(), false, true);
    client_cert_ = MakeCert("kube-apiserver", 0x2001, ca_.get(), false, false);
    stranger_ = MakeCert("kube-apiserver", 0x3001, other_ca_.get(), false, false);
    WritePem(dir_ + "/ca.crt", *ca_, false);
    WritePem(dir_ + "/server.crt", *server_, false);
    WritePem(dir_ + "/server.key", *server_, true);
    WritePem(dir_ + "/client.crt", *client_cert_, false);
    WritePem(dir_ + "/client.key", *client_cert_, true);
    WritePem(dir_ + "/stranger.crt", *stranger_, false);
    WritePem(dir_ + "/stranger.key", *stranger_, true);
    opts_.tls = {dir_ + "/server.crt", dir_ + "/server.key", dir_ + "/ca.crt"};
  }
  // An HTTPS client trusting the test CA, with a client certificate when given.
  std::unique_ptr<httplib::SSLClient> Https(const std::string& cert = "", const std::string& key = "") {
    auto c = cert.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", port_)
                          : std::make_unique<httplib::SSLClient>("127.0.0.1", port_, cert, key);
    c->set_ca_cert_path((dir_ + "/ca.crt").c_str());
    c->enable_server_certificate_verification(true);
    c->set_read_timeout(10, 0);
    return c;
  }
  // StartServer's health probe is plain HTTP, which a TLS port refuses: start without it.
  void StartTls() {
    auto sched = std::make_unique<testing::OneJobPerGpu>(2);
    Result<std::unique_ptr<Service>> s =
        Service::Create(opts_, std::make_unique<testing::FakeEngine>(), std::move(sched));
    ASSERT_TRUE(s.ok()) << s.message();
    service_ = std::move(s).value();
    Result<int> port = service_->Bind("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.message();
    port_ = *port;
    thread_ = std::thread([this] { EXPECT_TRUE(service_->Run().ok()); });
    for (int i = 0; i < 200; ++i) {
      if (Https()->Get("/healthz")) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "TLS server did not come up";
  }
  std::unique_ptr<Cert> ca_, other_ca_, server_, client_cert_, stranger_;
};

TEST_F(TlsTest, LoadErrorsNameTheFileAndTheReason) {
  EXPECT_THAT(TlsServer::Load({dir_ + "/none.crt", dir_ + "/server.key", ""}).message(),
              HasSubstr("none.crt: cannot use as the TLS certificate (PEM chain)"));
  EXPECT_THAT(TlsServer::Load({dir_ + "/server.crt", dir_ + "/client.key", ""}).message(),
              HasSubstr("client.key: the private key does not match the certificate in"));
  EXPECT_THAT(TlsServer::Load({dir_ + "/server.crt", dir_ + "/server.crt", ""}).message(),
              HasSubstr("server.crt: cannot use as the TLS private key (PEM)"));
  EXPECT_THAT(TlsServer::Load({dir_ + "/server.crt", dir_ + "/server.key", dir_ + "/server.key"}).message(),
              HasSubstr("server.key: cannot load as client CA certificates (PEM)"));
  Result<std::unique_ptr<TlsServer>> ok = TlsServer::Load({dir_ + "/server.crt", dir_ + "/server.key", ""});
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_THAT((*ok)->Describe(), HasSubstr("subject /CN=localhost, serial 1001"));
  opts_.tls = {dir_ + "/server.crt", "", ""};
  EXPECT_THAT(Service::Create(opts_, std::make_unique<testing::FakeEngine>(), std::make_unique<testing::OneJobPerGpu>(1))
                  .message(),
              HasSubstr("--tls-cert needs --tls-key"));
}

TEST_F(TlsTest, HttpsServesAndPlainHttpGetsNothing) {
  StartTls();
  auto r = Https()->Get("/healthz");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  // One keep-alive connection, many requests (bytes buffered inside TLS are served).
  auto c = Https();
  for (int i = 0; i < 20; ++i) {
    auto p = c->Post("/v1/predict", json{{"model", model_}, {"batch", 1 + i % 5}}.dump(), "application/json");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->status, 200) << p->body;
  }
  // Plain HTTP to the TLS port: the handshake fails and the connection is closed (at most a
  // TLS alert, never an HTTP answer).
  std::string plain = Raw("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 3);
  EXPECT_LT(plain.size(), 16u);
  EXPECT_EQ(plain.find("HTTP/"), std::string::npos);
  // A client that does not trust the server's CA refuses it.
  httplib::SSLClient untrusting("127.0.0.1", port_);
  untrusting.enable_server_certificate_verification(true);
  untrusting.set_ca_cert_path((dir_ + "/client.crt").c_str());
  EXPECT_FALSE(untrusting.Get("/healthz"));
  EXPECT_EQ(Https()->Get("/healthz")->status, 200);
}

TEST_F(TlsTest, TheHandshakeIsInsideTheReadTimeout) {
  StartTls();
  int fd = Connect();
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto t0 = std::chrono::steady_clock::now();
  char buf[16];
  ssize_t n = recv(fd, buf, sizeof buf, 0);  // the server closes a silent connection
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(fd);
  EXPECT_EQ(n, 0);
  EXPECT_GE(s, 0.9);  // --read-timeout 1
  EXPECT_LT(s, 3.5);
}

TEST_F(TlsTest, ClientCertificatesOfTheCaAdmitTheKubernetesRoutesOnly) {
  opts_.token = "job-token";
  opts_.k8s.enabled = true;
  StartTls();
  const std::string empty_args = R"({"Pod": {}, "NodeNames": []})";
  // The CA's client certificate: the Kubernetes routes, without the token.
  auto kube = Https(dir_ + "/client.crt", dir_ + "/client.key");
  auto r = kube->Post("/k8s/v1/filter", empty_args, "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["NodeNames"], json::array());
  // ... but not the job routes: those need the token.
  r = kube->Get("/v1/jobs");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  // No certificate, no token: refused; a forged X-Gpucast-Client-Cert header changes nothing.
  r = Https()->Post("/k8s/v1/filter", {{"X-Gpucast-Client-Cert", "/CN=kube-apiserver"}}, empty_args,
                    "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_THAT(Error(r), HasSubstr("or a client certificate signed by --tls-client-ca"));
  // The token still opens them.
  r = Https()->Post("/k8s/v1/filter", {{"Authorization", "Bearer job-token"}}, empty_args, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // A certificate of another CA: the handshake fails.
  EXPECT_FALSE(Https(dir_ + "/stranger.crt", dir_ + "/stranger.key")->Get("/healthz"));
  EXPECT_EQ(Https()->Get("/healthz")->status, 200);
}

TEST_F(TlsTest, WithoutATokenTheClientCaAloneGuardsTheKubernetesRoutes) {
  opts_.k8s.enabled = true;
  StartTls();
  const std::string empty_args = R"({"Pod": {}, "NodeNames": []})";
  auto r = Https()->Post("/k8s/v1/filter", empty_args, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(Error(r), "/k8s/v1/filter needs a TLS client certificate signed by --tls-client-ca");
  EXPECT_EQ(Https(dir_ + "/client.crt", dir_ + "/client.key")->Post("/k8s/v1/filter", empty_args, "application/json")->status,
            200);
}

TEST_F(TlsTest, ReloadServesTheNewCertificateToNewConnections) {
  StartTls();
  EXPECT_EQ(ServedSerial(port_, dir_ + "/ca.crt"), "1001");
  auto renewed = MakeCert("localhost", 0x1002, ca_.get(), false, true);
  WritePem(dir_ + "/server.crt", *renewed, false);
  WritePem(dir_ + "/server.key", *renewed, true);
  ASSERT_TRUE(service_->ReloadTls("test").ok());
  EXPECT_EQ(ServedSerial(port_, dir_ + "/ca.crt"), "1002");
  // A broken file is not loaded: the renewed certificate keeps serving.
  std::ofstream(dir_ + "/server.crt") << "garbage";
  Status st = service_->ReloadTls("test");
  EXPECT_THAT(st.message(), HasSubstr("TLS certificate not reloaded, the old one keeps serving"));
  EXPECT_EQ(ServedSerial(port_, dir_ + "/ca.crt"), "1002");
}

// Whether a TLS 1.3 handshake offering only `groups` succeeds against 127.0.0.1:port.
bool HandshakeWithGroups(int port, const char* groups, const std::string& ca_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  EXPECT_EQ(SSL_CTX_set1_groups_list(ctx, groups), 1) << groups;
  BIO* bio = BIO_new_ssl_connect(ctx);
  BIO_set_conn_hostname(bio, ("127.0.0.1:" + std::to_string(port)).c_str());
  const bool ok = BIO_do_connect(bio) == 1 && BIO_do_handshake(bio) == 1;
  BIO_free_all(bio);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return ok;
}

// Issue 31 item 2: a ClientHello offering only ffdhe8192 cost the server
// 109 ms of CPU on its one event-loop thread. Only fast groups now: it fails
// at once; X25519 and P-256 clients are served.
TEST_F(TlsTest, OnlyFastKeyExchangeGroupsAreAccepted) {
  StartTls();
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(HandshakeWithGroups(port_, "ffdhe8192", dir_ + "/ca.crt"));
  EXPECT_FALSE(HandshakeWithGroups(port_, "ffdhe2048", dir_ + "/ca.crt"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  EXPECT_TRUE(HandshakeWithGroups(port_, "X25519", dir_ + "/ca.crt"));
  EXPECT_TRUE(HandshakeWithGroups(port_, "P-256", dir_ + "/ca.crt"));
  EXPECT_TRUE(HandshakeWithGroups(port_, "P-384", dir_ + "/ca.crt"));
  EXPECT_EQ(Https()->Get("/healthz")->status, 200);
}

// Issue 31 item 8: a FIFO at --tls-key blocked the SIGHUP thread in open().
TEST_F(TlsTest, AFifoKeyIsRefusedAtOnceAtStartAndOnReload) {
  ASSERT_EQ(mkfifo((dir_ + "/fifo.key").c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THAT(TlsServer::Load({dir_ + "/server.crt", dir_ + "/fifo.key", ""}).message(),
              HasSubstr("fifo.key: cannot use as the TLS private key (PEM): " + dir_ +
                        "/fifo.key: not a regular file (a FIFO)"));
  StartTls();
  ::rename((dir_ + "/fifo.key").c_str(), (dir_ + "/server.key").c_str());
  Status st = service_->ReloadTls("test");
  EXPECT_THAT(st.message(), HasSubstr("TLS certificate not reloaded, the old one keeps serving"));
  EXPECT_THAT(st.message(), HasSubstr("not a regular file (a FIFO)"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4.0);
  EXPECT_EQ(Https()->Get("/healthz")->status, 200);
}

// Issue 31 item 10: with --tls-client-subject, a certificate the CA signed
// opens the Kubernetes routes only if its CN or a subjectAltName is listed.
TEST_F(TlsTest, ClientSubjectsOutsideTheAllowListCountAsNoCertificate) {
  opts_.k8s.enabled = true;
  opts_.tls.client_subjects = {"kube-apiserver"};
  auto intruder = MakeCert("some-controller", 0x4001, ca_.get(), false, false);
  WritePem(dir_ + "/intruder.crt", *intruder, false);
  WritePem(dir_ + "/intruder.key", *intruder, true);
  StartTls();
  const std::string empty_args = R"({"Pod": {}, "NodeNames": []})";
  auto r = Https(dir_ + "/client.crt", dir_ + "/client.key")->Post("/k8s/v1/filter", empty_args, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = Https(dir_ + "/intruder.crt", dir_ + "/intruder.key")->Post("/k8s/v1/filter", empty_args, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(Error(r), "/k8s/v1/filter needs a TLS client certificate signed by --tls-client-ca");
  // The names are matched exactly, against the CN and the subjectAltNames.
  EXPECT_TRUE(ClientSubjectAllowed(client_cert_->x509, {"kube-apiserver"}));
  EXPECT_FALSE(ClientSubjectAllowed(client_cert_->x509, {"kube-apiserver2", "Kube-apiserver"}));
  EXPECT_TRUE(ClientSubjectAllowed(server_->x509, {"localhost"}));  // DNS:localhost
  EXPECT_FALSE(ClientSubjectAllowed(server_->x509, {"127.0.0.1"}));  // IP SANs are not names
}

TEST(WithClientCert, DropsClientCopiesAndAddsTheVerifiedPeer) {
  const std::string req =
      "POST /k8s/v1/mutate HTTP/1.1\r\nHost: x\r\nx-gpucast-CLIENT-cert: /CN=forged\r\n"
      "X-Gpucast-Client-Cert: /CN=again\r\nContent-Length: 30\r\n\r\nX-Gpucast-Client-Cert: in body";
  EXPECT_EQ(WithClientCert(req, ""),
            "POST /k8s/v1/mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\nX-Gpucast-Client-Cert: in body");
  EXPECT_EQ(WithClientCert(req, "/CN=kube-apiserver\x01"),
            "POST /k8s/v1/mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n"
            "X-Gpucast-Client-Cert: /CN=kube-apiserver?\r\n\r\nX-Gpucast-Client-Cert: in body");
  // A head without the blank line (what admission sees).
  EXPECT_EQ(WithClientCert("GET / HTTP/1.1\r\nX-Gpucast-Client-Cert: x\r\n", "/CN=a"),
            "GET / HTTP/1.1\r\nX-Gpucast-Client-Cert: /CN=a\r\n");
}

}  // namespace
}  // namespace gpucast::service
