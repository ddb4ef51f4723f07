// Device pieces shared by the FP8 quantise kernels (fp8_quantize.cu, fp8_quantize_transpose.cu):
// eight elements loaded with 16-byte loads and turned into eight codes by the paired hardware
// conversion, and the amax kept as bits and folded into device memory with one atomic per block.
#pragma once
#include <cuda_fp8.h>

#include "kernels/cuda/common.cuh"
#include "kernels/fp8_format.h"

namespace nd::cuda::fp8 {

// Elements a thread quantises at once: 16 bytes of bf16, and its 8 codes are one 8-byte store.
constexpr int kVec = 8;

inline __nv_fp8_interpretation_t interpretation(Fp8Format format) {
  return format == Fp8Format::E4M3 ? __NV_E4M3 : __NV_E5M2;
}

// |v|'s bits: a non-negative float's bits order like the float and a NaN's lie above infinity's,
// so an unsigned max of them is the amax with NaN winning, as the CPU reference has it.
__device__ __forceinline__ unsigned int magnitude_bits(float v) { return __float_as_uint(v) & 0x7fffffffu; }

__device__ __forceinline__ uint8_t code_of(float v, float scale, __nv_fp8_interpretation_t kind) {
  return __nv_cvt_float_to_fp8(v * scale, __NV_SATFINITE, kind);
}

// Eight consecutive elements at p (16-byte aligned) as f32: one 16-byte load for bf16, two for f32.
template <typename T>
__device__ __forceinline__ void load8(const T* p, float (&out)[kVec]) {
  constexpr int kPer = Pack16<T>::kSize;
#pragma unroll
  for (int h = 0; h < kVec / kPer; ++h) {
    const Pack16<T> v = load16(p + h * kPer);
#pragma unroll
    for (int k = 0; k < kPer; ++k) out[h * kPer + k] = to_f32(v.v[k]);
  }
}

// Eight codes packed little-endian (element k in byte k), the amax bits folded into `local`. The
// paired conversion (cvt ...x2) is the instruction the single one uses, so the codes are the same.
__device__ __forceinline__ uint2 codes8(const float (&v)[kVec], float scale, __nv_fp8_interpretation_t kind,
                                        unsigned int& local) {
  uint32_t half[kVec / 2];
#pragma unroll
  for (int k = 0; k < kVec / 2; ++k) {
    local = max(local, max(magnitude_bits(v[2 * k]), magnitude_bits(v[2 * k + 1])));
    half[k] = __nv_cvt_float2_to_fp8x2(make_float2(v[2 * k] * scale, v[2 * k + 1] * scale), __NV_SATFINITE, kind);
  }
  return make_uint2(half[0] | (half[1] << 16), half[2] | (half[3] << 16));
}

// Folds every thread's amax bits into *amax_bits: a warp shuffle, the block's warps through shared
// memory, one atomic. Every thread of the block must call it (it synchronises).
template <int kThreads>
__device__ __forceinline__ void fold_amax(unsigned int local, unsigned int* amax_bits) {
  __shared__ unsigned int warp_max[kThreads / 32];
  const int tid = threadIdx.x + threadIdx.y * blockDim.x;
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) local = max(local, __shfl_down_sync(0xffffffffu, local, offset));
  if (tid % 32 == 0) warp_max[tid / 32] = local;
  __syncthreads();
  if (tid == 0) {
    unsigned int block = 0;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) block = max(block, warp_max[w]);
    atomicMax(amax_bits, block);
  }
}

}  // namespace nd::cuda::fp8

namespace nd::cuda::fp8 {

// The flat quantise of fp8_quantize.h with the inverse scale also written (scale_inv may be null):
// what fp8_quantize_transpose runs when no transposed codes are asked for (fp8_quantize.cu).
void quantize_flat(const float* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
                   float* scale_inv, cudaStream_t stream);
void quantize_flat(const bf16* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
                   float* scale_inv, cudaStream_t stream);

}  // namespace nd::cuda::fp8
