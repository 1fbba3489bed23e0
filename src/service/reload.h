// Hot reload of the predictor file (SIGHUP, POST /v1/admin/reload).
//
// ReloadingEngine holds the current engine in a shared_ptr: Predict takes a
// reference under a mutex and runs without it, so a request in flight
// finishes on the engine it started with; Reload loads and validates the new
// file completely before the swap, and a file that does not load leaves the
// old engine serving. No request fails or waits on a file read.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "service/engine.h"

namespace gpucast::service {

class ReloadingEngine : public PredictionEngine {
 public:
  // `load` makes an engine from the file (NewPredictorEngine in production).
  using Loader = std::function<Result<std::unique_ptr<PredictionEngine>>(const std::string& file)>;
  static Result<std::unique_ptr<ReloadingEngine>> Create(const std::string& file, Loader load);

  Result<Prediction> Predict(const JobSpec& spec, const std::vector<int>& model_fds, PredictInfo* info) override;
  std::string Describe() const override;
  // Loads the file again; error (the old predictor stays) names the file and why.
  Status Reload() override;

 private:
  ReloadingEngine(std::string file, Loader load, std::shared_ptr<PredictionEngine> first)
      : file_(std::move(file)), load_(std::move(load)), current_(std::move(first)) {}
  std::shared_ptr<PredictionEngine> Current() const;

  const std::string file_;
  const Loader load_;
  std::mutex reload_mu_;  // one reload at a time
  mutable std::mutex mu_;
  std::shared_ptr<PredictionEngine> current_;  // GUARDED_BY(mu_)
};

// The production engine: NewPredictorEngine(file, analyzer), reloadable; every
// engine it loads shares `analyzer`, so a reload keeps the analysed graphs.
Result<std::unique_ptr<PredictionEngine>> NewReloadingPredictorEngine(const std::string& predictor_file,
                                                                      std::shared_ptr<GraphAnalyzer> analyzer);

// Blocks SIGHUP in the calling thread and those it starts afterwards (call
// beside BlockStopSignals, first thing in main), so that only
// ReloadOnSignal's thread receives it.
void BlockReloadSignal();

// While it lives, a thread waits for SIGHUP and calls `on_hup` for each.
// The destructor waits at most `stop_wait_s` for a reload under way: a
// reload stuck on a file (a hung mount) cannot keep the process from
// stopping; its thread is then left behind, detached.
// REQUIRES: BlockReloadSignal() ran in the threads that existed before.
class ReloadOnSignal {
 public:
  explicit ReloadOnSignal(std::function<void()> on_hup, double stop_wait_s = 2);
  ~ReloadOnSignal();
  ReloadOnSignal(const ReloadOnSignal&) = delete;
  ReloadOnSignal& operator=(const ReloadOnSignal&) = delete;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the thread, which may outlive this object
  double stop_wait_s_;
  std::thread thread_;
};

}  // namespace gpucast::service
