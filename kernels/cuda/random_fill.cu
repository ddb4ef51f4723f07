// Normal draws into a tensor slice on the GPU (kernels/cuda/random_fill.h): one thread per element
// of the slice, each mapping its index to the full tensor's counter (ElementSlice::full_index).
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/random_fill.h"
#include "tensor/philox.h"

namespace nd::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void store(float* out, double v) { *out = static_cast<float>(v); }
// As the CPU writes bf16 and f16: round the double to f32, then f32 to bf16 or f16 (nearest even).
__device__ __forceinline__ void store(nd::bf16* out, double v) { *out = nd::f32_to_bf16(static_cast<float>(v)); }
__device__ __forceinline__ void store(nd::f16* out, double v) { *out = nd::f32_to_f16(static_cast<float>(v)); }

// out (n) from the slice's elements; a grid-stride loop, so any n fits the grid.
template <typename T>
__global__ void normal_fill_kernel(T* out, ElementSlice slice, int64_t n, PhiloxCounters rng, double mean,
                                   double std) {
  const uint64_t first = rng.start();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride) {
    const uint64_t counter = first + static_cast<uint64_t>(slice.full_index(j));
    store(out + j, mean + std * static_cast<double>(philox_normal(rng.seed, counter, rng.stream)));
  }
}

}  // namespace

template <typename T>
void normal_fill(T* out, const ElementSlice& slice, const PhiloxCounters& rng, double mean, double std,
                 cudaStream_t stream) {
  const ElementSlice& s = slice;
  ND_CHECK(s.outer >= 1 && s.parts >= 1 && s.run >= 0 && s.offset >= 0 && s.outer_stride >= 0 && s.part_stride >= 0,
           "normal_fill: bad slice (outer " << s.outer << ", parts " << s.parts << ", run " << s.run << ", offset "
                                            << s.offset << ")");
  const int64_t n = s.size();
  if (n == 0) return;
  ND_CHECK(out != nullptr, "normal_fill: null output");
  const int64_t blocks = std::min<int64_t>(ceil_div(n, kThreads), int64_t{1} << 20);
  normal_fill_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream_or_default(stream)>>>(out, s, n, rng,
                                                                                                     mean, std);
  CUDA_CHECK(cudaGetLastError());
}

#define ND_INSTANTIATE_NORMAL_FILL(T) \
  template void normal_fill<T>(T*, const ElementSlice&, const PhiloxCounters&, double, double, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_NORMAL_FILL);

}  // namespace nd::cuda
