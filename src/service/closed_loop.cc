#include "service/closed_loop.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include "features/gpu_specs.h"
#include "predict/observations.h"

namespace gpucast::service {

using nlohmann::json;

namespace {

double NowUnix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Result<std::unique_ptr<ClosedLoop>> ClosedLoop::Start(const std::string& db_path, Jobs* jobs, UploadStore* uploads,
                                                      PredictionEngine* engine,
                                                      const std::vector<std::string>& dcgm_urls,
                                                      double dcgm_interval_s, const LoopLimits& limits) {
  ASSIGN_OR_RETURN(std::unique_ptr<ObservationStore> store, ObservationStore::Open(db_path));
  store->SetMaxObservations(limits.max_observations);
  std::unique_ptr<ClosedLoop> loop(new ClosedLoop(jobs, uploads, engine, db_path, std::move(store)));
  // The graphs kept for training: counted, and those no observed job names removed.
  ASSIGN_OR_RETURN(loop->observed_, ObservedGraphs::Open(ObservedGraphDir(db_path), limits.observed_graph_quota_bytes));
  ASSIGN_OR_RETURN(std::set<std::string> observed, loop->store_->ObservedUploads());
  RETURN_IF_ERROR(loop->observed_->Restore(observed));
  // Running jobs restored onto their GPUs get their observations back.
  ASSIGN_OR_RETURN(std::vector<Job> running,
                   jobs->store()->List(JobState::kRunning, 0, std::numeric_limits<int64_t>::max()));
  std::vector<int64_t> ids;
  for (const Job& j : running) ids.push_back(j.id);
  ASSIGN_OR_RETURN(auto seen, loop->store_->Summaries(ids));
  for (const auto& [id, sum] : seen) jobs->Observe(id, sum.util);
  if (!dcgm_urls.empty()) {
    ClosedLoop* self = loop.get();
    ASSIGN_OR_RETURN(loop->dcgm_, DcgmScraper::Start(dcgm_urls, dcgm_interval_s,
                                                     [self](const std::vector<std::vector<DcgmSample>>& pages,
                                                            const std::vector<bool>& ok) { self->OnDcgmScrape(pages, ok); }));
  }
  return loop;
}

ClosedLoop::~ClosedLoop() { dcgm_.reset(); }

Status ClosedLoop::Store(const Job& job, Observation o, int* http_status) {
  *http_status = 500;
  if (o.gpu.empty() && !job.placement.empty()) {
    // Not stated: the type of the GPU the job was placed on, if the spec table knows it.
    const json cluster = jobs_->ClusterJson();
    const size_t g = static_cast<size_t>(job.placement[0]);
    if (cluster.contains("gpus") && g < cluster["gpus"].size() && cluster["gpus"][g].contains("type") &&
        cluster["gpus"][g]["type"].is_string() && FindGpuSpec(cluster["gpus"][g]["type"].get<std::string>())) {
      o.gpu = cluster["gpus"][g]["type"].get<std::string>();
      o.gpu_filled = true;
    }
  }
  ASSIGN_OR_RETURN(AddOutcome added, store_->Add(job.id, o, NowUnix()));
  if (added.kind == AddOutcome::kConflict) {
    *http_status = 422;
    return Status::Error("Idempotency-Key '" + o.idem_key + "' was already used for observation " +
                         std::to_string(added.row.id) + " of job " + std::to_string(added.row.job_id) +
                         " with a different request");
  }
  if (added.kind == AddOutcome::kOverCap) {
    *http_status = added.why.find("observations") != std::string::npos ? 429 : 422;
    return Status::Error(added.why);
  }
  if (added.kind == AddOutcome::kFull) {
    *http_status = 507;
    return Status::Error(added.why);
  }
  if (added.kind == AddOutcome::kReplayed) {
    *http_status = 200;  // nothing new: no metric, no scheduler update
    return Status::Ok();
  }
  *http_status = 201;
  metrics_.ObserveObservation(o.source, std::fabs(job.prediction.util - o.gpu_util));
  if (o.Overuse()) {
    metrics_.ObserveOveruse(o.source);
    std::fprintf(stderr,
                 "gpucast serve: job %lld overuse: observed %.1f%% GPU utilization (%s) against a share of %.1f%% "
                 "+ margin %.1f points\n",
                 static_cast<long long>(job.id), o.gpu_util, o.source.c_str(), *o.share_pct, o.overuse_margin);
  }
  // The scheduling loop's view: the job's mean so far (predictive-feedback packs by it).
  Result<std::optional<ObservedSummary>> sum = store_->Summary(job.id);
  if (sum.ok() && *sum) jobs_->Observe(job.id, (*sum)->util);
  // An uploaded graph is deleted once its job ends; keep a hard link for
  // training (`gpucast train --observations`), within its own quota.
  const std::string prefix = kUploadPrefix;
  if (job.spec.model.rfind(prefix, 0) == 0) {
    const std::string sha = job.spec.model.substr(prefix.size());
    Status kept = observed_->Keep(sha, uploads_->Path(sha));
    if (!kept.ok()) {
      std::fprintf(stderr, "gpucast serve: job %lld: %s\n", static_cast<long long>(job.id), kept.message().c_str());
    }
  }
  return Status::Ok();
}

Result<ClosedLoop::Added> ClosedLoop::Add(int64_t job_id, Observation o, int* http_status) {
  *http_status = 500;
  ASSIGN_OR_RETURN(std::optional<Job> job, jobs_->store()->Get(job_id));
  if (!job) {
    *http_status = 404;
    return Status::Error("no job " + std::to_string(job_id));
  }
  if (job->state == JobState::kCancelled) {
    *http_status = 409;
    return Status::Error("job " + std::to_string(job_id) + " is cancelled: it takes no observations (a measurement "
                         "of a job that did not run as submitted would mislead training)");
  }
  if (!job->spec.mig.empty()) {
    // Every source (nvidia-smi, dcgm, slurm) is the device's utilization.gpu
    // counter, which NVML reports for the whole GPU or not at all under MIG; a
    // slice's prediction is of DCGM's per-instance GR_ENGINE_ACTIVE
    // (Predictor::TargetFor). Stored, it would train a whole-GPU row.
    *http_status = 422;
    return Status::Error("job " + std::to_string(job_id) + " runs on a MIG " + job->spec.mig +
                         " slice: it takes no observations (the sources " +
                         "nvidia-smi, dcgm and slurm read the whole GPU's utilization counter, not the slice's)");
  }
  RETURN_IF_ERROR(Store(*job, o, http_status));
  Added out;
  out.replayed = *http_status == 200;
  out.predicted = job->prediction.util;
  out.shown = o;
  // With a key the answer is the observation stored under it (a replay too).
  if (!o.idem_key.empty()) {
    Result<std::optional<StoredObservation>> stored = store_->FindByKey(o.idem_key);
    if (!stored.ok()) {
      *http_status = 500;
      return stored.status();
    }
    if (*stored) out.shown = (*stored)->o;
  }
  return out;
}

void ClosedLoop::AddObserved(int64_t id, json* j) {
  Result<std::optional<ObservedSummary>> s = store_->Summary(id);
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

Status ClosedLoop::Reload(const std::string& why) {
  Status st = engine_->Reload();
  metrics_.ObserveReload(st.ok());
  // One line per outcome per kLogEveryS: a client reloading in a loop cannot flood the log.
  std::string quiet;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    LogLimit& limit = st.ok() ? reload_ok_ : reload_failed_;
    const auto now = std::chrono::steady_clock::now();
    if (limit.last != std::chrono::steady_clock::time_point{} &&
        now - limit.last < std::chrono::duration<double>(kLogEveryS)) {
      ++limit.quiet;
      return st;
    }
    if (limit.quiet > 0) quiet = " (and " + std::to_string(limit.quiet) + " more since the last line)";
    limit.last = now;
    limit.quiet = 0;
  }
  if (st.ok()) {
    std::fprintf(stderr, "gpucast serve: %s: predictor reloaded: %s%s\n", why.c_str(), engine_->Describe().c_str(),
                 quiet.c_str());
  } else {
    std::fprintf(stderr, "gpucast serve: %s: reload failed, the old predictor keeps serving: %s%s\n", why.c_str(),
                 st.message().c_str(), quiet.c_str());
  }
  return st;
}

void ClosedLoop::OnDcgmScrape(const std::vector<std::vector<DcgmSample>>& pages, const std::vector<bool>& ok) {
  for (bool o : ok) metrics_.ObserveScrape(o);
  const json cluster = jobs_->ClusterJson();
  std::vector<DcgmAttribution> found =
      AttributeDcgm(cluster, pages, [this](const std::string& outcome) { metrics_.ObserveDcgmSample(outcome); });
  for (const DcgmAttribution& a : found) {
    Result<std::optional<Job>> job = jobs_->store()->Get(a.job_id);
    if (!job.ok() || !*job) continue;
    Observation o;
    o.gpu_util = a.util;
    o.source = "dcgm";
    o.samples = std::min<int64_t>(a.samples, kMaxSamplesPerObservation);
    if (FindGpuSpec(a.gpu_type)) o.gpu = a.gpu_type;
    int status = 0;
    Status st = Store(**job, o, &status);
    if (!st.ok()) {
      metrics_.ObserveDcgmSample(status == 429 || status == 422 ? "capped" : "error");
      if (status != 429 && status != 422) {
        std::fprintf(stderr, "gpucast serve: DCGM observation of job %lld: %s\n", static_cast<long long>(a.job_id),
                     st.message().c_str());
      }
    }
  }
}

}  // namespace gpucast::service
