#include "service/reload.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>

namespace gpucast::service {

Result<std::unique_ptr<ReloadingEngine>> ReloadingEngine::Create(const std::string& file, Loader load) {
  ASSIGN_OR_RETURN(std::unique_ptr<PredictionEngine> first, load(file));
  return std::unique_ptr<ReloadingEngine>(
      new ReloadingEngine(file, std::move(load), std::shared_ptr<PredictionEngine>(std::move(first))));
}

std::shared_ptr<PredictionEngine> ReloadingEngine::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

Result<Prediction> ReloadingEngine::Predict(const JobSpec& spec, const std::vector<int>& model_fds, PredictInfo* info) {
  return Current()->Predict(spec, model_fds, info);
}

std::string ReloadingEngine::Describe() const { return Current()->Describe(); }

Status ReloadingEngine::Reload() {
  std::lock_guard<std::mutex> one(reload_mu_);
  // Everything that can fail happens before the swap: Load parses the whole
  // file and checks its feature schema (predict/model_file.cc).
  Result<std::unique_ptr<PredictionEngine>> fresh = load_(file_);
  if (!fresh.ok()) return fresh.status();
  std::shared_ptr<PredictionEngine> next(std::move(fresh).value());
  std::shared_ptr<PredictionEngine> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = std::move(current_);
    current_ = std::move(next);
  }
  return Status::Ok();  // `old` is destroyed here or by the last request using it
}

Result<std::unique_ptr<PredictionEngine>> NewReloadingPredictorEngine(const std::string& predictor_file,
                                                                      std::shared_ptr<GraphAnalyzer> analyzer) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReloadingEngine> e,
                   ReloadingEngine::Create(predictor_file, [analyzer](const std::string& f) {
                     return NewPredictorEngine(f, analyzer);
                   }));
  return std::unique_ptr<PredictionEngine>(std::move(e));
}

namespace {
sigset_t HupSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  return set;
}
}  // namespace

void BlockReloadSignal() {
  sigset_t set = HupSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

struct ReloadOnSignal::State {
  std::atomic<bool> stop{false};
  std::function<void()> on_hup;
  std::mutex mu;
  std::condition_variable cv;
  bool exited = false;  // GUARDED_BY(mu)
};

ReloadOnSignal::ReloadOnSignal(std::function<void()> on_hup, double stop_wait_s)
    : state_(std::make_shared<State>()), stop_wait_s_(stop_wait_s) {
  state_->on_hup = std::move(on_hup);
  thread_ = std::thread([st = state_] {
    sigset_t set = HupSet();
    while (true) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (st->stop) break;
      st->on_hup();
    }
    std::lock_guard<std::mutex> lock(st->mu);
    st->exited = true;
    st->cv.notify_all();
  });
}

ReloadOnSignal::~ReloadOnSignal() {
  state_->stop = true;
  pthread_kill(thread_.native_handle(), SIGHUP);  // wakes sigwait (SIGHUP is blocked, so it is queued)
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->cv.wait_for(lock, std::chrono::duration<double>(stop_wait_s_), [this] { return state_->exited; })) {
    lock.unlock();
    thread_.join();
    return;
  }
  lock.unlock();
  std::fprintf(stderr, "gpucast serve: a reload is still under way after %g s (a file that does not answer?); "
                       "stopping without it\n", stop_wait_s_);
  thread_.detach();
}

}  // namespace gpucast::service
