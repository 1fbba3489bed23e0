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
  bool feedback = false;       // decide by observation once a job has one (JobInfo::Estimate), and
                               // migrate jobs off GPUs the observations show over-committed
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
    const double u_min = k_.use_profiled ? small.profiled_util
                         : k_.feedback  ? std::min(small.predicted_util, small.profiled_util)
                                        : small.predicted_util;
    tents_.clear();
    // predictive-feedback: each GPU's load by estimate, after this round's migrations.
    std::vector<double> est_sum, mem_delta;
    if (k_.feedback) Migrate(v, &out, &est_sum, &mem_delta);
    double min_sum = 1e18, max_free = 0;
    int empty = 0;
    // Only GPUs that could take the smallest job (or are empty) are open this round.
    for (size_t g = 0; g < gpus.size(); ++g) {
      const GpuState& s = gpus[g];
      if (s.exclusive) continue;
      const double mem_used = s.mem_used + (k_.feedback ? mem_delta[g] : 0.0);
      const int njobs = static_cast<int>(s.jobs.size()) + (k_.feedback ? moved_in_[g] - moved_out_[g] : 0);
      if (s.mem_mib - mem_used < small.mem_mib) continue;
      if (njobs > 0) {
        if (k_.slot_only) continue;
        double sum = k_.use_profiled ? s.known_sum : k_.feedback ? est_sum[g] : s.pred_sum;
        Tent probe{static_cast<int>(g), sum, mem_used, s.mem_mib, njobs, false, {}};
        if (k_.bound_slowdown)
          for (int r : s.jobs) probe.utils.push_back(UtilOf(v.job(r)));
        double score;
        if (!Accept(probe, u_min, &score)) continue;
        tents_.push_back(std::move(probe));
      } else {
        tents_.push_back({static_cast<int>(g), 0.0, mem_used, s.mem_mib, 0, false, {}});
      }
      double sum = tents_.back().util_sum;
      min_sum = std::min(min_sum, sum);
      max_free = std::max(max_free, s.mem_mib - mem_used);
      empty += njobs == 0;
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
      p.run_alone_s = (k_.profile_first && !info.profiled) ? o_.profile_warmup_s + o_.profile_s : 0.0;
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
    if (k_.feedback) return j.Estimate();
    return j.predicted_util;
  }

  // predictive-feedback's correction: on every GPU whose residents' estimates
  // (observation, else prediction) sum above the cap by more than the noise
  // margin (PolicyOptions::migrate_z), move observed one-GPU
  // jobs (not yet migrated max_migrations times) to a GPU where they fit
  // (best fit: the fullest that still fits), lightest job that brings the GPU
  // within the cap first, else the heaviest. A GPU that stays over the cap is
  // closed to new jobs (its sum exceeds the cap). Fills est_sum / mem_delta
  // (per GPU, after the moves) and moved_in_/moved_out_.
  void Migrate(const ClusterView& v, std::vector<Placement>* out, std::vector<double>* est_sum,
               std::vector<double>* mem_delta) {
    const auto& gpus = v.gpus();
    const size_t n = gpus.size();
    est_sum->assign(n, 0.0);
    mem_delta->assign(n, 0.0);
    moved_in_.assign(n, 0);
    moved_out_.assign(n, 0);
    std::vector<int> over;
    for (size_t g = 0; g < n; ++g) {
      int observed = 0;
      for (int j : gpus[g].jobs) {
        (*est_sum)[g] += v.job(j).Estimate();
        observed += v.job(j).observed ? 1 : 0;
      }
      const double margin = o_.migrate_z * o_.observe_noise_pct * std::sqrt(static_cast<double>(observed));
      if (gpus[g].jobs.size() >= 2 && !gpus[g].exclusive && (*est_sum)[g] > o_.cap + margin + 1e-9)
        over.push_back(static_cast<int>(g));
    }
    std::vector<int> moved;
    for (int g : over) {
      while ((*est_sum)[g] > o_.cap + 1e-9 && static_cast<int>(gpus[g].jobs.size()) - moved_out_[g] >= 2) {
        const double excess = (*est_sum)[g] - o_.cap;
        int victim = -1;
        double vu = 0;
        bool fixes = false;
        for (int j : gpus[g].jobs) {
          const JobInfo& info = v.job(j);
          if (!info.observed || info.num_gpus != 1 || info.migrations >= o_.max_migrations) continue;
          if (std::find(moved.begin(), moved.end(), j) != moved.end()) continue;
          double u = info.observed_util;
          bool f = u >= excess - 1e-9;
          // Prefer one that fixes the GPU alone, the lightest such; else the heaviest.
          if (victim < 0 || (f && !fixes) || (f && fixes && u < vu) || (!f && !fixes && u > vu)) {
            victim = j;
            vu = u;
            fixes = f;
          }
        }
        if (victim < 0) break;
        const JobInfo& info = v.job(victim);
        int dest = -1;
        double dest_sum = -1;
        for (size_t h = 0; h < n; ++h) {
          if (static_cast<int>(h) == g || gpus[h].exclusive) continue;
          if (gpus[h].mem_used + (*mem_delta)[h] + info.mem_mib > gpus[h].mem_mib) continue;
          double sum = (*est_sum)[h];
          if (sum + vu > o_.cap + 1e-9) continue;
          if (sum > dest_sum) {
            dest = static_cast<int>(h);
            dest_sum = sum;
          }
        }
        moved.push_back(victim);  // tried once this round, moved or not
        if (dest < 0) continue;
        Placement p;
        p.job = victim;
        p.gpus = {dest};
        p.migrate = true;
        out->push_back(std::move(p));
        (*est_sum)[g] -= vu;
        (*est_sum)[dest] += vu;
        (*mem_delta)[g] -= info.mem_mib;
        (*mem_delta)[dest] += info.mem_mib;
        ++moved_out_[g];
        ++moved_in_[dest];
      }
    }
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
    double worst = model_->MinRate(x.utils.data(), static_cast<int>(x.utils.size()), u);
    if (worst < floor) return false;
    *score = worst;  // then the least predicted slowdown
    return true;
  }

  Knobs k_;
  PolicyOptions o_;
  std::vector<Tent> tents_;
  std::vector<int> moved_in_, moved_out_;
  const InterferenceModel* model_ = nullptr;  // the view's, during Schedule
};

template <bool Slot, bool Profile, bool Profiled, bool Bound, bool Spread, bool Feedback = false>
std::unique_ptr<Policy> Make(const PolicyOptions& o) {
  return std::make_unique<CoLocate>(Knobs{Slot, Profile, Profiled, Bound, Spread, Feedback}, o);
}

}  // namespace

const std::vector<PolicyRow>& Policies() {
  static const std::vector<PolicyRow> kTable = {
      {"slot", "one job per GPU (Kubernetes-style whole-GPU slots)", false,
       Make<true, false, false, false, false>, false},
      {"profiling",
       "each new job first runs alone for a 10 s warm-up and a 60 s measured window (profiling, "
       "counted as used GPU time; the measurement has noise), then is packed best-fit while the "
       "sum of measured utilization stays within the cap",
       false, Make<false, true, true, false, false>, false},
      {"predictive",
       "packed best-fit from submission while the sum of predicted utilization stays within the "
       "cap and memory fits (the paper's scheme)",
       true, Make<false, false, false, false, false>, false},
      {"predictive-spread",
       "like predictive, but empty GPUs first, then the least-loaded GPU (shares only when it must)",
       true, Make<false, false, false, false, true>, false},
      {"interference-aware",
       "empty GPUs first; joins a shared GPU only if the fitted interference model, fed predicted "
       "utilizations, keeps every job on it at rate >= 1 - max_slowdown (default: rate >= 0.75)",
       true, Make<false, false, false, true, true>, false},
      {"predictive-feedback",
       "beyond the paper: packed best-fit by prediction from submission (no profiling run); after "
       "--observe-after-s of running each job's own utilization is observed (true + noise) and used "
       "from then on; a job on a GPU whose sum exceeds the cap is migrated (checkpoint-restart, "
       "--migrate-cost-s of progress lost) to a GPU where it fits, else that GPU takes no new jobs",
       true, Make<false, false, false, false, false, true>, true},
  };
  return kTable;
}

const PolicyRow* FindPolicy(const std::string& name) {
  for (const PolicyRow& r : Policies())
    if (name == r.name) return &r;
  return nullptr;
}

}  // namespace gpucast::sim
