#include "cli/progress.h"

#include <cstdio>
#include <string>

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

}  // namespace
}  // namespace gpucast::cli
