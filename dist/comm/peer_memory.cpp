// The standard answers of peer_memory.h for comms without peer memory.
#include "dist/comm/peer_memory.h"

namespace nd::dist {

bool reduce_scatter_widens(Comm& comm, ReduceOp op) {
  PeerMemory* peer = comm.peer_memory();
  return peer && peer->reduce_scatter_widens(op);
}

bool reduce_scatter_accumulates(Comm& comm, ReduceOp op, DType in, DType out) {
  PeerMemory* peer = comm.peer_memory();
  return peer && peer->reduce_scatter_accumulates(op, in, out);
}

bool reduce_scatter_in_halves(Comm& comm, const Tensor& output, ReduceOp op) {
  PeerMemory* peer = comm.peer_memory();
  return peer && peer->reduce_scatter_in_halves(output, op);
}

CommWork all_gather_others_async(Comm& comm, const Tensor& input, Tensor& output) {
  PeerMemory* peer = comm.peer_memory();
  return peer ? peer->all_gather_others_async(input, output) : comm.all_gather_async(input, output);
}

Tensor shared_tensor(Comm& comm, const Shape& shape, DType dtype) {
  PeerMemory* peer = comm.peer_memory();
  return peer ? peer->shared_tensor(shape, dtype) : Tensor::zeros(shape, dtype, comm.device());
}

bool shares(Comm& comm, const Tensor& t) {
  PeerMemory* peer = comm.peer_memory();
  return peer && peer->shares(t);
}

Tensor gather_scratch(Comm& comm, const Shape& shape, DType dtype) {
  PeerMemory* peer = comm.peer_memory();
  return peer ? peer->gather_scratch(shape, dtype) : Tensor::empty(shape, dtype, comm.device());
}

}  // namespace nd::dist
