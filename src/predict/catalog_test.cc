#include "predict/catalog.h"

#include <gtest/gtest.h>

#include "util/paths.h"

namespace gpucast {
namespace {

TEST(CatalogTest, ParsesAndResolvesFiles) {
  auto c = ParseCatalog(R"({"version":1,"gpu":"RTX3090","workloads":[
    {"model":"DCGAN","dataset":"LSUN","graphs":[{"file":"g.onnx"},{"file":"d.onnx","repeat":2.5,"forward_only":1}],
     "dims":{},"attrs":{"loader_workers":2,"data_on_gpu":0,"rl_env":0},"notes":"x"}]})",
                        "cat.json", "/m");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->gpu, "RTX3090");
  const CatalogWorkload* w = c->Find("DCGAN", "LSUN");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->graphs.size(), 2u);
  EXPECT_EQ(w->graphs[0].file, "/m/g.onnx");
  EXPECT_EQ(w->graphs[0].repeat, 1);
  EXPECT_EQ(w->graphs[1].repeat, 2.5);
  EXPECT_EQ(w->graphs[1].forward_only, 1);
  EXPECT_EQ(w->attrs.loader_workers, 2);
  EXPECT_EQ(w->attrs.data_on_gpu, false);
  EXPECT_EQ(c->Find("DCGAN", "MNIST"), nullptr);
}

TEST(CatalogTest, ErrorsNameFileAndField) {
  auto err = [](const std::string& text) { return ParseCatalog(text, "cat.json", "").message(); };
  EXPECT_EQ(err("{"), "cat.json: not valid JSON");
  EXPECT_EQ(err(R"({"version":2,"gpu":"X","workloads":[]})"), "cat.json: version: 2 not supported, want 1");
  EXPECT_EQ(err(R"({"version":1,"workloads":[]})"), "cat.json: gpu: missing or not a string");
  EXPECT_EQ(err(R"({"version":1,"gpu":"X","workloads":[{"model":"A","dataset":"B"}]})"),
            "cat.json: workloads[0].graphs: missing");
  EXPECT_EQ(err(R"({"version":1,"gpu":"X","workloads":[{"model":"A","dataset":"B",
                   "graphs":[{"file":"a.onnx","repeat":0}]}]})"),
            "cat.json: workloads[0].graphs[0].repeat: want a number > 0");
  EXPECT_EQ(err(R"({"version":1,"gpu":"X","workloads":[{"model":"A","dataset":"B",
                   "graphs":[{"file":"a.onnx","forward_only":-1}]}]})"),
            "cat.json: workloads[0].graphs[0].forward_only: want a number >= 0");
  EXPECT_EQ(err(R"({"version":1,"gpu":"X","workloads":[{"model":"A","dataset":"B",
                   "graphs":[{"file":"a.onnx"}],"dims":{"seq":"long"}}]})"),
            "cat.json: workloads[0].dims.seq: want an integer >= 1");
  EXPECT_EQ(err(R"({"version":1,"gpu":"X","workloads":[{"model":"A","dataset":"B",
                   "graphs":[{"file":"a.onnx"}],"colour":1}]})"),
            "cat.json: workloads[0].colour: unknown key");
  std::string unknown_attr = err(R"({"version":1,"gpu":"X","workloads":[{"model":"A","dataset":"B",
                   "graphs":[{"file":"a.onnx"}],"attrs":{"workers":2}}]})");
  EXPECT_EQ(unknown_attr.rfind("cat.json: workloads[0].attrs.workers: ", 0), 0u) << unknown_attr;
  EXPECT_EQ(err(R"({"version":1,"gpu":"X","workloads":[
                   {"model":"A","dataset":"B","graphs":[{"file":"a.onnx"}]},
                   {"model":"A","dataset":"B","graphs":[{"file":"b.onnx"}]}]})"),
            "cat.json: workloads[1]: duplicate workload A/B");
}

// --catalog was read without a bound: /dev/zero grew until killed, a FIFO hung.
TEST(CatalogTest, CatalogThatIsNotARegularFileIsAnError) {
  EXPECT_EQ(LoadCatalog("/dev/zero").message(), "catalog: /dev/zero: not a regular file (a device)");
  EXPECT_EQ(LoadCatalog("/").message(), "catalog: /: not a regular file (a directory)");
  EXPECT_EQ(LoadCatalog("/nonexistent/catalog.json").message(),
            "catalog: /nonexistent/catalog.json: cannot open: No such file or directory");
}

TEST(CatalogTest, ProjectCatalogCoversTheMeasuredWorkloads) {
  auto c = LoadCatalog(HomeDir() + "/models/catalog.json");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->gpu, "RTX3090");
  for (const char* key : {"BERT/SQuAD", "DCGAN/LSUN", "EfficientNet/CIFAR-10", "LSTM/Wikitext2",
                          "MobileNetV2/CIFAR-10", "NeuMF/MovieLens", "PPO/LunarLander",
                          "PointNet/ShapeNet", "ResNet50/ImageNet", "TD3/BipedalWalker", "VGG/CIFAR-10"}) {
    std::string k = key;
    size_t slash = k.find('/');
    EXPECT_NE(c->Find(k.substr(0, slash), k.substr(slash + 1)), nullptr) << key;
  }
}

}  // namespace
}  // namespace gpucast
