// The live scheduler runs the simulator's policies: tiny literal clusters
// with placements worked out by hand from the policy descriptions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <new>

#include "service/scheduler.h"
#include "util/paths.h"

// Bytes allocated by operator new on this thread while counting (-1: not
// counting): the global allocation functions of this test binary count for
// APassDoesNotCopyTheQueuedJobs and otherwise only forward to malloc/free.
// Every non-aligned form is replaced, so that whatever new a library calls
// (std::stable_sort's nothrow buffer, new[]) is freed by its own kind of
// delete (AddressSanitizer checks the pairs; the aligned forms stay the
// library's, pairs of their own).
namespace {
thread_local long long g_new_bytes = -1;
void* CountedMalloc(std::size_t n) noexcept {
  if (g_new_bytes >= 0) g_new_bytes += static_cast<long long>(n);
  return std::malloc(n ? n : 1);
}
}  // namespace
void* operator new(std::size_t n) {
  if (void* p = CountedMalloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = CountedMalloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return CountedMalloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return CountedMalloc(n); }
// GCC cannot see that these operator news' memory is malloc's.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace gpucast::service {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

Job Queued(int64_t id, double util, int64_t gpus = 1, double mem_mib = 0) {
  Job j;
  j.id = id;
  j.spec.model = "m.onnx";
  j.spec.gpus = gpus;
  j.spec.mem_mib = mem_mib;
  j.prediction.util = util;
  return j;
}

std::unique_ptr<Scheduler> Make(const std::string& cluster, const std::string& policy) {
  auto s = NewPolicyScheduler(cluster, policy, DataDir());
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok() ? std::move(s).value() : nullptr;
}

void StartAll(Scheduler* s, const std::vector<Job>& jobs, const std::vector<Placement>& ps) {
  for (const Placement& p : ps) {
    for (Job j : jobs) {
      if (j.id != p.job_id) continue;
      j.state = JobState::kRunning;
      j.placement = p.gpus;
      j.exclusive = p.exclusive;
      ASSERT_TRUE(s->Start(j).ok());
    }
  }
}

// predictive = best-fit packing while the predicted sum stays <= 100:
// 60 -> GPU 0 (both empty, lower id); 30 -> GPU 0 (fullest that fits, 90);
// 50 -> GPU 1 (GPU 0 would reach 140); 40 -> GPU 1 (90).
TEST(PolicySchedulerTest, PredictivePacksByPredictedUtilization) {
  auto s = Make("2x RTX3090", "predictive");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->TotalGpus(), 2);
  std::vector<Job> q = {Queued(1, 60), Queued(2, 30), Queued(3, 50), Queued(4, 40)};
  auto ps = s->Plan(q, 0);
  ASSERT_TRUE(ps.ok()) << ps.message();
  ASSERT_EQ(ps->size(), 4u);
  EXPECT_EQ((*ps)[0].gpus, std::vector<int>({0}));
  EXPECT_EQ((*ps)[1].gpus, std::vector<int>({0}));
  EXPECT_EQ((*ps)[2].gpus, std::vector<int>({1}));
  EXPECT_EQ((*ps)[3].gpus, std::vector<int>({1}));
  EXPECT_FALSE((*ps)[0].exclusive);
}

// --cap-rule capacity, as simulate's: the cap is 100 x the work capacity fitted on
// Lucid's measured pairs (c = 1.2 on the RTX 3090: sim CapRule tests), so 70 and
// 45 (115) share one GPU, which the paper's sum <= 100 refuses; 70 + 55 (125)
// exceeds both. A rule that is neither is an error naming the choices.
TEST(PolicySchedulerTest, CapacityCapPacksToTheFittedWorkCapacity) {
  auto sum = NewPolicyScheduler("2x RTX3090", "predictive", DataDir(), "sum");
  auto cap = NewPolicyScheduler("2x RTX3090", "predictive", DataDir(), "capacity");
  ASSERT_TRUE(sum.ok()) << sum.message();
  ASSERT_TRUE(cap.ok()) << cap.message();
  std::vector<Job> q = {Queued(1, 70), Queued(2, 45)};
  auto by_sum = (*sum)->Plan(q, 0);
  auto by_cap = (*cap)->Plan(q, 0);
  ASSERT_TRUE(by_sum.ok() && by_cap.ok());
  ASSERT_EQ(by_sum->size(), 2u);
  EXPECT_NE((*by_sum)[0].gpus, (*by_sum)[1].gpus);  // 115 > 100: two GPUs
  ASSERT_EQ(by_cap->size(), 2u);
  EXPECT_EQ((*by_cap)[0].gpus, (*by_cap)[1].gpus);  // 115 <= 120: one GPU
  auto over = (*cap)->Plan({Queued(1, 70), Queued(2, 55)}, 0);
  ASSERT_TRUE(over.ok());
  ASSERT_EQ(over->size(), 2u);
  EXPECT_NE((*over)[0].gpus, (*over)[1].gpus);  // 125 > 120
  auto bad = NewPolicyScheduler("2x RTX3090", "predictive", DataDir(), "max");
  EXPECT_EQ(bad.message(), "cap rule 'max': want sum or capacity");
}

// --max-jobs-per-gpu, as simulate's: by default (the measured degree, pairs)
// three light jobs never share one GPU, even when their predictions sum to
// 30; with 0 (no limit) they do, and a negative limit is an error.
TEST(PolicySchedulerTest, ThreeLightJobsNeverShareOneGpuUnderTheMeasuredDegree) {
  for (const char* policy : {"predictive", "interference-aware", "predictive-feedback", "predictive-spread"}) {
    auto def = NewPolicyScheduler("1x RTX3090", policy, DataDir());
    auto any = NewPolicyScheduler("1x RTX3090", policy, DataDir(), "sum", 0);
    ASSERT_TRUE(def.ok()) << def.message();
    ASSERT_TRUE(any.ok()) << any.message();
    std::vector<Job> q = {Queued(1, 10), Queued(2, 10), Queued(3, 10)};
    auto two = (*def)->Plan(q, 0);
    auto three = (*any)->Plan(q, 0);
    ASSERT_TRUE(two.ok() && three.ok());
    EXPECT_EQ(two->size(), 2u) << policy;  // job 3 waits
    EXPECT_EQ(three->size(), 3u) << policy;
    StartAll(def->get(), q, *two);
    auto again = (*def)->Plan({q[2]}, 1);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->empty()) << policy;
  }
  auto bad = NewPolicyScheduler("1x RTX3090", "predictive", DataDir(), "sum", -1);
  EXPECT_THAT(bad.message(), HasSubstr("want >= 0"));
}

TEST(PolicySchedulerTest, SlotGivesEachJobAWholeGpu) {
  auto s = Make("2x RTX3090", "slot");
  ASSERT_TRUE(s);
  std::vector<Job> q = {Queued(1, 10), Queued(2, 10), Queued(3, 10)};
  auto ps = s->Plan(q, 0);
  ASSERT_TRUE(ps.ok()) << ps.message();
  ASSERT_EQ(ps->size(), 2u);  // job 3 waits
  EXPECT_EQ((*ps)[0].gpus, std::vector<int>({0}));
  EXPECT_EQ((*ps)[1].gpus, std::vector<int>({1}));
  EXPECT_TRUE((*ps)[0].exclusive);
  StartAll(s.get(), q, *ps);
  auto again = s->Plan({q[2]}, 1);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
  s->Finish(1);  // GPU 0 free again
  again = s->Plan({q[2]}, 2);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].gpus, std::vector<int>({0}));
}

// Running jobs count against the cap; a 2-GPU job needs two GPUs with room.
TEST(PolicySchedulerTest, RunningJobsAndGangPlacement) {
  auto s = Make("2x RTX3090", "predictive");
  ASSERT_TRUE(s);
  Job r = Queued(7, 80);
  r.state = JobState::kRunning;
  r.placement = {0};
  ASSERT_TRUE(s->Start(r).ok());
  auto ps = s->Plan({Queued(8, 30, 2)}, 0);  // GPU 0 would reach 110
  ASSERT_TRUE(ps.ok());
  EXPECT_TRUE(ps->empty());
  ps = s->Plan({Queued(9, 20, 2)}, 0);  // 100 on GPU 0, 20 on GPU 1
  ASSERT_EQ(ps->size(), 1u);
  EXPECT_EQ((*ps)[0].gpus, std::vector<int>({0, 1}));
}

// Memory: RTX 3090 = 24576 MiB; two 16000 MiB jobs cannot share.
TEST(PolicySchedulerTest, MemoryMustFit) {
  auto s = Make("1x RTX3090", "predictive");
  ASSERT_TRUE(s);
  std::vector<Job> q = {Queued(1, 10, 1, 16000), Queued(2, 10, 1, 16000)};
  auto ps = s->Plan(q, 0);
  ASSERT_TRUE(ps.ok());
  EXPECT_EQ(ps->size(), 1u);
}

// Without a stated mem_mib a job packs by its predicted memory's high end.
TEST(PolicySchedulerTest, PredictedMemoryPacksByItsHighEnd) {
  auto s = Make("1x RTX3090", "predictive");
  ASSERT_TRUE(s);
  std::vector<Job> q = {Queued(1, 10), Queued(2, 10)};
  for (Job& j : q) {
    j.prediction.mem_mib = 10000;
    j.prediction.mem_lo = 9000;
    j.prediction.mem_hi = 13000;  // two of 10000 would fit 24576; two of 13000 do not
  }
  EXPECT_EQ(PackingMemMib(q[0].spec, q[0].prediction), 13000);
  auto ps = s->Plan(q, 0);
  ASSERT_TRUE(ps.ok());
  EXPECT_EQ(ps->size(), 1u);
  q[1].spec.mem_mib = 2000;  // a stated need wins over the prediction
  EXPECT_EQ(PackingMemMib(q[1].spec, q[1].prediction), 2000);
  ps = s->Plan(q, 0);
  ASSERT_TRUE(ps.ok());
  EXPECT_EQ(ps->size(), 2u);
}

TEST(PolicySchedulerTest, TheClustersGpuTypeIsKnownAndOne) {
  auto s = Make("2x h100", "predictive");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->GpuType(), "H100");
  Job t4 = Queued(1, 10);
  t4.spec.gpu = "T4";
  EXPECT_EQ(s->CanEverFit(t4.spec).message(),
            "field 'gpu': the cluster has no T4 GPUs (it has 2x H100); POST /v1/predict predicts for any GPU type");
  auto typo = NewPolicyScheduler("2x RTX3900", "predictive", DataDir());
  ASSERT_FALSE(typo.ok());
  EXPECT_THAT(typo.message(), HasSubstr("--cluster '2x RTX3900': unknown GPU 'RTX3900'; closest: RTX3090"));
}

// A mixed cluster (issue 31): node groups of A100s and H100s. Each job runs
// only on GPUs of the type it was predicted for; GET /v1/cluster lists the groups.
TEST(PolicySchedulerTest, MixedClusterPlacesEachJobOnItsOwnGpuType) {
  auto s = Make("nodes=1,gpus_per_node=2,type=A100-80GB;nodes=1,gpus_per_node=2,type=H100", "predictive");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->TotalGpus(), 4);
  EXPECT_EQ(s->GpuType(), "");  // no one type: a job names its own
  EXPECT_EQ(s->GpuTypes(), (std::vector<std::string>{"A100-80GB", "H100"}));
  // Best-fit by predicted load, but only on its type: the H100 jobs go to GPUs
  // 2-3 although the A100s (0-1) are emptier or come first.
  Job a = Queued(1, 60), h1 = Queued(2, 30), h2 = Queued(3, 50), a2 = Queued(4, 30);
  a.spec.gpu = a2.spec.gpu = "A100-80GB";
  h1.spec.gpu = h2.spec.gpu = "H100";
  std::vector<Job> q = {a, h1, h2, a2};
  auto ps = s->Plan(q, 0);
  ASSERT_TRUE(ps.ok()) << ps.message();
  ASSERT_EQ(ps->size(), 4u);
  std::map<int64_t, std::vector<int>> where;
  for (const Placement& p : *ps) where[p.job_id] = p.gpus;
  EXPECT_EQ(where[1], std::vector<int>({0}));
  EXPECT_EQ(where[4], std::vector<int>({0}));  // 60 + 30 on GPU 0
  EXPECT_EQ(where[2], std::vector<int>({2}));
  EXPECT_EQ(where[3], std::vector<int>({2}));  // 30 + 50 on GPU 2
  // A 2-GPU H100 job fits the H100 group only; 3 H100s do not exist.
  Job big = Queued(5, 10, 3);
  big.spec.gpu = "H100";
  EXPECT_EQ(s->CanEverFit(big.spec).message(), "field 'gpus': 3 requested, the cluster has 2 H100");
  big.spec.gpu = "T4";
  big.spec.gpus = 1;
  EXPECT_EQ(s->CanEverFit(big.spec).message(),
            "field 'gpu': the cluster has no T4 GPUs (it has 2x A100-80GB, 2x H100); POST /v1/predict predicts for "
            "any GPU type");
  const nlohmann::json c = s->ClusterJson();
  ASSERT_EQ(c["node_groups"].size(), 2u);
  EXPECT_EQ(c["node_groups"][1]["type"], "H100");
  EXPECT_EQ(c["node_groups"][1]["first_gpu"], 2);
  EXPECT_EQ(c["gpus"][3]["type"], "H100");
  EXPECT_EQ(c["gpus"][3]["node"], 1);
}

// A pass runs on every submission. It copied every queued job (spec and
// prediction, every string) once, and again per GPU type of a mixed cluster:
// 5,000 queued jobs made each submission 10-17 ms and left 164 MiB RSS in the
// workers' malloc arenas (55 MiB after a restart read the same jobs). Now it
// reads the jobs in place: a pass costs the same whatever a job's spec holds.
TEST(PolicySchedulerTest, APassDoesNotCopyTheQueuedJobs) {
  auto s = Make("nodes=1,gpus_per_node=2,type=A100-80GB;nodes=1,gpus_per_node=2,type=H100", "predictive");
  ASSERT_TRUE(s);
  auto queue = [](size_t name_bytes) {
    std::vector<Job> q;
    for (int64_t i = 1; i <= 1000; ++i) {
      Job j = Queued(i, 100);
      j.spec.gpu = i % 2 ? "A100-80GB" : "H100";
      j.spec.name = std::string(name_bytes, 'n');
      q.push_back(std::move(j));
    }
    return q;
  };
  // Bytes a pass allocates: about the same whatever the queued jobs' specs
  // hold (copying them, each pass would allocate their 100 MB of names, twice).
  auto pass_bytes = [&](const std::vector<Job>& q) {
    g_new_bytes = 0;
    auto ps = s->Plan(q, 0);
    const long long bytes = g_new_bytes;
    g_new_bytes = -1;
    EXPECT_TRUE(ps.ok()) << ps.message();
    if (ps.ok()) {
      EXPECT_EQ(ps->size(), 4u);  // one 100% job on each GPU
    }
    return bytes;
  };
  const long long light = pass_bytes(queue(0));
  const long long heavy = pass_bytes(queue(100000));  // 100 KB names: 100 MB in all
  EXPECT_GT(light, 0);  // the counter counts
  // Less than one job's name more: not one job was copied.
  EXPECT_LT(heavy, light + 100000) << "a pass over jobs with 100 KB names allocated " << heavy << " bytes, with none " << light;
}

TEST(PolicySchedulerTest, JobsThatCanNeverFit) {
  auto s = Make("2x RTX3090", "predictive");
  ASSERT_TRUE(s);
  // A MIG profile the GPU lacks is the prediction's 422 (in POST /v1/predict's words), not the scheduler's.
  Job mig = Queued(1, 50);
  mig.spec.mig = "3g.40gb";
  EXPECT_TRUE(s->CanEverFit(mig.spec).ok());
  Job nodes = Queued(1, 50, 2);
  nodes.spec.nodes = 2;
  EXPECT_THAT(s->CanEverFit(nodes.spec).message(), HasSubstr("field 'nodes': the service places a job on the GPUs of one node"));
  EXPECT_TRUE(s->CanEverFit(Queued(1, 50, 2, 24576).spec).ok());
  EXPECT_EQ(s->CanEverFit(Queued(1, 50, 3).spec).message(), "field 'gpus': 3 requested, the cluster has 2");
  EXPECT_EQ(s->CanEverFit(Queued(1, 50, 1, 30000).spec).message(),
            "field 'mem_mib': 1 GPU(s) with 30000 MiB requested, the cluster's largest GPU has 24576 MiB");
}

TEST(PolicySchedulerTest, ClusterJsonShowsPredictedAssumedAndModelledLoad) {
  auto s = Make("2x RTX3090", "predictive");
  ASSERT_TRUE(s);
  std::vector<Job> q = {Queued(1, 60), Queued(2, 30)};
  auto ps = s->Plan(q, 0);
  StartAll(s.get(), q, *ps);
  nlohmann::json c = s->ClusterJson();
  EXPECT_EQ(c["cluster"], "2x RTX3090");
  const nlohmann::json& g0 = c["gpus"][0];
  EXPECT_EQ(g0["jobs"].size(), 2u);
  EXPECT_DOUBLE_EQ(g0["predicted_load"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(g0["assumed_load"].get<double>(), 200.0);
  EXPECT_NEAR(g0["modelled_util"].get<double>(), 100.0 * (1 - 0.4 * 0.7), 1e-9);  // 72
  EXPECT_EQ(c["gpus"][1]["jobs"].size(), 0u);
  EXPECT_EQ(c["gpus"][0]["mem_mib"], 24576.0);
}

TEST(PolicySchedulerTest, InterferenceAwareLoadsTheFittedModel) {
  auto s = Make("2x RTX3090", "interference-aware");
  ASSERT_TRUE(s);
  // Empty GPUs first: two jobs spread over the two GPUs.
  auto ps = s->Plan({Queued(1, 90), Queued(2, 90)}, 0);
  ASSERT_TRUE(ps.ok()) << ps.message();
  ASSERT_EQ(ps->size(), 2u);
  EXPECT_NE((*ps)[0].gpus, (*ps)[1].gpus);
}

// predictive-feedback decides by a resident's observed utilization once it
// has one: job 1 (predicted 20) runs on GPU 0, GPU 1 is empty. By prediction
// job 2 (30) packs best-fit onto GPU 0 (20 + 30 = 50 <= 100); once job 1 is
// observed at 90, GPU 0 would reach 120 > 100, so job 2 goes to GPU 1. The
// live service never migrates (it cannot move a running job).
TEST(PolicySchedulerTest, PredictiveFeedbackUsesObservations) {
  for (bool observed : {false, true}) {
    auto s = Make("2x RTX3090", "predictive-feedback");
    ASSERT_TRUE(s);
    Job r = Queued(1, 20);
    r.state = JobState::kRunning;
    r.placement = {0};
    ASSERT_TRUE(s->Start(r).ok());
    if (observed) s->Observe(1, 90);
    auto ps = s->Plan({Queued(2, 30)}, 0);
    ASSERT_TRUE(ps.ok()) << ps.message();
    ASSERT_EQ(ps->size(), 1u);
    EXPECT_EQ((*ps)[0].gpus, std::vector<int>({observed ? 1 : 0})) << "observed " << observed;
    EXPECT_EQ(s->ClusterJson()["gpus"][0]["jobs"][0].contains("observed_util"), observed);
  }
}

// The observation is weighed against the prediction by their uncertainties
// (sim::CombineObservation, the simulator's estimator): job 1 (predicted 50)
// runs alone on GPU 0 and its counter reads 60. With a narrow interval
// (50 +- 2.56: sd 2) the estimate stays near the prediction (52.8), so job 2
// (45) still fits GPU 0 (97.8 <= 100); with no interval (sd 28.9) the
// observation decides (59.8): 104.8 > 100, GPU 1.
TEST(PolicySchedulerTest, PredictiveFeedbackWeighsTheObservationAgainstThePredictionsInterval) {
  for (bool narrow : {true, false}) {
    auto s = Make("2x RTX3090", "predictive-feedback");
    ASSERT_TRUE(s);
    Job r = Queued(1, 50);
    if (narrow) {
      r.prediction.util_lo = 50 - 2 * 1.2815515655446004;
      r.prediction.util_hi = 50 + 2 * 1.2815515655446004;
    }
    r.state = JobState::kRunning;
    r.placement = {0};
    ASSERT_TRUE(s->Start(r).ok());
    s->Observe(1, 60);
    auto ps = s->Plan({Queued(2, 45)}, 0);
    ASSERT_TRUE(ps.ok()) << ps.message();
    ASSERT_EQ(ps->size(), 1u);
    EXPECT_EQ((*ps)[0].gpus, std::vector<int>({narrow ? 0 : 1})) << "narrow " << narrow;
  }
}

TEST(PolicySchedulerTest, Errors) {
  auto bad = NewPolicyScheduler("2x RTX3090", "fastest", DataDir());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("unknown policy 'fastest': want one of slot, profiling, profiling-pool, "
                                       "profiling-exclusive, profiling-interference-aware, predictive"));
  for (const char* p :
       {"profiling", "profiling-pool", "profiling-exclusive", "profiling-interference-aware", "predictive-hybrid"}) {
    bad = NewPolicyScheduler("2x RTX3090", p, DataDir());
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.message(), HasSubstr("solo profiling run, which the service cannot schedule")) << p;
  }
  bad = NewPolicyScheduler("two gpus", "slot", DataDir());
  EXPECT_FALSE(bad.ok());
  auto s = Make("1x RTX3090", "slot");
  Job j = Queued(3, 10);
  j.placement = {4};
  Status st = s->Start(j);
  EXPECT_EQ(st.message(), "job 3: no GPU 4 in cluster '1x RTX3090' (1 GPUs)");
}

// MIG jobs (docs/api.md "MIG jobs"): a slice is isolated, so a GPU runs either
// whole-GPU jobs or slices, and slices are not load in the policy's sums. A100
// 80GB (MIG User Guide): 7 compute and 8 memory slices; 3g.40gb takes 3 and 4,
// 4g.40gb 4 and 4, 1g.10gb 1 and 1.
Job Slice(int64_t id, double util, const std::string& profile) {
  Job j = Queued(id, util);
  j.spec.mig = profile;
  return j;
}

TEST(PolicySchedulerTest, MigJobsTakeSlicesOfGpusThatRunNoWholeGpuJob) {
  auto s = Make("2x A100-80GB", "predictive");
  ASSERT_TRUE(s);
  // Whole job 1 -> GPU 0 (both idle, lower id). The slices avoid GPU 0: 3g + 4g fill
  // GPU 1 (7 of 7 compute, 8 of 8 memory slices); 1g finds no slice free.
  std::vector<Job> q = {Queued(1, 60), Slice(2, 90, "3g.40gb"), Slice(3, 80, "4g.40gb"), Slice(4, 10, "1g.10gb")};
  auto ps = s->Plan(q, 0);
  ASSERT_TRUE(ps.ok()) << ps.message();
  ASSERT_EQ(ps->size(), 3u);
  std::map<int64_t, Placement> at;
  for (const Placement& p : *ps) at[p.job_id] = p;
  EXPECT_EQ(at[1].gpus, std::vector<int>({0}));
  EXPECT_EQ(at[2].gpus, std::vector<int>({1}));
  EXPECT_EQ(at[3].gpus, std::vector<int>({1}));
  EXPECT_FALSE(at[2].exclusive);
  EXPECT_EQ(at.count(4), 0u);
  StartAll(s.get(), q, *ps);
  EXPECT_THAT(s->WhyWaiting(q[3], 0),
              HasSubstr("no A100-80GB GPU has a MIG 1g.10gb slice free this pass (it needs 1 of 7 compute and 1 of 8 "
                        "memory slices of a GPU that runs no whole-GPU job)"));
  // The slices are not load: GPU 1 shows no jobs and no predicted load, its slices beside them.
  json c = s->ClusterJson();
  EXPECT_EQ(c["gpus"][0]["predicted_load"], 60.0);
  EXPECT_EQ(c["gpus"][1]["predicted_load"], 0.0);
  EXPECT_EQ(c["gpus"][1]["jobs"], json::array());
  ASSERT_EQ(c["gpus"][1]["mig_jobs"].size(), 2u);
  EXPECT_EQ(c["gpus"][1]["mig_jobs"][0]["id"], 2);
  EXPECT_EQ(c["gpus"][1]["mig_jobs"][0]["mig"], "3g.40gb");
  EXPECT_EQ(c["gpus"][1]["mig_slices_free"], json({{"compute", 0}, {"memory", 0}}));
  EXPECT_EQ(c["gpus"][0]["mig_slices_free"], nullptr);
  EXPECT_EQ(c["gpus"][1]["exclusive"], true);  // held against whole-GPU jobs while it holds slices
  EXPECT_EQ(c["gpus"][0]["exclusive"], false);
  // A whole-GPU job of 50: GPU 0 would reach 110, and GPU 1, in MIG use, is not offered to it.
  auto wait = s->Plan({Queued(5, 50)}, 0);
  ASSERT_TRUE(wait.ok()) << wait.message();
  EXPECT_TRUE(wait->empty());
  // A slice freed: the 1g job takes it; with both gone GPU 1 is whole again.
  s->Finish(3);
  auto one = s->Plan({q[3]}, 0);
  ASSERT_TRUE(one.ok() && one->size() == 1u);
  EXPECT_EQ((*one)[0].gpus, std::vector<int>({1}));
  s->Finish(2);
  auto whole = s->Plan({Queued(5, 50)}, 0);
  ASSERT_TRUE(whole.ok() && whole->size() == 1u) << whole.message();
  EXPECT_EQ((*whole)[0].gpus, std::vector<int>({1}));
}

// Slices pack onto a GPU already in MIG use before an idle one is opened, and
// a job's stated memory must fit its slice (1g.10gb: 9.5 GiB = 9728 MiB).
TEST(PolicySchedulerTest, MigSlicesPackAndTheirMemoryIsTheSlices) {
  auto s = Make("3x A100-80GB", "predictive");
  ASSERT_TRUE(s);
  std::vector<Job> q = {Slice(1, 50, "1g.10gb"), Slice(2, 50, "2g.20gb"), Slice(3, 50, "4g.40gb"),
                        Slice(4, 50, "1g.10gb")};
  auto ps = s->Plan(q, 0);
  ASSERT_TRUE(ps.ok()) << ps.message();
  ASSERT_EQ(ps->size(), 4u);
  // 1g + 2g + 4g = 7 compute on GPU 0; the second 1g opens GPU 1.
  EXPECT_EQ((*ps)[0].gpus, std::vector<int>({0}));
  EXPECT_EQ((*ps)[1].gpus, std::vector<int>({0}));
  EXPECT_EQ((*ps)[2].gpus, std::vector<int>({0}));
  EXPECT_EQ((*ps)[3].gpus, std::vector<int>({1}));
  Job big = Slice(5, 50, "1g.10gb");
  big.spec.mem_mib = 9728;
  EXPECT_TRUE(s->CanEverFit(big.spec).ok());
  big.spec.mem_mib = 9729;
  EXPECT_EQ(s->CanEverFit(big.spec).message(),
            "field 'mem_mib': 9729 MiB requested, a MIG 1g.10gb slice of A100-80GB has 9728 MiB");
  // Restored after a restart (Start), a running slice holds its GPU against whole-GPU jobs.
  Job running = q[0];
  running.state = JobState::kRunning;
  running.placement = {2};
  ASSERT_TRUE(s->Start(running).ok());
  EXPECT_EQ(s->ClusterJson()["gpus"][2]["mig_jobs"][0]["id"], 1);
  running.spec.mig = "3g.20gb";  // an A100-40GB profile
  EXPECT_EQ(s->Start(running).message(), "job 1: GPU 2 (A100-80GB) has no MIG profile '3g.20gb'");
}

}  // namespace
}  // namespace gpucast::service
