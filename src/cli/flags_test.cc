#include "cli/flags.h"

#include <gtest/gtest.h>

namespace gpucast::cli {
namespace {

TEST(ParseDimFlagsTest, ParsesNamedDims) {
  std::map<std::string, int64_t> dims;
  ASSERT_TRUE(ParseDimFlags({"seq=35", "tokens=384"}, &dims).ok());
  EXPECT_EQ(dims.at("seq"), 35);
  EXPECT_EQ(dims.at("tokens"), 384);
}

TEST(ParseDimFlagsTest, RejectsMalformed) {
  for (const char* bad : {"seq", "=3", "seq=", "seq=0", "seq=-4", "seq=3x", "seq=99999999999999999999"}) {
    std::map<std::string, int64_t> dims;
    Status s = ParseDimFlags({bad}, &dims);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.message(), std::string("--dim '") + bad +
                               "': expected NAME=VALUE with VALUE a positive integer");
  }
}

// The service refuses dims above 2^24 (util/job_limits.h); the CLI took any int64 and
// predicted from it, so the same job had an answer on one front end and a 400 on the other.
TEST(ParseDimFlagsTest, BoundedAsTheServiceBoundsDims) {
  std::map<std::string, int64_t> dims;
  ASSERT_TRUE(ParseDimFlags({"seq=16777216"}, &dims).ok());
  EXPECT_EQ(dims.at("seq"), 16777216);
  dims.clear();
  Status s = ParseDimFlags({"seq=16777217"}, &dims);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--dim 'seq=16777217': VALUE must be at most 16777216 (the service's limit on dims)");
}

// --attr loader_workers=1 --attr loader_workers=8 predicted with 8, silently (--dim refuses a repeat).
TEST(CheckAttrKeysOnceTest, RefusesAKeyGivenTwice) {
  EXPECT_TRUE(CheckAttrKeysOnce({"loader_workers=1", "optimizer=adam", "tf32=1"}).ok());
  Status s = CheckAttrKeysOnce({"loader_workers=1", "optimizer=adam", "loader_workers=8"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--attr 'loader_workers=8': key given twice");
}

TEST(ParseDimFlagsTest, RejectsRepeatedName) {
  std::map<std::string, int64_t> dims;
  Status s = ParseDimFlags({"seq=3", "seq=4"}, &dims);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--dim 'seq=4': dimension given twice");
}

}  // namespace
}  // namespace gpucast::cli

namespace gpucast::cli {
namespace {

// --help names ranges as a reader wants them, not "[1 - 4611686018427387904]".
TEST(RangeHelpTest, IntRangeAndUnboundedInt) {
  CLI::App app;
  int64_t batch = 0;
  int repeats = 0;
  CLI::Option* b = IntIn(app.add_option("--batch", batch), 1);
  CLI::Option* r = IntIn(app.add_option("--repeats", repeats), 1, 10000);
  EXPECT_EQ(b->get_type_name(), "INT >= 1");
  EXPECT_EQ(r->get_type_name(), "INT in [1, 10000]");
  EXPECT_EQ(app.help().find("4611686018427387904"), std::string::npos);
  // The check still applies.
  EXPECT_THROW(app.parse(std::vector<std::string>{"0", "--batch"}), CLI::ValidationError);
  EXPECT_THROW(app.parse(std::vector<std::string>{"10001", "--repeats"}), CLI::ValidationError);
  app.parse(std::vector<std::string>{"4", "--batch"});  // CLI11 takes the vector reversed
  EXPECT_EQ(batch, 4);
}

TEST(RangeHelpTest, BytesAndFloats) {
  CLI::App app;
  size_t bytes = 0;
  double level = 0;
  EXPECT_EQ(BytesIn(app.add_option("--max", bytes), 1, size_t{1} << 32)->get_type_name(), "BYTES in [1 B, 4 GiB]");
  EXPECT_EQ(FloatIn(app.add_option("--level", level), 0.01, 0.99)->get_type_name(), "FLOAT in [0.01, 0.99]");
  EXPECT_THROW(app.parse(std::vector<std::string>{"1.5", "--level"}), CLI::ValidationError);
  // NaN passed CLI::Range (`v < lo || v > hi` is false for it): --max-seconds nan ran.
  for (const char* bad : {"nan", "NaN", "-nan", "inf", "0.5x", ""})
    EXPECT_THROW(app.parse(std::vector<std::string>{bad, "--level"}), CLI::ValidationError) << bad;
  app.parse(std::vector<std::string>{"0.5", "--level"});
  EXPECT_EQ(level, 0.5);
}

TEST(ByteSizeTest, ExactBinaryUnits) {
  EXPECT_EQ(ByteSize(1), "1 B");
  EXPECT_EQ(ByteSize(1000), "1000 B");
  EXPECT_EQ(ByteSize(1024), "1 KiB");
  EXPECT_EQ(ByteSize(1536), "1536 B");
  EXPECT_EQ(ByteSize(uint64_t{1} << 40), "1 TiB");
  EXPECT_EQ(ByteSize(128u << 20), "128 MiB");
}

// --help of train/evaluate: each flag on its own line, without CLI11's "{false}" of a negated name.
TEST(PowerLimitedClockTest, HelpReadsCleanlyAndBothFlagsWork) {
  for (bool dflt : {true, false}) {
    CLI::App app;
    bool on = dflt;
    AddPowerLimitedClock(&app, &on, "recorded in the predictor file");
    const std::string help = app.help();
    EXPECT_EQ(help.find('{'), std::string::npos) << help;
    EXPECT_EQ(help.find("false"), std::string::npos) << help;
    EXPECT_NE(help.find("  --power-limited-clock "), std::string::npos) << help;
    EXPECT_NE(help.find("  --no-power-limited-clock "), std::string::npos) << help;
    EXPECT_NE(help.find(std::string("(default: ") + (dflt ? "on" : "off")), std::string::npos) << help;
    EXPECT_NE(help.find(std::string("the opposite of --power-limited-clock (") + (dflt ? "on" : "off") + " by default)"),
              std::string::npos) << help;
    EXPECT_EQ(help.find("Excludes"), std::string::npos) << help;
    EXPECT_NE(help.find("instead of the datasheet's boost-clock peaks, recorded in the predictor file"), std::string::npos)
        << help;
  }
  for (bool dflt : {true, false}) {
    bool on = dflt;
    CLI::App app;
    AddPowerLimitedClock(&app, &on, "x");
    app.parse(std::vector<std::string>{});
    EXPECT_EQ(on, dflt);  // neither flag: the default stays
  }
  {
    bool on = true;
    CLI::App app;
    AddPowerLimitedClock(&app, &on, "x");
    app.parse(std::vector<std::string>{"--no-power-limited-clock"});
    EXPECT_FALSE(on);
  }
  {
    bool on = false;
    CLI::App app;
    AddPowerLimitedClock(&app, &on, "x");
    app.parse(std::vector<std::string>{"--power-limited-clock"});
    EXPECT_TRUE(on);
  }
  {
    bool on = true;
    CLI::App app;
    AddPowerLimitedClock(&app, &on, "x");
    // Both: the last one given wins (CLI11 takes the vector reversed: the last element is the first argument).
    app.parse(std::vector<std::string>{"--power-limited-clock", "--no-power-limited-clock"});
    EXPECT_TRUE(on);
    CLI::App app2;
    AddPowerLimitedClock(&app2, &on, "x");
    app2.parse(std::vector<std::string>{"--no-power-limited-clock", "--power-limited-clock"});
    EXPECT_FALSE(on);
  }
}

}  // namespace
}  // namespace gpucast::cli
