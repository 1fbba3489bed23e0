#include "sim/trace.h"

#include <gtest/gtest.h>

#include "sim/cluster.h"
#include "sim/test_util.h"
#include "sim/workload.h"
#include "util/paths.h"

namespace gpucast::sim {
namespace {

using testing::TempDir;
using testing::WriteText;

TEST(Timestamp, MatchesEpochArithmetic) {
  EXPECT_EQ(ParseTimestamp("1970-01-01 00:00:00").value(), 0);
  // 2017-10-09 = 17448 days after 1970-01-01.
  EXPECT_EQ(ParseTimestamp("2017-10-09 07:01:55").value(), 17448LL * 86400 + 7 * 3600 + 60 + 55);
  EXPECT_FALSE(ParseTimestamp("2017-13-09 07:01:55"));
  EXPECT_FALSE(ParseTimestamp("2017-10-09T07:01:55"));
}

TEST(Philly, SortsRebasesAndTakesFirstN) {
  auto dir = TempDir("philly_sort");
  auto p = WriteText(dir, "p.csv",
                     "timestamp,duration,num_gpus,gpu_time,cluster\n"
                     "2017-10-09 07:01:55,66.0,1,66.0,a\n"
                     "2017-10-09 06:13:03,2951.0,2,5902.0,b\n"
                     "2017-10-09 06:13:36,10.0,1,10.0,b\n");
  auto t = LoadPhilly(p, {2, false});
  ASSERT_TRUE(t.ok()) << t.message();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].id, 1);
  EXPECT_EQ(t->jobs[0].submit_s, 0);
  EXPECT_EQ(t->jobs[0].num_gpus, 2);
  EXPECT_EQ(t->jobs[1].id, 2);
  EXPECT_EQ(t->jobs[1].submit_s, 33);
  EXPECT_EQ(t->jobs[1].duration_s, 10);
}

TEST(Philly, MalformedLineNamesFileAndLine) {
  auto dir = TempDir("philly_bad");
  auto p = WriteText(dir, "bad.csv",
                     "timestamp,duration,num_gpus,gpu_time,cluster\n"
                     "2017-10-09 07:01:55,66.0,1,66.0,a\n"
                     "2017-10-09 07:01:56,abc,1,66.0,a\n"
                     "2017-10-09 07:01:57,5,0,0,a\n"
                     "2017-10-09 07:01:58\n");
  auto t = LoadPhilly(p, {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "bad.csv: line 3: duration 'abc' is not a positive number");
  auto s = LoadPhilly(p, {-1, true});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->jobs.size(), 1u);
  EXPECT_EQ(s->bad_lines, 3);
}

TEST(Philly, RealTraceHasAllJobs) {
  auto t = LoadTrace("philly", DataDir(), {});
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->jobs.size(), 82247u);  // the README's count
  EXPECT_EQ(t->bad_lines, 0);
  int single = 0;
  for (auto& j : t->jobs) single += j.num_gpus == 1;
  EXPECT_NEAR(single / 82247.0, 0.93, 0.01);  // "93% of jobs use one GPU"
}

TEST(Alibaba, FiltersCpuAndPendingPods) {
  auto dir = TempDir("ali");
  auto p = WriteText(dir, "pods.csv",
                     "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
                     "p0,1,1,1,460,,LS,Running,100,1100,150\n"
                     "p1,1,1,0,0,,LS,Running,0,10,0\n"
                     "p2,1,1,1,1000,,LS,Pending,50,,\n"
                     "p3,1,1,2,1000,,LS,Running,200,500,300\n"
                     "p4,1,1,x,1000,,LS,Running,200,500,300\n");
  auto t = LoadAlibaba(p, {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "pods.csv: line 6: num_gpu 'x' is not a non-negative integer");
  auto s = LoadAlibaba(p, {-1, true});
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->jobs.size(), 2u);
  EXPECT_EQ(s->filtered, 2);
  EXPECT_EQ(s->jobs[0].duration_s, 950);  // deletion - scheduled
  EXPECT_DOUBLE_EQ(s->jobs[0].gpu_request, 0.46);
  EXPECT_EQ(s->jobs[1].submit_s, 100);
  EXPECT_EQ(s->jobs[1].num_gpus, 2);
}

TEST(Gavel, DurationIsStepsOverV100Throughput) {
  auto dir = TempDir("gavel");
  auto js = WriteText(dir, "t.json", R"J({"v100": {"('LM (batch size 80)', 1)": {"null": 20.0}}})J");
  auto tr = WriteText(dir, "g.trace", "LM (batch size 80)\tcmd\t-step\t1\t1000\t5.0\t1\n"
                                      "Foo (batch size 1)\tcmd\t-step\t1\t1000\t6.0\t1\n");
  auto t = LoadGavel(tr, js, {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "g.trace: line 2: job type '('Foo (batch size 1)', 1)' has no V100 throughput");
  auto s = LoadGavel(tr, js, {-1, true});
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->jobs.size(), 1u);
  EXPECT_DOUBLE_EQ(s->jobs[0].duration_s, 50.0);
  auto real = LoadTrace("gavel", DataDir(), {});
  ASSERT_TRUE(real.ok()) << real.message();
  EXPECT_EQ(real->jobs.size(), 2000u);
}

TEST(Generic, ColumnsAndErrors) {
  auto dir = TempDir("generic");
  auto p = WriteText(dir, "jobs.csv", "# comment\njob_id,submit_s,duration_s,num_gpus\n7,5,100,2\n8,0,-1,1\n");
  auto t = LoadTrace(p, DataDir(), {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "jobs.csv: line 4: duration_s '-1' is not a positive number");
  auto s = LoadTrace(p, DataDir(), {-1, true});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->jobs[0].id, 7);
  EXPECT_EQ(LoadTrace("nosuch", DataDir(), {}).message(),
            "unknown trace 'nosuch': want philly, alibaba2023, gavel, or a path to a CSV");
}

TEST(Cluster, Specs) {
  auto a = ParseCluster("64x RTX3090", DataDir());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->gpus.size(), 64u);
  EXPECT_EQ(a->gpus[63].node, 7);
  EXPECT_EQ(a->gpus[0].mem_mib, 24576);
  auto b = ParseCluster("nodes=2,gpus_per_node=4,mem_gib=16", DataDir());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->gpus.size(), 8u);
  EXPECT_EQ(b->gpus[7].mem_mib, 16384);
  EXPECT_EQ(ParseCluster("nodes=2,foo=3", DataDir()).message(),
            "--cluster 'nodes=2,foo=3': unknown key 'foo' (want nodes, gpus_per_node, gpus, mem_gib, type)");
  auto all = ParseCluster("alibaba-nodes", DataDir());
  ASSERT_TRUE(all.ok()) << all.message();
  EXPECT_EQ(all->gpus.size(), 6212u);  // the README's count
  EXPECT_EQ(ParseCluster("4x V100M32", DataDir())->gpus[0].mem_mib, 32768);
}

TEST(Workloads, RealTableAndPredictionsCsv) {
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok()) << w.message();
  EXPECT_EQ(w->size(), 52u);
  EXPECT_FALSE((*w)[0].HasPrediction());
  auto dir = TempDir("preds");
  auto p = WriteText(dir, "p.csv", "model,dataset,batchsize,amp,predicted_util\nBERT,SQuAD,32,0,90\n");
  EXPECT_EQ(LoadPredictionsCsv(p, &*w).message(), "p.csv: no prediction for workload BERT/SQuAD/b32/amp1");
  auto q = WriteText(dir, "q.csv", "model,dataset,batchsize,amp,predicted_util\nBERT,SQuAD,16,0,90\n");
  EXPECT_EQ(LoadPredictionsCsv(q, &*w).message(), "q.csv: line 2: workload BERT/SQuAD/b16/amp0 is not in single_data.csv");
}

}  // namespace
}  // namespace gpucast::sim
