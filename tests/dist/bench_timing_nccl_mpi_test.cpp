// bench-comm's timing on NCCL under mpirun (one rank per GPU): eager and CUDA-graph batches of
// NCCL's all-reduce, our ring's, the one-shot and push peer all-reduces and auto (its table timed at
// start) run every call they time (ones summed in place k times give n^k exactly). Skips where there
// is no GPU per rank.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "dist/comm/bench/auto_choice.h"
#include "dist/comm/bench/bench_timing.h"
#include "dist/comm/peer_comm.h"
#include "dist/comm/ring_comm.h"
#include "tests/dist/nccl_test_world.h"

namespace nd::dist {
namespace {

using test::gpu_world;

TEST(BenchTimingNccl, EagerAndGraphBatchesRunEveryCall) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const double n = world.size();
  RingComm ring(world);
  PeerOptions one_shot;
  one_shot.mode = Algorithm::OneShot;
  one_shot.buffer_bytes = int64_t{4} << 20;
  PeerComm peer(world, one_shot);
  PeerOptions push_options = one_shot;
  push_options.mode = Algorithm::Push;
  PeerComm push(world, push_options);
  PeerOptions automatic = one_shot;
  automatic.mode = Algorithm::Auto;
  automatic.decide = auto_decider();
  PeerComm auto_comm(world, automatic);
  struct Impl {
    const char* name;
    Comm* comm;
  };
  for (const Impl& impl : {Impl{"nccl", &world}, Impl{"ring", &ring}, Impl{"oneshot", &peer}, Impl{"push", &push},
                          Impl{"auto", &auto_comm}})
    for (int64_t count : {int64_t{2}, int64_t{1000}, int64_t{1} << 20})
      for (BenchTiming timing : {BenchTiming::Eager, BenchTiming::Graph}) {
        SCOPED_TRACE(std::string(impl.name) + " " + std::to_string(count) + " " + bench_timing_name(timing));
        Tensor a = Tensor::full({count}, 1.0, DType::F32, world.device());
        impl.comm->allreduce(a, ReduceOp::Sum);  // eager first: the layout agreement, the ring's staging
        a.fill_(1.0);
        const double seconds = time_launches(world, timing, 1, 3, [&] { return impl.comm->allreduce_async(a, ReduceOp::Sum); });
        EXPECT_GT(seconds, 0.0);
        world.synchronize();
        // Eager: 1 warm-up + 3 timed calls; graph: the 3 captured calls replayed twice (warm-up, timed).
        const double want = std::pow(n, timing == BenchTiming::Eager ? 4 : 6);
        std::vector<double> got = a.to_double_vector();
        EXPECT_EQ(got.front(), want);
        EXPECT_EQ(got.back(), want);
      }
}

}  // namespace
}  // namespace nd::dist
