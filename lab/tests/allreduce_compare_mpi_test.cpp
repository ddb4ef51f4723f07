// The lab's `bench-comm --impl compare` (lab/allreduce_compare.h) on the CPU under mpirun: every
// choice that can run sums correctly and is timed, and auto is rated against the fastest that ran.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dist/comm/world.h"
#include "lab/allreduce_compare.h"

namespace nd::lab {
namespace {

using namespace nd::dist;

// --impl compare on the CPU: no peer memory, so one-shot, two-shot and push are left out of every row;
// ring, NCCL's stand-in (MPI) and auto run, sum correctly, and auto's ratio is its time over
// the faster of the two.
TEST(AllReduceCompare, CompareRunsEveryChoiceAndRatesAuto) {
  auto comm = make_world_comm(Device::cpu());
  PeerOptions peer_options;
  peer_options.mode = Algorithm::Auto;
  PeerComm peer(*comm, peer_options);
  BenchCommOptions options;
  options.min_bytes = 8;
  options.max_bytes = 1 << 20;
  options.factor = 16;
  options.warmup = 1;
  options.iters = 2;
  int seen = 0;
  std::vector<CompareRow> rows = run_allreduce_compare(peer, options, [&](const CompareRow&) { ++seen; });
  ASSERT_EQ(rows.size(), 5u);  // 8 B, 128 B, 2 KB, 32 KB, 512 KB (8 MB is past the largest)
  EXPECT_EQ(seen, 5);
  for (const CompareRow& row : rows) {
    SCOPED_TRACE("size " + std::to_string(row.bytes));
    EXPECT_EQ(row.bytes, row.count * 4);
    const int ring = 2, native = 3, automatic = kCompareImpls - 1;
    for (int i = 0; i < kCompareImpls; ++i) {
      if (i != automatic && is_peer_choice(compare_choice(i))) {
        EXPECT_LT(row.time_us[i], 0.0) << compare_impl_name(i);
        continue;
      }
      EXPECT_GT(row.time_us[i], 0.0) << compare_impl_name(i);
      EXPECT_EQ(row.wrong[i], 0) << compare_impl_name(i);
    }
    const int best = row.time_us[ring] < row.time_us[native] ? ring : native;
    EXPECT_EQ(row.best, best);
    EXPECT_DOUBLE_EQ(row.auto_over_best, row.time_us[automatic] / row.time_us[best]);
    EXPECT_EQ(row.auto_choice, Algorithm::Native);
    const BenchCommRow csv_row = row.as_bench_row(automatic, "f32", comm->size());
    EXPECT_DOUBLE_EQ(csv_row.time_us, row.time_us[automatic]);
    EXPECT_NEAR(csv_row.busbw_gbps, csv_row.algbw_gbps * bus_factor(BenchOp::AllReduce, comm->size()),
                1e-9 * csv_row.busbw_gbps);
  }
}

// The best choice ignores those that cannot run; auto's ratio is against the fastest that did.
TEST(AllReduceCompare, AutoIsRatedAgainstTheFastestChoiceThatRan) {
  CompareRow row;
  // oneshot, twoshot, ring, native, push, auto.
  const double times[kCompareImpls] = {-1, 9.0, 12.0, 6.0, -1, 6.3};
  std::copy(times, times + kCompareImpls, row.time_us);
  rate_against_best(row);
  EXPECT_EQ(row.best, 3);
  EXPECT_DOUBLE_EQ(row.auto_over_best, 6.3 / 6.0);
  row.time_us[0] = 4.0;
  rate_against_best(row);
  EXPECT_EQ(row.best, 0);
  EXPECT_DOUBLE_EQ(row.auto_over_best, 6.3 / 4.0);
  row.time_us[4] = 3.0;
  rate_against_best(row);
  EXPECT_EQ(row.best, 4);
  EXPECT_DOUBLE_EQ(row.auto_over_best, 6.3 / 3.0);
  EXPECT_STREQ(compare_impl_name(0), "oneshot");
  EXPECT_STREQ(compare_impl_name(4), "push");
  EXPECT_STREQ(compare_impl_name(5), "auto");
  EXPECT_EQ(compare_choice(4), Algorithm::Push);
}

}  // namespace
}  // namespace nd::lab
