// The fault path: one report line, a bounded abort of every watched communicator, _Exit. The exit
// skips destructors and MPI_Finalize on purpose: the main thread may be blocked inside them.
#include "dist/fault_guard.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <thread>

namespace nd::dist {
namespace {

// How long the aborts may take before the process ends regardless.
constexpr double kAbortGraceSeconds = 10.0;

}  // namespace

FaultGuard::FaultGuard(Comm& world, const FaultOptions& options, std::function<void(const std::string&)> report)
    : report_(std::move(report)) {
  comms_.push_back(&world);
  if (options.heartbeat_timeout_s > 0 && world.size() > 1) {
    HeartbeatOptions beat;
    beat.timeout_s = options.heartbeat_timeout_s;
    heartbeat_ = std::make_unique<Heartbeat>(world, beat);
  }
  watchdog_ = std::make_unique<Watchdog>(world.rank(), options.comm_timeout_s,
                                         [this](const std::string& line) { end_process(line); });
  if (heartbeat_) watchdog_->add_check([beat = heartbeat_.get()] { return beat->silent_peer(); });
  watchdog_->add_check([this] {
    std::lock_guard<std::mutex> lock(comms_mutex_);
    for (Comm* c : comms_) {
      std::string error = c->async_error();
      if (!error.empty()) return std::string(c->backend()) + " reported an asynchronous error: " + error;
    }
    return std::string();
  });
}

FaultGuard::~FaultGuard() {
  watchdog_.reset();
  heartbeat_.reset();
}

void FaultGuard::watch_comm(Comm& comm) {
  std::lock_guard<std::mutex> lock(comms_mutex_);
  comms_.push_back(&comm);
}

void FaultGuard::finish() {
  watchdog_.reset();
  if (heartbeat_) heartbeat_->finish();
}

void FaultGuard::end_process(const std::string& line) {
  report_(line);
  std::vector<Comm*> comms;
  {
    std::lock_guard<std::mutex> lock(comms_mutex_);
    comms = comms_;
  }
  // The aborts run on a thread of their own, so one that blocks cannot keep the process alive.
  auto state = std::make_shared<std::pair<std::mutex, std::condition_variable>>();
  auto done = std::make_shared<bool>(false);
  std::thread([comms, state, done] {
    for (Comm* c : comms) c->abort();
    std::lock_guard<std::mutex> lock(state->first);
    *done = true;
    state->second.notify_all();
  }).detach();
  {
    std::unique_lock<std::mutex> lock(state->first);
    state->second.wait_for(lock, std::chrono::duration<double>(kAbortGraceSeconds), [&] { return *done; });
  }
  std::_Exit(kFaultExitStatus);
}

}  // namespace nd::dist
