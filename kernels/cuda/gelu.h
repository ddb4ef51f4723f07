// GELU (GPT-2's tanh approximation) on the GPU: forward, and backward adding into dx.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// x (n) -> out (n) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). T = float or bf16.
template <typename T>
void gelu_forward(const T* x, T* out, int64_t n, cudaStream_t stream = nullptr);

// dout (n), x (n) -> dx (n) += dout * gelu'(x).
template <typename T>
void gelu_backward(const T* dout, const T* x, T* dx, int64_t n, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
