// Interference physics of N training jobs sharing one GPU, bounded by
// construction and fitted to measured pairs (docs/simulator.md, "Physics").
//
// Job i alone keeps the device busy a fraction d_i = u_i / 100 of the time
// (its measured utilization). Sharing k >= 2 jobs:
//   e_i  = d_i (1 + s)                       s: switching cost (kernel time
//                                            inflation while shared), fitted, >= 0
//   r0_i = 1 / (1 + beta e_i E_i)            E_i = sum_{j != i} e_j; beta >= 0
//                                            fitted: the waiting a job's kernels
//                                            see behind the others'
//   r_i  = r0_i min(1, 1 / sum_j r0_j e_j)   the device cannot be more than
//                                            100% busy
//   device_busy = 100 sum_i r_i e_i  (<= 100)
// So sum_i r_i u_i <= 100 always; n identical 100% jobs get 1/(n (1 + s)) each;
// two 10% jobs keep rate 1 / (1 + 0.01 beta (1+s)^2), about 1. No rate floor.
// Alone: rate 1, device busy u.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "sim/workload.h"
#include "util/status.h"

namespace gpucast::sim {

// One measured co-located pair (a row of lucid/colocate_info.csv).
struct PairMeasurement {
  int a = -1, b = -1;               // workload indices
  double speed_a = 1, speed_b = 1;  // normalised throughputs
  double util = 0;                  // device gpu_util, percent
  int repeats = 0;
};

struct InterferenceParams {
  double beta = 0;         // contention strength
  double switch_cost = 0;  // kernel-time inflation while shared
};

class InterferenceModel {
 public:
  // No interference (beta 0, switching cost 0): sharing jobs slow down only
  // when the device would be more than 100% busy.
  InterferenceModel() = default;
  explicit InterferenceModel(InterferenceParams p, std::vector<PairMeasurement> pairs = {})
      : p_(p), pairs_(std::move(pairs)) {}
  // Deprecated form (the old 5-coefficient formula); kept so existing callers
  // compile. Builds the no-interference model above; use InterferenceModel().
  InterferenceModel(int, const std::array<double, 5>&, const std::vector<PairMeasurement>&) {}

  // Reads colocate_info.csv (rows whose workloads are not in `w` are an
  // error) and fits beta and the switching cost to every measured pair.
  static Result<InterferenceModel> Fit(const std::vector<WorkloadProfile>& w,
                                       const std::string& colocate_csv);

  // Rates of k co-located jobs of utilizations u[0..k) (percent) and the
  // device's busy percent. k == 1: rate 1, busy u[0]. k == 0: busy 0.
  void Rates(const double* u, int k, double* rates, double* busy) const;

  // The least rate among k jobs of utilizations u[0..k) plus one more of
  // utilization u_extra (k + 1 jobs; no allocation: for policies' admission tests).
  double MinRate(const double* u, int k, double u_extra) const;

  // The same, with the utilizations of workloads (true_util), for the simulator.
  void Physics(const int* workloads, int k, const std::vector<WorkloadProfile>& w, double* rates,
               double* util) const;

  // 100 (1 - prod (1 - u_i/100)): the parameter-free "independent kernels"
  // estimate of device utilization (kept for the service's GPU listing).
  static double ModelCombinedUtil(const double* utils, int k);

  const InterferenceParams& params() const { return p_; }
  const std::vector<PairMeasurement>& pairs() const { return pairs_; }

  // Least-squares fit of (beta, switch_cost) to samples of pairs: each sample
  // (u_a, u_b, rate_a, rate_b), percent and normalised rates (capped at 1).
  static InterferenceParams FitParams(const std::vector<std::array<double, 4>>& samples);

 private:
  InterferenceParams p_;
  std::vector<PairMeasurement> pairs_;
};

// Held-out error of the rate model: leave one group out, where a group is an
// unordered pair of model names ("pair") or one model name ("model": every
// pair involving it is held out). Also the device-busy error on all pairs.
struct CvReport {
  std::string grouping;
  int groups = 0, samples = 0;
  double mae = 0, rmse = 0;     // rate, model on held-out pairs
  double bias = 0;              // mean (model - measured) rate
  double baseline_mae = 0;      // predicting the training mean rate
  double no_slowdown_mae = 0;   // predicting rate 1
  double util_mae = 0;          // device busy (full-data fit) vs measured gpu_util, points
  int util_pairs = 0;
};
Result<CvReport> CrossValidate(const std::vector<WorkloadProfile>& w, const std::string& colocate_csv,
                               const std::string& grouping);

// Check against Gavel's independent pair throughputs (V100, scale 1): Gavel job
// types mapped to the nearest Lucid workload of the same family (ResNet-50 ->
// ResNet50/ImageNet, LM -> LSTM/Wikitext2, Recommendation -> NeuMF/MovieLens,
// CycleGAN -> DCGAN/LSUN, A3C -> PPO/LunarLander; nearest batch, amp 0;
// ResNet-18 and Transformer have no counterpart and are left out).
struct GavelCheck {
  int pairs = 0;                 // ordered (job, partner) samples
  double model_mae = 0;          // |model rate - Gavel normalised throughput|
  double no_slowdown_mae = 0;    // |1 - Gavel|
  double lucid_mean_mae = 0;     // |mean Lucid rate - Gavel|
  double gavel_mean_rate = 0, model_mean_rate = 0;
  double bias = 0;               // model_mean_rate - gavel_mean_rate
  double corr = 0;               // Pearson correlation model vs Gavel
};
Result<GavelCheck> CheckAgainstGavel(const InterferenceModel& m, const std::vector<WorkloadProfile>& w,
                                     const std::string& throughputs_json);

}  // namespace gpucast::sim
