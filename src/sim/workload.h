// Measured workload configurations (rows of lucid/single_data.csv) and the
// predicted utilization the schedulers see for each.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "util/status.h"

namespace gpucast::sim {

// One measured (model, dataset, batch size, AMP) configuration trained alone on
// one RTX 3090. Utilizations are percent (0-100), memory MiB.
struct WorkloadProfile {
  std::string model, dataset;
  int batch = 0;
  int amp = 0;
  double true_util = 0;      // measured gpu_util, percent
  double gmem_mib = 0;       // measured mean used memory, MiB
  double speed = 0;          // samples/s alone
  double predicted_util = NAN;  // out-of-sample prediction, percent; NaN = none

  // "ResNet50/ImageNet/b64/amp1": the workload column of jobs.csv.
  std::string Name() const;
  bool HasPrediction() const { return !std::isnan(predicted_util); }
};

// Loads single_data.csv (header model,dataset,batchsize,amp,speed,gpu_util,
// gmem_util,gmem,...). Errors name the file and line.
Result<std::vector<WorkloadProfile>> LoadWorkloads(const std::string& path);

// Reads a predictions CSV (header with columns model,dataset,batchsize,amp,
// predicted_util; other columns ignored) into `workloads`. Every workload must
// get a prediction; a prediction for an unknown workload is an error too.
Status LoadPredictionsCsv(const std::string& path, std::vector<WorkloadProfile>* workloads);

// Index of the workload with this key, or -1.
int FindWorkload(const std::vector<WorkloadProfile>& w, const std::string& model,
                 const std::string& dataset, int batch, int amp);

}  // namespace gpucast::sim
