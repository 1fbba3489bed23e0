// Tests only: the physics predictor trained on ../shared/data's Lucid rows
// (the RTX 3090, 52 rows, 11 workloads), and on those and MIGProfiler's A100
// rows (train's default data: two measured GPU types), each trained once per
// test process.
// Tests that check predictions on real graphs share it instead of each
// training their own copy.
#pragma once

#include <gtest/gtest.h>

#include "predict/catalog.h"
#include "predict/dataset.h"
#include "predict/predictor.h"
#include "util/paths.h"

namespace gpucast::test {

inline const Predictor& PhysicsOnLucid() {
  static const Predictor p = [] {
    auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
    EXPECT_TRUE(cat.ok()) << cat.message();
    auto data = BuildDataset(DataDir() + "/lucid/single_data.csv", *cat);
    EXPECT_TRUE(data.ok()) << data.message();
    auto trained = Predictor::Train(*data, "physics", 1);
    EXPECT_TRUE(trained.ok()) << trained.message();
    return *trained;
  }();
  return p;
}

inline const Predictor& PhysicsOnLucidAndMig() {
  static const Predictor p = [] {
    auto cat = LoadCatalog(HomeDir() + "/models/catalog.json");
    EXPECT_TRUE(cat.ok()) << cat.message();
    auto data =
        BuildDataset({DataDir() + "/lucid/single_data.csv", DataDir() + "/migprofiler-a100/bert_train.csv"}, *cat);
    EXPECT_TRUE(data.ok()) << data.message();
    auto trained = Predictor::Train(*data, "physics", 1);
    EXPECT_TRUE(trained.ok()) << trained.message();
    return *trained;
  }();
  return p;
}

}  // namespace gpucast::test
