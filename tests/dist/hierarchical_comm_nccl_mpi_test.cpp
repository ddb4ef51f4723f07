// The hierarchical all-reduce on NCCL under mpirun (one rank per GPU; nodes of every size that
// divides the world passed directly, so 2 nodes x 2 GPUs at np 4): sum and average against the
// closed form (f32 and bf16, odd sizes, one past the direct path and a few MB through the staged
// ring). Each level runs on its own comm and stream, ordered through the compute stream. Skips
// where there is no GPU, or fewer GPUs than ranks on the node.
#include <gtest/gtest.h>

#include <string>

#include "dist/comm/hierarchical_comm.h"
#include "dist/comm/world.h"
#include "tests/dist/collective_inputs.h"
#include "tests/dist/nccl_test_world.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace nd::dist {
namespace {

using test::rank_input;

using test::enough_gpus;
using test::gpu_world;

TEST(HierarchicalCommNccl, EqualsTheClosedFormForEveryNodeShape) {
  if (!enough_gpus()) GTEST_SKIP() << "needs one GPU per rank";
  static Comm* world = make_world_comm(Device::cuda(0)).release();  // never destroyed, as in nccl_ring_mpi_test
  const int n = world->size(), w = world->rank();
  for (int per_node = 1; per_node <= n; ++per_node) {
    if (n % per_node != 0) continue;
    SCOPED_TRACE(std::to_string(per_node) + " rank(s) per node");
    HierarchicalComm hierarchical(*world, w / per_node);
    EXPECT_EQ(hierarchical.two_levels(), per_node > 1 && per_node < n);
    for (DType dtype : {DType::F32, DType::BF16}) {
      for (int64_t count : {int64_t{7}, int64_t{16385}, int64_t{(1 << 21) + 3}}) {
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " count " + std::to_string(count) + " " + reduce_op_name(op));
          const uint64_t seed = 70 + count;
          Tensor buffer = rank_input(w, count, dtype, seed, world->device());
          hierarchical.allreduce(buffer, op);
          test::expect_reduced_near(buffer.to(Device::cpu()), test::reduced_over_ranks(n, count, seed, op), dtype, op,
                                    "hierarchical");
        }
      }
    }
  }
}

}  // namespace
}  // namespace nd::dist
