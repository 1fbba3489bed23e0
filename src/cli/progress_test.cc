#include "cli/progress.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace gpucast::cli {
namespace {

// Lines written to a memory stream with a clock the test moves.
struct Capture {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  double now = 100;
  ~Capture() {
    std::fclose(f);
    std::free(buf);
  }
  std::string Text() {
    std::fflush(f);
    return std::string(buf, len);
  }
};

TEST(ProgressTest, ResultsAlwaysUpdatesThrottled) {
  Capture c;
  Progress p("evaluate", false, c.f, [&c] { return c.now; }, 5.0);
  p.Update("too early");  // nothing for 5 s after the start
  c.now += 2;
  p.Result("lowo forest: RMSLE 0.830");
  c.now += 1;
  p.Update("repeat 1/20");  // 1 s after the last line
  c.now += 5;
  p.Update("repeat 2/20");
  c.now += 0.5;
  p.Update("repeat 3/20");
  EXPECT_EQ(c.Text(),
            "gpucast evaluate [2.0 s] lowo forest: RMSLE 0.830\n"
            "gpucast evaluate [8.0 s] repeat 2/20\n");
}

TEST(ProgressTest, QuietPrintsNothing) {
  Capture c;
  Progress p("simulate", true, c.f, [&c] { return c.now; }, 0.0);
  p.Result("slot seed 1: useful 51.2%");
  c.now += 10;
  p.Update("t=100 s");
  EXPECT_EQ(c.Text(), "");
  EXPECT_TRUE(p.quiet());
}

TEST(HeartbeatTest, PrintsWhileItLivesAndStopsAtOnce) {
  Capture c;
  auto t0 = std::chrono::steady_clock::now();
  {
    Heartbeat h("simulate", "computing lowo:auto", false, 0.05, c.f);
    std::this_thread::sleep_for(std::chrono::milliseconds(180));
  }
  // Stopped without waiting out an interval: at most one line per 50 ms lived.
  const double lived = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(lived, 2.0);
  const std::string text = c.Text();
  EXPECT_EQ(text.rfind("gpucast simulate [", 0), 0u) << text;
  EXPECT_NE(text.find("] computing lowo:auto ("), std::string::npos) << text;
  EXPECT_NE(text.find(" s so far)\n"), std::string::npos) << text;
  const double lines = static_cast<double>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_GE(lines, 1);
  EXPECT_LE(lines, lived / 0.05);
  // Nothing after it is gone.
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  EXPECT_EQ(c.Text(), text);
}

TEST(HeartbeatTest, QuietStartsNoThreadAndPrintsNothing) {
  Capture c;
  { Heartbeat h("simulate", "computing", true, 0.01, c.f); std::this_thread::sleep_for(std::chrono::milliseconds(50)); }
  EXPECT_EQ(c.Text(), "");
}

}  // namespace
}  // namespace gpucast::cli
