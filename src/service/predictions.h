// From a parsed job request to a prediction: each network's file opened
// (under the model roots, as the deputy's user, or the uploaded body stored
// by content), then the engine. Used by POST /v1/predict and POST /v1/jobs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "service/engine.h"
#include "service/metrics.h"
#include "service/model_roots.h"
#include "service/model_store.h"
#include "service/request.h"
#include "service/uploads.h"
#include "util/status.h"

namespace gpucast::service {

// A job request with its files open.
struct OpenedJob {
  // The spec with each network's file (ModelPart::path, JobSpec::model) as
  // the service reads it and the client's names beside them.
  JobSpec spec;
  std::vector<OpenedModel> models;  // spec.Parts() order
  std::unique_ptr<UploadRef> upload;  // the upload's reference while needed
  std::optional<ReadAs> read_as;    // opened as the deputy's user
  std::string digest;               // identifies the request (Idempotency-Key reuse)
};

// A prediction for POST /v1/predict.
struct Predicted {
  JobSpec spec;  // as opened (SpecToJson shows the client's names)
  Prediction prediction;
  bool cache_hit = false;
};

class Predictions {
 public:
  // `deputy_min_uid`: the lowest uid a deputy may have files read as (never 0).
  Predictions(PredictionEngine* engine, const ModelRoots* roots, UploadStore* uploads, Metrics* metrics,
              uid_t deputy_min_uid)
      : engine_(engine), roots_(roots), uploads_(uploads), metrics_(metrics), deputy_min_uid_(deputy_min_uid) {}

  // Opens the request's model files. `body` is the upload for an upload
  // request. `max_seconds` (> 0) caps the wait for files read as the
  // deputy's user (read_as.h). Errors set *http_status (403 a refused
  // read-as identity, 422 a file refused or its read past the deadline, 413
  // a graph over the reader's bytes limit, 503 too many reads hanging,
  // 500/507 an upload not stored).
  Result<OpenedJob> Open(const JobRequest& req, std::string_view body, int* http_status, double max_seconds = 0);

  // The engine's prediction for an opened job. Errors set *http_status (413
  // a graph over the bytes limit, 422 a graph refused or over another limit,
  // 503 the analysis pool full). A file opened as a user that is not an ONNX
  // model gets the message an unreadable one gets. `max_seconds` (> 0) caps
  // the analysis time below the service's limit (the client's deadline: the
  // deputy's plugin gives up then). A job read as the deputy's user is
  // cached for that user only (a user cannot learn from the answer's time
  // whether another user's graph was analysed).
  Result<Prediction> Predict(const OpenedJob& job, bool* cache_hit, int* http_status, double max_seconds = 0);

  // Models named "sha256:<hex>" are opened from `store` (POST /v1/models); null: refused like any path.
  void SetModelStore(const ModelStore* store) { store_ = store; }

  // Open, then Predict; nothing is kept (an upload is removed unless a job holds it).
  Result<Predicted> Run(const JobRequest& req, std::string_view body, int* http_status, double max_seconds = 0);

 private:
  PredictionEngine* engine_;
  const ModelRoots* roots_;
  UploadStore* uploads_;
  Metrics* metrics_;
  uid_t deputy_min_uid_;
  const ModelStore* store_ = nullptr;
};

}  // namespace gpucast::service
