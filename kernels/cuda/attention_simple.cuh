// The simple attention kernels (f32 math, CUDA cores): the f32 reference path and the fallback for
// head sizes the tensor-core kernels do not take. Four threads (a quad) own one row; thread s of
// the quad holds dimensions s, s + 4, s + 8, ... of the row in registers. Tiles of 32 rows.
#pragma once
#include <cstdint>

#include "kernels/attention_dropout.h"
#include "kernels/kernel_args.h"
#include "tensor/dtype.h"
#include "kernels/cuda/stream_type.h"

namespace nd::cuda::detail {

template <typename T>
void attention_forward_simple(const T* qkv, T* out, float* lse, int64_t B, int64_t T_len, int64_t C, int64_t NH,
                              const AttentionDropout& dropout, cudaStream_t stream);

// delta (B, NH, T) = rowsum(dout * out) per head, precomputed by the caller.
template <typename T>
void attention_backward_simple(const T* dout, const T* qkv, const float* lse, const float* delta, GradDest<T> dqkv,
                               int64_t B, int64_t T_len, int64_t C, int64_t NH, const AttentionDropout& dropout,
                               cudaStream_t stream);

}  // namespace nd::cuda::detail
