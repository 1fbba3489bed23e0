// Interference physics of N training jobs sharing one GPU, bounded by
// construction and selected on measured pairs (docs/simulator.md, "Physics").
//
// Job i alone keeps the device busy a fraction d_i = u_i / 100 of the time
// (its measured utilization on the reference GPU, an RTX 3090). Sharing k >= 2
// jobs on a GPU type with parameters (k_occ, beta, s):
//   o_i  = k_occ d_i / (1 - d_i + k_occ d_i) occupancy on this GPU type: k_occ
//                                            is how much longer the job's GPU
//                                            phase takes there (1 on the GPU
//                                            its u was measured on), >= 1
//   e_i  = o_i (1 + s)                       s: switching cost (kernel time
//                                            inflation while shared), >= 0
//   r0_i = 1 / (1 + beta e_i E_i)            E_i = sum_{j != i} e_j; beta in
//                                            [0, 1]: the waiting a job's kernels
//                                            see behind the others' (1: its GPU
//                                            phase waits for all of theirs)
//   r_i  = min(r0_i, share(E))               E = sum_j e_j; the shared device:
//          share(E) = min(1, 1 / E)          time-slicing (no capacity term):
//                                            the device cannot do more than
//                                            one GPU's work
//          share(E) = (1 + (E/c)^p)^(-1/p)   capacity term (c >= 1, p > 0): a
//                                            smooth limit at c GPUs' work, as
//                                            measured heavy pairs reach above
//                                            100% (Lucid: up to 115 on average)
//   device_busy = 100 min(1, sum_i r_i e_i)  (the counter cannot exceed 100)
// With k_occ = 1, beta = 0, s = 0 and no capacity term this is the
// time-slicing bound r_i = min(1, 100 / sum_j u_j). Since e_i >= d_i,
// sum_i r_i u_i <= 100 c always (c = 1 without the capacity term: WorkCapacity);
// n identical 100% jobs get at most 1/(n (1 + s)) c each (beta <= 1); every rate is
// non-increasing in every other job's utilization. Alone: rate 1, busy u.
//
// Which terms are used is decided by the data (Fit): a form with fitted terms
// replaces the time-slicing bound only where it beats the bound on models it
// was not fitted on (leave one model out, 95% cluster bootstrap). The RTX 3090
// model comes from Lucid's pairs; K80, P100 and V100 from Gavel's.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/workload.h"
#include "util/status.h"

namespace gpucast::sim {

// The most jobs one GPU was measured running at once in the data every fit of
// this physics reads: two. Lucid's colocate_info.csv (RTX 3090, 830 rows) has
// exactly two jobs a row (model1..speed1, model2..speed2), and Gavel's
// simulation_throughputs.json (K80, P100, V100) maps each job either to its
// isolated throughput ("null") or to one other job's key with a pair
// [own, other] of throughputs. No source in ../shared/data measures three or
// more jobs on one GPU, so the fitted terms (the capacity term above all: a
// GPU does up to c GPUs' work) are extrapolations past two jobs, with no
// per-job cost beyond the pair. The simulator and the service co-locate at
// most this many jobs per GPU by default (PolicyOptions::max_jobs_per_gpu;
// `--max-jobs-per-gpu 0` lifts the limit; docs/simulator.md, "Co-location
// degree"). InterferenceTest.MeasuredJobsPerGpuIsWhatTheDataHolds reads the
// files and checks this number.
inline constexpr int kMeasuredJobsPerGpu = 2;

// One measured co-located pair (a row of lucid/colocate_info.csv).
struct PairMeasurement {
  int a = -1, b = -1;               // workload indices
  double speed_a = 1, speed_b = 1;  // normalised throughputs
  double util = 0;                  // device gpu_util, percent
  int repeats = 0;
};

struct InterferenceParams {
  double beta = 0;         // contention strength, in [0, 1] (larger values act as 1)
  double switch_cost = 0;  // kernel-time inflation while shared, >= 0
  double occupancy = 1;    // k_occ >= 1: GPU-phase slowness on this GPU type
  // Capacity term: c (>= 1, GPUs' worth of work the shared device reaches at
  // most) and its sharpness p (> 0); p = 0: no capacity term (time-slicing share).
  double capacity = 1;
  double sharpness = 0;
};

// Which terms of the physics are fitted; the others stay at their
// time-slicing values (k_occ 1, beta 0, s 0). All false: the bound.
struct PhysicsForm {
  bool occupancy = false, contention = false, switching = false, capacity = false;
  // "time-slicing bound", or "+occupancy+contention" etc.
  std::string Name() const;
  bool operator==(const PhysicsForm&) const = default;
};

// A job spanning several GPUs (synchronous data parallel) advances at the rate
// of its slowest GPU: the minimum of per_gpu_rates. Each rate is that GPU's
// Rates() entry for this job. Empty: 0 (a job on no GPU makes no progress).
double GangRate(std::span<const double> per_gpu_rates);

class InterferenceModel {
 public:
  // No interference (the time-slicing bound): sharing jobs slow down only when
  // the device would be more than 100% busy.
  InterferenceModel() = default;
  explicit InterferenceModel(InterferenceParams p, std::vector<PairMeasurement> pairs = {})
      : p_(p), pairs_(std::move(pairs)) {}
  // Deprecated form (the old 5-coefficient formula); kept so existing callers
  // compile. Builds the no-interference model above; use InterferenceModel().
  InterferenceModel(int, const std::array<double, 5>&, const std::vector<PairMeasurement>&) {}

  // Reads colocate_info.csv (rows whose workloads are not in `w`, and more than
  // kMaxWorkloads rows, are errors naming the file and line) and selects and fits the RTX 3090 physics on every measured pair. With
  // gavel_json (gavel/simulation_throughputs.json) it also fits the K80, P100
  // and V100 physics on Gavel's pairs (ForGpu).
  static Result<InterferenceModel> Fit(const std::vector<WorkloadProfile>& w, const std::string& colocate_csv,
                                       const std::string& gavel_json = "");

  // Rates of k co-located jobs of utilizations u[0..k) (percent) and the
  // device's busy percent. k == 1: rate 1, busy u[0]. k == 0: busy 0.
  void Rates(const double* u, int k, double* rates, double* busy) const;

  // The same with a rate cap per job (caps[i] in (0, 1]; 1 = none): a gang
  // job that waits for its slowest GPU elsewhere runs at its cap here and
  // yields the rest of its share: it occupies the device caps[i] x its
  // utilization, and the other jobs share what is left (the share of the
  // uncapped ones solves share(E_free + sum_capped caps_i e_i / share) =
  // share, the device's load with the capped jobs at their real rates).
  // rates[i] <= caps[i] for capped jobs; with every cap 1 this is Rates.
  // free_rates (optional): each job's rate without its own cap, the others'
  // kept (min(r0_i, share)): for a capped job an upper bound of what it would
  // get uncapped here (uncapping it would lower the share a little).
  void RatesCapped(const double* u, const double* caps, int k, double* rates, double* busy,
                   double* free_rates = nullptr) const;

  // The most work a GPU of this model does, in GPUs' worth (sum_i r_i u_i /
  // 100 <= this): c with the capacity term, else 1. The ideal bound uses it.
  double WorkCapacity() const;

  // The least rate among k jobs of utilizations u[0..k) plus one more of
  // utilization u_extra (k + 1 jobs; no allocation: for policies' admission tests).
  double MinRate(const double* u, int k, double u_extra) const;

  // The heaviest utilization u_extra (percent, in [0, 100]) with
  // MinRate(u, k, u_extra) >= floor; -1 when even 0 is below it. Closed form
  // without the contention term (the least rate is then the share, a
  // function of the summed occupancy), else bisection.
  double MaxExtra(const double* u, int k, double floor) const;

  // The same, with the utilizations of workloads (true_util), for the simulator.
  void Physics(const int* workloads, int k, const std::vector<WorkloadProfile>& w, double* rates,
               double* util) const;

  // The model of one GPU type: its own fit where pairs were measured on that
  // type ("K80", "P100", "V100*" from Gavel, when Fit was given gavel_json),
  // else this model (the RTX 3090 fit). Names as in cluster specs.
  InterferenceModel ForGpu(std::string_view gpu_type) const;
  // Whether gpu_type has its own fit (RTX3090 always).
  bool HasFit(std::string_view gpu_type) const;

  // 100 (1 - prod (1 - u_i/100)): the parameter-free "independent kernels"
  // estimate of device utilization (kept for the service's GPU listing).
  static double ModelCombinedUtil(const double* utils, int k);

  const InterferenceParams& params() const { return p_; }
  const PhysicsForm& form() const { return form_; }
  const std::vector<PairMeasurement>& pairs() const { return pairs_; }
  // The per-type fits ("K80", "P100", "V100"), empty without gavel_json.
  struct GpuFit {
    std::string gpu;
    PhysicsForm form;
    InterferenceParams params;
  };
  const std::vector<GpuFit>& gpu_fits() const { return gpu_fits_; }

  // The previous fitting procedure (kept as the "current model" reference in
  // the validation): least squares over (beta, switch_cost), occupancy 1. Each
  // sample (u_a, u_b, rate_a, rate_b), percent and normalised rates (<= 1).
  static InterferenceParams FitParams(const std::vector<std::array<double, 4>>& samples);
  // Least absolute rate error over the terms of `form` (coarse grid, then a
  // finer one around the best; deterministic). Ranges: log2 k_occ in [0, 10],
  // beta in [0, 1], s in [0, 1], capacity c in [1, 1.6] with log2 p in [0, 6].
  static InterferenceParams FitForm(const std::vector<std::array<double, 4>>& samples, PhysicsForm form);

 private:
  InterferenceParams p_;
  PhysicsForm form_;
  std::vector<PairMeasurement> pairs_;
  std::vector<GpuFit> gpu_fits_;
};

// RatesCapped of one GPU, remembered: RatesCapped returns the outputs of the
// last computation when the model's parameters, k, u and caps are the same
// bit for bit (the result is a function of exactly these), else computes and
// keeps them. The simulator keeps one per GPU: a change on one GPU of a gang
// re-evaluates its other GPUs, which most often see the same residents and
// caps as before (about 70% of the GPU evaluations of interference-aware on
// 12,000 Philly jobs, counted), and a capped share is an iterative solve.
class RatesMemo {
 public:
  // As m.RatesCapped(u, caps, k, rates, busy, free_rates) (free_rates may be
  // nullptr). Returns whether it computed (false: the remembered outputs).
  bool RatesCapped(const InterferenceModel& m, const double* u, const double* caps, int k, double* rates,
                   double* busy, double* free_rates = nullptr);
  // Forget the remembered evaluation (the next call computes).
  void Clear() { valid_ = false; }

 private:
  bool valid_ = false;
  InterferenceParams p_;
  std::vector<double> u_, caps_, rates_, free_;
  double busy_ = 0;
};

// Gavel job type ("ResNet-50 (batch size 32)", "A3C") -> the Lucid workload of
// the same family (ResNet-50 -> ResNet50/ImageNet, LM -> LSTM/Wikitext2,
// Recommendation -> NeuMF/MovieLens, CycleGAN -> DCGAN/LSUN, A3C ->
// PPO/LunarLander; the nearest batch size on a log scale, the smallest when the
// type names none; amp 0), or -1 (ResNet-18, Transformer: no counterpart).
int MapGavelJobType(const std::string& type, const std::vector<WorkloadProfile>& w);

// ---- Validation (gpucast interference --validate) ----

// Rate errors (model - measured) over held-out samples (each job of a pair is
// one sample).
struct RateErrors {
  int samples = 0;
  double mae = 0, bias = 0, rmse = 0;
};

// One source of pairs on one GPU type, every error leave one group out (a
// group: a Lucid model name, or a Gavel job family; every pair involving it is
// held out).
struct SourceValidation {
  std::string source;    // "lucid" or "gavel"
  std::string gpu;       // "RTX3090", "K80", "P100", "V100"
  std::string grouping;  // "model" or "job family"
  int groups = 0;
  int pairs_total = 0;     // measured unordered pairs in the file (scale 1 for Gavel)
  int pairs_zero = 0;      // Gavel: zero throughput (not measured / did not fit), excluded
  int pairs_unmapped = 0;  // Gavel: a job type with no Lucid counterpart, excluded
  int pairs_used = 0;
  double measured_mean_rate = 0;   // over the used pairs' samples
  double all_valid_mean_rate = 0;  // Gavel: over every non-zero pair, mapped or not
  RateErrors no_slowdown;   // rate 1
  RateErrors mean_rate;     // control: the training groups' mean measured rate
  RateErrors bound;         // min(1, 100 / sum u): no parameters
  RateErrors current;       // the previous model: (beta, s) least squares on Lucid
  RateErrors selected;      // nested: the form chosen inside each fold's training groups
  struct Form {
    PhysicsForm form;
    RateErrors held_out;    // its parameters refitted in each fold
    InterferenceParams all; // fitted on every pair of this source
  };
  std::vector<Form> forms;
  std::vector<std::string> fold_choices;  // "group: form" per outer fold
  PhysicsForm chosen;                     // selection on every pair of this source
  InterferenceParams chosen_params;
  double device_busy_mae = -1;          // Lucid: chosen model's busy vs measured gpu_util, points
  double device_busy_mae_current = -1;  // the same for the current model
};

// Every table of the validation: Lucid (RTX 3090) and Gavel (K80, P100, V100).
Result<std::vector<SourceValidation>> Validate(const std::vector<WorkloadProfile>& w, const std::string& colocate_csv,
                                               const std::string& gavel_json);

}  // namespace gpucast::sim
