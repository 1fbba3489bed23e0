#include "service/engine.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <tuple>

#include "cost/cost.h"
#include "cost/job_cost.h"
#include "graph/onnx_loader.h"
#include "predict/predictor.h"

namespace gpucast::service {

namespace {

// What identifies an analysed graph: the file's identity (device, inode,
// mtime, size) and the analysis inputs.
using CacheKey = std::tuple<uint64_t /*dev*/, uint64_t /*ino*/, int64_t /*mtime ns*/, int64_t /*size*/,
                            int64_t /*batch*/, bool /*amp*/, std::map<std::string, int64_t> /*dims*/>;

// LRU cache of a job graph's cost reports (one per graph). Thread-safe.
class GraphCache {
 public:
  explicit GraphCache(size_t capacity) : capacity_(capacity) {}

  std::shared_ptr<const std::vector<CostReport>> Find(const CacheKey& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second.second);
    return it->second.first;
  }

  void Put(const CacheKey& key, std::shared_ptr<const std::vector<CostReport>> report) {
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.count(key)) return;
    lru_.push_front(key);
    map_[key] = {std::move(report), lru_.begin()};
    while (map_.size() > capacity_) {
      map_.erase(lru_.back());
      lru_.pop_back();
    }
  }

 private:
  std::mutex mu_;
  size_t capacity_;
  std::list<CacheKey> lru_;  // most recent first
  std::map<CacheKey, std::pair<std::shared_ptr<const std::vector<CostReport>>, std::list<CacheKey>::iterator>> map_;
};

class PredictorEngine : public PredictionEngine {
 public:
  PredictorEngine(Predictor predictor, std::string file, size_t cache_entries)
      : predictor_(std::move(predictor)), file_(std::move(file)), cache_(cache_entries) {}

  Result<Prediction> Predict(const JobSpec& spec, int model_fd, bool* cache_hit) override {
    *cache_hit = false;
    struct stat sb;
    if (fstat(model_fd, &sb) != 0) {
      return Status::Error(spec.model + ": cannot read model file: " + std::strerror(errno));
    }
    if (!S_ISREG(sb.st_mode)) return Status::Error(spec.model + ": not a regular file");
    CacheKey key{static_cast<uint64_t>(sb.st_dev),
                 static_cast<uint64_t>(sb.st_ino),
                 int64_t{sb.st_mtim.tv_sec} * 1000000000 + sb.st_mtim.tv_nsec,
                 static_cast<int64_t>(sb.st_size),
                 spec.batch,
                 spec.amp,
                 spec.dims};
    std::shared_ptr<const std::vector<CostReport>> report = cache_.Find(key);
    if (report) {
      *cache_hit = true;
    } else {
      LoadOptions lo;
      lo.batch = spec.batch;
      lo.dims = spec.dims;
      ASSIGN_OR_RETURN(Graph graph, LoadOnnxGraphFromFd(model_fd, spec.model, lo));
      CostOptions co;
      co.amp = spec.amp;
      // Refuses a graph with nodes that cannot be costed (as gpucast predict does).
      ASSIGN_OR_RETURN(CostReport cost, CostForPrediction(graph, co));
      report = std::make_shared<const std::vector<CostReport>>(1, std::move(cost));
      cache_.Put(key, report);
    }
    JobConfig job;
    job.batch = spec.batch;
    job.amp = spec.amp;
    job.attrs = spec.TypedAttrs();
    if (!predictor_.info().gpu.empty()) job.gpu = predictor_.info().gpu;
    Result<PredictResult> r = predictor_.Predict(*report, job);  // no copy of the report
    if (!r.ok()) return r.status().Prefixed(spec.model);
    return Prediction{r->prediction.util, r->prediction.low, r->prediction.high};
  }

  std::string Describe() const override {
    // No file path: /healthz shows this to anyone.
    return predictor_.model().algo() + ", " + std::to_string(predictor_.info().training_rows) +
           " training rows, " + predictor_.info().gpu;
  }

 private:
  const Predictor predictor_;
  const std::string file_;
  GraphCache cache_;
};

}  // namespace

Result<std::unique_ptr<PredictionEngine>> NewPredictorEngine(const std::string& predictor_file,
                                                             size_t cache_entries) {
  ASSIGN_OR_RETURN(Predictor p, Predictor::Load(predictor_file));
  return std::unique_ptr<PredictionEngine>(
      std::make_unique<PredictorEngine>(std::move(p), predictor_file, cache_entries));
}

}  // namespace gpucast::service
