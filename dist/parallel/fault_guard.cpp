// The fault path: one report line, a bounded abort of every watched communicator, _Exit. The exit
// skips destructors and MPI_Finalize on purpose: the main thread may be blocked inside them.
#include "dist/parallel/fault_guard.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <thread>
#include <utility>

#include "dist/parallel/parallel_grid.h"

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

CommWatch FaultGuard::watch_comms(std::vector<Comm*> comms) {
  std::lock_guard<std::mutex> lock(comms_mutex_);
  comms_.insert(comms_.end(), comms.begin(), comms.end());
  return CommWatch(this, std::move(comms));
}

CommWatch FaultGuard::watch_grid(const ParallelGrid& grid) {
  using A = Axis;
  std::vector<Comm*> comms = {&grid.group({A::Tp}),        &grid.group({A::Dp}),        &grid.group({A::Pp}),
                              &grid.group({A::Tp, A::Dp}), &grid.group({A::Tp, A::Pp}), &grid.group({A::Dp, A::Pp}),
                              &grid.group({A::Tp, A::Dp, A::Pp}), &grid.embedding()};
  // Groups with the same members are one comm, and the world is watched already.
  std::sort(comms.begin(), comms.end());
  comms.erase(std::unique(comms.begin(), comms.end()), comms.end());
  comms.erase(std::remove(comms.begin(), comms.end(), &grid.world()), comms.end());
  return watch_comms(std::move(comms));
}

void FaultGuard::unwatch(const std::vector<Comm*>& comms) {
  std::unique_lock<std::mutex> lock(comms_mutex_);
  // The fault path is aborting these comms and ends the process within kAbortGraceSeconds: their
  // owner must not destroy them under the abort, so this thread waits for the end.
  if (ending_) {
    lock.unlock();
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  for (Comm* c : comms) {
    auto at = std::find(comms_.begin(), comms_.end(), c);
    if (at != comms_.end()) comms_.erase(at);
  }
}

CommWatch::CommWatch(CommWatch&& other) noexcept
    : guard_(std::exchange(other.guard_, nullptr)), comms_(std::move(other.comms_)) {}

CommWatch& CommWatch::operator=(CommWatch&& other) noexcept {
  if (this != &other) {
    release();
    guard_ = std::exchange(other.guard_, nullptr);
    comms_ = std::move(other.comms_);
  }
  return *this;
}

CommWatch::~CommWatch() { release(); }

void CommWatch::release() {
  if (guard_ != nullptr) guard_->unwatch(comms_);
  guard_ = nullptr;
  comms_.clear();
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
    ending_ = true;
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
