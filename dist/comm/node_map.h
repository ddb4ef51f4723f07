// Which node each rank of the world runs on, so the grid keeps tensor-parallel groups inside a node
// and the hierarchical all-reduce knows its two levels. The nodes come from the MPI library (a
// shared-memory split of the world), so mpirun, srun and any other launcher agree; or every k
// consecutive ranks count as a node (--ranks-per-node k: a multi-node layout tried on one machine).
#pragma once
#include <string>
#include <vector>

#include "dist/comm/comm.h"

namespace nd::dist {

struct NodeMap {
  std::vector<int> node_of_rank;  // by world rank; nodes numbered 0, 1, ... in order of their first rank

  int node(int rank) const { return node_of_rank.at(rank); }
  int nodes() const;
  // Ranks on node `index`, and the most on any node.
  int ranks_on(int index) const;
  int max_ranks_per_node() const;
  bool even() const;  // every node holds as many ranks
};

// Every k consecutive ranks of `world_size` form a node (the last node may hold fewer).
NodeMap nodes_of_consecutive_ranks(int world_size, int k);

// Takes this process's node from MPI's shared-memory split of MPI_COMM_WORLD, once (collective over
// MPI_COMM_WORLD; make_world_comm calls it).
void remember_node();

// Collective over `world`, any comm whose ranks all ran remember_node() (the world of
// make_world_comm, or a split of it): with ranks_per_node > 0 every that many consecutive ranks
// (every rank must pass the same; checked), else the nodes remember_node() found, numbered in order
// of their first rank in `world`. A comm of one rank is one node. Indexed by rank in `world`.
NodeMap discover_nodes(Comm& world, int ranks_per_node = 0);

// "" when every tensor-parallel group (tp consecutive ranks of the grid) lies inside one node; else
// a sentence naming the first group that crosses, the tp size and the node shape.
std::string tp_crossing_nodes(const NodeMap& nodes, int tp);

// "2 nodes x 4 ranks per node; tp 4 inside a node, dp 2 across nodes" for the train header: where
// each axis of size > 1 of a (tp, dp, pp) grid laid out tp fastest, then dp, then pp, lives.
std::string describe_placement(const NodeMap& nodes, int tp, int pp);

}  // namespace nd::dist
