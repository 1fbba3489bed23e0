// Flag parsing and --help conventions shared by the subcommands.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "util/status.h"

namespace gpucast::cli {

// Parses repeated "NAME=VALUE" flags (VALUE an integer in [1, kMaxJobDim], the
// service's bound on dims: util/job_limits.h) into dims.
// Errors: "--dim 'seq': expected NAME=VALUE with VALUE a positive integer".
Status ParseDimFlags(const std::vector<std::string>& flags, std::map<std::string, int64_t>* dims);

// --attr KEY=VALUE flags (analyze, predict): an error when a KEY is given twice
// ("--attr 'loader_workers=8': key given twice"), as --dim is; the values are checked
// by ParseJobAttr (features/features.h).
Status CheckAttrKeysOnce(const std::vector<std::string>& flags);

// Checks an integer option against [lo, hi] and names the range in --help as
// "INT in [1, 10000]", or "INT >= 1" when hi is the type's maximum (no bound
// worth printing). Returns `opt`.
CLI::Option* IntIn(CLI::Option* opt, int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max());
// Same for a byte count: "BYTES in [1, 4 GiB]".
CLI::Option* BytesIn(CLI::Option* opt, uint64_t lo, uint64_t hi);
// Same for a real number: "FLOAT in [0.01, 0.99]".
CLI::Option* FloatIn(CLI::Option* opt, double lo, double hi);

// --max-seconds S of the commands that analyse a user's graph (analyze,
// predict): each graph's load stops at S (LoadLimits::max_seconds, an error
// naming the flag), and ArmDeadline ends the whole command after S seconds
// with "gpucast CMD: stopped: it took longer than S s (--max-seconds)" and
// exit status 124, so a hostile file cannot hold a caller (a Slurm
// job_submit plugin waits on predict) longer than the caller chose. 0: no limit.
inline constexpr double kDefaultMaxSeconds = 60;
CLI::Option* AddMaxSeconds(CLI::App* sub, double* seconds);

// --gpu-table FILE: a site's own GPUs added to gpucast's table for this run (features/site_gpus.h,
// docs/features.md "A site's GPUs"); every command that reads GPU names has it. The command
// installs it first (InstallSiteGpuTable) and fails naming the file and the row if it is bad.
CLI::Option* AddGpuTable(CLI::App* sub, std::string* path);
void ArmDeadline(const std::string& command, double seconds);

// --power-limited-clock / --no-power-limited-clock of the commands that train a model (train,
// evaluate): whether features count each GPU's compute peaks at the clock its board power
// sustains (JobConfig::power_limited_clock). `*on` holds the default (kDefaultPowerLimitedClock)
// when called; `applies` ends the help text's first sentence: what the setting is applied to.
CLI::Option* AddPowerLimitedClock(CLI::App* sub, bool* on, const std::string& applies);
// --tensor-core-split: the physics model's tensor_core_split (predict/physics.h), an experiment.
CLI::Option* AddTensorCoreSplit(CLI::App* sub, bool* on, const std::string& applies);

// --help of --attr (analyze, predict): every key ParseJobAttr knows (features/features.h;
// tests/cli_test.sh checks the list against its "unknown key (known: ...)" error).
inline constexpr char kJobAttrHelp[] =
    "Job attribute KEY=VALUE (repeatable; all optional; docs/features.md): loader_workers=N (0 = data loaded in "
    "the training process), data_on_gpu=0|1, rl_env=0|1 (CPU-simulated environment in the loop), "
    "loader_ms_per_sample=MS, env_steps_per_update=N, cpu_cores_per_gpu=N, tf32=0|1 (1: FP32 convolutions and "
    "matmuls on TF32 tensor cores, 0: neither; unstated: PyTorch's default, convolutions only), channels_last=0|1 (convolutions on NHWC tensors; default 0: "
    "PyTorch's NCHW), selected_fraction=F (the share a boolean mask selects); GPU memory: optimizer=sgd|sgd_momentum|adam|adamw (default adam), "
    "activation_checkpointing=0|1, trainable_fraction=F, zero_stage=0-3, grad_accumulation=N, "
    "variable_shapes=0|1, cuda_module_loading=lazy|eager";

// "4 GiB", "1 MiB", "1000 B": exact binary units only (for --help).
std::string ByteSize(uint64_t bytes);

// Placeholders --help shows for defaults that depend on where gpucast is
// installed, and the file each stands for once resolved (src/util/paths.h).
// The measured rows `train` and `evaluate` read by default: every shared data set with a measured
// utilization, so that the default model has seen more than one GPU type (Lucid's RTX 3090 rows and
// MIGProfiler's A100 rows; docs/predictor.md, "The default training data").
inline constexpr char kDefaultDataCsvShown[] = "<data>/lucid/single_data.csv <data>/migprofiler-a100/bert_train.csv";
inline constexpr char kDefaultCatalogShown[] = "<home>/models/catalog.json";
std::vector<std::string> DefaultDataCsvs();  // the files of kDefaultDataCsvShown under DataDir()
std::string DefaultCatalog();   // HomeDir() + "/models/catalog.json"
// The footer line that explains the placeholders above.
inline constexpr char kPathsFooter[] =
    "<data> is $GPUCAST_DATA, else share/gpucast/data above the executable (in a build tree a link to "
    "../shared/data beside the checkout); <home> is $GPUCAST_HOME, else share/gpucast.";

}  // namespace gpucast::cli
