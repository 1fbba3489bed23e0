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

// LRU cache of analysed graphs (one pass's cost report each). Thread-safe.
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

  Result<Prediction> Predict(const JobSpec& spec, const std::vector<int>& model_fds, bool* cache_hit) override {
    *cache_hit = false;  // until every graph was found
    bool all_hit = true;
    const std::vector<ModelPart> parts = spec.Parts();
    if (parts.size() != model_fds.size()) {
      return Status::Error(spec.model + ": " + std::to_string(parts.size()) + " networks but " +
                           std::to_string(model_fds.size()) + " open files");
    }
    // One report per network: a pass as analysed, or its share of a step
    // when it runs more or less than once (as `gpucast predict --model`).
    std::vector<CostReport> reports;
    std::shared_ptr<const std::vector<CostReport>> single;  // a plain job: the cached pass, not a copy
    for (size_t i = 0; i < parts.size(); ++i) {
      bool hit = false;
      ASSIGN_OR_RETURN(std::shared_ptr<const std::vector<CostReport>> pass, Pass(spec, parts[i].path, model_fds[i], &hit));
      all_hit = all_hit && hit;
      if (parts.size() == 1 && parts[i].repeat == 1) {
        single = std::move(pass);
      } else if (parts[i].repeat == 1) {
        reports.push_back(pass->front());
      } else {
        Result<CostReport> step = StepReport(pass->front(), parts[i].repeat, 0);
        if (!step.ok()) return step.status().Prefixed(parts[i].path);
        reports.push_back(std::move(step).value());
      }
    }
    *cache_hit = all_hit;
    JobConfig job;
    job.batch = spec.batch;
    job.amp = spec.amp;
    job.attrs = spec.TypedAttrs();
    if (!predictor_.info().gpu.empty()) job.gpu = predictor_.info().gpu;
    Result<PredictResult> r = predictor_.Predict(single ? *single : reports, job);
    if (!r.ok()) return r.status().Prefixed(spec.model);
    return Prediction{r->prediction.util, r->prediction.low, r->prediction.high};
  }

  std::string Describe() const override {
    // No file path: /healthz shows this to anyone.
    return predictor_.model().algo() + ", " + std::to_string(predictor_.info().training_rows) +
           " training rows, " + predictor_.info().gpu;
  }

 private:
  // The analysed pass of one network from its open file, through the cache.
  Result<std::shared_ptr<const std::vector<CostReport>>> Pass(const JobSpec& spec, const std::string& path, int fd, bool* hit) {
    *hit = false;
    struct stat sb;
    if (fstat(fd, &sb) != 0) return Status::Error(path + ": cannot read model file: " + std::strerror(errno));
    if (!S_ISREG(sb.st_mode)) return Status::Error(path + ": not a regular file");
    CacheKey key{static_cast<uint64_t>(sb.st_dev),
                 static_cast<uint64_t>(sb.st_ino),
                 int64_t{sb.st_mtim.tv_sec} * 1000000000 + sb.st_mtim.tv_nsec,
                 static_cast<int64_t>(sb.st_size),
                 spec.batch,
                 spec.amp,
                 spec.dims};
    if (std::shared_ptr<const std::vector<CostReport>> found = cache_.Find(key)) {
      *hit = true;
      return found;
    }
    LoadOptions lo;
    lo.batch = spec.batch;
    lo.dims = spec.dims;
    ASSIGN_OR_RETURN(Graph graph, LoadOnnxGraphFromFd(fd, path, lo));
    CostOptions co;
    co.amp = spec.amp;
    // Refuses a graph with nodes that cannot be costed (as gpucast predict does).
    ASSIGN_OR_RETURN(CostReport cost, CostForPrediction(graph, co));
    auto report = std::make_shared<const std::vector<CostReport>>(1, std::move(cost));
    cache_.Put(key, report);
    return report;
  }

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
