#include "service/http_util.h"

#include <chrono>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

namespace gpucast::service {
namespace {

TEST(HttpUtilTest, ParamsNameThemselves) {
  EXPECT_EQ(*ParseIntParam("limit", "10", 1, 1000), 10);
  EXPECT_EQ(ParseIntParam("limit", "0", 1, 1000).message(), "parameter 'limit': want an integer in [1, 1000], got '0'");
  EXPECT_EQ(ParseIntParam("limit", "1e3", 1, 1000).message(),
            "parameter 'limit': want an integer in [1, 1000], got '1e3'");
  EXPECT_TRUE(*ParseBoolParam("amp", "true"));
  EXPECT_FALSE(*ParseBoolParam("amp", "0"));
  EXPECT_EQ(ParseBoolParam("amp", "yes").message(), "parameter 'amp': want 0, 1, true or false, got 'yes'");
}

TEST(HttpUtilTest, RepliesNeverThrowOnBytes) {
  httplib::Response res;
  SendError(res, 400, std::string("bad \xff byte"));
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(res.body, "{\"error\":\"bad \xef\xbf\xbd byte\"}");
}

// Error messages quote what the client sent (a field's key, an attribute's value,
// a model path), and many quoted it whole: an ESC in `attrs` came back raw in the
// 400 (and in the webhook's denial, which kubectl prints to a terminal). Every
// reply's message has its control bytes shown as '?', whichever check made it.
TEST(HttpUtilTest, ErrorMessagesCarryNoControlByte) {
  httplib::Response res;
  SendError(res, 400, std::string("attrs: job attribute 'tf\x1b[2J': unknown key\r\n\x7f\t"));
  EXPECT_EQ(nlohmann::json::parse(res.body)["error"], "attrs: job attribute 'tf?[2J': unknown key????");
  EXPECT_EQ(NoControlBytes(std::string("a\0b\x1f\x7f c\xc3\xa9", 9)), "a?b?? c\xc3\xa9");
}

TEST(HttpUtilTest, TextChecks) {
  EXPECT_TRUE(ConstantTimeEqual("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEqual("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEqual("abc", "ab"));
  EXPECT_TRUE(HasControlByte(std::string("a\0b", 3)));
  EXPECT_TRUE(HasControlByte("a\x7f"));
  EXPECT_FALSE(HasControlByte("caf\xc3\xa9"));
  EXPECT_TRUE(CheckJsonBody(R"({"a": "[[[["})", 2).ok());
  EXPECT_EQ(CheckJsonBody("[[[", 2).message(), "request body: JSON nested deeper than 2 levels");
  EXPECT_EQ(CheckJsonBody("\xff", 2).message(), "request body: not valid UTF-8");
}

// One check for the names looked up in a spec table (request.cc's GPU and MIG
// names, an observation's `gpu`): bytes below 0x20, 0x7F and every byte of
// 0x80 and above are refused, shown as '?', and a name past 64 bytes is cut.
TEST(HttpUtilTest, PrintableNames) {
  EXPECT_TRUE(CheckPrintableName("field 'gpu'", "a GPU name", "A100-80GB", "NVIDIA H100 80GB HBM3 ~!").ok());
  EXPECT_TRUE(CheckPrintableName("field 'mig'", "a MIG profile name", "1g.10gb", "").ok());
  EXPECT_EQ(CheckPrintableName("field 'gpu'", "a GPU name", "A100-80GB", std::string("A100\0-80GB", 10)).message(),
            "field 'gpu': a GPU name is printable ASCII (such as A100-80GB), got 'A100?-80GB' (a control or "
            "non-ASCII byte shown as ?)");
  EXPECT_EQ(CheckPrintableName("parameter 'gpu'", "a GPU name", "H100 or \"NVIDIA H100 80GB HBM3\"",
                               "\xe2\x80\xaeH100\x7f")
                .message(),
            "parameter 'gpu': a GPU name is printable ASCII (such as H100 or \"NVIDIA H100 80GB HBM3\"), got "
            "'???H100?' (a control or non-ASCII byte shown as ?)");
  EXPECT_EQ(CheckPrintableName("field 'mig'", "a MIG profile name", "1g.10gb", std::string(70, 'a') + "\x1b").message(),
            "field 'mig': a MIG profile name is printable ASCII (such as 1g.10gb), got '" + std::string(64, 'a') +
                "...' (a control or non-ASCII byte shown as ?)");
}

// Issue 17 finding 8: a newline in a client's text forged log lines.
// {"batch": 1e400}: nlohmann throws out_of_range 406 (not a parse_error) on a
// number past double's range; uncaught, POST /v1/predict answered 500.
TEST(HttpUtilTest, NumberOverflowIsMalformedJson) {
  auto r = ParseJson(R"({"model": "a.onnx", "batch": 1e400})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "malformed JSON: number overflow parsing '1e400'");
  EXPECT_EQ(ParseJson("-1e999").message(), "malformed JSON: number overflow parsing '-1e999'");
  EXPECT_TRUE(ParseJson(R"({"batch": 1e300})").ok());
}

// {"batch": 8, "batch": 64} predicted batch 64 (nlohmann keeps the last key): which one the
// client meant is unknown, so it is refused, in nested objects too; the same key in two
// objects is not a repeat.
TEST(HttpUtilTest, AKeyTwiceInOneObjectIsMalformed) {
  EXPECT_EQ(ParseJson(R"({"model": "a.onnx", "batch": 8, "batch": 64})").message(),
            "malformed JSON: key 'batch' given twice in one object");
  EXPECT_EQ(ParseJson(R"({"batch": 8, "attrs": {"loader_workers": 1, "loader_workers": 8}})").message(),
            "malformed JSON: key 'loader_workers' given twice in one object");
  EXPECT_EQ(ParseJson(R"({"models": [{"path": "g.onnx"}, {"path": "d.onnx", "repeat": 3, "path": "e.onnx"}]})").message(),
            "malformed JSON: key 'path' given twice in one object");
  auto ok = ParseJson(R"({"models": [{"path": "g.onnx"}, {"path": "d.onnx"}], "dims": {"path": 1}, "path": 2})");
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ((*ok)["path"], 2);
}

// Found by tests/hostile_fields.py: the repeated-key check was nlohmann's parser
// callback, which is quadratic in the objects of an array: 200000 "{}" in an
// 800 KB body (under the 1 MiB JSON limit), in an AdmissionReview's pod or a
// job's unknown field, held a worker 10-28 s before the refusal; 50000 took 1 s.
// Now a linear SAX pass: the same body is parsed in well under a second (the
// bound is loose for a shared machine: the quadratic parse took 35 s here).
TEST(HttpUtilTest, ManyObjectsParseInLinearTime) {
  std::string body = "{\"junk\": [";
  for (int i = 0; i < 200000; ++i) body += i ? ",{}" : "{}";
  body += "], \"k\": {\"a\": 1, \"a\": 2}}";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ParseJson(body).message(), "malformed JSON: key 'a' given twice in one object");
  body.replace(body.size() - 17, 17, "{\"a\": 1, \"b\": 2}}");
  auto ok = ParseJson(body);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ((*ok)["junk"].size(), 200000u);
  EXPECT_LT(s, 3.0);
}

TEST(HttpUtilTest, LogTextCannotForgeLines) {
  EXPECT_EQ(ForLog("job\nerror: forged"), "job\\x0Aerror: forged");
  EXPECT_EQ(ForLog("a\\b"), "a\\x5Cb");
  EXPECT_EQ(ForLog(std::string(300, 'x'), 4), "xxxx...");
  EXPECT_EQ(Shown("abcdef", 3), "abc...");
}

}  // namespace
}  // namespace gpucast::service
