// Layer normalisation over the last dimension on the GPU: one warp per row in the forward, which
// saves each row's mean and rstd in f32 (StatType); the backward writes or adds dx, dw and db.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// As cpu::layernorm_forward (kernels/cpu/layernorm.h, the reference); mean and rstd in f32.
template <typename T>
void layernorm_forward(const T* x, const T* w, const T* b, T* out, StatType<T>* mean, StatType<T>* rstd, int64_t N,
                       int64_t C, float eps, cudaStream_t stream = nullptr);

// As cpu::layernorm_backward; dw and db are summed over rows in a fixed order that depends only
// on N, C and the GPU's SM count (the same bits run after run on one GPU model).
template <typename T>
void layernorm_backward(const T* dout, const T* x, const T* w, const StatType<T>* mean, const StatType<T>* rstd,
                        GradDest<T> dx, GradDest<T> dw, GradDest<T> db, int64_t N, int64_t C,
                        cudaStream_t stream = nullptr);

}  // namespace nd::cuda
