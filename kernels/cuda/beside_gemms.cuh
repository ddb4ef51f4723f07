// A launcher for elementwise kernels that must run while a GEMM holds the GPU. Hopper's cuBLAS
// GEMMs are persistent: one CTA per SM keeps nearly all of its registers and shared memory until
// the GEMM ends, so a kernel of the usual shape (blocks of 256 threads) finds no room and waits for
// the GEMM to drain. Blocks of one warp fit, two to an SM. Measured on one H200 beside
// back-to-back 8192^3 bf16 GEMMs (a probe, recorded in docs/PERFORMANCE.md): a 10 MB copy took
// 59 us as 2 x 132 blocks of 32 threads against 440-700 us as cudaMemcpyAsync and ~750 us as
// 256-thread blocks (alone: 12 against 10 us); a sum of two 10 MB bf16 blocks 93 us.
#pragma once
#include <algorithm>

#include "kernels/cuda/common.cuh"

namespace nd::cuda {

constexpr int kBesideGemmsThreads = 32;

// Two one-warp blocks per SM of the current device.
inline unsigned beside_gemms_blocks() {
  static thread_local int device = -1, sms = 0;
  int now = 0;
  CUDA_CHECK(cudaGetDevice(&now));
  if (now != device) {
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, now));
    device = now;
  }
  return static_cast<unsigned>(2 * sms);
}

// The elementwise_kernel's contract (elementwise.cuh: op.pack<kPack>(i) handles 16 bytes of T from
// element i, op.pack<1> one element at the tail), over a grid that strides.
template <typename T, typename Op>
__global__ void __launch_bounds__(kBesideGemmsThreads) beside_gemms_kernel(int64_t n, Op op) {
  constexpr int kPack = Pack16<T>::kSize;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * kPack;
  for (int64_t first = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPack; first < n;
       first += stride) {
    if (first + kPack <= n) {
      op.template pack<kPack>(first);
    } else {
      for (int64_t i = first; i < n; ++i) op.template pack<1>(i);
    }
  }
}

template <typename T, typename Op>
void launch_beside_gemms(int64_t n, Op op, cudaStream_t stream) {
  if (n == 0) return;
  const int64_t packs = ceil_div(n, Pack16<T>::kSize);
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(beside_gemms_blocks(), ceil_div(packs, kBesideGemmsThreads)));
  beside_gemms_kernel<T, Op><<<blocks, kBesideGemmsThreads, 0, stream_or_default(stream)>>>(n, op);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace nd::cuda
