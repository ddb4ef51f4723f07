// Global norm: grid (blocks per slot, slots) writes partial[slot][block] (f32 sums of squares),
// then one block sums the partials in f64 in a fixed order: deterministic, no atomics. The
// tensor-parallel form sums two ranges of slots apart and finishes the norm in a third launch.
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

// sum of partial[begin, end) in f64 by one block, in a fixed order; the total reaches thread 0.
__device__ double block_sum_f64(const float* partial, int64_t begin, int64_t end, double* scratch) {
  double acc = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) acc += partial[i];
  scratch[threadIdx.x] = acc;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half >>= 1) {
    if (static_cast<int>(threadIdx.x) < half) scratch[threadIdx.x] += scratch[threadIdx.x + half];
    __syncthreads();
  }
  double total = scratch[0];
  __syncthreads();  // scratch is reused by the caller's next sum
  return total;
}

__device__ void write_norm(double sum_of_squares, float* norm, float* clip_scale, float max_norm) {
  float total = static_cast<float>(sqrt(sum_of_squares));
  *norm = total;
  // A non-finite norm gives a NaN factor, on which AdamW skips its update.
  if (clip_scale)
    *clip_scale = !isfinite(total) ? nanf("") : max_norm > 0.0f ? fminf(1.0f, max_norm / (total + 1e-6f)) : 1.0f;
}

__global__ void finish_norm_kernel(const float* partial, int64_t count, float* norm, float* clip_scale,
                                   float max_norm) {
  __shared__ double scratch[1024];
  double total = block_sum_f64(partial, 0, count, scratch);
  if (threadIdx.x == 0) write_norm(total, norm, clip_scale, max_norm);
}

// sums[0] = partial[0, split) summed, sums[1] = partial[split, count).
__global__ void finish_sums_kernel(const float* partial, int64_t split, int64_t count, float* sums) {
  __shared__ double scratch[1024];
  double first = block_sum_f64(partial, 0, split, scratch);
  double second = block_sum_f64(partial, split, count, scratch);
  if (threadIdx.x == 0) {
    sums[0] = static_cast<float>(first);
    sums[1] = static_cast<float>(second);
  }
}

__global__ void norm_from_sums_kernel(const float* sums, float* norm, float* clip_scale, float max_norm) {
  write_norm(static_cast<double>(sums[0]) + static_cast<double>(sums[1]), norm, clip_scale, max_norm);
}

// Per-block partial sums of squares of every slot, into a fresh device buffer of
// count() * blocks_per_slot floats (slot-major); the caller frees it after its last reader.
template <typename T>
float* partial_sums(const DeviceSlots<NormSlot<T>>& slots, int64_t* blocks_per_slot, cudaStream_t stream) {
  *blocks_per_slot = std::max<int64_t>(1, std::min<int64_t>(ceil_div(slots.max_n(), kElementsPerBlock),
                                                            kMaxBlocksPerSlot));
  int64_t count = static_cast<int64_t>(slots.count()) * *blocks_per_slot;
  float* partial = static_cast<float*>(device_alloc(std::max<int64_t>(count, 1) * sizeof(float), current_cuda_device()));
  if (slots.count() > 0) {
    dim3 grid(static_cast<unsigned>(*blocks_per_slot), static_cast<unsigned>(slots.count()));
    sum_squares_kernel<T><<<grid, kThreads, 0, stream>>>(slots.data(), partial);
    CUDA_CHECK(cudaGetLastError());
  }
  return partial;
}

}  // namespace

template <typename T>
void global_norm(const DeviceSlots<NormSlot<T>>& slots, float* norm, float* clip_scale, float max_norm,
                 cudaStream_t stream) {
  ND_CHECK(norm, "global_norm: null output pointer");
  ND_CHECK(slots.count() < 65536, "global_norm: " << slots.count() << " tensors is too many for one launch");
  stream = stream_or_default(stream);
  int64_t blocks_per_slot = 0;
  float* partial = partial_sums(slots, &blocks_per_slot, stream);
  finish_norm_kernel<<<1, 1024, 0, stream>>>(partial, slots.count() * blocks_per_slot, norm, clip_scale, max_norm);
  CUDA_CHECK(cudaGetLastError());
  device_free(partial, current_cuda_device());  // reused only by later work on this stream
}

template <typename T>
void sums_of_squares(const DeviceSlots<NormSlot<T>>& slots, int split, float* sums, cudaStream_t stream) {
  ND_CHECK(sums, "sums_of_squares: null output pointer");
  ND_CHECK(slots.count() < 65536, "sums_of_squares: " << slots.count() << " tensors is too many for one launch");
  ND_CHECK(split >= 0 && split <= slots.count(),
           "sums_of_squares: split " << split << " outside [0, " << slots.count() << "]");
  stream = stream_or_default(stream);
  int64_t blocks_per_slot = 0;
  float* partial = partial_sums(slots, &blocks_per_slot, stream);
  finish_sums_kernel<<<1, 1024, 0, stream>>>(partial, split * blocks_per_slot, slots.count() * blocks_per_slot, sums);
  CUDA_CHECK(cudaGetLastError());
  device_free(partial, current_cuda_device());  // reused only by later work on this stream
}

void norm_from_sums(const float* sums, float* norm, float* clip_scale, float max_norm, cudaStream_t stream) {
  ND_CHECK(sums && norm, "norm_from_sums: null pointer");
  norm_from_sums_kernel<<<1, 1, 0, stream_or_default(stream)>>>(sums, norm, clip_scale, max_norm);
  CUDA_CHECK(cudaGetLastError());
}

template void global_norm<float>(const DeviceSlots<NormSlot<float>>&, float*, float*, float, cudaStream_t);
template void global_norm<nd::bf16>(const DeviceSlots<NormSlot<nd::bf16>>&, float*, float*, float, cudaStream_t);
template void sums_of_squares<float>(const DeviceSlots<NormSlot<float>>&, int, float*, cudaStream_t);
template void sums_of_squares<nd::bf16>(const DeviceSlots<NormSlot<nd::bf16>>&, int, float*, cudaStream_t);
template void global_norm<nd::f16>(const DeviceSlots<NormSlot<nd::f16>>&, float*, float*, float, cudaStream_t);
template void sums_of_squares<nd::f16>(const DeviceSlots<NormSlot<nd::f16>>&, int, float*, cudaStream_t);

}  // namespace nd::cuda
