// A small language model with a tied embedding and a fresh (deep-copied)
// nn.TransformerEncoder, exported the ways users export it (models/ties/,
// tools/tie_export.py): training mode with constant folding (the exporter
// writes the tied matrix twice, once transposed), the default eval-mode
// export (it also merges parameters of equal value into Identity nodes), and
// without folding. Each must count torch's own parameters, and the weights'
// bytes, exactly (graph/param_ties.h).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cost/cost.h"
#include "graph/onnx_loader.h"
#include "util/paths.h"

namespace gpucast {
namespace {

const std::string kDir = HomeDir() + "/models/ties/";

nlohmann::json Reference() {
  std::ifstream in(kDir + "reference.json");
  EXPECT_TRUE(in.good()) << "models/ties/reference.json: run tools/tie_export.py";
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

Result<CostReport> Cost(const std::string& file, int64_t batch) {
  LoadOptions opts;
  opts.batch = batch;
  Result<Graph> g = LoadOnnxGraph(kDir + file, opts);
  if (!g.ok()) return g.status();
  return AnalyzeCost(*g, {});
}

TEST(TiedAndMergedParameters, EveryExportCountsTorchsParameters) {
  nlohmann::json ref = Reference();
  ASSERT_TRUE(ref.is_object() && ref.contains("files"));
  const int64_t torch = ref["params"].get<int64_t>();
  ASSERT_EQ(ref["files"].size(), 3u);
  for (const auto& f : ref["files"]) {
    const std::string file = f.get<std::string>();
    Result<CostReport> r = Cost(file, ref["batch"].get<int64_t>());
    ASSERT_TRUE(r.ok()) << r.message();
    // Before (counted as written): lm-train.onnx 34,048 (the tied matrix twice),
    // lm-eval.onnx 25,340 (the merged parameters once, the tied matrix twice).
    EXPECT_EQ(r->totals.params, torch) << file;
    EXPECT_EQ(r->totals.weight_bytes, 4 * torch) << file;  // fp32 parameters, and no buffers in this model
  }
  EXPECT_EQ(ref["untied_params"].get<int64_t>(), torch + 256 * 32);  // the embedding's 256 x 32, once more
}

TEST(TiedAndMergedParameters, TheCopyIsNamedInAWarning) {
  LoadOptions opts;
  opts.batch = 2;
  Result<Graph> g = LoadOnnxGraph(kDir + "lm-train.onnx", opts);
  ASSERT_TRUE(g.ok()) << g.message();
  std::string all;
  for (const std::string& w : g->warnings) all += w + "\n";
  EXPECT_NE(all.find(kDir + "lm-train.onnx: 1 parameter(s) hold the transpose of another (a tied weight whose "
                     "Transpose the exporter folded into a copy; first 'onnx::MatMul_"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("' of 'embed.weight'): each is counted as the parameter it copies"), std::string::npos) << all;
  // Without folding the Transpose is a node of the tied matrix: nothing to say.
  Result<Graph> nofold = LoadOnnxGraph(kDir + "lm-train-nofold.onnx", opts);
  ASSERT_TRUE(nofold.ok()) << nofold.message();
  for (const std::string& w : nofold->warnings) EXPECT_EQ(w.find("transpose of another"), std::string::npos) << w;
}

TEST(TiedAndMergedParameters, EveryWayOfReadingTheFileCountsAlike) {
  // The service filters a file once (ReadModelWithoutWeights on its descriptor) and loads
  // the filtered bytes, which hold the tied copy's sample but no payload; the CLI loads
  // the path. Both must count torch's parameters.
  const int64_t torch = Reference()["params"].get<int64_t>();
  LoadOptions opts;
  opts.batch = 2;
  const std::string path = kDir + "lm-train.onnx";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Result<Graph> from_fd = LoadOnnxGraphFromFd(fd, "lm-train.onnx", opts);
  ASSERT_EQ(::lseek(fd, 0, SEEK_SET), 0);
  Result<std::string> filtered = ReadModelWithoutWeights(fd, "lm-train.onnx", opts);
  ::close(fd);
  ASSERT_TRUE(from_fd.ok()) << from_fd.message();
  ASSERT_TRUE(filtered.ok()) << filtered.message();
  // The 32 KiB embedding and its 32 KiB copy are not in it.
  EXPECT_LT(filtered->size() + 2 * 256 * 32 * 4, static_cast<size_t>(std::filesystem::file_size(path)));
  Result<Graph> refiltered = LoadOnnxGraphFromBytes(*filtered, "lm-train.onnx", opts);
  ASSERT_TRUE(refiltered.ok()) << refiltered.message();
  for (const Result<Graph>* g : {&from_fd, &refiltered}) {
    Result<CostReport> r = AnalyzeCost(**g, {});
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->totals.params, torch);
  }
}

TEST(TiedAndMergedParameters, MergedParametersGetTheirOwnGradients) {
  // The eval-mode export's Identity outputs are parameters of their own: the
  // optimizer's state and the gradients are torch's count, as in training mode.
  Result<CostReport> eval = Cost("lm-eval.onnx", 2), train = Cost("lm-train.onnx", 2);
  ASSERT_TRUE(eval.ok() && train.ok());
  EXPECT_EQ(eval->totals.params, train->totals.params);
  EXPECT_EQ(eval->totals.weight_bytes, train->totals.weight_bytes);
}

}  // namespace
}  // namespace gpucast
