// POST /k8s/v1/mutate, /k8s/v1/filter and /k8s/v1/prioritize through a real
// HTTP server (service_fixture.h) with the fake engine (util = 10 x batch)
// and the live policy scheduler, on the API-server-shaped review of
// tests/k8s/review-create-pod.json.
#include <openssl/evp.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "predict/physics_fixture.h"
#include "predict/predictor.h"
#include "service/engine.h"
#include "util/paths.h"

#include "service/k8s_admission.h"
#include "service/k8s_pods.h"
#include "service/k8s_share.h"
#include "service/scheduler.h"
#include "service/service_fixture.h"

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::LucidEngine;
using testing::WriteLucidPredictorAndVgg;

std::string FromBase64(const std::string& b64) {
  std::string out(b64.size() / 4 * 3 + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  if (n < 0) return "(not base64)";
  size_t pad = b64.size() >= 2 && b64.substr(b64.size() - 2) == "==" ? 2 : !b64.empty() && b64.back() == '=';
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

class K8sRoutesTest : public testing::ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    opts_.k8s.enabled = true;
    opts_.k8s.nodes = {"gpu-a", "gpu-b"};
    opts_.k8s.share_key = std::string(32, 's');
    opts_.max_body_bytes = 64 << 10;  // an API server's review of a pod is several KiB
    std::ifstream in(std::string(GPUCAST_SOURCE_DIR) + "/tests/k8s/review-create-pod.json");
    std::stringstream ss;
    ss << in.rdbuf();
    review_ = json::parse(ss.str());
    Annotations()["gpucast.io/model"] = model_;
    Annotations()["gpucast.io/batch"] = "4";
    Annotations().erase("gpucast.io/attrs");
  }
  json& Annotations() { return review_["request"]["object"]["metadata"]["annotations"]; }
  // Two nodes of one RTX 3090 each, the predictive policy.
  void Start(const std::string& cluster = "nodes=2,gpus_per_node=1,type=RTX3090",
             std::unique_ptr<PredictionEngine> engine = std::make_unique<testing::FakeEngine>()) {
    Result<std::unique_ptr<Scheduler>> sched = NewPolicyScheduler(cluster, "predictive", GPUCAST_DEFAULT_DATA_DIR);
    ASSERT_TRUE(sched.ok()) << sched.message();
    Result<std::unique_ptr<Service>> s = Service::Create(opts_, std::move(engine), std::move(sched).value());
    ASSERT_TRUE(s.ok()) << s.message();
    service_ = std::move(s).value();
    port_ = *service_->Bind("127.0.0.1", 0);
    thread_ = std::thread([this] { EXPECT_TRUE(service_->Run().ok()); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(10, 0);
    for (int i = 0; i < 200 && !client_->Get("/healthz"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  json Mutate() {
    auto r = PostJson("/k8s/v1/mutate", review_);
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    return r && r->status == 200 ? Body(r)["response"] : json();
  }
  json review_;
};

TEST_F(K8sRoutesTest, AnAnnotatedPodGetsTheShareOfItsPrediction) {
  Start();
  json resp = Mutate();
  EXPECT_EQ(resp["uid"], "8c5ab4f5-6393-41e8-b7cc-42010a800002");
  EXPECT_EQ(resp["allowed"], true);
  EXPECT_EQ(resp["patchType"], "JSONPatch");
  json patch = json::parse(FromBase64(resp["patch"]));
  json pod = review_["request"]["object"].patch(patch);
  // Sized by the interval's upper end (the default headroom): the fake engine's 40% [35, 45].
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"], "45");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpucores"], "45");
  // The share is signed for this pod.
  EXPECT_TRUE(k8s::ShareVerifies(opts_.k8s.share_key, "ml", pod));
  EXPECT_EQ(pod["metadata"]["annotations"]["gpucast.io/predicted-util"], "40.00");
  EXPECT_EQ(pod["metadata"]["annotations"]["gpucast.io/predicted-util-interval"], "35.00-45.00");
  EXPECT_EQ(pod["metadata"]["annotations"]["gpucast.io/predicted-gpu"], "RTX3090");
  EXPECT_THAT(resp["warnings"][0].get<std::string>(), HasSubstr("no memory model"));
  // The same job through POST /v1/predict: the same number.
  auto p = PostJson("/v1/predict", {{"model", model_}, {"batch", 4}});
  ASSERT_TRUE(p);
  EXPECT_EQ(Body(p)["predicted_util"], 40.0);
  // A GPU named by the pod is the one predicted for (the API's name check).
  Annotations()["gpucast.io/gpu"] = "a100";
  pod = review_["request"]["object"].patch(json::parse(FromBase64(Mutate()["patch"])));
  EXPECT_EQ(pod["metadata"]["annotations"]["gpucast.io/predicted-gpu"], "A100-40GB");
  Annotations()["gpucast.io/gpu"] = "RTX3900";
  EXPECT_THAT(Mutate()["status"]["message"].get<std::string>(),
              HasSubstr("gpucast.io annotations: field 'gpu': unknown GPU 'RTX3900'; closest: RTX3090"));
}

// The graphs' warnings reach kubectl: an eval-mode export's, first, prefixed "gpucast: ".
TEST_F(K8sRoutesTest, TheGraphWarningsAreTheReviewsToo) {
  const std::string eval = dir_ + "/eval.onnx";
  std::ofstream(eval) << testing::kFakeModelMagic << " " << testing::kFakeEvalMode;
  Annotations()["gpucast.io/model"] = eval;
  Start();
  json resp = Mutate();
  EXPECT_EQ(resp["allowed"], true);
  ASSERT_GE(resp["warnings"].size(), 2u);
  EXPECT_THAT(resp["warnings"][0].get<std::string>(), HasSubstr("gpucast: "));
  EXPECT_THAT(resp["warnings"][0].get<std::string>(), HasSubstr("looks like an eval-mode export"));
  EXPECT_THAT(resp["warnings"][1].get<std::string>(), HasSubstr("no memory model"));
}

TEST_F(K8sRoutesTest, AnUnannotatedPodPassesUnchanged) {
  Start();
  for (const char* k : {"gpucast.io/model", "gpucast.io/batch"}) Annotations().erase(k);
  json resp = Mutate();
  EXPECT_EQ(resp, json::parse(R"({"uid": "8c5ab4f5-6393-41e8-b7cc-42010a800002", "allowed": true})"));
}

TEST_F(K8sRoutesTest, UnreadableModelsAndBadAnnotationsAreDeniedWithTheReason) {
  Start();
  Annotations()["gpucast.io/model"] = "/etc/passwd";
  json resp = Mutate();
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_EQ(resp["status"]["code"], 403);
  EXPECT_EQ(resp["status"]["message"],
            "gpucast: pod ml/resnet50-train: model '/etc/passwd': no such model file under the service's model roots");
  Annotations()["gpucast.io/model"] = dir_ + "/bad.onnx";
  EXPECT_THAT(Mutate()["status"]["message"].get<std::string>(), HasSubstr("not an ONNX model"));
  Annotations()["gpucast.io/model"] = model_;
  Annotations()["gpucast.io/batch"] = "0";
  EXPECT_THAT(Mutate()["status"]["message"].get<std::string>(),
              HasSubstr("gpucast: pod ml/resnet50-train: gpucast.io annotations: field 'batch'"));
  Annotations()["gpucast.io/batch"] = "4";
  review_["request"]["object"]["spec"]["containers"][0]["resources"] = json::object();
  EXPECT_THAT(Mutate()["status"]["message"].get<std::string>(), HasSubstr("no container asks for nvidia.com/gpu"));
}

TEST_F(K8sRoutesTest, FailOpenAllowsWithTheReasonAsAWarning) {
  opts_.k8s.fail_open = true;
  Start();
  Annotations()["gpucast.io/model"] = "/etc/passwd";
  json resp = Mutate();
  EXPECT_EQ(resp["allowed"], true);
  EXPECT_FALSE(resp.contains("patch"));
  EXPECT_THAT(resp["warnings"][0].get<std::string>(),
              HasSubstr("no such model file under the service's model roots (allowed unchanged, without a gpucast share)"));
}

TEST_F(K8sRoutesTest, MalformedReviewsAre400AndOtherObjectsPass) {
  Start();
  auto r = client_->Post("/k8s/v1/mutate", "{\"kind\":", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Error(r), HasSubstr("AdmissionReview: malformed JSON"));
  json old = review_;
  review_["apiVersion"] = "admission.k8s.io/v1beta1";
  r = PostJson("/k8s/v1/mutate", review_);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Error(r), HasSubstr("field 'apiVersion': want \"admission.k8s.io/v1\""));
  review_ = old;
  review_["request"].erase("uid");
  EXPECT_EQ(PostJson("/k8s/v1/mutate", review_)->status, 400);
  review_ = old;
  review_["request"]["kind"] = {{"group", "apps"}, {"version", "v1"}, {"kind", "Deployment"}};
  json resp = Mutate();
  EXPECT_EQ(resp["allowed"], true);
  EXPECT_THAT(resp["warnings"][0].get<std::string>(), HasSubstr("gpucast mutates Pods only, not apps/Deployment"));
  review_ = old;
  review_["request"]["operation"] = "UPDATE";
  EXPECT_FALSE(Mutate().contains("patch"));
}

TEST_F(K8sRoutesTest, TheRoutesAreOffWithoutK8sShare) {
  opts_.k8s = K8sConfig();
  Start();
  auto r = PostJson("/k8s/v1/mutate", review_);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST_F(K8sRoutesTest, TheExtenderFiltersByWhatRunsWhere) {
  Start();
  // The webhook's pod (40%) goes to the extender as kube-scheduler sends it.
  json pod = review_["request"]["object"].patch(json::parse(FromBase64(Mutate()["patch"])));
  json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"gpu-a", "gpu-b", "cpu-1"}}};
  auto r = PostJson("/k8s/v1/filter", args);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["NodeNames"], json::array({"gpu-a", "gpu-b"}));
  EXPECT_THAT(Body(r)["FailedNodes"]["cpu-1"].get<std::string>(), HasSubstr("not one of gpucast's GPU nodes"));
  r = PostJson("/k8s/v1/prioritize", args);
  EXPECT_EQ(Body(r), json::parse(R"([{"Host": "gpu-a", "Score": 10}, {"Host": "gpu-b", "Score": 10},
                                    {"Host": "cpu-1", "Score": 0}])"));
  // Two 90% jobs through the API fill both GPUs (one each): 90 + 40 > 100 everywhere.
  Submit(9);
  Submit(9);
  r = PostJson("/k8s/v1/filter", args);
  EXPECT_EQ(Body(r)["NodeNames"], json::array());
  EXPECT_THAT(Body(r)["FailedNodes"]["gpu-a"].get<std::string>(),
              HasSubstr("predicted utilization 90.0% + the pod's 40.0% > 100%"));
  // A 10% pod still fits next to them.
  Annotations()["gpucast.io/batch"] = "1";
  args["Pod"] = review_["request"]["object"].patch(json::parse(FromBase64(Mutate()["patch"])));
  EXPECT_EQ(Body(PostJson("/k8s/v1/filter", args))["NodeNames"], json::array({"gpu-a", "gpu-b"}));
  // Malformed arguments: 400 naming the field.
  r = PostJson("/k8s/v1/filter", {{"Pod", pod}});
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Error(r), HasSubstr("ExtenderArgs: field 'NodeNames'"));
}

// Issue 31, item 10: the owner of a pod can write gpucast.io/share (kubectl
// annotate). The extender acts only on a share whose signature verifies.
TEST_F(K8sRoutesTest, TheExtenderTrustsOnlyTheSharesGpucastSigned) {
  Start();
  json pod = review_["request"]["object"].patch(json::parse(FromBase64(Mutate()["patch"])));
  json args = {{"Pod", pod}, {"NodeNames", {"gpu-a", "gpu-b"}}};
  EXPECT_EQ(Body(PostJson("/k8s/v1/filter", args))["NodeNames"], json::array({"gpu-a", "gpu-b"}));
  // The owner lowers the share to squeeze next to a full GPU: refused on every node.
  json forged = pod;
  forged["metadata"]["annotations"]["gpucast.io/share"] = "gpu=RTX3090,gpus=1,util=1,mem_mib=1,cores=45";
  args["Pod"] = forged;
  auto r = PostJson("/k8s/v1/filter", args);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["NodeNames"], json::array());
  EXPECT_THAT(Body(r)["FailedNodes"]["gpu-a"].get<std::string>(),
              HasSubstr("the pod's gpucast.io/share is not gpucast's"));
  // A share written on a pod the webhook never sized (no signature): the same.
  forged["metadata"]["annotations"].erase("gpucast.io/share-signature");
  args["Pod"] = forged;
  EXPECT_EQ(Body(PostJson("/k8s/v1/filter", args))["NodeNames"], json::array());
  // The signature of another pod copied beside the forged share: the same.
  forged["metadata"]["annotations"]["gpucast.io/share-signature"] = pod["metadata"]["annotations"]["gpucast.io/share-signature"];
  args["Pod"] = forged;
  EXPECT_EQ(Body(PostJson("/k8s/v1/filter", args))["NodeNames"], json::array());
  EXPECT_EQ(Body(PostJson("/k8s/v1/prioritize", args)), json::parse(R"([{"Host": "gpu-a", "Score": 0},
                                                                        {"Host": "gpu-b", "Score": 0}])"));
}

// Issue 31, item 12: the extender counts the pods that run (watched from the
// API server), not only the jobs submitted through /v1/jobs.
TEST_F(K8sRoutesTest, TheExtenderCountsTheRunningPods) {
  // The view as the watcher would have filled it: a signed 90% pod on gpu-a.
  auto view = std::make_shared<k8s::PodView>();
  opts_.k8s.pods = view;
  Start();
  json pod = review_["request"]["object"].patch(json::parse(FromBase64(Mutate()["patch"])));
  json args = {{"Pod", pod}, {"NodeNames", {"gpu-a", "gpu-b"}}};
  // Not synced yet: the job view alone.
  EXPECT_EQ(Body(PostJson("/k8s/v1/filter", args))["NodeNames"], json::array({"gpu-a", "gpu-b"}));
  Annotations()["gpucast.io/batch"] = "9";
  json running = review_["request"]["object"].patch(json::parse(FromBase64(Mutate()["patch"])));
  running["metadata"]["name"] = "big";
  running["spec"]["nodeName"] = "gpu-a";
  running["status"] = {{"phase", "Running"}};
  std::optional<k8s::RunningPod> rp = k8s::PodFromJson(running, opts_.k8s.share_key);
  ASSERT_TRUE(rp && rp->verified);
  // An unsized GPU pod on gpu-b holds its GPU whole.
  json plain = running;
  plain["metadata"]["annotations"] = json::object();
  plain["metadata"]["name"] = "plain";
  plain["spec"]["nodeName"] = "gpu-b";
  view->Replace({*rp, *k8s::PodFromJson(plain, opts_.k8s.share_key)});
  auto r = PostJson("/k8s/v1/filter", args);
  EXPECT_EQ(Body(r)["NodeNames"], json::array());
  EXPECT_THAT(Body(r)["FailedNodes"]["gpu-a"].get<std::string>(),
              HasSubstr("predicted utilization 90.0% + the pod's 40.0% > 100%"));
  EXPECT_THAT(Body(r)["FailedNodes"]["gpu-b"].get<std::string>(), HasSubstr("held by a job alone"));
}

// Issue 31, item 12: a managed control plane sends neither a client
// certificate nor a token; --k8s-webhook-auth none lets its reviews in while
// the job routes keep their token.
TEST_F(K8sRoutesTest, WebhookAuthNoneOpensTheWebhookOnly) {
  opts_.token = "job-token";
  Start();
  auto r = PostJson("/k8s/v1/mutate", review_);
  EXPECT_EQ(r->status, 401);
  StopServer();
  opts_.k8s.webhook_open = true;
  Start();
  r = PostJson("/k8s/v1/mutate", review_);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["response"]["allowed"], true);
  EXPECT_EQ(PostJson("/k8s/v1/filter", {{"Pod", json::object()}, {"NodeNames", json::array()}})->status, 401);
  EXPECT_EQ(PostJson("/v1/predict", {{"model", model_}, {"batch", 4}})->status, 401);
}

// Issue 31, item 12: a pod names a model stored by content (POST /v1/models),
// so that a user's graph needs no access to the service's models volume.
TEST_F(K8sRoutesTest, APodNamesAStoredModelByItsDigest) {
  Start();
  auto r = client_->Post("/v1/models", std::string(testing::kFakeModelMagic) + " pod model", "application/octet-stream");
  ASSERT_EQ(r->status, 201) << r->body;
  Annotations()["gpucast.io/model"] = Body(r)["model"];
  json resp = Mutate();
  EXPECT_EQ(resp["allowed"], true) << resp.dump();
  json pod = review_["request"]["object"].patch(json::parse(FromBase64(resp["patch"])));
  EXPECT_EQ(pod["metadata"]["annotations"]["gpucast.io/predicted-util"], "40.00");
}

// Issue 31, item 11: on a mixed cluster a pod is predicted for each GPU type,
// or names its type, and the extender then places it only on nodes of that type.
TEST_F(K8sRoutesTest, MixedClusterPodsNameTheirGpu) {
  Start("nodes=1,gpus_per_node=1,type=RTX3090;nodes=1,gpus_per_node=1,type=A100-80GB");
  // Without gpucast.io/gpu the pod is sized for each type; the extender takes the share of the node's type.
  json resp = Mutate();
  ASSERT_EQ(resp["allowed"], true) << resp.dump();
  json each = review_["request"]["object"].patch(json::parse(FromBase64(resp["patch"])));
  EXPECT_EQ(each["metadata"]["annotations"]["gpucast.io/predicted-gpu"], "RTX3090,A100-80GB");
  EXPECT_EQ(each["metadata"]["annotations"]["gpucast.io/predicted-util"], "RTX3090=40.00,A100-80GB=40.00");
  EXPECT_EQ(each["metadata"]["annotations"]["gpucast.io/share"],
            "gpu=RTX3090,gpus=1,util=40.00,mem_mib=0,cores=45;gpu=A100-80GB,gpus=1,util=40.00,mem_mib=0,cores=45");
  EXPECT_EQ(Body(PostJson("/k8s/v1/filter", {{"Pod", each}, {"NodeNames", {"gpu-a", "gpu-b"}}}))["NodeNames"],
            json::array({"gpu-a", "gpu-b"}));
  // The API wants the job's GPU named.
  auto p = PostJson("/v1/predict", {{"model", model_}, {"batch", 4}});
  EXPECT_EQ(p->status, 400);
  EXPECT_THAT(Error(p), HasSubstr("field 'gpu': missing; the cluster has GPUs of several types (RTX3090, A100-80GB)"));
  Annotations()["gpucast.io/gpu"] = "A100-80GB";
  json pod = review_["request"]["object"].patch(json::parse(FromBase64(Mutate()["patch"])));
  EXPECT_EQ(pod["metadata"]["annotations"]["gpucast.io/predicted-gpu"], "A100-80GB");
  json args = {{"Pod", pod}, {"NodeNames", {"gpu-a", "gpu-b"}}};
  auto r = PostJson("/k8s/v1/filter", args);
  EXPECT_EQ(Body(r)["NodeNames"], json::array({"gpu-b"}));
  EXPECT_THAT(Body(r)["FailedNodes"]["gpu-a"].get<std::string>(),
              HasSubstr("the pod was predicted for A100-80GB; this node has RTX3090"));
  // /v1/cluster lists the node groups.
  json c = Body(client_->Get("/v1/cluster"));
  ASSERT_EQ(c["node_groups"].size(), 2u);
  EXPECT_EQ(c["node_groups"][1]["type"], "A100-80GB");
}

// A whole-GPU nvidia.com/gpu.product (GPU feature discovery's label: NVIDIA-A100-SXM4-80GB) in
// nodeSelector or required node affinity pins the pod's GPU type on a mixed cluster as
// gpucast.io/gpu does: the same annotations, and the extender keeps the nodes of that type.
// Several products: each of the cluster's types among them; none of them: denied.
TEST_F(K8sRoutesTest, AMixedClusterPodPinnedByTheProductLabelIsPredictedForThatGpu) {
  opts_.k8s.nodes = {"gpu-a", "gpu-b", "gpu-c"};
  Start("nodes=1,gpus_per_node=1,type=RTX3090;nodes=1,gpus_per_node=1,type=A100-80GB;"
        "nodes=1,gpus_per_node=1,type=T4");
  json& spec = review_["request"]["object"]["spec"];
  // The annotations gpucast writes, less the signature (which is over the whole pod).
  auto written = [&](const json& resp) {
    EXPECT_EQ(resp["allowed"], true) << resp.dump();
    json pod = review_["request"]["object"].patch(json::parse(FromBase64(resp["patch"])));
    json a = pod["metadata"]["annotations"];
    a.erase("gpucast.io/share-signature");
    a.erase("gpucast.io/gpu");
    return std::make_pair(a, pod);
  };
  auto filter = [&](const json& pod) {
    return Body(PostJson("/k8s/v1/filter", {{"Pod", pod}, {"NodeNames", {"gpu-a", "gpu-b", "gpu-c"}}}))["NodeNames"];
  };
  Annotations()["gpucast.io/gpu"] = "A100-80GB";
  auto [want, named] = written(Mutate());
  EXPECT_EQ(want["gpucast.io/predicted-gpu"], "A100-80GB");
  EXPECT_EQ(filter(named), json::array({"gpu-b"}));
  Annotations().erase("gpucast.io/gpu");

  spec["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
  auto [by_selector, pod1] = written(Mutate());
  EXPECT_EQ(by_selector, want);
  EXPECT_EQ(filter(pod1), json::array({"gpu-b"}));
  spec.erase("nodeSelector");
  spec["affinity"] = {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution",
                                         {{"nodeSelectorTerms", {{{"matchExpressions", {{{"key", "nvidia.com/gpu.product"},
                                                                                         {"operator", "In"},
                                                                                         {"values", {"NVIDIA-A100-SXM4-80GB"}}}}}}}}}}}}};
  auto [by_affinity, pod2] = written(Mutate());
  EXPECT_EQ(by_affinity, want);
  EXPECT_EQ(filter(pod2), json::array({"gpu-b"}));

  // Several products: the cluster's types among them (cluster order), one share entry each.
  json& values = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                     [0]["matchExpressions"][0]["values"];
  values = {"Tesla-T4", "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"};
  auto [several, pod3] = written(Mutate());
  EXPECT_EQ(several["gpucast.io/predicted-gpu"], "A100-80GB,T4");
  EXPECT_EQ(several["gpucast.io/predicted-util"], "A100-80GB=40.00,T4=40.00");
  EXPECT_EQ(several["gpucast.io/share"],
            "gpu=A100-80GB,gpus=1,util=40.00,mem_mib=0,cores=45;gpu=T4,gpus=1,util=40.00,mem_mib=0,cores=45");
  EXPECT_EQ(filter(pod3), json::array({"gpu-b", "gpu-c"}));
  // None of the cluster's types: denied, naming the products and the types.
  values = {"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-40GB"};
  json resp = Mutate();
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_EQ(resp["status"]["message"],
            "gpucast: pod ml/resnet50-train: required node affinity nvidia.com/gpu.product in (NVIDIA-H100-80GB-HBM3, "
            "NVIDIA-A100-SXM4-40GB): allows the GPU types H100, A100-40GB, none of which the cluster has (RTX3090, "
            "A100-80GB, T4): no node can take the pod");
  // gpucast.io/gpu naming another GPU than the product, and a product gpucast does not know: denied.
  spec.erase("affinity");
  spec["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
  Annotations()["gpucast.io/gpu"] = "RTX3090";
  EXPECT_EQ(Mutate()["status"]["message"],
            "gpucast: pod ml/resnet50-train: annotation gpucast.io/gpu 'RTX3090' and node selector "
            "nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB name different GPUs (RTX3090, A100-80GB); give one");
  spec["nodeSelector"]["nvidia.com/gpu.product"] = "NVIDIA-Z900";
  EXPECT_THAT(Mutate()["status"]["message"].get<std::string>(),
              HasSubstr("gpucast: pod ml/resnet50-train: node selector nvidia.com/gpu.product=NVIDIA-Z900: unknown GPU "
                        "'NVIDIA-Z900'; closest: "));
}

// One GPU type (RTX3090): a pod whose products allow several types is predicted for the cluster's
// if they include it, and denied if not.
TEST_F(K8sRoutesTest, AOneTypeClustersPodWhoseProductsLeaveOutItsTypeIsDenied) {
  Start();
  json& spec = review_["request"]["object"]["spec"];
  spec["affinity"] = {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution",
                                         {{"nodeSelectorTerms", {{{"matchExpressions", {{{"key", "nvidia.com/gpu.product"},
                                                                                         {"operator", "In"},
                                                                                         {"values", {"NVIDIA-GeForce-RTX-3090", "Tesla-T4"}}}}}}}}}}}}};
  json resp = Mutate();
  ASSERT_EQ(resp["allowed"], true) << resp.dump();
  json pod = review_["request"]["object"].patch(json::parse(FromBase64(resp["patch"])));
  EXPECT_EQ(pod["metadata"]["annotations"]["gpucast.io/predicted-gpu"], "RTX3090");
  spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
      ["matchExpressions"][0]["values"] = {"NVIDIA-A100-SXM4-80GB", "Tesla-T4"};
  EXPECT_EQ(Mutate()["status"]["message"],
            "gpucast: pod ml/resnet50-train: required node affinity nvidia.com/gpu.product in (NVIDIA-A100-SXM4-80GB, "
            "Tesla-T4): allows the GPU types A100-80GB, T4, none of which the cluster has (RTX3090): no node can take "
            "the pod");
}

}  // namespace
}  // namespace gpucast::service

namespace gpucast::service {
namespace {

std::string Fixed(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// A pod on a MIG slice (the device plugin's mixed strategy,
// nvidia.com/mig-<profile>: 1) is predicted on that slice through the path
// of POST /v1/predict: the real engine (the physics predictor trained on the
// shared Lucid data, the VGG graph of models/), and the webhook's annotations
// are the API's reply for {"mig": <profile>} on the same GPU, as it rounds
// them. The share is left as the pod asked (a slice is isolated).
TEST_F(K8sRoutesTest, AMigPodIsPredictedOnItsSliceAsTheApiPredictsIt) {
  const std::string vgg = WriteLucidPredictorAndVgg(dir_);
  auto engine = LucidEngine(dir_);
  ASSERT_TRUE(engine);
  Start("nodes=2,gpus_per_node=1,type=A100-80GB", std::move(engine));
  json& c = review_["request"]["object"]["spec"]["containers"][0];
  c["resources"] = {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}, {"requests", {{"nvidia.com/mig-1g.10gb", "1"}}}};
  Annotations()["gpucast.io/model"] = vgg;
  Annotations()["gpucast.io/batch"] = "8";
  json resp = Mutate();
  ASSERT_EQ(resp["allowed"], true) << resp.dump();
  json pod = review_["request"]["object"].patch(json::parse(FromBase64(resp["patch"])));
  EXPECT_EQ(pod["spec"], review_["request"]["object"]["spec"]);  // the MIG request is left as it is
  const json& a = pod["metadata"]["annotations"];
  auto api = PostJson("/v1/predict", {{"model", vgg}, {"batch", 8}, {"mig", "1g.10gb"}});
  ASSERT_TRUE(api);
  ASSERT_EQ(api->status, 200) << api->body;
  const json want = Body(api);
  EXPECT_EQ(want["gpu"], "A100-80GB");
  EXPECT_EQ(want["mig_profile"], "1g.10gb");
  EXPECT_EQ(a["gpucast.io/predicted-gpu"], "A100-80GB");
  EXPECT_EQ(a["gpucast.io/predicted-mig"], "1g.10gb");
  EXPECT_EQ(a["gpucast.io/predicted-util"], Fixed("%.2f", want["predicted_util"].get<double>()));
  EXPECT_EQ(a["gpucast.io/predicted-util-interval"], Fixed("%.2f", want["predicted_util_interval"][0].get<double>()) + "-" +
                                                         Fixed("%.2f", want["predicted_util_interval"][1].get<double>()));
  ASSERT_TRUE(want["gpu_mem_mib"].is_number()) << want.dump();
  EXPECT_EQ(a["gpucast.io/predicted-mem-mib"], Fixed("%.0f", std::ceil(want["gpu_mem_mib"].get<double>() - 1e-9)));
  EXPECT_EQ(a["gpucast.io/predicted-mem-interval-mib"],
            Fixed("%.0f", std::floor(want["gpu_mem_interval"]["low"].get<double>())) + "-" +
                Fixed("%.0f", std::ceil(want["gpu_mem_interval"]["high"].get<double>() - 1e-9)));
  ASSERT_TRUE(want["step_ms"].is_number()) << want.dump();
  EXPECT_EQ(a["gpucast.io/predicted-step-ms"], Fixed("%.1f", want["step_ms"].get<double>()));
  EXPECT_EQ(a["gpucast.io/predicted-step-ms-interval"], Fixed("%.1f", want["step_ms_interval"]["low"].get<double>()) + "-" +
                                                            Fixed("%.1f", want["step_ms_interval"]["high"].get<double>()));
  EXPECT_THAT(a["gpucast.io/share"].get<std::string>(), ::testing::EndsWith(",mig=1g.10gb"));
  EXPECT_TRUE(k8s::ShareVerifies(opts_.k8s.share_key, "ml", pod));
  // The slice, not the whole GPU: the API's whole-A100 prediction differs from the slice's (at
  // batch 8 the step is the host's on either, so the utilization: a seventh of the SMs is busier).
  auto whole = PostJson("/v1/predict", {{"model", vgg}, {"batch", 8}});
  ASSERT_EQ(whole->status, 200) << whole->body;
  EXPECT_LT(Body(whole)["predicted_util"].get<double>(), want["predicted_util"].get<double>());
  // The extender passes the nodes of its type at the top score; the slice is not a share of a whole GPU.
  auto f = PostJson("/k8s/v1/prioritize", {{"Pod", pod}, {"NodeNames", {"gpu-a", "gpu-b"}}});
  EXPECT_EQ(Body(f), json::parse(R"([{"Host": "gpu-a", "Score": 10}, {"Host": "gpu-b", "Score": 10}])"));

  // The single strategy: nvidia.com/gpu 1 on nodes selected by their MIG product label.
  c["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}}}};
  review_["request"]["object"]["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "A100-SXM4-80GB-MIG-1g.10gb"}};
  resp = Mutate();
  ASSERT_EQ(resp["allowed"], true) << resp.dump();
  json single = review_["request"]["object"].patch(json::parse(FromBase64(resp["patch"])));
  EXPECT_EQ(single["spec"], review_["request"]["object"]["spec"]);
  for (const char* k : {"gpucast.io/predicted-util", "gpucast.io/predicted-mem-mib", "gpucast.io/predicted-step-ms",
                        "gpucast.io/predicted-mig", "gpucast.io/predicted-gpu"}) {
    EXPECT_EQ(single["metadata"]["annotations"][k], a[k]) << k;
  }
  review_["request"]["object"]["spec"].erase("nodeSelector");
  // The same product required by node affinity (terms ORed, a -SHARED one the same slice): the same.
  auto product_in = [](const char* v) {
    return json{{"matchExpressions", {{{"key", "nvidia.com/gpu.product"}, {"operator", "In"}, {"values", {v}}}}}};
  };
  review_["request"]["object"]["spec"]["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           {product_in("A100-SXM4-80GB-MIG-1g.10gb"), product_in("A100-SXM4-80GB-MIG-1g.10gb-SHARED")}}}}}}};
  resp = Mutate();
  ASSERT_EQ(resp["allowed"], true) << resp.dump();
  json by_affinity = review_["request"]["object"].patch(json::parse(FromBase64(resp["patch"])));
  EXPECT_EQ(by_affinity["spec"], review_["request"]["object"]["spec"]);
  for (const char* k : {"gpucast.io/predicted-util", "gpucast.io/predicted-mem-mib", "gpucast.io/predicted-step-ms",
                        "gpucast.io/predicted-mig", "gpucast.io/predicted-gpu", "gpucast.io/share"}) {
    EXPECT_EQ(by_affinity["metadata"]["annotations"][k], single["metadata"]["annotations"][k]) << k;
  }
  // Two slices allowed: denied, naming the pod and the products.
  review_["request"]["object"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
         ["nodeSelectorTerms"][1] = product_in("A100-SXM4-80GB-MIG-2g.20gb");
  resp = Mutate();
  ASSERT_EQ(resp["allowed"], false) << resp.dump();
  EXPECT_THAT(resp["status"]["message"].get<std::string>(),
              HasSubstr("gpucast: pod ml/resnet50-train: required node affinity nvidia.com/gpu.product in ("
                        "A100-SXM4-80GB-MIG-1g.10gb, "
                        "A100-SXM4-80GB-MIG-2g.20gb): the pod may land on different MIG slices"));
  review_["request"]["object"]["spec"].erase("affinity");

  // Memory the slice does not have: denied with the API's capacity of the slice. The first
  // batch (doubling from 128) whose memory high end the API puts above the slice's.
  int64_t batch = 128;
  for (; batch <= 8192; batch *= 2) {
    auto big = PostJson("/v1/predict", {{"model", vgg}, {"batch", batch}, {"mig", "1g.10gb"}});
    ASSERT_EQ(big->status, 200) << big->body;
    EXPECT_EQ(Body(big)["gpu_mem_capacity_mib"], 9728);
    if (Body(big)["gpu_mem_interval"]["high"].get<double>() > 9728) break;
  }
  ASSERT_LE(batch, 8192) << "no batch up to 8192 exceeds the slice";
  Annotations()["gpucast.io/batch"] = std::to_string(batch);
  c["resources"] = {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}};
  resp = Mutate();
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_THAT(resp["status"]["message"].get<std::string>(),
              HasSubstr("the A100-80GB MIG 1g.10gb slice's 9728 MiB (nvidia.com/mig-1g.10gb)"));
  Annotations()["gpucast.io/batch"] = "8";

  // Unknown and malformed profiles name the container and the resource; a profile the GPU lacks too.
  const std::pair<std::string, std::string> bad[] = {
      {"nvidia.com/mig-7g.99gb",
       "gpucast: pod ml/resnet50-train: container train: resources.limits.nvidia.com/mig-7g.99gb: unknown MIG "
       "profile '7g.99gb' (MIG profiles of gpucast's GPUs: "},
      {"nvidia.com/mig-",
       "gpucast: pod ml/resnet50-train: container train: resources.limits.nvidia.com/mig-: no MIG profile after "
       "'nvidia.com/mig-'"},
      {"nvidia.com/mig-1g.5gb",
       "gpucast: pod ml/resnet50-train: container train: nvidia.com/mig-1g.5gb: GPU 'A100-80GB' has no MIG profile "
       "'1g.5gb' (profiles: 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)"},
  };
  for (const auto& [resource, message] : bad) {
    c["resources"] = {{"limits", {{resource, "1"}}}};
    resp = Mutate();
    EXPECT_EQ(resp["allowed"], false) << resource;
    EXPECT_THAT(resp["status"]["message"].get<std::string>(), ::testing::StartsWith(message)) << resource;
  }
  // The API: a profile no GPU has is a bad request (400, as an unknown GPU); one the GPU lacks, 422.
  auto r = PostJson("/v1/predict", {{"model", vgg}, {"batch", 8}, {"mig", "7g.99gb"}});
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Error(r), ::testing::StartsWith("field 'mig': unknown MIG profile '7g.99gb' (MIG profiles of "));
  r = PostJson("/v1/predict", {{"model", vgg}, {"batch", 8}, {"mig", "1g.5gb"}});
  EXPECT_EQ(r->status, 422);
  EXPECT_THAT(Error(r), HasSubstr("GPU 'A100-80GB' has no MIG profile '1g.5gb' (profiles: 1g.10gb, "));
  r = PostJson("/v1/predict", {{"model", vgg}, {"batch", 8}, {"gpu", "RTX3900"}});
  EXPECT_EQ(r->status, 400);
}

// The real engine (the physics predictor on the shared Lucid data, the VGG graph): on a mixed cluster
// (T4, A100-80GB) a pod that pins NVIDIA-A100-SXM4-80GB by nodeSelector or by required node affinity
// gets the annotations of the pod that says gpucast.io/gpu: A100-80GB, which are the API's
// prediction for the A100-80GB (not the T4's, which differs), and the extender keeps the A100 node.
TEST_F(K8sRoutesTest, AProductPinnedPodIsPredictedForItsGpuAsTheApiPredictsIt) {
  const std::string vgg = WriteLucidPredictorAndVgg(dir_);
  auto engine = LucidEngine(dir_);
  ASSERT_TRUE(engine);
  Start("nodes=1,gpus_per_node=1,type=T4;nodes=1,gpus_per_node=1,type=A100-80GB", std::move(engine));
  Annotations()["gpucast.io/model"] = vgg;
  Annotations()["gpucast.io/batch"] = "8";
  json& spec = review_["request"]["object"]["spec"];
  auto written = [&]() {
    json resp = Mutate();
    EXPECT_EQ(resp["allowed"], true) << resp.dump();
    json pod = review_["request"]["object"].patch(json::parse(FromBase64(resp["patch"])));
    EXPECT_EQ(Body(PostJson("/k8s/v1/filter", {{"Pod", pod}, {"NodeNames", {"gpu-a", "gpu-b"}}}))["NodeNames"],
              json::array({"gpu-b"}));
    json a = pod["metadata"]["annotations"];
    a.erase("gpucast.io/share-signature");
    a.erase("gpucast.io/gpu");
    return a;
  };
  Annotations()["gpucast.io/gpu"] = "A100-80GB";
  const json want = written();
  Annotations().erase("gpucast.io/gpu");
  auto api = [&](const char* gpu) {
    auto r = PostJson("/v1/predict", {{"model", vgg}, {"batch", 8}, {"gpu", gpu}});
    EXPECT_EQ(r->status, 200) << r->body;
    return Body(r);
  };
  const json a100 = api("A100-80GB"), t4 = api("T4");
  EXPECT_EQ(want["gpucast.io/predicted-gpu"], "A100-80GB");
  EXPECT_EQ(want["gpucast.io/predicted-util"], Fixed("%.2f", a100["predicted_util"].get<double>()));
  EXPECT_EQ(want["gpucast.io/predicted-step-ms"], Fixed("%.1f", a100["step_ms"].get<double>()));
  EXPECT_NE(Fixed("%.1f", t4["step_ms"].get<double>()), Fixed("%.1f", a100["step_ms"].get<double>()));

  spec["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
  EXPECT_EQ(written(), want);
  spec.erase("nodeSelector");
  spec["affinity"] = {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution",
                                         {{"nodeSelectorTerms", {{{"matchExpressions", {{{"key", "nvidia.com/gpu.product"},
                                                                                         {"operator", "In"},
                                                                                         {"values", {"NVIDIA-A100-SXM4-80GB"}}}}}}}}}}}}};
  EXPECT_EQ(written(), want);
}

// A mixed cluster's MIG pod that names no GPU is predicted for the types that have its profile
// (the fake engine: util 10 x batch); a profile none of them has is refused naming the types.
TEST_F(K8sRoutesTest, AMixedClustersMigPodIsPredictedForTheTypesWithTheProfile) {
  Start("nodes=1,gpus_per_node=1,type=RTX3090;nodes=1,gpus_per_node=1,type=A100-80GB");
  json& c = review_["request"]["object"]["spec"]["containers"][0];
  c["resources"] = {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}};
  json resp = Mutate();
  ASSERT_EQ(resp["allowed"], true) << resp.dump();
  json pod = review_["request"]["object"].patch(json::parse(FromBase64(resp["patch"])));
  EXPECT_EQ(pod["metadata"]["annotations"]["gpucast.io/predicted-gpu"], "A100-80GB");
  EXPECT_EQ(pod["metadata"]["annotations"]["gpucast.io/share"], "gpu=A100-80GB,gpus=1,util=40.00,mem_mib=0,mig=1g.10gb");
  // The fake engine predicts no memory: the slice's memory is not checked, and kubectl says so.
  EXPECT_THAT(resp["warnings"][0].get<std::string>(),
              HasSubstr("no memory model: whether the job fits the MIG 1g.10gb slice's memory is not checked"));
  c["resources"] = {{"limits", {{"nvidia.com/mig-1g.5gb", "1"}}}};
  EXPECT_EQ(Mutate()["status"]["message"],
            "gpucast: pod ml/resnet50-train: container train: nvidia.com/mig-1g.5gb: no GPU type of the cluster "
            "(RTX3090, A100-80GB) has MIG profile '1g.5gb'");
}

// --k8s-fail-open: a pod with an unknown MIG profile is let through unchanged, with the reason as a warning.
TEST_F(K8sRoutesTest, FailOpenAllowsAnUnknownMigProfileWithAWarning) {
  opts_.k8s.fail_open = true;
  Start();
  review_["request"]["object"]["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-7g.99gb", "1"}}}};
  json resp = Mutate();
  EXPECT_EQ(resp["allowed"], true);
  EXPECT_FALSE(resp.contains("patch"));
  EXPECT_THAT(resp["warnings"][0].get<std::string>(),
              HasSubstr("container train: resources.limits.nvidia.com/mig-7g.99gb: unknown MIG profile '7g.99gb'"));
  EXPECT_THAT(resp["warnings"][0].get<std::string>(), HasSubstr("(allowed unchanged, without a gpucast share)"));
}

}  // namespace
}  // namespace gpucast::service
