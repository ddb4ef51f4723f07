// Linear layer on the GPU: out = x · wᵀ + b through cuBLASLt (bias fused in the epilogue), and the
// gradients: dx and dw by cuBLASLt writing (beta = 0) or accumulating (beta = 1), db by a
// deterministic column sum.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// x (M, K), w (N, K), b (N) or null -> out (M, N). T = float or bf16 (f32 accumulation).
template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* out, int64_t M, int64_t N, int64_t K,
                    cudaStream_t stream = nullptr);

// dout (M, N), x (M, K), w (N, K) -> dx (M, K) (+)= dout · w, dw (N, K) (+)= doutᵀ · x and
// db (N) (+)= column sums of dout.
template <typename T>
void linear_backward(const T* dout, const T* x, const T* w, GradDest<T> dx, GradDest<T> dw, GradDest<T> db, int64_t M,
                     int64_t N, int64_t K, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
