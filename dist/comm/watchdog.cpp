// The watchdog's side thread: wakes every poll, times the open activities and runs the checks;
// the first fault goes to the handler (which ends the process), after which the thread stops.
#include "dist/comm/watchdog.h"

#include <algorithm>
#include <cstdio>

namespace nd::dist {

Watchdog::Watchdog(int rank, double timeout_s, FaultHandler on_fault)
    : rank_(rank), timeout_s_(timeout_s > 0 ? timeout_s : 0.0), on_fault_(std::move(on_fault)) {
  double poll_s = timeout_s_ > 0 ? std::clamp(timeout_s_ / 20.0, 0.05, 1.0) : 1.0;
  poll_ = std::chrono::milliseconds(static_cast<int64_t>(poll_s * 1000.0));
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::add_check(std::function<std::string()> check) {
  std::lock_guard<std::mutex> lock(mutex_);
  checks_.push_back(std::move(check));
}

void Watchdog::set_step(int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  step_ = step;
}

Watchdog::Scope Watchdog::watch(std::string what, double extra_s) {
  std::lock_guard<std::mutex> lock(mutex_);
  Activity a;
  a.what = std::move(what);
  a.start = Clock::now();
  a.limit_s = timeout_s_ > 0 ? timeout_s_ + std::max(0.0, extra_s) : 0.0;
  stack_.push_back(std::move(a));
  return Scope(this, static_cast<int>(stack_.size()) - 1);
}

Watchdog::Scope::Scope(Scope&& other) noexcept : dog_(other.dog_), slot_(other.slot_) { other.dog_ = nullptr; }

Watchdog::Scope::~Scope() {
  if (dog_) dog_->end_scope(slot_);
}

void Watchdog::end_scope(int slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (static_cast<int>(stack_.size()) > slot) stack_.resize(static_cast<size_t>(slot));
}

std::string Watchdog::describe_timeout(const Activity& a, double waited_s) const {
  char line[512];
  std::snprintf(line, sizeof(line),
                "rank %d, step %lld: %s has not completed after %.1f s (limit %.0f s, --comm-timeout %.0f); "
                "a peer is stuck or gone, so this rank gives up",
                rank_, static_cast<long long>(step_), a.what.c_str(), waited_s, a.limit_s, timeout_s_);
  return line;
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_ && !fired_) {
    wake_.wait_for(lock, poll_, [this] { return stopping_; });
    if (stopping_) break;
    std::string fault;
    const Clock::time_point now = Clock::now();
    for (const Activity& a : stack_) {
      double waited = std::chrono::duration<double>(now - a.start).count();
      if (a.limit_s > 0 && waited > a.limit_s) {
        fault = describe_timeout(a, waited);
        break;
      }
    }
    // Checks run without the lock: they may take a moment (a communicator query), and the main
    // thread must stay free to open and close scopes meanwhile.
    std::vector<std::function<std::string()>> checks = checks_;
    const std::string waiting_for = stack_.empty() ? std::string("nothing") : stack_.back().what;
    const int64_t step = step_;
    lock.unlock();
    for (size_t i = 0; fault.empty() && i < checks.size(); ++i) {
      std::string problem = checks[i]();
      if (!problem.empty())
        fault = "rank " + std::to_string(rank_) + ", step " + std::to_string(step) + ", while waiting for " +
                waiting_for + ": " + problem;
    }
    lock.lock();
    if (!fault.empty() && !stopping_) {
      fired_ = true;
      lock.unlock();
      on_fault_(fault);  // ends the process
      return;
    }
  }
}

}  // namespace nd::dist
