// dist::Watchdog in-process: an activity past its limit is reported once with the rank, the step
// and what was waited for; activities that finish in time, untimed watchdogs and checks that find
// nothing report nothing; a check that finds a fault is reported at a later poll. An activity that
// must be reported lasts until the report comes, and one that must not is far inside its limit,
// so the results do not depend on how busy the machine is.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "dist/comm/watchdog.h"

namespace nd::dist {
namespace {

using namespace std::chrono_literals;

// Records the fault lines a watchdog reports (a real handler ends the process).
struct Recorder {
  std::mutex mutex;
  std::condition_variable reported;
  std::vector<std::string> lines;
  FaultHandler handler() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.push_back(line);
      reported.notify_all();
    };
  }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mutex);
    return lines;
  }
  // Waits until a line came. The minute only ends a test whose watchdog never reports.
  bool wait_for_a_line() {
    std::unique_lock<std::mutex> lock(mutex);
    return reported.wait_for(lock, 60s, [this] { return !lines.empty(); });
  }
};

TEST(Watchdog, ReportsAnActivityPastItsLimit) {
  Recorder faults;
  Watchdog dog(3, 0.3, faults.handler());
  dog.set_step(41);
  {
    auto scope = dog.watch("the all-reduce of bucket 2");
    ASSERT_TRUE(faults.wait_for_a_line()) << "no report within a minute of a 0.3 s limit";
    std::this_thread::sleep_for(300ms);  // six more polls: none may report it again
  }
  auto lines = faults.seen();
  ASSERT_EQ(lines.size(), 1u) << "reported once, then the watchdog stops";
  const std::string head = "rank 3, step 41: the all-reduce of bucket 2 has not completed after ";
  ASSERT_EQ(lines[0].rfind(head, 0), 0u) << lines[0];
  EXPECT_GE(std::stod(lines[0].substr(head.size())), 0.3) << lines[0];
  EXPECT_NE(lines[0].find("--comm-timeout"), std::string::npos) << lines[0];
}

TEST(Watchdog, ActivitiesWithinTheirLimitAndUntimedOnesAreNotFaults) {
  Recorder faults;
  {
    // Each step is timed from its own start: together they take longer than the limit.
    Watchdog dog(0, 1.0, faults.handler());
    for (int i = 0; i < 12; ++i) {
      auto scope = dog.watch("step " + std::to_string(i));
      std::this_thread::sleep_for(100ms);
    }
    // A checkpoint gets its extra time on top of the timeout.
    auto scope = dog.watch("a large checkpoint", 60.0);
    std::this_thread::sleep_for(1300ms);
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
    auto outer = dog.watch("the checkpoint at step 5", 60.0);
    {
      auto inner = dog.watch("the barrier after it");
      ASSERT_TRUE(faults.wait_for_a_line());
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
  ASSERT_TRUE(faults.wait_for_a_line());
  auto lines = faults.seen();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "rank 2, step 7, while waiting for the evaluation at step 7: peer gone");
}

}  // namespace
}  // namespace nd::dist
