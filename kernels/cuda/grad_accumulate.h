// Gradient accumulation into the f32 main gradients on the GPU (--grad-dtype f32 under bf16):
// one element-wise pass over a range of the flat gradient buffer per finished bucket.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// src (n) T = f32, bf16 or f16, dst (n) f32: dst = src (overwrite) or dst += src.
template <typename T>
void grad_accumulate(const T* src, float* dst, int64_t n, bool overwrite, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
