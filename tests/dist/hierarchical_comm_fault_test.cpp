// Fault handling sees inside a HierarchicalComm: an error on its node or cross-node comm (comms
// of their own, which the wrapped comm never reports) is the hierarchical comm's asynchronous
// error, abort() reaches both levels, and a FaultGuard watching the hierarchical comm ends the
// process on it. One process: the wrapped comm pretends to be rank 0 of four ranks on two nodes
// and hands out failing comms as its splits, so the two levels are built from them.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dist/parallel/fault_guard.h"
#include "dist/comm/forwarding_comm.h"
#include "dist/comm/hierarchical_comm.h"
#include "dist/comm/local_comm.h"
#include "tests/dist/failing_comm.h"

namespace nd::dist {
namespace {

using namespace std::chrono_literals;
using testing::FailingComm;

// Rank 0 of 4, nodes {0, 0, 1, 1}: the node discovery's host sum adds the other ranks' entries
// (node + 1, as HierarchicalComm writes its own). Each split is a FailingComm, kept in `splits`
// (the HierarchicalComm owns it): the first is the node level, the second the cross-node level.
class TwoNodesOfTwo : public ForwardingComm {
 public:
  TwoNodesOfTwo() : ForwardingComm(std::make_unique<LocalComm>()) {}
  int rank() const override { return 0; }
  int size() const override { return 4; }
  using ForwardingComm::host_allreduce;
  void host_allreduce(int64_t* values, int n, HostReduce op) override {
    ASSERT_EQ(n, 4);
    ASSERT_EQ(op, HostReduce::Sum);
    const int64_t others[4] = {0, 1, 2, 2};
    for (int i = 0; i < n; ++i) values[i] += others[i];
  }
  std::unique_ptr<Comm> split(int, int) override {
    auto comm = std::make_unique<FailingComm>();
    splits.push_back(comm.get());
    return comm;
  }
  std::vector<FailingComm*> splits;
};

TEST(HierarchicalCommFault, ALevelCommsErrorIsTheHierarchicalCommsAndAbortReachesBothLevels) {
  TwoNodesOfTwo wrapped;
  HierarchicalComm comm(wrapped, /*node=*/0);
  ASSERT_TRUE(comm.two_levels());
  ASSERT_EQ(wrapped.splits.size(), 2u);
  FailingComm& node = *wrapped.splits[0];
  FailingComm& cross = *wrapped.splits[1];
  ASSERT_EQ(&comm.node_comm(), &node);
  ASSERT_EQ(&comm.cross_comm(), &cross);
  EXPECT_EQ(comm.async_error(), "");
  cross.fail("cross-node peer gone");
  EXPECT_EQ(comm.async_error(), "the cross-node level's comm: cross-node peer gone");
  node.fail("node peer gone");
  EXPECT_EQ(comm.async_error(), "the node level's comm: node peer gone");
  comm.abort();
  EXPECT_EQ(node.aborts(), 1);
  EXPECT_EQ(cross.aborts(), 1);
}

TEST(HierarchicalCommFault, OneLevelHasNoLevelCommsToAsk) {
  LocalComm alone;  // one rank: no two levels, nothing split
  HierarchicalComm comm(alone, /*node=*/0);
  ASSERT_FALSE(comm.two_levels());
  EXPECT_EQ(comm.async_error(), "");
  comm.abort();  // must not touch the level comms that were never built
}

TEST(HierarchicalCommFaultDeathTest, AGuardWatchingTheHierarchicalCommEndsOnANodeLevelError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        LocalComm world;
        TwoNodesOfTwo wrapped;
        HierarchicalComm comm(wrapped, /*node=*/0);
        FaultOptions options;
        options.comm_timeout_s = 1.0;  // the watchdog polls every 50 ms
        options.heartbeat_timeout_s = 0.0;
        FaultGuard guard(world, options, [](const std::string& line) { std::fprintf(stderr, "fault: %s; ", line.c_str()); });
        CommWatch watch = guard.watch_comms({&comm});
        wrapped.splits[0]->fail("node peer gone");
        std::this_thread::sleep_for(5s);
        std::exit(0);  // not reached when the guard saw the error
      },
      ::testing::ExitedWithCode(kFaultExitStatus),
      "fault: .*reported an asynchronous error: the node level's comm: node peer gone; FailingComm aborted");
}

}  // namespace
}  // namespace nd::dist
