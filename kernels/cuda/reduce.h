// CUDA local reductions for the collectives (see kernels/cpu/reduce.h, the reference):
// dst += src with a scale, and a scaled sum over rows. bf16 and f16 are summed in f32. Async on `stream`.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// dst (n) = (dst + src) * scale. max_blocks > 0 caps the grid, leaving the other SMs to
// kernels that run beside it (the ring's NCCL transfers); 0 fills the GPU.
void reduce_add(float* dst, const float* src, int64_t n, float scale, cudaStream_t stream, int max_blocks = 0);
void reduce_add(bf16* dst, const bf16* src, int64_t n, float scale, cudaStream_t stream, int max_blocks = 0);
void reduce_add(f16* dst, const f16* src, int64_t n, float scale, cudaStream_t stream, int max_blocks = 0);

// As cpu::reduce_rows.
void reduce_rows(float* dst, const float* rows, int nrows, int64_t n, float scale, int own_row, cudaStream_t stream);
void reduce_rows(bf16* dst, const bf16* rows, int nrows, int64_t n, float scale, int own_row, cudaStream_t stream);
void reduce_rows(f16* dst, const f16* rows, int nrows, int64_t n, float scale, int own_row, cudaStream_t stream);

}  // namespace nd::cuda
