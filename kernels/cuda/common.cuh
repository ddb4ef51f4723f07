// Shared device helpers of the CUDA kernels: ceil-div, f32 <-> storage-type conversion for float,
// bf16 and f16 (16-bit math always accumulates in f32), 16-byte vector loads and stores, warp and block
// reductions, and the constants of the log2-domain softmaxes.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#include "tensor/dtype.h"

namespace nd::cuda {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// exp(x) = exp2(x log2 e) and log(x) = log2(x) ln 2: the softmaxes run in the log2 domain.
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// The stream a launcher uses when given none.
inline cudaStream_t stream_or_default(cudaStream_t stream) { return stream ? stream : nd::compute_stream(); }

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(nd::bf16 x) { return __uint_as_float(static_cast<uint32_t>(x.bits) << 16); }
__device__ __forceinline__ float to_f32(nd::f16 x) { return __half2float(__ushort_as_half(x.bits)); }

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ nd::bf16 from_f32<nd::bf16>(float x) {
  __nv_bfloat16 h = __float2bfloat16_rn(x);
  return nd::bf16{*reinterpret_cast<uint16_t*>(&h)};
}
template <>
__device__ __forceinline__ nd::f16 from_f32<nd::f16>(float x) {
  return nd::f16{__half_as_ushort(__float2half_rn(x))};
}

// 16 bytes of T: 4 floats or 8 bf16 or f16, loaded and stored as one int4.
template <typename T>
struct Pack16 {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

template <typename T>
__device__ __forceinline__ Pack16<T> load16(const T* p) {
  Pack16<T> out;
  *reinterpret_cast<int4*>(out.v) = *reinterpret_cast<const int4*>(p);
  return out;
}

template <typename T>
__device__ __forceinline__ void store16(T* p, const Pack16<T>& x) {
  *reinterpret_cast<int4*>(p) = *reinterpret_cast<const int4*>(x.v);
}

// True when `p` can be read with 16-byte accesses.
__host__ __device__ inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Reads kPack elements at p into f32: 16-byte loads when they fill whole 16-byte packs (one, or
// several where an op reads one type and writes a wider one) and `vec` says p is 16-byte aligned,
// else element by element.
template <int kPack, typename T>
__device__ __forceinline__ void load_f32(const T* p, float (&out)[kPack], bool vec = true) {
  constexpr int kPer = Pack16<T>::kSize;
  if (kPack % kPer == 0 && vec) {
#pragma unroll
    for (int c = 0; c < kPack / kPer; ++c) {
      Pack16<T> v = load16(p + c * kPer);
#pragma unroll
      for (int k = 0; k < kPer; ++k) out[c * kPer + k] = to_f32(v.v[k]);
    }
  } else {
#pragma unroll
    for (int k = 0; k < kPack; ++k) out[k] = to_f32(p[k]);
  }
}

template <int kPack, typename T>
__device__ __forceinline__ void store_f32(T* p, const float (&in)[kPack], bool vec = true) {
  constexpr int kPer = Pack16<T>::kSize;
  if (kPack % kPer == 0 && vec) {
#pragma unroll
    for (int c = 0; c < kPack / kPer; ++c) {
      Pack16<T> v;
#pragma unroll
      for (int k = 0; k < kPer; ++k) v.v[k] = from_f32<T>(in[c * kPer + k]);
      store16(p + c * kPer, v);
    }
  } else {
#pragma unroll
    for (int k = 0; k < kPack; ++k) p[k] = from_f32<T>(in[k]);
  }
}

// Writes kPack gradient values at p: added to what p holds when `accumulate`, else stored.
template <int kPack, typename T>
__device__ __forceinline__ void store_grad_f32(T* p, float (&g)[kPack], bool accumulate, bool vec = true) {
  if (accumulate) {
    float old[kPack];
    load_f32<kPack>(p, old, vec);
#pragma unroll
    for (int k = 0; k < kPack; ++k) g[k] += old[k];
  }
  store_f32<kPack>(p, g, vec);
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024), the same on every thread.
// `scratch` holds 32 floats of shared memory.
__device__ __forceinline__ float block_sum(float x, float* scratch) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  x = warp_sum(x);
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float total = lane < nwarps ? scratch[lane] : 0.0f;
  return warp_sum(total);
}

}  // namespace nd::cuda

// Explicit instantiations of a launcher template for the three storage types of the CUDA backend.
#define ND_CUDA_INSTANTIATE(macro) \
  macro(float);                    \
  macro(nd::bf16);                 \
  macro(nd::f16)
