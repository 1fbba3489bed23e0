// Observed jobs: the utilization a submitted job really had while it ran
// (posted to `gpucast serve` by a Slurm epilog or a client, or scraped from a
// DCGM exporter), read back as training rows for `gpucast train/evaluate
// --observations DB` (docs/operations.md, docs/predictor.md).
//
// The service writes the table below into the same SQLite file as its jobs
// (src/service/observations.cc); this layer only reads it, through a
// read-only connection, joined with two columns of the service's `jobs`
// table: `id` and `spec` (the submission as JSON: model, batch, amp, attrs,
// dims; src/service/job.cc SpecToJson). The table is defined once, here,
// because the service sits above this layer.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "features/features.h"
#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/regressor.h"
#include "util/status.h"

namespace gpucast {

inline constexpr const char* kObservationsSchemaSql = R"sql(
CREATE TABLE IF NOT EXISTS observations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL,       -- jobs.id of the observed job
  gpu_util REAL NOT NULL,        -- percent 0..100, mean over `samples`
  samples INTEGER NOT NULL,      -- >= 1 utilization samples behind gpu_util
  source TEXT NOT NULL,          -- 'nvidia-smi' | 'dcgm' | 'slurm'
  gpu TEXT NOT NULL,             -- GPU spec key the job ran on; '' = not known
  observed_at REAL NOT NULL,     -- unix seconds when it was stored
  idem_key TEXT,                 -- the POST's Idempotency-Key; NULL = none (unique, index below)
  share_pct REAL,                -- the job's share of its GPU, percent; NULL = not stated
  overuse_margin REAL            -- points above share_pct that count as overuse (with share_pct)
);
CREATE INDEX IF NOT EXISTS observations_job ON observations(job_id);
)sql";

// Created after kObservationsSchemaSql and after the service has added the
// columns a database created before them lacks (ALTER TABLE ADD COLUMN,
// src/service/observations.cc): idem_key, share_pct, overuse_margin.
inline constexpr const char* kObservationsIdemIndexSql =
    "CREATE UNIQUE INDEX IF NOT EXISTS observations_idem ON observations(idem_key)";

// What an observation's `source` may be.
inline constexpr std::array<const char*, 3> kObservationSources = {"nvidia-smi", "dcgm", "slurm"};

// The model name the service stores for an uploaded graph: this prefix and
// the upload's SHA-256 in hex.
inline constexpr const char* kUploadModelPrefix = "upload:sha256:";

// Where the service keeps a hard link of each observed job's uploaded graph,
// so that it outlives the job: db_path + ".observed" (files "<sha256>.onnx").
// (Inline: the service uses it without linking this layer's reader.)
inline std::string ObservedGraphDir(const std::string& db_path) { return db_path + ".observed"; }

// One network of an observed job given as "models" (several networks per
// step: GAN G+D, actor+critic).
struct ObservedNetwork {
  std::string graph_file;  // as stored (a path under the service's model roots)
  double repeat = 1;       // forward+backward passes per step (cost/job_cost.h StepReport)
};

// One observed job on one GPU type: its observations merged.
struct ObservedJob {
  int64_t job_id = 0;
  std::string stored_model;  // jobs.spec model as stored (a path or "upload:sha256:..."); the first network
  std::string graph_file;    // file to load the graph from ("" = not available, see skip_reason)
  std::vector<ObservedNetwork> networks;  // every network of a "models" job; empty for one network
  std::string skip_reason;   // why the job cannot become a training row ("" = it can)
  int64_t batch = 1;
  bool amp = false;
  std::map<std::string, int64_t> dims;
  JobAttrs attrs;
  std::string gpu;           // GPU spec key the observations name ("" = not stated)
  double util = 0;           // sample-weighted mean of its observations, percent
  int64_t samples = 0;       // total samples
  int64_t observations = 0;  // observation records merged
};

// Whether `path` can be a service database, told from its type alone (stat,
// never an open: a FIFO would make the open wait for a writer): ok for a
// regular file, and for an absent one when `may_be_absent` (the service
// creates it). Otherwise an error naming the path and what it is instead:
// "PATH: is a FIFO, not a regular file" (a directory, a character device, a
// block device, a socket), "PATH: no such database file", "PATH: cannot stat: ...".
Status DatabaseFileStatus(const std::string& path, bool may_be_absent);

// Reads every observed job of the service database at `db_path` (read-only),
// one entry per (job, gpu) in job-id order. Errors name the file: a missing
// file or one that is not a regular file (DatabaseFileStatus), no
// observations table, a job spec that does not parse.
Result<std::vector<ObservedJob>> ReadObservedJobs(const std::string& db_path);

// How observed jobs become training rows (docs/predictor.md "Observed jobs"):
// each observed (job, GPU) is ONE row, exactly as each shipped measurement is
// one measured configuration; its label is the sample-weighted mean of its
// observations, so the number of samples sets how precise the label is, not
// how much the row weighs. A configuration observed in several jobs gets one
// row per job, so evidence accumulates with real repetitions.
//
// Appends one row per usable job to `data` (features from the job's graph,
// batch, AMP, dims, attributes and GPU; the dataset's GPU where the job names
// none). Its group (the unit of leave-one-workload-out) is the catalog
// workload whose only graph is the job's file (one pass per step), else
// "observed/<file name>". Jobs that cannot be used (graph gone, GPU unknown
// to the spec table...) are skipped, one line each in *skipped.
Status AppendObservedRows(const std::vector<ObservedJob>& jobs, const std::string& db_path,
                          const Catalog& catalog, Dataset* data, std::vector<std::string>* skipped);

// The learning curve of `gpucast evaluate --observations`: for each group
// with at least 2 observed rows, rows o_1..o_n in job order, and each k in
// 0..n-1: fit on every non-observed row of the other groups plus o_1..o_k,
// and measure the error on o_{k+1}..o_n. The group's own shipped rows are
// never trained on, so k = 0 is the never-seen-workload case.
struct CurvePoint {
  std::string group;
  int observed_in_training = 0;  // k
  int held_out = 0;              // n - k
  double mae = 0;                // mean |predicted - observed|, percentage points
  double mean_signed = 0;        // mean (predicted - observed), percentage points
};
// `observed[i]` tells whether row i of `data` is an observed job. Every model is made with `regressor`.
Result<std::vector<CurvePoint>> ObservationLearningCurve(const Dataset& data, const std::vector<bool>& observed,
                                                         const std::string& algo, const std::string& feature_set,
                                                         uint64_t seed, const RegressorOptions& regressor = {});

}  // namespace gpucast
