// FaultGuard: what a multi-rank command runs beside its work so that a frozen, killed or erroring
// peer ends the job instead of hanging it. It owns the watchdog (steps and collectives past
// --comm-timeout, asynchronous communicator errors) and the heartbeat (a peer silent past
// --heartbeat-timeout). On the first fault it reports one line, aborts the watched communicators
// (bounded: a stuck abort cannot keep the process alive) and ends the process with status 1;
// under mpirun the launcher then ends the other ranks.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dist/comm/comm.h"
#include "dist/comm/heartbeat.h"
#include "dist/comm/watchdog.h"

namespace nd::dist {

struct FaultOptions {
  double comm_timeout_s = 600.0;      // 0 = steps and collectives are not timed
  double heartbeat_timeout_s = 15.0;  // 0 = no heartbeat
};

// Exit status of a process the guard ended.
constexpr int kFaultExitStatus = 1;

class FaultGuard;
class ParallelGrid;

// Communicators a FaultGuard watches while this lives (FaultGuard::watch_comms); they must outlive
// it. Its end takes them off the guard's list, so that a comm is never checked or aborted after
// the one who owns it has destroyed it.
class CommWatch {
 public:
  CommWatch() = default;
  CommWatch(CommWatch&& other) noexcept;
  CommWatch& operator=(CommWatch&& other) noexcept;
  ~CommWatch();
  CommWatch(const CommWatch&) = delete;
  CommWatch& operator=(const CommWatch&) = delete;

 private:
  friend class FaultGuard;
  CommWatch(FaultGuard* guard, std::vector<Comm*> comms) : guard_(guard), comms_(std::move(comms)) {}
  void release();
  FaultGuard* guard_ = nullptr;
  std::vector<Comm*> comms_;
};

class FaultGuard {
 public:
  // Collective over `world` (the heartbeat exchanges addresses). `report` shows the fault line to
  // the user (the CLI prints it as its error line); it runs on the watchdog thread.
  FaultGuard(Comm& world, const FaultOptions& options, std::function<void(const std::string&)> report);
  ~FaultGuard();
  FaultGuard(const FaultGuard&) = delete;
  FaultGuard& operator=(const FaultGuard&) = delete;

  Watchdog& watchdog() { return *watchdog_; }
  // Also watch `comms` (splits of the world, or decorators over them) while the CommWatch lives:
  // their asynchronous errors (an NCCL error, a PeerComm flag that never came) are faults, and they
  // are aborted with the others. The world is watched from the start.
  [[nodiscard]] CommWatch watch_comms(std::vector<Comm*> comms);
  // watch_comms of every group of `grid` (tp, dp, pp and their combinations, the embedding group):
  // each has a communicator of its own, whose errors the world's never shows.
  [[nodiscard]] CommWatch watch_grid(const ParallelGrid& grid);
  // A clean end: the heartbeat says goodbye, so peers finishing later raise no alarm.
  void finish();

 private:
  friend class CommWatch;
  [[noreturn]] void end_process(const std::string& line);
  void unwatch(const std::vector<Comm*>& comms);

  std::function<void(const std::string&)> report_;
  std::mutex comms_mutex_;
  std::vector<Comm*> comms_;
  bool ending_ = false;  // the fault path has taken comms_ to abort them
  std::unique_ptr<Heartbeat> heartbeat_;
  std::unique_ptr<Watchdog> watchdog_;  // last: its thread stops first
};

}  // namespace nd::dist
