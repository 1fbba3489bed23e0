// Who may send which request: decided from a request's head alone (method,
// path, Authorization, X-Gpucast-Read-As, whether a body comes), so that a
// refused request's body is never read. The same decision runs again on the
// parsed request before routing. Pure: tested without sockets.
//
//   public routes (GET/HEAD /healthz, /metrics): anyone, without a body;
//   job routes: with a job token configured, the job, deputy or admin token;
//   admin routes (/v1/admin/*): the admin token; with no admin token
//     configured they are off while any token is (403), open when none is;
//   X-Gpucast-Read-As: the deputy token only (403);
//   Kubernetes routes (/k8s/v1/*): a verified TLS client certificate
//     (--tls-client-ca; HttpFront's X-Gpucast-Client-Cert) or the job token;
//     open when neither a job token nor a client CA is configured.
// Which token opens which family is the table kTokenScopes; a known token
// shown to a family it does not open is 403 naming both.
// Unknown paths are 404, known paths with another method 405 (Allow), a
// body to a route that takes none 400.
#pragma once

#include <regex>
#include <string>
#include <vector>

namespace gpucast::service {

enum class Access { kPublic, kJobs, kAdmin, kKubernetes };

// What admission knows of a route.
struct RouteRule {
  std::string method;  // GET, POST, DELETE (HEAD is GET's)
  std::regex path;     // over the percent-decoded path
  Access access = Access::kJobs;
  bool takes_body = false;
};

struct Tokens {
  std::string jobs;    // "" = job routes open
  std::string deputy;  // "" = no deputy
  std::string admin;   // "" = no admin token
  bool client_ca = false;  // --tls-client-ca: verified client certificates admit the Kubernetes routes
};

// The parts of a request head admission looks at.
struct HeadFacts {
  std::string method;
  std::string path;           // percent-decoded, without the query
  std::string authorization;  // the header's value, "" if absent
  bool read_as = false;       // X-Gpucast-Read-As was sent
  bool has_body = false;      // Content-Length > 0 or chunked
  std::string client_cert{};  // the verified TLS client certificate's subject (kClientCertHeader), "" if none
};

// status 0: admitted; else the status, message and extra header lines
// ("Name: value\r\n") of the refusal. `bearer` says which token was shown.
struct Admission {
  int status = 0;
  std::string message;
  std::string headers;
  enum class Bearer { kNone, kJobs, kDeputy, kAdmin } bearer = Bearer::kNone;
};

Admission Admit(const std::vector<RouteRule>& routes, const Tokens& tokens, const HeadFacts& head);

// What each token opens, per family of routes (docs/security.md shows it).
struct TokenScope {
  Access family;
  bool job_token, deputy_token, admin_token;
  const char* takes;  // for the refusal: what the family takes
};
inline constexpr TokenScope kTokenScopes[] = {
    {Access::kPublic, true, true, true, "no token needed"},
    {Access::kJobs, true, true, true, "job routes take the job, deputy or admin token"},
    {Access::kAdmin, false, false, true, "admin routes take the admin token"},
    {Access::kKubernetes, true, false, false, "Kubernetes routes take a client certificate or the job token"},
};
// Whether `bearer` (a token that matched) opens routes of `family`.
bool TokenOpens(Admission::Bearer bearer, Access family);
// kTokenScopes' `takes` of `family`.
std::string ScopeOf(Access family);

// The method, decoded path and facts of a normalized request head
// (RequestFramer::TakeHeadForCheck); false if it is not one.
bool ParseHeadFacts(const std::string& head, bool has_body, HeadFacts* out);

}  // namespace gpucast::service
