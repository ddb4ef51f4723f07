// Internal: the device-specific halves of the ring. ring_allreduce.cpp checks the arguments,
// resolves RingOptions and calls these with a flat (numel) buffer and a comm of size >= 2.
#pragma once
#include <cstdint>

#include "dist/comm.h"

namespace nd::dist::ring {

// CPU: any comm whose buffers live on the host (MpiComm). MPI Isend/Irecv of the next slice
// are in flight while the current slice is reduced.
void cpu_reduce_scatter(Comm& comm, Tensor& flat, ReduceOp op, int64_t slice_elems);
void cpu_all_gather(Comm& comm, Tensor& flat);
void cpu_direct_allreduce(Comm& comm, Tensor& flat, ReduceOp op);

#if NANODIST_WITH_CUDA
// GPU: `comm` must be an NcclComm. Transfers on its stream, reductions on its side stream,
// ordered by events; nothing waits on the host.
void cuda_reduce_scatter(Comm& comm, Tensor& flat, ReduceOp op, int64_t slice_elems);
void cuda_all_gather(Comm& comm, Tensor& flat);
void cuda_direct_allreduce(Comm& comm, Tensor& flat, ReduceOp op);
#endif

}  // namespace nd::dist::ring
