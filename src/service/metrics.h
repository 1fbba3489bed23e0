// Service metrics in the Prometheus text exposition format (version 0.0.4).
// All names start with gpucast_. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace gpucast::service {

class Metrics {
 public:
  // Upper bounds (seconds) of the latency histogram buckets; +Inf is implied.
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,    5};

  // One finished HTTP request. `route` is the route pattern ("GET /v1/jobs/{id}"),
  // never the raw path, so label cardinality stays bounded.
  void ObserveRequest(const std::string& route, int status, double seconds);
  // One prediction: result "ok" or "error"; cache "hit" or "miss" of the graph cache.
  void ObservePrediction(bool ok, bool cache_hit);
  // Decisions applied by the scheduling loop, by kind ("place", "finish", "cancel").
  void AddDecisions(const std::string& kind, int64_t n);
  void SetJobCounts(int64_t queued, int64_t running);

  std::string Render() const;

 private:
  struct Histogram {
    std::array<int64_t, kBuckets.size()> counts{};  // non-cumulative
    int64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;  // (route, status)
  std::map<std::string, Histogram> latency_;                 // by route
  std::map<std::pair<std::string, std::string>, int64_t> predictions_;  // (result, cache)
  std::map<std::string, int64_t> decisions_;
  int64_t queued_ = 0, running_ = 0;
};

}  // namespace gpucast::service
