// The node map's pure parts: consecutive pretend nodes, the sentence naming a tp group that crosses
// nodes (and none when tp divides the ranks per node), the header's placement line.
#include <gtest/gtest.h>

#include "dist/comm/node_map.h"

namespace nd::dist {
namespace {

TEST(NodeMap, ConsecutiveRanksFormNodes) {
  NodeMap map = nodes_of_consecutive_ranks(6, 2);
  EXPECT_EQ(map.node_of_rank, (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(map.nodes(), 3);
  EXPECT_TRUE(map.even());
  NodeMap uneven = nodes_of_consecutive_ranks(6, 4);
  EXPECT_EQ(uneven.nodes(), 2);
  EXPECT_EQ(uneven.ranks_on(1), 2);
  EXPECT_EQ(uneven.max_ranks_per_node(), 4);
  EXPECT_FALSE(uneven.even());
}

TEST(NodeMap, TpCrossingNodesNamesTheNumbers) {
  NodeMap map = nodes_of_consecutive_ranks(8, 4);
  EXPECT_EQ(tp_crossing_nodes(map, 1), "");
  EXPECT_EQ(tp_crossing_nodes(map, 2), "");
  EXPECT_EQ(tp_crossing_nodes(map, 4), "");
  const std::string crossing = tp_crossing_nodes(map, 8);
  EXPECT_NE(crossing.find("tensor-parallel size 8"), std::string::npos) << crossing;
  EXPECT_NE(crossing.find("ranks 0-7 span nodes 0 to 1"), std::string::npos) << crossing;
  EXPECT_NE(crossing.find("2 nodes, at most 4 ranks per node"), std::string::npos) << crossing;
  // Round-robin placement (srun --distribution=cyclic) puts neighbours on different nodes.
  NodeMap cyclic;
  cyclic.node_of_rank = {0, 1, 0, 1};
  EXPECT_NE(tp_crossing_nodes(cyclic, 2), "");
}

TEST(NodeMap, PlacementSaysWhereEachAxisLives) {
  NodeMap map = nodes_of_consecutive_ranks(8, 4);
  EXPECT_EQ(describe_placement(map, 4, 1), "2 nodes x 4 ranks per node; tp 4 inside a node, dp 2 across nodes");
  EXPECT_EQ(describe_placement(map, 2, 1), "2 nodes x 4 ranks per node; tp 2 inside a node, dp 4 across nodes");
  EXPECT_EQ(describe_placement(map, 2, 2),
            "2 nodes x 4 ranks per node; tp 2 inside a node, dp 2 inside a node, pp 2 across nodes");
  EXPECT_EQ(describe_placement(nodes_of_consecutive_ranks(1, 1), 1, 1), "1 node x 1 rank per node");
  EXPECT_EQ(describe_placement(nodes_of_consecutive_ranks(4, 4), 1, 1), "1 node x 4 ranks per node; dp 4 inside a node");
}

}  // namespace
}  // namespace nd::dist
