#include "cli/progress.h"

#include <chrono>
#include <utility>

namespace gpucast::cli {

Progress::Progress(std::string command, bool quiet, std::FILE* out, Clock clock, double min_interval_s)
    : command_(std::move(command)), quiet_(quiet), out_(out), clock_(std::move(clock)),
      min_interval_s_(min_interval_s) {
  if (!clock_)
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  start_ = last_ = clock_();
}

void Progress::Print(const std::string& text) {
  double now = clock_();
  last_ = now;
  if (quiet_) return;
  std::fprintf(out_, "gpucast %s [%.1f s] %s\n", command_.c_str(), now - start_, text.c_str());
  std::fflush(out_);
}

void Progress::Result(const std::string& text) { Print(text); }

void Progress::Update(const std::string& text) {
  if (clock_() - last_ >= min_interval_s_) Print(text);
}

}  // namespace gpucast::cli
