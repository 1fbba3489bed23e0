// Kubernetes scheduler extender (POST /k8s/v1/filter, /k8s/v1/prioritize),
// the pure part: ExtenderArgs in, ExtenderFilterResult / HostPriorityList out,
// decided from the service's view of its GPUs (Scheduler::ClusterJson: what
// runs where, with predicted utilization and memory) and the co-location
// physics (sim/interference.h).
//
// Shapes: k8s.io/kube-scheduler/extender/v1 types.go (ExtenderArgs {Pod,
// Nodes, NodeNames}; ExtenderFilterResult {Nodes, NodeNames, FailedNodes,
// FailedAndUnresolvableNodes, Error}; HostPriority {Host, Score};
// MaxExtenderPriority = 10, which kube-scheduler multiplies by the extender's
// weight and by MaxNodeScore / MaxExtenderPriority = 10). The Go structs have
// no json tags, so kube-scheduler writes the field names as they are and
// decodes keys case-insensitively; so does this parser.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/interference.h"
#include "util/status.h"

namespace gpucast::service::k8s {

inline constexpr int64_t kMaxExtenderPriority = 10;

struct ExtenderArgs {
  nlohmann::json pod;                   // the pod being scheduled
  std::vector<std::string> node_names;  // candidate nodes, in the order given
  // Nodes (a v1 NodeList) was sent rather than NodeNames (nodeCacheCapable:
  // false): the answer carries the passing Node objects back.
  bool node_objects = false;
  std::vector<nlohmann::json> nodes;    // the Node objects, node_names[i]'s at i
};

// Parses ExtenderArgs. An error (answered 400) names the field:
// "ExtenderArgs: field 'NodeNames[2]': want a non-empty string".
Result<ExtenderArgs> ParseExtenderArgs(std::string_view body);

// What the webhook's gpucast.io/share annotation says the pod needs.
struct PodShare {
  bool sized = false;     // the annotation is there (else gpucast has no opinion on the pod)
  std::string gpu;        // GPU predicted for (canonical)
  int64_t gpus = 1;       // GPUs, whole when > 1
  double util = 0;        // predicted utilization per GPU, percent
  double mem_mib = 0;     // memory reserved per GPU, MiB (0: not known)
};
// Error: the annotation is there but malformed (names it).
Result<PodShare> ReadPodShare(const nlohmann::json& pod);

// One GPU of a Kubernetes node as the service sees it.
struct GpuLoad {
  int id = 0;                 // the service's GPU index
  std::string type;           // cluster GPU type
  double mem_mib = 0, mem_used_mib = 0;
  std::vector<double> utils;  // predicted utilization of each job on it, percent
  bool exclusive = false;     // held alone (slot policy)
};

// The service's GPUs by Kubernetes node name: the i-th name of `k8s_nodes`
// is the cluster's i-th node (in the order nodes first appear in `cluster`,
// Scheduler::ClusterJson). Error: more names than the cluster has nodes.
Result<std::map<std::string, std::vector<GpuLoad>>> NodesFromCluster(const nlohmann::json& cluster,
                                                                     const std::vector<std::string>& k8s_nodes);

struct NodeVerdict {
  bool fits = false;
  std::string reason;  // why not (FailedNodes), or where it goes
  int64_t score = 0;   // 0..kMaxExtenderPriority
  std::vector<int> gpus;  // the service GPUs it would take
};

// Can the pod go on a node with these GPUs, and how well. One GPU: a GPU of
// the pod's type, not held exclusively, whose jobs' predicted utilizations
// plus the pod's stay <= 100 and whose reserved memory plus the pod's fits;
// among those the one where the slowest job (the pod included) keeps the
// highest rate under `physics` (InterferenceModel::MinRate), and the score is
// that rate x 10, rounded down. Several GPUs: that many idle GPUs of the type,
// score 10. An unknown node (not in the service's cluster) does not fit.
NodeVerdict Evaluate(const PodShare& pod, const std::vector<GpuLoad>* node, const sim::InterferenceModel& physics);

// ExtenderFilterResult: the nodes that fit (NodeNames, or Nodes when the
// arguments carried Node objects; a subset of those offered, in their order)
// and FailedNodes {name: reason}. A pod gpucast did not size passes unchanged.
nlohmann::json FilterResult(const ExtenderArgs& args, const std::vector<NodeVerdict>& verdicts);
// HostPriorityList: [{"Host": name, "Score": 0..10}] for every node offered.
nlohmann::json PrioritizeResult(const ExtenderArgs& args, const std::vector<NodeVerdict>& verdicts);

}  // namespace gpucast::service::k8s
