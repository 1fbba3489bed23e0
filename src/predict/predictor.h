// A fitted utilization model and the Predictor that the CLI and the HTTP
// service use: features -> regressor -> utilization percent with an interval.
//
// The regressor is fit on log1p(gpu_util%) (squared error there is what
// RMSLE measures); predictions are mapped back with expm1 and clamped to
// [0, 100]. The interval is the regressor's member spread mapped the same way.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost/cost.h"
#include "features/features.h"
#include "features/interconnect.h"
#include "predict/data_parallel.h"
#include "predict/dataset.h"
#include "predict/memory_model.h"
#include "predict/regressor.h"
#include "util/status.h"

namespace gpucast {

struct UtilPrediction {
  double util = 0;  // percent, 0-100
  double low = 0;   // interval, percent: low <= util <= high always (docs/predictor.md)
  double high = 0;
  // Wall time of one training step, ms, with its interval (step_low_ms <=
  // step_ms <= step_high_ms); NaN when the model predicts no step time (an
  // algorithm other than physics: the Predictor takes it from its step model).
  double step_ms = std::nan("");
  double step_low_ms = std::nan("");
  double step_high_ms = std::nan("");
};

// What the model has not seen, per row: how far the scenarios of
// docs/predictor.md ("What the predictor has not seen") move the prediction.
// The interval always spans them, and the calibrated error is added beyond
// them. 0 everywhere = nothing unknown (or a model without physics).
struct RowRisk {
  double low = 0, high = 0;            // log1p(util): how far util may fall / rise
  double step_low = 0, step_high = 0;  // log(step): how far the step may shorten / lengthen
  // On a GPU type without measured rows: the GPU-transfer window (log of the
  // step) the band was widened by beyond the host scenario (transfer_calibration).
  double transfer_longer = 0, transfer_shorter = 0;
  // Its utilization band's widening in UtilLogit (how far logit(util) of the low end
  // may fall and of the high end rise: transfer_util_calibration); both 0 when the
  // model has no utilization transfer scores (the band then holds the busy time:
  // util moves by e^-transfer_longer and e^transfer_shorter).
  double transfer_util_fall = 0, transfer_util_rise = 0;
  bool unknown_pipeline = false;       // an input pipeline whose cost the job did not state
  // An unmeasured workload: the per-step host work (ms) the low and high scenarios assumed
  // (the training workloads' range around the fitted value, HostStepRange); NaN when none.
  double host_step_long_ms = std::nan(""), host_step_short_ms = std::nan("");
  bool gpu_measured = true;            // the training rows hold a utilization row of this GPU type
  bool Any() const { return low > 0 || high > 0; }
};
// Fewest scores of one group (rows with a band, rows without) that calibrate
// that group's intervals; fewer: the pooled scores (fixed a priori).
inline constexpr size_t kMinGroupScores = 10;
// Sorted scores of the rows with (`band` true) or without a risk band; NaN scores dropped.
std::vector<double> GroupScores(const std::vector<double>& scores, const std::vector<RowRisk>& risks, bool band);
// The scenarios (fixed a priori, not fitted: docs/predictor.md).
// An input pipeline of unknown cost may take up to this many CPU ms per
// sample per worker (the low-utilization scenario; 0 is the high one).
inline constexpr double kRiskLoaderMsPerSample = 5.0;
// A GPU type without measured rows sits in another host, whose per-kernel,
// per-step and environment work may be this many times slower or faster.
inline constexpr double kRiskHostFactor = 2.0;

// How a calibrated model turns its leave-one-workload-out residuals into an
// interval (docs/predictor.md, "Intervals").
//  kNormalized (default): each residual r = log1p(measured) - log1p(predicted)
//    is divided by Difficulty(predicted); the interval is the point plus
//    Difficulty(point) x the shortest window of the sorted scores that holds
//    ceil((n+1) level) of them.
//  kCentral: the raw residuals, the central order statistics (the method
//    before: ConformalOffsets).
//  kLogit: each score is Logit(measured) - Logit(predicted) (util = busy /
//    (busy + idle), so logit(util) = log busy - log idle: a relative error in
//    either time moves it by the same amount at every utilization); the
//    interval is Logit(point) + the shortest window of the sorted scores,
//    mapped back.
enum class IntervalMethod { kNormalized, kCentral, kLogit };
inline constexpr IntervalMethod kDefaultIntervalMethod = IntervalMethod::kNormalized;
const char* IntervalMethodName(IntervalMethod m);  // "normalized-shortest", "central", "logit-shortest"
Result<IntervalMethod> ParseIntervalMethod(const std::string& name);  // also "normalized", "logit"
// The scale of a prediction's log1p error: a relative error e in the busy or
// the idle time of a step moves log(util) by e x (1 - util/100) (util = busy /
// (busy + idle)), so the error shrinks as the GPU saturates; plus a floor for
// the counter's own noise. Percent in, log1p units out.
inline constexpr double kDifficultyFloor = 0.05;
double Difficulty(double util);
// log((util + pad) / (100 - util + pad)), util in percent clamped to 0-100;
// the pad (points) keeps 0 and 100 finite (nvidia-smi reports whole percents
// and a measured 100.0 is common). LogitToUtil is its inverse, clamped to 0-100.
inline constexpr double kLogitPadPoints = 5;
double UtilLogit(double util);
double LogitToUtil(double z);

// A candidate of a selection: algorithm and feature set.
struct Candidate {
  std::string algo;
  std::string feature_set;
  std::string ToString() const { return algo + "/" + feature_set; }
};

// "auto": not a regressor but a selection made on the training rows only:
// every AutoCandidates() entry is scored by leave-one-workload-out over the
// training rows (SelectionScore: the median over workloads of each
// workload's RMSLE), the lowest is fit on all of them and its residuals of
// that pass calibrate the interval. Its honest error is the NESTED
// evaluation of that procedure (evaluate --algo auto, docs/predictor.md).
inline constexpr const char* kAutoAlgo = "auto";
// Every algorithm of the table on its own default feature set.
std::vector<Candidate> AutoCandidates();
// Score of a candidate from its leave-one-workload-out log residuals: the
// median over workloads of the workload's RMSLE (one workload that no input
// explains, such as PointNet's CPU-bound parsing, cannot decide the choice;
// docs/predictor.md gives the pooled-RMSLE criterion's result too).
double SelectionScore(const std::vector<double>& residuals, const std::vector<int>& group);

// The default algorithm (see docs/predictor.md for the nested evaluation
// that chose it). kDefaultFeatureSet: the set passed along with it (auto
// ignores it: each candidate has its own).
inline constexpr const char* kDefaultAlgo = "auto";
inline constexpr const char* kDefaultFeatureSet = "all";
// Central probability of the interval when none is asked for.
inline constexpr double kDefaultIntervalLevel = 0.8;

// Feature subsets for the ablation. "all" = every schema feature; the others
// are named groups of the schema (see FeatureSetNames / docs/predictor.md).
std::vector<std::string> FeatureSetNames();
// Indices into `names` of the set; error for an unknown set or an empty selection.
Result<std::vector<size_t>> SelectFeatures(const std::vector<std::string>& names, const std::string& set);

// One entry of the seen-workload correction (UtilModel::offsets): a graph,
// keyed by its `params` feature, measured with these job facts (the values of
// the job-attribute features: loader workers, data on the GPU, RL
// environment, loader ms per sample, env steps per update; an unstated one
// counts as its documented default). The correction stands for what the inputs did not explain about
// that job (PointNet's per-sample parsing when no loader time was given), so
// it applies only to a job with the same graph AND the same facts: a job that
// states a fact the measured rows did not (loader_ms_per_sample) is a
// different job and is predicted by the model alone.
struct WorkloadOffset {
  std::vector<std::string> gpus;  // GPU types its rows were measured on: it applies only there ({} = any)
  double params = 0;
  std::vector<double> facts;  // JobFactsIn(schema) order
  double offset = 0;          // log1p(util) added to the prediction
  std::string workload;       // "model/dataset" of the rows it came from ("" = unknown)
  size_t rows = 0;            // training rows it was computed from
};
// Names of the job-attribute features that key a WorkloadOffset, in order.
const std::vector<std::string>& JobFactNames();
// Those of them present in a schema's `names`, in JobFactNames() order.
std::vector<std::string> JobFactsIn(const std::vector<std::string>& names);

// How a job's features relate to the training rows' graphs.
struct SeenMatch {
  const WorkloadOffset* seen = nullptr;        // same graph and facts: the correction applies
  const WorkloadOffset* same_graph = nullptr;  // same graph, other facts (or other GPU): it does not
  bool other_gpu = false;                      // same graph and facts, measured on other GPU types only
};

// What UtilModel::Fit needs beyond features and labels.
struct FitOptions {
  std::vector<double> step_s;  // per row measured step time (s), NaN = unknown; empty = none
  // Per row workload id. With >= 3 workloads the interval is calibrated:
  // split-conformal on the log1p residuals of a leave-one-workload-out pass
  // over the training rows (each workload predicted by a model that never saw
  // it). Empty or calibrate = false: the regressor's own member spread.
  std::vector<int> group;
  bool calibrate = true;
  IntervalMethod interval_method = kDefaultIntervalMethod;
  // Optional: name of each group id (Dataset::groups), recorded in the offsets.
  std::vector<std::string> group_names;
  // Optional, per row: the GPU type it was measured on (Dataset::row_gpu).
  // The model records them: a prediction for another GPU type is widened for
  // its unknown host, and a workload's correction applies only on its GPUs.
  std::vector<std::string> row_gpu;
  // The settings every model of the fit (and of its calibration passes) is made with.
  RegressorOptions regressor;
};

// A regressor plus the columns of the schema it reads, and its calibration.
class UtilModel {
 public:
  // Fits on the rows of x (full schema width, `names`) with utilization labels in percent.
  static Result<UtilModel> Fit(const Matrix& x, const std::vector<double>& util,
                               const std::vector<std::string>& names, const std::vector<size_t>& columns,
                               const std::string& algo, const nlohmann::json& params, uint64_t seed,
                               const FitOptions& options = {});
  // Rows of full schema width. level in (0, 1): central probability of the
  // interval (calibrated models honour it; uncalibrated ones use their own).
  // `gpus`, when given: each row's GPU type ("" = one of the training rows'),
  // which decides whether the host is known and whether a measured
  // workload's correction applies. `risks`, when given, gets each row's.
  Result<std::vector<UtilPrediction>> Predict(const Matrix& x, double level = kDefaultIntervalLevel,
                                              const std::vector<std::string>* gpus = nullptr,
                                              std::vector<RowRisk>* risks = nullptr) const;
  // Each row's RowRisk (zeros for a model without physics).
  // A row on a GPU type without measured rows is widened, beyond the host
  // scenario, by the transfer scores' window at `level` (transfer_calibration).
  Result<std::vector<RowRisk>> Risks(const Matrix& x, const std::vector<std::string>* gpus = nullptr,
                                     double level = kDefaultIntervalLevel) const;
  // GPU types of the training rows that have a utilization (see set_measured_gpus).
  const std::vector<std::string>& measured_gpus() const { return measured_gpus_; }
  // Records which GPU types have utilization rows (possibly none); until it is
  // called (a model file without the list) every GPU counts as measured.
  void set_measured_gpus(std::vector<std::string> g) { measured_gpus_ = std::move(g), gpus_known_ = true; }
  bool GpuMeasured(const std::string& gpu) const;
  // Step-time calibration: sorted scores of log(measured step) - log(predicted)
  // beyond the row's RowRisk (the lowo pass's rows with a measured step time).
  const std::vector<double>& step_calibration() const { return step_calibration_; }
  void set_step_calibration_scores(std::vector<double> scores);
  // How wrong the step time is on a GPU type the model has no rows of: sorted
  // scores of log(measured step) - log(predicted step) beyond the row's step
  // band, of every training row with a measured step time predicted by a model
  // fitted without its GPU type (TransferScores: a leave-one-GPU-out pass over
  // the training rows; empty with fewer than 2 GPU types). A row on an
  // unmeasured GPU gets this error's window on its step (Risks); its
  // utilization gets transfer_util_calibration's, or, without those scores,
  // this window through util = busy / step with the busy time held.
  // Each score's GPU type is kept (transfer_gpus, in the same order; "" for every score of a model
  // file from before them: one group): the window is GroupedWindow over the GPU types, each type's
  // own, not one pooled over rows (TransferStepWindow).
  const std::vector<double>& transfer_calibration() const { return transfer_calibration_; }
  const std::vector<std::string>& transfer_gpus() const { return transfer_gpus_; }
  // `gpus`: each score's GPU type (empty: one group).
  void set_transfer_calibration_scores(std::vector<double> scores, std::vector<std::string> gpus = {});
  // GroupedWindow of the step transfer scores by GPU type at `level` ({0, 0}: none).
  std::pair<double, double> TransferStepWindow(double level) const;
  // How wrong the utilization is on a GPU type the model has no rows of: for
  // every training row with a measured utilization, predicted by a model fitted
  // without its GPU type (the same pass), {that prediction (percent),
  // TransferUtilScore}, sorted by score. With util = busy / (busy + idle),
  // logit(util) = log busy - log idle, so a score is the log error of the busy
  // time minus that of the idle time (the step cancels: rows without a step
  // count; rows with a step but no utilization, Pollux', inform the step scores
  // only). A row on an unmeasured GPU is calibrated by the scores of rows at
  // least as idle as it (predicted utilization <= its own): the idle time of a
  // GPU-bound step (the per-step gap) is other host work than that of a
  // host-bound one (launches, loader), and the padded logit compresses a
  // near-100 % row's error, so a GPU-bound row's error does not stand for an
  // idle-bound row's. With fewer than kMinGroupScores such scores (or none at
  // all, a model file from before them) the busy-held rule: the step window
  // with the busy time held, the whole step error idle time.
  const std::vector<std::pair<double, double>>& transfer_util_calibration() const {
    return transfer_util_calibration_;
  }
  // `gpus`: each score's GPU type (empty: one group); transfer_util_gpus in the sorted order.
  void set_transfer_util_calibration_scores(std::vector<std::pair<double, double>> scores,
                                            std::vector<std::string> gpus = {});
  const std::vector<std::string>& transfer_util_gpus() const { return transfer_util_gpus_; }
  // Each GPU type's sorted scores of transfer_util_calibration that a row predicted at `util`
  // (percent) is calibrated by: those of rows predicted at most `util`, of the types with at least
  // kMinGroupScores of them (none: the busy-held rule). The row's window is their GroupedWindow.
  std::vector<std::vector<double>> TransferUtilGroupsFor(double util) const;
  // Sets transfer_calibration and transfer_util_calibration from TransferScores
  // on these training rows (x: all schema columns, as in Fit). Only a physics model has a risk band to
  // widen: any other keeps none.
  Status CalibrateTransfer(const Matrix& x, const std::vector<double>& util, const std::vector<std::string>& names,
                           const nlohmann::json& params, uint64_t seed, const FitOptions& options);

  const std::string& algo() const { return algo_; }
  const std::vector<size_t>& columns() const { return columns_; }
  const Regressor& regressor() const { return *regressor_; }
  // Sorted scores of the calibration pass (IntervalMethod: residuals divided
  // by Difficulty, or the raw log1p residuals); empty = uncalibrated.
  const std::vector<double>& calibration() const { return calibration_; }
  IntervalMethod interval_method() const { return interval_method_; }
  // From a leave-one-workload-out pass: residuals log1p(measured) -
  // log1p(predicted) and the measured util (percent) of the same rows.
  void set_calibration(const std::vector<double>& residuals, const std::vector<double>& util,
                       IntervalMethod method = kDefaultIntervalMethod, const std::vector<RowRisk>* risks = nullptr);
  // Scores as stored (model file).
  void set_calibration_scores(std::vector<double> scores, IntervalMethod method);
  // The same scores split by whether the row had a risk band (RowRisk::Any):
  // a prediction is calibrated by the scores of rows like it (Mondrian), the
  // pooled ones when that group has fewer than kMinGroupScores.
  const std::vector<double>& plain_calibration() const { return plain_calibration_; }
  const std::vector<double>& band_calibration() const { return band_calibration_; }
  void set_group_calibration_scores(std::vector<double> plain, std::vector<double> band);
  // The sorted scores a row with this risk is calibrated by; for a row with a
  // band, *also the scores whose window is joined to it: the no-band group's
  // (a band never makes the model's own error smaller), else null.
  const std::vector<double>& CalibrationFor(const RowRisk& risk, const std::vector<double>** also = nullptr) const;
  // Seen-workload correction: for each (graph, job facts) of the training
  // rows (WorkloadOffset), the mean in-sample log1p residual of its rows
  // shrunk by n/(n+1) (sum / (n + 1)); added to a prediction with the same
  // graph and facts. Workloads not in the training rows (every lowo test row)
  // get nothing: it only lets measured or observed rows of a workload (or of
  // a GPU) correct that workload.
  const std::vector<WorkloadOffset>& offsets() const { return offsets_; }
  // `names`: the full schema (the params and job-fact columns are found by name).
  Status set_offsets(std::vector<WorkloadOffset> offsets, const std::vector<std::string>& names);
  // Which offset (if any) a row of full schema width matches; `gpu` ("" =
  // any): an offset measured on other GPU types only is `same_graph` with
  // `other_gpu` set, not `seen`.
  SeenMatch Match(const std::vector<double>& row, const std::string& gpu = "") const;
  const std::vector<std::string>& fact_names() const { return fact_names_; }

  // Build from parts (model file loading).
  UtilModel(std::string algo, std::vector<size_t> columns, std::shared_ptr<Regressor> r)
      : algo_(std::move(algo)), columns_(std::move(columns)), regressor_(std::move(r)) {}

 private:
  std::string algo_;
  std::vector<size_t> columns_;
  std::shared_ptr<Regressor> regressor_;  // shared: a UtilModel is cheap to copy, immutable after Fit
  std::vector<double> calibration_;
  std::vector<double> plain_calibration_, band_calibration_;
  std::vector<double> step_calibration_;
  std::vector<double> transfer_calibration_;
  std::vector<std::string> transfer_gpus_;  // each transfer_calibration_ score's GPU type
  std::vector<std::pair<double, double>> transfer_util_calibration_;
  std::vector<std::string> transfer_util_gpus_;  // each transfer_util_calibration_ score's GPU type
  // The same scores grouped by GPU type (the types in name order), each group sorted by score:
  // grouped once by the setters, read by TransferStepWindow and TransferUtilGroupsFor.
  std::vector<std::vector<double>> transfer_step_groups_;
  std::vector<std::vector<std::pair<double, double>>> transfer_util_groups_;
  std::vector<std::string> measured_gpus_;
  bool gpus_known_ = false;  // set_measured_gpus was called
  IntervalMethod interval_method_ = kDefaultIntervalMethod;
  std::vector<WorkloadOffset> offsets_;
  size_t params_column_ = static_cast<size_t>(-1);  // -1: no params feature, no correction
  std::vector<size_t> fact_columns_;                // columns of fact_names_ in the schema
  std::vector<std::string> fact_names_;             // JobFactsIn(schema)
};

// Leave-one-group-out log1p residuals (measured - predicted, row order) of
// `algo` on the rows of x, each group predicted by a model fit (uncalibrated)
// on the other groups. REQUIRES >= 2 groups.
// `predicted`, when set, gets each row's predicted utilization (percent) of the same pass;
// `risks` each row's RowRisk under the fold model (a row whose GPU type no
// other workload has is predicted as on an unmeasured GPU); `step_scores` the
// step-time calibration scores of the rows with a measured step (physics only).
Result<std::vector<double>> GroupedResiduals(const Matrix& x, const std::vector<double>& util,
                                             const std::vector<std::string>& names,
                                             const std::vector<size_t>& columns, const std::string& algo,
                                             const nlohmann::json& params, uint64_t seed,
                                             const FitOptions& options, std::vector<double>* predicted = nullptr,
                                             std::vector<RowRisk>* risks = nullptr,
                                             std::vector<double>* step_scores = nullptr);

// The GPU-transfer scores (UtilModel::transfer_calibration) of `algo` on the
// rows of x: for each GPU type of options.row_gpu whose rows have a measured
// step time or utilization, a model fitted (uncalibrated) on the rows of the
// other GPU types predicts them as on an unmeasured GPU; each step score is
// log(measured step / predicted step) beyond the row's step band
// (RowRisk::step_low/high). `util_scores`, when given, gets the utilization
// scores (UtilModel::transfer_util_calibration) of the rows with a measured
// utilization of the same pass: {predicted utilization, TransferUtilScore against
// the row's band}. Each score once, its GPU type in `step_gpus` / `util_gpus`
// when given (the window is over GPU types: GroupedWindow). Step scores: empty (no error)
// with fewer than 2 GPU types with step times; utilization scores: empty with
// fewer than 2 GPU types or none with utilization. A fold whose fit fails is
// skipped (`skipped` names it).
Result<std::vector<double>> TransferScores(const Matrix& x, const std::vector<double>& util,
                                           const std::vector<std::string>& names, const std::vector<size_t>& columns,
                                           const std::string& algo, const nlohmann::json& params, uint64_t seed,
                                           const FitOptions& options, std::vector<std::string>* skipped = nullptr,
                                           std::vector<std::pair<double, double>>* util_scores = nullptr,
                                           std::vector<std::string>* step_gpus = nullptr,
                                           std::vector<std::string>* util_gpus = nullptr);
// One row's utilization transfer score: UtilLogit(measured) - UtilLogit(predicted)
// beyond the band [UtilLogit(band_low), UtilLogit(band_high)] (utilizations, percent;
// 0 inside it). logit(util) = log busy - log idle: the score is the log error of
// the busy time minus that of the idle time, whichever was wrong.
double TransferUtilScore(double measured, double predicted, double band_low, double band_high);

// The conformal interval offsets (log1p space) of sorted residuals at `level`:
// the floor((n+1)(1-level)/2)-th and ceil((n+1)(1+level)/2)-th order
// statistics, clamped to the sample.
std::pair<double, double> ConformalOffsets(const std::vector<double>& sorted, double level);
// The nested shortest window at `level`, holding k = ceil((n+1) level) scores (clamped to
// [1, n]): the size-k member of one chain of windows [sorted[i], sorted[j]] of 1..n scores,
// each inside the next, so it contains the window of every lower level, for every input. The
// chain passes through the shortest window of m_high = ceil((n+1) 0.8) scores
// (ties: the lowest start) and the shortest of m_low = ceil((n+1) 0.5) scores
// inside that one (both clamped to [1, n]); below m_low it peels, dropping the end whose removal
// shortens it more (ties: the high end); above, it grows by the nearer neighbouring score (ties:
// the low one), inside the m_high window up to m_high scores. The anchor levels are fixed a
// priori: 0.8, the default level (there it is the unconstrained shortest window), and 0.5, the
// lowest level of the width/coverage trade-off table. O(n).
std::pair<double, double> ShortestWindow(const std::vector<double>& sorted, double level);
// The window of scores whose exchangeable units are groups (GPU types), not rows: each group's
// ShortestWindow at `level` [lo_g, hi_g]; with K groups, k = min(K, ceil((K + 1) level)); the
// high end is the k-th smallest hi_g, the low end the k-th largest lo_g. A split-conformal window
// over K groups needs the ceil((K + 1) level)-th of them, more than K when K < level / (1 - level)
// (K < 4 at 0.8): then the widest group's ends. Empty groups are skipped; none: {0, 0}.
std::pair<double, double> GroupedWindow(const std::vector<std::vector<double>>& sorted_groups, double level);
// Calibration scores of a pass's residuals (row order) under `method`.
// With `risks` (normalized and central): each residual beyond the row's
// risk, r + low where r < -low, r - high where r > high, 0 between.
std::vector<double> CalibrationScores(const std::vector<double>& residuals, const std::vector<double>& util,
                                      IntervalMethod method, const std::vector<RowRisk>* risks = nullptr);
// The calibrated interval around a point `util` (percent) from sorted scores
// at `level`: clamped to 0-100, always containing the point.
// With a RowRisk (normalized and central): [point - risk.low + window low x scale,
// point + risk.high + window high x scale] in log1p.
// `also`, when given: a second set of sorted scores whose window is joined to
// the first's (a row with a band gets at least the window of rows without).
UtilPrediction CalibratedInterval(double util, const std::vector<double>& sorted, double level,
                                  IntervalMethod method = kDefaultIntervalMethod, const RowRisk& risk = {},
                                  const std::vector<double>* also = nullptr);
// The step interval (ms) around `step_ms` from sorted step scores and the risk.
std::pair<double, double> StepInterval(double step_ms, const std::vector<double>& sorted, double level,
                                       const RowRisk& risk);

// The error to expect on a workload the model has never seen, from its own
// leave-one-workload-out pass over the training rows (the pass whose
// residuals calibrate the interval; the seen-workload correction never acts
// in it). Stored in the model file at train time; workloads == 0: none
// (an uncalibrated model, or fewer than 3 workloads).
struct LowoAccuracy {
  size_t workloads = 0, rows = 0;
  double rmsle = 0;                    // pooled over the rows
  double median_workload_rmsle = 0;    // SelectionScore
  double mae_points = 0;               // mean |predicted - measured|, points of utilization
  double median_abs_error_points = 0;
  double level = kDefaultIntervalLevel;  // of the two interval figures below
  // Each workload's rows against the interval calibrated on the OTHER
  // workloads' residuals of the same pass (cross-conformal).
  double coverage = 0;
  double median_width_points = 0;
};
// REQUIRES: residuals, util and group of the same size (row order).
LowoAccuracy SummariseLowo(const std::vector<double>& residuals, const std::vector<double>& util,
                           const std::vector<int>& group, double level = kDefaultIntervalLevel,
                           IntervalMethod method = kDefaultIntervalMethod, const std::vector<RowRisk>* risks = nullptr);

// One training row as the model's own leave-one-workload-out pass predicted it
// (the calibration pass: the model's algorithm and feature set, fitted without
// the row's workload, seed `seed * 31 + workload id`), and its GPU memory by the
// memory model fitted on the other workloads' rows (80% interval; NaN without
// memory). Stored in the model file; `simulate --predictor` reuses them (docs/simulator.md).
struct LowoRowPrediction {
  std::string model, dataset, gpu, mig_profile;
  int64_t batch = 0;
  bool amp = false;
  double predicted = 0;  // utilization, percent
  double mem_predicted = std::nan("");  // MiB
  double mem_high = std::nan("");
};

struct PredictorInfo {
  std::string schema_name;
  int schema_version = 0;
  std::vector<std::string> feature_names;  // full schema
  std::string feature_set = "all";
  std::string training_digest;             // "fnv1a64:<hex>" of the training CSV bytes
  std::string training_csv;
  size_t training_rows = 0;
  std::string gpu;                         // default GPU of predictions (the labels' default GPU)
  uint64_t seed = 0;
  std::vector<std::string> targets;        // utilization counters of the training rows (kTarget*)
  // The training rows' JobConfig::power_limited_clock (Dataset::power_limited_clock): Predict
  // computes every job's features with it. Model files without it: false.
  bool power_limited_clock = false;
  // auto: each candidate's leave-one-workload-out RMSLE on the training rows (empty otherwise).
  std::vector<std::pair<std::string, double>> selection;
  LowoAccuracy accuracy;                   // the model's own lowo pass (unseen workloads)
  // That pass's prediction of every training row, in row order (empty: no pass).
  std::vector<LowoRowPrediction> lowo_predictions;
};

struct PredictResult {
  UtilPrediction prediction;     // one rank's counter when job.gpus > 1 (data_parallel below)
  std::vector<double> features;  // full schema, the values used (one rank's)
  MemoryPrediction memory;       // GPU memory of the job (NaN: no memory model)
  // Data-parallel jobs (job.gpus > 1, or nodes / interconnect given): the
  // single-GPU answer the transform started from, the links and the transform's
  // quantities (predict/data_parallel.h). Empty for a single-GPU job.
  std::optional<UtilPrediction> single_gpu;
  std::optional<Interconnect> interconnect;
  std::optional<DataParallelResult> data_parallel;
  std::optional<DataParallelInput> data_parallel_input;  // the single-GPU physics it started from
  MemoryEstimate memory_estimate;  // its physical parts (features/memory.h), MiB
  // The measured workload whose correction applied ("" = none: an unseen job,
  // whose expected error is PredictorInfo::accuracy), and, when the graph is
  // a measured one but the job facts differ, that workload (no correction).
  std::string seen_workload;
  std::string same_graph_workload;
  size_t seen_rows = 0;  // training rows behind the correction
  // Same graph, other facts: "NAME: measured V, this job W" for each fact that differs.
  std::vector<std::string> differing_facts;
  // Same graph and facts, measured on other GPU types only (`measured_on`):
  // the correction is not carried to this GPU (same_graph_workload names it).
  std::vector<std::string> measured_on;
  // Whether the training rows hold a utilization row of this GPU type
  // (measured_gpus: those types; step-only rows do not count). Without, the host is unknown: the interval spans kRiskHostFactor.
  bool gpu_measured = true;
  std::vector<std::string> measured_gpus;
  RowRisk risk;  // of the single-GPU prediction (docs/predictor.md)
  // Nodes computed from a boolean mask's selection costed at its upper bound
  // (NodeCost::selection_bound), and whether the job left its fraction unstated
  // (JobAttrs::selected_fraction): then the interval spans a selection of none
  // to all and a warning says so.
  int64_t selection_bound_nodes = 0;
  bool unknown_selection = false;
  // The job has convolutions on tensor cores and did not state JobAttrs::channels_last: the point
  // is NCHW's (cuDNN's transposes counted), the interval also holds the channels-last job's, and a
  // warning says so.
  bool unknown_channels_last = false;
  // The job's GPU runs TF32 faster than FP32, its FP32 convolutions or matmuls would run there, and
  // it did not state JobAttrs::tf32: the point is PyTorch's default (Tf32For: convolutions on TF32,
  // matmuls FP32), the interval also holds tf32 0 (all FP32) and 1 (matmuls on TF32 too).
  bool unknown_tf32 = false;
  // > 0: the graph's measured workload's fitted input-pipeline time (ms per sample per worker)
  // that the physics used for this job's unstated pipeline (carried to any GPU).
  double carried_loader_ms_per_sample = 0;
  // The prediction is not one to pack on: the GPU type has no measured rows,
  // or the utilization interval is wider than kUnsureWidthPoints. A consumer
  // (the predictive-hybrid policy) reads low/high and this flag; the reasons
  // say why, one sentence each.
  bool unsure = false;
  std::vector<std::string> unsure_reasons;
  // What a user must be told (an unmeasured GPU, an unknown input pipeline),
  // one sentence each; front ends print them (predict: stderr and --json).
  std::vector<std::string> warnings;
};
// An interval wider than this (points of utilization) makes a prediction unsure.
inline constexpr double kUnsureWidthPoints = 50;

// A trained predictor. Thread-safe for concurrent Predict calls.
class Predictor {
 public:
  // Fits `algo` (default parameters; kAutoAlgo: the selection above) on the whole dataset.
  // `on_candidate`, when set, is called with each scored selection candidate and its score.
  // Every model fitted (candidates, calibration passes, the step model) is made with `regressor`.
  static Result<Predictor> Train(const Dataset& data, const std::string& algo, uint64_t seed,
                                 const std::string& feature_set = "all",
                                 const std::function<void(const std::string&, double)>& on_candidate = {},
                                 const RegressorOptions& regressor = {});
  // Reads a model file; a feature schema other than CurrentFeatureSchema() is an error.
  static Result<Predictor> Load(const std::string& path);
  Status Save(const std::string& path) const;

  // Features of the job's graph(s) and configuration -> utilization, and its
  // GPU memory (memory model: EstimateMemory of the same reports and job;
  // NaN without a memory model). The job's gpu / mig_profile select the spec
  // the features, the physics and the memory capacity use. With job.gpus > 1
  // the answer is one rank's of a data-parallel job: the single-GPU prediction
  // transformed by the all-reduce model (predict/data_parallel.h) on the step
  // time of the physics step model (StepModel); the whole job in one call.
  // job.power_limited_clock is ignored: the model's (info().power_limited_clock) applies.
  Result<PredictResult> Predict(const std::vector<CostReport>& reports, const JobConfig& job,
                                double level = kDefaultIntervalLevel) const;
  // `base`, a data-parallel answer of Predict for `reports` (single_gpu,
  // data_parallel_input and interconnect set), on the links `ic` instead (the
  // same GPUs and nodes): what Predict answers for that job with links whose
  // spec gives `ic`, without computing the single-GPU answer again. For
  // callers that hold links as values (evaluate --steps' fitted network rate).
  // `level`: the one `base` was predicted at (its interval is kept; `base`'s width reason, found by
  // its text, is replaced by the new links'). Errors: `base` not data-parallel, `ic` of other GPU or
  // node counts, `base` unsure for a width that `level` does not give.
  Result<PredictResult> PredictOnLinks(const PredictResult& base, const std::vector<CostReport>& reports,
                                       const Interconnect& ic, double level = kDefaultIntervalLevel) const;
  // The fitted physics that gives step and busy time (data-parallel jobs): the
  // model itself when it is `physics`, else a physics model fitted beside it on
  // the same rows by Train (stored as `step_model`); nullptr when neither (a file
  // written before data-parallel support).
  const UtilModel* StepModel() const;
  void set_step_model(UtilModel m) { step_model_ = std::move(m); }
  const std::optional<UtilModel>& step_model() const { return step_model_; }
  // Rows of features in the schema order.
  Result<std::vector<UtilPrediction>> PredictFeatures(const Matrix& x,
                                                      double level = kDefaultIntervalLevel) const {
    return model_.Predict(x, level);
  }
  // Which counter a prediction for this GPU/MIG slice stands for (kTarget*):
  // DCGM GR-engine-active on a MIG slice, nvidia-smi utilization.gpu otherwise.
  static std::string TargetFor(const std::string& mig_profile);

  const PredictorInfo& info() const { return info_; }
  const UtilModel& model() const { return model_; }
  // Ok when info().lowo_predictions are what LeaveOneWorkloadOutPredictions(data,
  // model().algo(), 0) (evaluate.h) computes for `data`: the same feature schema,
  // the same rows (data digest; every row's workload, batch, AMP, GPU and MIG
  // profile, in order), the algorithm's default feature set and seed 0 (fold
  // seeds = workload ids). Otherwise an error saying why, as a clause ("it was
  // trained with --seed 1; the simulator's use seed 0"). `simulate --predictor`
  // reuses the stored predictions only when Ok.
  Status StoredLowoApplies(const Dataset& data) const;
  // The GPU memory model (memory_model.h); nullptr when the training rows had
  // no memory column (then PredictResult::memory is NaN).
  const MemoryModel* memory() const { return memory_ ? &*memory_ : nullptr; }
  void set_memory(std::optional<MemoryModel> m) { memory_ = std::move(m); }

  Predictor(PredictorInfo info, UtilModel model) : info_(std::move(info)), model_(std::move(model)) {}

 private:
  static Result<std::vector<LowoRowPrediction>> LowoRows(const Dataset& data, const std::vector<double>& pred);
  PredictorInfo info_;
  UtilModel model_;
  std::optional<UtilModel> step_model_;  // physics beside a non-physics model (StepModel)
  std::optional<MemoryModel> memory_;
};

}  // namespace gpucast
