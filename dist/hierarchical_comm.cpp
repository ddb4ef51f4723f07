// HierarchicalComm (hierarchical_comm.h): the two-level all-reduce from the ring's halves. Each
// level runs on a comm (and, on the GPU, a stream) of its own, so a level waits for the one before
// through the compute stream (Comm's contract, rule 3), never on the host.
#include "dist/hierarchical_comm.h"

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
  node_ = inner().split(node_id_, rank());
  cross_ = inner().split(node_->rank(), rank());
  // Shards line up only when every node holds as many ranks: agree on the smallest and largest.
  int64_t sizes[2] = {node_->size(), -node_->size()};
  inner().host_allreduce(sizes, 2, HostReduce::Max);
  const bool even = sizes[0] == -sizes[1];
  two_levels_ = even && node_->size() > 1 && cross_->size() > 1;
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

std::unique_ptr<Comm> HierarchicalComm::split(int color, int key) {
  return std::make_unique<HierarchicalComm>(inner().split(color, key), node_id_, options());
}

}  // namespace nd::dist
