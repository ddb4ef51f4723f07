// Heartbeat: every rank sends a small UDP datagram to every other rank each interval, from a
// thread of its own, on sockets apart from the training communicators; a peer not heard from
// for `timeout` seconds is declared gone. A rank whose process is frozen (SIGSTOP), killed or
// whose node vanished stops beating, while long work on the main thread (a first step, a CUDA
// graph capture, an eval, a checkpoint) never stops the thread, so it raises no false alarm.
// Ranks on one host talk over the loopback; across hosts over the address each rank shares.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/comm/comm.h"

namespace nd::dist {

struct HeartbeatOptions {
  double timeout_s = 15.0;  // silence after which a peer is gone (> 0)
  double interval_s = 1.0;  // between beats; at most timeout_s / 4
};

class Heartbeat {
 public:
  // Collective over `comm` (a host all-reduce carries every rank's address); the beats start
  // before it returns. nd::Error when the socket cannot be made.
  Heartbeat(Comm& comm, const HeartbeatOptions& options);
  ~Heartbeat();  // stops beating silently: peers notice (as for a crash) unless finish() ran
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // "" while every peer is heard from; else which rank fell silent and for how long. Safe to
  // call from any thread (the watchdog polls it).
  std::string silent_peer() const;

  // A clean end: tells the peers this rank is leaving, so they stop watching it, then stops.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  struct Peer {
    uint32_t ipv4 = 0;  // network byte order
    uint16_t port = 0;  // network byte order
    Clock::time_point last_heard;
    bool left = false;  // said goodbye
  };

  void run();
  void send_all(uint32_t kind);
  void receive_pending();
  void stop();

  int rank_ = 0;
  HeartbeatOptions options_;
  uint64_t job_key_ = 0;  // shared by the job's ranks; datagrams of other jobs are ignored
  int socket_ = -1;
  Clock::time_point started_;
  mutable std::mutex mutex_;
  std::vector<Peer> peers_;  // indexed by rank; this rank's entry unused
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace nd::dist
