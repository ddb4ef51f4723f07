// Entry points of the ring: argument checks, the layout agreement between ranks, option
// defaults per device, the ordering contract (dist/comm/comm.h) around the hand-off to the CPU or GPU
// driver (dist/ring_*.cpp).
#include "dist/comm/ring_allreduce.h"

#include <algorithm>

#include "dist/comm/ring_drivers.h"
#include "dist/comm/ring_schedule.h"

namespace nd::dist {

namespace {

constexpr int64_t kCpuSliceBytes = 256 << 10;
constexpr int64_t kGpuDirectMaxBytes = 64 << 10;
// GPU slicing, from sweeps on 2 and 4 GPUs over NVLink: a NCCL send/recv moves more bytes per
// second the larger it is (more channels, fewer handshakes), so a lane's part of a chunk goes
// in one piece up to 32 MiB (its unhidden reduction costs less than halving the transfers)
// and in slices of at most kGpuMaxSliceBytes, at least two, above that.
constexpr int64_t kGpuPipelineAboveBytes = 32 << 20;
constexpr int64_t kGpuMaxSliceBytes = 128 << 20;

// Checks the buffer and, when asked, that every rank passes the same layout; then orders the
// ring after the compute stream. Returns false when there is nothing to do (one rank or an
// empty buffer).
bool prepare(Comm& comm, const Tensor& buffer, const RingOptions& options, const char* what, CollectiveOp op,
             int detail) {
  check_comm_buffer(comm, buffer, what);
  if (op != CollectiveOp::AllGather) check_reducible(buffer, what);
  if (comm.size() == 1) return false;
  if (options.check_sizes) comm.agree_on_layout(op, Algorithm::Ring, buffer, detail);
  if (buffer.numel() == 0) return false;
  comm.order_after_compute();
  return true;
}

int64_t cpu_slice_elems(const Tensor& buffer, const RingOptions& options) {
  const int64_t elem = static_cast<int64_t>(dtype_size(buffer.dtype()));
  return std::max<int64_t>(1, (options.slice_bytes > 0 ? options.slice_bytes : kCpuSliceBytes) / elem);
}

#if NANODIST_WITH_CUDA
ring::GpuRingPlan gpu_plan(const Comm& comm, const Tensor& buffer, const RingOptions& options) {
  ND_CHECK(options.lanes >= 0 && options.lanes <= 2, "RingOptions.lanes " << options.lanes << " must be 0, 1 or 2");
  const int64_t elem = static_cast<int64_t>(dtype_size(buffer.dtype()));
  ring::GpuRingPlan plan;
  plan.lanes = options.lanes > 0 ? options.lanes : (comm.size() > 2 ? 2 : 1);
  if (options.slice_bytes > 0) {
    plan.slice_elems = std::max<int64_t>(1, options.slice_bytes / elem);
    return plan;
  }
  // Chunk 0 is the longest chunk and its lane-0 part the longest part.
  const int64_t part = ring::slice_of(ring_chunk(buffer.numel(), comm.size(), 0), plan.lanes, 0).size;
  if (part * elem <= kGpuPipelineAboveBytes) {
    plan.slice_elems = part;
    return plan;
  }
  const int64_t max_slice = kGpuMaxSliceBytes / elem;
  const int64_t nslices = std::max<int64_t>(2, (part + max_slice - 1) / max_slice);
  plan.slice_elems = (part + nslices - 1) / nslices;
  return plan;
}
#endif

int64_t direct_max_bytes(const Comm& comm, const RingOptions& options) {
  if (options.direct_max_bytes >= 0) return options.direct_max_bytes;
  return comm.device().is_cuda() ? kGpuDirectMaxBytes : 0;
}

void reduce_scatter_flat(Comm& comm, Tensor& flat, ReduceOp op, const RingOptions& options) {
#if NANODIST_WITH_CUDA
  if (comm.device().is_cuda()) return ring::cuda_reduce_scatter(comm, flat, op, gpu_plan(comm, flat, options));
#endif
  ND_CHECK(comm.device().is_cpu(), "ring on " << comm.device().str() << " needs a CUDA build");
  ring::cpu_reduce_scatter(comm, flat, op, cpu_slice_elems(flat, options));
}

void all_gather_flat(Comm& comm, Tensor& flat, const RingOptions& options) {
#if NANODIST_WITH_CUDA
  if (comm.device().is_cuda()) return ring::cuda_all_gather(comm, flat, gpu_plan(comm, flat, options).lanes);
#endif
  ND_CHECK(comm.device().is_cpu(), "ring on " << comm.device().str() << " needs a CUDA build");
  ring::cpu_all_gather(comm, flat);
}

void direct_allreduce_flat(Comm& comm, Tensor& flat, ReduceOp op) {
#if NANODIST_WITH_CUDA
  if (comm.device().is_cuda()) return ring::cuda_direct_allreduce(comm, flat, op);
#endif
  ring::cpu_direct_allreduce(comm, flat, op);
}

}  // namespace

RingChunk ring_chunk(int64_t count, int nranks, int index) {
  ND_CHECK(nranks >= 1 && index >= 0 && index < nranks && count >= 0,
           "ring_chunk: chunk " << index << " of " << nranks << " over " << count << " elements");
  int64_t base = count / nranks, extra = count % nranks;
  return {index * base + std::min<int64_t>(index, extra), base + (index < extra ? 1 : 0)};
}

CommWork ring_allreduce_async(Comm& comm, Tensor& buffer, ReduceOp op, const RingOptions& options) {
  ND_CHECK(op != ReduceOp::Max, "ring_allreduce sums or averages; take the backend's all-reduce for max");
  if (!prepare(comm, buffer, options, "ring_allreduce buffer", CollectiveOp::AllReduce, static_cast<int>(op)))
    return CommWork();
  Tensor flat = buffer.view({-1});
  if (static_cast<int64_t>(flat.nbytes()) <= direct_max_bytes(comm, options)) {
    direct_allreduce_flat(comm, flat, op);
  } else {
    reduce_scatter_flat(comm, flat, op, options);
    all_gather_flat(comm, flat, options);
  }
  return comm.record_work();
}

CommWork ring_reduce_scatter_async(Comm& comm, Tensor& buffer, ReduceOp op, const RingOptions& options) {
  ND_CHECK(op != ReduceOp::Max, "ring_reduce_scatter sums or averages; take the backend's for max");
  if (!prepare(comm, buffer, options, "ring_reduce_scatter buffer", CollectiveOp::ReduceScatter, static_cast<int>(op)))
    return CommWork();
  Tensor flat = buffer.view({-1});
  reduce_scatter_flat(comm, flat, op, options);
  return comm.record_work();
}

CommWork ring_all_gather_async(Comm& comm, Tensor& buffer, const RingOptions& options) {
  if (!prepare(comm, buffer, options, "ring_all_gather buffer", CollectiveOp::AllGather, 0)) return CommWork();
  Tensor flat = buffer.view({-1});
  all_gather_flat(comm, flat, options);
  return comm.record_work();
}

}  // namespace nd::dist
