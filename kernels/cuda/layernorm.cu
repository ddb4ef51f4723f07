// Layer norm kernels, 16-byte accesses where rows are aligned. Forward: a warp per row, passes over
// the row (mean, variance of the centred values, output) re-read from L1/L2. Backward: a warp per
// row for dx; dw and db in two deterministic steps: per-slab partial column sums (f32), then a
// fixed-order sum of the slabs.
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/layernorm.h"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;

// Calls f(c, x_pack...) over the row's columns: kPack at a time (16-byte accesses) when kVec, else
// one at a time. Lane `lane` of the warp takes every 32nd pack.
template <bool kVec, typename T, typename F>
__device__ __forceinline__ void for_each_pack(int C, int lane, F f) {
  constexpr int kStep = kVec ? Pack16<T>::kSize : 1;
  for (int c = lane * kStep; c < C; c += 32 * kStep) f(c, std::integral_constant<int, kStep>());
}

template <int kStep, typename T>
__device__ __forceinline__ void load_pack(const T* p, float (&out)[kStep]) {
  if constexpr (kStep * sizeof(T) == 16) {
    Pack16<T> v = load16(p);
#pragma unroll
    for (int k = 0; k < kStep; ++k) out[k] = to_f32(v.v[k]);
  } else {
#pragma unroll
    for (int k = 0; k < kStep; ++k) out[k] = to_f32(p[k]);
  }
}

template <int kStep, typename T>
__device__ __forceinline__ void store_pack(T* p, const float (&in)[kStep]) {
  if constexpr (kStep * sizeof(T) == 16) {
    Pack16<T> v;
#pragma unroll
    for (int k = 0; k < kStep; ++k) v.v[k] = from_f32<T>(in[k]);
    store16(p, v);
  } else {
#pragma unroll
    for (int k = 0; k < kStep; ++k) p[k] = from_f32<T>(in[k]);
  }
}

template <bool kVec, typename T>
__global__ void layernorm_forward_kernel(const T* x, const T* w, const T* b, T* out, float* mean, float* rstd,
                                         int64_t N, int C, float eps) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* xr = x + row * C;
  float sum = 0.0f;
  for_each_pack<kVec, T>(C, lane, [&](int c, auto step) {
    float v[step.value];
    load_pack(xr + c, v);
#pragma unroll
    for (int k = 0; k < step.value; ++k) sum += v[k];
  });
  float mu = warp_sum(sum) / C;
  float sq = 0.0f;
  for_each_pack<kVec, T>(C, lane, [&](int c, auto step) {
    float v[step.value];
    load_pack(xr + c, v);
#pragma unroll
    for (int k = 0; k < step.value; ++k) sq += (v[k] - mu) * (v[k] - mu);
  });
  float rs = rsqrtf(warp_sum(sq) / C + eps);
  T* orow = out + row * C;
  for_each_pack<kVec, T>(C, lane, [&](int c, auto step) {
    float v[step.value], wv[step.value], bv[step.value];
    load_pack(xr + c, v);
    load_pack(w + c, wv);
    load_pack(b + c, bv);
#pragma unroll
    for (int k = 0; k < step.value; ++k) v[k] = (v[k] - mu) * rs * wv[k] + bv[k];
    store_pack(orow + c, v);
  });
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * w.
template <bool kVec, typename T>
__global__ void layernorm_dx_kernel(const T* dout, const T* x, const T* w, const float* mean, const float* rstd,
                                    T* dx, int64_t N, int C) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* xr = x + row * C;
  const T* gr = dout + row * C;
  float mu = mean[row], rs = rstd[row];
  float sum_g = 0.0f, sum_gx = 0.0f;
  for_each_pack<kVec, T>(C, lane, [&](int c, auto step) {
    float xv[step.value], gv[step.value], wv[step.value];
    load_pack(xr + c, xv);
    load_pack(gr + c, gv);
    load_pack(w + c, wv);
#pragma unroll
    for (int k = 0; k < step.value; ++k) {
      float g = gv[k] * wv[k];
      sum_g += g;
      sum_gx += g * (xv[k] - mu) * rs;
    }
  });
  float mean_g = warp_sum(sum_g) / C, mean_gx = warp_sum(sum_gx) / C;
  T* dr = dx + row * C;
  for_each_pack<kVec, T>(C, lane, [&](int c, auto step) {
    float xv[step.value], gv[step.value], wv[step.value], acc[step.value];
    load_pack(xr + c, xv);
    load_pack(gr + c, gv);
    load_pack(w + c, wv);
    load_pack(dr + c, acc);
#pragma unroll
    for (int k = 0; k < step.value; ++k) {
      float xhat = (xv[k] - mu) * rs;
      acc[k] += rs * (gv[k] * wv[k] - mean_g - xhat * mean_gx);
    }
    store_pack(dr + c, acc);
  });
}

constexpr int kPackColumns = 32;  // packs of columns per block (threadIdx.x)
constexpr int kRowThreads = 8;    // row lanes per block (threadIdx.y)

// Block (32 packs of columns, 8 row lanes) sums dout * xhat and dout over the rows of its slab in a
// fixed order -> partial_dw[slab][c], partial_db[slab][c].
template <bool kVec, typename T>
__global__ void layernorm_dwdb_partial_kernel(const T* dout, const T* x, const float* mean, const float* rstd,
                                              float* partial_dw, float* partial_db, int64_t N, int C,
                                              int64_t rows_per_slab) {
  constexpr int kStep = kVec ? Pack16<T>::kSize : 1;
  constexpr int kColumns = kPackColumns * kStep;
  __shared__ float sdw[kRowThreads][kColumns];
  __shared__ float sdb[kRowThreads][kColumns];
  int c0 = blockIdx.x * kColumns + threadIdx.x * kStep;
  int64_t begin = blockIdx.y * rows_per_slab;
  int64_t end = min(N, begin + rows_per_slab);
  float acc_w[kStep], acc_b[kStep];
#pragma unroll
  for (int k = 0; k < kStep; ++k) acc_w[k] = acc_b[k] = 0.0f;
  if (c0 < C) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowThreads) {
      float g[kStep], xv[kStep];
      load_pack(dout + r * C + c0, g);
      load_pack(x + r * C + c0, xv);
      float mu = mean[r], rs = rstd[r];
#pragma unroll
      for (int k = 0; k < kStep; ++k) {
        acc_w[k] += g[k] * (xv[k] - mu) * rs;
        acc_b[k] += g[k];
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kStep; ++k) {
    sdw[threadIdx.y][threadIdx.x * kStep + k] = acc_w[k];
    sdb[threadIdx.y][threadIdx.x * kStep + k] = acc_b[k];
  }
  __syncthreads();
  int tid = threadIdx.y * kPackColumns + threadIdx.x;
  for (int col = tid; col < kColumns; col += kPackColumns * kRowThreads) {
    int c = blockIdx.x * kColumns + col;
    if (c >= C) continue;
    float tw = 0.0f, tb = 0.0f;
    for (int k = 0; k < kRowThreads; ++k) {
      tw += sdw[k][col];
      tb += sdb[k][col];
    }
    partial_dw[static_cast<int64_t>(blockIdx.y) * C + c] = tw;
    partial_db[static_cast<int64_t>(blockIdx.y) * C + c] = tb;
  }
}

template <typename T>
__global__ void layernorm_dwdb_finish_kernel(const float* partial_dw, const float* partial_db, T* dw, T* db,
                                             int slabs, int C) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float tw = 0.0f, tb = 0.0f;
  for (int s = 0; s < slabs; ++s) {
    tw += partial_dw[static_cast<int64_t>(s) * C + c];
    tb += partial_db[static_cast<int64_t>(s) * C + c];
  }
  if (dw) dw[c] = from_f32<T>(to_f32(dw[c]) + tw);
  if (db) db[c] = from_f32<T>(to_f32(db[c]) + tb);
}

// 16-byte packs work when every row starts aligned: C a multiple of the pack, base pointers aligned.
template <typename T>
bool rows_vectorizable(int64_t C, std::initializer_list<const void*> pointers) {
  if (C % Pack16<T>::kSize != 0) return false;
  for (const void* p : pointers)
    if (p && !aligned16(p)) return false;
  return true;
}

}  // namespace

template <typename T>
void layernorm_forward(const T* x, const T* w, const T* b, T* out, float* mean, float* rstd, int64_t N, int64_t C,
                       float eps, cudaStream_t stream) {
  ND_CHECK(N >= 0 && C > 0 && C < (1 << 30), "layernorm_forward: bad shape N=" << N << " C=" << C);
  ND_CHECK(x && w && b && out && mean && rstd, "layernorm_forward: null pointer");
  if (N == 0) return;
  unsigned blocks = static_cast<unsigned>(ceil_div(N, kWarpsPerBlock));
  stream = stream_or_default(stream);
  if (rows_vectorizable<T>(C, {x, w, b, out})) {
    layernorm_forward_kernel<true, T><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(x, w, b, out, mean, rstd, N,
                                                                                  static_cast<int>(C), eps);
  } else {
    layernorm_forward_kernel<false, T><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(x, w, b, out, mean, rstd, N,
                                                                                   static_cast<int>(C), eps);
  }
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void layernorm_backward(const T* dout, const T* x, const T* w, const float* mean, const float* rstd, T* dx, T* dw,
                        T* db, int64_t N, int64_t C, cudaStream_t stream) {
  ND_CHECK(N >= 0 && C > 0 && C < (1 << 30), "layernorm_backward: bad shape N=" << N << " C=" << C);
  ND_CHECK(dout && x && w && mean && rstd, "layernorm_backward: null input pointer");
  if (N == 0) return;
  stream = stream_or_default(stream);
  int c = static_cast<int>(C);
  bool vec = rows_vectorizable<T>(C, {dout, x, w, dx});
  if (dx) {
    unsigned blocks = static_cast<unsigned>(ceil_div(N, kWarpsPerBlock));
    if (vec) {
      layernorm_dx_kernel<true, T><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(dout, x, w, mean, rstd, dx, N, c);
    } else {
      layernorm_dx_kernel<false, T><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(dout, x, w, mean, rstd, dx, N, c);
    }
    CUDA_CHECK(cudaGetLastError());
  }
  if (!dw && !db) return;
  // Enough slabs for about a thousand blocks (the GPU stays busy), at least 8 rows per slab.
  int64_t columns_per_block = kPackColumns * (vec ? Pack16<T>::kSize : 1);
  int64_t column_blocks = ceil_div(C, columns_per_block);
  int64_t slabs = std::max<int64_t>(1, std::min<int64_t>(ceil_div(N, 8), 1024 / column_blocks));
  int64_t rows_per_slab = ceil_div(N, slabs);
  slabs = ceil_div(N, rows_per_slab);
  float* partial = static_cast<float*>(device_alloc(2 * slabs * C * sizeof(float), current_cuda_device()));
  dim3 grid(static_cast<unsigned>(column_blocks), static_cast<unsigned>(slabs));
  dim3 block(kPackColumns, kRowThreads);
  if (vec) {
    layernorm_dwdb_partial_kernel<true, T><<<grid, block, 0, stream>>>(dout, x, mean, rstd, partial,
                                                                       partial + slabs * C, N, c, rows_per_slab);
  } else {
    layernorm_dwdb_partial_kernel<false, T><<<grid, block, 0, stream>>>(dout, x, mean, rstd, partial,
                                                                        partial + slabs * C, N, c, rows_per_slab);
  }
  CUDA_CHECK(cudaGetLastError());
  layernorm_dwdb_finish_kernel<T><<<static_cast<unsigned>(ceil_div(C, 256)), 256, 0, stream>>>(
      partial, partial + slabs * C, dw, db, static_cast<int>(slabs), c);
  CUDA_CHECK(cudaGetLastError());
  device_free(partial, current_cuda_device());  // reused only by later work on this stream
}

#define ND_INSTANTIATE_LAYERNORM(T)                                                                              \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, float*, float*, int64_t, int64_t, float,  \
                                     cudaStream_t);                                                              \
  template void layernorm_backward<T>(const T*, const T*, const T*, const float*, const float*, T*, T*, T*,      \
                                      int64_t, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_LAYERNORM);

}  // namespace nd::cuda
