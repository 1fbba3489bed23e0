// Request parsing: the body and query string of POST /v1/jobs and POST
// /v1/predict into a JobSpec, and nothing else (pure: no files, no sockets,
// no clock). Every error names the field or parameter and what it wants, in
// the API's words, with the HTTP status to answer (400 malformed or invalid,
// 403, 415 wrong content type). docs/api.md "Jobs" is the contract.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "service/job.h"
#include "service/read_as.h"
#include "util/status.h"

namespace gpucast::service {

// What the service adds to every request.
struct RequestDefaults {
  std::string gpu = "RTX3090";  // canonical GPU type predicted for when a job names none (the cluster's)
  // A mixed cluster's GPU types (--cluster with node groups of several types;
  // `gpu` is then ""): a job must name one of them ("field 'gpu': ...").
  std::vector<std::string> cluster_gpus;
  int max_json_depth = 32;      // deeper JSON nesting is refused before parsing
};

// The parts of an HTTP request a job is read from.
struct RequestParts {
  std::string content_type;                        // "" = application/json
  std::multimap<std::string, std::string> params;  // percent-decoded query string
  std::string_view body;
  std::optional<std::string> read_as;              // X-Gpucast-Read-As, when sent
};

// A parsed job request: the spec with each network's path as the client named
// it (ModelPart::path == name until the files are opened), and where the
// model bytes come from.
struct JobRequest {
  JobSpec spec;
  bool upload = false;            // the ONNX file is the body (application/octet-stream)
  std::optional<ReadAs> read_as;  // open the paths as this user (the deputy's header)
};

// application/json: the job as a JSON object (request.cc ParseSpecJson).
// application/octet-stream: the ONNX file as the body, the fields as query
// parameters (batch, amp, gpus, gpu, name, duration_s, mem_mib, attr.KEY,
// dim.NAME). Errors set *http_status (400, 415).
Result<JobRequest> ParseJobRequest(const RequestParts& in, const RequestDefaults& defaults, int* http_status);

// A JSON job: {"model" | "models", "batch" (required), "amp", "gpus", "gpu",
// "name", "attrs", "dims", "mem_mib", "duration_s"}. Integers may be written
// as integral numbers (32.0); attrs take numbers, booleans or strings.
// Errors name the field: "field 'batch': want an integer in [1, 16777216], got 0".
Result<JobSpec> ParseSpecJson(const std::string& body, const RequestDefaults& defaults = {});

// The canonical GPU-table name of `name` (features/gpu_specs.h
// CanonicalGpuName, the one validation of every front end). Error: "field
// 'gpu': unknown GPU 'RTX3900'; closest: RTX3090, ... (gpucast gpus lists
// all)", `what` standing for "field 'gpu'".
Result<std::string> CheckGpuName(const std::string& what, const std::string& name);
// A request's MIG profile ("" = the whole GPU): error "<what>: unknown MIG
// profile 'X' (...)" (400) when no GPU of the table has it (CanonicalMigProfile);
// whether the job's GPU has it is the prediction's question (422). A control
// or non-ASCII byte is refused too (400): the table's spelling rule would
// drop it and read "1g.10gb\0" as 1g.10gb.
Status CheckMigName(const std::string& what, const std::string& profile);
// The same check, giving the canonical profile name ("mig 3G.40GB" ->
// "3g.40gb"; "" for ""): what a request's JobSpec::mig holds, so that
// POST /v1/predict and POST /v1/jobs store, show and predict one spelling.
Result<std::string> MigName(const std::string& what, const std::string& profile);

}  // namespace gpucast::service
