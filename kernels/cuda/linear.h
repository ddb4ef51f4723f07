// Linear layer on the GPU: out = x · wᵀ + b through cuBLASLt (bias fused in the epilogue), and the
// gradients: dx and dw by cuBLASLt accumulating into the buffers (beta = 1), db by a deterministic
// column sum.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// x (M, K), w (N, K), b (N) or null -> out (M, N). T = float or bf16 (f32 accumulation).
template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* out, int64_t M, int64_t N, int64_t K,
                    cudaStream_t stream = nullptr);

// dout (M, N), x (M, K), w (N, K). Adds dx (M, K) += dout · w, dw (N, K) += doutᵀ · x and
// db (N) += column sums of dout; a null gradient pointer skips it.
template <typename T>
void linear_backward(const T* dout, const T* x, const T* w, T* dx, T* dw, T* db, int64_t M, int64_t N, int64_t K,
                     cudaStream_t stream = nullptr);

// db (N) += sum over rows of dout (M, N), rows summed in a fixed order.
template <typename T>
void column_sum_accumulate(const T* dout, T* db, int64_t M, int64_t N, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
