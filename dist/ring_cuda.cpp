// The ring on GPU buffers through an NcclComm. Transfers run on the comm's stream, each step
// slice one ncclGroup of send-to-next + recv-from-previous into a staging slot; reductions run
// on the side stream. Events order them: a reduction waits for its slice's arrival; a transfer
// waits for the reduction whose result it sends and for its staging slot to be free. The host
// never waits, so slice i+1 moves while slice i is reduced. With one slice per chunk (small
// buffers) everything runs on the comm stream, which has the lowest latency.
#include "dist/ring_drivers.h"

#if NANODIST_WITH_CUDA
#include "dist/nccl_comm.h"
#include "dist/ring_schedule.h"
#include "kernels/cuda/reduce.h"
#include "tensor/cuda_check.h"

namespace nd::dist::ring {

namespace {

constexpr int kStagingSlots = 4;

NcclComm& as_nccl(Comm& comm) {
  auto* nccl = dynamic_cast<NcclComm*>(&comm);
  ND_CHECK(nccl != nullptr, "the GPU ring needs an NcclComm, got a " << comm.backend() << " comm");
  return *nccl;
}

// dst (n) = (dst + src) * scale, on `stream`.
void reduce_into(const Tensor& dst, const Tensor& src, float scale, cudaStream_t stream) {
  if (dst.dtype() == DType::F32) {
    cuda::reduce_add(dst.data<float>(), src.data<float>(), dst.numel(), scale, stream);
  } else {
    cuda::reduce_add(dst.data<bf16>(), src.data<bf16>(), dst.numel(), scale, stream);
  }
}

// One grouped step on the comm stream; empty slices are skipped alike on both sides.
void exchange(NcclComm& comm, const Tensor& out, Tensor& in) {
  int r = comm.rank(), n = comm.size();
  comm.group_start();
  if (out.numel() > 0) comm.send(out, next_rank(r, n));
  if (in.numel() > 0) comm.recv(in, prev_rank(r, n));
  comm.post_group();
}

}  // namespace

void cuda_reduce_scatter(Comm& base, Tensor& flat, ReduceOp op, int64_t slice_elems) {
  NcclComm& comm = as_nccl(base);
  const int r = comm.rank(), n = comm.size();
  const int64_t count = flat.numel();
  const int nslices = slices_per_chunk(count, n, slice_elems);
  const int64_t longest_slice = slice_of(ring_chunk(count, n, 0), nslices, 0).size;
  const int slots = std::min(nslices, kStagingSlots);
  Tensor staging = comm.scratch(slots * longest_slice, flat.dtype()).view({slots, longest_slice});
  const int total = (n - 1) * nslices;  // items in order (step, slice)
  cudaStream_t transfers = comm.stream();
  cudaStream_t reductions = nslices == 1 ? transfers : comm.side_stream();
  CUDA_CHECK(cudaSetDevice(comm.device().index));
  comm.order_after_compute();

  for (int i = 0; i < total; ++i) {
    const int step = i / nslices, s = i % nslices;
    RingChunk out = slice_of(ring_chunk(count, n, rs_send_chunk(r, step, n)), nslices, s);
    RingChunk in = slice_of(ring_chunk(count, n, rs_recv_chunk(r, step, n)), nslices, s);
    Tensor landing = staging.select(i % slots).narrow(0, in.size);
    if (nslices > 1 && i >= slots) {
      // Reductions finish in order, so waiting for item i-slots covers both the slot's last
      // reader and (slots <= nslices) the reduction of the slice this item sends.
      CUDA_CHECK(cudaStreamWaitEvent(transfers, comm.event(2 * (i - slots) + 1), 0));
    }
    exchange(comm, flat.narrow(out.begin, out.size), landing);
    if (nslices > 1) {
      CUDA_CHECK(cudaEventRecord(comm.event(2 * i), transfers));
      CUDA_CHECK(cudaStreamWaitEvent(reductions, comm.event(2 * i), 0));
    }
    const bool last_step = step == n - 2;
    const float scale = (last_step && op == ReduceOp::Avg) ? 1.0f / static_cast<float>(n) : 1.0f;
    reduce_into(flat.narrow(in.begin, in.size), landing, scale, reductions);
    if (nslices > 1) CUDA_CHECK(cudaEventRecord(comm.event(2 * i + 1), reductions));
  }
  // Whatever runs next on the comm stream (the all-gather, the caller) sees finished chunks.
  if (nslices > 1) CUDA_CHECK(cudaStreamWaitEvent(transfers, comm.event(2 * (total - 1) + 1), 0));
}

// No reduction to overlap: each step moves a whole chunk straight into place.
void cuda_all_gather(Comm& base, Tensor& flat) {
  NcclComm& comm = as_nccl(base);
  const int r = comm.rank(), n = comm.size();
  const int64_t count = flat.numel();
  comm.order_after_compute();
  for (int step = 0; step < n - 1; ++step) {
    RingChunk out = ring_chunk(count, n, ag_send_chunk(r, step, n));
    RingChunk in = ring_chunk(count, n, ag_recv_chunk(r, step, n));
    Tensor in_view = flat.narrow(in.begin, in.size);
    exchange(comm, flat.narrow(out.begin, out.size), in_view);
  }
}

// One group: the whole buffer to every peer, every peer's buffer into row `peer` of a staging
// (n, count); then one kernel sums the rows in rank order (this rank's row read from the buffer
// itself), identically on every rank.
void cuda_direct_allreduce(Comm& base, Tensor& flat, ReduceOp op) {
  NcclComm& comm = as_nccl(base);
  const int r = comm.rank(), n = comm.size();
  const int64_t count = flat.numel();
  Tensor rows = comm.scratch(n * count, flat.dtype()).view({n, count});
  cudaStream_t stream = comm.stream();
  CUDA_CHECK(cudaSetDevice(comm.device().index));
  comm.order_after_compute();
  comm.group_start();
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    comm.send(flat, peer);
    Tensor row = rows.select(peer);
    comm.recv(row, peer);
  }
  comm.post_group();
  const float scale = op == ReduceOp::Avg ? 1.0f / static_cast<float>(n) : 1.0f;
  if (flat.dtype() == DType::F32) {
    cuda::reduce_rows(flat.data<float>(), rows.data<float>(), n, count, scale, r, stream);
  } else {
    cuda::reduce_rows(flat.data<bf16>(), rows.data<bf16>(), n, count, scale, r, stream);
  }
}

}  // namespace nd::dist::ring
#endif
