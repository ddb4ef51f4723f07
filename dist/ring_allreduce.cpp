// Entry points of the ring: argument checks, the size agreement between ranks, option
// defaults per device, and the hand-off to the CPU or GPU driver (dist/ring_*.cpp).
#include "dist/ring_allreduce.h"

#include "dist/ring_drivers.h"

namespace nd::dist {

namespace {

constexpr int64_t kCpuSliceBytes = 256 << 10;
constexpr int64_t kGpuSliceBytes = 16 << 20;
constexpr int64_t kGpuMinSlicedChunkBytes = 1 << 20;
constexpr int64_t kGpuDirectMaxBytes = 64 << 10;

// Checks the buffer and, when asked, that every rank passes the same count and dtype.
// Returns false when there is nothing to do (one rank or an empty buffer).
bool prepare(Comm& comm, const Tensor& buffer, const RingOptions& options, const char* what, bool reduces = true) {
  check_comm_buffer(comm, buffer, what);
  if (reduces) check_reducible(buffer, what);
  if (comm.size() == 1) return false;
  if (options.check_sizes) check_same_buffer_on_all_ranks(comm, buffer, what);
  return buffer.numel() > 0;
}

int64_t slice_elems(const Comm& comm, const Tensor& buffer, const RingOptions& options) {
  const int64_t elem = static_cast<int64_t>(dtype_size(buffer.dtype()));
  if (options.slice_bytes > 0) return std::max<int64_t>(1, options.slice_bytes / elem);
  if (comm.device().is_cpu()) return std::max<int64_t>(1, kCpuSliceBytes / elem);
  // GPU: one slice for small chunks (each slice is a kernel launch and a NCCL handshake);
  // above that at least two, so a slice's reduction hides behind the next slice's transfer.
  const int64_t longest = ring_chunk(buffer.numel(), comm.size(), 0).size;
  if (longest * elem < kGpuMinSlicedChunkBytes) return longest;
  return std::min((longest + 1) / 2, kGpuSliceBytes / elem);
}

int64_t direct_max_bytes(const Comm& comm, const RingOptions& options) {
  if (options.direct_max_bytes >= 0) return options.direct_max_bytes;
  return comm.device().is_cuda() ? kGpuDirectMaxBytes : 0;
}

void reduce_scatter_flat(Comm& comm, Tensor& flat, ReduceOp op, const RingOptions& options) {
#if NANODIST_WITH_CUDA
  if (comm.device().is_cuda()) return ring::cuda_reduce_scatter(comm, flat, op, slice_elems(comm, flat, options));
#endif
  ND_CHECK(comm.device().is_cpu(), "ring on " << comm.device().str() << " needs a CUDA build");
  ring::cpu_reduce_scatter(comm, flat, op, slice_elems(comm, flat, options));
}

void all_gather_flat(Comm& comm, Tensor& flat) {
#if NANODIST_WITH_CUDA
  if (comm.device().is_cuda()) return ring::cuda_all_gather(comm, flat);
#endif
  ND_CHECK(comm.device().is_cpu(), "ring on " << comm.device().str() << " needs a CUDA build");
  ring::cpu_all_gather(comm, flat);
}

}  // namespace

RingChunk ring_chunk(int64_t count, int nranks, int index) {
  ND_CHECK(nranks >= 1 && index >= 0 && index < nranks && count >= 0,
           "ring_chunk: chunk " << index << " of " << nranks << " over " << count << " elements");
  int64_t base = count / nranks, extra = count % nranks;
  return {index * base + std::min<int64_t>(index, extra), base + (index < extra ? 1 : 0)};
}

void ring_allreduce(Comm& comm, Tensor& buffer, ReduceOp op, const RingOptions& options) {
  if (!prepare(comm, buffer, options, "ring_allreduce buffer")) return;
  Tensor flat = buffer.view({-1});
  if (static_cast<int64_t>(flat.nbytes()) <= direct_max_bytes(comm, options)) {
#if NANODIST_WITH_CUDA
    if (comm.device().is_cuda()) return ring::cuda_direct_allreduce(comm, flat, op);
#endif
    return ring::cpu_direct_allreduce(comm, flat, op);
  }
  reduce_scatter_flat(comm, flat, op, options);
  all_gather_flat(comm, flat);
}

void ring_reduce_scatter(Comm& comm, Tensor& buffer, ReduceOp op, const RingOptions& options) {
  if (!prepare(comm, buffer, options, "ring_reduce_scatter buffer")) return;
  Tensor flat = buffer.view({-1});
  reduce_scatter_flat(comm, flat, op, options);
}

void ring_all_gather(Comm& comm, Tensor& buffer, const RingOptions& options) {
  if (!prepare(comm, buffer, options, "ring_all_gather buffer", false)) return;
  Tensor flat = buffer.view({-1});
  all_gather_flat(comm, flat);
}

}  // namespace nd::dist
