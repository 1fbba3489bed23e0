// --cluster specs: the short forms, mixed clusters of several node groups,
// and the error naming the part that does not parse.
#include "sim/cluster.h"

#include <gtest/gtest.h>

#include "util/paths.h"

namespace gpucast::sim {
namespace {

// The mixed cluster: two A100 nodes and two H100 nodes, 8 GPUs each.
TEST(ClusterSpec, MixedNodeGroupsKeepTheirTypes) {
  auto c = ParseCluster("nodes=2,gpus_per_node=8,type=A100-80GB;nodes=2,gpus_per_node=8,type=H100", DataDir());
  ASSERT_TRUE(c.ok()) << c.message();
  ASSERT_EQ(c->gpus.size(), 32u);
  int a100 = 0, h100 = 0;
  for (const Gpu& g : c->gpus) {
    a100 += g.type == "A100-80GB";
    h100 += g.type == "H100";
  }
  EXPECT_EQ(a100, 16);
  EXPECT_EQ(h100, 16);
  // Groups in the order given, on nodes of their own: GPUs 0-15 on nodes 0-1, 16-31 on 2-3.
  EXPECT_EQ(c->gpus[0].type, "A100-80GB");
  EXPECT_EQ(c->gpus[15].node, 1);
  EXPECT_EQ(c->gpus[16].type, "H100");
  EXPECT_EQ(c->gpus[16].node, 2);
  EXPECT_EQ(c->gpus[31].node, 3);
  EXPECT_EQ(c->gpus[31].id, 31);
  EXPECT_EQ(c->gpus[0].mem_mib, 80 * 1024.0);
  const std::vector<NodeGroup> groups = NodeGroups(*c);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].type, "A100-80GB");
  EXPECT_EQ(groups[0].nodes, 2);
  EXPECT_EQ(groups[0].gpus_per_node, 8);
  EXPECT_EQ(groups[1].type, "H100");
  EXPECT_EQ(groups[1].first_node, 2);
  EXPECT_EQ(groups[1].first_gpu, 16);
  EXPECT_EQ(GpuTypes(*c), (std::vector<std::string>{"A100-80GB", "H100"}));
}

TEST(ClusterSpec, ShortFormsStillWork) {
  auto a = ParseCluster("4x RTX3090", DataDir());
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->gpus.size(), 4u);
  EXPECT_EQ(NodeGroups(*a).size(), 1u);
  auto b = ParseCluster("2x A100-80GB; 3x V100M32", DataDir());
  ASSERT_TRUE(b.ok()) << b.message();
  ASSERT_EQ(b->gpus.size(), 5u);
  EXPECT_EQ(b->gpus[2].type, "V100-32GB");
  EXPECT_EQ(b->gpus[2].node, 1);
  EXPECT_EQ(b->gpus[2].mem_mib, 32768);
  auto c = ParseCluster("gpus=2,type=H100,mem_gib=94", DataDir());
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(c->gpus[1].mem_mib, 94 * 1024.0);
}

TEST(ClusterSpec, ErrorsNameThePart) {
  const std::string spec = "nodes=2,gpus_per_node=8,type=A100-80GB;nodes=2,gpus_per_node=x,type=H100";
  EXPECT_EQ(ParseCluster(spec, DataDir()).message(),
            "--cluster '" + spec + "': node group 2 'nodes=2,gpus_per_node=x,type=H100': gpus_per_node must be a "
            "positive integer");
  EXPECT_EQ(ParseCluster("4x A100-80GB;", DataDir()).message(),
            "--cluster '4x A100-80GB;': node group 2 '': empty (want 'Nx TYPE' or nodes=N,gpus_per_node=M,type=T)");
  EXPECT_EQ(ParseCluster("nodes=2,type=A100-80GB,type=H100", DataDir()).message(),
            "--cluster 'nodes=2,type=A100-80GB,type=H100': 'type' given twice");
  EXPECT_EQ(ParseCluster("nodes=2,gpus=4", DataDir()).message(),
            "--cluster 'nodes=2,gpus=4': give nodes (with gpus_per_node) or gpus, not both");
  Result<Cluster> typo = ParseCluster("4x A100-80GB;2x H1OO", DataDir());
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.message().rfind("--cluster '4x A100-80GB;2x H1OO': node group 2 '2x H1OO': unknown GPU 'H1OO'", 0), 0u)
      << typo.message();
  EXPECT_EQ(ParseCluster("4x A100-80GB;junk", DataDir()).message(),
            "--cluster '4x A100-80GB;junk': node group 2 'junk': 'junk' is not key=value");
  EXPECT_EQ(ParseCluster("alibaba-nodes;4x H100", DataDir()).message(),
            "--cluster 'alibaba-nodes;4x H100': alibaba-nodes cannot be combined with other node groups (';')");
}

}  // namespace
}  // namespace gpucast::sim
