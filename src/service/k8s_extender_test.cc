// ExtenderArgs parsing, node fit and scores, and the answers' shapes.
#include "service/k8s_extender.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpucast::service::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

std::vector<std::string> Names(const ExtenderArgs& a) {
  std::vector<std::string> out;
  for (size_t i = 0; i < a.size(); ++i) out.emplace_back(a.name(i));
  return out;
}

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
  EXPECT_EQ(Names(*a), (std::vector<std::string>{"gpu-a", "gpu-b"}));
  EXPECT_EQ(a->pod["metadata"]["name"], "p");
  EXPECT_EQ(a->pod["metadata"]["annotations"]["gpucast.io/share"], "gpu=A100-80GB,gpus=1,util=40,mem_mib=1000");
  // Go decodes keys case-insensitively; lower-case keys are read too.
  json lower = {{"pod", SizedPod("gpu=A100-80GB,gpus=1,util=40")}, {"nodenames", {"n"}}};
  ASSERT_TRUE(ParseExtenderArgs(lower.dump()).ok());
}

TEST(ParseExtenderArgs, NodeObjectsWhenNotNodeCacheCapable) {
  json args = {{"Pod", SizedPod("gpu=A100-80GB,gpus=1,util=40")},
               {"Nodes", {{"metadata", json::object()},
                          {"items", {{{"metadata", {{"name", "gpu-a"}, {"labels", {{"nvidia.com/gpu.product", "A100"}}}}}},
                                     {{"metadata", {{"name", "gpu-b"}}}}}}}}};
  const std::string body = args.dump();  // the Node objects stay views into it
  Result<ExtenderArgs> a = ParseExtenderArgs(body);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_TRUE(a->node_objects);
  EXPECT_EQ(Names(*a), (std::vector<std::string>{"gpu-a", "gpu-b"}));
  // Each Node object is kept as the text that was sent.
  EXPECT_EQ(json::parse(a->node_texts[0])["metadata"]["labels"]["nvidia.com/gpu.product"], "A100");
  EXPECT_EQ(a->node_texts[1], R"({"metadata":{"name":"gpu-b"}})");
}

// Only what the extender reads is kept of the pod: gpucast's annotations and
// the GPU resources, not the rest of a (possibly huge) pod.
TEST(ParseExtenderArgs, KeepsOnlyWhatTheExtenderReads) {
  json pod = SizedPod("gpu=A100-80GB,gpus=1,util=40");
  pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = std::string(10000, 'x');
  pod["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", 1}, {"cpu", "4"}}},
                                               {"requests", {{"nvidia.com/gpucores", "40"}}}};
  pod["spec"]["containers"][0]["env"] = json::array({{{"name", "A"}, {"value", "B"}}});
  Result<ExtenderArgs> a = ParseExtenderArgs(json{{"Pod", pod}, {"NodeNames", {"n"}}}.dump());
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->pod, json::parse(R"({"metadata": {"name": "p", "namespace": "ml",
      "annotations": {"gpucast.io/share": "gpu=A100-80GB,gpus=1,util=40"}},
      "spec": {"containers": [{"name": "train", "resources": {"limits": {"nvidia.com/gpu": 1},
                                                              "requests": {"nvidia.com/gpucores": "40"}}}]}})"));
  // Escaped keys are decoded; the first of a repeated key counts, as before.
  Result<ExtenderArgs> b = ParseExtenderArgs(R"({"P\u006fd": {}, "NodeNames": ["a"], "nodenames": ["b", "c"]})");
  ASSERT_TRUE(b.ok()) << b.message();
  EXPECT_EQ(Names(*b), std::vector<std::string>{"a"});
  // Nodes whose items hold escapes and nesting come back byte for byte.
  const std::string item = R"({"metadata": {"name": "n\"1", "labels": {"a]": "[}"}}, "status": [1, {"x": null}]})";
  const std::string body = R"({"Pod": {}, "Nodes": {"items": [)" + item + R"(, {"metadata": {"name": "n2"}}]}})";
  Result<ExtenderArgs> c = ParseExtenderArgs(body);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(Names(*c), (std::vector<std::string>{"n\"1", "n2"}));
  EXPECT_EQ(c->node_texts[0], item);
}

TEST(ParseExtenderArgs, MalformedArgsNameTheField) {
  auto msg = [](const std::string& body) { return ParseExtenderArgs(body).message(); };
  EXPECT_THAT(msg(R"({"Pod": [], "NodeNames": []})"), HasSubstr("field 'Pod': want a Pod object"));
  EXPECT_THAT(msg(R"({"Pod": {}, "NodeNames": {}})"), HasSubstr("field 'NodeNames': want an array"));
  EXPECT_THAT(msg(R"({"Pod": {}, "Nodes": {"items": {}}})"), HasSubstr("field 'Nodes.items': want an array"));
  EXPECT_THAT(msg(R"({"Pod": {}, "Nodes": {"items": [7]}})"),
              HasSubstr("field 'Nodes.items[0].metadata.name': want a non-empty string"));
  EXPECT_THAT(msg(R"({"Pod": {}, "NodeNames": [""]})"), HasSubstr("field 'NodeNames[0]'"));
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

// A mixed cluster's pod sized for each GPU type: each node is judged by the
// share of its own type (issue 31: a job's prediction uses its node's GPU).
TEST(Evaluate, APodSizedForSeveralTypesUsesTheShareOfTheNodesType) {
  json cluster = json::parse(R"({"gpus": [
    {"id": 0, "node": 0, "type": "A100-80GB", "mem_mib": 81920, "mem_used_mib": 0, "jobs": [{"id": 1, "predicted_util": 40}]},
    {"id": 1, "node": 1, "type": "H100", "mem_mib": 81920, "mem_used_mib": 0, "jobs": [{"id": 2, "predicted_util": 40}]}]})");
  auto nodes = *NodesFromCluster(cluster, {"a100", "h100"});
  // 70% on an A100, 50% on an H100: next to a 40% job only the H100 has room.
  Result<PodShare> pod = ReadPodShare(SizedPod("gpu=A100-80GB,gpus=1,util=70,mem_mib=100,cores=70;"
                                               "gpu=H100,gpus=1,util=50,mem_mib=90,cores=70"));
  ASSERT_TRUE(pod.ok()) << pod.message();
  ASSERT_EQ(pod->alternatives.size(), 1u);
  EXPECT_EQ(ForNode(*pod, nodes.at("h100")).util, 50);
  EXPECT_EQ(ForNode(*pod, nodes.at("a100")).util, 70);
  NodeVerdict a = Evaluate(*pod, &nodes.at("a100"), Physics());
  EXPECT_FALSE(a.fits);
  EXPECT_THAT(a.reason, HasSubstr("predicted utilization 40.0% + the pod's 70.0% > 100%"));
  NodeVerdict h = Evaluate(*pod, &nodes.at("h100"), Physics());
  EXPECT_TRUE(h.fits) << h.reason;
  EXPECT_EQ(h.gpus, std::vector<int>{1});
  // A type the pod was not sized for fails, naming the types it was.
  PodShare t4 = *ReadPodShare(SizedPod("gpu=T4,gpus=1,util=5;gpu=L4,gpus=1,util=4"));
  EXPECT_EQ(Evaluate(t4, &nodes.at("h100"), Physics()).reason,
            "gpucast: the pod was predicted for T4, L4; this node has H100");
  EXPECT_THAT(ReadPodShare(SizedPod("gpu=T4,gpus=1,util=5;gpu=L4,gpus=2,util=4")).message(),
              HasSubstr("gpus differ between the GPU types"));
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

// A pod on a MIG slice: kube-scheduler places it by the node's
// nvidia.com/mig-<profile> capacity; an isolated slice is slowed by no
// neighbour (rate 1, score 10), and the type check is gpucast's say.
TEST(Evaluate, AMigSlicePassesTheNodesOfItsTypeAtFullScore) {
  auto nodes = *NodesFromCluster(Cluster(), {"gpu-a", "gpu-b"});
  Result<PodShare> pod = ReadPodShare(SizedPod("gpu=A100-80GB,gpus=1,util=95,mem_mib=7001,mig=1g.10gb"));
  ASSERT_TRUE(pod.ok()) << pod.message();
  EXPECT_EQ(pod->mig, "1g.10gb");
  // gpu-a has no GPU with room for 95% of a whole GPU: the slice is not a share of one.
  for (const char* n : {"gpu-a", "gpu-b"}) {
    NodeVerdict v = Evaluate(*pod, &nodes.at(n), Physics());
    EXPECT_TRUE(v.fits) << n << ": " << v.reason;
    EXPECT_EQ(v.score, 10);
    EXPECT_TRUE(v.gpus.empty());
    EXPECT_EQ(v.reason, "MIG 1g.10gb slice of a A100-80GB (isolated; placed by its nvidia.com/mig-1g.10gb resource)");
  }
  PodShare h100 = *ReadPodShare(SizedPod("gpu=H100,gpus=1,util=50,mig=1g.10gb"));
  EXPECT_EQ(Evaluate(h100, &nodes.at("gpu-b"), Physics()).reason,
            "gpucast: the pod was predicted for H100; this node has A100-80GB");
  EXPECT_FALSE(Evaluate(*pod, nullptr, Physics()).fits);  // not one of gpucast's nodes, as any sized pod
  EXPECT_THAT(ReadPodShare(SizedPod("gpu=H100,gpus=1,util=50,mig=")).message(), HasSubstr("mig: want a MIG profile"));
}

TEST(Results, FilterAnswersASubsetInTheirOrderAndPrioritizeEveryNode) {
  json args_json = {{"Pod", SizedPod("gpu=A100-80GB,gpus=1,util=40,mem_mib=12000")},
                    {"NodeNames", {"gpu-a", "cpu-1", "gpu-b"}}};
  const std::string body = args_json.dump();
  ExtenderArgs args = *ParseExtenderArgs(body);
  auto nodes = *NodesFromCluster(Cluster(), {"gpu-a", "gpu-b"});
  PodShare pod = *ReadPodShare(args.pod);
  Verdicts v = EvaluateAll(pod, args, nodes, Physics());
  json f = json::parse(FilterResult(args, v));
  EXPECT_EQ(f["NodeNames"], json::array({"gpu-b"}));
  EXPECT_EQ(f["FailedNodes"].size(), 2u);
  EXPECT_THAT(f["FailedNodes"]["cpu-1"].get<std::string>(), HasSubstr("not one of gpucast's GPU nodes"));
  EXPECT_EQ(f["Error"], "");
  EXPECT_FALSE(f.contains("Nodes"));
  json p = json::parse(PrioritizeResult(args, v));
  EXPECT_EQ(p, json::parse(R"([{"Host": "gpu-a", "Score": 0}, {"Host": "cpu-1", "Score": 0},
                              {"Host": "gpu-b", "Score": 10}])"));
  // Node objects in, the passing node objects out, as sent.
  json with_nodes = {{"Pod", args_json["Pod"]},
                     {"Nodes", {{"items", {{{"metadata", {{"name", "gpu-a"}}}}, {{"metadata", {{"name", "gpu-b"}}}}}}}}};
  const std::string body_n = with_nodes.dump();
  ExtenderArgs an = *ParseExtenderArgs(body_n);
  json fn = json::parse(FilterResult(an, EvaluateAll(pod, an, nodes, Physics())));
  EXPECT_EQ(fn["Nodes"]["kind"], "NodeList");
  ASSERT_EQ(fn["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(fn["Nodes"]["items"][0]["metadata"]["name"], "gpu-b");
  EXPECT_FALSE(fn.contains("NodeNames"));
}

// Issue 31, "a 1 MB request answers 7.4 MB": 100000 one-letter names not
// gpucast's, each failing with a 60-byte reason. The answer stays within the
// budget (the routes give the request's size + 64 KiB): failing nodes past it
// are left out (kube-scheduler drops a node in neither list), counted.
TEST(Results, AnswersStayWithinTheBudget) {
  json names = json::array();
  for (int i = 0; i < 100000; ++i) names.push_back(std::string(1, static_cast<char>('a' + i % 26)) + std::to_string(i));
  const std::string body = json{{"Pod", SizedPod("gpu=A100-80GB,gpus=1,util=40")}, {"NodeNames", names}}.dump();
  ExtenderArgs args = *ParseExtenderArgs(body);
  auto nodes = *NodesFromCluster(Cluster(), {"gpu-a", "gpu-b"});
  Verdicts v = EvaluateAll(*ReadPodShare(args.pod), args, nodes, Physics());
  EXPECT_EQ(v.distinct.size(), 1u);  // one verdict shared by every unknown node
  const size_t budget = body.size() + (64 << 10);
  size_t omitted = 0;
  const std::string unbounded = FilterResult(args, v);
  EXPECT_GT(unbounded.size(), 5 * body.size());  // what the old answer was
  const std::string f = FilterResult(args, v, budget, &omitted);
  EXPECT_LE(f.size(), budget);
  json fj = json::parse(f);
  EXPECT_EQ(fj["NodeNames"], json::array());
  EXPECT_GT(omitted, 0u);
  EXPECT_EQ(fj["FailedNodes"].size() + omitted, 100000u);
  const std::string p = PrioritizeResult(args, v, budget, &omitted);
  EXPECT_LE(p.size(), budget);
  EXPECT_GT(omitted, 0u);
  // A node offered twice is answered once.
  ExtenderArgs twice = *ParseExtenderArgs(json{{"Pod", SizedPod("gpu=A100-80GB,gpus=1,util=40")},
                                               {"NodeNames", {"gpu-b", "gpu-b", "x", "x"}}}.dump());
  Verdicts vt = EvaluateAll(*ReadPodShare(twice.pod), twice, nodes, Physics());
  EXPECT_EQ(json::parse(FilterResult(twice, vt)), json::parse(R"J({"NodeNames": ["gpu-b"],
      "FailedNodes": {"x": "gpucast: not one of gpucast's GPU nodes (gpucast serve --k8s-node)"}, "Error": ""})J"));
  EXPECT_EQ(json::parse(PrioritizeResult(twice, vt)).size(), 2u);
}

}  // namespace
}  // namespace gpucast::service::k8s
