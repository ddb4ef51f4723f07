// RingComm (ring_comm.h): the Comm collectives in terms of the ring's in-place halves, with the
// copies between the caller's buffers and the ring's layout on the wrapped comm's stream.
#include "dist/comm/ring_comm.h"

#include "dist/comm/p2p_collectives.h"

namespace nd::dist {

RingComm::RingComm(Comm& inner, const RingOptions& options) : ForwardingComm(inner), options_(options) {}

RingComm::RingComm(std::unique_ptr<Comm> inner, const RingOptions& options)
    : ForwardingComm(std::move(inner)), options_(options) {}

// A destructor must not throw: a failed synchronisation (an aborted comm) is left alone.
RingComm::~RingComm() {
  if (staging_.empty()) return;
  try {
    inner_.synchronize();
  } catch (...) {
  }
}

CommWork RingComm::allreduce_async(Tensor& buffer, ReduceOp op) {
  if (op == ReduceOp::Max || size() == 1) return inner_.allreduce_async(buffer, op);
  return ring_allreduce_async(inner_, buffer, op, options_);
}

CommWork RingComm::reduce_scatter_async(const Tensor& input, Tensor& output, ReduceOp op) {
  if (op == ReduceOp::Max || size() == 1) return inner_.reduce_scatter_async(input, output, op);
  check_reduce_scatter(*this, input, output);
  check_reducible(input, "reduce_scatter input");
  Tensor flat = staging(input.numel(), input.dtype());
  inner_.order_after_compute();  // the copy reads what compute wrote
  inner_.stream_copy(flat, input);
  // Its CommWork is covered by the one recorded after the copy out, on the same stream.
  (void)ring_reduce_scatter_async(inner_, flat, op, options_);
  const RingChunk mine = ring_chunk(flat.numel(), size(), rank());
  Tensor out = output.view({-1});
  inner_.stream_copy(out, flat.narrow(mine.begin, mine.size));
  return inner_.record_work();
}

CommWork RingComm::all_gather_async(const Tensor& input, Tensor& output) {
  if (size() == 1) return inner_.all_gather_async(input, output);
  check_all_gather(*this, input, output);
  const RingChunk mine = ring_chunk(output.numel(), size(), rank());
  Tensor block = output.view({-1}).narrow(mine.begin, mine.size);
  inner_.order_after_compute();
  if (block.raw_data() != input.raw_data()) inner_.stream_copy(block, input);  // not in place
  return ring_all_gather_async(inner_, output, options_);
}

CommWork RingComm::broadcast_async(Tensor& buffer, int root) {
  return chain_broadcast_async(inner_, buffer, root, options_);
}

CommWork RingComm::all_to_all_async(const Tensor& input, Tensor& output) {
  return pairwise_all_to_all_async(inner_, input, output, options_);
}

std::unique_ptr<Comm> RingComm::split(int color, int key) {
  return std::make_unique<RingComm>(inner_.split(color, key), options_);
}

Tensor RingComm::staging(int64_t numel, DType dtype) {
  Tensor& buffer = staging_[dtype];
  if (!buffer.defined() || buffer.numel() < numel) {
    inner_.synchronize();  // queued ring work may still read the old buffer
    buffer = Tensor();
    buffer = Tensor::empty({numel}, dtype, device());
  }
  return buffer.narrow(0, numel);
}

}  // namespace nd::dist
