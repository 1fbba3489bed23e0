// Test doubles for the service's seams (tests and service_testd only).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "service/engine.h"
#include "service/scheduler.h"

namespace gpucast::service::testing {

// Marks a file the FakeEngine accepts as a model.
inline constexpr const char* kFakeModelMagic = "FAKE-ONNX";
// A fake model whose bytes hold this gets the loader's eval-mode warning.
inline constexpr const char* kFakeEvalMode = "EVAL-MODE";

// Reads each network's model from its descriptor like the real engine and
// predicts util = min(100, 10 * batch * total repeat) (interval +-5), so tests
// know the expected value. Rejects files that do not start with
// kFakeModelMagic. Caches by (path, size, batch).
class FakeEngine : public PredictionEngine {
 public:
  Result<Prediction> Predict(const JobSpec& spec, const std::vector<int>& model_fds, PredictInfo* info) override {
    const std::vector<ModelPart> parts = spec.Parts();
    if (parts.size() != model_fds.size()) return Status::Error(spec.model_name + ": networks and files differ");
    info->cache_hit = false;
    info->failure = AnalysisFailure::kNotAModel;
    bool all_hit = true;
    double passes = 0;
    std::vector<std::string> warnings;
    for (size_t i = 0; i < parts.size(); ++i) {
      std::string bytes;
      char buf[4096];
      for (off_t off = 0;;) {
        ssize_t n = ::pread(model_fds[i], buf, sizeof buf, off);
        if (n < 0) return Status::Error(parts[i].name + ": cannot read model file");
        if (n == 0) break;
        bytes.append(buf, static_cast<size_t>(n));
        off += n;
      }
      if (bytes.rfind(kFakeModelMagic, 0) != 0) return Status::Error(parts[i].name + ": not an ONNX model");
      std::string key = parts[i].path + "|" + std::to_string(bytes.size()) + "|" + std::to_string(spec.batch);
      {
        std::lock_guard<std::mutex> lock(mu_);
        all_hit = !seen_.insert(key).second && all_hit;
      }
      passes += parts[i].repeat;
      // A file that says so stands for an eval-mode export: the loader's warning, as the real engine passes it.
      if (bytes.find(kFakeEvalMode) != std::string::npos)
        warnings.push_back(parts[i].name + ": looks like an eval-mode export (fake)");
    }
    info->cache_hit = all_hit;
    info->failure = AnalysisFailure::kNone;
    double u = std::min(100.0, 10.0 * static_cast<double>(spec.batch) * passes);
    Prediction p = Prediction::Of(u, std::max(0.0, u - 5), std::min(100.0, u + 5));
    p.warnings = warnings;
    p.report = report;
    return p;
  }
  std::string Describe() const override { return "fake engine"; }
  // The `predict --json` report each prediction carries, as the real engine's does (null: none).
  std::shared_ptr<const nlohmann::json> report;

 private:
  std::mutex mu_;
  std::set<std::string> seen_;
};

// `n` GPUs, one job per GPU, first free GPUs in submission order.
class OneJobPerGpu : public Scheduler {
 public:
  explicit OneJobPerGpu(int n) : owner_(n, 0) {}
  std::string PolicyName() const override { return "one-per-gpu (test)"; }
  int TotalGpus() const override { return static_cast<int>(owner_.size()); }
  Status CanEverFit(const JobSpec& spec) const override {
    if (spec.gpus <= TotalGpus()) return Status::Ok();
    return Status::Error("field 'gpus': " + std::to_string(spec.gpus) + " requested, the cluster has " +
                         std::to_string(TotalGpus()));
  }
  Result<std::vector<Placement>> Plan(const std::vector<Job>& queued, double) override {
    std::vector<int64_t> owner = owner_;
    std::vector<Placement> out;
    for (const Job& j : queued) {
      std::vector<int> gpus;
      for (int g = 0; g < TotalGpus() && static_cast<int64_t>(gpus.size()) < j.spec.gpus; ++g) {
        if (owner[g] == 0) gpus.push_back(g);
      }
      if (static_cast<int64_t>(gpus.size()) < j.spec.gpus) break;  // FIFO: head of line waits
      for (int g : gpus) owner[g] = j.id;
      out.push_back({j.id, gpus});
    }
    return out;
  }
  Status Start(const Job& job) override {
    for (int g : job.placement) {
      if (g < 0 || g >= TotalGpus()) return Status::Error("GPU " + std::to_string(g) + " out of range");
      owner_[g] = job.id;
    }
    started_.push_back(job.id);
    return Status::Ok();
  }
  void Finish(int64_t id) override {
    for (int64_t& o : owner_) {
      if (o == id) o = 0;
    }
  }
  nlohmann::json ClusterJson() const override {
    nlohmann::json gpus = nlohmann::json::array();
    for (size_t g = 0; g < owner_.size(); ++g) {
      gpus.push_back({{"id", g}, {"jobs", owner_[g] ? nlohmann::json::array({owner_[g]}) : nlohmann::json::array()}});
    }
    return {{"gpus", gpus}};
  }
  const std::vector<int64_t>& started() const { return started_; }

 private:
  std::vector<int64_t> owner_;  // job id per GPU, 0 = free
  std::vector<int64_t> started_;
};

}  // namespace gpucast::service::testing
