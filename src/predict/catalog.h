// The workload catalog (models/catalog.json): which ONNX graph(s) and which
// symbolic dimensions and job attributes belong to each measured workload.
//
// {"version":1,"gpu":"RTX3090","workloads":[{"model":"BERT","dataset":"SQuAD",
//   "graphs":[{"file":"bert_squad.onnx","repeat":1}],"dims":{"seq":384},
//   "attrs":{"loader_workers":0,"data_on_gpu":0,"rl_env":0},"notes":"..."}]}
// Graph files are relative to the catalog's directory. A graph entry may also
// carry "forward_only": N (forward passes without backward per step).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "features/features.h"
#include "util/status.h"

namespace gpucast {

struct CatalogGraph {
  std::string file;  // absolute or relative to the working directory (resolved)
  // Passes of this graph per training step, averaged over steps (so possibly
  // fractional, e.g. TD3's delayed actor update 0.5): `repeat` forward+backward
  // passes (> 0) and `forward_only` forward passes without backward (>= 0).
  double repeat = 1;
  double forward_only = 0;
};

struct CatalogWorkload {
  std::string model;
  std::string dataset;
  std::vector<CatalogGraph> graphs;  // non-empty
  std::map<std::string, int64_t> dims;
  JobAttrs attrs;
  // Whether the measurement CSV's `speed` of this workload is training samples
  // per second of the steps the graphs describe (then step time = batch /
  // speed). False for jobs whose "sample" is something else (PPO, TD3: a
  // rollout/episode, docs/workloads.md); their step time is then unknown.
  bool speed_is_samples_per_s = true;
  std::string notes;
  std::string Key() const { return model + "/" + dataset; }
};

struct Catalog {
  std::string path;
  int version = 0;
  std::string gpu;  // GPU the measurements were taken on (spec table key)
  std::vector<CatalogWorkload> workloads;

  // nullptr when absent.
  const CatalogWorkload* Find(const std::string& model, const std::string& dataset) const;
};

inline constexpr int kCatalogVersion = 1;

// Reads and validates a catalog. Errors: "<path>: workloads[3].graphs[0].repeat: want an integer >= 1".
Result<Catalog> LoadCatalog(const std::string& path);
// Same from text; graph files are resolved against `base_dir`.
Result<Catalog> ParseCatalog(const std::string& text, const std::string& path,
                             const std::string& base_dir);

}  // namespace gpucast
