// The ring on GPU buffers through an NcclComm. Transfers run on the comm's stream, each step
// slice one ncclGroup of send + recv per lane (GpuRingPlan) into a staging slot; reductions run
// on the side stream. Events order them: a reduction waits for its slice's arrival; a transfer
// waits for the reduction whose result it sends and for its staging slot to be free. The host
// never waits, so slice i+1 moves while slice i is reduced. With one slice per chunk (small
// buffers) everything runs on the comm stream, which has the lowest latency. The entry points
// (ring_allreduce.cpp) order the ring after the compute stream and record its CommWork.
#include "dist/comm/ring_drivers.h"

#if NANODIST_WITH_CUDA
#include "dist/comm/nccl_comm.h"
#include "dist/comm/ring_schedule.h"
#include "kernels/cuda/reduce.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"

namespace nd::dist::ring {

namespace {

constexpr int kStagingSlots = 4;

NcclComm& as_nccl(Comm& comm) {
  auto* nccl = dynamic_cast<NcclComm*>(&comm);
  ND_CHECK(nccl != nullptr, "the GPU ring needs an NcclComm, got a " << comm.backend() << " comm");
  return *nccl;
}

// dst (n) = (dst + src) * scale, on `stream`, on at most max_blocks blocks (0: any).
void reduce_into(const Tensor& dst, const Tensor& src, float scale, cudaStream_t stream, int max_blocks) {
  if (dst.dtype() == DType::F32) {
    cuda::reduce_add(dst.data<float>(), src.data<float>(), dst.numel(), scale, stream, max_blocks);
  } else if (dst.dtype() == DType::F16) {
    cuda::reduce_add(dst.data<f16>(), src.data<f16>(), dst.numel(), scale, stream, max_blocks);
  } else {
    cuda::reduce_add(dst.data<bf16>(), src.data<bf16>(), dst.numel(), scale, stream, max_blocks);
  }
}

// Blocks for a reduction that runs beside a transfer: half the SMs. A grid that fills the GPU
// delays the next NCCL transfer kernel (one CTA per channel, up to 64), whose CTAs wait for
// SMs (measured as a loss at the largest sizes), and half the SMs still reduce far faster than the
// link.
int overlapped_reduce_blocks(int device) { return std::max(1, multiprocessor_count(device) / 2); }

// Slice s (of nslices) of lane `lane`'s part of chunk `chunk`, as buffer positions; every rank
// cuts alike, so a sender's slice and its receiver's have the same length.
RingChunk piece(int64_t count, int n, int chunk, int lanes, int lane, int nslices, int s) {
  return slice_of(slice_of(ring_chunk(count, n, chunk), lanes, lane), nslices, s);
}

// Posts lane `lane`'s half of a step inside the caller's group; empty slices are skipped alike
// on both sides. With 2 ranks both lanes talk to the one peer, and NCCL matches its sends and
// receives in posting order, which is lane order on both ranks.
void post_lane(NcclComm& comm, int lane, const Tensor& out, Tensor& in) {
  int r = comm.rank(), n = comm.size(), dir = lane_dir(lane);
  if (out.numel() > 0) comm.send(out, wrap(r + dir, n));
  if (in.numel() > 0) comm.recv(in, wrap(r - dir, n));
}

}  // namespace

void cuda_reduce_scatter(Comm& base, Tensor& flat, ReduceOp op, const GpuRingPlan& plan) {
  NcclComm& comm = as_nccl(base);
  const int r = comm.rank(), n = comm.size(), lanes = plan.lanes;
  const int64_t count = flat.numel();
  ND_CHECK(lanes == 1 || lanes == 2, "GPU ring: " << lanes << " lanes (expected 1 or 2)");
  // Chunk 0 is the longest chunk and its lane-0 part the longest part.
  const int64_t longest_part = slice_of(ring_chunk(count, n, 0), lanes, 0).size;
  const int nslices = slices_per_chunk(longest_part, 1, plan.slice_elems);
  const int64_t longest_slice = ring_chunk(longest_part, nslices, 0).size;
  const int slots = std::min(nslices, kStagingSlots);
  Tensor staging = comm.scratch(slots * lanes * longest_slice, flat.dtype()).view({slots, lanes, longest_slice});
  const int total = (n - 1) * nslices;  // items in order (step, slice)
  cudaStream_t transfers = comm.stream();
  cudaStream_t reductions = nslices == 1 ? transfers : comm.side_stream();
  CUDA_CHECK(cudaSetDevice(comm.device().index));
  const int reduce_blocks = nslices == 1 ? 0 : overlapped_reduce_blocks(comm.device().index);

  for (int i = 0; i < total; ++i) {
    const int step = i / nslices, s = i % nslices;
    if (nslices > 1 && i >= slots) {
      // Reductions finish in order, so waiting for item i-slots covers both the slot's last
      // reader and (slots <= nslices) the reduction of the slice this item sends.
      CUDA_CHECK(cudaStreamWaitEvent(transfers, comm.event(2 * (i - slots) + 1), 0));
    }
    RingChunk in[2];
    Tensor landing[2];
    comm.group_start();
    for (int lane = 0; lane < lanes; ++lane) {
      const int dir = lane_dir(lane);
      RingChunk out = piece(count, n, rs_send_chunk(r, step, n, dir), lanes, lane, nslices, s);
      in[lane] = piece(count, n, rs_recv_chunk(r, step, n, dir), lanes, lane, nslices, s);
      landing[lane] = staging.select(i % slots).select(lane).narrow(0, in[lane].size);
      post_lane(comm, lane, flat.narrow(out.begin, out.size), landing[lane]);
    }
    comm.post_group();
    if (nslices > 1) {
      CUDA_CHECK(cudaEventRecord(comm.event(2 * i), transfers));
      CUDA_CHECK(cudaStreamWaitEvent(reductions, comm.event(2 * i), 0));
    }
    const bool last_step = step == n - 2;
    const float scale = last_step ? reduce_scale(op, n) : 1.0f;
    for (int lane = 0; lane < lanes; ++lane)
      if (in[lane].size > 0)
        reduce_into(flat.narrow(in[lane].begin, in[lane].size), landing[lane], scale, reductions, reduce_blocks);
    if (nslices > 1) CUDA_CHECK(cudaEventRecord(comm.event(2 * i + 1), reductions));
  }
  // Whatever runs next on the comm stream (the all-gather, the caller) sees finished chunks.
  if (nslices > 1) CUDA_CHECK(cudaStreamWaitEvent(transfers, comm.event(2 * (total - 1) + 1), 0));
}

// No reduction to overlap: each step moves whole chunk parts straight into place.
void cuda_all_gather(Comm& base, Tensor& flat, int lanes) {
  NcclComm& comm = as_nccl(base);
  const int r = comm.rank(), n = comm.size();
  const int64_t count = flat.numel();
  ND_CHECK(lanes == 1 || lanes == 2, "GPU ring: " << lanes << " lanes (expected 1 or 2)");
  for (int step = 0; step < n - 1; ++step) {
    comm.group_start();
    for (int lane = 0; lane < lanes; ++lane) {
      const int dir = lane_dir(lane);
      RingChunk out = piece(count, n, ag_send_chunk(r, step, n, dir), lanes, lane, 1, 0);
      RingChunk in = piece(count, n, ag_recv_chunk(r, step, n, dir), lanes, lane, 1, 0);
      Tensor in_view = flat.narrow(in.begin, in.size);
      post_lane(comm, lane, flat.narrow(out.begin, out.size), in_view);
    }
    comm.post_group();
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
  comm.group_start();
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    comm.send(flat, peer);
    Tensor row = rows.select(peer);
    comm.recv(row, peer);
  }
  comm.post_group();
  const float scale = reduce_scale(op, n);
  if (flat.dtype() == DType::F32) {
    cuda::reduce_rows(flat.data<float>(), rows.data<float>(), n, count, scale, r, stream);
  } else if (flat.dtype() == DType::F16) {
    cuda::reduce_rows(flat.data<f16>(), rows.data<f16>(), n, count, scale, r, stream);
  } else {
    cuda::reduce_rows(flat.data<bf16>(), rows.data<bf16>(), n, count, scale, r, stream);
  }
}

}  // namespace nd::dist::ring
#endif
