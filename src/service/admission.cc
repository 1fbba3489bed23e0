#include "service/admission.h"

#include <cctype>

#include <httplib.h>

#include "service/http_front.h"
#include "service/http_util.h"

namespace gpucast::service {

namespace {

Admission Refuse(int status, std::string message, std::string headers = "") {
  Admission a;
  a.status = status;
  a.message = std::move(message);
  a.headers = std::move(headers);
  return a;
}

Admission::Bearer WhichToken(const Tokens& t, const std::string& authorization) {
  const std::string prefix = "Bearer ";
  if (authorization.compare(0, prefix.size(), prefix) != 0) return Admission::Bearer::kNone;
  const std::string token = authorization.substr(prefix.size());
  // Every comparison runs, in constant time each.
  const bool jobs = !t.jobs.empty() && ConstantTimeEqual(token, t.jobs);
  const bool deputy = !t.deputy.empty() && ConstantTimeEqual(token, t.deputy);
  const bool admin = !t.admin.empty() && ConstantTimeEqual(token, t.admin);
  return admin ? Admission::Bearer::kAdmin
         : deputy ? Admission::Bearer::kDeputy
         : jobs   ? Admission::Bearer::kJobs
                  : Admission::Bearer::kNone;
}

const char* BearerName(Admission::Bearer b) {
  switch (b) {
    case Admission::Bearer::kJobs: return "job token";
    case Admission::Bearer::kDeputy: return "deputy token";
    case Admission::Bearer::kAdmin: return "admin token";
    case Admission::Bearer::kNone: break;
  }
  return "bearer token";
}

}  // namespace

bool TokenOpens(Admission::Bearer bearer, Access family) {
  if (bearer == Admission::Bearer::kNone) return true;  // decided by the rules above (open or 401)
  for (const TokenScope& s : kTokenScopes) {
    if (s.family == family) {
      switch (bearer) {
        case Admission::Bearer::kJobs: return s.job_token;
        case Admission::Bearer::kDeputy: return s.deputy_token;
        case Admission::Bearer::kAdmin: return s.admin_token;
        case Admission::Bearer::kNone: return true;
      }
    }
  }
  return false;
}

std::string ScopeOf(Access family) {
  for (const TokenScope& s : kTokenScopes) {
    if (s.family == family) return s.takes;
  }
  return "";
}

Admission Admit(const std::vector<RouteRule>& routes, const Tokens& tokens, const HeadFacts& h) {
  // 1. What reaches handlers and messages is valid UTF-8 without control bytes.
  if (!IsValidUtf8(h.path) || HasControlByte(h.path)) {
    return Refuse(400, "request path: not valid UTF-8, or control bytes, after percent-decoding");
  }
  const std::string method = h.method == "HEAD" ? "GET" : h.method;
  std::vector<const RouteRule*> matches;
  for (const RouteRule& r : routes) {
    if (std::regex_match(h.path, r.path)) matches.push_back(&r);
  }
  const bool is_public = !matches.empty() && matches.front()->access == Access::kPublic;
  const Admission::Bearer bearer = WhichToken(tokens, h.authorization);
  // 2. Where a token is needed, nothing without one (not even which paths exist).
  const bool admin_path = !matches.empty() && matches.front()->access == Access::kAdmin;
  const bool k8s_path = !matches.empty() && matches.front()->access == Access::kKubernetes;
  // 2a. The API server and kube-scheduler: a verified client certificate, or the job token.
  if (k8s_path && h.client_cert.empty() && bearer == Admission::Bearer::kNone) {
    if (!tokens.jobs.empty()) {
      return Refuse(401, h.authorization.empty()
                             ? "missing 'Authorization: Bearer <token>' header (or a client certificate signed by "
                               "--tls-client-ca)"
                             : "invalid bearer token",
                    "WWW-Authenticate: Bearer\r\n");
    }
    if (tokens.client_ca) {
      return Refuse(403, h.path + " needs a TLS client certificate signed by --tls-client-ca");
    }
  }
  const bool needs_token = !is_public && !k8s_path && (admin_path ? !tokens.admin.empty() : !tokens.jobs.empty());
  if (needs_token && bearer == Admission::Bearer::kNone) {
    return Refuse(401, h.authorization.empty() ? "missing 'Authorization: Bearer <token>' header" : "invalid bearer token",
                  "WWW-Authenticate: Bearer\r\n");
  }
  // 2b. Each token opens the families of routes kTokenScopes gives it: the
  // deputy and admin tokens never open the Kubernetes routes.
  const Access family = matches.empty() ? Access::kPublic : matches.front()->access;
  const bool family_guarded = (family == Access::kJobs && !tokens.jobs.empty()) ||
                              (family == Access::kKubernetes && h.client_cert.empty() &&
                               (!tokens.jobs.empty() || tokens.client_ca));
  if (family_guarded && !TokenOpens(bearer, family)) {
    return Refuse(403, h.path + " does not take the " + BearerName(bearer) + " (" + ScopeOf(family) + ")");
  }
  // 3. A path no route serves, or a method it does not take.
  if (matches.empty()) return Refuse(404, "no route for " + h.method + " " + Shown(h.path, 200));
  const RouteRule* route = nullptr;
  std::string allow;
  for (const RouteRule* r : matches) {
    if (r->method == method) route = r;
    if (allow.find(r->method) == std::string::npos) allow += (allow.empty() ? "" : ", ") + r->method;
  }
  if (!route) {
    return Refuse(405, "method " + h.method + " not allowed on " + Shown(h.path, 200) + " (allowed: " + allow + ")",
                  "Allow: " + allow + "\r\n");
  }
  // 4. The route's own access.
  if (route->access == Access::kAdmin && bearer != Admission::Bearer::kAdmin) {
    if (!tokens.admin.empty()) {
      return Refuse(403, h.path + " needs the admin token (gpucast serve --admin-token-file), not the job or deputy token");
    }
    if (!tokens.jobs.empty() || !tokens.deputy.empty()) {
      return Refuse(403, h.path + " is off: start gpucast serve with --admin-token-file to allow it (SIGHUP "
                                  "reloads the predictor without it)");
    }
  }
  if (h.read_as && bearer != Admission::Bearer::kDeputy) {
    return Refuse(403, "X-Gpucast-Read-As: only the deputy (the bearer of --deputy-token-file) may have files read "
                       "as a user");
  }
  // 5. A body where none is taken is refused before it is read.
  if (h.has_body && !route->takes_body) {
    return Refuse(400, h.method + " " + Shown(h.path, 200) + " takes no request body");
  }
  Admission ok;
  ok.bearer = bearer;
  return ok;
}

bool ParseHeadFacts(const std::string& head, bool has_body, HeadFacts* out) {
  const size_t eol = head.find("\r\n");
  const std::string line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return false;
  out->method = line.substr(0, sp1);
  std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));
  out->path = httplib::detail::decode_url(target, false);
  out->authorization.clear();
  out->read_as = false;
  out->client_cert.clear();
  out->has_body = has_body;
  for (size_t pos = eol; pos != std::string::npos && pos + 2 < head.size();) {
    const size_t e = head.find("\r\n", pos + 2);
    const std::string field = head.substr(pos + 2, (e == std::string::npos ? head.size() : e) - pos - 2);
    pos = e;
    const size_t colon = field.find(':');
    if (colon == std::string::npos) continue;
    std::string name = field.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = field.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
    if (name == "authorization") out->authorization = value;
    if (name == "x-gpucast-read-as") out->read_as = true;
    if (name == "x-gpucast-client-cert") out->client_cert = value;
  }
  return true;
}

}  // namespace gpucast::service
