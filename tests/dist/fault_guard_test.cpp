// dist::FaultGuard's watch of communicators beside the world (a ParallelGrid's groups): a watched
// comm's asynchronous error ends the process with one line naming it, after aborting it; once its
// CommWatch has ended, the comm's errors are not the guard's business (its owner may destroy it).
// The fault path ends the process, so those cases run as death tests.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "dist/parallel/fault_guard.h"
#include "dist/comm/local_comm.h"
#include "dist/parallel/parallel_grid.h"
#include "tests/dist/failing_comm.h"

namespace nd::dist {
namespace {

using namespace std::chrono_literals;

using testing::FailingComm;

FaultOptions fast_polls() {
  FaultOptions options;
  options.comm_timeout_s = 1.0;  // the watchdog polls every 50 ms
  options.heartbeat_timeout_s = 0.0;
  return options;
}

// The fault line, left open so that the abort's words (which follow it) land on the same line.
void print_line(const std::string& line) { std::fprintf(stderr, "fault: %s; ", line.c_str()); }

TEST(FaultGuardDeathTest, AWatchedCommsAsynchronousErrorEndsTheProcessAfterAbortingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        LocalComm world;
        FailingComm group;
        FaultGuard guard(world, fast_polls(), print_line);
        CommWatch watch = guard.watch_comms({&group});
        group.fail("remote peer gone");
        std::this_thread::sleep_for(5s);
        std::exit(0);  // not reached when the guard saw the error
      },
      ::testing::ExitedWithCode(kFaultExitStatus),
      "fault: .*local reported an asynchronous error: remote peer gone; FailingComm aborted");
}

TEST(FaultGuardDeathTest, ACommNoLongerWatchedIsLeftAlone) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        LocalComm world;
        FailingComm group;
        FaultGuard guard(world, fast_polls(), print_line);
        { CommWatch watch = guard.watch_comms({&group}); }
        group.fail("remote peer gone");
        std::this_thread::sleep_for(500ms);  // ten polls
        guard.finish();
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// A grid over one rank has no splits: every group is the world or this rank's LocalComm, and
// watch_grid leaves the world (watched already) out.
TEST(FaultGuard, WatchGridOfOneRankTakesNoErrorFromIt) {
  LocalComm world;
  FaultGuard guard(world, fast_polls(), [](const std::string& line) { FAIL() << line; });
  {
    ParallelGrid grid(world, 1);
    CommWatch watch = guard.watch_grid(grid);
    std::this_thread::sleep_for(150ms);
  }
  guard.finish();
}

}  // namespace
}  // namespace nd::dist
