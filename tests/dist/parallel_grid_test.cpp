// The parallel grid of a single process (no mpirun): world, dp, tp, pp and every combination are
// one rank, dp is the world itself, the one stage is first and last, and a tp or pp other than 1
// names the numbers in its error.
#include <gtest/gtest.h>

#include <string>

#include "dist/comm/local_comm.h"
#include "dist/parallel/parallel_grid.h"

namespace nd::dist {
namespace {

TEST(ParallelGrid, OneLocalRank) {
  LocalComm world;
  ParallelGrid grid(world, 1);
  EXPECT_EQ(&grid.world(), &world);
  EXPECT_EQ(&grid.dp(), &world);
  EXPECT_EQ(grid.tp().size(), 1);
  EXPECT_EQ(grid.tp().device(), world.device());
  EXPECT_EQ(grid.world_rank() + grid.dp_rank() + grid.tp_rank(), 0);
  EXPECT_EQ(grid.world_size() * grid.dp_size() * grid.tp_size(), 1);
  Tensor t = Tensor::from_vector(std::vector<float>{2.5f, -1.0f}, {2});
  grid.tp().allreduce(t, ReduceOp::Sum);
  grid.dp().allreduce(t, ReduceOp::Avg);
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{2.5, -1.0}));
  EXPECT_EQ(&grid.group({Axis::Tp, Axis::Dp, Axis::Pp}), &world);
  EXPECT_EQ(grid.model_parallel().size(), 1);
  EXPECT_EQ(grid.embedding().size(), 1);
  EXPECT_TRUE(grid.is_first_stage() && grid.is_last_stage() && grid.in_embedding_group());
  EXPECT_EQ(grid.pp_size() * grid.pp_rank() + grid.size(Axis::Pp), 1);
}

TEST(ParallelGrid, RingOnOneRankNeedsNoDecoration) {
  LocalComm world;
  GridOptions options;
  options.collectives = parse_collectives("ring");
  ParallelGrid grid(world, options);
  EXPECT_EQ(grid.collectives(), Algorithm::Ring);
  Tensor t = Tensor::from_vector(std::vector<float>{2.5f, -1.0f}, {2});
  grid.dp().allreduce(t, ReduceOp::Sum);
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{2.5, -1.0}));
  EXPECT_EQ(parse_collectives("auto"), Algorithm::Auto);
  EXPECT_EQ(parse_collectives("peer"), Algorithm::Peer);
  EXPECT_THROW(parse_collectives("tree"), Error);
}

TEST(ParallelGrid, TpLargerThanOneRankIsAnError) {
  LocalComm world;
  try {
    ParallelGrid grid(world, 2);
    ADD_FAILURE() << "tp 2 on one rank was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor-parallel size 2 does not divide the world size 1"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ParallelGrid(world, 0), Error);
  GridOptions stages;
  stages.pp = 2;
  try {
    ParallelGrid grid(world, stages);
    ADD_FAILURE() << "pp 2 on one rank was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline-parallel size 2 = 2 does not divide the world size 1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nd::dist
