// The predictor file: one JSON object.
//
// {"format": "gpucast-predictor", "format_version": 5,
//  "feature_schema": {"name": ..., "version": N, "names": [...]},
//  "feature_set": "all", "features_used": [names...],
//  "training": {"csv": path, "digest": "fnv1a64:<16 hex>" (FNV-1a 64 of the CSV bytes),
//               "rows": 52, "gpu": "RTX3090", "seed": 1},
//  "target": "log1p_gpu_util_percent",
//  "targets": ["nvidia-smi utilization.gpu", ...] (counters of the training rows),
//  "algo": "forest", "params": {...}, "regressor": {...state...},
//  "calibration": {"method": "normalized-shortest" | "central", "pass": ...,
//                  "scores": [sorted calibration scores; empty = uncalibrated]},
//  "workload_offsets": [{"params", "facts": {name: value}, "offset", "workload", "rows"}],
//  "accuracy": {the model's own leave-one-workload-out figures: LowoAccuracy},
//  "memory": MemoryModel::Save() (memory_model.h), or null when the training rows had no memory column,
//  "lowo_predictions" (optional): {"method", "rows": [{"model", "dataset", "batch", "amp", "gpu",
//      "mig_profile", "predicted_util" (%), "pred_mem_mib", "pred_mem_high_mib" (MiB or null)}]}:
//      the calibration pass's prediction of each training row, row order (LowoRowPrediction)}
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "features/features.h"
#include "predict/predictor.h"
#include "util/status.h"

namespace gpucast {

inline constexpr const char* kModelFormat = "gpucast-predictor";
inline constexpr int kModelFormatVersion = 5;  // 2: forest node table; 3: calibration residuals, targets;
                                               // 4: memory; 5: offsets keyed by graph and job facts, lowo accuracy

Result<nlohmann::json> ModelFileJson(const Predictor& p);
// `path` names the file in errors. The stored schema must equal `schema`:
// "m.json: feature schema gpucast-features v1 (12 features) does not match this build's
//  gpucast-features v2 (14 features); retrain with 'gpucast train'".
Result<Predictor> ParseModelFile(const std::string& text, const std::string& path,
                                 const FeatureSchema& schema);

}  // namespace gpucast
