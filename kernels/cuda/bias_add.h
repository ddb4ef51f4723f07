// Broadcast add of a row vector on the GPU (see kernels/cpu/bias_add.h, the reference): out = x + b
// over every row, and the gradient of b as a deterministic column sum.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// As cpu::bias_add_forward, summed in f32. T = float, bf16 or f16.
template <typename T>
void bias_add_forward(const T* x, const T* b, T* out, int64_t M, int64_t N, cudaStream_t stream = nullptr);

// As cpu::bias_add_backward, rows summed in a fixed order.
template <typename T>
void bias_add_backward(const T* dout, T* db, int64_t M, int64_t N, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
