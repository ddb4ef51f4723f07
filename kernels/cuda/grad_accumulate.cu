// dst (n) f32 = or += src (n); a grid-stride loop, memory-bound like any element-wise pass.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/grad_accumulate.h"

namespace nd::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

template <typename T>
__global__ void grad_accumulate_kernel(const T* src, float* dst, int64_t n, bool overwrite) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = to_f32(src[i]);
    dst[i] = overwrite ? g : dst[i] + g;
  }
}

}  // namespace

template <typename T>
void grad_accumulate(const T* src, float* dst, int64_t n, bool overwrite, cudaStream_t stream) {
  ND_CHECK(n >= 0, "grad_accumulate: negative length " << n);
  if (n == 0) return;
  ND_CHECK(src != nullptr && dst != nullptr, "grad_accumulate: null buffer");
  const int64_t blocks = std::min(ceil_div(n, kThreads), kMaxBlocks);
  grad_accumulate_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream_or_default(stream)>>>(src, dst, n,
                                                                                                       overwrite);
  CUDA_CHECK(cudaGetLastError());
}

template void grad_accumulate<float>(const float*, float*, int64_t, bool, cudaStream_t);
template void grad_accumulate<bf16>(const bf16*, float*, int64_t, bool, cudaStream_t);
template void grad_accumulate<f16>(const f16*, float*, int64_t, bool, cudaStream_t);

}  // namespace nd::cuda
