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
  std::vector<double> added;  // utilizations placed this round
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
    tents_.clear();
    double min_sum = 1e18, max_free = 0;
    int empty = 0;
    for (size_t g = 0; g < gpus.size(); ++g) {
      const GpuState& s = gpus[g];
      if (s.exclusive) continue;
      if (k_.slot_only && !s.jobs.empty()) continue;
      double sum = k_.use_profiled ? s.known_sum : s.pred_sum;
      tents_.push_back({static_cast<int>(g), sum, s.mem_used, s.mem_mib,
                        static_cast<int>(s.jobs.size()), false, {}});
      min_sum = std::min(min_sum, sum);
      max_free = std::max(max_free, s.mem_mib - s.mem_used);
      empty += s.jobs.empty();
    }
    if (tents_.empty()) return out;
    std::vector<Failure> failures;
    int failed = 0;
    for (int j : v.candidates()) {
      if (failed >= o_.max_failures) break;
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
        continue;
      }
      std::vector<std::pair<double, int>> ok;  // (score, tent index); higher score first
      for (size_t t = 0; t < tents_.size(); ++t) {
        const Tent& x = tents_[t];
        if (x.taken_exclusive || x.mem_used + info.mem_mib > x.mem_mib) continue;
        if (alone) {
          if (x.njobs == 0) ok.push_back({0.0, static_cast<int>(t)});
          continue;
        }
        double score;
        if (!Accept(v, x, u, &score)) continue;
        ok.push_back({score, static_cast<int>(t)});
      }
      if (static_cast<int>(ok.size()) < info.num_gpus) {
        fail();
        continue;
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
        x.added.push_back(u);
        x.taken_exclusive = alone;
        p.gpus.push_back(x.gpu);
      }
      out.push_back(std::move(p));
    }
    return out;
  }

 private:
  double UtilOf(const JobInfo& j) const {
    if (k_.use_profiled) return j.profiled ? j.profiled_util : 100.0;
    return j.predicted_util;
  }

  // Whether a job of utilization u may join x; *score ranks acceptable GPUs.
  bool Accept(const ClusterView& v, const Tent& x, double u, double* score) const {
    if (!k_.bound_slowdown) {
      if (x.util_sum + u > o_.cap + 1e-9) return false;
      *score = k_.spread ? (x.njobs == 0 ? 1e9 : -x.util_sum) : x.util_sum;  // pack: fullest first
      return true;
    }
    // Every resident job and the newcomer must keep rate >= 1 - max_slowdown.
    utils_.clear();
    for (int r : v.gpus()[x.gpu].jobs) utils_.push_back(UtilOf(v.job(r)));
    for (double a : x.added) utils_.push_back(a);
    utils_.push_back(u);
    double sum = 0;
    for (double a : utils_) sum += a;
    double worst = 1.0;
    for (double a : utils_) worst = std::min(worst, v.model().ModelRate(a, sum - a));
    if (utils_.size() > 1 && worst < 1.0 - o_.max_slowdown) return false;
    *score = x.njobs == 0 ? 2.0 : worst;  // empty GPUs first, then least predicted slowdown
    return true;
  }

  Knobs k_;
  PolicyOptions o_;
  std::vector<Tent> tents_;
  mutable std::vector<double> utils_;
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
