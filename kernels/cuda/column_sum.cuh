// Deterministic column sums over the rows of a (M, C) matrix, for the parameter gradients whose rows
// are the batch (linear's db, layernorm's dw and db). The rows are cut into slabs; a block of
// (kPackColumns packs of columns, kRowThreads row lanes) sums its slab's rows in a fixed order into
// f32 partials, then one thread per column adds the slabs in order into the gradient.
#pragma once
#include "kernels/cuda/common.cuh"
#include "tensor/storage.h"

namespace nd::cuda {

constexpr int kPackColumns = 32;  // packs of columns per block (threadIdx.x)
constexpr int kRowThreads = 8;    // row lanes per block (threadIdx.y)

// The kOut gradients the sums go into (a null pointer skips one).
template <typename T, int kOut>
struct ColumnDests {
  GradDest<T> d[kOut];
};

// `values.template row<kStep>(r, c, v)` writes the kOut values of row r, columns [c, c + kStep)
// into v[kOut][kStep] (kStep > 1: one 16-byte pack). partial (kOut, slabs, C).
template <int kOut, int kStep, typename Values>
__global__ void column_partial_kernel(Values values, float* partial, int64_t M, int C, int64_t rows_per_slab) {
  constexpr int kColumns = kPackColumns * kStep;
  __shared__ float sums[kOut][kRowThreads][kColumns];
  int c0 = blockIdx.x * kColumns + threadIdx.x * kStep;
  int64_t begin = blockIdx.y * rows_per_slab;
  int64_t end = min(M, begin + rows_per_slab);
  float acc[kOut][kStep];
#pragma unroll
  for (int o = 0; o < kOut; ++o)
#pragma unroll
    for (int k = 0; k < kStep; ++k) acc[o][k] = 0.0f;
  if (c0 < C) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowThreads) {
      float v[kOut][kStep];
      values.template row<kStep>(r, c0, v);
#pragma unroll
      for (int o = 0; o < kOut; ++o)
#pragma unroll
        for (int k = 0; k < kStep; ++k) acc[o][k] += v[o][k];
    }
  }
#pragma unroll
  for (int o = 0; o < kOut; ++o)
#pragma unroll
    for (int k = 0; k < kStep; ++k) sums[o][threadIdx.y][threadIdx.x * kStep + k] = acc[o][k];
  __syncthreads();
  int tid = threadIdx.y * kPackColumns + threadIdx.x;
  for (int col = tid; col < kColumns; col += kPackColumns * kRowThreads) {
    int c = blockIdx.x * kColumns + col;
    if (c >= C) continue;
#pragma unroll
    for (int o = 0; o < kOut; ++o) {
      float total = 0.0f;
      for (int k = 0; k < kRowThreads; ++k) total += sums[o][k][col];
      partial[(static_cast<int64_t>(o) * gridDim.y + blockIdx.y) * C + c] = total;
    }
  }
}

template <typename T, int kOut>
__global__ void column_finish_kernel(const float* partial, ColumnDests<T, kOut> dests, int slabs, int C) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
#pragma unroll
  for (int o = 0; o < kOut; ++o) {
    T* p = dests.d[o].ptr;
    if (p == nullptr) continue;
    float total = 0.0f;
    for (int s = 0; s < slabs; ++s) total += partial[(static_cast<int64_t>(o) * slabs + s) * C + c];
    p[c] = from_f32<T>(dests.d[o].accumulate ? to_f32(p[c]) + total : total);
  }
}

// dests[o] (C) (+)= the sum over rows [0, M) of value o, the rows cut into slabs of rows_per_slab.
// kStep > 1 reads 16-byte packs: C a multiple of kStep and every row 16-byte aligned.
template <int kOut, int kStep, typename T, typename Values>
void column_sums(const Values& values, const ColumnDests<T, kOut>& dests, int64_t M, int C, int64_t rows_per_slab,
                 cudaStream_t stream) {
  if (M == 0) return;
  // Never the legacy default stream: it does not wait for the (non-blocking) compute stream.
  stream = stream_or_default(stream);
  int64_t slabs = ceil_div(M, rows_per_slab);
  int device = current_cuda_device();
  float* partial = static_cast<float*>(device_alloc(kOut * slabs * C * sizeof(float), device));
  dim3 grid(static_cast<unsigned>(ceil_div(C, kPackColumns * kStep)), static_cast<unsigned>(slabs));
  column_partial_kernel<kOut, kStep><<<grid, dim3(kPackColumns, kRowThreads), 0, stream>>>(values, partial, M, C,
                                                                                           rows_per_slab);
  CUDA_CHECK(cudaGetLastError());
  column_finish_kernel<T, kOut><<<static_cast<unsigned>(ceil_div(C, 256)), 256, 0, stream>>>(
      partial, dests, static_cast<int>(slabs), C);
  CUDA_CHECK(cudaGetLastError());
  device_free(partial, device);  // reused only by later work on this stream
}

// The rows of dout (M, N) as column_sums values: the bias gradient of a linear or a broadcast add.
template <typename T>
struct DoutValues {
  const T* dout;
  int64_t N;
  template <int kStep>
  __device__ __forceinline__ void row(int64_t r, int c, float (&v)[1][kStep]) const {
    load_f32(dout + r * N + c, v[0]);
  }
};

// db (N) (+)= the sum over rows of dout (M, N), rows in a fixed order (deterministic).
template <typename T>
void row_sum_into(const T* dout, GradDest<T> db, int64_t M, int64_t N, cudaStream_t stream) {
  int64_t slabs = std::min<int64_t>(std::min<int64_t>(ceil_div(M, 256), 128), M);
  int64_t rows_per_slab = ceil_div(M, slabs);
  ColumnDests<T, 1> dests{{db}};
  int n = static_cast<int>(N);
  if (N % Pack16<T>::kSize == 0 && aligned16(dout)) {
    column_sums<1, Pack16<T>::kSize>(DoutValues<T>{dout, N}, dests, M, n, rows_per_slab, stream);
  } else {
    column_sums<1, 1>(DoutValues<T>{dout, N}, dests, M, n, rows_per_slab, stream);
  }
}

}  // namespace nd::cuda
