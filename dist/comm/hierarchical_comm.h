// HierarchicalComm: a RingComm whose Sum/Avg all-reduce goes in two levels, as across nodes it
// should: a ring reduce-scatter inside each node, a ring all-reduce of each shard across the nodes
// (between the ranks with the same place in their node, so only 1/L of the buffer crosses the
// network per rank, L ranks per node), and a ring all-gather inside the node. Everything else
// (reduce-scatter, all-gather, Max, point-to-point) is the flat RingComm's. The grid hands these
// out for `--collectives hierarchical`; the data-parallel engine uses whatever comm it is given.
#pragma once
#include <memory>
#include <string>

#include "dist/comm/ring_comm.h"

namespace nd::dist {

class HierarchicalComm : public RingComm {
 public:
  // Collective over `inner`: `node` is this rank's node (dist/comm/node_map.h), any number >= 0 the
  // ranks of one node share. Splits `inner` into the node's comm and the comm across nodes when
  // there are two levels: more than one node, more than one rank on each, as many on every node
  // (else the shards would not line up, and the all-reduce is the flat ring). `inner` must
  // outlive this comm, or is owned.
  HierarchicalComm(Comm& inner, int node, const RingOptions& options = {});
  HierarchicalComm(std::unique_ptr<Comm> inner, int node, const RingOptions& options = {});

  CommWork allreduce_async(Tensor& buffer, ReduceOp op) override;
  // A HierarchicalComm around the wrapped comm's split, same node and options.
  std::unique_ptr<Comm> split(int color, int key) override;

  // Fault handling (dist/parallel/fault_guard.h) covers the level comms too: the two-level all-reduce can
  // block inside either, and an error there (an NCCL communicator of their own) is not the
  // wrapped comm's. The first non-empty error of the wrapped, node and cross comm, named by
  // level; abort() aborts all three. Safe from the watchdog thread: the level comms are built
  // in the constructor and live as long as this comm.
  std::string async_error() override;
  void abort() override;

  // With two levels only (otherwise neither is built and the all-reduce is the flat ring):
  Comm& node_comm() const { return *node_; }    // the ranks of this comm on this node
  Comm& cross_comm() const { return *cross_; }  // one rank per node: those with this rank's place in theirs
  bool two_levels() const { return two_levels_; }

 private:
  void build();

  int node_id_;
  std::unique_ptr<Comm> node_;
  std::unique_ptr<Comm> cross_;
  bool two_levels_ = false;  // nodes even, more than one node, more than one rank per node
};

}  // namespace nd::dist
