// The ring decorator on NCCL under mpirun (one rank per GPU): its all-reduce, reduce-scatter and
// all-gather against NCCL's own and the closed form (f32 and bf16, sum and average, sizes that
// take the direct path and the staged ring), the reduce-scatter's input untouched; a tp-style
// sequence (all-gather, reduce-scatter, all-reduce through the decorator) captured into a CUDA
// graph whose replays give the closed form; and a grid asked for ring whose dp and tp groups
// (each a split with a stream of its own) sum like NCCL. Skips where there is no GPU, or fewer
// GPUs than ranks on the node.
#include <gtest/gtest.h>

#include <string>

#include "dist/parallel/parallel_grid.h"
#include "dist/comm/ring_comm.h"
#include "dist/comm/world.h"
#include "tests/common/captured_graph.h"
#include "tests/dist/collective_inputs.h"
#include "tests/dist/nccl_test_world.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_stream.h"
#endif

namespace nd::dist {
namespace {

using test::expect_reduced_near;
using test::rank_input;
using test::rank_value;
using test::reduced_over_ranks;
using test::sum_over_ranks;

using test::enough_gpus;
using test::gpu_world;

TEST(RingCommNccl, CollectivesEqualNcclAndTheClosedForm) {
  SKIP_WITHOUT_GPU();
  Comm& native = gpu_world();
  RingComm ring(native);
  const int n = native.size(), r = native.rank();
  const Device gpu = native.device();
  for (DType dtype : {DType::F32, DType::BF16})
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg})
      for (int64_t block : {int64_t{3}, int64_t{5000}, int64_t{300001}}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + reduce_op_name(op) + " block " + std::to_string(block));
        const uint64_t seed = 900 + block;
        Tensor a = rank_input(r, block * n, dtype, seed, gpu), b = a.clone();
        ring.allreduce(a, op);
        native.allreduce(b, op);
        expect_reduced_near(a, reduced_over_ranks(n, block * n, seed, op), dtype, op, "all-reduce vs closed form");
        expect_reduced_near(a, b.to_double_vector(), dtype, op, "all-reduce vs NCCL");

        const Tensor input = rank_input(r, block * n, dtype, seed + 1, gpu);
        const std::vector<double> before = input.to_double_vector();
        Tensor got = Tensor::zeros({block}, dtype, gpu), want = Tensor::zeros({block}, dtype, gpu);
        ring.reduce_scatter(input, got, op);
        native.reduce_scatter(input, want, op);
        EXPECT_EQ(input.to_double_vector(), before) << "the reduce-scatter changed its input";
        expect_reduced_near(got, reduced_over_ranks(n, block, seed + 1, op, r * block), dtype, op,
                            "reduce-scatter vs closed form");
        expect_reduced_near(got, want.to_double_vector(), dtype, op, "reduce-scatter vs NCCL");

        Tensor mine = rank_input(r, block, dtype, seed + 2, gpu);
        Tensor gathered = Tensor::full({block * n}, -99.0, dtype, gpu);
        ring.all_gather(mine, gathered);
        std::vector<double> concatenated;
        for (int q = 0; q < n; ++q)
          for (int64_t i = 0; i < block; ++i) concatenated.push_back(rank_value(q, i, seed + 2));
        EXPECT_EQ(gathered.to_double_vector(), concatenated);
      }
}

// What a sequence-parallel step asks of the tp group, captured after one eager round (which
// sizes the staging buffers): the replays give the closed form.
TEST(RingCommNccl, SequenceParallelPatternCapturesIntoAGraph) {
  SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  Comm& native = gpu_world();
  RingComm ring(native);
  const int n = native.size(), r = native.rank();
  const Device gpu = native.device();
  const int64_t block = 40001;
  Tensor share = rank_input(r, block, DType::BF16, 51, gpu);
  Tensor whole = Tensor::zeros({block * n}, DType::BF16, gpu);
  Tensor partial = rank_input(r, block * n, DType::BF16, 52, gpu);
  Tensor reduced_share = Tensor::zeros({block}, DType::BF16, gpu);
  Tensor stats = rank_input(r, 1001, DType::F32, 53, gpu);
  auto step = [&] {
    ring.all_gather(share, whole);
    ring.reduce_scatter(partial, reduced_share, ReduceOp::Sum);
    ring.allreduce(stats, ReduceOp::Sum);
  };
  step();
  native.synchronize();
  cudaStream_t stream = compute_stream(gpu.index);
  test::CapturedGraph graph(stream, step);
  ASSERT_TRUE(graph.ok());
  std::vector<double> concatenated;
  for (int q = 0; q < n; ++q)
    for (int64_t i = 0; i < block; ++i) concatenated.push_back(rank_value(q, i, 51));
  for (int replay = 0; replay < 2; ++replay) {
    whole.copy_from(Tensor::full({block * n}, -99.0, DType::BF16));
    reduced_share.zero_();
    stats.copy_from(rank_input(r, 1001, DType::F32, 53));
    ASSERT_TRUE(graph.replay());
    EXPECT_EQ(whole.to_double_vector(), concatenated) << "replay " << replay;
    expect_reduced_near(reduced_share, reduced_over_ranks(n, block, 52, ReduceOp::Sum, r * block), DType::BF16,
                        ReduceOp::Sum, "reduce-scatter in the graph");
    expect_reduced_near(stats, reduced_over_ranks(n, 1001, 53, ReduceOp::Sum), DType::F32, ReduceOp::Sum,
                        "all-reduce in the graph");
  }
#endif
}

// A grid of ring collectives over NCCL: each group of several ranks is ring-decorated (the world
// itself, or from 4 GPUs on a split with a stream of its own) and sums over its members.
TEST(RingCommNccl, RingGridGroupsSum) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  for (int tp = 1; tp <= n; ++tp) {
    if (n % tp != 0) continue;
    GridOptions options;
    options.tp = tp;
    options.collectives = Algorithm::Ring;
    ParallelGrid grid(world, options);
    for (Comm* group : {&grid.tp(), &grid.dp()}) {
      if (group->size() == 1) continue;
      EXPECT_NE(dynamic_cast<RingComm*>(group), nullptr);
      Tensor values = rank_input(r, 70001, DType::F32, 60 + tp, world.device());
      group->allreduce(values, ReduceOp::Sum);
      expect_reduced_near(values, sum_over_ranks(n, 70001, 60 + tp), DType::F32, ReduceOp::Sum, "ring grid group sum");
    }
  }
}

}  // namespace
}  // namespace nd::dist
