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

#include "dist/comm.h"
#include "dist/heartbeat.h"
#include "dist/watchdog.h"

namespace nd::dist {

struct FaultOptions {
  double comm_timeout_s = 600.0;      // 0 = steps and collectives are not timed
  double heartbeat_timeout_s = 15.0;  // 0 = no heartbeat
};

// Exit status of a process the guard ended.
constexpr int kFaultExitStatus = 1;

class FaultGuard {
 public:
  // Collective over `world` (the heartbeat exchanges addresses). `report` shows the fault line to
  // the user (the CLI prints it as its error line); it runs on the watchdog thread.
  FaultGuard(Comm& world, const FaultOptions& options, std::function<void(const std::string&)> report);
  ~FaultGuard();
  FaultGuard(const FaultGuard&) = delete;
  FaultGuard& operator=(const FaultGuard&) = delete;

  Watchdog& watchdog() { return *watchdog_; }
  // Also watch `comm` (a split of the world): its asynchronous errors are faults, and it is
  // aborted with the others. The world is watched from the start.
  void watch_comm(Comm& comm);
  // A clean end: the heartbeat says goodbye, so peers finishing later raise no alarm.
  void finish();

 private:
  [[noreturn]] void end_process(const std::string& line);

  std::function<void(const std::string&)> report_;
  std::mutex comms_mutex_;
  std::vector<Comm*> comms_;
  std::unique_ptr<Heartbeat> heartbeat_;
  std::unique_ptr<Watchdog> watchdog_;  // last: its thread stops first
};

}  // namespace nd::dist
