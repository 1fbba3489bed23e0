// Request parsing without sockets: a request's parts in, a JobRequest or the
// error a client gets (message and HTTP status) out.
#include "service/request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gpucast::service {
namespace {

using ::testing::HasSubstr;

Result<JobSpec> Json(const std::string& body) { return ParseSpecJson(body); }

TEST(RequestTest, AJsonJob) {
  auto spec = Json(R"({"model": "m/r50.onnx", "batch": 64, "amp": true, "gpus": 2, "gpu": "a100 80gb",
      "name": "r50", "attrs": {"loader_workers": 4, "data_on_gpu": true, "loader_ms_per_sample": 14.5},
      "dims": {"seq": 384}, "mem_mib": 9000, "duration_s": 3600})");
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->model_name, "m/r50.onnx");
  EXPECT_EQ(spec->batch, 64);
  EXPECT_EQ(spec->gpu, "A100-80GB");
  EXPECT_EQ(spec->attrs.at("data_on_gpu"), "1");
  EXPECT_EQ(spec->attrs.at("loader_ms_per_sample"), "14.5");
  EXPECT_EQ(*spec->TypedAttrs().loader_ms_per_sample, 14.5);
  EXPECT_EQ(spec->dims.at("seq"), 384);
  EXPECT_EQ(*spec->duration_s, 3600);
  // A reply's JSON is a valid request again.
  auto again = Json(SpecToJson(*spec).dump());
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ(SpecToJson(*again), SpecToJson(*spec));
}

TEST(RequestTest, DefaultsAndTheClustersGpu) {
  auto spec = Json(R"({"model": "x.onnx", "batch": 1})");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->gpus, 1);
  EXPECT_FALSE(spec->amp);
  EXPECT_FALSE(spec->duration_s.has_value());
  EXPECT_EQ(spec->gpu, "RTX3090");
  RequestDefaults h100;
  h100.gpu = "H100";
  EXPECT_EQ(ParseSpecJson(R"({"model": "x.onnx", "batch": 1})", h100)->gpu, "H100");
  EXPECT_EQ(ParseSpecJson(R"({"model": "x.onnx", "batch": 1, "gpu": "T4"})", h100)->gpu, "T4");
}

// A mixed cluster (issue 31): no default GPU; a job names the one it runs on.
TEST(RequestTest, AMixedClusterWantsTheJobsGpu) {
  RequestDefaults mixed;
  mixed.gpu = "";
  mixed.cluster_gpus = {"A100-80GB", "H100"};
  EXPECT_EQ(ParseSpecJson(R"({"model": "x.onnx", "batch": 1})", mixed).message(),
            "field 'gpu': missing; the cluster has GPUs of several types (A100-80GB, H100): name the one the job "
            "runs on");
  EXPECT_EQ(ParseSpecJson(R"({"model": "x.onnx", "batch": 1, "gpu": "h100"})", mixed)->gpu, "H100");
  RequestParts up;
  up.content_type = "application/octet-stream";
  up.params = {{"batch", "1"}};
  up.body = "x";
  int status = 0;
  EXPECT_THAT(ParseJobRequest(up, mixed, &status).message(), HasSubstr("parameter 'gpu': missing; the cluster has"));
}

// Issue 31: POST /v1/predict takes every input gpucast predict takes.
TEST(RequestTest, PredictOnlyInputsOfGpucastPredict) {
  auto spec = Json(R"({"model": "x.onnx", "batch": 8, "gpus": 4, "nodes": 2, "mig": "3g.40gb",
                       "interconnect": "pcie4x16,ib200", "level": 0.9})");
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->nodes, 2);
  EXPECT_EQ(spec->mig, "3g.40gb");
  EXPECT_EQ(spec->interconnect, "pcie4x16,ib200");
  EXPECT_DOUBLE_EQ(spec->level, 0.9);
  EXPECT_THAT(Json(R"({"model": "x.onnx", "batch": 8, "level": 1.5})").message(), HasSubstr("field 'level'"));
  EXPECT_THAT(Json(R"({"model": "x.onnx", "batch": 8, "nodes": 0})").message(), HasSubstr("field 'nodes'"));
  RequestParts up;
  up.content_type = "application/octet-stream";
  up.params = {{"batch", "1"}, {"gpus", "2"}, {"nodes", "2"}, {"mig", "1g.10gb"}, {"level", "0.5"},
               {"interconnect", "nvlink"}};
  up.body = "x";
  int status = 0;
  Result<JobRequest> r = ParseJobRequest(up, RequestDefaults(), &status);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->spec.nodes, 2);
  EXPECT_EQ(r->spec.mig, "1g.10gb");
  EXPECT_DOUBLE_EQ(r->spec.level, 0.5);
}

// An interconnect no GPU accepts, and GPU and node counts that cannot be laid
// out, are malformed fields (400, like an unknown GPU name), found as the
// request is read with the predictor's own messages in the API's names
// (features/interconnect.h CheckInterconnectSpec). What depends on the GPU
// ("nvlink" on a card without NVLink) parses: the prediction answers it (422).
TEST(RequestTest, InterconnectThatNoGpuAcceptsIsAMalformedField) {
  EXPECT_EQ(Json(R"({"model": "x.onnx", "batch": 8, "gpus": 2, "interconnect": "nvlink9"})").message(),
            "interconnect 'nvlink9': want nvlink, nvlink<gen> or nvlink<gen>x<links> (gen 1-5)");
  EXPECT_EQ(Json(R"({"model": "x.onnx", "batch": 8, "gpus": 2, "interconnect": "pcie4x16,nvlink"})").message(),
            "interconnect 'nvlink': a second link inside the node (one of pcie..., nvlink...)");
  EXPECT_EQ(Json(R"({"model": "x.onnx", "batch": 8, "gpus": 6, "nodes": 4})").message(),
            "gpus 6 nodes 4: GPUs must divide evenly over nodes");
  EXPECT_EQ(Json(R"({"model": "x.onnx", "batch": 8, "interconnect": "ib200"})").message(),
            "interconnect 'ib200': a network link needs nodes > 1");
  EXPECT_TRUE(Json(R"({"model": "x.onnx", "batch": 8, "gpus": 2, "gpu": "T4", "interconnect": "nvlink3"})").ok());
  RequestParts up;
  up.content_type = "application/octet-stream";
  up.params = {{"batch", "1"}, {"gpus", "2"}, {"interconnect", "warp9"}};
  up.body = "x";
  int status = 0;
  EXPECT_THAT(ParseJobRequest(up, RequestDefaults(), &status).message(),
              HasSubstr("interconnect 'warp9': unknown link (want pcie, "));
  EXPECT_EQ(status, 400);
}

// A MIG profile no GPU of the table has is a malformed field (400, like an
// unknown GPU name), with the words of `gpucast predict --mig` and the
// Kubernetes webhook (features CanonicalMigProfile); a known profile parses
// whatever the GPU (the prediction answers one the GPU lacks: 422); "" is the whole GPU.
TEST(RequestTest, AMigProfileNoGpuHasIsAMalformedField) {
  EXPECT_THAT(Json(R"({"model": "x.onnx", "batch": 8, "gpu": "A100-80GB", "mig": "7g.99gb"})").message(),
              ::testing::StartsWith("field 'mig': unknown MIG profile '7g.99gb' (MIG profiles of gpucast's GPUs: "
                                    "1g.5gb, "));
  EXPECT_THAT(Json(R"({"model": "x.onnx", "batch": 8, "mig": "mig-"})").message(),
              ::testing::StartsWith("field 'mig': unknown MIG profile 'mig-' ("));
  EXPECT_TRUE(Json(R"({"model": "x.onnx", "batch": 8, "gpu": "A100-80GB", "mig": "1g.5gb"})").ok());
  EXPECT_TRUE(Json(R"({"model": "x.onnx", "batch": 8, "gpu": "RTX3090", "mig": "MIG 3G.40GB"})").ok());
  // One spelling whatever the client wrote (the table's): what /v1/jobs stores and shows.
  EXPECT_EQ(Json(R"({"model": "x.onnx", "batch": 8, "gpu": "A100-80GB", "mig": "MIG 3G.40GB"})")->mig, "3g.40gb");
  EXPECT_EQ(*MigName("x", "mig 1g.10gb"), "1g.10gb");
  EXPECT_EQ(Json(R"({"model": "x.onnx", "batch": 8, "mig": ""})")->mig, "");
  EXPECT_TRUE(CheckMigName("x", "").ok());
  // Found by tests/hostile_fields.py: the table's spelling rule drops every byte
  // but letters and digits, so a NUL, a right-to-left override or an escape
  // sequence around a real profile was taken for the slice (201). Refused now.
  for (const std::string& bad : {std::string("1g.10gb\0", 8), std::string("1g.10gb\xe2\x80\xae"),
                                 std::string("\x1b[31m1g.10gb"), std::string("\xef\xbc\x91g.10gb")}) {
    Result<std::string> r = MigName("field 'mig'", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.message(), ::testing::StartsWith("field 'mig': a MIG profile name is printable ASCII (such as "
                                                   "1g.10gb), got '"));
    EXPECT_EQ(r.message().find_first_of(std::string("\0\x1b", 2)), std::string::npos);
  }
  EXPECT_EQ(MigName("field 'mig'", "1g.10gb\x7f").message(),
            "field 'mig': a MIG profile name is printable ASCII (such as 1g.10gb), got '1g.10gb?' (a control or "
            "non-ASCII byte shown as ?)");
  EXPECT_EQ(*MigName("x", "-1g.10gb"), "1g.10gb");  // ASCII punctuation is the spelling rule's to ignore
  RequestParts up;
  up.content_type = "application/octet-stream";
  up.params = {{"batch", "1"}, {"mig", "7g.99gb"}};
  up.body = "x";
  int status = 0;
  EXPECT_THAT(ParseJobRequest(up, RequestDefaults(), &status).message(),
              ::testing::StartsWith("parameter 'mig': unknown MIG profile '7g.99gb' ("));
  EXPECT_EQ(status, 400);
}

// Finding 8 of issue 20: the API mirrors the CLI.
TEST(RequestTest, BatchIsRequiredAndNumbersAreNumbers) {
  EXPECT_EQ(Json(R"({"model": "x"})").message(), "field 'batch': missing (the batch size, an integer >= 1)");
  EXPECT_EQ(Json(R"({"model": "x", "batch": 32.0})")->batch, 32);
  EXPECT_EQ(Json(R"({"model": "x", "batch": 32.5})").message(),
            "field 'batch': want an integer in [1, 16777216], got 32.5");
  EXPECT_EQ(Json(R"({"model": "x", "batch": "32"})").message(),
            "field 'batch': want an integer in [1, 16777216], got \"32\"");
  auto a = Json(R"({"model": "x", "batch": 1, "attrs": {"loader_ms_per_sample": 14.5, "env_steps_per_update": 8.0,
                    "loader_workers": "3", "rl_env": true}})");
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(*a->TypedAttrs().loader_ms_per_sample, 14.5);
  EXPECT_EQ(*a->TypedAttrs().env_steps_per_update, 8);
  EXPECT_EQ(*a->TypedAttrs().loader_workers, 3);
  EXPECT_TRUE(*a->TypedAttrs().rl_env);
  EXPECT_EQ(Json(R"({"model": "x", "batch": 1, "attrs": {"loader_workers": [1]}})").message(),
            "attrs: key 'loader_workers': want a number, a boolean or a string, got [1]");
}

TEST(RequestTest, FieldErrors) {
  EXPECT_EQ(Json(R"({"model": "", "batch": 1})").message(), "field 'model': want a non-empty path string");
  EXPECT_EQ(Json(R"({"model": "x", "batch": 1, "gpus": 2000})").message(),
            "field 'gpus': want an integer in [1, 1024], got 2000");
  EXPECT_EQ(Json(R"({"model": "x", "batch": 18446744073709551615})").message(),
            "field 'batch': want an integer in [1, 16777216], got 18446744073709551615");
  EXPECT_EQ(Json(R"({"model": "x", "batch": 1, "dims": {"seq": 0}})").message(),
            "field 'dims.seq': want an integer in [1, 16777216], got 0");
  EXPECT_EQ(Json(R"({"model": "x", "batch": 1, "duration_s": -1})").message(),
            "field 'duration_s': want a number of seconds in [0, 1e12], got -1");
  EXPECT_EQ(Json(R"({"model": "x", "batch": 1, "mem_mib": "lots"})").message(),
            "field 'mem_mib': want a number of MiB in [0, 1e9], got \"lots\"");
  EXPECT_THAT(Json(R"({"model": "x", "batch": 1, "gpu": "RTX3900"})").message(),
              HasSubstr("field 'gpu': unknown GPU 'RTX3900'; closest: RTX3090, "));
  EXPECT_THAT(Json(R"({"model": "x", "batch": 1, "gpu": "quantum"})").message(),
              HasSubstr("field 'gpu': unknown GPU 'quantum'; closest: "));
  EXPECT_EQ(Json(R"({"model": "x", "batch": 1, "gpu": ")" + std::string(100, 'g') + R"("})").message(),
            "field 'gpu': unknown GPU '" + std::string(64, 'g') + "...' (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)");
}

TEST(RequestTest, GpuNamesAreCheckedWithTheClosestKnown) {
  EXPECT_EQ(*CheckGpuName("--cluster '2x H100'", "H100"), "H100");
  EXPECT_EQ(*CheckGpuName("x", "NVIDIA A100-SXM4-80GB"), "A100-80GB");
  EXPECT_THAT(CheckGpuName("--cluster '2x RTX3900'", "RTX3900").message(),
              HasSubstr("--cluster '2x RTX3900': unknown GPU 'RTX3900'; closest: RTX3090"));
  EXPECT_THAT(CheckGpuName("x", "H10").message(), HasSubstr("x: unknown GPU 'H10'; closest: "));
}

// The table's spelling rule keeps only letters and digits, so "H100\u0000" or a
// right-to-left override before "H100" was the H100 (in a job, a prediction and a
// pod's gpucast.io/gpu alike), as "1g.10gb\u0000" was a MIG slice before: refused.
TEST(RequestTest, AGpuNameWithAControlOrNonAsciiByteIsRefused) {
  for (const std::string& name : {std::string("H100\0", 5), std::string("\xe2\x80\xaeH100"), std::string("H100\x1b[2J")}) {
    Result<std::string> r = CheckGpuName("field 'gpu'", name);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_THAT(r.message(), HasSubstr("field 'gpu': a GPU name is printable ASCII (such as H100 or "
                                       "\"NVIDIA H100 80GB HBM3\"), got '"));
  }
  EXPECT_THAT(ParseSpecJson(R"({"model": "m.onnx", "batch": 8, "gpu": "H100\u0000"})").message(),
              HasSubstr("field 'gpu': a GPU name is printable ASCII"));
  EXPECT_EQ(*CheckGpuName("x", "NVIDIA H100 80GB HBM3"), "H100");
}

TEST(RequestTest, SeveralNetworksAsModels) {
  auto spec = Json(R"({"models": [{"path": "g.onnx"}, {"path": "d.onnx", "repeat": 3}], "batch": 64})");
  ASSERT_TRUE(spec.ok()) << spec.message();
  EXPECT_EQ(spec->model, "g.onnx");
  ASSERT_EQ(spec->Parts().size(), 2u);
  EXPECT_EQ(spec->Parts()[0].name, "g.onnx");
  EXPECT_EQ(spec->Parts()[1].name, "d.onnx");
  EXPECT_EQ(spec->Parts()[1].repeat, 3);
  auto half = Json(R"({"models": [{"path": "a.onnx"}, {"path": "c.onnx", "repeat": 0.5}], "batch": 1})");
  ASSERT_TRUE(half.ok()) << half.message();
  EXPECT_EQ(half->Parts()[1].repeat, 0.5);
  // One network once per step is a plain job.
  auto one = Json(R"({"models": [{"path": "x.onnx", "repeat": 1}], "batch": 1})");
  ASSERT_TRUE(one.ok()) << one.message();
  EXPECT_TRUE(one->models.empty());
  EXPECT_EQ(SpecToJson(*one), SpecToJson(*Json(R"({"model": "x.onnx", "batch": 1})")));
}

TEST(RequestTest, ModelsErrors) {
  EXPECT_EQ(Json(R"({"model": "x", "models": [{"path": "y"}], "batch": 1})").message(),
            "fields 'model' and 'models': give one (models lists every network of the job)");
  EXPECT_EQ(Json(R"({"batch": 2})").message(),
            "field 'model': missing (path of an ONNX file, or 'models': [{\"path\", \"repeat\"}...])");
  EXPECT_EQ(Json(R"({"models": [], "batch": 1})").message(),
            "field 'models': want an array of 1 to 16 objects {\"path\": FILE, \"repeat\": PASSES}");
  EXPECT_EQ(Json(R"({"models": ["g.onnx"], "batch": 1})").message(),
            "field 'models[0]': want an object {\"path\": FILE, \"repeat\": PASSES}");
  EXPECT_EQ(Json(R"({"models": [{"path": "g"}, {"repeat": 2}], "batch": 1})").message(),
            "field 'models[1].path': want a path (missing)");
  EXPECT_EQ(Json(R"({"models": [{"path": "g", "repeat": 0}], "batch": 1})").message(),
            "field 'models[0].repeat': want forward+backward passes per step, a number in (0, 1000]");
  EXPECT_EQ(Json(R"({"models": [{"path": "g", "weight": 2}], "batch": 1})").message(),
            "models[0]: unknown field 'weight' (known: path, repeat)");
  EXPECT_EQ(Json(R"({"models": [{"path": "g"}, {"path": "g", "repeat": 2}], "batch": 1})").message(),
            "models[1]: path 'g' is listed twice (give one entry with the total repeat)");
}

TEST(RequestTest, UploadsTakeTheirFieldsFromTheQueryString) {
  RequestParts in;
  in.content_type = "application/octet-stream";
  in.body = "onnx bytes";
  in.params = {{"batch", "8"}, {"amp", "true"}, {"gpu", "T4"}, {"attr.loader_ms_per_sample", "3.5"},
               {"dim.seq", "64"}, {"duration_s", "12.5"}, {"mem_mib", "100"}};
  int status = 0;
  auto r = ParseJobRequest(in, {}, &status);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->upload);
  EXPECT_EQ(r->spec.batch, 8);
  EXPECT_TRUE(r->spec.amp);
  EXPECT_EQ(r->spec.gpu, "T4");
  EXPECT_EQ(r->spec.dims.at("seq"), 64);
  EXPECT_EQ(*r->spec.duration_s, 12.5);
  EXPECT_EQ(r->spec.mem_mib, 100);
  in.params = {{"amp", "1"}};
  EXPECT_EQ(ParseJobRequest(in, {}, &status).message(), "parameter 'batch': missing (the batch size, an integer >= 1)");
  EXPECT_EQ(status, 400);
  in.params = {{"batch", "1"}, {"duration_s", "soon"}};
  EXPECT_EQ(ParseJobRequest(in, {}, &status).message(), "parameter 'duration_s': want a number in [0, 1e12], got 'soon'");
  in.body = "";
  EXPECT_EQ(ParseJobRequest(in, {}, &status).message(), "empty upload: want the ONNX file as the request body");
}

// A query key given twice (attr.loader_workers=1&attr.loader_workers=8) was the last one's value,
// silently; as gpucast predict refuses --attr or --dim given twice, it is a 400 naming the key.
TEST(RequestTest, AQueryParameterGivenTwiceIsRefused) {
  RequestParts in;
  in.content_type = "application/octet-stream";
  in.body = "onnx bytes";
  int status = 0;
  for (const char* key : {"batch", "attr.loader_workers", "dim.seq", "gpu"}) {
    const std::string v = std::string(key) == "gpu" ? "T4" : "8";
    in.params = {{"batch", "8"}, {key, v}};
    in.params.emplace(key, std::string(key) == "gpu" ? "H100" : "1");  // the same key again, another value
    auto r = ParseJobRequest(in, {}, &status);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.message(), "parameter '" + std::string(key) + "': given more than once");
    EXPECT_EQ(status, 400);
  }
}

TEST(RequestTest, ContentTypesQueryParametersAndReadAs) {
  RequestParts in;
  in.body = R"({"model": "x.onnx", "batch": 2})";
  int status = 0;
  ASSERT_TRUE(ParseJobRequest(in, {}, &status).ok());
  in.content_type = "text/plain";
  EXPECT_EQ(ParseJobRequest(in, {}, &status).message(),
            "Content-Type 'text/plain': want application/json (job as JSON) or application/octet-stream (ONNX upload)");
  EXPECT_EQ(status, 415);
  in.content_type = "application/json; charset=utf-8";
  in.params = {{"batch", "2"}};
  EXPECT_THAT(ParseJobRequest(in, {}, &status).message(), HasSubstr("query parameter 'batch': a JSON job"));
  EXPECT_EQ(status, 400);
  in.params.clear();
  in.read_as = "1000:1000";
  auto r = ParseJobRequest(in, {}, &status);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->read_as->uid, 1000u);
  in.read_as = "root";
  EXPECT_EQ(ParseJobRequest(in, {}, &status).message(), "X-Gpucast-Read-As: want UID:GID");
  in.read_as = "1000:1000";
  in.content_type = "application/octet-stream";
  EXPECT_EQ(ParseJobRequest(in, {}, &status).message(),
            "X-Gpucast-Read-As: applies to a JSON job naming model paths, not to an upload");
  in.content_type = "";
  in.read_as.reset();
  const std::string deep(40, '[');
  in.body = deep;
  EXPECT_EQ(ParseJobRequest(in, {}, &status).message(), "request body: JSON nested deeper than 32 levels");
}

}  // namespace
}  // namespace gpucast::service
