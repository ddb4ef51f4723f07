// Layer normalisation over the last dimension on the GPU: one warp per row in the forward, which
// saves each row's mean and rstd in f32; the backward adds into dx, dw and db.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// x (N, C), w (C), b (C) -> out (N, C); mean (N), rstd (N) in f32 (rstd = 1 / sqrt(var + eps)).
template <typename T>
void layernorm_forward(const T* x, const T* w, const T* b, T* out, float* mean, float* rstd, int64_t N, int64_t C,
                       float eps, cudaStream_t stream = nullptr);

// dout (N, C), x (N, C), w (C), mean/rstd from the forward. Adds dx (N, C), dw (C), db (C); a null
// gradient pointer skips it. dw and db are summed over rows in a fixed order (deterministic).
template <typename T>
void layernorm_backward(const T* dout, const T* x, const T* w, const float* mean, const float* rstd, T* dx, T* dw,
                        T* db, int64_t N, int64_t C, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
