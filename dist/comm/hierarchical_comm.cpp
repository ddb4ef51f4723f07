// HierarchicalComm (hierarchical_comm.h): the two-level all-reduce from the ring's halves. Each
// level runs on a comm (and, on the GPU, a stream) of its own, so a level waits for the one before
// through the compute stream (Comm's contract, rule 3), never on the host.
#include "dist/comm/hierarchical_comm.h"

#include <map>
#include <vector>

namespace nd::dist {

HierarchicalComm::HierarchicalComm(Comm& inner, int node, const RingOptions& options)
    : RingComm(inner, options), node_id_(node) {
  build();
}

HierarchicalComm::HierarchicalComm(std::unique_ptr<Comm> inner, int node, const RingOptions& options)
    : RingComm(std::move(inner), options), node_id_(node) {
  build();
}

void HierarchicalComm::build() {
  ND_CHECK(node_id_ >= 0, "HierarchicalComm: node " << node_id_ << " must be >= 0");
  // Every rank learns every member's node (one host reduction), so all decide alike, and the
  // level comms (with NCCL, a communicator each) are built only where two levels exist: not for
  // a group inside one node (tp), not for one rank per node.
  std::vector<int64_t> nodes(size(), 0);
  nodes[rank()] = node_id_ + 1;
  inner().host_allreduce(nodes.data(), size(), HostReduce::Sum);
  std::map<int64_t, int> per_node;
  for (int64_t node : nodes) ++per_node[node];
  bool even = true;
  for (const auto& [node, count] : per_node) even = even && count == per_node.begin()->second;
  const int ranks_per_node = per_node.begin()->second;
  two_levels_ = even && per_node.size() > 1 && ranks_per_node > 1;
  if (!two_levels_) return;
  node_ = inner().split(node_id_, rank());
  cross_ = inner().split(node_->rank(), rank());
}

CommWork HierarchicalComm::allreduce_async(Tensor& buffer, ReduceOp op) {
  // One level (one node, one rank per node, uneven nodes) is the flat ring; Max is the backend's.
  if (!two_levels_ || op == ReduceOp::Max) return RingComm::allreduce_async(buffer, op);
  check_comm_buffer(*this, buffer, "allreduce buffer");
  check_reducible(buffer, "allreduce buffer");
  Tensor flat = buffer.view({-1});
  // Avg averages at both levels: 1/L inside the node, then 1/C across, is 1/(L C) = 1/size().
  ring_reduce_scatter_async(*node_, flat, op, options()).wait();
  const RingChunk mine = ring_chunk(flat.numel(), node_->size(), node_->rank());
  // The ranks of one cross comm share a place in their nodes, hence a chunk size: all skip or none.
  if (mine.size > 0) {
    Tensor shard = flat.narrow(mine.begin, mine.size);
    ring_allreduce_async(*cross_, shard, op, options()).wait();
  }
  return ring_all_gather_async(*node_, flat, options());
}

std::string HierarchicalComm::async_error() {
  std::string error = RingComm::async_error();
  if (!error.empty() || !two_levels_) return error;
  error = node_->async_error();
  if (!error.empty()) return "the node level's comm: " + error;
  error = cross_->async_error();
  if (!error.empty()) return "the cross-node level's comm: " + error;
  return "";
}

void HierarchicalComm::abort() {
  // The level comms first: the main thread is more likely blocked in one of them than in the
  // wrapped comm, and each abort may take a while (the guard bounds them all together).
  if (two_levels_) {
    node_->abort();
    cross_->abort();
  }
  RingComm::abort();
}

std::unique_ptr<Comm> HierarchicalComm::split(int color, int key) {
  return std::make_unique<HierarchicalComm>(inner().split(color, key), node_id_, options());
}

}  // namespace nd::dist
