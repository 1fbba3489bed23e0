#include "service/predictions.h"

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "service/http_util.h"
#include "service/sha256.h"

namespace gpucast::service {

Result<OpenedJob> Predictions::Open(const JobRequest& req, std::string_view body, int* http_status,
                                    double max_seconds) {
  OpenedJob out;
  out.spec = req.spec;
  if (req.upload) {
    const std::string sha = Sha256Hex(body);
    RETURN_IF_ERROR(uploads_->Acquire(sha, body, http_status));
    out.upload = std::make_unique<UploadRef>(uploads_);
    out.upload->Set(sha);
    out.spec.model = out.spec.model_name = kUploadPrefix + sha;
    OpenedModel& model = out.models.emplace_back();
    model.fd = UniqueFd(::open(uploads_->Path(sha).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    model.path = out.spec.model;
    if (model.fd.get() < 0) {
      *http_status = 500;
      return Status::Error("cannot read the stored upload");
    }
  } else {
    if (req.read_as) {
      // Checked before any file is touched: the identity itself may be refused.
      Status who = CheckReadAsIdentity(*req.read_as, deputy_min_uid_);
      if (!who.ok()) {
        *http_status = 403;
        return who;
      }
      out.read_as = req.read_as;
    }
    // Each network's file, under the model roots (or as the deputy's user).
    for (const ModelPart& part : req.spec.Parts()) {
      ReadAsFailure why = ReadAsFailure::kNone;
      // A content address is the model store's (whoever asks); a path, the roots' or the user's.
      Result<OpenedModel> opened = store_ && IsContentAddress(part.name) ? store_->Open(part.name)
                                   : req.read_as ? OpenAsUser(part.name, *req.read_as, &why, max_seconds)
                                                 : roots_->Open(part.name);
      if (why == ReadAsFailure::kTimeout) {
        // A file on a hung filesystem: logged for the operator; the worker is free again.
        std::fprintf(stderr, "gpucast serve: X-Gpucast-Read-As: %s (%d reads hanging)\n",
                     ForLog(opened.message(), 1024).c_str(), HungDeputyReads());
      }
      if (why == ReadAsFailure::kBusy || why == ReadAsFailure::kTooLarge) {
        *http_status = why == ReadAsFailure::kBusy ? 503 : 413;
        return opened.status();
      }
      if (why == ReadAsFailure::kServiceCannot) {
        // The operator's problem, logged for the operator; the user sees no reason about the file.
        std::fprintf(stderr, "gpucast serve: X-Gpucast-Read-As: %s\n", ForLog(opened.message(), 1024).c_str());
        *http_status = 500;
        return Status::Error("the service cannot read files as the submitting user; see its log");
      }
      if (!opened.ok()) {
        *http_status = 422;
        return opened.status();
      }
      for (const OpenedModel& seen : out.models) {
        if (seen.path == opened->path) {
          *http_status = 422;
          return Status::Error("models: '" + Shown(part.name, 256) +
                               "' names a file listed before (give one entry with the total repeat)");
        }
      }
      out.models.push_back(std::move(opened).value());
    }
    for (size_t i = 0; i < out.spec.models.size(); ++i) out.spec.models[i].path = out.models[i].path;
    out.spec.model = out.models.front().path;
  }
  out.digest = Sha256Hex(Dump(SpecToStoredJson(out.spec)));
  return out;
}

Result<Prediction> Predictions::Predict(const OpenedJob& job, bool* cache_hit, int* http_status, double max_seconds) {
  std::vector<int> fds;
  for (const OpenedModel& m : job.models) fds.push_back(m.fd.get());
  PredictInfo info;
  info.max_seconds = max_seconds;
  if (job.read_as) info.cache_scope = "uid:" + std::to_string(job.read_as->uid);
  Result<Prediction> pred = engine_->Predict(job.spec, fds, &info);
  *cache_hit = info.cache_hit;
  metrics_->ObservePrediction(pred.ok(), info.cache_hit);
  if (pred.ok()) return pred;
  switch (info.failure) {
    case AnalysisFailure::kTooLarge: *http_status = 413; break;
    case AnalysisFailure::kBusy: *http_status = 503; break;
    default: *http_status = 422; break;
  }
  if (job.read_as && info.failure == AnalysisFailure::kNotAModel) {
    // One message for every file the user cannot have analysed (read_as.h).
    for (const ModelPart& p : job.spec.Parts()) {
      if (pred.message().rfind(p.name + ":", 0) == 0) return Status::Error(UnreadableAsUser(p.name, job.read_as->uid));
    }
    return Status::Error(UnreadableAsUser(job.spec.Parts().front().name, job.read_as->uid));
  }
  return pred;
}

Result<Predicted> Predictions::Run(const JobRequest& req, std::string_view body, int* http_status,
                                   double max_seconds) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(OpenedJob opened, Open(req, body, http_status, max_seconds));
  Predicted out;
  double left = 0;
  if (max_seconds > 0) left = std::max(1e-3, max_seconds - std::chrono::duration<double>(Clock::now() - start).count());
  ASSIGN_OR_RETURN(out.prediction, Predict(opened, &out.cache_hit, http_status, left));
  out.spec = std::move(opened.spec);
  return out;
}

}  // namespace gpucast::service
