// Tests only: the physics predictor trained on ../shared/data's Lucid rows
// (the RTX 3090, 52 rows, 11 workloads), and on those and MIGProfiler's A100
// rows (train's default data: two measured GPU types), each trained once per
// test process.
// Tests that check predictions on real graphs share it instead of each
// training their own copy.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/predictor.h"
#include "util/paths.h"

namespace gpucast::test {

// The physics predictor trained on these CSVs (paths under DataDir()), seed 1.
inline Predictor TrainPhysicsOn(const std::vector<std::string>& csvs) {
  auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
  EXPECT_TRUE(cat.ok()) << cat.message();
  std::vector<std::string> paths;
  for (const std::string& c : csvs) paths.push_back(DataDir() + "/" + c);
  auto data = BuildDataset(paths, *cat);
  EXPECT_TRUE(data.ok()) << data.message();
  auto trained = Predictor::Train(*data, "physics", 1);
  EXPECT_TRUE(trained.ok()) << trained.message();
  return *trained;
}

inline const Predictor& PhysicsOnLucid() {
  static const Predictor p = TrainPhysicsOn({"lucid/single_data.csv"});
  return p;
}

inline const Predictor& PhysicsOnLucidAndMig() {
  static const Predictor p = TrainPhysicsOn({"lucid/single_data.csv", "migprofiler-a100/bert_train.csv"});
  return p;
}

}  // namespace gpucast::test
