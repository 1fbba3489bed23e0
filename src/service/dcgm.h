// DCGM exporter scraping (gpucast serve --dcgm-url): per-GPU utilization
// from the exporter's Prometheus text, attributed to the job that runs alone
// on that GPU (docs/operations.md).
//
// DCGM_FI_DEV_GPU_UTIL is NVML's utilization.gpu (the counter nvidia-smi
// shows and the training rows were measured with): the fraction of the
// sample period in which a kernel ran on the device. It cannot be split
// between processes, so on a GPU shared by several jobs nothing is
// attributed (counted as "shared"); the exporter has no per-process
// utilization to do better.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace gpucast::service {

struct DcgmSample {
  int gpu = 0;           // the exporter's gpu="N" label: device index on its node
  double util = 0;       // percent
  std::string hostname;  // Hostname label ("" if absent)
};

// The DCGM_FI_DEV_GPU_UTIL samples of an exporter page. Other metrics,
// comments and blank lines are skipped; a DCGM_FI_DEV_GPU_UTIL line without
// a gpu label, or with a value that is not a number in [0, 100], is an error
// naming the line ("line 7: ...").
Result<std::vector<DcgmSample>> ParseDcgmUtil(std::string_view text);

struct DcgmAttribution {
  int64_t job_id = 0;
  double util = 0;        // mean over the job's GPUs, percent
  int samples = 0;        // GPUs averaged
  std::string gpu_type;   // cluster GPU type ("" if the cluster does not say)
};

// Attributes one scrape of each exporter to jobs. `cluster` is the
// scheduler's GET /v1/cluster JSON ({"gpus": [{"node", "type", "jobs": [{"id"}...] or [id...]}]});
// exporter `e` (the e-th --dcgm-url) covers the e-th node in the order nodes
// first appear, its gpu="k" the k-th GPU of that node. A job gets a sample
// when every GPU it holds was sampled and it runs alone on each; `outcome`
// counts each GPU sample: "attributed", "idle", "shared", "unknown_gpu".
std::vector<DcgmAttribution> AttributeDcgm(const nlohmann::json& cluster,
                                           const std::vector<std::vector<DcgmSample>>& per_exporter,
                                           const std::function<void(const std::string& outcome)>& outcome);

// "http://HOST:PORT/PATH" -> ("http://HOST:PORT", "/PATH"); error for anything else.
Result<std::pair<std::string, std::string>> SplitHttpUrl(const std::string& url);

// A scrape reads at most this many bytes (status line, headers and body; a
// dcgm-exporter page of 8 GPUs is about 100 kB) ...
inline constexpr size_t kDcgmMaxPageBytes = 16u << 20;
// ... and takes at most this long in all (connect, request, every byte of the
// answer), however slowly the exporter drips it.
inline constexpr double kDcgmScrapeTimeoutS = 10;

// GET `path` from `base` ("http://HOST:PORT") over HTTP/1.0: the body of a
// 200 answer. Never waits past `timeout_s` in all, never holds more than
// `max_bytes`, and gives up within 0.1 s once `stopping()` says so. Errors
// say why (not HTTP 200, larger than max_bytes, not answered within
// timeout_s, cannot connect, stopped).
Result<std::string> HttpGetBounded(const std::string& base, const std::string& path, size_t max_bytes,
                                   double timeout_s, const std::function<bool()>& stopping);

// The scraper's log line for a failed scrape of `target`: control bytes of the
// page (an ESC in a label) and of the target escaped, at most 1 kB.
std::string DcgmScrapeLogLine(const std::string& target, const std::string& why);

// Scrapes each URL every `interval_s` on its own thread and hands the pages'
// samples to `on_scrape` (an exporter that failed has an empty vector and
// ok[e] false). Stops (and joins) on destruction.
class DcgmScraper {
 public:
  using Callback = std::function<void(const std::vector<std::vector<DcgmSample>>& per_exporter,
                                      const std::vector<bool>& ok)>;
  // Each scrape: HttpGetBounded with kDcgmMaxPageBytes and the smaller of
  // kDcgmScrapeTimeoutS and `interval_s`.
  static Result<std::unique_ptr<DcgmScraper>> Start(const std::vector<std::string>& urls, double interval_s,
                                                    Callback on_scrape);
  // Stops within about 0.1 s, also in the middle of a scrape.
  ~DcgmScraper();

 private:
  DcgmScraper() = default;
  void Loop();

  std::vector<std::pair<std::string, std::string>> targets_;
  double interval_s_ = 15;
  Callback on_scrape_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  std::atomic<bool> stopping_{false};  // stop_, read by a scrape in progress
  std::thread thread_;
};

}  // namespace gpucast::service
