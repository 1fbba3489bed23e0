// Shared helpers for the simulator tests: temp files and literal workloads.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "sim/workload.h"

namespace gpucast::sim::testing {

// A fresh temp directory for one test.
inline std::string TempDir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("gpucast_sim_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

inline std::string WriteText(const std::string& dir, const std::string& name, const std::string& text) {
  std::string p = dir + "/" + name;
  std::ofstream(p) << text;
  return p;
}

// A literal workload: util and predicted util in percent, memory MiB.
inline WorkloadProfile W(const std::string& model, double util, double pred, double mem = 2000) {
  WorkloadProfile w;
  w.model = model;
  w.dataset = "D";
  w.batch = 32;
  w.true_util = util;
  w.predicted_util = pred;
  w.gmem_mib = mem;
  w.speed = 1;
  return w;
}

}  // namespace gpucast::sim::testing
