// Progress and partial results of long commands (evaluate, simulate, train),
// on stderr as whole lines whether or not stderr is a terminal, so that a
// piped or logged run shows where it is. `--quiet` silences them; stdout (the
// results) is unaffected.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gpucast::cli {

class Progress {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic

  // Lines are "gpucast COMMAND [ELAPSED s] TEXT". Updates come at most once
  // per `min_interval_s`; results always.
  Progress(std::string command, bool quiet, std::FILE* out = stderr, Clock clock = nullptr,
           double min_interval_s = 5.0);

  // A partial result as it finishes (an evaluation row, a policy run): always
  // printed (unless quiet), and flushed.
  void Result(const std::string& text);
  // Where a long step is: printed when at least min_interval_s has passed
  // since the last line of this object (the first update waits that long too).
  void Update(const std::string& text);
  bool quiet() const { return quiet_; }

 private:
  void Print(const std::string& text);

  std::string command_;
  bool quiet_;
  std::FILE* out_;
  Clock clock_;
  double min_interval_s_;
  double start_;
  double last_;
};

// While it lives, a line "gpucast COMMAND [ELAPSED s] TEXT (N s so far)"
// every `every_s` seconds (wall clock) on `out`, from a thread of its own:
// for a long step that has no progress hook of its own (simulate's nested
// leave-one-workload-out fits). Nothing when quiet; the destructor stops the
// thread at once (it does not wait out the interval).
class Heartbeat {
 public:
  Heartbeat(std::string command, std::string text, bool quiet, double every_s = 10.0, std::FILE* out = stderr);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gpucast::cli
