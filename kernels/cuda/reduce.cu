// CUDA reduce kernels: grid-stride loops over 16-byte vectors (4 f32 or 8 bf16) when both
// pointers are aligned, one element per thread otherwise. Memory-bound: 2 reads + 1 write, so
// each thread keeps several vectors' loads in flight before it adds and stores them.
#include <algorithm>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/reduce.h"

namespace nd::cuda {

namespace {

constexpr int kBlock = 256;
constexpr int kVecBlock = 512;  // threads per block of the vector kernel
constexpr int64_t kMaxBlocks = 8192;  // grid-stride beyond this: enough to fill any current GPU

int grid_for(int64_t work) {
  return static_cast<int>(std::max<int64_t>(1, std::min(kMaxBlocks, ceil_div(work, kBlock))));
}

// Elements of T in one 16-byte vector.
template <typename T>
constexpr int kVec = Pack16<T>::kSize;

// Vectors each thread loads before it adds: enough bytes in flight per SM that a grid capped
// at a fraction of the SMs (max_blocks) still runs near the memory bandwidth.
constexpr int kUnroll = 4;

template <typename T>
__global__ void reduce_add_vec_kernel(T* dst, const T* src, int64_t nvec, float scale) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; first < nvec; first += kUnroll * stride) {
    uint4 a[kUnroll], b[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t v = first + u * stride;
      if (v < nvec) {
        a[u] = reinterpret_cast<const uint4*>(dst)[v];
        b[u] = reinterpret_cast<const uint4*>(src)[v];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t v = first + u * stride;
      if (v >= nvec) continue;
      T* pa = reinterpret_cast<T*>(&a[u]);
      const T* pb = reinterpret_cast<const T*>(&b[u]);
#pragma unroll
      for (int j = 0; j < kVec<T>; ++j) pa[j] = from_f32<T>((to_f32(pa[j]) + to_f32(pb[j])) * scale);
      reinterpret_cast<uint4*>(dst)[v] = a[u];
    }
  }
}

template <typename T>
__global__ void reduce_add_scalar_kernel(T* dst, const T* src, int64_t n, float scale) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = from_f32<T>((to_f32(dst[i]) + to_f32(src[i])) * scale);
}

template <typename T>
__global__ void reduce_rows_kernel(T* dst, const T* rows, int nrows, int64_t n, float scale, int own_row) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float acc = 0.0f;
    for (int r = 0; r < nrows; ++r) {
      float v = to_f32(r == own_row ? dst[i] : rows[r * n + i]);
      acc = r == 0 ? v : acc + v;
    }
    dst[i] = from_f32<T>(acc * scale);
  }
}

template <typename T>
void launch_reduce_add(T* dst, const T* src, int64_t n, float scale, int max_blocks, cudaStream_t stream) {
  ND_CHECK(n >= 0, "reduce_add: negative count " << n);
  ND_CHECK(max_blocks >= 0, "reduce_add: max_blocks " << max_blocks << " must be >= 0");
  if (n == 0) return;
  ND_CHECK(dst && src, "reduce_add: null pointer");
  stream = stream_or_default(stream);
  const int64_t cap = max_blocks > 0 ? max_blocks : kMaxBlocks;
  int64_t nvec = aligned16(dst) && aligned16(src) ? n / kVec<T> : 0;
  if (nvec > 0) {
    const int64_t per_block = int64_t{kVecBlock} * kUnroll;  // vectors one block covers per pass
    int grid = static_cast<int>(std::min(cap, std::max<int64_t>(1, ceil_div(nvec, per_block))));
    reduce_add_vec_kernel<T><<<grid, kVecBlock, 0, stream>>>(dst, src, nvec, scale);
  }
  int64_t done = nvec * kVec<T>;
  if (done < n) {
    int grid = static_cast<int>(std::min<int64_t>(cap, grid_for(n - done)));
    reduce_add_scalar_kernel<T><<<grid, kBlock, 0, stream>>>(dst + done, src + done, n - done, scale);
  }
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_reduce_rows(T* dst, const T* rows, int nrows, int64_t n, float scale, int own_row, cudaStream_t stream) {
  ND_CHECK(n >= 0 && nrows >= 1, "reduce_rows: bad shape (" << nrows << ", " << n << ")");
  ND_CHECK(own_row >= -1 && own_row < nrows, "reduce_rows: own row " << own_row << " of " << nrows);
  if (n == 0) return;
  reduce_rows_kernel<T><<<grid_for(n), kBlock, 0, stream_or_default(stream)>>>(dst, rows, nrows, n, scale, own_row);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void reduce_add(float* dst, const float* src, int64_t n, float scale, cudaStream_t stream, int max_blocks) {
  launch_reduce_add(dst, src, n, scale, max_blocks, stream);
}
void reduce_add(bf16* dst, const bf16* src, int64_t n, float scale, cudaStream_t stream, int max_blocks) {
  launch_reduce_add(dst, src, n, scale, max_blocks, stream);
}
void reduce_add(f16* dst, const f16* src, int64_t n, float scale, cudaStream_t stream, int max_blocks) {
  launch_reduce_add(dst, src, n, scale, max_blocks, stream);
}
void reduce_rows(float* dst, const float* rows, int nrows, int64_t n, float scale, int own_row, cudaStream_t stream) {
  launch_reduce_rows(dst, rows, nrows, n, scale, own_row, stream);
}
void reduce_rows(bf16* dst, const bf16* rows, int nrows, int64_t n, float scale, int own_row, cudaStream_t stream) {
  launch_reduce_rows(dst, rows, nrows, n, scale, own_row, stream);
}
void reduce_rows(f16* dst, const f16* rows, int nrows, int64_t n, float scale, int own_row, cudaStream_t stream) {
  launch_reduce_rows(dst, rows, nrows, n, scale, own_row, stream);
}

}  // namespace nd::cuda
