// The overlap rules of dist/parallel/plan/comm_overlap.h against closed forms: a collective beside a persistent
// GEMM waits for it, then runs at its idle time, all of which the next op waits for; buckets queue
// on one stream, waiting for the kernel in flight only when issued to an idle stream.
#include <gtest/gtest.h>

#include "dist/parallel/plan/comm_overlap.h"
#include "tensor/error.h"

namespace nd::dist {
namespace {

TEST(CommOverlap, AfterGemmWaitsThenRunsIdle) {
  // Nothing beside: the idle time, all exposed.
  Overlap o = after_gemm(200, 0);
  EXPECT_DOUBLE_EQ(o.time_us, 200);
  EXPECT_DOUBLE_EQ(o.exposed_us, 200);
  // Beside a 97 us GEMM: 97 + 200 from issue, the 200 after the GEMM exposed, whatever the GEMM's length.
  o = after_gemm(200, 97);
  EXPECT_DOUBLE_EQ(o.time_us, 297);
  EXPECT_DOUBLE_EQ(o.exposed_us, 200);
  o = after_gemm(200, 1500);
  EXPECT_DOUBLE_EQ(o.time_us, 1700);
  EXPECT_DOUBLE_EQ(o.exposed_us, 200);
  EXPECT_THROW(after_gemm(-1, 1), Error);
  EXPECT_THROW(after_gemm(1, -1), Error);
}

TEST(CommOverlap, BucketsWaitForTheKernelInFlightOnlyWhenTheStreamIsIdle) {
  // Backward ends at 1000 us. Bucket 1, ready at 100 on an idle stream, waits for a 50 us kernel and
  // runs 150..250 (150 from issue); bucket 2, ready at 200 while bucket 1 runs, is queued behind it
  // and runs 250..350 with no wait of its own (100 from its span's start at bucket 1's end); bucket 3, ready at 900, waits 60 and runs 960..1110: 110 after backward
  // ends; bucket 4, ready at the end behind bucket 3, runs 1110..1190, all exposed.
  const std::vector<Overlap> q =
      queue_buckets({{100, 100, 50}, {200, 100, 70}, {900, 150, 60}, {1000, 80, 0}}, 1000);
  ASSERT_EQ(q.size(), 4u);
  EXPECT_DOUBLE_EQ(q[0].time_us, 150);
  EXPECT_DOUBLE_EQ(q[0].exposed_us, 0);
  EXPECT_DOUBLE_EQ(q[1].time_us, 100);
  EXPECT_DOUBLE_EQ(q[1].exposed_us, 0);
  EXPECT_DOUBLE_EQ(q[2].time_us, 210);
  EXPECT_DOUBLE_EQ(q[2].exposed_us, 110);
  EXPECT_DOUBLE_EQ(q[3].time_us, 80);
  EXPECT_DOUBLE_EQ(q[3].exposed_us, 80);
  // A bucket ready exactly as the one before ends finds the stream idle: it waits for the kernel.
  const std::vector<Overlap> edge = queue_buckets({{0, 100, 0}, {100, 50, 30}}, 1000);
  EXPECT_DOUBLE_EQ(edge[1].time_us, 80);
  // Nothing to wait for and backward long over: each bucket is its idle time, exposed whole.
  const std::vector<Overlap> after = queue_buckets({{500, 40, 0}, {500, 60, 0}}, 500);
  EXPECT_DOUBLE_EQ(after[0].time_us, 40);
  EXPECT_DOUBLE_EQ(after[0].exposed_us, 40);
  EXPECT_DOUBLE_EQ(after[1].time_us, 60);
  EXPECT_DOUBLE_EQ(after[1].exposed_us, 60);
  EXPECT_THROW(queue_buckets({{0, -1, 0}}, 10), Error);
}

}  // namespace
}  // namespace nd::dist
