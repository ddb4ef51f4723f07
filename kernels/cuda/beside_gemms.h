// The copy-engine collectives' own kernels (dist/peer_copy.h): the reduce-scatter's sum of the
// blocks the ranks sent, and the all-gather's copies on this GPU (its own block into the output,
// the arrived blocks out of their slots). They run on a communicator's stream while the compute
// stream's GEMMs hold the GPU, so they are shaped to fit beside those GEMMs
// (kernels/cuda/beside_gemms.cuh): a cudaMemcpyAsync between two buffers of one GPU is an SM
// kernel too and would wait for the GEMMs to drain.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

namespace nd::cuda {

constexpr int kSumBlocksMax = 8;

// out (n) = scale * (blocks[0] + ... + blocks[count - 1]) (n each, count <= kSumBlocksMax; the
// pointers are read on the host), summed in f32 in that order and rounded once. T = float or bf16.
template <typename T>
void sum_blocks(const T* const* blocks, int count, T* out, int64_t n, float scale, cudaStream_t stream);

// dst = src (bytes, any alignment, no overlap) on one GPU, queued on `stream`.
void copy_bytes_beside_gemms(void* dst, const void* src, int64_t bytes, cudaStream_t stream);

}  // namespace nd::cuda
