// The service's closed loop: observed utilization in (POST
// /v1/jobs/{id}/observations, the DCGM scraper), shown with each job, and the
// predictor file reloaded without a restart (SIGHUP, POST /v1/admin/reload).
// Routes are registered in server.cc's Routes() and pass the same pre-routing
// checks (token, UTF-8, 405) and body limits as every other route.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "features/gpu_specs.h"
#include "predict/observations.h"
#include "service/server.h"

namespace gpucast::service {

using nlohmann::json;

namespace {

double NowUnix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void ReplyError(httplib::Response& res, int status, const std::string& message) {
  Reply(res, status, json{{"error", message}});
}

}  // namespace

Status Service::StartClosedLoop() {
  ASSIGN_OR_RETURN(observations_, ObservationStore::Open(opts_.db_path));
  // Running jobs restored onto their GPUs get their observations back.
  ASSIGN_OR_RETURN(std::vector<Job> running,
                   store_->List(JobState::kRunning, 0, std::numeric_limits<int64_t>::max()));
  std::vector<int64_t> ids;
  for (const Job& j : running) ids.push_back(j.id);
  ASSIGN_OR_RETURN(auto seen, observations_->Summaries(ids));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, sum] : seen) scheduler_->Observe(id, sum.util);
  }
  if (!opts_.dcgm_urls.empty()) {
    ASSIGN_OR_RETURN(dcgm_, DcgmScraper::Start(opts_.dcgm_urls, opts_.dcgm_interval_s,
                                               [this](const std::vector<std::vector<DcgmSample>>& pages,
                                                      const std::vector<bool>& ok) { OnDcgmScrape(pages, ok); }));
  }
  return Status::Ok();
}

Status Service::StoreObservation(const Job& job, Observation o, int* http_status) {
  *http_status = 500;
  if (o.gpu.empty() && !job.placement.empty()) {
    // Not stated: the type of the GPU the job was placed on, if the spec table knows it.
    json cluster;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cluster = scheduler_->ClusterJson();
    }
    const size_t g = static_cast<size_t>(job.placement[0]);
    if (cluster.contains("gpus") && g < cluster["gpus"].size() && cluster["gpus"][g].contains("type") &&
        cluster["gpus"][g]["type"].is_string() && FindGpuSpec(cluster["gpus"][g]["type"].get<std::string>())) {
      o.gpu = cluster["gpus"][g]["type"].get<std::string>();
      o.gpu_filled = true;
    }
  }
  ASSIGN_OR_RETURN(AddOutcome added, observations_->Add(job.id, o, NowUnix()));
  if (added.kind == AddOutcome::kConflict) {
    *http_status = 422;
    return Status::Error("Idempotency-Key '" + o.idem_key + "' was already used for observation " +
                         std::to_string(added.row.id) + " of job " + std::to_string(added.row.job_id) +
                         " with a different request");
  }
  if (added.kind == AddOutcome::kReplayed) {
    *http_status = 200;  // nothing new: no metric, no scheduler update
    return Status::Ok();
  }
  *http_status = 201;
  loop_metrics_.ObserveObservation(o.source, std::fabs(job.prediction.util - o.gpu_util));
  if (o.Overuse()) {
    loop_metrics_.ObserveOveruse(o.source);
    std::fprintf(stderr,
                 "gpucast serve: job %lld overuse: observed %.1f%% GPU utilization (%s) against a share of %.1f%% "
                 "+ margin %.1f points\n",
                 static_cast<long long>(job.id), o.gpu_util, o.source.c_str(), *o.share_pct, o.overuse_margin);
  }
  // The scheduling loop's view: the job's mean so far (predictive-feedback packs by it).
  Result<std::optional<ObservedSummary>> sum = observations_->Summary(job.id);
  if (sum.ok() && *sum) {
    std::lock_guard<std::mutex> lock(mu_);
    scheduler_->Observe(job.id, (*sum)->util);
  }
  // An uploaded graph is deleted once its job ends; keep a hard link for
  // training (`gpucast train --observations`).
  const std::string prefix = kUploadModelPrefix;
  if (job.spec.model.rfind(prefix, 0) == 0) {
    const std::string sha = job.spec.model.substr(prefix.size());
    const std::string dir = ObservedGraphDir(opts_.db_path);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      std::fprintf(stderr, "gpucast serve: %s: cannot create: %s\n", dir.c_str(), std::strerror(errno));
    } else if (link(UploadPath(sha).c_str(), (dir + "/" + sha + ".onnx").c_str()) != 0 && errno != EEXIST) {
      std::fprintf(stderr, "gpucast serve: job %lld: cannot keep its uploaded graph for training: %s\n",
                   static_cast<long long>(job.id), std::strerror(errno));
    }
  }
  return Status::Ok();
}

void Service::PostObservation(const httplib::Request& req, httplib::Response& res) {
  const std::string id_text = req.matches[1];
  int64_t id = 0;
  try {
    size_t used = 0;
    long long v = std::stoll(id_text, &used);
    id = used == id_text.size() && v > 0 ? v : 0;
  } catch (const std::exception&) {
    id = 0;
  }
  if (id <= 0) return ReplyError(res, 404, "no job " + id_text.substr(0, 32));
  const std::string key = req.get_header_value("Idempotency-Key");
  if (key.size() > 255) return ReplyError(res, 400, "Idempotency-Key: at most 255 bytes");
  const std::string type = req.get_header_value("Content-Type");
  if (!type.empty() && type.rfind("application/json", 0) != 0) {
    return ReplyError(res, 415, "Content-Type: want application/json");
  }
  if (!IsValidUtf8(req.body)) return ReplyError(res, 400, "request body: not valid UTF-8");
  Result<Observation> o = ParseObservationJson(req.body);
  if (!o.ok()) return ReplyError(res, 400, o.message());
  Result<std::optional<Job>> job = store_->Get(id);
  if (!job.ok()) return ReplyError(res, 500, job.message());
  if (!*job) return ReplyError(res, 404, "no job " + std::to_string(id));
  o->idem_key = key;
  int status = 500;
  Status st = StoreObservation(**job, *o, &status);
  if (!st.ok()) return ReplyError(res, status, st.message());
  // With a key the answer is the observation stored under it (a replay too,
  // as POST /v1/jobs answers with its job: 201, Idempotent-Replayed: true).
  Observation shown = *o;
  if (!key.empty()) {
    Result<std::optional<StoredObservation>> stored = observations_->FindByKey(key);
    if (!stored.ok()) return ReplyError(res, 500, stored.message());
    if (*stored) shown = (*stored)->o;
  }
  if (status == 200) res.set_header("Idempotent-Replayed", "true");
  json out = {{"job", id},
              {"gpu_util", shown.gpu_util},
              {"source", shown.source},
              {"samples", shown.samples},
              {"predicted_util", (*job)->prediction.util}};
  if (!shown.gpu.empty()) out["gpu"] = shown.gpu;
  AddObserved(id, &out);  // observed_util, observed_samples, share_pct, overuse: the job's so far
  res.set_header("Location", "/v1/jobs/" + std::to_string(id));
  Reply(res, 201, out);
}

void Service::AddObserved(int64_t id, json* j) {
  Result<std::optional<ObservedSummary>> s = observations_->Summary(id);
  if (!s.ok()) {
    std::fprintf(stderr, "gpucast serve: %s\n", s.message().c_str());
    return;
  }
  (*j)["observed_util"] = *s ? json((*s)->util) : json(nullptr);
  (*j)["observed_samples"] = *s ? (*s)->samples : 0;
  // The share the job's observer stated (Slurm epilog), and whether it was exceeded by more than the margin.
  (*j)["share_pct"] = *s && (*s)->share_pct ? json(*(*s)->share_pct) : json(nullptr);
  (*j)["overuse"] = *s && (*s)->overuse;
}

Status Service::ReloadPredictor(const std::string& why) {
  Status st = engine_->Reload();
  loop_metrics_.ObserveReload(st.ok());
  if (st.ok()) {
    std::fprintf(stderr, "gpucast serve: %s: predictor reloaded: %s\n", why.c_str(), engine_->Describe().c_str());
  } else {
    std::fprintf(stderr, "gpucast serve: %s: reload failed, the old predictor keeps serving: %s\n", why.c_str(),
                 st.message().c_str());
  }
  return st;
}

void Service::PostReload(const httplib::Request&, httplib::Response& res) {
  Status st = ReloadPredictor("POST /v1/admin/reload");
  if (!st.ok()) {
    return Reply(res, 422, json{{"error", "predictor not reloaded, the old one keeps serving: " + st.message()},
                                {"predictor", engine_->Describe()}});
  }
  Reply(res, 200, json{{"reloaded", true}, {"predictor", engine_->Describe()}});
}

void Service::OnDcgmScrape(const std::vector<std::vector<DcgmSample>>& pages, const std::vector<bool>& ok) {
  for (bool o : ok) loop_metrics_.ObserveScrape(o);
  json cluster;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cluster = scheduler_->ClusterJson();
  }
  std::vector<DcgmAttribution> found =
      AttributeDcgm(cluster, pages, [this](const std::string& outcome) { loop_metrics_.ObserveDcgmSample(outcome); });
  for (const DcgmAttribution& a : found) {
    Result<std::optional<Job>> job = store_->Get(a.job_id);
    if (!job.ok() || !*job) continue;
    Observation o;
    o.gpu_util = a.util;
    o.source = "dcgm";
    o.samples = a.samples;
    if (FindGpuSpec(a.gpu_type)) o.gpu = a.gpu_type;
    int status = 0;
    Status st = StoreObservation(**job, o, &status);
    if (!st.ok()) std::fprintf(stderr, "gpucast serve: DCGM observation of job %lld: %s\n",
                               static_cast<long long>(a.job_id), st.message().c_str());
  }
}

}  // namespace gpucast::service
