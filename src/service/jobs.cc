#include "service/jobs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>

#include "service/http_util.h"

namespace gpucast::service {

using nlohmann::json;

namespace {

constexpr int64_t kAll = std::numeric_limits<int64_t>::max();

double NowUnix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string GpuList(const std::vector<int>& gpus) {
  std::string s;
  for (int g : gpus) s += (s.empty() ? "" : ",") + std::to_string(g);
  return "[" + s + "]";
}

// The models of a job as its submitter named them, for the log.
std::string ModelsForLog(const JobSpec& spec) {
  std::string s;
  for (const ModelPart& p : spec.Parts()) s += (s.empty() ? "" : " + ") + ForLog(p.name, 128);
  return s;
}

}  // namespace

Status Jobs::Restore() {
  ASSIGN_OR_RETURN(std::vector<Job> running, store_->List(JobState::kRunning, 0, kAll));
  ASSIGN_OR_RETURN(std::vector<Job> queued, store_->List(JobState::kQueued, 0, kAll));
  ASSIGN_OR_RETURN(int64_t stored, store_->Count());
  std::lock_guard<std::mutex> lock(mu_);
  for (const Job& j : running) {
    Status st = scheduler_->Start(j);
    if (!st.ok()) return st.Prefixed(store_->path() + ": restoring job " + std::to_string(j.id));
    running_[j.id] = j;
  }
  queued_ = std::move(queued);
  stored_jobs_ = stored;
  return Status::Ok();
}

std::vector<Job> Jobs::LiveJobs() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Job> out = queued_;
  for (const auto& [id, j] : running_) out.push_back(j);
  std::sort(out.begin(), out.end(), [](const Job& a, const Job& b) { return a.id < b.id; });
  return out;
}

Status Jobs::RoomLocked(int* http_status) const {
  if (stored_jobs_ >= limits_.max_jobs) {
    *http_status = 507;
    return Status::Error("the service holds " + std::to_string(stored_jobs_) + " jobs, its limit (gpucast serve "
                         "--max-jobs " + std::to_string(limits_.max_jobs) + "); ask the operator");
  }
  if (static_cast<int64_t>(queued_.size()) >= limits_.max_queued_jobs) {
    *http_status = 503;
    return Status::Error(std::to_string(queued_.size()) + " jobs are queued, the limit (gpucast serve "
                         "--max-queued-jobs " + std::to_string(limits_.max_queued_jobs) + "); retry later");
  }
  return Status::Ok();
}

Result<Jobs::Submitted> Jobs::Submit(const JobRequest& req, std::string_view body, const std::string& key,
                                     int* http_status) {
  *http_status = 400;
  if (key.size() > 255) return Status::Error("Idempotency-Key: at most 255 bytes");
  ASSIGN_OR_RETURN(OpenedJob opened, predictions_->Open(req, body, http_status));
  Submitted out;
  auto replay = [&](const Job& j) -> Result<Submitted> {
    if (j.request_digest != opened.digest) {
      *http_status = 422;
      return Status::Error("Idempotency-Key '" + Shown(key, 255) + "' was already used for job " +
                           std::to_string(j.id) + " with a different request");
    }
    out.job = j;
    out.replayed = true;
    std::lock_guard<std::mutex> lock(mu_);
    if (j.state == JobState::kQueued) out.pending = PendingLocked(j);
    return out;
  };
  if (!key.empty()) {
    Result<std::optional<Job>> found = store_->GetByIdempotencyKey(key);
    if (!found.ok()) {
      *http_status = 500;
      return found.status();
    }
    if (*found) return replay(**found);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(RoomLocked(http_status));
    Status fits = scheduler_->CanEverFit(opened.spec);
    if (!fits.ok()) {
      *http_status = 422;
      return fits;
    }
  }
  bool hit = false;
  ASSIGN_OR_RETURN(Prediction pred, predictions_->Predict(opened, &hit, http_status));
  if (opened.spec.mem_mib <= 0 && PackingMemMib(opened.spec, pred) > 0) {
    // Packed by the predicted memory's high end: it must fit somewhere too.
    JobSpec probe = opened.spec;
    probe.mem_mib = PackingMemMib(opened.spec, pred);
    std::lock_guard<std::mutex> lock(mu_);
    Status fits = scheduler_->CanEverFit(probe);
    if (!fits.ok()) {
      *http_status = 422;
      return Status::Error("predicted GPU memory (interval high end " + std::to_string(static_cast<int64_t>(probe.mem_mib)) +
                           " MiB) does not fit: " + fits.message());
    }
  }
  Job job;
  job.spec = opened.spec;
  job.prediction = pred;
  // The `predict --json` report is POST /v1/predict's reply only; a live job kept it (tens
  // of KB in memory each: 6,000 queued jobs of vgg.onnx held 334 MiB). Jobs keep none.
  job.prediction.report.reset();
  job.state = JobState::kQueued;
  job.submitted_at = NowUnix();
  job.idempotency_key = key;
  job.request_digest = opened.digest;
  bool replayed = false;
  Result<Job> stored = Status::Error("not stored");
  {
    // Stored and queued in memory under one lock: a pass or a cancellation
    // sees the job in both or in neither.
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(RoomLocked(http_status));
    stored = store_->Insert(job, &replayed);  // committed (fsync) when it returns
    if (stored.ok() && !replayed) {
      ++stored_jobs_;
      auto at = std::lower_bound(queued_.begin(), queued_.end(), stored->id,
                                 [](const Job& q, int64_t id) { return q.id < id; });
      queued_.insert(at, *stored);
    }
  }
  if (!stored.ok()) {
    *http_status = 500;
    return stored.status();
  }
  if (replayed) return replay(*stored);
  if (opened.upload) opened.upload->Keep();  // the queued job holds the upload now
  std::fprintf(stderr, "gpucast serve: job %lld submitted: %s, batch %lld, %lld GPU(s) %s%s, predicted %.1f%%%s\n",
               static_cast<long long>(stored->id), ModelsForLog(stored->spec).c_str(),
               static_cast<long long>(stored->spec.batch), static_cast<long long>(stored->spec.gpus),
               stored->spec.gpu.c_str(), stored->spec.mig.empty() ? "" : (" MIG " + stored->spec.mig).c_str(),
               stored->prediction.util,
               stored->spec.name.empty() ? "" : (", name '" + ForLog(stored->spec.name, 64) + "'").c_str());
  // A pass now, so that the answer carries the placement (or why it waits).
  Status tick = Tick(NowUnix());
  if (!tick.ok()) std::fprintf(stderr, "gpucast serve: scheduling pass failed: %s\n", tick.message().c_str());
  Result<std::optional<std::pair<Job, std::string>>> now = Get(stored->id);
  if (now.ok() && *now) {
    out.job = (*now)->first;
    out.pending = (*now)->second;
  } else {
    out.job = *stored;
  }
  return out;
}

std::string Jobs::PendingLocked(const Job& job) {
  const auto at = std::lower_bound(queued_.begin(), queued_.end(), job.id,
                                   [](const Job& q, int64_t id) { return q.id < id; });
  return scheduler_->WhyWaiting(job, at - queued_.begin());
}

Result<std::optional<std::pair<Job, std::string>>> Jobs::Get(int64_t id) {
  ASSIGN_OR_RETURN(std::optional<Job> job, store_->Get(id));
  if (!job) return std::optional<std::pair<Job, std::string>>();
  std::string pending;
  if (job->state == JobState::kQueued) {
    std::lock_guard<std::mutex> lock(mu_);
    pending = PendingLocked(*job);
  }
  return std::optional<std::pair<Job, std::string>>(std::make_pair(std::move(*job), pending));
}

Result<std::vector<std::pair<Job, std::string>>> Jobs::List(std::optional<JobState> state, int64_t after,
                                                           int64_t limit) {
  ASSIGN_OR_RETURN(std::vector<Job> jobs, store_->List(state, after, limit));
  std::vector<std::pair<Job, std::string>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (Job& j : jobs) {
    std::string pending;
    if (j.state == JobState::kQueued) pending = PendingLocked(j);
    out.emplace_back(std::move(j), std::move(pending));
  }
  return out;
}

Result<Job> Jobs::Cancel(int64_t id, int* http_status) {
  std::lock_guard<std::mutex> lock(mu_);
  *http_status = 500;
  ASSIGN_OR_RETURN(std::optional<Job> found, store_->Get(id));
  if (!found) {
    *http_status = 404;
    return Status::Error("no job " + std::to_string(id));
  }
  Job job = *found;
  if (job.state == JobState::kDone || job.state == JobState::kCancelled) {
    *http_status = 409;
    return Status::Error("job " + std::to_string(id) + " is already " + JobStateName(job.state));
  }
  job.state = JobState::kCancelled;
  job.finished_at = NowUnix();
  RETURN_IF_ERROR(store_->Update({job}));
  running_.erase(job.id);
  std::erase_if(queued_, [&](const Job& q) { return q.id == job.id; });
  scheduler_->Finish(job.id);
  uploads_->ReleaseJob(job.spec);
  metrics_->AddDecisions("cancel", 1);
  std::fprintf(stderr, "gpucast serve: job %lld cancelled\n", static_cast<long long>(id));
  work_pending_ = true;  // freed GPUs may take queued jobs
  wake_.notify_all();
  return job;
}

Status Jobs::Tick(double now) {
  std::lock_guard<std::mutex> lock(mu_);
  // 1. Running jobs whose run time is over leave their GPUs.
  std::vector<Job> finished;
  for (const auto& [id, j] : running_) {
    if (j.spec.duration_s && j.started_at && *j.started_at + *j.spec.duration_s <= now) {
      Job d = j;
      d.state = JobState::kDone;
      d.finished_at = now;
      finished.push_back(std::move(d));
    }
  }
  if (!finished.empty()) {
    RETURN_IF_ERROR(store_->Update(finished));
    for (const Job& j : finished) {
      running_.erase(j.id);
      scheduler_->Finish(j.id);
      uploads_->ReleaseJob(j.spec);
      std::fprintf(stderr, "gpucast serve: job %lld done\n", static_cast<long long>(j.id));
    }
    metrics_->AddDecisions("finish", static_cast<int64_t>(finished.size()));
  }
  // 2. The policy places queued jobs.
  std::vector<Job> placed;
  if (!queued_.empty()) {
    ASSIGN_OR_RETURN(std::vector<Placement> decisions, scheduler_->Plan(queued_, now));
    std::map<int64_t, const Job*> by_id;
    for (const Placement& p : decisions) by_id[p.job_id] = nullptr;
    for (const Job& j : queued_) {
      if (auto it = by_id.find(j.id); it != by_id.end()) it->second = &j;
    }
    for (const Placement& p : decisions) {
      const Job* q = by_id[p.job_id];
      if (!q) return Status::Error("policy placed job " + std::to_string(p.job_id) + ", which is not queued");
      Job j = *q;
      j.state = JobState::kRunning;
      j.placement = p.gpus;
      j.exclusive = p.exclusive;
      j.started_at = now;
      placed.push_back(std::move(j));
    }
    if (!placed.empty()) {
      RETURN_IF_ERROR(store_->Update(placed));
      std::erase_if(queued_, [&](const Job& q) { return by_id.count(q.id) > 0; });
      for (const Job& j : placed) {
        running_[j.id] = j;
        RETURN_IF_ERROR(scheduler_->Start(j));
        std::fprintf(stderr, "gpucast serve: job %lld placed on GPU(s) %s%s (%s)\n", static_cast<long long>(j.id),
                     GpuList(j.placement).c_str(), j.exclusive ? " exclusively" : "",
                     j.spec.mig.empty() ? ("policy " + scheduler_->PolicyName()).c_str()
                                        : ("a MIG " + j.spec.mig + " slice").c_str());
      }
      metrics_->AddDecisions("place", static_cast<int64_t>(placed.size()));
    }
  }
  metrics_->SetJobCounts(static_cast<int64_t>(queued_.size()), static_cast<int64_t>(running_.size()));
  return Status::Ok();
}

void Jobs::Loop(double period_s) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    Status st = Tick(NowUnix());
    if (!st.ok()) std::fprintf(stderr, "gpucast serve: scheduling pass failed: %s\n", st.message().c_str());
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_for(lock, std::chrono::duration<double>(period_s), [this] { return work_pending_ || stopping_; });
    work_pending_ = false;
  }
}

void Jobs::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  work_pending_ = true;
  wake_.notify_all();
}

void Jobs::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  wake_.notify_all();
}

Result<json> Jobs::Cluster() {
  json out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out = scheduler_->ClusterJson();
    out["policy"] = scheduler_->PolicyName();
  }
  out["queued"] = json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < queued_.size() && i < 1000; ++i) out["queued"].push_back(queued_[i].id);
  return out;
}

json Jobs::ClusterJson() {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_->ClusterJson();
}

std::string Jobs::GpuType() {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_->GpuType();
}

void Jobs::Observe(int64_t id, double util) {
  std::lock_guard<std::mutex> lock(mu_);
  scheduler_->Observe(id, util);
}

}  // namespace gpucast::service
