// Where ranks are (mpirun -np 4 and 6 on one machine): MPI's shared-memory split puts every rank
// on one node; two ranks per node asked for makes nodes of two, the grid keeps each tp group inside
// one, refuses a tp that would cross (on every rank, naming the numbers) and allows it with
// allow_cross_node_tp.
#include <gtest/gtest.h>

#include <vector>

#include "dist/comm/node_map.h"
#include "dist/parallel/parallel_grid.h"
#include "dist/comm/world.h"

namespace nd::dist {
namespace {

TEST(NodeMapMpi, OneMachineIsOneNode) {
  auto world = make_world_comm(Device::cpu());
  NodeMap map = discover_nodes(*world);
  ASSERT_EQ(static_cast<int>(map.node_of_rank.size()), world->size());
  EXPECT_EQ(map.nodes(), 1);
  EXPECT_EQ(local_place(MPI_COMM_WORLD).size, world->size());
}

TEST(NodeMapMpi, PretendNodesOfTwoKeepTpInsideANode) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size(), w = world->rank();
  NodeMap map = discover_nodes(*world, 2);
  EXPECT_EQ(map.nodes(), n / 2);
  EXPECT_EQ(map.node(w), w / 2);

  GridOptions shape;
  shape.tp = 2;
  shape.ranks_per_node = 2;
  ParallelGrid grid(*world, shape);
  // Every member of this rank's tp group reports its node: all must be this rank's.
  Comm& tp = grid.tp();
  Tensor nodes = Tensor::zeros({tp.size()});
  nodes.data<float>()[tp.rank()] = static_cast<float>(w / 2 + 1);
  tp.allreduce(nodes, ReduceOp::Sum);
  for (double node : nodes.to_double_vector()) EXPECT_EQ(node, w / 2 + 1);
  EXPECT_NE(describe_placement(grid.nodes(), 2, 1).find("tp 2 inside a node, dp " + std::to_string(n / 2) + " across nodes"),
            std::string::npos);
}

TEST(NodeMapMpi, TpAcrossPretendNodesIsRefusedOrAllowed) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size();
  int tp = 3;  // the smallest tp above 2 that divides the world: 4 at np 4, 3 at np 6
  while (n % tp != 0) ++tp;
  GridOptions shape;
  shape.tp = tp;
  shape.ranks_per_node = 2;
  try {
    ParallelGrid grid(*world, shape);
    ADD_FAILURE() << "tp " << tp << " across nodes of 2 was accepted";
  } catch (const Error& e) {
    const std::string message = e.message();
    EXPECT_NE(message.find("tensor-parallel size " + std::to_string(tp) + " crosses nodes"), std::string::npos)
        << message;
    EXPECT_NE(message.find("ranks 0-" + std::to_string(tp - 1)), std::string::npos) << message;
    EXPECT_NE(message.find("--allow-cross-node-tp"), std::string::npos) << message;
  }
  shape.allow_cross_node_tp = true;
  ParallelGrid allowed(*world, shape);
  EXPECT_EQ(allowed.tp_size(), tp);
  // The world is still usable after the refusal.
  Tensor one = Tensor::ones({3});
  world->allreduce(one, ReduceOp::Sum);
  EXPECT_EQ(one.to_double_vector()[2], n);
}

}  // namespace
}  // namespace nd::dist
