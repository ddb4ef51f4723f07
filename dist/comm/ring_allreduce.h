// The from-scratch ring all-reduce: reduce-scatter in N-1 steps, then all-gather in N-1 steps,
// each step one grouped send-to-next / recv-from-previous through Comm (on GPU also the mirror
// image, send-to-previous / recv-from-next, for the second half of every chunk), with a local
// reduce kernel; chunks are cut into slices so the transfer of one slice overlaps the reduction
// of another. No backend collective is used. CPU buffers on MpiComm/LocalComm, GPU on NcclComm.
// Ordered like the native collectives (Comm's contract in dist/comm/comm.h): `_async` returns a
// CommWork, the plain forms wait for it.
#pragma once
#include <cstdint>

#include "dist/comm/comm.h"

namespace nd::dist {

struct RingOptions {
  // Slice length in bytes for the reduce-scatter pipeline; 0 picks one for the device (256 KiB
  // on CPU; on GPU one slice per chunk part up to 32 MiB, above that two slices or more).
  int64_t slice_bytes = 0;
  // GPU only: 1 runs every chunk round the ring one way; 2 sends the first half of every chunk
  // to the next rank and the second half to the previous one, so each step keeps transfers to
  // two peers in flight. 0 picks 2 above two ranks (with two, both lanes reach the one peer).
  int lanes = 0;
  // All-reduces of at most this many bytes skip the ring: each rank sends its whole buffer to
  // every other rank in one group and sums the N copies in rank order (one step instead of
  // 2(N-1), for latency-bound sizes). -1 picks one for the device (64 KiB on GPU, 0 on CPU).
  int64_t direct_max_bytes = -1;
  // Agree on the element count, dtype and op with the other ranks (Comm::agree_on_layout: one
  // small host allreduce the first time a layout is used), so a mismatch raises nd::Error on
  // every rank instead of hanging.
  bool check_sizes = true;
};

// Where chunk `index` of a ring over `nranks` lies in a buffer of `count` elements: balanced,
// the first count % nranks chunks one element longer. Chunks may be empty (count < nranks).
struct RingChunk {
  int64_t begin = 0;
  int64_t size = 0;
};
RingChunk ring_chunk(int64_t count, int nranks, int index);

// In place on `buffer` (any shape, contiguous, f32 or bf16): every rank ends with the
// reduction (sum or average) over all ranks. bf16 is summed in f32 and rounded at each step.
CommWork ring_allreduce_async(Comm& comm, Tensor& buffer, ReduceOp op = ReduceOp::Sum,
                              const RingOptions& options = {});
inline void ring_allreduce(Comm& comm, Tensor& buffer, ReduceOp op = ReduceOp::Sum, const RingOptions& options = {}) {
  ring_allreduce_async(comm, buffer, op, options).wait();
}

// The two halves, callable on their own. After ring_reduce_scatter, chunk comm.rank() of
// `buffer` (ring_chunk(numel, size, rank)) holds the reduction of that chunk over all ranks;
// the other chunks hold partial sums. ring_all_gather sends chunk r of rank r to every rank.
CommWork ring_reduce_scatter_async(Comm& comm, Tensor& buffer, ReduceOp op = ReduceOp::Sum,
                                   const RingOptions& options = {});
CommWork ring_all_gather_async(Comm& comm, Tensor& buffer, const RingOptions& options = {});
inline void ring_reduce_scatter(Comm& comm, Tensor& buffer, ReduceOp op = ReduceOp::Sum,
                                const RingOptions& options = {}) {
  ring_reduce_scatter_async(comm, buffer, op, options).wait();
}
inline void ring_all_gather(Comm& comm, Tensor& buffer, const RingOptions& options = {}) {
  ring_all_gather_async(comm, buffer, options).wait();
}

}  // namespace nd::dist
