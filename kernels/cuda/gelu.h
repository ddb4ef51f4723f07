// GELU (GPT-2's tanh approximation) on the GPU: forward and backward.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// x (n) -> out (n) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). T = float, bf16 or f16.
template <typename T>
void gelu_forward(const T* x, T* out, int64_t n, cudaStream_t stream = nullptr);

// x (n), dout (n) -> dx (n) (+)= gelu'(x) * dout.
template <typename T>
void gelu_backward(const T* x, const T* dout, GradDest<T> dx, int64_t n, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
