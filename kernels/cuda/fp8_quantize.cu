// The flat FP8 quantise of fp8_quantize.h: a grid-stride loop in which each thread turns eight
// elements (one or two 16-byte loads) into eight codes (one 8-byte store), the few elements past
// the last whole eight (or all of them, where x or codes is not aligned for that) one at a time.
#include <algorithm>

#include "kernels/cuda/fp8_quantize.cuh"
#include "kernels/cuda/fp8_quantize.h"

namespace nd::cuda {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 4096;

// `vec_chunks` whole groups of eight go vectorised, elements from vec_chunks * 8 to n one by one.
template <typename T>
__global__ void fp8_quantize_kernel(const T* x, int64_t n, int64_t vec_chunks, const float* scale,
                                    __nv_fp8_interpretation_t kind, uint8_t* codes, unsigned int* amax_bits,
                                    float* scale_inv) {
  const float s = *scale;
  if (scale_inv != nullptr && blockIdx.x == 0 && threadIdx.x == 0) *scale_inv = 1.0f / s;
  unsigned int local = 0;
  const int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t c = first; c < vec_chunks; c += stride) {
    float v[fp8::kVec];
    fp8::load8(x + c * fp8::kVec, v);
    *reinterpret_cast<uint2*>(codes + c * fp8::kVec) = fp8::codes8(v, s, kind, local);
  }
  for (int64_t i = vec_chunks * fp8::kVec + first; i < n; i += stride) {
    const float v = to_f32(x[i]);
    local = max(local, fp8::magnitude_bits(v));
    codes[i] = fp8::code_of(v, s, kind);
  }
  fp8::fold_amax<kBlock>(local, amax_bits);
}

template <typename T>
void launch(const T* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
            float* scale_inv, cudaStream_t stream) {
  ND_CHECK(n >= 0 && scale != nullptr && amax != nullptr && (n == 0 || (x != nullptr && codes != nullptr)),
           "fp8_quantize: bad arguments");
  if (n == 0) return;
  const bool vec = aligned16(x) && (reinterpret_cast<uintptr_t>(codes) & 7) == 0;
  const int64_t vec_chunks = vec ? n / fp8::kVec : 0;
  const int64_t work = std::max<int64_t>(vec_chunks, n - vec_chunks * fp8::kVec);
  const int blocks = static_cast<int>(std::max<int64_t>(1, std::min(kMaxBlocks, ceil_div(work, kBlock))));
  fp8_quantize_kernel<T><<<blocks, kBlock, 0, stream_or_default(stream)>>>(
      x, n, vec_chunks, scale, fp8::interpretation(format), codes, reinterpret_cast<unsigned int*>(amax), scale_inv);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void fp8::quantize_flat(const float* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
                        float* scale_inv, cudaStream_t stream) {
  launch(x, n, scale, format, codes, amax, scale_inv, stream);
}
void fp8::quantize_flat(const bf16* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
                        float* scale_inv, cudaStream_t stream) {
  launch(x, n, scale, format, codes, amax, scale_inv, stream);
}

void fp8_quantize(const float* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
                  cudaStream_t stream) {
  launch(x, n, scale, format, codes, amax, nullptr, stream);
}
void fp8_quantize(const bf16* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
                  cudaStream_t stream) {
  launch(x, n, scale, format, codes, amax, nullptr, stream);
}

}  // namespace nd::cuda
