// `--observations DB` of `gpucast train` and `gpucast evaluate`: the observed
// jobs of a service database as training rows, and their learning curve
// (predict/observations.h; docs/predictor.md "Observed jobs").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/regressor.h"
#include "util/status.h"

namespace gpucast::cli {

// Appends the observed jobs of `db` to `data`; prints each skipped job to
// stderr as "gpucast <command>: skipped ...". Returns the rows added.
Result<size_t> AddObservedJobs(const std::string& command, const std::string& db, const Catalog& catalog,
                               Dataset* data);

// `gpucast evaluate --observations DB`: prints the learning curve (error on
// each observed workload against the number of its observed jobs trained
// on) as a table, or JSON. Every model is made with `regressor`. Returns the exit code.
int RunLearningCurve(const Dataset& shipped, const std::string& db, const Catalog& catalog,
                     const std::vector<std::string>& algos, const std::string& feature_set, uint64_t seed,
                     bool json, const RegressorOptions& regressor = {});

}  // namespace gpucast::cli
