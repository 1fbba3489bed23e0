// DCGM exporter page parsing and attribution of a GPU's utilization to jobs.
#include "service/dcgm.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpucast::service {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// The layout dcgm-exporter serves (README of NVIDIA/dcgm-exporter: "gpu" and
// "UUID" labels, a space after the comma; newer versions add device,
// modelName, Hostname and driver labels).
constexpr const char* kPage = R"(# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 139
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 87
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-1",device="nvidia1",modelName="NVIDIA GeForce RTX 3090",Hostname="node1",DCGM_FI_DRIVER_VERSION="535.104.05"} 12.5
DCGM_FI_DEV_GPU_UTIL_EXTRA{gpu="2"} 99
DCGM_FI_DEV_MEMORY_TEMP{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 9223372036854775794
)";

TEST(ParseDcgmUtil, ReadsOnlyTheUtilizationOfEachGpu) {
  Result<std::vector<DcgmSample>> s = ParseDcgmUtil(kPage);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].gpu, 0);
  EXPECT_DOUBLE_EQ((*s)[0].util, 87);
  EXPECT_EQ((*s)[0].hostname, "");
  EXPECT_EQ((*s)[1].gpu, 1);
  EXPECT_DOUBLE_EQ((*s)[1].util, 12.5);
  EXPECT_EQ((*s)[1].hostname, "node1");
}

TEST(ParseDcgmUtil, BadLinesNameTheLine) {
  Result<std::vector<DcgmSample>> s = ParseDcgmUtil("# x\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 140\n");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("line 2: DCGM_FI_DEV_GPU_UTIL: value '140' is not a utilization in [0, 100]"));
  s = ParseDcgmUtil("DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\"} 40\n");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("line 1: DCGM_FI_DEV_GPU_UTIL: no gpu=\"N\" label"));
  s = ParseDcgmUtil("DCGM_FI_DEV_GPU_UTIL{gpu=\"0} 40\n");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("unterminated value of label gpu"));
  EXPECT_TRUE(ParseDcgmUtil("").ok());
}

// Cluster JSON as PolicyScheduler::ClusterJson writes it.
json Cluster(const std::vector<std::pair<int, std::vector<int64_t>>>& node_jobs) {
  json gpus = json::array();
  for (const auto& [node, jobs] : node_jobs) {
    json js = json::array();
    for (int64_t j : jobs) js.push_back({{"id", j}, {"predicted_util", 50}});
    gpus.push_back({{"node", node}, {"type", "RTX3090"}, {"jobs", js}});
  }
  return {{"gpus", gpus}};
}

TEST(AttributeDcgm, OnlyJobsAloneOnEverySampledGpu) {
  // GPU 0: job 1 alone; GPU 1: jobs 2 and 3 share; GPU 2: idle; GPUs 3+4: job 4 (two GPUs) alone.
  json c = Cluster({{0, {1}}, {0, {2, 3}}, {0, {}}, {0, {4}}, {0, {4}}});
  std::map<std::string, int> outcomes;
  auto count = [&](const std::string& o) { ++outcomes[o]; };
  std::vector<DcgmAttribution> a =
      AttributeDcgm(c, {{{0, 80, ""}, {1, 95, ""}, {2, 0, ""}, {3, 40, ""}, {4, 60, ""}}}, count);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].job_id, 1);
  EXPECT_DOUBLE_EQ(a[0].util, 80);
  EXPECT_EQ(a[0].samples, 1);
  EXPECT_EQ(a[0].gpu_type, "RTX3090");
  EXPECT_EQ(a[1].job_id, 4);
  EXPECT_DOUBLE_EQ(a[1].util, 50);  // (40 + 60) / 2
  EXPECT_EQ(a[1].samples, 2);
  EXPECT_EQ(outcomes["attributed"], 3);
  EXPECT_EQ(outcomes["shared"], 1);
  EXPECT_EQ(outcomes["idle"], 1);

  // Job 4's second GPU not sampled: nothing for it.
  outcomes.clear();
  a = AttributeDcgm(c, {{{0, 80, ""}, {3, 40, ""}, {7, 10, ""}}}, count);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].job_id, 1);
  EXPECT_EQ(outcomes["unknown_gpu"], 1);  // gpu="7" on a node with 5 GPUs
}

TEST(AttributeDcgm, TheNthExporterCoversTheNthNode) {
  // Node 0: GPUs 0,1 (jobs 1, 2); node 1: GPUs 0,1 (jobs 3, 4).
  json c = Cluster({{0, {1}}, {0, {2}}, {1, {3}}, {1, {4}}});
  std::vector<DcgmAttribution> a = AttributeDcgm(c, {{{1, 20, ""}}, {{0, 30, ""}}}, [](const std::string&) {});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].job_id, 2);
  EXPECT_DOUBLE_EQ(a[0].util, 20);
  EXPECT_EQ(a[1].job_id, 3);
  EXPECT_DOUBLE_EQ(a[1].util, 30);
}

TEST(SplitHttpUrl, BaseAndPath) {
  auto u = SplitHttpUrl("http://node1:9400/metrics");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->first, "http://node1:9400");
  EXPECT_EQ(u->second, "/metrics");
  EXPECT_EQ(SplitHttpUrl("http://node1:9400")->second, "/metrics");
  EXPECT_FALSE(SplitHttpUrl("https://node1/metrics").ok());
  EXPECT_FALSE(SplitHttpUrl("node1:9400").ok());
}

// A loopback server that answers each connection with `answer(fd, stop)`,
// one at a time, until destroyed.
class ScriptedServer {
 public:
  using Answer = std::function<void(int fd, const std::atomic<bool>& stop)>;
  explicit ScriptedServer(Answer answer) : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) continue;
        char buf[4096];
        std::string req;
        while (req.find("\r\n\r\n") == std::string::npos) {
          ssize_t n = ::recv(c, buf, sizeof buf, 0);
          if (n <= 0) break;
          req.append(buf, static_cast<size_t>(n));
        }
        ++connections_;
        answer_(c, stop_);
        ::close(c);
      }
    });
  }
  ~ScriptedServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }

 private:
  Answer answer_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

void Send(int fd, const std::string& s) {
  ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
  (void)n;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(HttpGetBounded, ReadsAContentLengthAndAChunkedAnswer) {
  ScriptedServer plain([](int fd, const std::atomic<bool>&) {
    Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
  });
  Result<std::string> r = HttpGetBounded(plain.base(), "/metrics", 1024, 5, nullptr);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, "hello");
  ScriptedServer chunked([](int fd, const std::atomic<bool>&) {
    Send(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  });
  r = HttpGetBounded(chunked.base(), "/metrics", 1024, 5, nullptr);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(*r, "hello world");
  ScriptedServer missing([](int fd, const std::atomic<bool>&) {
    Send(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
  });
  EXPECT_EQ(HttpGetBounded(missing.base(), "/metrics", 1024, 5, nullptr).message(), "HTTP 404");
}

// Issue 31 item 8: a page of 2 GiB was read whole (2 GB of memory).
TEST(HttpGetBounded, AnAnswerOverTheLimitIsCutThere) {
  ScriptedServer huge([](int fd, const std::atomic<bool>& stop) {
    Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\n\r\n");
    const std::string block(65536, '#');
    for (int i = 0; i < 64 && !stop; ++i) Send(fd, block);  // 4 MiB, then the client has gone
  });
  Result<std::string> r = HttpGetBounded(huge.base(), "/metrics", 256 << 10, 10, nullptr);
  EXPECT_EQ(r.message(), "answer larger than 262144 bytes");
}

// Issue 31 item 8: an exporter that drips a byte at a time held the scraper
// (and SIGTERM) for as long as it dripped.
TEST(HttpGetBounded, ADripIsCutAtTheDeadlineAndAStopEndsItSooner) {
  auto drip = [](int fd, const std::atomic<bool>& stop) {
    Send(fd, "HTTP/1.1 200 OK\r\n");
    for (int i = 0; i < 600 && !stop; ++i) {
      Send(fd, "X");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  ScriptedServer server(drip);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(HttpGetBounded(server.base(), "/metrics", 1 << 20, 1, nullptr).message(), "not answered within 1 s");
  EXPECT_LT(Seconds(t0), 3.0);
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
  });
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(HttpGetBounded(server.base(), "/metrics", 1 << 20, 20, [&] { return stop.load(); }).message(), "stopped");
  EXPECT_LT(Seconds(t0), 2.0);
  stopper.join();
}

TEST(DcgmScraper, StopsWithinASecondWhileAnExporterDrips) {
  ScriptedServer server([](int fd, const std::atomic<bool>& stop) {
    Send(fd, "HTTP/1.1 200 OK\r\n");
    for (int i = 0; i < 600 && !stop; ++i) {
      Send(fd, "X");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::atomic<int> scrapes{0};
  auto s = DcgmScraper::Start({server.base() + "/metrics"}, 30,
                              [&](const std::vector<std::vector<DcgmSample>>&, const std::vector<bool>&) { ++scrapes; });
  ASSERT_TRUE(s.ok()) << s.message();
  for (int i = 0; i < 100 && server.connections() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(server.connections(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // mid-drip
  auto t0 = std::chrono::steady_clock::now();
  s->reset();
  EXPECT_LT(Seconds(t0), 1.0);
  EXPECT_EQ(scrapes.load(), 0);  // the scrape in progress was abandoned, not reported
}

TEST(DcgmScrapeLogLine, ControlBytesOfThePageAreEscaped) {
  Result<std::vector<DcgmSample>> bad = ParseDcgmUtil("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} \x1b[2J\x1b[31mFAKE\n");
  ASSERT_FALSE(bad.ok());
  const std::string line = DcgmScrapeLogLine("http://node1:9400/metrics", bad.message());
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_THAT(line, HasSubstr("gpucast serve: DCGM scrape http://node1:9400/metrics: line 1:"));
  EXPECT_THAT(line, HasSubstr("\\x1B[2J"));
}

}  // namespace
}  // namespace gpucast::service
