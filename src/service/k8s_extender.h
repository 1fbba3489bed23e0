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

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/interference.h"
#include "util/status.h"

namespace gpucast::service::k8s {

inline constexpr int64_t kMaxExtenderPriority = 10;

// The parts of ExtenderArgs gpucast reads, extracted while the body is
// parsed without building a document of it (a hostile 1 MB body must cost
// about its own size, not tens of MB: issue 31, "extender amplification").
struct ExtenderArgs {
  // The pod being scheduled, only what the extender reads: metadata {name,
  // namespace, annotations (the gpucast.io/* and gpu-fraction* keys)} and
  // spec.containers[] {name, resources {limits, requests} (nvidia.com/* keys)}.
  nlohmann::json pod;
  // Candidate nodes, in the order given: names concatenated in `names`,
  // node i at spans[i] (offset, length).
  std::string names;
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  // Nodes (a v1 NodeList) was sent rather than NodeNames (nodeCacheCapable:
  // false): the answer carries the passing Node objects back, as sent.
  bool node_objects = false;
  std::vector<std::string_view> node_texts;  // node i's object: a view into the parsed body

  size_t size() const { return spans.size(); }
  std::string_view name(size_t i) const { return std::string_view(names).substr(spans[i].first, spans[i].second); }
};

// Parses ExtenderArgs. An error (answered 400) names the field:
// "ExtenderArgs: field 'NodeNames[2]': want a non-empty string". `body` must
// outlive the result (node_texts point into it: not a temporary string).
Result<ExtenderArgs> ParseExtenderArgs(std::string_view body);

// What the webhook's gpucast.io/share annotation says the pod needs.
struct PodShare {
  bool sized = false;     // the annotation is there (else gpucast has no opinion on the pod)
  std::string gpu;        // GPU predicted for (canonical)
  int64_t gpus = 1;       // GPUs, whole when > 1
  double util = 0;        // predicted utilization per GPU, percent
  double mem_mib = 0;     // memory reserved per GPU, MiB (0: not known)
  // A MIG slice ("1g.10gb"; "" = whole GPUs or a share of one): the pod asks
  // for nvidia.com/mig-<profile>; the extender passes the nodes of its GPU
  // type and the running pods' view leaves it out (a slice is isolated).
  std::string mig;
  // The pod's share on other GPU types (a mixed cluster's pod that named no
  // GPU was sized for each; the annotation's ';'-separated entries after the first).
  std::vector<PodShare> alternatives;
};
// Error: the annotation is there but malformed (names it).
Result<PodShare> ReadPodShare(const nlohmann::json& pod);

struct GpuLoad;
// The pod's share on a node of these GPUs: the entry for a GPU type the node
// has (the first such), else the first entry; without alternatives, `pod`.
PodShare ForNode(const PodShare& pod, const std::vector<GpuLoad>& node);

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
// score 10. A MIG slice: any node with a GPU of its type, score 10 (an
// isolated slice runs at rate 1; kube-scheduler counts the slices). An unknown node (not in the service's cluster) does not fit.
NodeVerdict Evaluate(const PodShare& pod, const std::vector<GpuLoad>* node, const sim::InterferenceModel& physics);

// The verdict on every node offered, without a verdict object per name: the
// distinct verdicts, and which one each node offered gets.
struct Verdicts {
  std::vector<NodeVerdict> distinct;
  std::vector<uint32_t> of;  // of[i]: index into distinct for args.name(i)
};

// The verdicts for `args`' nodes: one Evaluate per distinct gpucast node, one
// shared verdict for the nodes gpucast does not know.
Verdicts EvaluateAll(const PodShare& pod, const ExtenderArgs& args,
                     const std::map<std::string, std::vector<GpuLoad>>& nodes, const sim::InterferenceModel& physics);

// The answers are at most `max_bytes` long when that is more than the nodes
// that pass need (routes: the request's size + 64 KiB): reasons in
// FailedNodes are given while they fit, the rest of the failing nodes are
// left out (kube-scheduler drops a node it finds in neither list), and
// `omitted` (if given) counts them. A node offered twice is answered once.
//
// ExtenderFilterResult: the nodes that fit (NodeNames, or Nodes when the
// arguments carried Node objects, each passed back as sent; a subset of
// those offered, in their order) and FailedNodes {name: reason}, compact JSON.
// A pod gpucast did not size passes unchanged.
std::string FilterResult(const ExtenderArgs& args, const Verdicts& v, size_t max_bytes = SIZE_MAX,
                         size_t* omitted = nullptr);
// HostPriorityList: [{"Host": name, "Score": 1..10}]: every node offered
// while within `max_bytes`, beyond it only the nodes scoring above 0 (a node
// not listed scores 0 for kube-scheduler).
std::string PrioritizeResult(const ExtenderArgs& args, const Verdicts& v, size_t max_bytes = SIZE_MAX,
                             size_t* omitted = nullptr);

}  // namespace gpucast::service::k8s
