// Linear layer on the GPU: out = x · wᵀ + b through cuBLASLt (bias fused in the epilogue), and the
// gradients: dx and dw by cuBLASLt writing (beta = 0) or accumulating (beta = 1), db by a
// deterministic column sum. The MLP's pair with GPT-2's GELU between the linears runs the GELU in
// the first GEMM's epilogue and its gradient in the epilogue of the second's input-gradient GEMM.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// x (M, K), w (N, K), b (N) or null -> out (M, N). T = float, bf16 or f16 (f32 accumulation).
template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* out, int64_t M, int64_t N, int64_t K,
                    cudaStream_t stream = nullptr);

// As cpu::linear_backward (kernels/cpu/linear.h, the reference).
template <typename T>
void linear_backward(const T* dout, const T* x, const T* w, GradDest<T> dx, GradDest<T> dw, GradDest<T> db, int64_t M,
                     int64_t N, int64_t K, cudaStream_t stream = nullptr);

// x (M, K), w (N, K), b (N) or null -> pre (M, N) = x · wᵀ + b and out (M, N) = gelu(pre) (GPT-2's
// tanh form). True when cuBLASLt ran the GELU in the GEMM's epilogue (GELU_AUX_BIAS, bf16 and f16 only);
// false when separate kernels did: in f32, or where cuBLASLt has no epilogue for the shape or
// alignment (N not a multiple of 8, say).
template <typename T>
bool linear_gelu_forward(const T* x, const T* w, const T* b, T* out, T* pre, int64_t M, int64_t N, int64_t K,
                         cudaStream_t stream = nullptr);

// The input gradient of a linear whose input was gelu(pre): dout (M, N), w (N, K), pre (M, K) ->
// dpre (M, K) = (dout · w) * gelu'(pre), written, and db (K) (+)= column sums of dpre (the bias
// gradient of the linear that made pre). A GEMM, the GELU gradient in place and a column sum:
// cuBLASLt's DGELU_BGRAD epilogue does the same in one GEMM but is slower than the three
// (docs/benchmarks/2026-11-22-negative-dgelu-epilogue-h100.md).
template <typename T>
void linear_dgelu_backward(const T* dout, const T* w, const T* pre, T* dpre, GradDest<T> db, int64_t M, int64_t N,
                           int64_t K, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
