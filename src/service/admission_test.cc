// Admission decided from a head alone, without sockets.
#include "service/admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpucast::service {
namespace {

std::vector<RouteRule> Rules() {
  return {{"POST", std::regex("/v1/jobs"), Access::kJobs, true},
          {"GET", std::regex("/v1/jobs"), Access::kJobs, false},
          {"GET", std::regex(R"(/v1/jobs/(\d+))"), Access::kJobs, false},
          {"DELETE", std::regex(R"(/v1/jobs/(\d+))"), Access::kJobs, false},
          {"POST", std::regex("/v1/admin/reload"), Access::kAdmin, false},
          {"GET", std::regex("/healthz"), Access::kPublic, false}};
}

HeadFacts Head(std::string method, std::string path, std::string auth = "", bool body = false, bool read_as = false) {
  return {std::move(method), std::move(path), std::move(auth), read_as, body};
}

TEST(AdmissionTest, PublicRoutesAreGetWithoutABody) {
  const Tokens t{"jobs", "deputy", "admin"};
  EXPECT_EQ(Admit(Rules(), t, Head("GET", "/healthz")).status, 0);
  EXPECT_EQ(Admit(Rules(), t, Head("HEAD", "/healthz")).status, 0);
  Admission a = Admit(Rules(), t, Head("POST", "/healthz", "", true));
  EXPECT_EQ(a.status, 405);
  EXPECT_EQ(a.message, "method POST not allowed on /healthz (allowed: GET)");
  EXPECT_EQ(a.headers, "Allow: GET\r\n");
  a = Admit(Rules(), t, Head("GET", "/healthz", "", true));
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.message, "GET /healthz takes no request body");
}

TEST(AdmissionTest, TokensAndWhatEachOpens) {
  const Tokens t{"jobs", "deputy", "admin"};
  Admission a = Admit(Rules(), t, Head("POST", "/v1/jobs", "", true));
  EXPECT_EQ(a.status, 401);
  EXPECT_EQ(a.message, "missing 'Authorization: Bearer <token>' header");
  EXPECT_EQ(a.headers, "WWW-Authenticate: Bearer\r\n");
  EXPECT_EQ(Admit(Rules(), t, Head("POST", "/v1/jobs", "Bearer nope", true)).message, "invalid bearer token");
  // Unknown paths are not revealed without a token.
  EXPECT_EQ(Admit(Rules(), t, Head("GET", "/v2/x")).status, 401);
  EXPECT_EQ(Admit(Rules(), t, Head("GET", "/v2/x", "Bearer jobs")).status, 404);
  for (const char* who : {"Bearer jobs", "Bearer deputy", "Bearer admin"}) {
    Admission ok = Admit(Rules(), t, Head("POST", "/v1/jobs", who, true));
    EXPECT_EQ(ok.status, 0) << who;
  }
  EXPECT_EQ(Admit(Rules(), t, Head("POST", "/v1/jobs", "Bearer deputy", true)).bearer, Admission::Bearer::kDeputy);
  // Admin routes: the admin token only.
  EXPECT_EQ(Admit(Rules(), t, Head("POST", "/v1/admin/reload", "Bearer admin")).status, 0);
  EXPECT_EQ(Admit(Rules(), t, Head("POST", "/v1/admin/reload", "Bearer jobs")).status, 403);
  EXPECT_EQ(Admit(Rules(), t, Head("POST", "/v1/admin/reload", "Bearer deputy")).status, 403);
  EXPECT_EQ(Admit(Rules(), t, Head("POST", "/v1/admin/reload")).status, 401);
  // No admin token: off while another token is set, open when none is.
  EXPECT_EQ(Admit(Rules(), Tokens{"jobs", "", ""}, Head("POST", "/v1/admin/reload", "Bearer jobs")).status, 403);
  EXPECT_EQ(Admit(Rules(), Tokens{"", "deputy", ""}, Head("POST", "/v1/admin/reload")).status, 403);
  EXPECT_EQ(Admit(Rules(), Tokens{}, Head("POST", "/v1/admin/reload")).status, 0);
  EXPECT_EQ(Admit(Rules(), Tokens{}, Head("POST", "/v1/jobs", "", true)).status, 0);
}

TEST(AdmissionTest, ReadAsIsTheDeputysAndBodiesOnlyWhereTaken) {
  const Tokens t{"jobs", "deputy", ""};
  Admission a = Admit(Rules(), t, Head("POST", "/v1/jobs", "Bearer jobs", true, true));
  EXPECT_EQ(a.status, 403);
  EXPECT_EQ(a.message, "X-Gpucast-Read-As: only the deputy (the bearer of --deputy-token-file) may have files read as a user");
  EXPECT_EQ(Admit(Rules(), t, Head("POST", "/v1/jobs", "Bearer deputy", true, true)).status, 0);
  EXPECT_EQ(Admit(Rules(), Tokens{}, Head("POST", "/v1/jobs", "", true, true)).status, 403);
  a = Admit(Rules(), t, Head("DELETE", "/v1/jobs/3", "Bearer jobs", true));
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.message, "DELETE /v1/jobs/3 takes no request body");
  a = Admit(Rules(), t, Head("PUT", "/v1/jobs", "Bearer jobs", true));
  EXPECT_EQ(a.status, 405);
  EXPECT_EQ(a.headers, "Allow: POST, GET\r\n");
  EXPECT_EQ(Admit(Rules(), t, Head("GET", "/\xff")).status, 400);
}

TEST(AdmissionTest, HeadFactsFromANormalizedHead) {
  HeadFacts h;
  ASSERT_TRUE(ParseHeadFacts("POST /v1/%6Aobs?x=1 HTTP/1.1\r\nauthorization:  Bearer t \r\nX-Gpucast-Read-As: 1:1\r\n",
                             true, &h));
  EXPECT_EQ(h.method, "POST");
  EXPECT_EQ(h.path, "/v1/jobs");
  EXPECT_EQ(h.authorization, "Bearer t");
  EXPECT_TRUE(h.read_as);
  EXPECT_TRUE(h.has_body);
  EXPECT_FALSE(ParseHeadFacts("garbage", false, &h));
}

TEST(AdmissionTest, KubernetesRoutesTakeAClientCertificateOrTheJobToken) {
  std::vector<RouteRule> rules = Rules();
  rules.push_back({"POST", std::regex("/k8s/v1/mutate"), Access::kKubernetes, true});
  auto k8s = [](std::string auth, std::string cert) {
    HeadFacts h = Head("POST", "/k8s/v1/mutate", std::move(auth), true);
    h.client_cert = std::move(cert);
    return h;
  };
  // A job token and a client CA: either admits.
  Tokens both{"jobs", "deputy", "admin", true};
  EXPECT_EQ(Admit(rules, both, k8s("", "/CN=kube-apiserver")).status, 0);
  EXPECT_EQ(Admit(rules, both, k8s("Bearer jobs", "")).status, 0);
  Admission a = Admit(rules, both, k8s("", ""));
  EXPECT_EQ(a.status, 401);
  EXPECT_EQ(a.message, "missing 'Authorization: Bearer <token>' header (or a client certificate signed by --tls-client-ca)");
  EXPECT_EQ(Admit(rules, both, k8s("Bearer nope", "")).message, "invalid bearer token");
  // Issue 31 item 10: the deputy and admin tokens do not open them.
  a = Admit(rules, both, k8s("Bearer deputy", ""));
  EXPECT_EQ(a.status, 403);
  EXPECT_EQ(a.message, "/k8s/v1/mutate does not take the deputy token (Kubernetes routes take a client certificate or "
                       "the job token)");
  EXPECT_EQ(Admit(rules, both, k8s("Bearer admin", "")).status, 403);
  EXPECT_EQ(Admit(rules, Tokens{"", "deputy", "admin", true}, k8s("Bearer admin", "")).status, 403);
  EXPECT_EQ(Admit(rules, both, k8s("Bearer deputy", "/CN=kube-apiserver")).status, 0);  // the certificate admits
  // A certificate opens the Kubernetes routes only.
  HeadFacts jobs = Head("POST", "/v1/jobs", "", true);
  jobs.client_cert = "/CN=kube-apiserver";
  EXPECT_EQ(Admit(rules, both, jobs).status, 401);
  // A client CA alone.
  Tokens ca{"", "", "", true};
  a = Admit(rules, ca, k8s("", ""));
  EXPECT_EQ(a.status, 403);
  EXPECT_EQ(a.message, "/k8s/v1/mutate needs a TLS client certificate signed by --tls-client-ca");
  EXPECT_EQ(Admit(rules, ca, k8s("", "/CN=x")).status, 0);
  // Neither: open, like the job routes.
  EXPECT_EQ(Admit(rules, Tokens{}, k8s("", "")).status, 0);
  // ParseHeadFacts reads the certificate HttpFront put there.
  HeadFacts h;
  ASSERT_TRUE(ParseHeadFacts("POST /k8s/v1/mutate HTTP/1.1\r\nX-Gpucast-Client-Cert: /CN=kube-apiserver\r\n", true, &h));
  EXPECT_EQ(h.client_cert, "/CN=kube-apiserver");
}

}  // namespace
}  // namespace gpucast::service
