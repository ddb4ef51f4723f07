// The FP8 quantise of fp8_quantize.h: a grid-stride loop, the amax reduced in a warp, then a block,
// then one atomic per block. A non-negative float's bits order like the float, and a NaN's
// magnitude bits lie above infinity's, so an unsigned max of |x|'s bits is the amax with NaN winning.
#include <cuda_fp8.h>

#include <algorithm>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/fp8_quantize.h"

namespace nd::cuda {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 4096;

template <typename T>
__global__ void fp8_quantize_kernel(const T* x, int64_t n, const float* scale, __nv_fp8_interpretation_t kind,
                                    uint8_t* codes, unsigned int* amax_bits) {
  const float s = *scale;
  unsigned int local = 0;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = to_f32(x[i]);
    local = max(local, __float_as_uint(v) & 0x7fffffffu);
    codes[i] = __nv_cvt_float_to_fp8(v * s, __NV_SATFINITE, kind);
  }
  for (int offset = 16; offset > 0; offset /= 2) local = max(local, __shfl_down_sync(0xffffffffu, local, offset));
  __shared__ unsigned int warp_max[kBlock / 32];
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = local;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned int block = 0;
    for (int w = 0; w < kBlock / 32; ++w) block = max(block, warp_max[w]);
    atomicMax(amax_bits, block);
  }
}

template <typename T>
void launch(const T* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
            cudaStream_t stream) {
  ND_CHECK(n >= 0 && scale != nullptr && amax != nullptr && (n == 0 || (x != nullptr && codes != nullptr)),
           "fp8_quantize: bad arguments");
  if (n == 0) return;
  const int blocks = static_cast<int>(std::max<int64_t>(1, std::min(kMaxBlocks, ceil_div(n, kBlock))));
  const __nv_fp8_interpretation_t kind = format == Fp8Format::E4M3 ? __NV_E4M3 : __NV_E5M2;
  fp8_quantize_kernel<T><<<blocks, kBlock, 0, stream_or_default(stream)>>>(x, n, scale, kind, codes,
                                                                          reinterpret_cast<unsigned int*>(amax));
  CUDA_CHECK(cudaGetLastError());
}

// One 32 x 32 tile per block of 32 x 8 threads: loaded with coalesced rows, written as codes by
// rows and, from shared memory, as the transpose's codes by rows of the transpose.
constexpr int kTile = 32, kTileRows = 8;

template <typename T>
__global__ void fp8_quantize_transpose_kernel(const T* x, int64_t rows, int64_t cols, const float* scale,
                                              __nv_fp8_interpretation_t kind, uint8_t* codes, uint8_t* codes_t,
                                              unsigned int* amax_bits, float* scale_inv) {
  __shared__ uint8_t tile[kTile][kTile + 4];
  const float s = *scale;
  if (scale_inv != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0)
    *scale_inv = 1.0f / s;
  const int64_t row0 = (int64_t)blockIdx.y * kTile, col0 = (int64_t)blockIdx.x * kTile;
  unsigned int local = 0;
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    const int64_t row = row0 + r, col = col0 + threadIdx.x;
    if (row < rows && col < cols) {
      const float v = to_f32(x[row * cols + col]);
      local = max(local, __float_as_uint(v) & 0x7fffffffu);
      const uint8_t c = __nv_cvt_float_to_fp8(v * s, __NV_SATFINITE, kind);
      if (codes != nullptr) codes[row * cols + col] = c;
      tile[r][threadIdx.x] = c;
    }
  }
  __syncthreads();
  if (codes_t != nullptr) {
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      const int64_t out_row = col0 + r, out_col = row0 + threadIdx.x;  // (cols, rows)
      if (out_row < cols && out_col < rows) codes_t[out_row * rows + out_col] = tile[threadIdx.x][r];
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) local = max(local, __shfl_down_sync(0xffffffffu, local, offset));
  __shared__ unsigned int warp_max[kTileRows];
  if (threadIdx.x == 0) warp_max[threadIdx.y] = local;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    unsigned int block = 0;
    for (int w = 0; w < kTileRows; ++w) block = max(block, warp_max[w]);
    atomicMax(amax_bits, block);
  }
}

template <typename T>
void launch_transpose(const T* x, int64_t rows, int64_t cols, const float* scale, Fp8Format format, uint8_t* codes,
                      uint8_t* codes_t, float* amax, float* scale_inv, cudaStream_t stream) {
  ND_CHECK(rows >= 0 && cols >= 0 && scale != nullptr && amax != nullptr, "fp8_quantize_transpose: bad arguments");
  if (rows == 0 || cols == 0) return;
  ND_CHECK(x != nullptr && (codes != nullptr || codes_t != nullptr), "fp8_quantize_transpose: nothing to write");
  ND_CHECK(ceil_div(rows, kTile) <= 65535, "fp8_quantize_transpose: " << rows << " rows is more than the grid takes");
  const __nv_fp8_interpretation_t kind = format == Fp8Format::E4M3 ? __NV_E4M3 : __NV_E5M2;
  const dim3 grid(static_cast<unsigned>(ceil_div(cols, kTile)), static_cast<unsigned>(ceil_div(rows, kTile)));
  fp8_quantize_transpose_kernel<T><<<grid, dim3(kTile, kTileRows), 0, stream_or_default(stream)>>>(
      x, rows, cols, scale, kind, codes, codes_t, reinterpret_cast<unsigned int*>(amax), scale_inv);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void fp8_quantize_transpose(const float* x, int64_t rows, int64_t cols, const float* scale, Fp8Format format,
                            uint8_t* codes, uint8_t* codes_t, float* amax, float* scale_inv, cudaStream_t stream) {
  launch_transpose(x, rows, cols, scale, format, codes, codes_t, amax, scale_inv, stream);
}
void fp8_quantize_transpose(const bf16* x, int64_t rows, int64_t cols, const float* scale, Fp8Format format,
                            uint8_t* codes, uint8_t* codes_t, float* amax, float* scale_inv, cudaStream_t stream) {
  launch_transpose(x, rows, cols, scale, format, codes, codes_t, amax, scale_inv, stream);
}

void fp8_quantize(const float* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
                  cudaStream_t stream) {
  launch(x, n, scale, format, codes, amax, stream);
}
void fp8_quantize(const bf16* x, int64_t n, const float* scale, Fp8Format format, uint8_t* codes, float* amax,
                  cudaStream_t stream) {
  launch(x, n, scale, format, codes, amax, stream);
}

}  // namespace nd::cuda
