#include "service/metrics.h"

#include <cstdio>

namespace gpucast::service {

namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

}  // namespace

void Metrics::ObserveRequest(const std::string& route, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{route, status}];
  Histogram& h = latency_[route];
  size_t i = 0;
  while (i < kBuckets.size() && seconds > kBuckets[i]) ++i;
  if (i < kBuckets.size()) ++h.counts[i];
  ++h.count;
  h.sum += seconds;
}

void Metrics::ObservePrediction(bool ok, bool cache_hit) {
  std::lock_guard<std::mutex> lock(mu_);
  ++predictions_[{ok ? "ok" : "error", cache_hit ? "hit" : "miss"}];
}

void Metrics::AddDecisions(const std::string& kind, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  decisions_[kind] += n;
}

void Metrics::SetJobCounts(int64_t queued, int64_t running) {
  std::lock_guard<std::mutex> lock(mu_);
  queued_ = queued;
  running_ = running;
}

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  out += "# HELP gpucast_http_requests_total HTTP requests by route and status code.\n";
  out += "# TYPE gpucast_http_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    out += "gpucast_http_requests_total{route=\"" + key.first + "\",code=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP gpucast_http_request_duration_seconds Time spent in the route handler.\n";
  out += "# TYPE gpucast_http_request_duration_seconds histogram\n";
  for (const auto& [route, h] : latency_) {
    int64_t cumulative = 0;
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      cumulative += h.counts[i];
      out += "gpucast_http_request_duration_seconds_bucket{route=\"" + route + "\",le=\"" +
             Num(kBuckets[i]) + "\"} " + std::to_string(cumulative) + "\n";
    }
    out += "gpucast_http_request_duration_seconds_bucket{route=\"" + route + "\",le=\"+Inf\"} " +
           std::to_string(h.count) + "\n";
    out += "gpucast_http_request_duration_seconds_sum{route=\"" + route + "\"} " + Num(h.sum) + "\n";
    out += "gpucast_http_request_duration_seconds_count{route=\"" + route + "\"} " +
           std::to_string(h.count) + "\n";
  }
  out += "# HELP gpucast_predictions_total Utilization predictions by result and graph-cache outcome.\n";
  out += "# TYPE gpucast_predictions_total counter\n";
  for (const auto& [key, n] : predictions_) {
    out += "gpucast_predictions_total{result=\"" + key.first + "\",cache=\"" + key.second + "\"} " +
           std::to_string(n) + "\n";
  }
  out += "# HELP gpucast_placement_decisions_total Decisions applied by the scheduling loop.\n";
  out += "# TYPE gpucast_placement_decisions_total counter\n";
  for (const auto& [kind, n] : decisions_) {
    out += "gpucast_placement_decisions_total{kind=\"" + kind + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP gpucast_queue_length Jobs waiting to be placed.\n";
  out += "# TYPE gpucast_queue_length gauge\n";
  out += "gpucast_queue_length " + std::to_string(queued_) + "\n";
  out += "# HELP gpucast_running_jobs Jobs placed on GPUs.\n";
  out += "# TYPE gpucast_running_jobs gauge\n";
  out += "gpucast_running_jobs " + std::to_string(running_) + "\n";
  return out;
}

}  // namespace gpucast::service
