// The overlap rules of dist/comm_overlap.h against closed forms: a collective beside a GEMM runs
// at the loaded rate while it runs and at the idle rate after; buckets queue on one stream behind
// the backward that readies them.
#include <gtest/gtest.h>

#include "dist/comm_overlap.h"
#include "tensor/error.h"

namespace nd::dist {
namespace {

TEST(CommOverlap, BesideComputeHidesWhatTheComputeCovers) {
  // Nothing beside: all exposed, at the idle time.
  Overlap o = beside_compute(200, 300, 0);
  EXPECT_DOUBLE_EQ(o.time_us, 200);
  EXPECT_DOUBLE_EQ(o.exposed_us, 200);
  // Compute longer than the loaded time: done under it, nothing exposed.
  o = beside_compute(200, 300, 500);
  EXPECT_DOUBLE_EQ(o.time_us, 300);
  EXPECT_DOUBLE_EQ(o.exposed_us, 0);
  // 100 us beside: a third done at the loaded rate, two thirds of the idle time after.
  o = beside_compute(200, 300, 100);
  EXPECT_DOUBLE_EQ(o.time_us, 100 + 200.0 * 2 / 3);
  EXPECT_DOUBLE_EQ(o.exposed_us, 200.0 * 2 / 3);
  // Without a loaded fit (loaded = idle): exposed = time - compute.
  o = beside_compute(200, 200, 150);
  EXPECT_DOUBLE_EQ(o.time_us, 200);
  EXPECT_DOUBLE_EQ(o.exposed_us, 50);
  EXPECT_THROW(beside_compute(-1, 1, 1), Error);
}

TEST(CommOverlap, BucketsQueueBehindBackward) {
  // Backward ends at 1000 us. Bucket 1 ready at 100 runs loaded (150) to 250; bucket 2 ready at 200
  // waits for it, then 250..400; bucket 3 ready at 900 has 100 us of backward left: a third of
  // its loaded 300 under it, then two thirds of its idle 150 = 100 after (1000..1100); bucket 4
  // ready at the end waits for bucket 3 and runs idle 1100..1180.
  const std::vector<Overlap> q = queue_buckets(
      {{100, 100, 150}, {200, 100, 150}, {900, 150, 300}, {1000, 80, 160}}, 1000);
  ASSERT_EQ(q.size(), 4u);
  EXPECT_DOUBLE_EQ(q[0].time_us, 150);
  EXPECT_DOUBLE_EQ(q[0].exposed_us, 0);
  EXPECT_DOUBLE_EQ(q[1].time_us, 150);
  EXPECT_DOUBLE_EQ(q[2].time_us, 200);
  EXPECT_DOUBLE_EQ(q[2].exposed_us, 100);
  EXPECT_DOUBLE_EQ(q[3].time_us, 80);
  EXPECT_DOUBLE_EQ(q[3].exposed_us, 80);
  // A queue that backs up past backward's end exposes the tail of the bucket still running.
  const std::vector<Overlap> late = queue_buckets({{0, 400, 800}, {10, 100, 200}}, 600);
  EXPECT_DOUBLE_EQ(late[0].time_us, 600 + 400.0 * 2 / 8);  // 6/8 done under backward, 100 after
  EXPECT_DOUBLE_EQ(late[0].exposed_us, 100);
  EXPECT_DOUBLE_EQ(late[1].time_us, 100);
  EXPECT_DOUBLE_EQ(late[1].exposed_us, 100);
}

}  // namespace
}  // namespace nd::dist
