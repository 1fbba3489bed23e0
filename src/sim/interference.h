// Interference physics of co-located training jobs, from measurements.
//
// Where a pair of workloads was measured together (lucid/colocate_info.csv),
// each job's progress rate is its measured normalised throughput (speed1 /
// speed2, capped at 1: values a little above 1 are measurement noise) and the
// GPU's utilization is the measured device gpu_util. Everywhere else (pairs
// never measured, three or more jobs) a fitted model is used:
//   rate_i = clamp(c0 + c1 x + c2 y + c3 x y + c4 max(0, x + y - 1), 0.05, 1)
//   with x = u_i / 100, y = (sum of the other jobs' u) / 100,
// fitted by least squares to both directions of every measured pair; and the
// combined utilization is the parameter-free "independent kernels" model
//   util = 100 (1 - prod_i (1 - u_i / 100)).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "sim/workload.h"
#include "util/status.h"

namespace gpucast::sim {

struct PairMeasurement {
  int a = -1, b = -1;        // workload indices
  double speed_a = 1, speed_b = 1;  // normalised throughputs (mean of repeats)
  double util = 0;           // device gpu_util, percent
  int repeats = 0;
};

class InterferenceModel {
 public:
  using Coef = std::array<double, 5>;

  // Reads colocate_info.csv (rows whose workloads are not in `w` are an
  // error) and fits the rate model to all measured pairs.
  static Result<InterferenceModel> Fit(const std::vector<WorkloadProfile>& w,
                                       const std::string& colocate_csv);
  // A model with given coefficients and measured pairs (tests).
  InterferenceModel(int num_workloads, Coef coef, std::vector<PairMeasurement> pairs);

  // Fitted rate of a job with utilization u_self sharing with jobs whose
  // utilizations sum to u_others (percent). Used by policies on predictions.
  double ModelRate(double u_self, double u_others) const {
    double x = u_self / 100.0, y = u_others / 100.0, s = x + y - 1.0;
    double r = coef_[0] + coef_[1] * x + coef_[2] * y + coef_[3] * x * y + coef_[4] * (s > 0 ? s : 0.0);
    return r < kMinRate ? kMinRate : (r > 1.0 ? 1.0 : r);
  }
  static constexpr double kMinRate = 0.05;  // floor of any progress rate
  // 100 (1 - prod (1 - u_i/100)), percent.
  static double ModelCombinedUtil(const double* utils, int k);

  // Physics of k workloads sharing one GPU (true utilizations `true_util`
  // indexed like the workloads): fills rates[0..k) and *util (percent).
  void Physics(const int* workloads, int k, const std::vector<WorkloadProfile>& w, double* rates,
               double* util) const;

  const PairMeasurement* FindPair(int a, int b) const;  // either order; null if unmeasured
  const Coef& coef() const { return coef_; }
  const std::vector<PairMeasurement>& pairs() const { return pairs_; }

  // Least-squares fit of the coefficients to samples (u_self, u_others, rate).
  static Coef FitCoef(const std::vector<std::array<double, 3>>& samples);

 private:
  int n_ = 0;
  Coef coef_{};
  std::vector<PairMeasurement> pairs_;
  std::vector<int> index_;  // n_*n_ -> pairs_ index or -1
};

// Held-out error of the rate model: leave one group out, where a group is an
// unordered pair of model names ("pair") or one model name ("model": every
// pair involving it is held out). Also the combined-utilization model's error
// on all measured pairs (it has no fitted parameters).
struct CvReport {
  std::string grouping;
  int groups = 0, samples = 0;
  double mae = 0, rmse = 0;     // rate, model on held-out pairs
  double baseline_mae = 0;      // predicting the training mean rate
  double no_slowdown_mae = 0;   // predicting rate 1
  double util_mae = 0;          // combined-util model vs measured gpu_util, percent points
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
  double corr = 0;               // Pearson correlation model vs Gavel
};
Result<GavelCheck> CheckAgainstGavel(const InterferenceModel& m, const std::vector<WorkloadProfile>& w,
                                     const std::string& throughputs_json);

}  // namespace gpucast::sim
