// The frozen-rank drill shared by frozen_rank_np{2,4}_test: `mpirun -np N nanodist train` on a
// tiny model, one rank stopped with SIGSTOP once training runs; the job must end on its own with a
// non-zero status and one `nanodist: error: rank ...` line naming the fault, which says how long
// the waiting rank waited. How soon after that the job ends depends on the machine's load, so the
// wait for it is a generous bound that only a hang exceeds, not a measure of speed.
#pragma once
#include <gtest/gtest.h>

#include "process_helpers.h"
#include "train_fixture.h"

namespace nd::train::testing {

struct FrozenRankOutcome {
  double seconds = -1;  // from SIGSTOP to the end of mpirun
  int exit_code = -1;
  std::string err;
};

// Seconds a job gets to end after the fault, however busy the machine: past them it hangs.
constexpr double kHangSeconds = 120.0;

// Freezes rank `frozen` of an `np`-rank run started with `flags`.
inline FrozenRankOutcome freeze_a_rank(int np, int frozen, const std::string& flags) {
  TempDir dir;
  write_tiny_data(dir / "data", 3000);
  std::string command = mpirun(np) + " " + ND_NANODIST_BIN + " train --data " + (dir / "data") + " --out " +
                        (dir / "out") +
                        " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --max-iters 100000000"
                        " --eval-interval 0 --log-interval 100000000 --warmup-iters 1 " +
                        flags;
  Child job(command, dir / "out.txt", dir / "err.txt");
  FrozenRankOutcome outcome;
  // Step 1 prints its line once every rank has joined and trained.
  bool training = wait_until([&] { return job.out().find("| loss ") != std::string::npos || !job.running(); }, 20.0);
  EXPECT_TRUE(training && job.running()) << job.out() << job.err();
  if (!training || !job.running()) return outcome;
  pid_t rank = find_rank_process(job.pid(), frozen);
  EXPECT_GT(rank, 0) << "no process of rank " << frozen;
  if (rank <= 0) return outcome;
  job.also_clean_up(rank);
  auto stopped_at = Clock::now();
  ::kill(rank, SIGSTOP);
  bool ended = job.wait(kHangSeconds);
  outcome.seconds = seconds_since(stopped_at);
  EXPECT_TRUE(ended) << "the job still runs " << outcome.seconds << " s after rank " << frozen << " froze";
  outcome.exit_code = job.exit_code();
  outcome.err = job.err();
  std::printf("  np %d, rank %d frozen, flags '%s': job ended after %.1f s, exit %d\n", np, frozen, flags.c_str(),
              outcome.seconds, outcome.exit_code);
  return outcome;
}

// The fault line of a rank other than the frozen one, e.g.
// `nanodist: error: rank 0, step 12, while waiting for training step 13 (...): rank 1 has sent
// no heartbeat for 15.0 s (...)`.
inline void expect_fault_line(const FrozenRankOutcome& o, int frozen, const std::string& needle) {
  EXPECT_NE(o.exit_code, 0);
  size_t at = o.err.find("nanodist: error: rank ");
  ASSERT_NE(at, std::string::npos) << o.err;
  std::string line = o.err.substr(at, o.err.find('\n', at) - at);
  EXPECT_NE(line.find(needle), std::string::npos) << line;
  EXPECT_NE(line.find(", step "), std::string::npos) << line;
  EXPECT_EQ(line.find("rank " + std::to_string(frozen) + ","), std::string::npos) << "the frozen rank cannot speak: "
                                                                                  << line;
}

inline void run_frozen_rank_drills(int np) {
  const int frozen = np - 1;
  // The watchdog alone: the step never completes, so past --comm-timeout the waiting ranks give up.
  FrozenRankOutcome watchdog = freeze_a_rank(np, frozen, "--comm-timeout 10 --heartbeat-timeout 0");
  expect_fault_line(watchdog, frozen, "training step");
  EXPECT_GE(watchdog.seconds, 9.5) << "the watchdog fired before --comm-timeout 10";
  // Default settings (--comm-timeout 600): the heartbeat finds the frozen rank.
  FrozenRankOutcome heartbeat = freeze_a_rank(np, frozen, "");
  expect_fault_line(heartbeat, frozen, "rank " + std::to_string(frozen) + " has sent no heartbeat");
}

}  // namespace nd::train::testing
