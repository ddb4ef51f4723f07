// dist::Watchdog in-process: an activity past its limit is reported once with the rank, the step
// and what was waited for; activities that finish in time, untimed watchdogs and checks that find
// nothing report nothing; a check that finds a fault is reported at the next poll.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "dist/comm/watchdog.h"

namespace nd::dist {
namespace {

using namespace std::chrono_literals;

// Records the fault lines a watchdog reports (a real handler ends the process).
struct Recorder {
  std::mutex mutex;
  std::vector<std::string> lines;
  FaultHandler handler() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.push_back(line);
    };
  }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mutex);
    return lines;
  }
};

TEST(Watchdog, ReportsAnActivityPastItsLimit) {
  Recorder faults;
  Watchdog dog(3, 0.3, faults.handler());
  dog.set_step(41);
  auto start = std::chrono::steady_clock::now();
  {
    auto scope = dog.watch("the all-reduce of bucket 2");
    std::this_thread::sleep_for(700ms);
  }
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto lines = faults.seen();
  ASSERT_EQ(lines.size(), 1u) << "reported once, then the watchdog stops";
  EXPECT_NE(lines[0].find("rank 3, step 41: the all-reduce of bucket 2 has not completed after 0."), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("--comm-timeout"), std::string::npos) << lines[0];
  EXPECT_LT(took, 2.0);
}

TEST(Watchdog, ActivitiesWithinTheirLimitAndUntimedOnesAreNotFaults) {
  Recorder faults;
  {
    Watchdog dog(0, 0.4, faults.handler());
    for (int i = 0; i < 6; ++i) {
      auto scope = dog.watch("step " + std::to_string(i));
      std::this_thread::sleep_for(100ms);
    }
    // A checkpoint gets its extra time on top of the timeout.
    auto scope = dog.watch("a large checkpoint", 1.0);
    std::this_thread::sleep_for(800ms);
  }
  {
    Watchdog off(0, 0.0, faults.handler());
    auto scope = off.watch("anything");
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_TRUE(faults.seen().empty()) << faults.seen().front();
}

TEST(Watchdog, NestedScopesAreEachTimed) {
  Recorder faults;
  Watchdog dog(1, 0.3, faults.handler());
  {
    auto outer = dog.watch("the checkpoint at step 5", 10.0);
    {
      auto inner = dog.watch("the barrier after it");
      std::this_thread::sleep_for(600ms);
    }
  }
  auto lines = faults.seen();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("the barrier after it"), std::string::npos) << lines[0];
}

TEST(Watchdog, ChecksReportAsynchronousFaults) {
  Recorder faults;
  std::atomic<bool> broken{false};
  Watchdog dog(2, 0.0, faults.handler());
  dog.add_check([&] { return broken ? std::string("peer gone") : std::string(); });
  dog.set_step(7);
  auto scope = dog.watch("the evaluation at step 7");
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(faults.seen().empty());
  broken = true;
  std::this_thread::sleep_for(1500ms);
  auto lines = faults.seen();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "rank 2, step 7, while waiting for the evaluation at step 7: peer gone");
}

}  // namespace
}  // namespace nd::dist
