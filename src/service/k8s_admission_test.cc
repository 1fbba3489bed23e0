// AdmissionReview parsing, pod annotations -> job, and the JSONPatch of a
// pod's share. The patches are applied with nlohmann::json::patch (an
// independent RFC 6902 implementation); tests/k8s_test.sh applies them with
// kubectl as well.
#include "service/k8s_admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

namespace gpucast::service::k8s {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An AdmissionReview as the API server sends it for `kubectl apply` of a pod
// (envelope: "Dynamic Admission Control", Request; the pod after defaulting
// and the ServiceAccount admission plugin).
std::string Fixture() {
  std::ifstream in(std::string(GPUCAST_SOURCE_DIR) + "/tests/k8s/review-create-pod.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json FixturePod() { return json::parse(Fixture())["request"]["object"]; }

TEST(ParseAdmissionReview, ReadsTheApiServersReview) {
  Result<AdmissionRequest> r = ParseAdmissionReview(Fixture());
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->uid, "8c5ab4f5-6393-41e8-b7cc-42010a800002");
  EXPECT_EQ(r->kind, "Pod");
  EXPECT_EQ(r->version, "v1");
  EXPECT_EQ(r->group, "");
  EXPECT_EQ(r->operation, "CREATE");
  EXPECT_EQ(r->ns, "ml");
  EXPECT_EQ(r->name, "resnet50-train");
  EXPECT_FALSE(r->dry_run);
  EXPECT_EQ(r->object["spec"]["containers"][0]["name"], "train");
}

TEST(ParseAdmissionReview, MalformedReviewsNameTheField) {
  json ok = json::parse(Fixture());
  auto msg = [](const json& j) { return ParseAdmissionReview(j.dump()).message(); };
  EXPECT_THAT(ParseAdmissionReview("{\"apiVersion\": ").message(), HasSubstr("AdmissionReview: malformed JSON"));
  EXPECT_THAT(ParseAdmissionReview("[1]").message(), HasSubstr("AdmissionReview: want a JSON object"));
  json j = ok;
  j["apiVersion"] = "admission.k8s.io/v1beta1";
  EXPECT_THAT(msg(j), HasSubstr("field 'apiVersion': want \"admission.k8s.io/v1\" (set admissionReviewVersions"));
  j = ok;
  j["kind"] = "Pod";
  EXPECT_THAT(msg(j), HasSubstr("field 'kind': want \"AdmissionReview\""));
  j = ok;
  j.erase("request");
  EXPECT_THAT(msg(j), HasSubstr("field 'request': want an object"));
  j = ok;
  j["request"]["uid"] = "";
  EXPECT_THAT(msg(j), HasSubstr("field 'request.uid': want a non-empty string"));
  j["request"]["uid"] = std::string(300, 'u');
  EXPECT_THAT(msg(j), HasSubstr("field 'request.uid'"));
  j = ok;
  j["request"]["kind"] = "Pod";
  EXPECT_THAT(msg(j), HasSubstr("field 'request.kind': want an object"));
  j = ok;
  j["request"]["operation"] = "PATCH";
  EXPECT_THAT(msg(j), HasSubstr("field 'request.operation': want CREATE, UPDATE, DELETE or CONNECT, got PATCH"));
  j = ok;
  j["request"]["object"] = "pod";
  EXPECT_THAT(msg(j), HasSubstr("field 'request.object': want an object"));
  j = ok;
  j["request"]["dryRun"] = "no";
  EXPECT_THAT(msg(j), HasSubstr("field 'request.dryRun': want true or false"));
}

TEST(ReadPodJob, AnnotationsBecomeThePredictRequest) {
  Result<PodJob> job = ReadPodJob(FixturePod());
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_TRUE(job->annotated);
  EXPECT_EQ(job->request, json::parse(R"({"model": "resnet50.onnx", "batch": 64, "gpus": 1,
                                          "attrs": {"loader_workers": "4"}})"));
  EXPECT_EQ(job->container, 0);
  EXPECT_EQ(job->container_name, "train");
  EXPECT_EQ(job->gpus, 1);
  EXPECT_EQ(job->gpu, "");
}

TEST(ReadPodJob, EveryInputAnnotation) {
  json pod = FixturePod();
  auto& a = pod["metadata"]["annotations"];
  a["gpucast.io/model"] = "gan/g.onnx, gan/d.onnx,gan/d.onnx";
  a["gpucast.io/dims"] = "seq=128, heads=12";
  a["gpucast.io/amp"] = "true";
  a["gpucast.io/gpu"] = "NVIDIA A100-SXM4-80GB";
  a["gpucast.io/predicted-util"] = "12.00";  // a stale output is not an input
  Result<PodJob> job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->request["models"], json::parse(R"([{"path": "gan/g.onnx", "repeat": 1},
                                                    {"path": "gan/d.onnx", "repeat": 2}])"));
  EXPECT_FALSE(job->request.contains("model"));
  EXPECT_EQ(job->request["dims"], json::parse(R"({"seq": 128, "heads": 12})"));
  EXPECT_EQ(job->request["amp"], true);
  EXPECT_EQ(job->gpu, "NVIDIA A100-SXM4-80GB");
}

TEST(ReadPodJob, AnUnannotatedPodIsNotGpucasts) {
  json pod = FixturePod();
  for (const char* k : {"gpucast.io/model", "gpucast.io/batch", "gpucast.io/attrs"}) pod["metadata"]["annotations"].erase(k);
  pod["metadata"]["annotations"]["gpucast.io/share"] = "gpu=RTX3090,gpus=1,util=10";
  Result<PodJob> job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_FALSE(job->annotated);
  pod["metadata"].erase("annotations");
  job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_FALSE(job->annotated);
}

TEST(ReadPodJob, BadAnnotationsAndContainersAreTheUsersToFix) {
  auto msg = [](json pod) { return ReadPodJob(pod).message(); };
  json pod = FixturePod();
  pod["metadata"]["annotations"].erase("gpucast.io/batch");
  EXPECT_THAT(msg(pod), HasSubstr("annotation gpucast.io/batch: missing (the per-GPU batch size"));
  pod = FixturePod();
  pod["metadata"]["annotations"]["gpucast.io/batch"] = "big";
  EXPECT_THAT(msg(pod), HasSubstr("annotation gpucast.io/batch: want an integer, got 'big'"));
  // The value quoted: control bytes as '?' (UTF-8 kept), cut at 64 bytes with "...".
  pod["metadata"]["annotations"]["gpucast.io/batch"] = "8\x1b[2J\xc3\xa9" + std::string(70, 'x');
  EXPECT_THAT(msg(pod), HasSubstr("annotation gpucast.io/batch: want an integer, got '8?[2J\xc3\xa9" +
                                  std::string(57, 'x') + "...'"));
  pod = FixturePod();
  pod["metadata"]["annotations"].erase("gpucast.io/model");
  EXPECT_THAT(msg(pod), HasSubstr("annotation gpucast.io/model: missing"));
  pod = FixturePod();
  pod["metadata"]["annotations"]["gpucast.io/model"] = "a.onnx,,b.onnx";
  EXPECT_THAT(msg(pod), HasSubstr("annotation gpucast.io/model: empty path in 'a.onnx,,b.onnx'"));
  pod = FixturePod();
  pod["metadata"]["annotations"]["gpucast.io/bacth"] = "64";
  EXPECT_THAT(msg(pod), HasSubstr("annotation gpucast.io/bacth: unknown (gpucast reads gpucast.io/model"));
  pod = FixturePod();
  pod["metadata"]["annotations"]["gpucast.io/dims"] = "seq=long";
  EXPECT_THAT(msg(pod), HasSubstr("annotation gpucast.io/dims: 'seq=long': want NAME=INTEGER"));
  pod = FixturePod();
  pod["metadata"]["annotations"]["gpucast.io/attrs"] = "loader_workers";
  EXPECT_THAT(msg(pod), HasSubstr("annotation gpucast.io/attrs: 'loader_workers': want NAME=VALUE items"));
  pod = FixturePod();
  pod["metadata"]["annotations"]["gpucast.io/amp"] = "yes";
  EXPECT_THAT(msg(pod), HasSubstr("annotation gpucast.io/amp: want true, false, 1 or 0, got 'yes'"));
  pod = FixturePod();
  pod["spec"]["containers"][0]["resources"] = json::object();
  EXPECT_THAT(msg(pod), HasSubstr("no container asks for nvidia.com/gpu or nvidia.com/mig-<profile>: gpucast sizes"));
  pod = FixturePod();
  pod["spec"]["containers"][1]["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}}}};
  EXPECT_THAT(msg(pod), HasSubstr("2 containers ask for GPUs (train, log-shipper)"));
  pod = FixturePod();
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "500m";
  EXPECT_THAT(msg(pod), HasSubstr("container train: resources.limits.nvidia.com/gpu: want a whole number of GPUs"));
}

TEST(ReadPodJob, GpusComeFromLimitsOrRequests) {
  json pod = FixturePod();
  pod["spec"]["containers"][0]["resources"] = {{"requests", {{"nvidia.com/gpu", 2}}}};
  Result<PodJob> job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->gpus, 2);
  EXPECT_EQ(job->request["gpus"], 2);
}

// A MIG slice as the NVIDIA device plugin's mixed strategy exposes it:
// nvidia.com/mig-<profile>: 1 in the container's limits (or requests). The
// job is the request of POST /v1/predict with "mig": the profile.
json MigPod(const std::string& resource = "nvidia.com/mig-1g.10gb", const json& count = "1") {
  json pod = FixturePod();
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{resource, count}}}, {"requests", {{resource, count}}}};
  return pod;
}

TEST(ReadPodJob, AMixedStrategyMigResourceIsTheSliceOfThePredictRequest) {
  Result<PodJob> job = ReadPodJob(MigPod());
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->request, json::parse(R"({"model": "resnet50.onnx", "batch": 64, "gpus": 1, "mig": "1g.10gb",
                                          "attrs": {"loader_workers": "4"}})"));
  EXPECT_EQ(job->mig, "1g.10gb");
  EXPECT_EQ(job->mig_resource, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(job->container_name, "train");
  EXPECT_EQ(job->gpus, 1);
  // Requests alone (limits say nothing of GPUs) and a count written as a number.
  json pod = FixturePod();
  pod["spec"]["containers"][0]["resources"] = {{"requests", {{"nvidia.com/mig-3g.40gb", 1}}}};
  job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->request["mig"], "3g.40gb");
  // A zero count is no slice (as nvidia.com/gpu: 0 is no GPU).
  EXPECT_THAT(ReadPodJob(MigPod("nvidia.com/mig-1g.10gb", "0")).message(), HasSubstr("no container asks for"));
}

TEST(ReadPodJob, UnknownOrMalformedMigResourcesNameTheContainerAndTheResource) {
  EXPECT_EQ(ReadPodJob(MigPod("nvidia.com/mig-7g.99gb")).message(),
            "container train: resources.limits.nvidia.com/mig-7g.99gb: unknown MIG profile '7g.99gb' (MIG profiles "
            "of gpucast's GPUs: 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb, 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb, "
            "7g.80gb, 1g.20gb, 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb; gpucast gpus --json lists each "
            "GPU's)");
  EXPECT_EQ(ReadPodJob(MigPod("nvidia.com/mig-")).message(),
            "container train: resources.limits.nvidia.com/mig-: no MIG profile after 'nvidia.com/mig-' (the NVIDIA "
            "device plugin's mixed strategy names a slice nvidia.com/mig-<profile>, e.g. nvidia.com/mig-1g.10gb)");
  EXPECT_EQ(ReadPodJob(MigPod("nvidia.com/mig-1g.10gb", "2")).message(),
            "container train: resources.limits.nvidia.com/mig-1g.10gb: want 1, got 2: gpucast predicts one training "
            "job on one MIG slice (a job across several slices is not modelled)");
  EXPECT_THAT(ReadPodJob(MigPod("nvidia.com/mig-1g.10gb", "half")).message(),
              HasSubstr("container train: resources.limits.nvidia.com/mig-1g.10gb: want a whole number of GPUs"));
  json pod = MigPod();
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1";
  EXPECT_EQ(ReadPodJob(pod).message(),
            "container train: asks for nvidia.com/gpu and nvidia.com/mig-1g.10gb: give the training container "
            "either whole GPUs or one MIG slice");
  pod = MigPod();
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-2g.20gb"] = "1";
  EXPECT_EQ(ReadPodJob(pod).message(),
            "container train: resources.limits: asks for two MIG slices (nvidia.com/mig-1g.10gb, "
            "nvidia.com/mig-2g.20gb): gpucast predicts one training job on one slice");
  // A slice in another container too: one training job per pod.
  pod = MigPod();
  pod["spec"]["containers"][1]["resources"] = {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}};
  EXPECT_THAT(ReadPodJob(pod).message(), HasSubstr("2 containers ask for GPUs (train, log-shipper)"));
}

// PodSpec.nodeSelector is map[string]string (k8s.io/api/core/v1): a value of another type, or a
// selector that is no object, is refused naming it; before, a non-string product was ignored and
// the pod predicted on the whole GPU of the --cluster. null (omitted) is no selector.
TEST(ReadPodJob, ANodeSelectorThatIsNoMapOfStringsIsRefused) {
  json pod = FixturePod();
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", 7}};
  EXPECT_EQ(ReadPodJob(pod).message(), "the pod: spec.nodeSelector.nvidia.com/gpu.product: want a string (a label value), got 7");
  pod["spec"]["nodeSelector"] = {{"zone", {{"a", 1}}}, {"nvidia.com/gpu.product", "A100-SXM4-40GB-MIG-1g.5gb"}};
  EXPECT_EQ(ReadPodJob(pod).message(), "the pod: spec.nodeSelector.zone: want a string (a label value), got {\"a\":1}");
  pod["spec"]["nodeSelector"] = json::array({"nvidia.com/gpu.product"});
  EXPECT_EQ(ReadPodJob(pod).message(), "the pod: spec.nodeSelector: want an object of strings");
  pod["spec"]["nodeSelector"] = nullptr;
  Result<PodJob> job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->mig, "");
}

// The single strategy: nvidia.com/gpu on nodes labelled nvidia.com/gpu.product=<GPU>-MIG-<profile>,
// which the pod selects.
TEST(ReadPodJob, ASingleStrategyNodeSelectorNamesTheGpuAndTheSlice) {
  json pod = FixturePod();
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "A100-SXM4-40GB-MIG-1g.5gb"},
                                 {"nvidia.com/mig.strategy", "single"}};
  Result<PodJob> job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->gpu, "A100-SXM4-40GB");
  EXPECT_EQ(job->mig, "1g.5gb");
  EXPECT_EQ(job->mig_resource, "nvidia.com/gpu");
  EXPECT_EQ(job->request["mig"], "1g.5gb");
  // The same GPU named by the annotation (another spelling) agrees; another does not.
  pod["metadata"]["annotations"]["gpucast.io/gpu"] = "A100-40GB";
  EXPECT_TRUE(ReadPodJob(pod).ok()) << ReadPodJob(pod).message();
  pod["metadata"]["annotations"]["gpucast.io/gpu"] = "H100";
  EXPECT_EQ(ReadPodJob(pod).message(),
            "annotation gpucast.io/gpu 'H100' and node selector nvidia.com/gpu.product=A100-SXM4-40GB-MIG-1g.5gb "
            "name different GPUs (H100, A100-40GB); give one");
  pod["metadata"]["annotations"].erase("gpucast.io/gpu");
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2";
  EXPECT_EQ(ReadPodJob(pod).message(),
            "container train: resources.nvidia.com/gpu 2 on node selector "
            "nvidia.com/gpu.product=A100-SXM4-40GB-MIG-1g.5gb: want 1 (each is one MIG slice; gpucast predicts one "
            "training job on one slice)");
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1";
  pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "A100-SXM4-40GB-MIG-9g.9gb";
  EXPECT_THAT(ReadPodJob(pod).message(),
              HasSubstr("node selector nvidia.com/gpu.product=A100-SXM4-40GB-MIG-9g.9gb: unknown MIG profile '9g.9gb'"));
  // Time-sliced slices (-SHARED appended): the same slice.
  pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "A100-SXM4-40GB-MIG-1g.5gb-SHARED";
  job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->mig, "1g.5gb");
  // A product without -MIG- is a whole GPU, as before.
  pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "A100-SXM4-40GB";
  job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->mig, "");
  EXPECT_FALSE(job->request.contains("mig"));
}

// spec.affinity with a required nodeSelectorTerms list (terms ORed, expressions ANDed).
json RequiredAffinity(json terms) {
  return {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
}
json ProductIn(json values, const char* op = "In") {
  return {{"key", "nvidia.com/gpu.product"}, {"operator", op}, {"values", values}};
}

// A whole-GPU product as GPU feature discovery labels it (the nvidia-smi name, spaces as '-')
// is the pod's GPU type, in nodeSelector or required node affinity: the job of gpucast.io/gpu.
TEST(ReadPodJob, AWholeGpuProductLabelIsThePodsGpuType) {
  json named = FixturePod();
  named["metadata"]["annotations"]["gpucast.io/gpu"] = "A100-80GB";
  Result<PodJob> want = ReadPodJob(named);
  ASSERT_TRUE(want.ok()) << want.message();
  auto pinned = [&](const json& pod, const std::string& gpu) {
    Result<PodJob> job = ReadPodJob(pod);
    ASSERT_TRUE(job.ok()) << job.message();
    EXPECT_EQ(job->gpu, gpu);
    EXPECT_THAT(job->gpu_types, ElementsAre(gpu));
    EXPECT_EQ(job->mig, "");
    EXPECT_EQ(job->request, want->request);
  };
  json pod = FixturePod();
  pod["metadata"]["annotations"].erase("gpucast.io/gpu");
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
  pinned(pod, "A100-80GB");
  // Time-slicing's -SHARED, other GPUs' labels (the nvidia-smi name itself, with its space, is no
  // label value: AProductThatIsNoLabelValueIsAnError).
  pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB-SHARED";
  pinned(pod, "A100-80GB");
  pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "Tesla-T4";
  pinned(pod, "T4");
  pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3";
  pinned(pod, "H100");
  pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] = "Tesla-V100-SXM2-16GB";
  pinned(pod, "V100-16GB");
  // By required node affinity: the same; two spellings of one GPU are one type.
  pod["spec"].erase("nodeSelector");
  pod["spec"]["affinity"] = RequiredAffinity(
      {{{"matchExpressions", {ProductIn({"NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB-SHARED"})}}}});
  pinned(pod, "A100-80GB");
  // gpucast.io/gpu naming the same GPU agrees.
  pod["metadata"]["annotations"]["gpucast.io/gpu"] = "A100 80GB";
  Result<PodJob> job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->gpu, "A100 80GB");
  pod["metadata"]["annotations"].erase("gpucast.io/gpu");
  // Several types: none is the pod's GPU; each is allowed.
  pod["spec"]["affinity"] = RequiredAffinity(
      {{{"matchExpressions", {ProductIn({"NVIDIA-A100-SXM4-80GB", "Tesla-T4"})}}},
       {{"matchExpressions", {ProductIn({"NVIDIA-A100-SXM4-80GB-SHARED"})}}}});
  job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->gpu, "");
  EXPECT_THAT(job->gpu_types, ElementsAre("A100-80GB", "T4"));
  EXPECT_EQ(job->gpu_types_where, "required node affinity nvidia.com/gpu.product in (NVIDIA-A100-SXM4-80GB, Tesla-T4, "
                                  "NVIDIA-A100-SXM4-80GB-SHARED)");
  // A pod that does not pin the product: no types.
  pod["spec"].erase("affinity");
  job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->gpu, "");
  EXPECT_TRUE(job->gpu_types.empty());
  // A MIG slice of the mixed strategy on a pinned product: the product's GPU.
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}};
  job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->gpu, "A100-80GB");
  EXPECT_EQ(job->mig, "1g.10gb");
}

TEST(ReadPodJob, AProductThatIsNotTheAnnotatedGpuOrNotInTheTableIsAnError) {
  json pod = FixturePod();
  pod["metadata"]["annotations"]["gpucast.io/gpu"] = "H100";
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
  EXPECT_EQ(ReadPodJob(pod).message(),
            "annotation gpucast.io/gpu 'H100' and node selector nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB name "
            "different GPUs (H100, A100-80GB); give one");
  pod["spec"].erase("nodeSelector");
  pod["spec"]["affinity"] = RequiredAffinity({{{"matchExpressions", {ProductIn({"NVIDIA-A100-SXM4-80GB", "Tesla-T4"})}}}});
  EXPECT_EQ(ReadPodJob(pod).message(),
            "annotation gpucast.io/gpu 'H100' (H100) is none of the GPUs required node affinity nvidia.com/gpu.product "
            "in (NVIDIA-A100-SXM4-80GB, Tesla-T4) allows (A100-80GB, T4); give one of them");
  // A product gpucast's GPU table does not have: named, with the closest known GPUs, gpucast.io/gpu or not.
  pod["spec"].erase("affinity");
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-Z900-SXM9-80GB"}};
  EXPECT_THAT(ReadPodJob(pod).message(),
              ::testing::StartsWith("node selector nvidia.com/gpu.product=NVIDIA-Z900-SXM9-80GB: unknown GPU "
                                    "'NVIDIA-Z900-SXM9-80GB'; closest: "));
  EXPECT_THAT(ReadPodJob(pod).message(),
              ::testing::EndsWith("(gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table): gpucast cannot predict the GPU the pod requires"));
  pod["metadata"]["annotations"].erase("gpucast.io/gpu");
  pod["spec"].erase("nodeSelector");
  pod["spec"]["affinity"] = RequiredAffinity({{{"matchExpressions", {ProductIn({"Tesla-T4", "NVIDIA-Z900"})}}}});
  EXPECT_THAT(ReadPodJob(pod).message(),
              HasSubstr("required node affinity nvidia.com/gpu.product=NVIDIA-Z900: unknown GPU 'NVIDIA-Z900'; closest: "));
}

// A product that is no label value (a control byte, a bidi override, non-ASCII) can be on no
// node: refused, not read through the GPU table's spelling rule, which would drop the bytes and
// take "NVIDIA-A100-SXM4-80GB\u202e" for the A100 (Kubernetes "Labels and Selectors").
TEST(ReadPodJob, AProductThatIsNoLabelValueIsAnError) {
  json pod = FixturePod();
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB\u202e"}};
  EXPECT_THAT(ReadPodJob(pod).message(),
              ::testing::EndsWith(": not a label value (letters, digits, '-', '_', '.'; a letter or digit at each "
                                  "end): no node has it"));
  EXPECT_THAT(ReadPodJob(pod).message(), ::testing::StartsWith("node selector nvidia.com/gpu.product="));
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "A100-SXM4-40GB-MIG-1g.5gb\n"}};
  EXPECT_THAT(ReadPodJob(pod).message(), HasSubstr("not a label value"));
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "-Tesla-T4"}};
  EXPECT_THAT(ReadPodJob(pod).message(), HasSubstr("not a label value"));
  pod["spec"].erase("nodeSelector");
  pod["spec"]["affinity"] = RequiredAffinity({{{"matchExpressions", {ProductIn({"Tesla-T4", "NVIDIA A100"})}}}});
  EXPECT_THAT(ReadPodJob(pod).message(),
              ::testing::StartsWith("required node affinity nvidia.com/gpu.product=NVIDIA A100: not a label value"));
  // Valid values still resolve: dots, underscores and the -SHARED suffix.
  pod["spec"]["affinity"] = RequiredAffinity({{{"matchExpressions", {ProductIn({"Tesla-T4-SHARED"})}}}});
  Result<PodJob> job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->gpu, "T4");
}

// The same products required by node affinity instead of nodeSelector: the same job.
TEST(ReadPodJob, RequiredNodeAffinityOnTheProductNamesTheSliceAsTheNodeSelectorDoes) {
  json by_selector = FixturePod();
  by_selector["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "A100-SXM4-40GB-MIG-1g.5gb"}};
  Result<PodJob> want = ReadPodJob(by_selector);
  ASSERT_TRUE(want.ok()) << want.message();
  ASSERT_EQ(want->mig, "1g.5gb");
  auto same = [&](const json& affinity) {
    json pod = FixturePod();
    pod["spec"]["affinity"] = affinity;
    Result<PodJob> job = ReadPodJob(pod);
    ASSERT_TRUE(job.ok()) << job.message() << " " << affinity.dump();
    EXPECT_EQ(job->gpu, want->gpu) << affinity.dump();
    EXPECT_EQ(job->mig, want->mig) << affinity.dump();
    EXPECT_EQ(job->mig_resource, want->mig_resource) << affinity.dump();
    EXPECT_EQ(job->gpus, want->gpus) << affinity.dump();
    EXPECT_EQ(job->request, want->request) << affinity.dump();
  };
  same(RequiredAffinity({{{"matchExpressions", {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb"})}}}}));
  // Terms ORed: each term's products, all one slice (-SHARED: time-sliced, the same slice).
  same(RequiredAffinity({{{"matchExpressions", {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb"})}}},
                         {{"matchExpressions", {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb-SHARED"})}}}}));
  // Expressions ANDed: In lists intersect, NotIn takes values out; other keys leave the product as it is.
  same(RequiredAffinity({{{"matchExpressions",
                           {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb", "A100-SXM4-40GB-MIG-2g.10gb"}),
                            ProductIn({"A100-SXM4-40GB-MIG-1g.5gb", "A100-SXM4-40GB-MIG-3g.20gb"}),
                            {{"key", "topology.kubernetes.io/zone"}, {"operator", "In"}, {"values", {"a"}}}}}}}));
  same(RequiredAffinity({{{"matchExpressions",
                           {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb", "A100-SXM4-40GB-MIG-2g.10gb"}),
                            ProductIn({"A100-SXM4-40GB-MIG-2g.10gb"}, "NotIn")}}}}));
  // An empty term matches no node: it adds no product.
  same(RequiredAffinity({json::object(), {{"matchExpressions", {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb"})}}}}));
  // The selector and the affinity both name it.
  json both = by_selector;
  both["spec"]["affinity"] = RequiredAffinity(
      {{{"matchExpressions", {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb", "A100-SXM4-40GB-MIG-2g.10gb"})}}}});
  Result<PodJob> job = ReadPodJob(both);
  ASSERT_TRUE(job.ok()) << job.message();
  EXPECT_EQ(job->request, want->request);
}

TEST(ReadPodJob, RequiredNodeAffinityThatPinsNoOneSliceIsAWholeGpuOrAnError) {
  json pod = FixturePod();
  auto with = [&](const json& affinity) {
    pod["spec"]["affinity"] = affinity;
    return ReadPodJob(pod);
  };
  auto whole = [&](const json& affinity) {
    Result<PodJob> job = with(affinity);
    ASSERT_TRUE(job.ok()) << job.message() << " " << affinity.dump();
    EXPECT_EQ(job->mig, "") << affinity.dump();
    EXPECT_EQ(job->gpu, "") << affinity.dump();
    EXPECT_FALSE(job->request.contains("mig")) << affinity.dump();
  };
  // A term that can match without naming the product (Exists, NotIn alone, another key): any product.
  const json slice = {{"matchExpressions", {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb"})}}};
  whole(RequiredAffinity({slice, {{"matchExpressions", {{{"key", "nvidia.com/gpu.product"}, {"operator", "Exists"}}}}}}));
  whole(RequiredAffinity({slice, {{"matchExpressions", {ProductIn({"A100-SXM4-40GB-MIG-2g.10gb"}, "NotIn")}}}}));
  whole(RequiredAffinity({slice, {{"matchExpressions", {{{"key", "gpu"}, {"operator", "In"}, {"values", {"a"}}}}}}}));
  // Whole-GPU products (no -MIG-): a whole GPU, as in nodeSelector.
  whole(RequiredAffinity({{{"matchExpressions", {ProductIn({"NVIDIA-A100-SXM4-40GB", "NVIDIA-H100-80GB-HBM3"})}}}}));
  // A preference does not decide the node: not read.
  whole({{"nodeAffinity",
          {{"preferredDuringSchedulingIgnoredDuringExecution", {{{"weight", 1}, {"preference", slice}}}}}}});

  // Products of different slices, or of a slice and a whole GPU: the slice is not known at admission.
  EXPECT_EQ(with(RequiredAffinity({{{"matchExpressions",
                                     {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb", "A100-SXM4-40GB-MIG-2g.10gb"})}}}}))
                .message(),
            "required node affinity nvidia.com/gpu.product in (A100-SXM4-40GB-MIG-1g.5gb, A100-SXM4-40GB-MIG-2g.10gb): "
            "the pod may land on different MIG slices (A100-40GB MIG 1g.5gb, A100-40GB MIG 2g.10gb), and gpucast "
            "predicts one slice at admission; require the products of one slice (or ask for nvidia.com/mig-<profile>: 1)");
  EXPECT_EQ(with(RequiredAffinity({slice, {{"matchExpressions", {ProductIn({"A100-SXM4-40GB"})}}}})).message(),
            "required node affinity nvidia.com/gpu.product in (A100-SXM4-40GB-MIG-1g.5gb, A100-SXM4-40GB): the pod may "
            "land on a whole GPU or a MIG slice (A100-40GB MIG 1g.5gb), and gpucast predicts one slice at admission; "
            "require the products of one slice (or ask for nvidia.com/mig-<profile>: 1)");
  // Each value is checked as the selector's is.
  EXPECT_THAT(with(RequiredAffinity({{{"matchExpressions",
                                       {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb", "A100-SXM4-40GB-MIG-9g.9gb"})}}}}))
                  .message(),
              HasSubstr("required node affinity nvidia.com/gpu.product=A100-SXM4-40GB-MIG-9g.9gb: unknown MIG profile "
                        "'9g.9gb'"));
  // No node has a product both the selector and the affinity allow.
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "A100-SXM4-40GB-MIG-1g.5gb"}};
  EXPECT_EQ(with(RequiredAffinity({{{"matchExpressions", {ProductIn({"A100-SXM4-40GB-MIG-2g.10gb"})}}}})).message(),
            "node selector nvidia.com/gpu.product=A100-SXM4-40GB-MIG-1g.5gb and required node affinity "
            "nvidia.com/gpu.product in (A100-SXM4-40GB-MIG-2g.10gb) allow no node together (kube-scheduler needs "
            "both): no node can take the pod; name the product in one");
  pod["spec"].erase("nodeSelector");
  // Nor one term (In lists without a common value).
  EXPECT_EQ(with(RequiredAffinity({{{"matchExpressions", {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb"}),
                                                          ProductIn({"A100-SXM4-40GB-MIG-2g.10gb"})}}}}))
                .message(),
            "the pod: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: no node can match it "
            "(every term that names nvidia.com/gpu.product leaves no value, after its other In, NotIn and "
            "DoesNotExist expressions on it)");
  // The annotation's GPU and the affinity's, and the slice count, as with the selector.
  pod["metadata"]["annotations"]["gpucast.io/gpu"] = "H100";
  EXPECT_EQ(with(RequiredAffinity({slice})).message(),
            "annotation gpucast.io/gpu 'H100' and required node affinity "
            "nvidia.com/gpu.product=A100-SXM4-40GB-MIG-1g.5gb name different GPUs (H100, A100-40GB); give one");
  pod["metadata"]["annotations"].erase("gpucast.io/gpu");
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2";
  EXPECT_THAT(with(RequiredAffinity({slice})).message(),
              HasSubstr("resources.nvidia.com/gpu 2 on required node affinity nvidia.com/gpu.product="
                        "A100-SXM4-40GB-MIG-1g.5gb: want 1"));
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1";
}

// The affinity is bounded as the annotations are: terms, expressions, values and a value's length.
TEST(ReadPodJob, RequiredNodeAffinityIsBounded) {
  json pod = FixturePod();
  const json slice = {{"matchExpressions", {ProductIn({"A100-SXM4-40GB-MIG-1g.5gb"})}}};
  pod["spec"]["affinity"] = RequiredAffinity(json(std::vector<json>(64, slice)));
  ASSERT_TRUE(ReadPodJob(pod).ok()) << ReadPodJob(pod).message();
  EXPECT_EQ(ReadPodJob(pod)->mig, "1g.5gb");
  pod["spec"]["affinity"] = RequiredAffinity(json(std::vector<json>(65, slice)));
  EXPECT_EQ(ReadPodJob(pod).message(),
            "the pod: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: 65 "
            "terms, more than gpucast reads (64)");
  pod["spec"]["affinity"] =
      RequiredAffinity({{{"matchExpressions", json(std::vector<json>(65, ProductIn({"A100-SXM4-40GB-MIG-1g.5gb"})))}}});
  EXPECT_EQ(ReadPodJob(pod).message(),
            "the pod: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
            "matchExpressions: 65 expressions, more than gpucast reads (64)");
  pod["spec"]["affinity"] =
      RequiredAffinity({{{"matchExpressions", {ProductIn(json(std::vector<std::string>(257, "A100-SXM4-40GB")))}}}});
  EXPECT_EQ(ReadPodJob(pod).message(),
            "the pod: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
            "matchExpressions[0].values: 257 values, more than gpucast reads (256)");
  pod["spec"]["affinity"] = RequiredAffinity({{{"matchExpressions", {ProductIn({std::string(64, 'A')})}}}});
  EXPECT_THAT(ReadPodJob(pod).message(),
              HasSubstr("matchExpressions[0].values: 'AAAA"));
  EXPECT_THAT(ReadPodJob(pod).message(), HasSubstr("' is longer than a label value (63 characters): no node has it"));
  pod["spec"]["affinity"] = RequiredAffinity({{{"matchExpressions", {ProductIn({1})}}}});
  EXPECT_THAT(ReadPodJob(pod).message(), HasSubstr("matchExpressions[0].values: want strings, got 1"));
  pod["spec"]["affinity"] = RequiredAffinity("all");
  EXPECT_EQ(ReadPodJob(pod).message(),
            "the pod: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
            "want an array");
}

// Sized by the point prediction (plus headroom points): the arithmetic of the
// tests below. The default is the interval's upper end (DefaultHeadroomIsTheInterval).
ShareOptions Point() {
  ShareOptions o;
  o.headroom_interval = false;
  return o;
}

// ResNet-50-like numbers chosen so that every rounding is visible.
Sizing A100() {
  Sizing s;
  s.gpu = "A100-80GB";
  s.util = 43.21;
  s.util_lo = 8.5;
  s.util_hi = 60.2;
  s.mem_mib = 10000.3;
  s.mem_lo = 9000.7;
  s.mem_hi = 12000.4;
  s.capacity_mib = 81920;
  return s;
}

TEST(BuildMutation, HamiCoresAndMemoryInLimitsAndRequests) {
  json pod = FixturePod();
  Result<PodJob> job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok());
  Result<Mutation> m = BuildMutation(pod, *job, A100(), Point());
  ASSERT_TRUE(m.ok()) << m.message();
  json out = pod.patch(m->patch);
  const json& c = out["spec"]["containers"][0]["resources"];
  EXPECT_EQ(c["limits"], json::parse(R"({"nvidia.com/gpu": "1", "nvidia.com/gpucores": "44", "nvidia.com/gpumem": "12001"})"));
  EXPECT_EQ(c["requests"], c["limits"]);
  EXPECT_EQ(out["spec"]["containers"][1], pod["spec"]["containers"][1]);
  const json& a = out["metadata"]["annotations"];
  EXPECT_EQ(a["gpucast.io/predicted-util"], "43.21");
  EXPECT_EQ(a["gpucast.io/predicted-util-interval"], "8.50-60.20");
  EXPECT_EQ(a["gpucast.io/predicted-mem-mib"], "10001");
  EXPECT_EQ(a["gpucast.io/predicted-mem-interval-mib"], "9000-12001");
  EXPECT_EQ(a["gpucast.io/predicted-gpu"], "A100-80GB");
  EXPECT_EQ(a["gpucast.io/share"], "gpu=A100-80GB,gpus=1,util=43.21,mem_mib=12001,cores=44");
  EXPECT_EQ(a["gpucast.io/model"], "resnet50.onnx");  // inputs untouched
  EXPECT_EQ(m->summary, "nvidia.com/gpucores 44, nvidia.com/gpumem 12001");
  EXPECT_TRUE(m->warnings.empty());
  // Keys with '/' are escaped in the paths (RFC 6901).
  bool escaped = false;
  for (const json& op : m->patch) escaped |= op["path"] == "/spec/containers/0/resources/limits/nvidia.com~1gpucores";
  EXPECT_TRUE(escaped) << m->patch.dump();
}

// The step time and the unsure / gpu-measured flags become annotations when the engine gave them.
TEST(BuildMutation, StepTimeAndUnsureAnnotations) {
  json pod = FixturePod();
  Result<PodJob> job = ReadPodJob(pod);
  ASSERT_TRUE(job.ok());
  Result<Mutation> none = BuildMutation(pod, *job, A100(), {});
  ASSERT_TRUE(none.ok());
  const json a0 = pod.patch(none->patch)["metadata"]["annotations"];
  EXPECT_FALSE(a0.contains("gpucast.io/predicted-step-ms"));
  EXPECT_FALSE(a0.contains("gpucast.io/prediction-unsure"));
  Sizing s = A100();
  s.step_ms = 123.44;
  s.step_lo = 100.06;
  s.step_hi = 250.0;
  s.unsure = true;
  s.gpu_measured = false;
  Result<Mutation> m = BuildMutation(pod, *job, s, {});
  ASSERT_TRUE(m.ok()) << m.message();
  const json a = pod.patch(m->patch)["metadata"]["annotations"];
  EXPECT_EQ(a["gpucast.io/predicted-step-ms"], "123.4");
  EXPECT_EQ(a["gpucast.io/predicted-step-ms-interval"], "100.1-250.0");
  EXPECT_EQ(a["gpucast.io/prediction-unsure"], "true");
  EXPECT_EQ(a["gpucast.io/predicted-gpu-measured"], "false");
  // A pod carrying them already (written by gpucast) is read without error: they are outputs.
  json again = pod.patch(m->patch);
  EXPECT_TRUE(ReadPodJob(again).ok()) << ReadPodJob(again).message();
}

TEST(BuildMutation, HeadroomPointsOrTheIntervalsUpperEnd) {
  json pod = FixturePod();
  PodJob job = *ReadPodJob(pod);
  ShareOptions o = Point();
  o.headroom_points = 10;
  json out = pod.patch(BuildMutation(pod, job, A100(), o)->patch);
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"], "54");
  o.headroom_interval = true;
  out = pod.patch(BuildMutation(pod, job, A100(), o)->patch);
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"], "61");
  Sizing low = A100();
  low.util = 0.2;
  out = pod.patch(BuildMutation(pod, job, low, Point())->patch);
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"], "1");
  o.headroom_interval = false;
  o.headroom_points = 80;
  out = pod.patch(BuildMutation(pod, job, A100(), o)->patch);
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"], "100");
}

// Issue 31: an MLP predicted 3.7% [1-10] was capped at gpucores 4 by the old
// default (headroom 0 points); a real utilization above the point then runs
// throttled. By default the share is the interval's upper end.
TEST(BuildMutation, DefaultHeadroomIsTheInterval) {
  json pod = FixturePod();
  PodJob job = *ReadPodJob(pod);
  Sizing mlp = A100();
  mlp.util = 3.7;
  mlp.util_lo = 1;
  mlp.util_hi = 10;
  json out = pod.patch(BuildMutation(pod, job, mlp, ShareOptions{})->patch);
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"], "10");
  EXPECT_EQ(out["metadata"]["annotations"]["gpucast.io/predicted-util"], "3.70");
  out = pod.patch(BuildMutation(pod, job, mlp, Point())->patch);
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"], "4");
}

// A mixed cluster's pod sized for each type: the enforced share covers the
// largest, the annotations and gpucast.io/share list each type.
TEST(BuildMutation, APodSizedForEachGpuTypeOfAMixedCluster) {
  json pod = FixturePod();
  PodJob job = *ReadPodJob(pod);
  Sizing a100 = A100();  // 43.21 [8.5, 60.2], memory high end 12000.4 of 81920
  Sizing h100 = A100();
  h100.gpu = "H100";
  h100.util = 30;
  h100.util_lo = 20;
  h100.util_hi = 45;
  h100.mem_hi = 13000;
  const std::vector<Sizing> both = {a100, h100};
  Sizing c = CombinedSizing(both);
  EXPECT_DOUBLE_EQ(c.util_hi, 60.2);
  EXPECT_DOUBLE_EQ(c.mem_hi, 13000);
  EXPECT_DOUBLE_EQ(c.mem_hi / c.capacity_mib, 13000.0 / 81920);
  Result<Mutation> m = BuildMutation(pod, job, c, Point(), both);
  ASSERT_TRUE(m.ok()) << m.message();
  json out = pod.patch(m->patch);
  const json& a = out["metadata"]["annotations"];
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"], "44");  // max of 43.21, 30
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"], "13000");
  EXPECT_EQ(a["gpucast.io/predicted-gpu"], "A100-80GB,H100");
  EXPECT_EQ(a["gpucast.io/predicted-util"], "A100-80GB=43.21,H100=30.00");
  EXPECT_EQ(a["gpucast.io/predicted-util-interval"], "A100-80GB=8.50-60.20,H100=20.00-45.00");
  EXPECT_EQ(a["gpucast.io/share"], "gpu=A100-80GB,gpus=1,util=43.21,mem_mib=12001,cores=44;"
                                   "gpu=H100,gpus=1,util=30.00,mem_mib=13000,cores=44");
}

TEST(BuildMutation, FractionReplacesTheGpuRequestWithKaisAnnotation) {
  json pod = FixturePod();
  // The trainer second, so KAI must be told which container it is.
  std::swap(pod["spec"]["containers"][0], pod["spec"]["containers"][1]);
  PodJob job = *ReadPodJob(pod);
  ASSERT_EQ(job.container, 1);
  ShareOptions o = Point();
  o.mode = ShareMode::kFraction;
  Result<Mutation> m = BuildMutation(pod, job, A100(), o);
  ASSERT_TRUE(m.ok()) << m.message();
  json out = pod.patch(m->patch);
  // max(43.21 / 100, 12001 / 81920 = 0.146) rounded up to 0.01.
  EXPECT_EQ(out["metadata"]["annotations"]["gpu-fraction"], "0.44");
  EXPECT_EQ(out["metadata"]["annotations"]["gpu-fraction-container-name"], "train");
  EXPECT_EQ(out["metadata"]["annotations"]["gpucast.io/share"], "gpu=A100-80GB,gpus=1,util=43.21,mem_mib=12001,fraction=0.44");
  EXPECT_EQ(out["spec"]["containers"][1]["resources"], json::parse(R"({"limits": {}, "requests": {}})"));
  // Memory decides when it is the larger share: 60000 / 81920 = 0.733 -> 0.74.
  Sizing big = A100();
  big.mem_mib = big.mem_lo = 50000;
  big.mem_hi = 60000;
  out = pod.patch(BuildMutation(pod, job, big, o)->patch);
  EXPECT_EQ(out["metadata"]["annotations"]["gpu-fraction"], "0.74");
}

TEST(BuildMutation, AFractionOfOneKeepsTheWholeGpu) {
  json pod = FixturePod();
  PodJob job = *ReadPodJob(pod);
  Sizing s = A100();
  s.util = 99.5;
  ShareOptions o = Point();
  o.mode = ShareMode::kFraction;
  Result<Mutation> m = BuildMutation(pod, job, s, o);
  ASSERT_TRUE(m.ok()) << m.message();
  json out = pod.patch(m->patch);
  EXPECT_FALSE(out["metadata"]["annotations"].contains("gpu-fraction"));
  EXPECT_EQ(out["spec"]["containers"][0]["resources"], pod["spec"]["containers"][0]["resources"]);
  EXPECT_THAT(m->warnings, ElementsAre(HasSubstr("the share rounds to a whole GPU: nvidia.com/gpu 1 kept")));
}

TEST(BuildMutation, SeveralGpusAreWholeGpus) {
  json pod = FixturePod();
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "4"}}}, {"requests", {{"nvidia.com/gpu", "4"}}}};
  PodJob job = *ReadPodJob(pod);
  json out = pod.patch(BuildMutation(pod, job, A100(), Point())->patch);
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"],
            json::parse(R"({"nvidia.com/gpu": "4", "nvidia.com/gpucores": "100"})"));
  EXPECT_EQ(out["metadata"]["annotations"]["gpucast.io/share"], "gpu=A100-80GB,gpus=4,util=43.21,mem_mib=12001,whole=1");
  ShareOptions o = Point();
  o.mode = ShareMode::kFraction;
  Result<Mutation> m = BuildMutation(pod, job, A100(), o);
  out = pod.patch(m->patch);
  EXPECT_EQ(out["spec"], pod["spec"]);
  EXPECT_EQ(m->summary, "4 whole GPUs (nvidia.com/gpu 4 kept)");
}

TEST(BuildMutation, MemoryAboveTheGpuIsDenied) {
  json pod = FixturePod();
  PodJob job = *ReadPodJob(pod);
  Sizing s = A100();
  s.mem_mib = 90000;
  s.mem_lo = 85000;
  s.mem_hi = 95000;
  Result<Mutation> m = BuildMutation(pod, job, s, Point());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "predicted to need 90000 MiB of GPU memory (interval 85000-95000), more than the A100-80GB's "
                         "81920 MiB: it will not fit; use a smaller gpucast.io/batch, more GPUs, or a GPU with more memory");
  // Only the interval's high end above it: refused too, as the Slurm plugin and
  // POST /v1/jobs do (a share holds the high end).
  s.mem_mib = 80000;
  s.mem_lo = 75000;
  m = BuildMutation(pod, job, s, Point());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "predicted to need 80000 MiB of GPU memory (interval 75000-95000), its high end more than the "
                         "A100-80GB's 81920 MiB: it may not fit; use a smaller gpucast.io/batch, more GPUs, or a GPU with "
                         "more memory");
}

// The A100-80GB's 1g.10gb slice (9.50 GiB = 9728 MiB, the MIG User Guide's
// -lgip listing in gpu_table.cc), with the A100() prediction's numbers.
Sizing Slice() {
  Sizing s = A100();
  s.mig = "1g.10gb";
  s.capacity_mib = 9.5 * 1024;
  s.mem_mib = 6000.2;
  s.mem_lo = 5000.9;
  s.mem_hi = 7000.1;
  return s;
}

// A MIG slice is an isolated partition: HAMi's gpucores/gpumem and KAI's
// gpu-fraction share a whole GPU, so neither is written on top of a slice;
// the pod keeps its request and gets the prediction's annotations.
TEST(BuildMutation, AMigSliceKeepsItsRequestAndIsAnnotated) {
  json pod = MigPod();
  PodJob job = *ReadPodJob(pod);
  for (ShareMode mode : {ShareMode::kHami, ShareMode::kFraction}) {
    ShareOptions o = Point();
    o.mode = mode;
    Result<Mutation> m = BuildMutation(pod, job, Slice(), o);
    ASSERT_TRUE(m.ok()) << m.message();
    json out = pod.patch(m->patch);
    EXPECT_EQ(out["spec"], pod["spec"]);  // no container resource changed
    const json& a = out["metadata"]["annotations"];
    EXPECT_FALSE(a.contains("gpu-fraction"));
    EXPECT_EQ(a["gpucast.io/predicted-util"], "43.21");
    EXPECT_EQ(a["gpucast.io/predicted-mem-mib"], "6001");
    EXPECT_EQ(a["gpucast.io/predicted-mem-interval-mib"], "5000-7001");
    EXPECT_EQ(a["gpucast.io/predicted-gpu"], "A100-80GB");
    EXPECT_EQ(a["gpucast.io/predicted-mig"], "1g.10gb");
    EXPECT_EQ(a["gpucast.io/share"], "gpu=A100-80GB,gpus=1,util=43.21,mem_mib=7001,mig=1g.10gb");
    EXPECT_EQ(m->summary, "MIG 1g.10gb slice (nvidia.com/mig-1g.10gb 1 kept; no share on top of a slice)");
    EXPECT_TRUE(m->warnings.empty());
  }
  // The annotations gpucast wrote are read back as outputs (a pod re-admitted as is).
  json again = pod.patch(BuildMutation(pod, job, Slice(), Point())->patch);
  EXPECT_TRUE(ReadPodJob(again).ok()) << ReadPodJob(again).message();
}

TEST(BuildMutation, MemoryAboveTheSliceIsDenied) {
  json pod = MigPod();
  PodJob job = *ReadPodJob(pod);
  Sizing s = Slice();
  s.mem_mib = 10000.3;
  s.mem_lo = 9000.7;
  s.mem_hi = 12000.4;
  Result<Mutation> m = BuildMutation(pod, job, s, Point());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.message(), "predicted to need 10000 MiB of GPU memory (interval 9001-12000), more than the A100-80GB "
                         "MIG 1g.10gb slice's 9728 MiB (nvidia.com/mig-1g.10gb): it will not fit; use a smaller "
                         "gpucast.io/batch or a larger MIG profile");
  s.mem_mib = 9000;
  m = BuildMutation(pod, job, s, Point());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.message(), HasSubstr("its high end more than the A100-80GB MIG 1g.10gb slice's 9728 MiB"));
  EXPECT_THAT(m.message(), HasSubstr("it may not fit"));
}

TEST(BuildMutation, WithoutAMemoryModelNoGpumem) {
  json pod = FixturePod();
  PodJob job = *ReadPodJob(pod);
  Sizing s = A100();
  s.mem_mib = s.mem_lo = s.mem_hi = std::nan("");
  Result<Mutation> m = BuildMutation(pod, job, s, Point());
  ASSERT_TRUE(m.ok()) << m.message();
  json out = pod.patch(m->patch);
  EXPECT_FALSE(out["spec"]["containers"][0]["resources"]["limits"].contains("nvidia.com/gpumem"));
  EXPECT_FALSE(out["metadata"]["annotations"].contains("gpucast.io/predicted-mem-mib"));
  EXPECT_EQ(out["metadata"]["annotations"]["gpucast.io/share"], "gpu=A100-80GB,gpus=1,util=43.21,mem_mib=0,cores=44");
  EXPECT_THAT(m->warnings, ElementsAre(HasSubstr("no memory model: nvidia.com/gpumem not set")));
}

TEST(BuildMutation, AbsentMapsAreCreatedAndPodValuesReplacedWithAWarning) {
  json pod = FixturePod();
  // Requests only: limits is created.
  pod["spec"]["containers"][0]["resources"] = {{"requests", {{"nvidia.com/gpu", "1"}}}};
  PodJob job = *ReadPodJob(pod);
  pod["metadata"].erase("annotations");
  json out = pod.patch(BuildMutation(pod, job, A100(), Point())->patch);
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"],
            json::parse(R"({"nvidia.com/gpucores": "44", "nvidia.com/gpumem": "12001"})"));
  EXPECT_EQ(out["metadata"]["annotations"]["gpucast.io/predicted-util"], "43.21");
  // No resources object at all.
  pod["spec"]["containers"][0].erase("resources");
  out = pod.patch(BuildMutation(pod, job, A100(), Point())->patch);
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"], "44");
  // A share the pod guessed itself is replaced, and the user told.
  pod = FixturePod();
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"] = "80";
  Result<Mutation> m = BuildMutation(pod, job, A100(), Point());
  EXPECT_EQ(pod.patch(m->patch)["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"], "44");
  EXPECT_THAT(m->warnings, ElementsAre("gpucast: replaced nvidia.com/gpucores 80 (set in the pod) with 44"));
}

// The service's Prediction with memory (optional members, as the engine fills
// them from PredictResult::memory) and without.
struct WithMemory {
  std::optional<double> mem_mib, mem_lo, mem_hi;
};
struct WithoutMemory {
  double util = 0;
};

TEST(MemoryFromPrediction, TheIntervalWhenThePredictionHasOne) {
  Sizing s = A100();
  MemoryFromPrediction(WithMemory{10001, 9000, 12000.5}, &s);
  EXPECT_EQ(s.mem_mib, 10001);
  EXPECT_EQ(s.mem_lo, 9000);
  EXPECT_EQ(s.mem_hi, 12000.5);
  // gpumem is the high end, rounded up.
  json pod = FixturePod();
  Result<Mutation> m = BuildMutation(pod, *ReadPodJob(pod), s, Point());
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ(pod.patch(m->patch)["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"], "12001");
  // No memory model (unset members), or a Prediction without memory: NaN.
  MemoryFromPrediction(WithMemory{}, &s);
  EXPECT_TRUE(std::isnan(s.mem_mib) && std::isnan(s.mem_lo) && std::isnan(s.mem_hi));
  s = A100();
  MemoryFromPrediction(WithoutMemory{}, &s);
  EXPECT_TRUE(std::isnan(s.mem_mib) && std::isnan(s.mem_lo) && std::isnan(s.mem_hi));
}

TEST(JsonPointer, EscapesTildeAndSlash) {
  EXPECT_EQ(JsonPointerEscape("nvidia.com/gpucores"), "nvidia.com~1gpucores");
  EXPECT_EQ(JsonPointerEscape("a~b/c~1"), "a~0b~1c~01");
  // nlohmann's pointer reads it back to the key.
  json j = {{"a~b/c~1", 7}};
  EXPECT_EQ(j.at(json::json_pointer("/" + JsonPointerEscape("a~b/c~1"))), 7);
}

TEST(Base64, Rfc4648Vectors) {
  EXPECT_EQ(Base64(""), "");
  EXPECT_EQ(Base64("f"), "Zg==");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64("foo"), "Zm9v");
  EXPECT_EQ(Base64("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64("foobar"), "Zm9vYmFy");
}

TEST(Reviews, AllowCarriesTheBase64PatchAndDenyTheMessage) {
  json pod = FixturePod();
  Mutation m = *BuildMutation(pod, *ReadPodJob(pod), A100(), Point());
  json a = AllowReview("u-1", &m, {"w"});
  EXPECT_EQ(a["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(a["kind"], "AdmissionReview");
  EXPECT_EQ(a["response"]["uid"], "u-1");
  EXPECT_EQ(a["response"]["allowed"], true);
  EXPECT_EQ(a["response"]["patchType"], "JSONPatch");
  EXPECT_EQ(a["response"]["patch"], Base64(m.patch.dump()));
  EXPECT_EQ(a["response"]["warnings"], json::array({"w"}));
  json plain = AllowReview("u-2", nullptr);
  EXPECT_EQ(plain, json::parse(R"({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                  "response": {"uid": "u-2", "allowed": true}})"));
  // A denial or warning quotes the pod's annotations: kubectl prints them to a terminal,
  // so no control byte passes (an ESC in gpucast.io/attrs came back raw).
  json esc = DenyReview("u-4", "attrs: job attribute 'tf32': value '1\x1b[2J' is not 0 or 1");
  EXPECT_EQ(esc["response"]["status"]["message"], "attrs: job attribute 'tf32': value '1?[2J' is not 0 or 1");
  json warned = AllowReview("u-5", nullptr, {"gpucast: pod ml/p\x1b]0;x\x07: allowed unchanged"});
  EXPECT_EQ(warned["response"]["warnings"], json::array({"gpucast: pod ml/p?]0;x?: allowed unchanged"}));
  json d = DenyReview("u-3", "no such model");
  EXPECT_EQ(d["response"], json::parse(R"({"uid": "u-3", "allowed": false,
                                           "status": {"code": 403, "message": "no such model"}})"));
}

}  // namespace
}  // namespace gpucast::service::k8s
