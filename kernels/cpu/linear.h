// Linear layer kernels on the CPU: out = x · wᵀ + b, and the three gradients, all through the
// shared matmul (kernels/cpu/matmul.h, on CBLAS). The GELU variants are the reference of the CUDA
// ones that fuse the GELU into the GEMM: here they are the plain product and the GELU kernels.
#pragma once
#include <cstdint>

#include "kernels/kernel_args.h"

namespace nd::cpu {

// x (M, K), w (N, K), b (N) or null -> out (M, N).
template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* out, int64_t M, int64_t N, int64_t K);

// dout (M, N), x (M, K), w (N, K) -> dx (M, K) (+)= dout · w, dw (N, K) (+)= doutᵀ · x and
// db (N) (+)= column sums of dout.
template <typename T>
void linear_backward(const T* dout, const T* x, const T* w, GradDest<T> dx, GradDest<T> dw, GradDest<T> db, int64_t M,
                     int64_t N, int64_t K);

// x (M, K), w (N, K), b (N) or null -> pre (M, N) = x · wᵀ + b and out (M, N) = gelu(pre).
// Returns false: nothing is fused on the CPU (the CUDA kernel returns whether it fused).
template <typename T>
bool linear_gelu_forward(const T* x, const T* w, const T* b, T* out, T* pre, int64_t M, int64_t N, int64_t K);

// dout (M, N), w (N, K), pre (M, K) -> dpre (M, K) = (dout · w) * gelu'(pre), written, and
// db (K) (+)= column sums of dpre.
template <typename T>
void linear_dgelu_backward(const T* dout, const T* w, const T* pre, T* dpre, GradDest<T> db, int64_t M, int64_t N,
                           int64_t K);

}  // namespace nd::cpu
