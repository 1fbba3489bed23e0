#include "sim/policy.h"

#include <algorithm>
#include <cmath>

namespace gpucast::sim {

namespace {

// How one co-location policy decides; every table row is one of these.
struct Knobs {
  bool slot_only = false;      // every job runs alone (one job per GPU)
  bool profile_first = false;  // unprofiled jobs first run alone for profile_s
  bool use_profiled = false;   // co-locate by profiled (measured) utilization, else predicted
  bool bound_slowdown = false; // accept by the interference model's predicted rates, else by the cap
  bool spread = false;         // prefer empty GPUs, then least interference; else best-fit packing
};

// A GPU's load during one round: the view's state plus this round's placements.
struct Tent {
  int gpu;
  double util_sum, mem_used, mem_mib;
  int njobs;
  bool taken_exclusive = false;
  std::vector<double> utils;  // resident + this round's utilizations (bound_slowdown only)
};

struct Failure {
  int num_gpus;
  double util, mem;
  bool exclusive;
};

class CoLocate : public Policy {
 public:
  CoLocate(Knobs k, PolicyOptions o) : k_(k), o_(o) {}

  std::vector<Placement> Schedule(const ClusterView& v) override {
    std::vector<Placement> out;
    const auto& gpus = v.gpus();
    const InterferenceModel& m = v.model();
    model_ = &m;
    const JobInfo& small = v.smallest_job();
    const double u_min = k_.use_profiled ? small.profiled_util : small.predicted_util;
    tents_.clear();
    double min_sum = 1e18, max_free = 0;
    int empty = 0;
    // Only GPUs that could take the smallest job (or are empty) are open this round.
    for (size_t g = 0; g < gpus.size(); ++g) {
      const GpuState& s = gpus[g];
      if (s.exclusive) continue;
      if (s.mem_mib - s.mem_used < small.mem_mib) continue;
      if (!s.jobs.empty()) {
        if (k_.slot_only) continue;
        double sum = k_.use_profiled ? s.known_sum : s.pred_sum;
        Tent probe{static_cast<int>(g), sum, s.mem_used, s.mem_mib, static_cast<int>(s.jobs.size()), false, {}};
        if (k_.bound_slowdown)
          for (int r : s.jobs) probe.utils.push_back(UtilOf(v.job(r)));
        double score;
        if (!Accept(probe, u_min, &score)) continue;
        tents_.push_back(std::move(probe));
      } else {
        tents_.push_back({static_cast<int>(g), 0.0, s.mem_used, s.mem_mib, 0, false, {}});
      }
      double sum = tents_.back().util_sum;
      min_sum = std::min(min_sum, sum);
      max_free = std::max(max_free, s.mem_mib - s.mem_used);
      empty += s.jobs.empty();
    }
    if (tents_.empty()) return out;
    std::vector<Failure> failures;
    int failed = 0;
    v.VisitCandidates([&](int j) {
      if (failed >= o_.max_failures) return false;
      const JobInfo& info = v.job(j);
      bool alone = k_.slot_only || (k_.profile_first && !info.profiled);
      double u = alone ? 100.0 : UtilOf(info);
      auto fail = [&] {
        ++failed;
        failures.push_back({info.num_gpus, u, info.mem_mib, alone});
      };
      bool dominated = false;
      for (const Failure& f : failures)
        if (f.exclusive == alone && info.num_gpus >= f.num_gpus && u >= f.util && info.mem_mib >= f.mem) {
          dominated = true;
          break;
        }
      if (dominated || info.mem_mib > max_free || (alone && info.num_gpus > empty) ||
          (!alone && !k_.bound_slowdown && u > o_.cap - min_sum + 1e-9)) {
        ++failed;
        return true;
      }
      std::vector<std::pair<double, int>> ok;  // (score, tent index); higher score first
      for (size_t t = 0; t < tents_.size(); ++t) {
        const Tent& x = tents_[t];
        if (x.taken_exclusive || x.mem_used + info.mem_mib > x.mem_mib) continue;
        if (alone) {
          if (x.njobs == 0) ok.push_back({0.0, static_cast<int>(t)});
          continue;
        }
        if (k_.spread && x.njobs == 0 && empty >= info.num_gpus) {
          ok.push_back({3.0, static_cast<int>(t)});  // enough empty GPUs: take the first ones
          if (static_cast<int>(ok.size()) == info.num_gpus) break;
          continue;
        }
        if (k_.spread && empty >= info.num_gpus) continue;
        double score;
        if (!Accept(x, u, &score)) continue;
        ok.push_back({score, static_cast<int>(t)});
      }
      if (static_cast<int>(ok.size()) < info.num_gpus) {
        fail();
        return true;
      }
      auto better = [](const std::pair<double, int>& a, const std::pair<double, int>& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      };
      std::partial_sort(ok.begin(), ok.begin() + info.num_gpus, ok.end(), better);
      Placement p;
      p.job = j;
      p.exclusive = alone;
      p.run_alone_s = (k_.profile_first && !info.profiled) ? o_.profile_s : 0.0;
      for (int i = 0; i < info.num_gpus; ++i) {
        Tent& x = tents_[ok[i].second];
        if (x.njobs == 0) --empty;
        x.njobs += 1;
        x.util_sum += u;
        x.mem_used += info.mem_mib;
        if (k_.bound_slowdown) x.utils.push_back(u);
        x.taken_exclusive = alone;
        p.gpus.push_back(x.gpu);
      }
      out.push_back(std::move(p));
      return true;
    });
    return out;
  }

 private:
  double UtilOf(const JobInfo& j) const {
    if (k_.use_profiled) return j.profiled ? j.profiled_util : 100.0;
    return j.predicted_util;
  }

  // Whether a job of utilization u may join x; *score ranks acceptable GPUs.
  bool Accept(const Tent& x, double u, double* score) const {
    if (!k_.bound_slowdown) {
      if (x.util_sum + u > o_.cap + 1e-9) return false;
      *score = k_.spread ? (x.njobs == 0 ? 1e9 : -x.util_sum) : x.util_sum;  // pack: fullest first
      return true;
    }
    if (x.utils.empty()) {
      *score = 2.0;  // empty GPUs first
      return true;
    }
    // Every resident job and the newcomer must keep rate >= 1 - max_slowdown.
    const double floor = 1.0 - o_.max_slowdown;
    double sum = u;
    for (double a : x.utils) sum += a;
    double worst = model_->ModelRate(u, sum - u);
    if (worst < floor) return false;
    for (double a : x.utils) {
      double r = model_->ModelRate(a, sum - a);
      if (r < floor) return false;
      worst = std::min(worst, r);
    }
    *score = worst;  // then the least predicted slowdown
    return true;
  }

  Knobs k_;
  PolicyOptions o_;
  std::vector<Tent> tents_;
  const InterferenceModel* model_ = nullptr;  // the view's, during Schedule
};

template <bool Slot, bool Profile, bool Profiled, bool Bound, bool Spread>
std::unique_ptr<Policy> Make(const PolicyOptions& o) {
  return std::make_unique<CoLocate>(Knobs{Slot, Profile, Profiled, Bound, Spread}, o);
}

}  // namespace

const std::vector<PolicyRow>& Policies() {
  static const std::vector<PolicyRow> kTable = {
      {"slot", "one job per GPU (Kubernetes-style whole-GPU slots)", false,
       Make<true, false, false, false, false>},
      {"profiling",
       "each new job first runs alone for 60 s (profiling, counted as used GPU time), then is "
       "packed best-fit while the sum of measured utilization stays within the cap",
       false, Make<false, true, true, false, false>},
      {"predictive",
       "packed best-fit from submission while the sum of predicted utilization stays within the "
       "cap and memory fits (the paper's scheme)",
       true, Make<false, false, false, false, false>},
      {"predictive-spread",
       "like predictive, but empty GPUs first, then the least-loaded GPU (shares only when it must)",
       true, Make<false, false, false, false, true>},
      {"interference-aware",
       "empty GPUs first; joins a shared GPU only if the fitted interference model, fed predicted "
       "utilizations, keeps every job on it at rate >= 1 - max_slowdown (default: rate >= 0.75)",
       true, Make<false, false, false, true, true>},
  };
  return kTable;
}

const PolicyRow* FindPolicy(const std::string& name) {
  for (const PolicyRow& r : Policies())
    if (name == r.name) return &r;
  return nullptr;
}

}  // namespace gpucast::sim
