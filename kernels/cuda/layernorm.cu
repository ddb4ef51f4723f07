// Layer norm kernels, 16-byte accesses where rows are aligned. Forward: a warp per row, passes over
// the row (mean, variance of the centred values, output) re-read from L1/L2. Backward in one read of
// dout and x: dx, plus f32 dw and db sums per block that a second kernel adds in a fixed order
// (deterministic); rows wider than kFusedMaxColumns take a dx kernel and column_sum.cuh instead.
#include <algorithm>
#include <type_traits>

#include "kernels/cuda/column_sum.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/layernorm.h"
#include "kernels/cuda/layernorm_fused_backward.cuh"

namespace nd::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;

// Calls f(c, step) over the row's columns: step = kPack columns at a time (16-byte accesses) when
// kVec, else one at a time. Lane `lane` of the warp takes every 32nd pack.
template <bool kVec, typename T, typename F>
__device__ __forceinline__ void for_each_pack(int C, int lane, F f) {
  constexpr int kStep = kVec ? Pack16<T>::kSize : 1;
  for (int c = lane * kStep; c < C; c += 32 * kStep) f(c, std::integral_constant<int, kStep>());
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
    load_f32(xr + c, v);
#pragma unroll
    for (int k = 0; k < step.value; ++k) sum += v[k];
  });
  float mu = warp_sum(sum) / C;
  float sq = 0.0f;
  for_each_pack<kVec, T>(C, lane, [&](int c, auto step) {
    float v[step.value];
    load_f32(xr + c, v);
#pragma unroll
    for (int k = 0; k < step.value; ++k) sq += (v[k] - mu) * (v[k] - mu);
  });
  float rs = rsqrtf(warp_sum(sq) / C + eps);
  T* orow = out + row * C;
  for_each_pack<kVec, T>(C, lane, [&](int c, auto step) {
    float v[step.value], wv[step.value], bv[step.value];
    load_f32(xr + c, v);
    load_f32(w + c, wv);
    load_f32(b + c, bv);
#pragma unroll
    for (int k = 0; k < step.value; ++k) v[k] = (v[k] - mu) * rs * wv[k] + bv[k];
    store_f32(orow + c, v);
  });
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

// dx (+)= rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * w.
template <bool kVec, typename T>
__global__ void layernorm_dx_kernel(const T* dout, const T* x, const T* w, const float* mean, const float* rstd,
                                    GradDest<T> dx, int64_t N, int C) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* xr = x + row * C;
  const T* gr = dout + row * C;
  float mu = mean[row], rs = rstd[row];
  float sum_g = 0.0f, sum_gx = 0.0f;
  for_each_pack<kVec, T>(C, lane, [&](int c, auto step) {
    float xv[step.value], gv[step.value], wv[step.value];
    load_f32(xr + c, xv);
    load_f32(gr + c, gv);
    load_f32(w + c, wv);
#pragma unroll
    for (int k = 0; k < step.value; ++k) {
      float g = gv[k] * wv[k];
      sum_g += g;
      sum_gx += g * (xv[k] - mu) * rs;
    }
  });
  float mean_g = warp_sum(sum_g) / C, mean_gx = warp_sum(sum_gx) / C;
  T* dr = dx.ptr + row * C;
  for_each_pack<kVec, T>(C, lane, [&](int c, auto step) {
    float xv[step.value], gv[step.value], wv[step.value];
    load_f32(xr + c, xv);
    load_f32(gr + c, gv);
    load_f32(w + c, wv);
#pragma unroll
    for (int k = 0; k < step.value; ++k) {
      float xhat = (xv[k] - mu) * rs;
      gv[k] = rs * (gv[k] * wv[k] - mean_g - xhat * mean_gx);
    }
    store_grad_f32(dr + c, gv, dx.accumulate);
  });
}

// The two column sums of the parameter gradients, for rows wider than the fused backward takes:
// dw sums dout * xhat, db sums dout.
template <typename T>
struct DwDbValues {
  const T* dout;
  const T* x;
  const float* mean;
  const float* rstd;
  int C;
  template <int kStep>
  __device__ __forceinline__ void row(int64_t r, int c, float (&v)[2][kStep]) const {
    float g[kStep], xv[kStep];
    load_f32(dout + r * C + c, g);
    load_f32(x + r * C + c, xv);
    float mu = mean[r], rs = rstd[r];
#pragma unroll
    for (int k = 0; k < kStep; ++k) {
      v[0][k] = g[k] * (xv[k] - mu) * rs;
      v[1][k] = g[k];
    }
  }
};

// 16-byte packs work when every row starts aligned: C a multiple of the pack, base pointers aligned.
template <typename T>
bool rows_vectorizable(int64_t C, std::initializer_list<const void*> pointers) {
  if (C % Pack16<T>::kSize != 0) return false;
  for (const void* p : pointers)
    if (p && !aligned16(p)) return false;
  return true;
}

// Rows wider than kFusedMaxColumns: a warp per row for dx, then the column sums for dw and db (a
// second read of dout and x).
template <typename T>
void backward_two_pass(const LayernormBackwardArgs<T>& a, bool vec) {
  if (a.dx.ptr) {
    unsigned blocks = static_cast<unsigned>(ceil_div(a.N, kWarpsPerBlock));
    if (vec) {
      layernorm_dx_kernel<true, T>
          <<<blocks, kWarpsPerBlock * 32, 0, a.stream>>>(a.dout, a.x, a.w, a.mean, a.rstd, a.dx, a.N, a.C);
    } else {
      layernorm_dx_kernel<false, T>
          <<<blocks, kWarpsPerBlock * 32, 0, a.stream>>>(a.dout, a.x, a.w, a.mean, a.rstd, a.dx, a.N, a.C);
    }
    CUDA_CHECK(cudaGetLastError());
  }
  if (!a.dw.ptr && !a.db.ptr) return;
  // Enough slabs for about a thousand blocks (the GPU stays busy), at least 8 rows per slab.
  int64_t column_blocks = ceil_div(a.C, kPackColumns * (vec ? Pack16<T>::kSize : 1));
  int64_t slabs = std::max<int64_t>(1, std::min<int64_t>(ceil_div(a.N, 8), 1024 / column_blocks));
  int64_t rows_per_slab = ceil_div(a.N, slabs);
  DwDbValues<T> values{a.dout, a.x, a.mean, a.rstd, a.C};
  ColumnDests<T, 2> dests{{a.dw, a.db}};
  if (vec) {
    column_sums<2, Pack16<T>::kSize>(values, dests, a.N, a.C, rows_per_slab, a.stream);
  } else {
    column_sums<2, 1>(values, dests, a.N, a.C, rows_per_slab, a.stream);
  }
}

}  // namespace

template <typename T>
void layernorm_forward(const T* x, const T* w, const T* b, T* out, StatType<T>* mean, StatType<T>* rstd, int64_t N,
                       int64_t C, float eps, cudaStream_t stream) {
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
void layernorm_backward(const T* dout, const T* x, const T* w, const StatType<T>* mean, const StatType<T>* rstd,
                        GradDest<T> dx, GradDest<T> dw, GradDest<T> db, int64_t N, int64_t C, cudaStream_t stream) {
  ND_CHECK(N >= 0 && C > 0 && C < (1 << 30), "layernorm_backward: bad shape N=" << N << " C=" << C);
  ND_CHECK(dout && x && w && mean && rstd, "layernorm_backward: null input pointer");
  stream = stream_or_default(stream);
  if (N == 0) {
    // No rows: the sums are zero, which a first contribution still has to write.
    for (const GradDest<T>& d : {dw, db})
      if (d.ptr && !d.accumulate) CUDA_CHECK(cudaMemsetAsync(d.ptr, 0, C * sizeof(T), stream));
    return;
  }
  if (!dx.ptr && !dw.ptr && !db.ptr) return;
  LayernormBackwardArgs<T> args{dout, x, w, mean, rstd, dx, dw, db, N, static_cast<int>(C), stream};
  bool vec = rows_vectorizable<T>(C, {dout, x, w, dx.ptr});
  if (C > kFusedMaxColumns) {
    backward_two_pass(args, vec);
  } else if (vec) {
    layernorm_backward_fused<true>(args);
  } else {
    layernorm_backward_fused<false>(args);
  }
}

#define ND_INSTANTIATE_LAYERNORM(T)                                                                              \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, float*, float*, int64_t, int64_t, float,  \
                                     cudaStream_t);                                                              \
  template void layernorm_backward<T>(const T*, const T*, const T*, const float*, const float*, GradDest<T>,     \
                                      GradDest<T>, GradDest<T>, int64_t, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_LAYERNORM);

}  // namespace nd::cuda
