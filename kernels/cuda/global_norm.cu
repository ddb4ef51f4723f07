// Global norm: grid (blocks per slot, slots) writes partial[slot][block] (f32 sums of squares),
// then one block sums the partials in f64 in a fixed order: deterministic, no atomics.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/global_norm.h"

namespace nd::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kElementsPerBlock = 16384;  // blocks per slot = max_n / this, capped
constexpr int kMaxBlocksPerSlot = 256;

// Each block strides over its slot by 16-byte packs (when the slot is aligned), the tail and
// unaligned slots element by element.
template <typename T>
__global__ void sum_squares_kernel(const NormSlot<T>* slots, float* partial) {
  constexpr int kPack = Pack16<T>::kSize;
  __shared__ float scratch[32];
  NormSlot<T> s = slots[blockIdx.y];
  float acc = 0.0f;
  int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t vector_end = aligned16(s.data) ? s.n / kPack * kPack : 0;
  for (int64_t i = first * kPack; i < vector_end; i += stride * kPack) {
    Pack16<T> v = load16(s.data + i);
#pragma unroll
    for (int k = 0; k < kPack; ++k) acc += to_f32(v.v[k]) * to_f32(v.v[k]);
  }
  for (int64_t i = vector_end + first; i < s.n; i += stride) {
    float x = to_f32(s.data[i]);
    acc += x * x;
  }
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) partial[static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x] = acc;
}

__global__ void finish_norm_kernel(const float* partial, int64_t count, float* norm, float* clip_scale,
                                   float max_norm) {
  __shared__ double scratch[1024];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) acc += partial[i];
  scratch[threadIdx.x] = acc;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half >>= 1) {
    if (static_cast<int>(threadIdx.x) < half) scratch[threadIdx.x] += scratch[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float total = static_cast<float>(sqrt(scratch[0]));
    *norm = total;
    // A non-finite norm gives a NaN factor, on which AdamW skips its update.
    if (clip_scale)
      *clip_scale = !isfinite(total) ? nanf("") : max_norm > 0.0f ? fminf(1.0f, max_norm / (total + 1e-6f)) : 1.0f;
  }
}

}  // namespace

template <typename T>
void global_norm(const DeviceSlots<NormSlot<T>>& slots, float* norm, float* clip_scale, float max_norm,
                 cudaStream_t stream) {
  ND_CHECK(norm, "global_norm: null output pointer");
  ND_CHECK(slots.count() < 65536, "global_norm: " << slots.count() << " tensors is too many for one launch");
  stream = stream_or_default(stream);
  int64_t blocks_per_slot = std::max<int64_t>(1, std::min<int64_t>(ceil_div(slots.max_n(), kElementsPerBlock),
                                                                    kMaxBlocksPerSlot));
  int64_t count = static_cast<int64_t>(slots.count()) * blocks_per_slot;
  int device = current_cuda_device();
  float* partial = static_cast<float*>(device_alloc(std::max<int64_t>(count, 1) * sizeof(float), device));
  if (slots.count() > 0) {
    dim3 grid(static_cast<unsigned>(blocks_per_slot), static_cast<unsigned>(slots.count()));
    sum_squares_kernel<T><<<grid, kThreads, 0, stream>>>(slots.data(), partial);
    CUDA_CHECK(cudaGetLastError());
  }
  finish_norm_kernel<<<1, 1024, 0, stream>>>(partial, count, norm, clip_scale, max_norm);
  CUDA_CHECK(cudaGetLastError());
  device_free(partial, device);  // reused only by later work on this stream
}

template void global_norm<float>(const DeviceSlots<NormSlot<float>>&, float*, float*, float, cudaStream_t);
template void global_norm<nd::bf16>(const DeviceSlots<NormSlot<nd::bf16>>&, float*, float*, float, cudaStream_t);

}  // namespace nd::cuda
