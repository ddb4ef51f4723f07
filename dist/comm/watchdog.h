// Watchdog: a side thread that watches what the main thread is waiting for (a training step, an
// eval, a barrier, a broadcast) and gives up when it has not completed within its limit, or when
// a registered check (an asynchronous communicator error) reports a fault. Giving up calls the
// fault handler once, from the side thread, while the main thread may still be blocked inside a
// collective; the handler ends the process (dist/parallel/fault_guard.h), so it never returns.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nd::dist {

// Called once with a description of the fault (rank, step, what was waited for and how long).
using FaultHandler = std::function<void(const std::string& what_happened)>;

class Watchdog {
 public:
  // timeout_s: how long one watched activity may take (0 = activities are not timed; checks still
  // run). The side thread looks every timeout/20, at most every 50 ms and at least every second.
  Watchdog(int rank, double timeout_s, FaultHandler on_fault);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Adds a check run by the side thread on every poll; a non-empty answer is a fault. Checks are
  // called from the side thread only, so they must be safe to call while the main thread is
  // inside the communicator (e.g. ncclCommGetAsyncError).
  void add_check(std::function<std::string()> check);

  // The step the run is at, named in the fault line.
  void set_step(int64_t step);

  // Watches `what` until the scope ends: past timeout_s + extra_s it is a fault. Scopes nest
  // (a checkpoint inside a step); each is timed on its own, and they end in reverse order.
  class Scope {
   public:
    Scope(Scope&& other) noexcept;
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;

   private:
    friend class Watchdog;
    Scope(Watchdog* dog, int slot) : dog_(dog), slot_(slot) {}
    Watchdog* dog_;
    int slot_;
  };
  Scope watch(std::string what, double extra_s = 0.0);

  double timeout_s() const { return timeout_s_; }
  int rank() const { return rank_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Activity {
    std::string what;
    Clock::time_point start;
    double limit_s = 0.0;  // <= 0: not timed
  };

  void run();
  void end_scope(int slot);
  std::string describe_timeout(const Activity& a, double waited_s) const;

  const int rank_;
  const double timeout_s_;
  const FaultHandler on_fault_;
  std::chrono::milliseconds poll_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool fired_ = false;
  int64_t step_ = 0;
  std::vector<Activity> stack_;  // the innermost activity is watched
  std::vector<std::function<std::string()>> checks_;
  std::thread thread_;
};

}  // namespace nd::dist
