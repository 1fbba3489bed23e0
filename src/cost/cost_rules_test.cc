// The rule table itself: no duplicates, and every op the bundled workloads
// and torchvision classification models export to has a rule.
#include <gtest/gtest.h>

#include <set>

#include "cost/rules.h"
#include "cost/saved_rules.h"

namespace gpucast {
namespace {

TEST(RuleTable, HasNoDuplicateOps) {
  Result<std::vector<const CostRule*>> r = CheckRuleTable(CostRuleTable());
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->size(), CostRuleTable().size());
}

TEST(RuleTable, DuplicateOpIsAnError) {
  std::vector<CostRule> table = {{"Relu", Category::kActivation, Elementwise(1, 1)},
                                 {"Conv", Category::kConvolution, ConvRule},
                                 {"Relu", Category::kActivation, Elementwise(2, 2)}};
  Result<std::vector<const CostRule*>> r = CheckRuleTable(table);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "cost rule table: duplicate op 'Relu'");
}

TEST(RuleTable, CoversTheExportedOps) {
  const std::vector<std::pair<const char*, Category>> want = {
      {"Conv", Category::kConvolution}, {"ConvTranspose", Category::kConvolution},
      {"Gemm", Category::kMatmul}, {"MatMul", Category::kMatmul},
      {"LSTM", Category::kRecurrent}, {"GRU", Category::kRecurrent}, {"RNN", Category::kRecurrent},
      {"BatchNormalization", Category::kNormalization},
      {"LayerNormalization", Category::kNormalization},
      {"ReduceMean", Category::kElementwise}, {"Sub", Category::kElementwise},
      {"Pow", Category::kElementwise}, {"Add", Category::kElementwise},
      {"Sqrt", Category::kElementwise}, {"Div", Category::kElementwise},
      {"Mul", Category::kElementwise}, {"ReduceSum", Category::kElementwise},
      {"Dropout", Category::kElementwise},
      {"Relu", Category::kActivation}, {"LeakyRelu", Category::kActivation},
      {"Sigmoid", Category::kActivation}, {"Tanh", Category::kActivation},
      {"Gelu", Category::kActivation}, {"Erf", Category::kActivation},
      {"Softmax", Category::kActivation}, {"LogSoftmax", Category::kActivation},
      {"Clip", Category::kActivation}, {"HardSigmoid", Category::kActivation},
      {"HardSwish", Category::kActivation}, {"Elu", Category::kActivation},
      {"Softplus", Category::kActivation},
      {"MaxPool", Category::kPooling}, {"AveragePool", Category::kPooling},
      {"GlobalAveragePool", Category::kPooling}, {"GlobalMaxPool", Category::kPooling},
      {"ReduceMax", Category::kPooling},
      {"Gather", Category::kDataMovement},
      {"Reshape", Category::kDataMovement}, {"Flatten", Category::kDataMovement},
      {"Transpose", Category::kDataMovement}, {"Concat", Category::kDataMovement},
      {"Split", Category::kDataMovement}, {"Slice", Category::kDataMovement},
      {"Squeeze", Category::kDataMovement}, {"Unsqueeze", Category::kDataMovement},
      {"Shape", Category::kDataMovement}, {"Constant", Category::kDataMovement},
      {"Identity", Category::kDataMovement}, {"Cast", Category::kDataMovement},
      {"Expand", Category::kDataMovement}, {"ConstantOfShape", Category::kDataMovement},
      {"Range", Category::kDataMovement}, {"Where", Category::kDataMovement},
  };
  for (const auto& [op, cat] : want) {
    const CostRule* r = FindCostRule(op);
    ASSERT_NE(r, nullptr) << op;
    EXPECT_EQ(r->category, cat) << op;
  }
  EXPECT_EQ(FindCostRule("Det"), nullptr);  // stays unsupported: "no cost rule"
  EXPECT_EQ(FindCostRule("Loop"), nullptr);  // control flow: the driver says so
}

TEST(CategoryNames, AreUniqueLowercase) {
  std::set<std::string> names;
  for (int i = 0; i < kNumCategories; ++i) names.insert(CategoryName(static_cast<Category>(i)));
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumCategories));
  EXPECT_STREQ(CategoryName(Category::kDataMovement), "data_movement");
  EXPECT_STREQ(CategoryName(Category::kMatmul), "matmul");
}

// Every op with a cost rule has a memory rule (what it keeps for backward), and
// the memory table names no op the cost table lacks.
TEST(SavedRuleTable, OneRowPerCostRule) {
  std::set<std::string> cost, saved;
  for (const CostRule& r : CostRuleTable()) cost.insert(r.op_type);
  for (const SavedRule& r : SavedRuleTable()) EXPECT_TRUE(saved.insert(r.op_type).second) << "duplicate " << r.op_type;
  EXPECT_EQ(cost, saved);
  for (const std::string& op : cost) EXPECT_NE(FindSavedRule(op), nullptr) << op;
  EXPECT_EQ(FindSavedRule("NoSuchOp"), nullptr);
}

}  // namespace
}  // namespace gpucast
