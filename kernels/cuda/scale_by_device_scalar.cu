// The device-scalar scale of scale_by_device_scalar.h: a grid-stride loop, one element per thread
// step (a memory-bound pass over the gradients once per step).
#include <algorithm>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/scale_by_device_scalar.h"
#include "tensor/cuda_check.h"

namespace nd::cuda {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 8192;

template <typename T>
__global__ void scale_by_device_scalar_kernel(T* x, int64_t n, const float* factor) {
  const float f = *factor;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    x[i] = from_f32<T>(to_f32(x[i]) * f);
}

template <typename T>
void launch(T* x, int64_t n, const float* factor, cudaStream_t stream) {
  ND_CHECK(n >= 0 && factor != nullptr && (n == 0 || x != nullptr), "scale_by_device_scalar: bad arguments");
  if (n == 0) return;
  const int blocks = static_cast<int>(std::max<int64_t>(1, std::min(kMaxBlocks, ceil_div(n, kBlock))));
  scale_by_device_scalar_kernel<T><<<blocks, kBlock, 0, stream_or_default(stream)>>>(x, n, factor);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void scale_by_device_scalar(float* x, int64_t n, const float* factor, cudaStream_t stream) {
  launch(x, n, factor, stream);
}
void scale_by_device_scalar(bf16* x, int64_t n, const float* factor, cudaStream_t stream) {
  launch(x, n, factor, stream);
}
void scale_by_device_scalar(f16* x, int64_t n, const float* factor, cudaStream_t stream) {
  launch(x, n, factor, stream);
}

}  // namespace nd::cuda
