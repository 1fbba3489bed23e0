#include "sim/policy.h"

#include <algorithm>
#include <cmath>

namespace gpucast::sim {

int ProfilePoolSize(int num_gpus, double fraction) {
  if (num_gpus <= 1) return 0;
  const int p = static_cast<int>(std::lround(fraction * num_gpus));
  return std::clamp(p, 1, num_gpus - 1);
}

double EffectiveCap(const PolicyOptions& o, const InterferenceModel& m) {
  return o.cap_by_capacity ? 100.0 * m.WorkCapacity() : o.cap;
}

std::optional<bool> ParseCapRule(const std::string& name) {
  if (name == "sum") return false;
  if (name == "capacity") return true;
  return std::nullopt;
}

const char* CapRuleName(bool cap_by_capacity) { return cap_by_capacity ? "capacity" : "sum"; }

double JobInfo::EstimateSd() const {
  if (observed) return observed_sd;
  return PredictionBelief(predicted_util, predicted_low, predicted_high).sd;
}

UtilBelief PredictionBelief(double predicted, double low, double high) {
  UtilBelief b;
  b.mean = std::isnan(predicted) ? 50.0 : predicted;
  if (std::isnan(predicted)) {
    b.sd = kUninformedSd;
  } else if (std::isnan(low) || std::isnan(high) || high < low) {
    b.sd = kUninformedSd;
  } else {
    b.sd = (high - low) / (2.0 * kPredictionIntervalZ);
  }
  return b;
}

UtilBelief CombineObservation(UtilBelief prior, double reading, double noise_sd, double rate_obs, double rate_sd) {
  const double r = std::clamp(rate_obs, 0.05, 1.0);
  const double u_obs = std::clamp(reading, 0.0, 100.0) / r;
  // Var(reading / r) ~ (noise / r)^2 + (u_obs x rate_sd)^2 (rate_sd relative).
  const double var_obs = std::max(1e-6, (noise_sd / r) * (noise_sd / r) + (u_obs * rate_sd) * (u_obs * rate_sd));
  UtilBelief out;
  if (!(prior.sd > 0)) {
    out = prior;  // a sure prediction (a zero-width interval) is kept
  } else {
    // The prediction is right within its sd with the probability its interval
    // states (80%), else it says nothing (uniform on [0, 100]): a mixture
    // prior. An observation far outside the interval then discredits the
    // prediction instead of being pulled towards it.
    const double wp = 1.0 / (prior.sd * prior.sd), wo = 1.0 / var_obs;
    const double m_n = (prior.mean * wp + u_obs * wo) / (wp + wo), v_n = 1.0 / (wp + wo);
    const double v_marg = prior.sd * prior.sd + var_obs, d = u_obs - prior.mean;
    const double like_n = kPredictionLevel * std::exp(-0.5 * d * d / v_marg) / std::sqrt(2 * M_PI * v_marg);
    const double like_u = (1.0 - kPredictionLevel) / 100.0;
    const double w_n = like_n / (like_n + like_u), w_u = 1.0 - w_n;
    out.mean = w_n * m_n + w_u * u_obs;
    const double second = w_n * (v_n + m_n * m_n) + w_u * (var_obs + u_obs * u_obs);
    out.sd = std::sqrt(std::max(0.0, second - out.mean * out.mean));
  }
  out.mean = std::clamp(out.mean, 0.0, 100.0);
  return out;
}

double GangMarginZ(int g) {
  if (g <= 1) return 0.0;
  // Normal quantile of 1 - 0.5 / g (Acklam's rational approximation, |error| < 1.2e-9).
  const double p = 1.0 - 0.5 / g;
  const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                      1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                      6.680131188771972e+01,  -1.328068155288572e+01};
  const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                      -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00};
  if (p > 0.97575) {
    const double q = std::sqrt(-2 * std::log(1 - p));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

namespace {

// How a job is profiled before it is packed by its measured utilization.
enum class Profile {
  kNone,       // never (decides by predictions, or by requests)
  kExclusive,  // alone on empty GPUs for the window, then back to the queue (re-placed)
  kInPlace,    // alone on empty GPUs for the window, as kExclusive, but it keeps running there
               // (no re-queue); when its window ends it moves (Migrate) to the fullest occupied
               // GPUs where it fits by its measurement, else it stays and others may join it
  kPool,       // on one GPU of a dedicated pool (progress discarded), then queued for the others
};

// How one co-location policy decides; every table row is one of these.
struct Knobs {
  bool by_request = false;     // slot: pack by the job's requested GPU share (a whole-GPU
                               // request runs alone); no utilization
  Profile profile = Profile::kNone;
  bool use_profiled = false;   // co-locate by profiled (measured) utilization, else predicted
  bool bound_slowdown = false; // accept by the interference model's predicted rates, else by the cap
  bool spread = false;         // prefer empty GPUs, then least interference; else best-fit packing
  bool feedback = false;       // decide by observation once a job has one (JobInfo::Estimate), and
                               // migrate jobs off GPUs the observations show over-committed
  bool hybrid = false;         // with feedback and kInPlace: a job whose prediction is confident
                               // (sd <= confident_sd) is placed at once; others are measured in place
};

// Whether k packs by the predictions' sum under the cap and nothing else
// (predictive, predictive-spread): the policies --interval-z and
// --admit-by-physics change.
bool PacksByPredictedSum(const Knobs& k) {
  return !k.feedback && !k.by_request && !k.use_profiled && !k.bound_slowdown && k.profile == Profile::kNone;
}

// A GPU's load during one round: the view's state plus this round's placements.
struct Tent {
  int gpu;
  double util_sum, mem_used, mem_mib;
  int njobs;
  bool taken_exclusive = false;
  double sd2 = 0;             // feedback (gang margins), --interval-z: the residents' summed estimate variance
  // bound_slowdown: resident + this round's utilizations, once this round
  // placed a job there (else the GPU's cache entry holds the residents').
  std::vector<double> own;
  bool modified = false;
  double max_u = 100;         // bound_slowdown: the heaviest newcomer it accepts (MaxNewcomer)
};

struct Failure {
  int num_gpus;
  double util, mem;
  bool exclusive;
};

class CoLocate : public Policy {
 public:
  CoLocate(Knobs k, PolicyOptions o)
      : k_(k), o_(o), cap_(k.by_request ? 100.0 : o.cap), migrates_(k.feedback || k.profile == Profile::kInPlace) {
    // predictive under admit_by_physics: interference-aware's admission, best-fit packing.
    if (o.admit_by_physics && PacksByPredictedSum(k) && !k.spread) k_.bound_slowdown = true;
  }

  // predictive-hybrid: a job whose prediction is sure enough to place it at once.
  bool Confident(const JobInfo& j) const {
    return k_.hybrid &&
           PredictionBelief(j.predicted_util, j.predicted_low, j.predicted_high).sd <= o_.confident_sd + 1e-9;
  }
  // Whether a job still has to be measured before it is packed.
  bool NeedsProfile(const JobInfo& j) const {
    return k_.profile != Profile::kNone && !j.profiled && !j.observed && !Confident(j);
  }

  std::vector<Placement> Schedule(const ClusterView& v) override {
    std::vector<Placement> out;
    const auto& gpus = v.gpus();
    const InterferenceModel& m = v.model();
    model_ = &m;
    // slot: 100 (a GPU's requests add to at most one GPU); else the cap's rule.
    cap_ = k_.by_request ? 100.0 : EffectiveCap(o_, m);
    const JobInfo& small = v.smallest_job();
    const double u_min = k_.by_request     ? 100.0 * small.gpu_request
                         : k_.use_profiled ? small.profiled_util
                         : k_.feedback     ? std::min(small.predicted_util, small.profiled_util)
                                           : small.predicted_util;
    if (k_.profile == Profile::kPool) FindPool(gpus);
    tents_.clear();
    pool_free_.clear();
    // predictive-feedback, profiling (in place): each GPU's load by estimate,
    // after this round's migrations.
    std::vector<double> est_sum, mem_delta;
    if (migrates_) Migrate(v, &out, &est_sum, &mem_delta);
    const bool margins = k_.feedback && !k_.by_request;
    // predictive (--interval-z): the residents' summed prediction variance.
    const bool bounds = o_.interval_z > 0 && PacksByPredictedSum(k_);
    double min_sum = 1e18, max_free = 0;
    int empty = 0;
    // Only GPUs that could take the smallest job (or are empty) are open this round.
    for (size_t g = 0; g < gpus.size(); ++g) {
      const GpuState& s = gpus[g];
      if (!in_pool_.empty() && in_pool_[g]) {  // profiling-pool: profiling runs only
        if (!s.exclusive && s.jobs.empty()) pool_free_.push_back(static_cast<int>(g));
        continue;
      }
      if (s.exclusive) continue;
      const double mem_used = s.mem_used + (migrates_ ? mem_delta[g] : 0.0);
      const int njobs = static_cast<int>(s.jobs.size()) + (migrates_ ? moved_in_[g] - moved_out_[g] : 0);
      if (s.mem_mib - mem_used < small.mem_mib) continue;
      if (Full(njobs)) continue;  // at the co-location limit (max_jobs_per_gpu)
      if (njobs > 0) {
        double sum = k_.by_request     ? RequestSum(v, s)
                     : migrates_       ? est_sum[g]
                     : k_.use_profiled ? s.known_sum
                                       : s.pred_sum;
        // Accept's test for the smallest job, before building the GPU's entry.
        if (!k_.bound_slowdown && !UnderCap(sum, u_min)) continue;
        double sd2 = margins ? sd2_[g] : 0.0;
        if (bounds)
          for (int r : s.jobs) {
            const double sd = EstSd(v.job(r));
            sd2 += sd * sd;
          }
        Tent probe{static_cast<int>(g), sum, mem_used, s.mem_mib, njobs, false, sd2, {}};
        if (k_.bound_slowdown) {
          probe.max_u = CachedMaxNewcomer(v, g, s.jobs);
          if (probe.max_u < u_min) continue;
        }
        tents_.push_back(std::move(probe));
      } else {
        tents_.push_back({static_cast<int>(g), 0.0, mem_used, s.mem_mib, 0, false, 0.0, {}});
        if (k_.bound_slowdown) tents_.back().modified = true;  // no residents: own (empty) list
      }
      double sum = tents_.back().util_sum;
      min_sum = std::min(min_sum, sum);
      max_free = std::max(max_free, s.mem_mib - mem_used);
      empty += njobs == 0;
    }
    if (tents_.empty() && pool_free_.empty()) return out;
    std::vector<Failure> failures;
    int failed = 0;
    size_t next_pool = 0;
    // bound_slowdown: no GPU accepts a newcomer heavier than this.
    double max_u = -1;
    for (const Tent& x : tents_) max_u = std::max(max_u, x.max_u);
    const double profile_run_s = o_.profile_warmup_s + o_.profile_s;
    v.VisitCandidates([&](int j) {
      // The backfill depth: a round stops after max_failures failures, except
      // for the jobs arriving now (ClusterView::arrived_now).
      if (failed >= o_.max_failures && !v.arrived_now(j)) return false;
      const JobInfo& info = v.job(j);
      const bool unprofiled = NeedsProfile(info);
      if (unprofiled && k_.profile == Profile::kPool) {
        // One pool GPU samples the job's per-GPU utilization; a full pool is a
        // wait for the pool, not a failure to place.
        while (next_pool < pool_free_.size() && gpus[pool_free_[next_pool]].mem_mib < info.mem_mib) ++next_pool;
        if (next_pool >= pool_free_.size()) return true;
        Placement p;
        p.job = j;
        p.gpus = {pool_free_[next_pool++]};
        p.exclusive = true;
        p.run_alone_s = profile_run_s;
        p.profile_discard = true;
        out.push_back(std::move(p));
        return true;
      }
      const bool in_place = unprofiled && k_.profile == Profile::kInPlace;
      // An unmeasured job (every kind of profiling) starts alone on empty GPUs.
      const bool alone = info.alone || unprofiled || (k_.by_request && info.gpu_request >= 1 - 1e-9);
      const double u = alone ? 100.0 : UtilOf(info);
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
          (!alone && !k_.bound_slowdown && u > cap_ - min_sum + 1e-9) ||
          (!alone && k_.bound_slowdown && u > max_u + 1e-6)) {
        ++failed;
        return true;
      }
      std::vector<std::pair<double, int>>& ok = ok_;  // (score, tent index); higher score first
      ok.clear();
      // A gang job's margin on each GPU (GangMarginZ): 0 for one GPU.
      // predictive with --interval-z: the same margin at z = interval_z for every job.
      double gz = 0;
      if (!alone) gz = margins ? GangMarginZ(info.num_gpus) : bounds ? o_.interval_z : 0.0;
      const double sd_new = gz > 0 ? EstSd(info) : 0.0;
      for (size_t t = 0; t < tents_.size(); ++t) {
        const Tent& x = tents_[t];
        if (x.taken_exclusive || x.mem_used + info.mem_mib > x.mem_mib) continue;
        if (alone) {
          if (x.njobs == 0) ok.push_back({0.0, static_cast<int>(t)});
          // Every empty GPU scores 0, ties go to the lowest index: the first ones found.
          if (static_cast<int>(ok.size()) == info.num_gpus) break;
          continue;
        }
        if (k_.spread && x.njobs == 0 && empty >= info.num_gpus) {
          ok.push_back({3.0, static_cast<int>(t)});  // enough empty GPUs: take the first ones
          if (static_cast<int>(ok.size()) == info.num_gpus) break;
          continue;
        }
        if (k_.spread && empty >= info.num_gpus) continue;
        if (Full(x.njobs)) continue;
        if (k_.bound_slowdown && u > x.max_u + 1e-6) continue;
        if (gz > 0 && x.njobs > 0 && x.util_sum + u + gz * std::sqrt(x.sd2 + sd_new * sd_new) > cap_ + 1e-9) continue;
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
      p.run_alone_s = unprofiled ? profile_run_s : 0.0;
      p.profile_in_place = in_place;
      for (int i = 0; i < info.num_gpus; ++i) {
        Tent& x = tents_[ok[i].second];
        if (x.njobs == 0) --empty;
        x.njobs += 1;
        x.util_sum += u;
        x.mem_used += info.mem_mib;
        if ((margins || bounds) && !alone) {
          const double sd = EstSd(info);
          x.sd2 += sd * sd;
        }
        if (k_.bound_slowdown) {
          if (!x.modified) x.own = cache_[x.gpu].utils;
          x.modified = true;
          x.own.push_back(u);
          x.max_u = alone ? -1 : MaxNewcomer(x.own);
        }
        x.taken_exclusive = alone;
        p.gpus.push_back(x.gpu);
      }
      if (k_.bound_slowdown) {
        max_u = -1;
        for (const Tent& x : tents_) max_u = std::max(max_u, x.max_u);
      }
      out.push_back(std::move(p));
      return true;
    });
    return out;
  }

 private:
  // Whether a GPU with njobs resident jobs takes no more (PolicyOptions::max_jobs_per_gpu).
  bool Full(int njobs) const { return o_.max_jobs_per_gpu > 0 && njobs >= o_.max_jobs_per_gpu; }

  double UtilOf(const JobInfo& j) const {
    if (k_.by_request) return 100.0 * j.gpu_request;
    if (k_.feedback) return FeedbackEst(j);
    if (k_.use_profiled) return j.profiled ? j.profiled_util : 100.0;
    return j.predicted_util;
  }

  // What the feedback policies know of a job: the estimate after an
  // observation, else its measurement (hybrid, measured in place), else its
  // prediction; and that knowledge's sd.
  double FeedbackEst(const JobInfo& j) const {
    return j.observed ? j.observed_util : j.profiled ? j.profiled_util : j.predicted_util;
  }
  double EstSd(const JobInfo& j) const {
    if (j.observed) return j.observed_sd;
    if (j.profiled) return o_.observe_noise_pct;
    return PredictionBelief(j.predicted_util, j.predicted_low, j.predicted_high).sd;
  }

  // profiling-pool: the pool is the ProfilePoolSize GPUs with the most memory
  // (lowest ids first), so that a job that fits any GPU fits every pool GPU.
  void FindPool(const std::vector<GpuState>& gpus) {
    if (in_pool_.size() == gpus.size()) return;
    std::vector<int> ids(gpus.size());
    for (size_t g = 0; g < gpus.size(); ++g) ids[g] = static_cast<int>(g);
    std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return gpus[a].mem_mib > gpus[b].mem_mib; });
    in_pool_.assign(gpus.size(), 0);
    const int n = ProfilePoolSize(static_cast<int>(gpus.size()), o_.profile_pool_fraction);
    for (int i = 0; i < n; ++i) in_pool_[ids[i]] = 1;
  }

  // 100 x the resident jobs' requested shares (slot's load of a GPU).
  static double RequestSum(const ClusterView& v, const GpuState& s) {
    double sum = 0;
    for (int r : s.jobs) sum += 100.0 * v.job(r).gpu_request;
    return sum;
  }

  // The utilization a migrating policy counts a resident job at:
  // predictive-feedback its estimate (observation, else prediction);
  // profiling (in place) its measurement, 100 while it is being measured.
  double Est(const JobInfo& j) const {
    if (k_.hybrid && NeedsProfile(j)) return 100.0;  // being measured alone
    if (k_.feedback) return FeedbackEst(j);
    return j.profiled ? j.profiled_util : 100.0;
  }
  // Whether the policy may move the job: predictive-feedback any observed
  // job; profiling (in place) only a newcomer whose window just ended (never
  // a job measured earlier, nor one that must run alone); both at most
  // max_migrations times.
  bool Movable(const JobInfo& j) const {
    if (j.migrations >= o_.max_migrations) return false;
    if (k_.hybrid) return j.observed || (j.profiled && j.newly_measured && !j.alone);
    return k_.feedback ? j.observed : j.profiled && j.newly_measured && !j.alone;
  }
  // A newcomer whose in-place window just ended (it moves to join others).
  bool Fresh(const JobInfo& j) const {
    return k_.profile == Profile::kInPlace && j.profiled && j.newly_measured && !j.alone &&
           j.migrations < o_.max_migrations;
  }

  // The moves of the migrating policies. predictive-feedback (a correction):
  // on every GPU whose residents' estimates (Est) sum above the cap by more
  // than the noise margin (PolicyOptions::migrate_z), move movable jobs
  // (Movable) to GPUs where they fit by their estimate, lightest job that
  // brings the GPU within the cap first, else the heaviest; a GPU that stays
  // over the cap is closed to new jobs (its sum exceeds the cap). profiling
  // (in place) (a consolidation): every newcomer whose window just ended
  // alone, in submit order, moves to the occupied GPUs where it fits by its
  // measurement, freeing its own; a GPU that received a mover keeps its
  // newcomer. Both: best fit (the fullest GPUs that fit), memory as the
  // scheduler knows it, a gang job moves with all its GPUs or stays, a move
  // restarts from the last checkpoint (the simulator's migration). Fills
  // est_sum / mem_delta (per GPU, after the moves) and moved_in_/moved_out_.
  void Migrate(const ClusterView& v, std::vector<Placement>* out, std::vector<double>* est_sum,
               std::vector<double>* mem_delta) {
    const auto& gpus = v.gpus();
    const size_t n = gpus.size();
    est_sum->assign(n, 0.0);
    sd2_.assign(n, 0.0);
    mem_delta->assign(n, 0.0);
    moved_in_.assign(n, 0);
    moved_out_.assign(n, 0);
    std::vector<int> over;
    std::vector<std::pair<int, int>> fresh;  // profiling (in place): (newcomer, a GPU of it)
    for (size_t g = 0; g < n; ++g) {
      for (int j : gpus[g].jobs) {
        const JobInfo& info = v.job(j);
        (*est_sum)[g] += Est(info);
        if (k_.feedback) {
          const double sd = EstSd(info);
          sd2_[g] += sd * sd;
        }
        if (Fresh(info)) fresh.push_back({j, static_cast<int>(g)});
      }
      // Over-committed: the estimates' sum above the cap by more than migrate_z
      // sd of that sum (the estimates' own uncertainty: observations and
      // predictions alike; 0 for exact ones).
      const double margin = o_.migrate_z * std::sqrt(sd2_[g]);
      if (k_.feedback && gpus[g].jobs.size() >= 2 && !gpus[g].exclusive && (*est_sum)[g] > cap_ + margin + 1e-9)
        over.push_back(static_cast<int>(g));
    }
    // The GPUs a gang job holds (a scan; gang movers are rare).
    auto gpus_of = [&](int j, int g) {
      if (v.job(j).num_gpus == 1) return std::vector<int>{g};
      std::vector<int> on;
      for (size_t h = 0; h < n; ++h)
        if (std::find(gpus[h].jobs.begin(), gpus[h].jobs.end(), j) != gpus[h].jobs.end())
          on.push_back(static_cast<int>(h));
      return on;
    };
    std::vector<std::pair<double, int>> dests;
    // Moves job j (utilization u, on GPUs `from`) to the fullest GPUs where it
    // fits (occupied ones only when `occupied`); false (and nothing changes)
    // when too few fit.
    auto move = [&](int j, double u, const std::vector<int>& from, bool occupied) {
      const JobInfo& info = v.job(j);
      dests.clear();
      for (size_t h = 0; h < n; ++h) {
        if (gpus[h].exclusive || std::find(from.begin(), from.end(), static_cast<int>(h)) != from.end()) continue;
        const int resident = static_cast<int>(gpus[h].jobs.size()) + moved_in_[h] - moved_out_[h];
        if (occupied && resident <= 0) continue;
        if (Full(resident)) continue;
        if (gpus[h].mem_used + (*mem_delta)[h] + info.mem_mib > gpus[h].mem_mib) continue;
        const double sum = (*est_sum)[h];
        if (sum + u > cap_ + 1e-9) continue;
        dests.push_back({sum, static_cast<int>(h)});
      }
      if (static_cast<int>(dests.size()) < info.num_gpus) return false;
      // Best fit: the fullest GPUs that fit (ties: lowest id).
      std::partial_sort(dests.begin(), dests.begin() + info.num_gpus, dests.end(),
                        [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
      Placement p;
      p.job = j;
      p.migrate = true;
      for (int i = 0; i < info.num_gpus; ++i) p.gpus.push_back(dests[i].second);
      for (int f : from) {
        (*est_sum)[f] -= u;
        (*mem_delta)[f] -= info.mem_mib;
        ++moved_out_[f];
      }
      for (int d : p.gpus) {
        (*est_sum)[d] += u;
        (*mem_delta)[d] += info.mem_mib;
        ++moved_in_[d];
      }
      out->push_back(std::move(p));
      return true;
    };
    std::vector<int> moved;
    for (int g : over) {
      while ((*est_sum)[g] > cap_ + 1e-9 && static_cast<int>(gpus[g].jobs.size()) - moved_out_[g] >= 2) {
        const double excess = (*est_sum)[g] - cap_;
        int victim = -1;
        double vu = 0;
        bool fixes = false;
        for (int j : gpus[g].jobs) {
          const JobInfo& info = v.job(j);
          if (!Movable(info)) continue;
          if (std::find(moved.begin(), moved.end(), j) != moved.end()) continue;
          double u = Est(info);
          bool f = u >= excess - 1e-9;
          // Prefer one that fixes the GPU alone, the lightest such; else the heaviest.
          if (victim < 0 || (f && !fixes) || (f && fixes && u < vu) || (!f && !fixes && u > vu)) {
            victim = j;
            vu = u;
            fixes = f;
          }
        }
        if (victim < 0) break;
        moved.push_back(victim);  // tried once this round, moved or not
        move(victim, vu, gpus_of(victim, g), false);
      }
    }
    if (fresh.empty()) return;
    // profiling (in place): job ids are in submit order; a gang job is listed once per GPU.
    std::sort(fresh.begin(), fresh.end());
    fresh.erase(std::unique(fresh.begin(), fresh.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
                fresh.end());
    for (const auto& [j, g] : fresh) {
      const std::vector<int> from = gpus_of(j, g);
      bool joined = false;  // a mover came to one of its GPUs this round: it stays with it
      for (int f : from) joined = joined || moved_in_[f] > 0 || gpus[f].jobs.size() != 1;
      if (!joined) move(j, Est(v.job(j)), from, true);
    }
  }

  // interference-aware: the heaviest newcomer (utilization, percent) that
  // keeps every job of `utils` plus itself at rate >= 1 - max_slowdown; -1:
  // none. The least rate falls as the newcomer grows (more load on the
  // device), so a bisection finds the edge; Accept still checks exactly.
  double MaxNewcomer(const std::vector<double>& utils) const {
    if (utils.empty()) return 100;
    return model_->MaxExtra(utils.data(), static_cast<int>(utils.size()), 1.0 - o_.max_slowdown);
  }

  // MaxNewcomer of GPU g's residents, kept while they are the same jobs with
  // the same utilizations (as the policy sees them); no allocation when unchanged.
  double CachedMaxNewcomer(const ClusterView& v, size_t g, const std::vector<int>& jobs) {
    if (cache_.size() <= g) cache_.resize(g + 1);
    GpuCache& c = cache_[g];
    scratch_.clear();
    for (int r : jobs) scratch_.push_back(UtilOf(v.job(r)));
    if (!c.valid || c.jobs != jobs || c.utils != scratch_) {
      c.jobs = jobs;
      c.utils = scratch_;
      c.max_u = MaxNewcomer(c.utils);
      c.valid = true;
    }
    return c.max_u;
  }
  const std::vector<double>& Utils(const Tent& x) const { return x.modified ? x.own : cache_[x.gpu].utils; }

  // Whether a job of utilization u may join x; *score ranks acceptable GPUs.
  // A newcomer of utilization u fits under the cap on a GPU whose sum is `sum`.
  bool UnderCap(double sum, double u) const { return sum + u <= cap_ + 1e-9; }

  bool Accept(const Tent& x, double u, double* score) const {
    if (!k_.bound_slowdown) {
      if (!UnderCap(x.util_sum, u)) return false;
      *score = k_.spread ? (x.njobs == 0 ? 1e9 : -x.util_sum) : x.util_sum;  // pack: fullest first
      return true;
    }
    const std::vector<double>& utils = Utils(x);
    if (utils.empty()) {
      // spread (interference-aware): empty GPUs first; packing: last, so that
      // they stay free for the jobs that must start alone (profiling runs).
      *score = k_.spread ? 2.0 : -1e9;
      return true;
    }
    // Every resident job and the newcomer must keep rate >= 1 - max_slowdown.
    const double floor = 1.0 - o_.max_slowdown;
    double worst = model_->MinRate(utils.data(), static_cast<int>(utils.size()), u);
    if (worst < floor) return false;
    // spread: then the least predicted slowdown; packing: the fullest GPU (best fit).
    *score = k_.spread ? worst : x.util_sum;
    return true;
  }

  Knobs k_;
  PolicyOptions o_;
  double cap_;  // slot: 100 (a GPU's requests add to at most one GPU); else EffectiveCap (set each round)
  bool migrates_;  // predictive-feedback, profiling (in place): Migrate runs each round
  std::vector<Tent> tents_;
  std::vector<int> pool_free_;  // profiling-pool: idle pool GPUs this round
  std::vector<char> in_pool_;   // profiling-pool: per GPU, kept for profiling
  std::vector<int> moved_in_, moved_out_;
  std::vector<double> sd2_;     // feedback: per GPU, the residents' summed estimate variance
  // Per GPU: residents and their utilizations -> MaxNewcomer (interference-aware).
  struct GpuCache {
    std::vector<int> jobs;
    std::vector<double> utils;
    double max_u = 100;
    bool valid = false;
  };
  std::vector<GpuCache> cache_;
  std::vector<double> scratch_;
  std::vector<std::pair<double, int>> ok_;  // Schedule: a candidate's acceptable GPUs (kept: no allocation per job)
  const InterferenceModel* model_ = nullptr;  // the view's, during Schedule
};

std::unique_ptr<Policy> Make(Knobs k, const PolicyOptions& o) { return std::make_unique<CoLocate>(k, o); }

template <bool ByRequest, Profile Prof, bool Profiled, bool Bound, bool Spread, bool Feedback = false,
          bool Hybrid = false>
std::unique_ptr<Policy> MakeRow(const PolicyOptions& o) {
  return Make(Knobs{ByRequest, Prof, Profiled, Bound, Spread, Feedback, Hybrid}, o);
}

}  // namespace

const std::vector<PolicyRow>& Policies() {
  using P = Profile;
  static const std::vector<PolicyRow> kTable = {
      {"slot",
       "whole-GPU slots as clusters allocate them: a job's requested share of each GPU (the trace's; "
       "whole GPUs unless it says otherwise, e.g. Alibaba's gpu_milli) packs best-fit while the shares "
       "on a GPU add to at most one; a whole-GPU request runs alone",
       false, MakeRow<true, P::kNone, false, false, false>, false},
      {"profiling",
       "in place: a new job starts alone on empty GPUs and keeps running there (no re-queue), measured over "
       "a 10 s warm-up and a 60 s window as profiling-exclusive measures it; when its window ends it moves "
       "(restart from its last checkpoint, as every migration) to the fullest GPUs already running measured "
       "jobs where it fits by its measurement within the cap, freeing its own; else it stays, and measured "
       "jobs that move later may join it; a job is never moved again",
       false, MakeRow<false, P::kInPlace, true, false, false>, false},
      {"profiling-pool",
       "Lucid-style: a new job is profiled on one GPU of a dedicated pool (5% of the GPUs) for the "
       "warm-up and window (that run's progress is discarded), then queued for the other GPUs and "
       "packed best-fit by its measured utilization within the cap",
       false, MakeRow<false, P::kPool, true, false, false>, false},
      {"profiling-exclusive",
       "each new job first runs alone for a 10 s warm-up and a 60 s measured window (counted as used "
       "GPU time; progress kept), returns to the queue, and is then packed best-fit while the sum of "
       "measured utilization stays within the cap (the paper's 'online profiling' baseline)",
       false, MakeRow<false, P::kExclusive, true, false, false>, false},
      {"profiling-interference-aware",
       "the profiling counterpart of interference-aware: each new job is measured as profiling-exclusive "
       "measures it (alone for the warm-up and window, then back to the queue), then placed as "
       "interference-aware admits jobs, fed the measured utilizations: on a GPU where the fitted physics "
       "keeps every job at rate >= 1 - max_slowdown (no utilization cap), the fullest such GPU first "
       "(best fit, as profiling-exclusive packs), empty GPUs last (they stay free for profiling runs)",
       false, MakeRow<false, P::kExclusive, true, true, false>, false},
      {"predictive",
       "packed best-fit from submission while the sum of predicted utilization stays within the "
       "cap and predicted memory (its interval's high end) fits (the paper's scheme)",
       true, MakeRow<false, P::kNone, false, false, false>, false},
      {"predictive-spread",
       "like predictive, but empty GPUs first, then the least-loaded GPU (shares only when it must)",
       true, MakeRow<false, P::kNone, false, false, true>, false},
      {"interference-aware",
       "empty GPUs first; joins a shared GPU only if the fitted interference model, fed predicted "
       "utilizations, keeps every job on it at rate >= 1 - max_slowdown (default: rate >= 0.75)",
       true, MakeRow<false, P::kNone, false, true, true>, false},
      {"predictive-feedback",
       "beyond the paper: packed best-fit by prediction from submission (no profiling run); after "
       "--observe-after-s of running each job's utilization counter is read (while sharing: its rate x "
       "its solo utilization, plus noise), its solo utilization inferred through the interference "
       "model and used from then on; a job on a GPU whose sum exceeds the cap is migrated (restart "
       "from its last checkpoint) to GPUs where it fits, else that GPU takes no new jobs",
       true, MakeRow<false, P::kNone, false, false, false, true>, true},
      {"predictive-hybrid",
       "beyond the paper: a job whose prediction is confident (the sd its interval states at most "
       "--confident-sd) is placed at once as predictive-feedback places it; any other job is measured "
       "first, in place, as profiling measures it (alone on empty GPUs for the warm-up and window, then it "
       "joins the fullest GPUs where it fits by its measurement); every running job is observed and "
       "corrected as in predictive-feedback. It decides only by the predictor's own interval, never by "
       "how wrong a prediction really is",
       true, MakeRow<false, P::kInPlace, false, false, false, true, true>, true},
  };
  return kTable;
}

const PolicyRow* FindPolicy(const std::string& name) {
  for (const PolicyRow& r : Policies())
    if (name == r.name) return &r;
  return nullptr;
}

}  // namespace gpucast::sim
