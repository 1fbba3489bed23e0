#include "cli/flags.h"

#include <cstdlib>

#include <unistd.h>

#include <charconv>
#include <set>
#include <chrono>
#include <cstdio>
#include <thread>

#include "util/job_limits.h"
#include "util/paths.h"

namespace gpucast::cli {

Status ParseDimFlags(const std::vector<std::string>& flags, std::map<std::string, int64_t>* dims) {
  for (const std::string& kv : flags) {
    size_t eq = kv.find('=');
    int64_t value = 0;
    const char* begin = kv.data() + (eq == std::string::npos ? 0 : eq + 1);
    const char* end = kv.data() + kv.size();
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (eq == std::string::npos || eq == 0 || ec != std::errc() || ptr != end || value < 1)
      return Status::Error("--dim '" + kv +
                           "': expected NAME=VALUE with VALUE a positive integer");
    if (value > kMaxJobDim)
      return Status::Error("--dim '" + kv + "': VALUE must be at most " + std::to_string(kMaxJobDim) +
                           " (the service's limit on dims)");
    if (!dims->emplace(kv.substr(0, eq), value).second)
      return Status::Error("--dim '" + kv + "': dimension given twice");
  }
  return Status::Ok();
}

Status CheckAttrKeysOnce(const std::vector<std::string>& flags) {
  std::set<std::string> seen;
  for (const std::string& kv : flags)
    if (!seen.insert(kv.substr(0, kv.find('='))).second)
      return Status::Error("--attr '" + kv + "': key given twice");
  return Status::Ok();
}

namespace {

std::string Real(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string ByteSize(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && bytes % 1024 == 0 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + kUnits[u];
}

CLI::Option* IntIn(CLI::Option* opt, int64_t lo, int64_t hi) {
  // The Range's own description ("INT in [1 - 4611686018427387904]") is
  // replaced by the type name set here.
  opt->check(CLI::Range(lo, hi).description(""));
  if (hi == std::numeric_limits<int64_t>::max())
    opt->type_name("INT >= " + std::to_string(lo));
  else
    opt->type_name("INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return opt;
}

CLI::Option* BytesIn(CLI::Option* opt, uint64_t lo, uint64_t hi) {
  opt->check(CLI::Range(lo, hi).description(""));
  opt->type_name("BYTES in [" + ByteSize(lo) + ", " + ByteSize(hi) + "]");
  return opt;
}

CLI::Option* FloatIn(CLI::Option* opt, double lo, double hi) {
  // CLI::Range tests `v < lo || v > hi`, which NaN passes (--max-seconds nan
  // ran and stopped "after nan s"); this test fails it.
  opt->check(CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !(v >= lo && v <= hi))
          return "Value " + text + " not in range " + Real(lo) + " to " + Real(hi);
        return "";
      },
      ""));
  opt->type_name("FLOAT in [" + Real(lo) + ", " + Real(hi) + "]");
  return opt;
}

CLI::Option* AddMaxSeconds(CLI::App* sub, double* seconds) {
  return FloatIn(sub->add_option("--max-seconds", *seconds,
                                 "stop with an error (exit status 124) after this many seconds: the graphs' "
                                 "loads stop at it, the command ends at it (0: no limit)")
                     ->capture_default_str(),
                 0, 86400);
}

CLI::Option* AddGpuTable(CLI::App* sub, std::string* path) {
  return sub->add_option("--gpu-table", *path,
                         "JSON file of a site's GPUs that gpucast's table lacks (name, architecture, FP32 and FP16 "
                         "tensor TFLOPS, memory GB, bandwidth GB/s, SMs, source; docs/features.md \"A site's GPUs\"): "
                         "they are then GPU names like any other, predicted as GPUs without measured rows");
}

CLI::Option* AddPowerLimitedClock(CLI::App* sub, bool* on, const std::string& applies) {
  // Two flags, not one "--power-limited-clock,!--no-power-limited-clock": CLI11 prints a negated
  // name with its value, "--power-limited-clock,--no-power-limited-clock{false}", in --help. Each
  // sets *on as it is parsed (trigger_on_parse), so the last one given wins, as with one flag.
  const std::string dflt = *on ? "on" : "off";
  CLI::Option* yes = sub->add_flag_callback(
      "--power-limited-clock", [on] { *on = true; },
      "Count each GPU's compute peaks at the clock its board power sustains (a fraction of the "
      "boost clock fitted on Zeus' power-capped runs; the T4 0.70, the RTX 3090 and SXM A100s 1) "
      "instead of the datasheet's boost-clock peaks, " + applies + " (default: " + dflt +
          "; docs/predictor.md, the power-limited clock)");
  sub->add_flag_callback("--no-power-limited-clock", [on] { *on = false; },
                         "Count each GPU's compute peaks at the datasheet's boost clock: the opposite of "
                         "--power-limited-clock (" + dflt + " by default)")
      ->trigger_on_parse();
  yes->trigger_on_parse();
  return yes;
}

CLI::Option* AddTensorCoreSplit(CLI::App* sub, bool* on, const std::string& applies) {
  return sub->add_flag("--tensor-core-split", *on,
                       "physics: divide a mixed-precision (amp) row's compute time by its own fitted efficiency "
                       "(tensor cores) instead of the one of FP32 work, " + applies +
                           " (an experiment, off by default; docs/predictor.md, where the step error comes from)");
}

void ArmDeadline(const std::string& command, double seconds) {
  if (seconds <= 0) return;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", seconds);
  // Built now: the thread only sleeps, writes and exits (no allocation at the deadline).
  std::string message = "gpucast " + command + ": stopped: it took longer than " + secs + " s (--max-seconds)\n";
  std::thread([message, seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    ssize_t ignored = ::write(2, message.data(), message.size());
    (void)ignored;
    _exit(124);
  }).detach();
}

std::vector<std::string> DefaultDataCsvs() {
  return {DataDir() + "/lucid/single_data.csv", DataDir() + "/migprofiler-a100/bert_train.csv"};
}
std::string DefaultCatalog() { return HomeDir() + "/models/catalog.json"; }

}  // namespace gpucast::cli
