// The extender's view of the pods that run: gpucast serve --k8s-watch-pods
// lists and watches the API server's pods that have a node
// (GET /api/v1/pods?fieldSelector=spec.nodeName!=, then ?watch=1 from the
// list's resourceVersion; a 410 Gone or a dropped stream relists), and the
// extender adds them to what runs on gpucast's nodes (NodesFromCluster's view
// of the jobs submitted through /v1/jobs): without it a cluster whose GPU jobs
// come only from Kubernetes looks idle to the extender (issue 31, item 12).
//
// A pod counts by what gpucast decided for it, never by an annotation alone:
// its gpucast.io/share when the share's signature verifies (k8s_share.h),
// else, if it asks for nvidia.com/gpu, that many whole GPUs.
// A pod on a MIG slice (its verified share says mig=) is left out: the slice
// is an isolated partition, and gpucast's view is of whole GPUs.
// gpucast does not know which GPU of a node the device plugin gave a pod: a
// shared pod is assumed on the least-loaded GPU of its type that has its
// memory, a whole-GPU pod on idle GPUs first (docs/kubernetes.md says so).
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "service/k8s_extender.h"
#include "util/status.h"

namespace gpucast::service::k8s {

// A pod bound to a node, as the extender counts it.
struct RunningPod {
  std::string key;   // namespace/name
  std::string node;  // spec.nodeName
  PodShare share;    // sized: gpucast's verified share; else not sized by gpucast
  int64_t gpus = 0;  // nvidia.com/gpu its containers ask for (limits, else requests)
  bool verified = false;  // the pod carries a share and its signature verified
};

// The pod of a list item or watch event object, if it holds a node and is
// not finished (phase Succeeded or Failed); `share_key` verifies its share.
std::optional<RunningPod> PodFromJson(const nlohmann::json& pod, const std::string& share_key);

// Adds `pods` (by node name) to `nodes` (NodesFromCluster's view). Pods on
// nodes gpucast does not know are left out.
void AddPods(std::map<std::string, std::vector<GpuLoad>>* nodes, const std::vector<RunningPod>& pods);

// Where the API server is and how gpucast proves who it is.
struct ApiServer {
  std::string url;         // https://HOST:PORT or http://HOST:PORT (a test's stub)
  std::string token_file;  // bearer token, read again on every connection ("" = none)
  std::string ca_file;     // PEM CA the server's certificate must chain to (https)
  double retry_s = 2;      // wait after a failed list or watch, seconds
  int watch_timeout_s = 240;  // timeoutSeconds of one watch request
};

// In a pod (KUBERNETES_SERVICE_HOST/PORT and the mounted service account);
// error when not in a pod.
Result<ApiServer> InClusterApiServer();

// The running pods, kept by the watcher, read by the extender. Thread-safe.
class PodView {
 public:
  PodView() = default;
  ~PodView();  // stops the watcher
  PodView(const PodView&) = delete;
  PodView& operator=(const PodView&) = delete;

  // Starts the list-and-watch thread. Error: a URL that is not http(s)://HOST:PORT.
  Status StartWatching(const ApiServer& api, const std::string& share_key);
  // Every running pod now; nullopt until the first list completed (the
  // extender then answers from the job view alone, and says so in its log).
  std::optional<std::vector<RunningPod>> Pods() const;
  // Replaces the view with a list's pods; applies one watch event
  // ("ADDED", "MODIFIED", "DELETED" with the event's object).
  void Replace(std::vector<RunningPod> pods);
  void Apply(const std::string& type, const nlohmann::json& object, const std::string& share_key);
  // Counts for the log and /healthz: lists done, events applied, failures.
  struct Stats {
    int64_t lists = 0, events = 0, failures = 0;
    std::string last_error;
  };
  Stats stats() const;

 private:
  void Run(ApiServer api, std::string share_key);
  // One list (paginated) and one watch until it ends; error says why.
  Status ListAndWatch(const ApiServer& api, const std::string& share_key);

  mutable std::mutex mu_;
  bool synced_ = false;                     // GUARDED_BY(mu_)
  std::map<std::string, RunningPod> pods_;  // GUARDED_BY(mu_), by key
  Stats stats_;                             // GUARDED_BY(mu_)
  std::atomic<bool> stop_{false};
  std::atomic<int> fd_{-1};  // the open connection, shut down to stop
  std::condition_variable cv_;
  std::thread thread_;
};

// A minimal HTTP/1.1 GET over TCP or TLS, for the API server: the status,
// then the body through `on_data` as it arrives (chunked or not), until the
// server ends it. `fd_out` holds the socket while open (so another thread
// can shut it down). Errors name the URL and the reason.
Status HttpGet(const ApiServer& api, const std::string& path_and_query, int* status,
               const std::function<bool(std::string_view)>& on_data, std::atomic<int>* fd_out,
               double connect_timeout_s = 10, double read_timeout_s = 300);

}  // namespace gpucast::service::k8s
