// ExtenderArgs parsing, node fit and scores, and the answers' shapes.
#include "service/k8s_extender.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpucast::service::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json SizedPod(const std::string& share) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "p"}, {"namespace", "ml"}, {"annotations", {{"gpucast.io/share", share}}}}},
          {"spec", {{"containers", json::array({{{"name", "train"}}})}}}};
}

TEST(ParseExtenderArgs, NodeNamesAsKubeSchedulerWritesThem) {
  // kube-scheduler marshals extenderv1.ExtenderArgs, whose fields have no
  // json tags: "Pod", "Nodes", "NodeNames".
  json args = {{"Pod", SizedPod("gpu=A100-80GB,gpus=1,util=40,mem_mib=1000")},
               {"Nodes", nullptr},
               {"NodeNames", {"gpu-a", "gpu-b"}}};
  Result<ExtenderArgs> a = ParseExtenderArgs(args.dump());
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_FALSE(a->node_objects);
  EXPECT_EQ(a->node_names, (std::vector<std::string>{"gpu-a", "gpu-b"}));
  EXPECT_EQ(a->pod["metadata"]["name"], "p");
  // Go decodes keys case-insensitively; lower-case keys are read too.
  json lower = {{"pod", SizedPod("gpu=A100-80GB,gpus=1,util=40")}, {"nodenames", {"n"}}};
  ASSERT_TRUE(ParseExtenderArgs(lower.dump()).ok());
}

TEST(ParseExtenderArgs, NodeObjectsWhenNotNodeCacheCapable) {
  json args = {{"Pod", SizedPod("gpu=A100-80GB,gpus=1,util=40")},
               {"Nodes", {{"metadata", json::object()},
                          {"items", {{{"metadata", {{"name", "gpu-a"}, {"labels", {{"nvidia.com/gpu.product", "A100"}}}}}},
                                     {{"metadata", {{"name", "gpu-b"}}}}}}}}};
  Result<ExtenderArgs> a = ParseExtenderArgs(args.dump());
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_TRUE(a->node_objects);
  EXPECT_EQ(a->node_names, (std::vector<std::string>{"gpu-a", "gpu-b"}));
  EXPECT_EQ(a->nodes[0]["metadata"]["labels"]["nvidia.com/gpu.product"], "A100");
}

TEST(ParseExtenderArgs, MalformedArgsNameTheField) {
  auto msg = [](const std::string& body) { return ParseExtenderArgs(body).message(); };
  EXPECT_THAT(msg("{"), HasSubstr("ExtenderArgs: malformed JSON"));
  EXPECT_THAT(msg("[]"), HasSubstr("ExtenderArgs: want a JSON object"));
  EXPECT_THAT(msg(R"({"NodeNames": ["a"]})"), HasSubstr("field 'Pod': want a Pod object"));
  EXPECT_THAT(msg(R"({"Pod": {}})"), HasSubstr("field 'NodeNames': want an array of node names, or 'Nodes'"));
  EXPECT_THAT(msg(R"({"Pod": {}, "NodeNames": ["a", 7]})"), HasSubstr("field 'NodeNames[1]': want a non-empty string"));
  EXPECT_THAT(msg(R"({"Pod": {}, "NodeNames": "a"})"), HasSubstr("field 'NodeNames': want an array"));
  EXPECT_THAT(msg(R"({"Pod": {}, "Nodes": {"items": [{"metadata": {}}]}})"),
              HasSubstr("field 'Nodes.items[0].metadata.name': want a non-empty string"));
}

TEST(ReadPodShare, TheWebhooksAnnotation) {
  Result<PodShare> s = ReadPodShare(SizedPod("gpu=A100-80GB,gpus=2,util=43.21,mem_mib=12001,whole=1"));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(s->sized);
  EXPECT_EQ(s->gpu, "A100-80GB");
  EXPECT_EQ(s->gpus, 2);
  EXPECT_DOUBLE_EQ(s->util, 43.21);
  EXPECT_DOUBLE_EQ(s->mem_mib, 12001);
  json unsized = SizedPod("x");
  unsized["metadata"]["annotations"].erase("gpucast.io/share");
  EXPECT_FALSE(ReadPodShare(unsized)->sized);
  EXPECT_THAT(ReadPodShare(SizedPod("gpu=A100-80GB,util=140")).message(),
              HasSubstr("annotation gpucast.io/share: util: want a number in [0, 100], got '140'"));
  EXPECT_THAT(ReadPodShare(SizedPod("gpus=1,util=4")).message(), HasSubstr("gpu and util are required"));
  EXPECT_THAT(ReadPodShare(SizedPod("gpu=T4,util")).message(), HasSubstr("item 'util' is not KEY=VALUE"));
}

// Two nodes of 2 GPUs; cluster JSON as PolicyScheduler::ClusterJson writes it.
json Cluster() {
  return json::parse(R"({"cluster": "nodes=2,gpus_per_node=2,type=A100-80GB", "gpus": [
    {"id": 0, "node": 0, "type": "A100-80GB", "mem_mib": 81920, "mem_used_mib": 70000, "exclusive": false,
     "jobs": [{"id": 1, "predicted_util": 30}]},
    {"id": 1, "node": 0, "type": "A100-80GB", "mem_mib": 81920, "mem_used_mib": 0, "exclusive": false,
     "jobs": [{"id": 2, "predicted_util": 70}]},
    {"id": 2, "node": 1, "type": "A100-80GB", "mem_mib": 81920, "mem_used_mib": 0, "exclusive": false, "jobs": []},
    {"id": 3, "node": 1, "type": "A100-80GB", "mem_mib": 81920, "mem_used_mib": 1000, "exclusive": false,
     "jobs": [{"id": 3, "predicted_util": 20}]}]})");
}

TEST(NodesFromCluster, TheNthNameIsTheNthNode) {
  auto nodes = NodesFromCluster(Cluster(), {"gpu-a", "gpu-b"});
  ASSERT_TRUE(nodes.ok()) << nodes.message();
  ASSERT_EQ(nodes->at("gpu-a").size(), 2u);
  EXPECT_EQ(nodes->at("gpu-b")[0].id, 2);
  EXPECT_EQ(nodes->at("gpu-a")[1].utils, std::vector<double>{70});
  EXPECT_THAT(NodesFromCluster(Cluster(), {"a", "b", "c"}).message(),
              HasSubstr("--k8s-node: 3 names for a cluster of 2 node(s)"));
  EXPECT_THAT(NodesFromCluster(Cluster(), {"a", "a"}).message(), HasSubstr("--k8s-node 'a' given twice"));
}

// beta 1, no switching cost: two jobs of utilization u, v each keep rate
// 1 / (1 + u v / 10^4) (sim/interference.h), so the scores are computable by hand.
sim::InterferenceModel Physics() { return sim::InterferenceModel({1.0, 0.0}); }

TEST(Evaluate, FitsByUtilizationAndMemoryAndScoresByTheSlowestJob) {
  auto nodes = *NodesFromCluster(Cluster(), {"gpu-a", "gpu-b"});
  PodShare pod = *ReadPodShare(SizedPod("gpu=A100-80GB,gpus=1,util=40,mem_mib=12000"));
  // gpu-a: GPU 0 has room for 40% (30 + 40) but not for 12000 MiB (70000 + 12000 > 81920);
  // GPU 1 has the memory but 70 + 40 > 100.
  NodeVerdict a = Evaluate(pod, &nodes.at("gpu-a"), Physics());
  EXPECT_FALSE(a.fits);
  EXPECT_EQ(a.reason, "gpucast: no A100-80GB GPU here has room (predicted utilization 70.0% + the pod's 40.0% > 100%)");
  // gpu-b: the idle GPU 2 (rate 1) beats GPU 3 (two jobs: 1 / (1 + 0.4 * 0.2) = 0.926).
  NodeVerdict b = Evaluate(pod, &nodes.at("gpu-b"), Physics());
  EXPECT_TRUE(b.fits);
  EXPECT_EQ(b.gpus, std::vector<int>{2});
  EXPECT_EQ(b.score, 10);
  // With GPU 2 busy at 90%, only GPU 3 is left: floor(10 * 0.926) = 9.
  nodes.at("gpu-b")[0].utils = {90};
  b = Evaluate(pod, &nodes.at("gpu-b"), Physics());
  EXPECT_TRUE(b.fits);
  EXPECT_EQ(b.gpus, std::vector<int>{3});
  EXPECT_EQ(b.score, 9);
  // 20% + 80% exactly fills GPU 3: rate 1 / (1 + 0.8 * 0.2) = 0.862 -> 8.
  pod.util = 80;
  EXPECT_EQ(Evaluate(pod, &nodes.at("gpu-b"), Physics()).score, 8);
}

TEST(Evaluate, TypeUnknownNodesAndWholeGpus) {
  auto nodes = *NodesFromCluster(Cluster(), {"gpu-a", "gpu-b"});
  PodShare pod = *ReadPodShare(SizedPod("gpu=RTX3090,gpus=1,util=10"));
  NodeVerdict v = Evaluate(pod, &nodes.at("gpu-b"), Physics());
  EXPECT_FALSE(v.fits);
  EXPECT_EQ(v.reason, "gpucast: the pod was predicted for RTX3090; this node has A100-80GB");
  v = Evaluate(pod, nullptr, Physics());
  EXPECT_FALSE(v.fits);
  EXPECT_THAT(v.reason, HasSubstr("not one of gpucast's GPU nodes (gpucast serve --k8s-node)"));
  PodShare two = *ReadPodShare(SizedPod("gpu=A100-80GB,gpus=2,util=90"));
  EXPECT_EQ(Evaluate(two, &nodes.at("gpu-b"), Physics()).reason,
            "gpucast: needs 2 idle A100-80GB GPUs, this node has 1");
  nodes.at("gpu-b")[1].utils.clear();
  nodes.at("gpu-b")[1].mem_used_mib = 0;
  v = Evaluate(two, &nodes.at("gpu-b"), Physics());
  EXPECT_TRUE(v.fits);
  EXPECT_EQ(v.gpus, (std::vector<int>{2, 3}));
  // A pod gpucast did not size passes everywhere.
  PodShare none;
  EXPECT_TRUE(Evaluate(none, nullptr, Physics()).fits);
}

TEST(Results, FilterAnswersASubsetInTheirOrderAndPrioritizeEveryNode) {
  json args_json = {{"Pod", SizedPod("gpu=A100-80GB,gpus=1,util=40,mem_mib=12000")},
                    {"NodeNames", {"gpu-a", "cpu-1", "gpu-b"}}};
  ExtenderArgs args = *ParseExtenderArgs(args_json.dump());
  auto nodes = *NodesFromCluster(Cluster(), {"gpu-a", "gpu-b"});
  PodShare pod = *ReadPodShare(args.pod);
  std::vector<NodeVerdict> v;
  for (const std::string& n : args.node_names) {
    v.push_back(Evaluate(pod, nodes.count(n) ? &nodes.at(n) : nullptr, Physics()));
  }
  json f = FilterResult(args, v);
  EXPECT_EQ(f["NodeNames"], json::array({"gpu-b"}));
  EXPECT_EQ(f["FailedNodes"].size(), 2u);
  EXPECT_THAT(f["FailedNodes"]["cpu-1"].get<std::string>(), HasSubstr("not one of gpucast's GPU nodes"));
  EXPECT_EQ(f["Error"], "");
  EXPECT_FALSE(f.contains("Nodes"));
  json p = PrioritizeResult(args, v);
  EXPECT_EQ(p, json::parse(R"([{"Host": "gpu-a", "Score": 0}, {"Host": "cpu-1", "Score": 0},
                              {"Host": "gpu-b", "Score": 10}])"));
  // Node objects in, node objects out.
  json with_nodes = {{"Pod", args_json["Pod"]},
                     {"Nodes", {{"items", {{{"metadata", {{"name", "gpu-a"}}}}, {{"metadata", {{"name", "gpu-b"}}}}}}}}};
  ExtenderArgs an = *ParseExtenderArgs(with_nodes.dump());
  std::vector<NodeVerdict> vn = {Evaluate(pod, &nodes.at("gpu-a"), Physics()), Evaluate(pod, &nodes.at("gpu-b"), Physics())};
  json fn = FilterResult(an, vn);
  EXPECT_EQ(fn["Nodes"]["kind"], "NodeList");
  ASSERT_EQ(fn["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(fn["Nodes"]["items"][0]["metadata"]["name"], "gpu-b");
  EXPECT_FALSE(fn.contains("NodeNames"));
}

}  // namespace
}  // namespace gpucast::service::k8s
