// The feature vector: one table of {name, value function} over the summed
// cost reports, the job's attributes and a roofline step estimate.
#include "features/features.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>

#include "cost/job_cost.h"
#include "features/gpu_specs.h"

namespace gpucast {

namespace {

bool IsHalfCategory(Category c) {
  return c == Category::kConvolution || c == Category::kMatmul || c == Category::kRecurrent;
}

// The DRAM bandwidth the roofline divides by: the peak times the share a Volta-like
// efficiency applies to (GpuSpec::mem_bw_delivered, the GPU table's column).
double MemRate(const GpuSpec& gpu) { return gpu.mem_bandwidth * gpu.mem_bw_delivered; }

// Whether an FP32 node of category `c` runs on TF32 tensor cores (Tf32, features.h).
bool OnTf32(const GpuSpec& gpu, Category c, Tf32 tf32) {
  if (gpu.tf32_tensor_flops <= 0 || tf32 == Tf32::kNone) return false;
  if (c == Category::kConvolution || c == Category::kRecurrent) return true;  // cuDNN's
  return c == Category::kMatmul && tf32 == Tf32::kAll;                         // cuBLAS's
}

// The peak FLOP/s of a node of category `c` (EstimateStep's rule, features.h).
double PeakFlops(const GpuSpec& gpu, Category c, bool amp, Tf32 tf32) {
  if (amp && IsHalfCategory(c)) return gpu.fp16_tensor_flops;
  return OnTf32(gpu, c, tf32) ? std::max(gpu.fp32_flops, gpu.tf32_tensor_flops) : gpu.fp32_flops;
}

// Everything the features are computed from.
struct Inputs {
  double flops_by_category[kNumCategories] = {};
  double nodes_by_category[kNumCategories] = {};
  double fwd = 0, bwd = 0, params = 0, act_bytes = 0, weight_bytes = 0;
  double input_bytes_per_sample = 0, nodes = 0, unsupported_nodes = 0;
  double batch = 1, amp = 0;
  JobAttrs attrs;
  StepEstimate step;
};

double Log10p(double x) { return std::log10(1.0 + x); }
double Ms(double s) { return s * 1e3; }
double Cat(const Inputs& in, Category c) { return in.flops_by_category[static_cast<int>(c)]; }
double Nodes(const Inputs& in, Category c) { return in.nodes_by_category[static_cast<int>(c)]; }
double BusyMs(const Inputs& in) { return Ms(in.step.busy_s); }
double LaunchMs(const Inputs& in) { return Ms(in.step.launch_s); }
double Ratio(const Inputs& in) { return (BusyMs(in) + 1e-3) / (LaunchMs(in) + 1e-3); }

struct FeatureDef {
  const char* name;
  double (*value)(const Inputs&);
};

// THE feature table (schema gpucast-features v2). Meanings and units: docs/features.md.
const std::vector<FeatureDef>& FeatureTable() {
  static const std::vector<FeatureDef> table = {
      // The paper's features.
      {"total_flops", [](const Inputs& in) { return in.fwd + in.bwd; }},
      {"params", [](const Inputs& in) { return in.params; }},
      {"n_conv_layers", [](const Inputs& in) { return Nodes(in, Category::kConvolution); }},
      {"n_linear_layers", [](const Inputs& in) { return Nodes(in, Category::kMatmul); }},
      {"n_activation_layers", [](const Inputs& in) { return Nodes(in, Category::kActivation); }},
      {"n_other_layers",
       [](const Inputs& in) {
         return Nodes(in, Category::kRecurrent) + Nodes(in, Category::kNormalization) +
                Nodes(in, Category::kPooling) + Nodes(in, Category::kElementwise) +
                Nodes(in, Category::kEmbedding);
       }},
      {"batch_size", [](const Inputs& in) { return in.batch; }},
      // Graph cost beyond the paper.
      {"forward_flops", [](const Inputs& in) { return in.fwd; }},
      {"backward_flops", [](const Inputs& in) { return in.bwd; }},
      {"flops_convolution", [](const Inputs& in) { return Cat(in, Category::kConvolution); }},
      {"flops_matmul", [](const Inputs& in) { return Cat(in, Category::kMatmul); }},
      {"flops_recurrent", [](const Inputs& in) { return Cat(in, Category::kRecurrent); }},
      {"flops_activation", [](const Inputs& in) { return Cat(in, Category::kActivation); }},
      {"flops_normalization", [](const Inputs& in) { return Cat(in, Category::kNormalization); }},
      {"flops_pooling", [](const Inputs& in) { return Cat(in, Category::kPooling); }},
      {"flops_elementwise", [](const Inputs& in) { return Cat(in, Category::kElementwise); }},
      {"flops_embedding", [](const Inputs& in) { return Cat(in, Category::kEmbedding); }},
      {"activation_bytes", [](const Inputs& in) { return in.act_bytes; }},
      {"weight_bytes", [](const Inputs& in) { return in.weight_bytes; }},
      {"arithmetic_intensity",
       [](const Inputs& in) { return in.step.bytes > 0 ? (in.fwd + in.bwd) / in.step.bytes : 0.0; }},
      {"input_bytes_per_sample", [](const Inputs& in) { return in.input_bytes_per_sample; }},
      {"input_bytes_per_step", [](const Inputs& in) { return in.input_bytes_per_sample * in.batch; }},
      {"node_count", [](const Inputs& in) { return in.nodes; }},
      {"unsupported_nodes", [](const Inputs& in) { return in.unsupported_nodes; }},
      {"amp", [](const Inputs& in) { return in.amp; }},
      // Job attributes, each with an is-known indicator (defaults in features.h).
      {"loader_workers",
       [](const Inputs& in) { return static_cast<double>(EffectiveLoaderWorkers(in.attrs)); }},
      {"loader_workers_known", [](const Inputs& in) { return in.attrs.loader_workers ? 1.0 : 0.0; }},
      {"data_on_gpu",
       [](const Inputs& in) { return in.attrs.data_on_gpu.value_or(kDefaultDataOnGpu) ? 1.0 : 0.0; }},
      {"data_on_gpu_known", [](const Inputs& in) { return in.attrs.data_on_gpu ? 1.0 : 0.0; }},
      {"rl_env", [](const Inputs& in) { return in.attrs.rl_env.value_or(kDefaultRlEnv) ? 1.0 : 0.0; }},
      {"rl_env_known", [](const Inputs& in) { return in.attrs.rl_env ? 1.0 : 0.0; }},
      // Optional causes the graph cannot see: 0 and known = 0 when not given.
      {"loader_ms_per_sample", [](const Inputs& in) { return in.attrs.loader_ms_per_sample.value_or(0.0); }},
      {"loader_ms_per_sample_known", [](const Inputs& in) { return in.attrs.loader_ms_per_sample ? 1.0 : 0.0; }},
      {"env_steps_per_update",
       [](const Inputs& in) { return static_cast<double>(in.attrs.env_steps_per_update.value_or(0)); }},
      {"env_steps_per_update_known", [](const Inputs& in) { return in.attrs.env_steps_per_update ? 1.0 : 0.0; }},
      // Physically grounded: roofline busy time vs host launch time per step.
      {"kernel_count", [](const Inputs& in) { return static_cast<double>(in.step.kernels); }},
      {"est_gpu_busy_ms", BusyMs},
      {"est_launch_ms", LaunchMs},
      {"est_compute_ms", [](const Inputs& in) { return Ms(in.step.compute_s); }},
      {"est_memory_ms", [](const Inputs& in) { return Ms(in.step.memory_s); }},
      {"est_busy_launch_ratio", Ratio},
      {"est_util_launch_bound",
       [](const Inputs& in) {
         double busy = in.step.busy_s, launch = in.step.launch_s;
         return busy > 0 ? 100.0 * busy / std::max(busy, launch) : 0.0;
       }},
      // Log-scaled versions of the features that span orders of magnitude.
      {"log10_total_flops", [](const Inputs& in) { return Log10p(in.fwd + in.bwd); }},
      {"log10_params", [](const Inputs& in) { return Log10p(in.params); }},
      {"log10_activation_bytes", [](const Inputs& in) { return Log10p(in.act_bytes); }},
      {"log10_est_gpu_busy_ms", [](const Inputs& in) { return std::log10(BusyMs(in) + 1e-3); }},
      {"log10_est_launch_ms", [](const Inputs& in) { return std::log10(LaunchMs(in) + 1e-3); }},
      {"log10_est_busy_launch_ratio", [](const Inputs& in) { return std::log10(Ratio(in)); }},
  };
  return table;
}

Status AttrError(const std::string& key, const std::string& why) {
  return Status::Error("job attribute '" + key + "': " + why);
}

}  // namespace

Status ParseJobAttr(const std::string& key_value, JobAttrs* attrs) {
  size_t eq = key_value.find('=');
  if (eq == std::string::npos) return AttrError(key_value, "want KEY=VALUE");
  std::string key = key_value.substr(0, eq), value = key_value.substr(eq + 1);
  auto parse_bool = [&](std::optional<bool>* out) {
    if (value != "0" && value != "1") return AttrError(key, "value '" + value + "' is not 0 or 1");
    *out = value == "1";
    return Status::Ok();
  };
  if (key == "loader_workers") {
    bool digits = !value.empty() && value.size() <= 6 &&
                  std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) return AttrError(key, "value '" + value + "' is not a non-negative integer");
    attrs->loader_workers = std::stoll(value);
    return Status::Ok();
  }
  if (key == "cpu_cores_per_gpu") {
    bool digits = !value.empty() && value.size() <= 6 &&
                  std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoll(value) < 1) return AttrError(key, "value '" + value + "' is not an integer >= 1");
    attrs->cpu_cores_per_gpu = std::stoll(value);
    return Status::Ok();
  }
  if (key == "data_on_gpu") return parse_bool(&attrs->data_on_gpu);
  if (key == "tf32") return parse_bool(&attrs->tf32);
  if (key == "channels_last") return parse_bool(&attrs->channels_last);
  if (key == "rl_env") return parse_bool(&attrs->rl_env);
  if (key == "loader_ms_per_sample") {
    const std::optional<double> ms = ParsePlainNumber(value);
    if (!ms) return AttrError(key, "value '" + value + "' is not a number (milliseconds per sample)");
    if (!std::isfinite(*ms) || *ms <= 0 || *ms > kMaxLoaderMsPerSample)
      return AttrError(key, "value '" + value + "' is out of range (want > 0 and <= 1e6 ms per sample)");
    attrs->loader_ms_per_sample = *ms;
    return Status::Ok();
  }
  if (key == "selected_fraction") {
    const std::optional<double> f = ParsePlainNumber(value);
    if (!f) return AttrError(key, "value '" + value + "' is not a number (the fraction of elements a mask selects)");
    if (!(*f > 0 && *f <= 1)) return AttrError(key, "value '" + value + "' is out of range (want > 0 and <= 1)");
    attrs->selected_fraction = *f;
    return Status::Ok();
  }
  if (key == "env_steps_per_update") {
    bool digits = !value.empty() && value.size() <= 9 &&
                  std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoll(value) < 1) return AttrError(key, "value '" + value + "' is not an integer >= 1");
    attrs->env_steps_per_update = std::stoll(value);
    return Status::Ok();
  }
  if (key == "optimizer") {
    std::string v;
    for (char c : value) v += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (v == "sgd") attrs->optimizer = Optimizer::kSgd;
    else if (v == "sgd_momentum") attrs->optimizer = Optimizer::kSgdMomentum;
    else if (v == "adam") attrs->optimizer = Optimizer::kAdam;
    else if (v == "adamw") attrs->optimizer = Optimizer::kAdamW;
    else return AttrError(key, "value '" + value + "' is not one of sgd, sgd_momentum, adam, adamw");
    return Status::Ok();
  }
  if (Status st; ParseMemoryFact(key, value, &attrs->memory, &st)) return st;
  return AttrError(key,
                   std::string("unknown key (known: loader_workers, data_on_gpu, rl_env, loader_ms_per_sample, "
                               "env_steps_per_update, optimizer, cpu_cores_per_gpu, tf32, channels_last, selected_fraction, ") +
                       MemoryFactKeys() + ")");
}

int64_t EffectiveLoaderWorkers(const JobAttrs& a) {
  const int64_t w = a.loader_workers.value_or(kDefaultLoaderWorkers);
  if (w <= 0 || !a.cpu_cores_per_gpu) return w;
  // The training process keeps one core; the workers share the rest (at least one).
  return std::min<int64_t>(w, std::max<int64_t>(1, *a.cpu_cores_per_gpu - 1));
}

const FeatureSchema& CurrentFeatureSchema() {
  static const FeatureSchema schema = [] {
    FeatureSchema s{"gpucast-features", 2, {}};
    for (const FeatureDef& f : FeatureTable()) s.names.push_back(f.name);
    return s;
  }();
  return schema;
}

Tf32 Tf32For(const std::optional<bool>& tf32, const GpuSpec& gpu) {
  if (tf32) return *tf32 ? Tf32::kAll : Tf32::kNone;
  return gpu.tf32_tensor_flops > gpu.fp32_flops ? Tf32::kCudnn : Tf32::kNone;
}

StepEstimate EstimateStep(const std::vector<CostReport>& reports, const GpuSpec& gpu, bool amp, Tf32 tf32,
                          bool power_limited_clock, bool channels_last) {
  StepEstimate e;
  const double mem_rate = MemRate(gpu);
  // The peaks are at the boost clock; within its board power a GPU sustains a fraction of it
  // (SustainedComputeFraction, gpu_specs.h: 1 for every GPU with the power to hold it). Counted
  // only when asked (JobConfig::power_limited_clock: the model's setting).
  const double clock = power_limited_clock ? SustainedComputeFraction(gpu) : 1.0;
  auto roofline = [&](double flops, double bytes, double peak) {
    e.bytes += bytes;
    double c = flops / (peak * clock), m = bytes / mem_rate;
    (c >= m ? e.compute_s : e.memory_s) += std::max(c, m);
    return std::max(c, m);
  };
  // A report is one network's share of the step (StepReport, src/cost/job_cost.h): node
  // FLOPs and bytes are per step already; kernels launch once per pass (fractional passes
  // are averages over steps) and the weight update runs `updates` times per step.
  // A fused op the export decomposed (NodeCost::fused_op): PyTorch runs it as one kernel
  // reading its input and writing its result (native_layer_norm, gelu, silu, group_norm), and
  // its backward as one (two with affine weights: the weights' gradients), so its nodes' FLOPs
  // are summed and it moves fused_io_bytes, not each node's traffic.
  // Its weight update (gamma and beta on their Mul and Add nodes) is one kernel per update, as
  // the fused op's node (LayerNormalization, GroupNormalization) is: an export at opset 14 and
  // one at 17 launch alike.
  struct Fused {
    double fwd = 0, bwd = 0, io = 0;
    bool params = false, first_seen = false, update_counted = false;
  };
  double kernels = 0;
  for (const CostReport& r : reports) {
    std::map<int64_t, Fused> fused;
    for (const NodeCost& n : r.nodes) {
      if (n.fused_op <= 0) continue;
      Fused& f = fused[n.fused_op];
      f.fwd += static_cast<double>(n.forward_flops);
      f.bwd += static_cast<double>(n.backward_flops);
      f.io += static_cast<double>(n.fused_io_bytes);
      f.params = f.params || n.params > 0;
    }
    for (auto it = fused.begin(); it != fused.end();)  // no traffic known: its nodes one by one
      it = it->second.io > 0 ? std::next(it) : fused.erase(it);
    for (const NodeCost& n : r.nodes) {
      if (auto f = n.fused_op > 0 ? fused.find(n.fused_op) : fused.end(); f != fused.end()) {
        if (!f->second.first_seen) {
          f->second.first_seen = true;
          const double pass_io = r.forward_passes > 0 ? f->second.io / r.forward_passes : 0;
          e.busy_s += roofline(f->second.fwd, f->second.io, gpu.fp32_flops);
          kernels += r.forward_passes;
          if (f->second.bwd > 0) {
            e.busy_s += roofline(f->second.bwd, 2 * pass_io * r.backward_passes, gpu.fp32_flops);
            kernels += (f->second.params ? 2 : 1) * r.backward_passes;
          }
        }
        if (n.params > 0 && r.updates > 0) {
          e.busy_s += roofline(0, kOptimizerBytesPerParam * n.params * r.updates, gpu.fp32_flops);
          if (!f->second.update_counted) kernels += r.updates;
          f->second.update_counted = true;
        }
        continue;
      }
      double peak = PeakFlops(gpu, n.category, amp, tf32);
      // The forward reads its inputs, writes its outputs and reads its weight, of a lookup only the
      // rows it looks up (at most the table); the backward's traffic is counted from the whole
      // weight (a dense embedding gradient is table-sized).
      const double weight_read = n.lookup_bytes > 0 ? std::min(static_cast<double>(n.lookup_bytes),
                                                               static_cast<double>(n.weight_bytes))
                                                    : static_cast<double>(n.weight_bytes);
      const double fwd_bytes = static_cast<double>(n.input_bytes) + n.activation_bytes + n.weight_bytes;
      const double fwd_read = static_cast<double>(n.input_bytes) + n.activation_bytes + weight_read;
      bool launches = n.forward_flops > 0 || n.activation_bytes > 0;
      if (launches) {
        e.busy_s += roofline(n.forward_flops, fwd_read, peak);
        kernels += r.forward_passes;
      }
      // cuDNN runs tensor-core convolutions in NHWC: a convolution of PyTorch's default NCHW
      // tensors on tensor cores (fp16 under AMP, TF32) transposes its input before and its output
      // after (a read and a write of each, one kernel each), in forward and again in backward (the
      // output's gradient in, the input's gradient out). Pascal has no tensor cores.
      if (n.category == Category::kConvolution && !channels_last && gpu.architecture != "Pascal" &&
          (amp || OnTf32(gpu, n.category, tf32))) {
        const double moved = 2.0 * (static_cast<double>(n.input_bytes) + n.activation_bytes);
        e.busy_s += roofline(0, moved, peak);
        kernels += 2 * r.forward_passes;
        if (n.backward_flops > 0 && r.forward_passes > 0) {
          e.busy_s += roofline(0, moved / r.forward_passes * r.backward_passes, peak);
          kernels += 2 * r.backward_passes;
        }
      }
      // A lookup in a table with sparse gradients (NodeCost::sparse_grad_params): its backward
      // writes the looked-up rows (sparse_grad_bytes, per step), not a table-sized gradient, and
      // the optimizer steps those rows (about sparse_grad_bytes / 4 elements), not the table.
      const double sparse_table_bytes = 4.0 * static_cast<double>(n.sparse_grad_params) * r.forward_passes;
      const double sparse_grad = static_cast<double>(n.sparse_grad_bytes);
      if (n.backward_flops > 0) {
        // Reads the output grad and saved inputs/weights, writes input/weight grads.
        const double bwd_pass_bytes =
            r.forward_passes > 0 ? std::max(0.0, fwd_bytes - sparse_table_bytes) / r.forward_passes : 0;
        e.busy_s += roofline(n.backward_flops, 2 * bwd_pass_bytes * r.backward_passes + sparse_grad, peak);
        kernels += (n.params > 0 ? 2 : 1) * r.backward_passes;
      }
      if (n.params > 0 && r.updates > 0) {
        const double stepped =
            kOptimizerBytesPerParam * (static_cast<double>(n.params - n.sparse_grad_params) * r.updates + sparse_grad / 4);
        e.busy_s += roofline(0, stepped, gpu.fp32_flops);
        kernels += r.updates;
      }
    }
  }
  e.kernels = std::llround(kernels);
  e.launch_s = kernels * kHostSecondsPerKernel;
  return e;
}

Result<const std::vector<CostReport>*> SelectedReports(const std::vector<CostReport>& reports, const JobAttrs& attrs,
                                                       std::vector<CostReport>* storage) {
  const bool any = std::any_of(reports.begin(), reports.end(),
                               [](const CostReport& r) { return r.SelectionBoundNodes() > 0; });
  if (!attrs.selected_fraction || !any) return &reports;
  storage->clear();
  for (const CostReport& r : reports) {
    ASSIGN_OR_RETURN(CostReport s, SelectionShare(r, *attrs.selected_fraction));
    storage->push_back(std::move(s));
  }
  return storage;
}

Result<std::vector<double>> ComputeFeatures(const std::vector<CostReport>& given, const JobConfig& job) {
  if (given.empty()) return Status::Error("features: no cost reports given");
  std::vector<CostReport> selected;
  ASSIGN_OR_RETURN(const std::vector<CostReport>* use, SelectedReports(given, job.attrs, &selected));
  const std::vector<CostReport>& reports = *use;
  if (job.batch < 1) return Status::Error("features: batch " + std::to_string(job.batch) + " < 1");
  // The effective spec of the GPU, or of its MIG slice (peaks and bandwidth scaled).
  Result<GpuSpec> gpu = ResolveGpu(job.gpu, job.mig_profile);
  if (!gpu.ok()) return Status::Error("features: " + gpu.message());
  Inputs in;
  in.batch = static_cast<double>(job.batch);
  in.amp = job.amp ? 1 : 0;
  in.attrs = job.attrs;
  for (const CostReport& r : reports) {
    const CostTotals& t = r.totals;
    for (int i = 0; i < kNumCategories; ++i) {
      in.flops_by_category[i] += static_cast<double>(t.flops_by_category[i]);
      in.nodes_by_category[i] += static_cast<double>(t.nodes_by_category[i]);
    }
    in.fwd += static_cast<double>(t.forward_flops);
    in.bwd += static_cast<double>(t.backward_flops);
    in.params += static_cast<double>(t.params);
    in.act_bytes += static_cast<double>(t.activation_bytes);
    in.weight_bytes += static_cast<double>(t.weight_bytes);
    in.input_bytes_per_sample += static_cast<double>(t.input_bytes_per_sample);
    in.nodes += static_cast<double>(t.num_nodes);
    for (const Unsupported& u : r.unsupported) in.unsupported_nodes += static_cast<double>(u.count);
  }
  in.step = EstimateStep(reports, *gpu, job.amp, Tf32For(job.attrs.tf32, *gpu), job.power_limited_clock,
                         job.attrs.channels_last.value_or(false));
  std::vector<double> values;
  for (const FeatureDef& f : FeatureTable()) values.push_back(f.value(in));
  return values;
}

}  // namespace gpucast
