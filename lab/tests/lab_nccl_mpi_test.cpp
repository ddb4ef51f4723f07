// The lab's measurements on NCCL under mpirun (one rank per GPU; skips where there is none): a
// batch timed beside a GEMM load (lab/gemm_load.h) still runs every call, a sweep beside one gives
// a row per size, and the compare sweep (lab/allreduce_compare.h) checks every implementation at
// every size.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "dist/comm/bench/auto_choice.h"
#include "dist/comm/bench/comm_bench.h"
#include "lab/allreduce_compare.h"
#include "lab/gemm_load.h"
#include "tests/dist/nccl_test_world.h"

namespace nd::lab {
namespace {

using namespace nd::dist;
using test::gpu_world;

// --load gemm: a batch timed beside a GEMM on another stream still runs every call (1 warm-up and 3
// per timed try: the sum is n^(1 + 3 tries)), with 1 to kLoadTries tries whether or not the load
// outlasted the batch (that depends on the GPU's scheduling and the host's launch speed, so it is
// reported, not asserted); the load describes itself and refuses graph timing.
TEST(LabNccl, EagerBatchesBesideAGemmLoadRunEveryCall) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const double n = world.size();
  std::unique_ptr<BenchLoad> load = make_gemm_load(world.device(), GemmShape{1024, 1024, 1024});
  EXPECT_NE(load->describe().find("1024x1024x1024"), std::string::npos) << load->describe();
  for (int64_t count : {int64_t{2}, int64_t{1} << 20}) {
    SCOPED_TRACE(count);
    Tensor a = Tensor::full({count}, 1.0, DType::F32, world.device());
    bool outlasted = false;
    const double seconds = time_launches(
        world, BenchTiming::Eager, 1, 3, [&] { return world.allreduce_async(a, ReduceOp::Sum); }, load.get(), &outlasted);
    EXPECT_GT(seconds, 0.0);
    world.synchronize();
    const double tries = (std::log(a.to_double_vector().back()) / std::log(n) - 1) / 3;
    EXPECT_GE(tries, 1.0);
    EXPECT_LE(tries, kLoadTries + 1e-9);
    EXPECT_NEAR(tries, std::round(tries), 1e-9);
    if (tries < kLoadTries - 0.5) {
      EXPECT_TRUE(outlasted) << "stopped before the last try only when the load outlasted it";
    }
  }
  Tensor b = Tensor::full({2}, 1.0, DType::F32, world.device());
  EXPECT_THROW(time_launches(world, BenchTiming::Graph, 1, 3, [&] { return world.allreduce_async(b, ReduceOp::Sum); },
                             load.get()),
               Error);
}

// A sweep beside a load the host cannot keep ahead of (a 64^3 GEMM ends before the next launch):
// a row per size, each right and timed, in bounded time; the rows whose load ended first are
// marked, not dropped.
TEST(LabNccl, SweepBesideALoadGivesARowPerSize) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  std::unique_ptr<BenchLoad> load = make_gemm_load(world.device(), GemmShape{64, 64, 64});
  BenchCommOptions sweep;
  sweep.min_bytes = 8;
  sweep.max_bytes = int64_t{2} << 20;
  sweep.factor = 64;
  sweep.warmup = 1;
  sweep.iters = 5;
  sweep.load = load.get();
  const std::vector<BenchCommRow> rows = run_bench_comm(world, sweep);
  ASSERT_EQ(rows.size(), 4u);  // 8 B, 512 B, 32 KB, 2 MB
  for (const BenchCommRow& row : rows) {
    SCOPED_TRACE(row.bytes);
    EXPECT_EQ(row.wrong, 0);
    EXPECT_GT(row.time_us, 0.0);
  }
}

TEST(LabNccl, CompareChecksEveryImplementationOnTheGpus) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  PeerOptions options;
  options.mode = Algorithm::Auto;
  options.buffer_bytes = int64_t{1} << 20;
  options.decide = auto_decider();
  PeerComm peer(world, options);
  for (BenchTiming timing : {BenchTiming::Eager, BenchTiming::Graph}) {
    BenchCommOptions sweep;
    sweep.min_bytes = 8;
    sweep.max_bytes = int64_t{4} << 20;
    sweep.factor = 32;
    sweep.warmup = 1;
    sweep.iters = 3;
    sweep.timing = timing;
    std::vector<CompareRow> rows = run_allreduce_compare(peer, sweep);
    ASSERT_EQ(rows.size(), 4u);  // 8 B, 256 B, 8 KB, 256 KB (8 MB is past the largest)
    for (const CompareRow& row : rows) {
      SCOPED_TRACE(std::string(bench_timing_name(timing)) + " size " + std::to_string(row.bytes));
      for (int i = 0; i < kCompareImpls; ++i) {
        EXPECT_EQ(row.wrong[i], 0) << compare_impl_name(i);
        const bool peer_choice = i < kAutoChoiceCount && is_peer_choice(compare_choice(i));
        if (peer_choice && (!peer.peer_usable() || row.bytes > peer.largest_bytes(compare_choice(i)))) {
          EXPECT_LT(row.time_us[i], 0.0) << compare_impl_name(i);
        } else {
          EXPECT_GT(row.time_us[i], 0.0) << compare_impl_name(i);
        }
      }
      EXPECT_GT(row.auto_over_best, 0.0);
    }
  }
}

}  // namespace
}  // namespace nd::lab
