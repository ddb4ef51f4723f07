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
// Pipelined ring: at most this many pipes; by default they share the CTAs of the step-by-step
// ring's point-to-point communicator (64), at least kMinPipeCtas each.
constexpr int kMaxPipes = 8;
constexpr int kPipeCtaBudget = 64;
constexpr int kMinPipeCtas = 8;

struct PipeChoice {
  int pipes = 1;
  int ctas = 0;
};

// RingOptions.pipeline and pipe_ctas resolved. Automatic is the step-by-step ring until the
// pipelined one is measured against it on GPUs (docs/PERFORMANCE.md).
PipeChoice pipe_choice(const RingOptions& options) {
  PipeChoice choice;
  choice.pipes = options.pipeline == 0 ? 1 : options.pipeline;
  ND_CHECK(choice.pipes >= 1 && choice.pipes <= kMaxPipes,
           "ring pipeline " << choice.pipes << " must be from 1 to " << kMaxPipes << " pipes");
  ND_CHECK(options.pipe_ctas >= 0 && options.pipe_ctas <= 64,
           "RingOptions.pipe_ctas " << options.pipe_ctas << " must be from 0 (automatic) to 64");
  // One pipe is the step-by-step ring, which has no pipe communicators.
  if (choice.pipes >= 2)
    choice.ctas = options.pipe_ctas > 0 ? options.pipe_ctas : std::max(kMinPipeCtas, kPipeCtaBudget / choice.pipes);
  return choice;
}

// What the ranks must agree on besides count and dtype: the op and the pipeline (op < 16,
// pipes <= 8, ctas <= 64), packed into the layout check's one detail.
int layout_detail(ReduceOp op, const RingOptions& options) {
  PipeChoice choice = pipe_choice(options);
  return static_cast<int>(op) + 16 * (choice.pipes + 16 * choice.ctas);
}

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

// The pipelined ring's plan, or pipes 0 when the step-by-step ring runs (CPU, or one pipe).
ring::GpuPipePlan pipe_plan(const Comm& comm, const Tensor& buffer, const RingOptions& options) {
  ring::GpuPipePlan plan;
  PipeChoice choice = pipe_choice(options);
  plan.pipes = comm.device().is_cuda() && choice.pipes >= 2 ? choice.pipes : 0;
  plan.ctas = choice.ctas;
  plan.lanes = gpu_plan(comm, buffer, options).lanes;
  return plan;
}
#endif

int64_t direct_max_bytes(const Comm& comm, const RingOptions& options) {
  if (options.direct_max_bytes >= 0) return options.direct_max_bytes;
  return comm.device().is_cuda() ? kGpuDirectMaxBytes : 0;
}

// Runs `halves` on the pipelined GPU ring when the options ask for it; false when the
// step-by-step ring must run them instead.
bool ran_pipelined(Comm& comm, Tensor& flat, ReduceOp op, const RingOptions& options, ring::RingHalves halves) {
#if NANODIST_WITH_CUDA
  ring::GpuPipePlan plan = pipe_plan(comm, flat, options);
  if (plan.pipes == 0) return false;
  ring::cuda_pipelined_ring(comm, flat, op, plan, halves);
  return true;
#else
  (void)comm, (void)flat, (void)op, (void)options, (void)halves;
  return false;
#endif
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

int ring_pipeline(const RingOptions& options) { return pipe_choice(options).pipes; }

CommWork ring_allreduce_async(Comm& comm, Tensor& buffer, ReduceOp op, const RingOptions& options) {
  ND_CHECK(op != ReduceOp::Max, "ring_allreduce sums or averages; take the backend's all-reduce for max");
  if (!prepare(comm, buffer, options, "ring_allreduce buffer", CollectiveOp::AllReduce, layout_detail(op, options)))
    return CommWork();
  Tensor flat = buffer.view({-1});
  if (static_cast<int64_t>(flat.nbytes()) <= direct_max_bytes(comm, options)) {
    direct_allreduce_flat(comm, flat, op);
  } else if (!ran_pipelined(comm, flat, op, options, ring::RingHalves::Both)) {
    reduce_scatter_flat(comm, flat, op, options);
    all_gather_flat(comm, flat, options);
  }
  return comm.record_work();
}

CommWork ring_reduce_scatter_async(Comm& comm, Tensor& buffer, ReduceOp op, const RingOptions& options) {
  ND_CHECK(op != ReduceOp::Max, "ring_reduce_scatter sums or averages; take the backend's for max");
  if (!prepare(comm, buffer, options, "ring_reduce_scatter buffer", CollectiveOp::ReduceScatter,
               layout_detail(op, options)))
    return CommWork();
  Tensor flat = buffer.view({-1});
  if (!ran_pipelined(comm, flat, op, options, ring::RingHalves::ReduceScatter)) reduce_scatter_flat(comm, flat, op, options);
  return comm.record_work();
}

CommWork ring_all_gather_async(Comm& comm, Tensor& buffer, const RingOptions& options) {
  if (!prepare(comm, buffer, options, "ring_all_gather buffer", CollectiveOp::AllGather,
               layout_detail(ReduceOp::Sum, options)))
    return CommWork();
  Tensor flat = buffer.view({-1});
  if (!ran_pipelined(comm, flat, ReduceOp::Sum, options, ring::RingHalves::AllGather)) all_gather_flat(comm, flat, options);
  return comm.record_work();
}

}  // namespace nd::dist
