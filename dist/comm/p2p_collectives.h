// Broadcast and all-to-all written from Comm's send/recv, like the ring (dist/comm/ring_allreduce.h):
// the chain broadcast (slices flow root -> root+1 -> ... so every link carries each byte once)
// with a one-step direct send for small buffers, and the pairwise all-to-all (n-1 steps, in step
// s rank r sends to r+s and receives from r-s, so no rank is sent to by two others at once).
// Ordered like the native collectives (Comm's contract in dist/comm/comm.h).
#pragma once
#include <cstdint>

#include "dist/comm/comm.h"
#include "dist/comm/ring_allreduce.h"

namespace nd::dist {

// In place on `buffer` (any dtype): every rank ends with root's contents. Buffers of at most
// options.direct_max_bytes (-1: 64 KiB on GPU, 0 on CPU) go from the root to every rank in one
// group; larger ones down the chain in slices of options.slice_bytes (0: 256 KiB on CPU; on GPU
// one slice with two ranks, else max(4 MiB, 1/8 of the buffer)).
CommWork chain_broadcast_async(Comm& comm, Tensor& buffer, int root, const RingOptions& options = {});

// input (size() * n), output (size() * n), any dtype: block q of output on rank r = block r of
// input on rank q.
CommWork pairwise_all_to_all_async(Comm& comm, const Tensor& input, Tensor& output, const RingOptions& options = {});

// The number of slices chain_broadcast_async cuts a buffer of `bytes` into on `comm`'s device
// (1 for a direct send); the cost model (dist/comm/bench/comm_model.h) counts its steps from it.
int64_t chain_broadcast_slices(const Comm& comm, int64_t bytes, const RingOptions& options = {});

}  // namespace nd::dist
