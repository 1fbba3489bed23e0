// The running pods the extender counts: which pods count and how, and the
// list-and-watch against a stub API server on loopback that answers as
// kube-apiserver does (a PodList page, then a chunked stream of watch events).
#include "service/k8s_pods.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "service/k8s_share.h"

namespace gpucast::service::k8s {
namespace {

using nlohmann::json;

const std::string kKey(32, 'k');

// A pod bound to `node`; with `util` >= 0 a share gpucast signed.
json Pod(const std::string& name, const std::string& node, double util, int gpus = 1, bool sign = true) {
  json p = {{"metadata", {{"name", name}, {"namespace", "ml"}, {"resourceVersion", "7"}, {"annotations", json::object()}}},
            {"spec", {{"nodeName", node},
                      {"containers", {{{"name", "train"}, {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
            {"status", {{"phase", "Running"}}}};
  if (util >= 0) {
    char share[128];
    std::snprintf(share, sizeof share, "gpu=A100-80GB,gpus=%d,util=%.2f,mem_mib=1000,cores=50", gpus, util);
    p["metadata"]["annotations"]["gpucast.io/share"] = share;
    if (sign) p["metadata"]["annotations"][kAnnShareSignature] = ShareSignature(kKey, ShareSignedText("ml", p));
  }
  return p;
}

TEST(PodFromJson, VerifiedSharesAndWholeGpus) {
  std::optional<RunningPod> p = PodFromJson(Pod("a", "gpu-a", 30), kKey);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->key, "ml/a");
  EXPECT_EQ(p->node, "gpu-a");
  EXPECT_TRUE(p->verified);
  EXPECT_DOUBLE_EQ(p->share.util, 30);
  // A share the owner wrote (no valid signature) does not count: whole GPUs.
  p = PodFromJson(Pod("b", "gpu-a", 5, 1, false), kKey);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->verified);
  EXPECT_FALSE(p->share.sized);
  EXPECT_EQ(p->gpus, 1);
  json done = Pod("c", "gpu-a", 30);
  done["status"]["phase"] = "Succeeded";
  EXPECT_FALSE(PodFromJson(done, kKey));
  EXPECT_FALSE(PodFromJson(Pod("d", "", 30), kKey));  // not bound to a node
}

std::map<std::string, std::vector<GpuLoad>> TwoGpus() {
  std::map<std::string, std::vector<GpuLoad>> n;
  for (int i = 0; i < 2; ++i) {
    GpuLoad g;
    g.id = i;
    g.type = "A100-80GB";
    g.mem_mib = 81920;
    n["gpu-a"].push_back(g);
  }
  return n;
}

TEST(AddPods, SharesOnTheLeastLoadedGpuAndUnsizedPodsOnWholeGpus) {
  auto nodes = TwoGpus();
  std::vector<RunningPod> pods = {*PodFromJson(Pod("a", "gpu-a", 30), kKey), *PodFromJson(Pod("b", "gpu-a", 20), kKey),
                                  *PodFromJson(Pod("x", "elsewhere", 20), kKey)};
  AddPods(&nodes, pods);
  // 30 on GPU 0, then 20 on the less loaded GPU 1.
  EXPECT_EQ(nodes["gpu-a"][0].utils, std::vector<double>{30});
  EXPECT_EQ(nodes["gpu-a"][1].utils, std::vector<double>{20});
  EXPECT_DOUBLE_EQ(nodes["gpu-a"][0].mem_used_mib, 1000);
  EXPECT_FALSE(nodes.count("elsewhere"));
  // A pod with nvidia.com/gpu 1 and no share of gpucast's holds an idle GPU whole.
  nodes = TwoGpus();
  pods = {*PodFromJson(Pod("u", "gpu-a", -1), kKey), *PodFromJson(Pod("a", "gpu-a", 30), kKey)};
  AddPods(&nodes, pods);
  EXPECT_TRUE(nodes["gpu-a"][0].exclusive);
  EXPECT_EQ(nodes["gpu-a"][0].utils, std::vector<double>{100});
  EXPECT_DOUBLE_EQ(nodes["gpu-a"][0].mem_used_mib, 81920);
  EXPECT_EQ(nodes["gpu-a"][1].utils, std::vector<double>{30});
}

// A running pod on a MIG slice (its signed share says mig=) is no load on
// gpucast's whole-GPU view: the slice is an isolated partition.
TEST(AddPods, AMigSliceIsNotALoadOnAWholeGpu) {
  json mig = {{"metadata", {{"name", "m"}, {"namespace", "ml"}, {"annotations", json::object()}}},
              {"spec", {{"nodeName", "gpu-a"},
                        {"containers", {{{"name", "train"},
                                         {"resources", {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}}}}}}}},
              {"status", {{"phase", "Running"}}}};
  mig["metadata"]["annotations"]["gpucast.io/share"] = "gpu=A100-80GB,gpus=1,util=60.00,mem_mib=7001,mig=1g.10gb";
  mig["metadata"]["annotations"][kAnnShareSignature] = ShareSignature(kKey, ShareSignedText("ml", mig));
  std::optional<RunningPod> p = PodFromJson(mig, kKey);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->verified);
  EXPECT_EQ(p->share.mig, "1g.10gb");
  EXPECT_EQ(p->gpus, 0);  // no nvidia.com/gpu
  auto nodes = TwoGpus();
  AddPods(&nodes, {*p, *PodFromJson(Pod("a", "gpu-a", 30), kKey)});
  EXPECT_EQ(nodes["gpu-a"][0].utils, std::vector<double>{30});
  EXPECT_TRUE(nodes["gpu-a"][1].utils.empty());
  EXPECT_DOUBLE_EQ(nodes["gpu-a"][1].mem_used_mib, 0);
}

// The stub: GET /api/v1/pods (a list of two pods, then a watch that streams
// ADDED c, MODIFIED a (finished), DELETED b and ends).
class StubApiServer {
 public:
  StubApiServer() {
    server_.Get("/api/v1/pods", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(req.target);
        auth_ = req.get_header_value("Authorization");
      }
      if (req.get_param_value("fieldSelector") != "spec.nodeName!=") {
        res.status = 400;
        return;
      }
      if (req.get_param_value("watch") != "1") {
        // Two pages: the continue token holds what a query must escape.
        json list = {{"kind", "PodList"}, {"apiVersion", "v1"},
                     {"metadata", {{"resourceVersion", "100"}, {"continue", "tok+/="}}},
                     {"items", {Pod("a", "gpu-a", 30), Pod("b", "gpu-a", 20)}}};
        if (req.get_param_value("continue") == "tok+/=") {
          list = {{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", "100"}}},
                  {"items", {Pod("d", "gpu-b", 10)}}};
        } else if (req.has_param("continue")) {
          res.status = 400;
          return;
        }
        res.set_content(list.dump(), "application/json");
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        watch_version_ = req.get_param_value("resourceVersion");
      }
      if (watches_++ > 0) {  // later watches: nothing new, end at once
        res.set_content("", "application/json");
        return;
      }
      json finished = Pod("a", "gpu-a", 30);
      finished["status"]["phase"] = "Succeeded";
      std::string events = json{{"type", "ADDED"}, {"object", Pod("c", "gpu-a", 40)}}.dump() + "\n" +
                           json{{"type", "MODIFIED"}, {"object", finished}}.dump() + "\n" +
                           json{{"type", "DELETED"}, {"object", Pod("b", "gpu-a", 20)}}.dump() + "\n";
      res.set_chunked_content_provider("application/json", [events](size_t, httplib::DataSink& sink) {
        // Split inside an event: the reader must join lines across chunks.
        sink.write(events.data(), 10);
        sink.write(events.data() + 10, events.size() - 10);
        sink.done();
        return true;
      });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~StubApiServer() {
    server_.stop();
    thread_.join();
  }
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::string> requests_;  // GUARDED_BY(mu_)
  std::string auth_, watch_version_;   // GUARDED_BY(mu_)
  std::atomic<int> watches_{0};

 private:
  httplib::Server server_;
  std::thread thread_;
};

TEST(PodView, ListsThenAppliesTheWatchStream) {
  StubApiServer stub;
  const std::string dir = ::testing::TempDir();
  const std::string token = dir + "/gpucast-pods-token";
  FILE* f = std::fopen(token.c_str(), "w");
  std::fputs("sa-token\n", f);
  std::fclose(f);
  PodView view;
  EXPECT_FALSE(view.Pods());  // nothing until the first list
  ApiServer api{"http://127.0.0.1:" + std::to_string(stub.port_), token, "", 0.05, 5};
  ASSERT_TRUE(view.StartWatching(api, kKey).ok());
  std::optional<std::vector<RunningPod>> pods;
  for (int i = 0; i < 500; ++i) {
    pods = view.Pods();
    if (pods && view.stats().events >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(pods);
  ASSERT_GE(view.stats().events, 3);
  pods = view.Pods();
  // a finished, b deleted, c added; d from the list's second page.
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].key, "ml/c");
  EXPECT_TRUE((*pods)[0].verified);
  EXPECT_EQ((*pods)[1].key, "ml/d");
  EXPECT_EQ(stub.requests_[1], "/api/v1/pods?fieldSelector=spec.nodeName%21%3D&limit=500&continue=tok%2B%2F%3D");
  std::lock_guard<std::mutex> lock(stub.mu_);
  EXPECT_EQ(stub.auth_, "Bearer sa-token");
  EXPECT_EQ(stub.watch_version_.empty(), false);
  EXPECT_EQ(stub.requests_.front(), "/api/v1/pods?fieldSelector=spec.nodeName%21%3D&limit=500");
}

TEST(PodView, AnUnreachableServerIsRetriedAndNotSynced) {
  PodView view;
  ApiServer api{"http://127.0.0.1:1", "", "", 0.05, 5};
  ASSERT_TRUE(view.StartWatching(api, kKey).ok());
  for (int i = 0; i < 200 && view.stats().failures < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(view.stats().failures, 2);
  EXPECT_THAT(view.stats().last_error, ::testing::HasSubstr("cannot connect"));
  EXPECT_FALSE(view.Pods());
  EXPECT_THAT(view.StartWatching({"ftp://x", "", "", 1, 1}, kKey).message(), ::testing::HasSubstr("want https://HOST:PORT"));
}

}  // namespace
}  // namespace gpucast::service::k8s
