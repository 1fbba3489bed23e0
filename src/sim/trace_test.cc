#include "sim/trace.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "sim/cluster.h"
#include "sim/simulator.h"
#include "sim/test_util.h"
#include "sim/text.h"
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

TEST(Alibaba, MissingColumnsAndShortLinesNameTheFile) {
  auto dir = TempDir("ali_bad");
  auto cols = WriteText(dir, "cols.csv", "name,num_gpu,gpu_milli,creation_time\np0,1,460,100\n");
  auto c = LoadAlibaba(cols, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.message(),
            "cols.csv: line 1: want columns num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time");
  auto p = WriteText(dir, "short.csv",
                     "num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
                     "1,460,100,1100,150\n"
                     "\n"
                     "1,460,100\n");
  auto t = LoadAlibaba(p, {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "short.csv: line 4: has 3 fields, want 5");
  auto s = LoadAlibaba(p, {-1, true});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->jobs.size(), 1u);
  EXPECT_EQ(s->bad_lines, 1);
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
  EXPECT_EQ(s->jobs[0].job_type, "LM (batch size 80)");
}

TEST(Philly, SizeAwareMixGivesMultiGpuJobsOnlyDataParallelWorkloads) {
  // The rule (docs/simulator.md, Workload mapping): a multi-GPU job draws only
  // the rows of workloads whose task Pollux measured data parallel (34 of 52
  // rows); a one-GPU job draws as before (the same row with or without the rule).
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok());
  int parallel = 0;
  for (const WorkloadProfile& x : *w) parallel += DataParallelWorkload(x) ? 1 : 0;
  EXPECT_EQ(parallel, 34);  // EfficientNet, MobileNetV2, VGG (6 each), ResNet50 (6), NeuMF, LSTM (4 each), BERT (2)
  auto t = LoadTrace("philly", DataDir(), {20000, false});
  ASSERT_TRUE(t.ok()) << t.message();
  auto sized = AssignWorkloads(*t, *w, 7, nullptr, true);
  auto uniform = AssignWorkloads(*t, *w, 7, nullptr, false);
  int multi = 0, one_gpu_excluded = 0;
  for (size_t i = 0; i < t->jobs.size(); ++i) {
    const WorkloadProfile& x = (*w)[sized[i]];
    if (t->jobs[i].num_gpus > 1) {
      ++multi;
      EXPECT_TRUE(DataParallelWorkload(x)) << x.Name() << " on " << t->jobs[i].num_gpus << " GPUs";
    } else {
      EXPECT_EQ(sized[i], uniform[i]);
      one_gpu_excluded += DataParallelWorkload(x) ? 0 : 1;
    }
  }
  EXPECT_GT(multi, 500);
  EXPECT_GT(one_gpu_excluded, 1000);  // PPO, TD3, PointNet and DCGAN still run on one GPU
}

TEST(Gavel, JobTypesNameTheirWorkloads) {
  // The simulator maps each Gavel job type to the measured workload of its
  // family (MapGavelJobType: nearest batch in log scale, amp 0; the smallest
  // when none is named); ResNet-18 (421 jobs) and Transformer (396 jobs) have
  // no counterpart and are drawn like unnamed jobs.
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok());
  auto real = LoadTrace("gavel", DataDir(), {});
  ASSERT_TRUE(real.ok()) << real.message();
  int64_t unmapped = 0;
  auto a = AssignWorkloads(*real, *w, 1, &unmapped);
  EXPECT_EQ(unmapped, 421 + 396);
  for (size_t i = 0; i < real->jobs.size(); ++i) {
    const std::string& type = real->jobs[i].job_type;
    const std::string name = (*w)[a[i]].Name();
    const std::map<std::string, std::string> expect = {{"ResNet-50 (batch size 16)", "ResNet50/ImageNet/b32/amp0"},
                                                       {"LM (batch size 80)", "LSTM/Wikitext2/b64/amp0"},
                                                       {"Recommendation (batch size 8192)", "NeuMF/MovieLens/b128/amp0"},
                                                       {"CycleGAN", "DCGAN/LSUN/b32/amp0"},
                                                       {"A3C", "PPO/LunarLander/b32/amp0"}};
    if (auto it = expect.find(type); it != expect.end()) {
      EXPECT_EQ(name, it->second) << type;
    }
    if (type.rfind("Transformer", 0) == 0) {
      EXPECT_EQ(a[i], AssignWorkload(1, real->jobs[i].id, static_cast<int>(w->size())));
    }
  }
}

Trace DayTrace() {
  // Day 0: 1 job, day 1: 2 jobs, day 2: 3 jobs, day 3: 4 jobs (offset 100 s x k in the day).
  Trace t;
  t.name = "days";
  int64_t id = 0;
  for (int d = 0; d < 4; ++d)
    for (int k = 0; k <= d; ++k) {
      TraceJob j;
      j.id = id++;
      j.submit_s = d * 86400.0 + 100.0 * k;
      j.duration_s = 10 + d;
      t.jobs.push_back(j);
    }
  return t;
}

TEST(Arrivals, LoadFactorCompressesInterArrivalTimes) {
  Trace t = DayTrace();
  ScaleArrivals(&t, 2);
  EXPECT_DOUBLE_EQ(t.jobs[1].submit_s, 43200);
  EXPECT_DOUBLE_EQ(t.jobs[2].submit_s, 43250);
  EXPECT_DOUBLE_EQ(t.jobs[2].duration_s, 11);  // durations kept
}

TEST(Arrivals, BootstrapCopiesNearbyDaysAndVariesWithTheSeed) {
  const Trace t = DayTrace();
  // Radius 0: every day is its own source: the trace, renumbered.
  Trace same = ResampleArrivals(t, 7, 86400, 0);
  ASSERT_EQ(same.jobs.size(), t.jobs.size());
  for (size_t i = 0; i < t.jobs.size(); ++i) {
    EXPECT_DOUBLE_EQ(same.jobs[i].submit_s, t.jobs[i].submit_s);
    EXPECT_EQ(same.jobs[i].source_id, t.jobs[i].id);
    EXPECT_EQ(same.jobs[i].id, static_cast<int64_t>(i));
  }
  // Radius 1: output day i copies one of days i-1..i+1, each job at its
  // offset in the day; the count of jobs on output day i is its source's.
  std::set<size_t> sizes;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Trace r = ResampleArrivals(t, seed, 86400, 1);
    sizes.insert(r.jobs.size());
    for (const TraceJob& j : r.jobs) {
      const TraceJob& src = t.jobs[static_cast<size_t>(j.source_id)];
      const double src_off = std::fmod(src.submit_s, 86400.0);
      EXPECT_DOUBLE_EQ(src.duration_s, j.duration_s);
      // Offsets within a day are kept (up to the rebase to the first submit, a multiple of 100 s here).
      EXPECT_EQ(static_cast<int64_t>(std::fmod(j.submit_s, 100.0)), static_cast<int64_t>(std::fmod(src_off, 100.0)));
    }
    EXPECT_EQ(r.jobs, ResampleArrivals(t, seed, 86400, 1).jobs);  // deterministic
  }
  EXPECT_GT(sizes.size(), 1u);  // the number of arrivals varies with the seed
  // One block: nothing to resample.
  Trace one;
  one.jobs = {t.jobs[0]};
  EXPECT_EQ(ResampleArrivals(one, 3).jobs.size(), 1u);
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

// Times beyond kMaxTraceSeconds: a submit 1e300 s after the first made
// --arrivals bootstrap allocate 1e295 day-blocks (std::length_error, abort),
// and without it the simulator's events lost the 100 s run (slowdown 0.5);
// an int64 deletion_time - scheduled_time overflowed. Each is an error
// naming the file (and the line).
TEST(Generic, TimesBeyondTheBoundAreErrorsNamingTheFile) {
  auto dir = TempDir("generic_huge");
  auto span = WriteText(dir, "span.csv", "submit_s,duration_s,num_gpus\n0,100,1\n1e300,100,1\n");
  auto a = LoadTrace(span, DataDir(), {});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.message(), "span.csv: submit times span 1e+300 s (jobs 0 and 1), more than 1000000000 s");
  auto dur = WriteText(dir, "dur.csv", "submit_s,duration_s,num_gpus\n0,1e300,1\n5,100,1\n");
  EXPECT_EQ(LoadTrace(dur, DataDir(), {}).message(), "dur.csv: line 2: duration_s '1e300' is more than 1000000000 s");
  auto s = LoadTrace(dur, DataDir(), {-1, true});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->bad_lines, 1);
  // The bound itself is accepted.
  auto edge = WriteText(dir, "edge.csv", "submit_s,duration_s,num_gpus\n0,1e9,1\n1e9,1,1\n");
  auto e = LoadTrace(edge, DataDir(), {});
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_EQ(e->jobs.size(), 2u);
  // Resampling what the loader accepts stays bounded.
  EXPECT_LE(ResampleArrivals(*e, 1).jobs.size(), 2u * 7);
}

// Traces (and the simulator's other inputs) were read without a bound:
// --trace /dev/zero died of std::bad_alloc, a FIFO hung, a directory was
// "empty file". Each is now an error naming the path and the reason, at once.
TEST(Generic, TraceThatIsNotABoundedRegularFileIsAnError) {
  auto dir = TempDir("generic_nonregular");
  EXPECT_EQ(LoadTrace(dir, DataDir(), {}).message(), dir + ": not a regular file (a directory)");
  EXPECT_EQ(LoadTrace("/dev/zero", DataDir(), {}).message(), "/dev/zero: not a regular file (a device)");
  const std::string fifo = dir + "/fifo.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(LoadTrace(fifo, DataDir(), {}).message(), fifo + ": not a regular file (a FIFO)");
  auto p = WriteText(dir, "jobs.csv", "submit_s,duration_s,num_gpus\n0,100,1\n");
  EXPECT_EQ(ReadFile(p, 10).message(), p + ": larger than 10 bytes");
  ASSERT_TRUE(LoadTrace(p, DataDir(), {}).ok());
}

// A trace with no job (a header only, or every line skipped) simulated nothing
// and reported slowdown 0.00 and JCT 0 with exit status 0.
TEST(Generic, TraceWithoutJobsIsAnError) {
  auto dir = TempDir("generic_nojobs");
  auto empty = WriteText(dir, "empty.csv", "submit_s,duration_s,num_gpus\n\n");
  EXPECT_EQ(LoadTrace(empty, DataDir(), {}).message(), "empty.csv: no jobs");
  auto bad = WriteText(dir, "bad.csv", "submit_s,duration_s,num_gpus\n0,-1,1\n0,x,1\n");
  EXPECT_EQ(LoadTrace(bad, DataDir(), {-1, true}).message(), "bad.csv: no jobs (2 malformed lines skipped)");
}

TEST(Alibaba, RunTimeOverflowIsAnErrorNamingTheLine) {
  auto dir = TempDir("ali_huge");
  auto p = WriteText(dir, "pods.csv",
                     "num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
                     "1,460,100,9223372036854775807,-9223372036854775807\n");
  auto t = LoadAlibaba(p, {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(), "pods.csv: line 2: deletion_time - scheduled_time 1.84467e+19 is more than 1000000000 s");
  auto g = WriteText(dir, "gpus.csv",
                     "num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n"
                     "4000000000,460,100,200,150\n");
  EXPECT_EQ(LoadAlibaba(g, {}).message(), "gpus.csv: line 2: num_gpu '4000000000' is more than 100000");
}

// Ids name jobs in jobs.csv and seed each job's workload and noise draws: two
// rows with one job_id were simulated as twins and written as one job twice.
TEST(Generic, RepeatedJobIdIsABadLine) {
  auto dir = TempDir("generic_dup");
  auto p = WriteText(dir, "dup.csv", "job_id,submit_s,duration_s,num_gpus\n7,5,100,2\n8,0,50,1\n\n7,9,10,1\n");
  EXPECT_EQ(LoadTrace(p, DataDir(), {}).message(), "dup.csv: line 5: job_id '7' repeats line 2");
  auto s = LoadTrace(p, DataDir(), {-1, true});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->bad_lines, 1);
  ASSERT_EQ(s->jobs.size(), 2u);
  EXPECT_EQ(s->jobs[0].id, 8);  // sorted by submit time: unsorted rows are fine
  EXPECT_EQ(s->jobs[1].id, 7);
  // A rejected row's id is not taken: the next row may use it.
  auto q = WriteText(dir, "q.csv", "job_id,submit_s,duration_s,num_gpus\n7,5,-1,2\n7,0,50,1\n");
  auto t = LoadTrace(q, DataDir(), {-1, true});
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->bad_lines, 1);
  EXPECT_EQ(t->jobs.at(0).id, 7);
}

// Every trace reader keeps a view of each line and a job for each: a 256 MiB
// file of short lines held tens of millions of them before anything was
// checked. More than kMaxTraceLines lines is an error naming the file.
TEST(Generic, TooManyLinesIsAnErrorNamingTheFile) {
  auto dir = TempDir("generic_lines");
  std::string text = "submit_s,duration_s,num_gpus\n0,1,1\n";
  text.append(kMaxTraceLines - 2, '\n');  // exactly kMaxTraceLines lines: fine
  auto p = WriteText(dir, "edge.csv", text);
  auto ok = LoadTrace(p, DataDir(), {});
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ(ok->jobs.size(), 1u);
  auto q = WriteText(dir, "lines.csv", text + "0,1,1");  // one more (without a final newline)
  EXPECT_EQ(LoadTrace(q, DataDir(), {}).message(),
            "lines.csv: " + std::to_string(kMaxTraceLines + 1) + " lines, more than " + std::to_string(kMaxTraceLines));
  EXPECT_EQ(LoadPhilly(q, {}).message(), LoadTrace(q, DataDir(), {}).message());
}

// A throughput so large that steps / throughput underflows made a job of run time 0.
TEST(Gavel, RunTimeThatUnderflowsIsABadLine) {
  auto dir = TempDir("gavel_tiny");
  auto js = WriteText(dir, "t.json", R"J({"v100": {"('LM (batch size 80)', 1)": {"null": 1e308}}})J");
  auto tr = WriteText(dir, "g.trace", "LM (batch size 80)\tcmd\t-step\t1\t1e-300\t5.0\t1\n");
  EXPECT_EQ(LoadGavel(tr, js, {}).message(),
            "g.trace: line 1: run time (total steps / V100 throughput) 0 is not positive");
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
  EXPECT_EQ(ParseCluster("4x V100M32", DataDir())->gpus[0].type, "V100-32GB");
  // Anonymised G2/G3 stand in as RTX3090 unless mapped.
  int g2 = 0;
  for (const Gpu& g : all->gpus) g2 += g.type == "RTX3090";
  EXPECT_EQ(g2, 549 * 8 + 39 * 8);
  auto a10 = ParseCluster("alibaba-nodes:G2=A10:G3=A100-80GB", DataDir());
  ASSERT_TRUE(a10.ok()) << a10.message();
  int big = 0;
  for (const Gpu& g : a10->gpus) big += g.mem_mib == 80 * 1024.0;
  EXPECT_EQ(big, 39 * 8);
  EXPECT_EQ(ParseCluster("alibaba-nodes:G4=A10", DataDir()).message(),
            "--cluster 'alibaba-nodes:G4=A10': unknown option 'G4' (want every, G2, G3)");
  EXPECT_EQ(ParseCluster("alibaba-nodes:G2=RTX3900", DataDir()).message(),
            "openb_node_list_gpu_node.csv: line 28: model 'G2' (mapped to 'RTX3900'): unknown GPU 'RTX3900'; "
            "closest: RTX3090, RTX3050, RTX3060, RTX3070, RTX3080 (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)");
}

TEST(Cluster, UnknownGpuTypeNamesTheClosest) {
  EXPECT_EQ(ParseCluster("128x RTX3900", DataDir()).message(),
            "--cluster '128x RTX3900': unknown GPU 'RTX3900'; closest: RTX3090, RTX3050, RTX3060, RTX3070, "
            "RTX3080 (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)");
  EXPECT_EQ(ParseCluster("nodes=2,type=A100-80", DataDir()).message(),
            "--cluster 'nodes=2,type=A100-80': unknown GPU 'A100-80'; closest: A100-80GB, A100-40GB, A800-80GB, "
            "RTX-A4000, RTX-A5000 (gpucast gpus lists all; a GPU it lacks goes in a site table: --gpu-table)");
  auto h = ParseCluster("2x H100", DataDir());
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->gpus[0].mem_mib, 80 * 1024.0);
}

// noisy:SD is mean-preserving: a control for worse predictions must not move
// the policies' currency (a sum of predicted points). Clamped at 100 without
// the recentring shift, a row at 98 was predicted 89.2 on average under SD 15
// and 82.2 under SD 30, and the shipped rows' mean signed error was about -1
// point. Exactly (closed form) and over 400 seeds of the shipped rows: the
// mean signed error is within sampling error of 0, the heavy rows' included.
TEST(Predictions, NoisyControlIsMeanPreserving) {
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok());
  for (double sd : {15.0, 30.0}) {
    const double s = NoisyLog1pSd(sd);
    // The closed form against a numeric integral, and the shift's defining property.
    for (double u : {6.24, 50.0, 98.0}) {
      double num = 0, wsum = 0;
      for (int k = -8000; k <= 8000; ++k) {
        const double z = k / 1000.0, wz = std::exp(-0.5 * z * z);
        num += wz * std::clamp(std::expm1(std::log1p(u) + 0.1 + s * z), 0.0, 100.0);
        wsum += wz;
      }
      EXPECT_NEAR(NoisyMean(u, 0.1, s), num / wsum, 1e-4) << u;  // the sum's step: ~2e-6
      EXPECT_NEAR(NoisyMean(u, NoisyShift(u, s), s), u, 1e-9) << u;
    }
    EXPECT_LT(NoisyMean(98, 0, s), 90);  // the former, unshifted control's mean: biased low
    double err = 0, err_heavy = 0;
    int n = 0, n_heavy = 0;
    for (uint64_t seed = 1; seed <= 400; ++seed) {
      auto x = *w;
      ASSERT_TRUE(ApplyPredictionSource(*ParsePredictionSource("noisy:" + std::to_string(static_cast<int>(sd)), "auto"),
                                        seed, &x).ok());
      for (const auto& r : x) {
        err += r.predicted_util - r.true_util;
        ++n;
        if (r.true_util >= 90) {
          err_heavy += r.predicted_util - r.true_util;
          ++n_heavy;
        }
      }
    }
    // Sampling error: sd of one row's error <= 30 points; n = 20,800 (heavy: >= 2,400).
    EXPECT_NEAR(err / n, 0, 0.6) << "noisy:" << sd;
    EXPECT_NEAR(err_heavy / n_heavy, 0, 1.5) << "noisy:" << sd;
  }
}

// noisy:SD@K: draw K of the same control for the same run seed (noisy:SD is
// draw 0, unchanged), so that the effect of noise can be measured as an
// expectation over draws. Each draw is deterministic for (seed, K), draws
// differ, and the control is mean-preserving over draws with the seed fixed
// (the arrivals' seed does not pick the noise's mean).
TEST(Predictions, NoisyDrawsAreDeterministicDistinctAndMeanPreservingOverDraws) {
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok());
  auto parse = [](const std::string& s) { return ParsePredictionSource(s, "auto"); };
  EXPECT_EQ(parse("noisy:15@3")->Label(), "noisy:15@3");
  EXPECT_EQ(parse("noisy:15@3")->draw, 3);
  EXPECT_EQ(parse("noisy:15@3")->value, 15);
  EXPECT_EQ(parse("noisy:15@0")->Label(), "noisy:15");
  EXPECT_EQ(parse("noisy:15")->draw, 0);
  for (const char* bad : {"noisy:15@", "noisy:15@-1", "noisy:15@1.5", "noisy:15@x"})
    EXPECT_EQ(parse(bad).message(), std::string("--predictions '") + bad +
                                        "': the noise draw after '@' must be an integer in [0, 1000000]");
  EXPECT_EQ(parse("noisy:x@2").message(), "--predictions 'noisy:x@2': the noise sd must be a number in [0, 100] (points)");
  auto apply = [&](const std::string& s, uint64_t seed) {
    auto x = *w;
    EXPECT_TRUE(ApplyPredictionSource(*parse(s), seed, &x).ok());
    return x;
  };
  // Draw 0 is the control as it was: its salt and its predictions.
  EXPECT_EQ(NoisyDrawSalt(0), 0x401553ULL);
  auto d0 = apply("noisy:15", 2), d0b = apply("noisy:15@0", 2), d1 = apply("noisy:15@1", 2), d1b = apply("noisy:15@1", 2),
       d2 = apply("noisy:15@2", 2);
  int differ01 = 0, differ12 = 0;
  for (size_t i = 0; i < w->size(); ++i) {
    EXPECT_EQ(d0[i].predicted_util, d0b[i].predicted_util);
    EXPECT_EQ(d1[i].predicted_util, d1b[i].predicted_util);  // deterministic
    EXPECT_EQ(d1[i].pred_util_high, d1b[i].pred_util_high);
    // Continuous draws: rows off the clamp in both draws always differ.
    const bool free0 = d0[i].true_util > 0 && d0[i].true_util < 100 && d0[i].predicted_util < 100;
    const bool free1 = d1[i].true_util > 0 && d1[i].true_util < 100 && d1[i].predicted_util < 100;
    const bool free2 = d2[i].true_util > 0 && d2[i].true_util < 100 && d2[i].predicted_util < 100;
    if (free0 && free1) differ01 += d0[i].predicted_util != d1[i].predicted_util ? 1 : -1000;
    if (free1 && free2) differ12 += d1[i].predicted_util != d2[i].predicted_util ? 1 : -1000;
    const double s = NoisyLog1pSd(15), z = SeededNormal(2, static_cast<int64_t>(i), NoisyDrawSalt(1));
    if (d1[i].true_util > 0 && d1[i].true_util < 100 && d1[i].predicted_util < 100) {
      EXPECT_NEAR(std::log1p(d1[i].predicted_util) - std::log1p(d1[i].true_util),
                  NoisyShift(d1[i].true_util, s) + s * z, 1e-9);
    }
  }
  EXPECT_GE(differ01, 30);  // and most rows are off the clamp
  EXPECT_GE(differ12, 30);
  // Over 400 draws of one seed: each row's mean prediction is its truth
  // within sampling error (sd of one draw <= 30 points: 4 se = 6), and the
  // rows' mean signed error within 0.6; one draw's own mean error is not 0.
  for (double sd : {15.0, 30.0}) {
    std::vector<double> sum(w->size(), 0.0);
    const int draws = 400;
    double one = 0;
    for (int k = 0; k < draws; ++k) {
      auto x = apply("noisy:" + std::to_string(static_cast<int>(sd)) + "@" + std::to_string(k), 5);
      double e = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        sum[i] += x[i].predicted_util;
        e += x[i].predicted_util - x[i].true_util;
      }
      if (k == 0) one = e / static_cast<double>(x.size());
    }
    double all = 0;
    for (size_t i = 0; i < w->size(); ++i) {
      EXPECT_NEAR(sum[i] / draws, (*w)[i].true_util, 6.0) << (*w)[i].Name() << " noisy:" << sd;
      all += sum[i] / draws - (*w)[i].true_util;
    }
    EXPECT_NEAR(all / static_cast<double>(w->size()), 0, 0.6) << "noisy:" << sd;
    EXPECT_NE(one, 0);
  }
}

TEST(Predictions, SourcesOfTheControls) {
  auto w = LoadWorkloads(DataDir() + "/lucid/single_data.csv");
  ASSERT_TRUE(w.ok());
  auto parse = [](const std::string& s) { return ParsePredictionSource(s, "auto"); };
  EXPECT_EQ(parse("")->Label(), "lowo:auto");
  EXPECT_EQ(parse("forest")->Label(), "lowo:forest");
  EXPECT_EQ(parse("noisy:15")->Label(), "noisy:15");
  EXPECT_EQ(parse("shuffled")->Label(), "shuffled:lowo:auto");
  EXPECT_EQ(parse("p/x.csv")->kind, PredictionSource::kCsv);
  EXPECT_EQ(parse("noisy:-1").message(), "--predictions 'noisy:-1': the noise sd must be a number in [0, 100] (points)");
  EXPECT_EQ(parse("constant:x").message(), "--predictions 'constant:x': the constant must be a number in [0, 100] (points)");
  EXPECT_EQ(parse("nosiy:15").message(),
            "--predictions 'nosiy:15': want oracle, noisy:SD, constant:U, shuffled[:ALGO], a CSV path or an algorithm name");
  // noisy:0 is the oracle; noisy:SD is seeded and lives in log1p: each row's
  // log1p error is NoisyLog1pSd(SD) times its seeded normal (SD/51: 15 points
  // at 50% for noisy:15), a prediction is never 0, and the interval is that
  // sd's 80% interval around the prediction in log1p.
  EXPECT_DOUBLE_EQ(NoisyLog1pSd(15), 15.0 / 51.0);
  auto x = *w;
  ASSERT_TRUE(ApplyPredictionSource(*parse("noisy:0"), 1, &x).ok());
  for (const auto& r : x) EXPECT_EQ(r.predicted_util, r.true_util);
  ASSERT_TRUE(ApplyPredictionSource(*parse("noisy:10"), 1, &x).ok());
  auto y = *w;
  ASSERT_TRUE(ApplyPredictionSource(*parse("noisy:10"), 1, &y).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].predicted_util, y[i].predicted_util);
    EXPECT_GE(x[i].predicted_util, 0);
    EXPECT_LE(x[i].predicted_util, 100);
  }
  EXPECT_GT(PredictionMae(x), 3);
  EXPECT_LT(PredictionMae(x), 13);
  auto nz = *w;
  ASSERT_TRUE(ApplyPredictionSource(*parse("noisy:30"), 3, &nz).ok());
  int light = 0;
  for (size_t i = 0; i < nz.size(); ++i) {
    const auto& r = nz[i];
    const double s = 30.0 / 51.0, n = SeededNormal(3, static_cast<int64_t>(i), 0x401553ULL);
    EXPECT_GT(r.predicted_util, 0) << r.Name();
    if (r.true_util >= 100) {  // no bounded noise is unbiased at 100: the truth, and sure of it
      EXPECT_EQ(r.predicted_util, r.true_util);
      EXPECT_EQ(r.pred_util_low, r.pred_util_high);
      continue;
    }
    if (r.predicted_util < 100) {  // else clamped at 100
      EXPECT_NEAR(std::log1p(r.predicted_util) - std::log1p(r.true_util), NoisyShift(r.true_util, s) + s * n, 1e-9)
          << r.Name();
    }
    if (r.pred_util_high < 100) {
      EXPECT_NEAR(std::log1p(r.pred_util_high) - std::log1p(r.predicted_util), 1.2815515655446004 * s, 1e-9);
    }
    EXPECT_NEAR(std::log1p(r.predicted_util) - std::log1p(r.pred_util_low), 1.2815515655446004 * s, 1e-9);
    if (r.true_util < 15 && n < 0) ++light;  // a light row predicted low: still not free
  }
  EXPECT_GT(light, 0);
  ASSERT_TRUE(ApplyPredictionSource(*parse("noisy:10"), 2, &y).ok());
  EXPECT_NE(PredictionMae(x), PredictionMae(y));
  ASSERT_TRUE(ApplyPredictionSource(*parse("constant:50"), 1, &x).ok());
  for (const auto& r : x) EXPECT_EQ(r.predicted_util, 50);
  // shuffled: the same values, permuted.
  for (size_t i = 0; i < x.size(); ++i) x[i].predicted_util = static_cast<double>(i);
  ASSERT_TRUE(ApplyPredictionSource(*parse("shuffled"), 1, &x).ok());
  std::vector<double> got;
  int moved = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    got.push_back(x[i].predicted_util);
    moved += x[i].predicted_util != static_cast<double>(i);
  }
  std::sort(got.begin(), got.end());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<double>(i));
  EXPECT_GT(moved, 40);
  // The model's predictions are required where they are used.
  auto z = *w;
  EXPECT_EQ(ApplyPredictionSource(*parse("forest"), 1, &z).message(),
            "lowo:forest: workload BERT/SQuAD/b32/amp0 has no prediction");
}

}  // namespace
}  // namespace gpucast::sim
