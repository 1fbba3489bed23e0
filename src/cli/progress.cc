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

Heartbeat::Heartbeat(std::string command, std::string text, bool quiet, double every_s, std::FILE* out) {
  if (quiet) return;
  thread_ = std::thread([this, command = std::move(command), text = std::move(text), every_s, out] {
    const auto start = std::chrono::steady_clock::now();
    const auto every = std::chrono::duration<double>(every_s);
    std::unique_lock<std::mutex> lock(mu_);
    for (int n = 1;; ++n) {
      if (cv_.wait_until(lock, start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(every * n),
                         [this] { return stop_; }))
        return;
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(out, "gpucast %s [%.1f s] %s (%.0f s so far)\n", command.c_str(), s, text.c_str(), s);
      std::fflush(out);
    }
  });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpucast::cli
