// The hierarchical all-reduce (mpirun -np 4 and 6, nodes pretended): inside each node, across the
// nodes, inside again, equal to the flat ring and to the closed-form sum for f32 and bf16 at odd
// sizes (the inputs are small integers, so every order of summation is exact), averages within
// one rounding; uneven nodes and one rank per node fall back to the flat ring; the grid hands it
// out for Algorithm::Hierarchical.
#include <gtest/gtest.h>

#include <string>

#include "dist/comm/hierarchical_comm.h"
#include "dist/parallel/parallel_grid.h"
#include "dist/comm/world.h"
#include "tests/dist/collective_inputs.h"

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::rounding_tolerance;
using test::sum_over_ranks;

void expect_equals_flat_ring(Comm& world, HierarchicalComm& hierarchical) {
  RingComm flat(world);
  const int n = world.size(), w = world.rank();
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (int64_t count : {int64_t{1}, int64_t{5}, int64_t{7}, int64_t{1001}, int64_t{65537}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " count " + std::to_string(count));
      const uint64_t seed = 40 + count;
      Tensor mine = rank_input(w, count, dtype, seed), reference = rank_input(w, count, dtype, seed);
      hierarchical.allreduce(mine, ReduceOp::Sum);
      flat.allreduce(reference, ReduceOp::Sum);
      EXPECT_EQ(count_mismatches(mine.to_double_vector(), reference.to_double_vector(), 0.0, "sum vs flat ring"), 0);
      EXPECT_EQ(count_mismatches(mine.to_double_vector(), sum_over_ranks(n, count, seed), 0.0, "sum vs closed form"), 0);

      Tensor mean = rank_input(w, count, dtype, seed), flat_mean = rank_input(w, count, dtype, seed);
      hierarchical.allreduce(mean, ReduceOp::Avg);
      flat.allreduce(flat_mean, ReduceOp::Avg);
      // Each level rounds its scaled partial sums (terms of magnitude up to 8), and partial sums of
      // opposite signs cancel: the error is one rounding of the terms, as atol (as NCCL's average
      // is compared in ring_comm_nccl_mpi_test).
      const double rtol = 2 * rounding_tolerance(dtype);
      EXPECT_EQ(count_mismatches(mean.to_double_vector(), flat_mean.to_double_vector(), rtol, "average vs flat ring",
                                 rtol * 8.0),
                0);
    }
  }
  // Any shape: the buffer is reduced as its flat elements.
  Tensor matrix = rank_input(w, 21, DType::F32, 9).view({3, 7});
  hierarchical.allreduce(matrix, ReduceOp::Sum);
  EXPECT_EQ(count_mismatches(matrix.to_double_vector(), sum_over_ranks(n, 21, 9), 0.0, "3 x 7 sum"), 0);
}

TEST(HierarchicalComm, EqualsTheFlatRingForEveryNodeShape) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size(), w = world->rank();
  for (int per_node = 1; per_node <= n; ++per_node) {
    SCOPED_TRACE(std::to_string(per_node) + " rank(s) per node");
    HierarchicalComm hierarchical(*world, w / per_node);
    const bool even = n % per_node == 0;
    EXPECT_EQ(hierarchical.two_levels(), even && per_node > 1 && per_node < n);
    if (hierarchical.two_levels()) {
      EXPECT_EQ(hierarchical.node_comm().size(), per_node);
      EXPECT_EQ(hierarchical.cross_comm().size(), n / per_node);
    }
    expect_equals_flat_ring(*world, hierarchical);
  }
}

TEST(HierarchicalComm, TheGridHandsItOutWithPretendNodes) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size();
  GridOptions shape;
  shape.collectives = parse_collectives("hierarchical");
  shape.ranks_per_node = 2;
  ParallelGrid grid(*world, shape);
  EXPECT_EQ(grid.collectives(), Algorithm::Hierarchical);
  auto* dp = dynamic_cast<HierarchicalComm*>(&grid.dp());
  ASSERT_NE(dp, nullptr);
  EXPECT_TRUE(dp->two_levels());
  EXPECT_EQ(dp->node_comm().size(), 2);
  Tensor sum = rank_input(world->rank(), 333, DType::F32, 5);
  grid.dp().allreduce(sum, ReduceOp::Sum);
  EXPECT_EQ(count_mismatches(sum.to_double_vector(), sum_over_ranks(n, 333, 5), 0.0, "grid dp sum"), 0);
}

}  // namespace
}  // namespace nd::dist
