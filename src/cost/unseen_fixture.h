// The architectures of models/unseen/ (tools/unseen_models.py) for tests: their directory, the
// reference counts torch made of them (reference.json), and a graph loaded at a multiple of its
// reference batch. Test-only; header-only so that the cost and features tests share it.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/onnx_loader.h"
#include "util/paths.h"

namespace gpucast::testing {

inline std::string UnseenDir() { return HomeDir() + "/models/unseen/"; }

// models/unseen/reference.json, or a discarded value (and a failure) when it cannot be read.
inline nlohmann::json UnseenReference() {
  std::ifstream in(UnseenDir() + "reference.json");
  EXPECT_TRUE(in.good()) << UnseenDir() << "reference.json: run tools/unseen_models.py";
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// Loads `file` of models/unseen/ at `scale` times its reference entry m's batch (and times the
// dims that grow with it, m["batch_dims"]: the full-graph GNN's edges grow with its nodes).
inline Result<Graph> LoadUnseen(const std::string& file, const nlohmann::json& m, int64_t scale) {
  LoadOptions opts;
  opts.batch = m["batch"].get<int64_t>() * scale;
  for (const auto& [k, v] : m["dims"].items()) opts.dims[k] = v.get<int64_t>();
  for (const auto& k : m["batch_dims"]) opts.dims[k.get<std::string>()] *= scale;
  return LoadOnnxGraph(UnseenDir() + file, opts);
}

}  // namespace gpucast::testing
