#include "cost/cost_json.h"

#include <gtest/gtest.h>

#include "cost/test_graph.h"

namespace gpucast {
namespace {

TEST(CostJson, HasTheStableFields) {
  testing::GraphBuilder b("m.onnx", 2);
  b.Data("x", {2, 4}).Param("w", {4, 3}).Value("y", {2, 3}).Value("z", {2, 3});
  b.Op("MatMul", "fc", {"x", "w"}, {"y"});
  b.Op("Det", "e", {"y"}, {"z"});
  Result<CostReport> r = AnalyzeCost(b.graph(), {});
  ASSERT_TRUE(r.ok()) << r.message();
  nlohmann::json j = CostReportToJson(*r);
  ASSERT_EQ(j.size(), 7u);
  const nlohmann::json& n = j["nodes"][0];
  EXPECT_EQ(n["name"], "fc");
  EXPECT_EQ(n["op_type"], "MatMul");
  EXPECT_EQ(n["category"], "matmul");
  EXPECT_EQ(n["input_shapes"], nlohmann::json::parse("[[2,4],[4,3]]"));
  EXPECT_EQ(n["output_shapes"], nlohmann::json::parse("[[2,3]]"));
  EXPECT_EQ(n["forward_flops"], 48);   // 2·2·3·4
  EXPECT_EQ(n["backward_flops"], 48);  // dW only
  EXPECT_EQ(n["params"], 12);
  EXPECT_EQ(n["activation_bytes"], 24);
  EXPECT_EQ(n["weight_bytes"], 48);
  EXPECT_EQ(n["lookup_bytes"], 0);  // not a lookup
  EXPECT_EQ(n["saved_bytes"], 0);  // keeps x for dW: a data input, resident anyway
  EXPECT_EQ(n["selection_bound"], false);  // no mask's selection in this graph
  EXPECT_EQ(n.size(), 13u);
  EXPECT_EQ(j["nodes"][1]["category"], "unsupported");
  const nlohmann::json& t = j["totals"];
  EXPECT_EQ(t["forward_flops"], 48);
  EXPECT_EQ(t["backward_flops"], 48);
  EXPECT_EQ(t["params"], 12);
  EXPECT_EQ(t["flops_by_category"]["matmul"], 96);
  EXPECT_EQ(t["nodes_by_category"]["unsupported"], 1);
  EXPECT_EQ(t["num_nodes"], 2);
  EXPECT_EQ(t["input_bytes_per_sample"], 16);
  EXPECT_EQ(t["saved_bytes"], 0);
  EXPECT_EQ(t["largest_tensor_bytes"], 24);
  EXPECT_EQ(t["data_input_bytes"], 32);
  EXPECT_EQ(t["autocast_weight_bytes"], 0);
  EXPECT_EQ(j["unsupported"], nlohmann::json::parse(
                                  R"([{"op_type":"Det","count":1,"reason":"no cost rule"}])"));
  // The Det makes the report partial.
  EXPECT_EQ(j["complete"], false);
  EXPECT_EQ(j["uncosted_nodes"], 1);
  EXPECT_EQ(j["selection_bound_nodes"], 0);
  EXPECT_EQ(j["first_uncosted"], "node 'e' (Det): no cost rule");
}

}  // namespace
}  // namespace gpucast
