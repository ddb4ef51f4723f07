// Internal: the device-specific halves of the ring. ring_allreduce.cpp checks the arguments,
// resolves RingOptions and calls these with a flat (numel) buffer and a comm of size >= 2.
#pragma once
#include <cstdint>

#include "dist/comm/comm.h"

namespace nd::dist::ring {

// CPU: any comm whose buffers live on the host (MpiComm). MPI Isend/Irecv of the next slice
// are in flight while the current slice is reduced.
void cpu_reduce_scatter(Comm& comm, Tensor& flat, ReduceOp op, int64_t slice_elems);
void cpu_all_gather(Comm& comm, Tensor& flat);
void cpu_direct_allreduce(Comm& comm, Tensor& flat, ReduceOp op);

#if NANODIST_WITH_CUDA
// How the GPU ring cuts its work. lanes 1: every chunk goes round the ring one way. lanes 2:
// the first half of every chunk goes to the next rank and the second half to the previous one
// (schedule direction -1), so each step has transfers to two peers in flight, which NCCL runs
// on separate channels. Each lane's part of a chunk is cut into slices of at most slice_elems
// elements for the reduce-scatter pipeline.
struct GpuRingPlan {
  int lanes = 1;
  int64_t slice_elems = 0;
};

// GPU: `comm` must be an NcclComm. Transfers on its stream, reductions on its side stream,
// ordered by events; nothing waits on the host.
void cuda_reduce_scatter(Comm& comm, Tensor& flat, ReduceOp op, const GpuRingPlan& plan);
void cuda_all_gather(Comm& comm, Tensor& flat, int lanes);
void cuda_direct_allreduce(Comm& comm, Tensor& flat, ReduceOp op);
#endif

}  // namespace nd::dist::ring
