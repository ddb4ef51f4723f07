// A launcher for elementwise kernels over n elements: each thread takes one 16-byte pack of every
// operand (4 floats or 8 bf16), falling back to element-by-element access at the tail or when a
// pointer is not 16-byte aligned. `op(i, count)` handles elements [i, i + count) itself.
#pragma once
#include "kernels/cuda/common.cuh"

namespace nd::cuda {

template <typename T, typename Op>
__global__ void elementwise_kernel(int64_t n, Op op) {
  constexpr int kPack = Pack16<T>::kSize;
  int64_t first = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPack;
  if (first >= n) return;
  if (first + kPack <= n) {
    op.template pack<kPack>(first);
  } else {
    for (int64_t i = first; i < n; ++i) op.template pack<1>(i);
  }
}

// Ops carry `bool vec` (every pointer 16-byte aligned) and pass it to load_f32/store_f32
// (common.cuh).
template <typename T, typename Op>
void launch_elementwise(int64_t n, Op op, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kPack = Pack16<T>::kSize;
  constexpr int kThreads = 256;
  int64_t blocks = ceil_div(ceil_div(n, kPack), kThreads);
  ND_CHECK(blocks < (int64_t{1} << 31), "elementwise kernel over " << n << " elements is too large");
  elementwise_kernel<T, Op><<<static_cast<unsigned>(blocks), kThreads, 0, stream_or_default(stream)>>>(n, op);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace nd::cuda
