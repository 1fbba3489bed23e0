// The share signature: what it covers, what breaks it, and the key file.
#include "service/k8s_share.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace gpucast::service::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json SignedPod() {
  return json::parse(R"({"metadata": {"name": "p", "namespace": "ml", "annotations": {
      "gpucast.io/model": "mobilenetv2.onnx", "gpucast.io/batch": "64",
      "gpucast.io/share": "gpu=A100-80GB,gpus=1,util=52.27,mem_mib=4615,cores=60",
      "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
    "spec": {"containers": [
      {"name": "train", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1", "nvidia.com/gpucores": "60",
        "nvidia.com/gpumem": "4615", "cpu": "4"}}},
      {"name": "sidecar", "resources": {"limits": {"cpu": "1"}}}]}})");
}

TEST(ShareSignedText, CoversTheInputsTheShareAndTheEnforcedLimitsOnly) {
  const std::string text = ShareSignedText("ml", SignedPod());
  EXPECT_EQ(text,
            "gpucast-share-v1\nnamespace\tml\n"
            "a\tgpucast.io/batch\t64\n"
            "a\tgpucast.io/model\tmobilenetv2.onnx\n"
            "a\tgpucast.io/share\tgpu=A100-80GB,gpus=1,util=52.27,mem_mib=4615,cores=60\n"
            "r\ttrain\tnvidia.com/gpu\t1\n"
            "r\ttrain\tnvidia.com/gpucores\t60\n"
            "r\ttrain\tnvidia.com/gpumem\t4615\n");
  // The API server's defaulting (requests = limits) and member order change nothing.
  json pod = SignedPod();
  pod["spec"]["containers"][0]["resources"]["requests"] = pod["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_EQ(ShareSignedText("ml", json::parse(pod.dump())), text);
}

TEST(ShareSignature, IsHmacSha256AndVerifiesOnlyTheSignedPod) {
  const std::string key(32, 'k');
  // An independent HMAC of RFC 4231 test case 2 ("Jefe", "what do ya want for nothing?").
  EXPECT_EQ(ShareSignature("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  json pod = SignedPod();
  pod["metadata"]["annotations"][kAnnShareSignature] = ShareSignature(key, ShareSignedText("ml", pod));
  EXPECT_TRUE(ShareVerifies(key, "ml", pod));
  EXPECT_FALSE(ShareVerifies(std::string(32, 'x'), "ml", pod));  // another service's key
  EXPECT_FALSE(ShareVerifies(key, "other", pod));                 // copied to another namespace
  json tampered = pod;  // the owner lowers the share with kubectl annotate
  tampered["metadata"]["annotations"]["gpucast.io/share"] = "gpu=A100-80GB,gpus=1,util=1,mem_mib=1,cores=60";
  EXPECT_FALSE(ShareVerifies(key, "ml", tampered));
  json uncapped = pod;  // the same annotations on a pod without the gpucores limit
  uncapped["spec"]["containers"][0]["resources"]["limits"].erase("nvidia.com/gpucores");
  EXPECT_FALSE(ShareVerifies(key, "ml", uncapped));
  json unsigned_pod = pod;
  unsigned_pod["metadata"]["annotations"].erase(kAnnShareSignature);
  EXPECT_FALSE(ShareVerifies(key, "ml", unsigned_pod));
}

TEST(LoadOrCreateShareKey, CreatesAPrivateKeyOnceAndRefusesWeakFiles) {
  const std::string dir = std::filesystem::temp_directory_path() / ("gpucast_sharekey_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/key";
  Result<std::string> a = LoadOrCreateShareKey(path);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->size(), 32u);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Result<std::string> b = LoadOrCreateShareKey(path);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);  // the same key after a restart
  ::chmod(path.c_str(), 0644);
  EXPECT_THAT(LoadOrCreateShareKey(path).message(), HasSubstr("readable by others (chmod 600 it)"));
  const std::string shortk = dir + "/short";
  std::ofstream(shortk) << "abc";
  ::chmod(shortk.c_str(), 0600);
  EXPECT_THAT(LoadOrCreateShareKey(shortk).message(), HasSubstr("3 bytes; want at least 32"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpucast::service::k8s
