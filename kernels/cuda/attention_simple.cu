// Simple flash-attention kernels (see attention_simple.cuh). Forward and dq walk key tiles for a
// tile of query rows; dk/dv walk query tiles for a tile of key rows, so every gradient element is
// written by one thread: no atomics, deterministic. With kDropout the four threads of a quad draw
// the keep bits of four consecutive elements at once, one Philox each, and share them by ballot.
#include "kernels/cuda/attention_simple.cuh"
#include "kernels/cuda/common.cuh"

namespace nd::cuda::detail {

namespace {

constexpr int kRows = 32;              // rows per tile (query or key)
constexpr int kThreads = kRows * 4;    // a quad per row
constexpr int kStride = 128 + 4;       // shared row stride in floats (padded)

struct Layout {
  int64_t T, C, NH;
  int hs;
  // Element (b, t, which (0 q, 1 k, 2 v), h, dim) of qkv.
  __device__ int64_t qkv_at(int64_t b, int64_t t, int which, int64_t h, int d) const {
    return (b * T + t) * 3 * C + which * C + h * hs + d;
  }
  __device__ int64_t out_at(int64_t b, int64_t t, int64_t h, int d) const { return (b * T + t) * C + h * hs + d; }
};

__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  x += __shfl_xor_sync(0xffffffffu, x, 2);
  return x;
}

// Bit u = keep of thread u of this thread's quad (all lanes of the warp must call it).
__device__ __forceinline__ unsigned quad_keep_bits(bool keep) {
  return (__ballot_sync(0xffffffffu, keep) >> (threadIdx.x & 28)) & 0xFu;
}

// Loads rows [first, first + kRows) of part `which` of head (b, h) into tile (f32); rows >= T are zero.
template <typename T>
__device__ void load_tile(float (*tile)[kStride], const T* qkv, const Layout& L, int64_t b, int64_t h, int which,
                          int64_t first) {
  for (int e = threadIdx.x; e < kRows * L.hs; e += blockDim.x) {
    int r = e / L.hs, d = e % L.hs;
    int64_t t = first + r;
    tile[r][d] = t < L.T ? to_f32(qkv[L.qkv_at(b, t, which, h, d)]) : 0.0f;
  }
}

template <typename T, int kPer, bool kDropout>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const T* qkv, T* out, float* lse, Layout L, float scale, AttentionDropout drop) {
  if (kDropout) drop = drop.resolved();  // the step's counter, read on the device
  __shared__ float k_tile[kRows][kStride];
  __shared__ float v_tile[kRows][kStride];
  int64_t bh = blockIdx.y, b = bh / L.NH, h = bh % L.NH;
  int64_t first = static_cast<int64_t>(blockIdx.x) * kRows;
  int row = threadIdx.x / 4, sub = threadIdx.x % 4;
  int64_t i = first + row;
  bool live = i < L.T;
  int per = L.hs / 4;
  float q[kPer], o[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    q[j] = (j < per && live) ? to_f32(qkv[L.qkv_at(b, i, 0, h, sub + 4 * j)]) * scale : 0.0f;
    o[j] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const uint64_t row_counter = kDropout ? drop.row_counter(bh, L.T, i) : 0;
  unsigned keep_bits = 0;  // keys jj & ~3 .. (jj & ~3) + 3 of this row
  int64_t last = min(L.T - 1, first + kRows - 1);
  for (int64_t kt = 0; kt <= last; kt += kRows) {
    __syncthreads();
    load_tile(k_tile, qkv, L, b, h, 1, kt);
    load_tile(v_tile, qkv, L, b, h, 2, kt);
    __syncthreads();
    for (int jj = 0; jj < kRows; ++jj) {
      float s = 0.0f;
#pragma unroll
      for (int j = 0; j < kPer; ++j)
        if (j < per) s += q[j] * k_tile[jj][sub + 4 * j];
      s = quad_sum(s);
      if (kDropout && jj % 4 == 0) {
        int64_t key = kt + jj + sub;
        keep_bits = quad_keep_bits(live && key <= i && drop.kept(row_counter + key));
      }
      if (!live || kt + jj > i) continue;
      float m_new = fmaxf(m, s);
      float correction = expf(m - m_new), p = expf(s - m_new);
      l = l * correction + p;  // the softmax statistics ignore the dropout
      float weight = kDropout && !((keep_bits >> (jj & 3)) & 1u) ? 0.0f : p;
#pragma unroll
      for (int j = 0; j < kPer; ++j)
        if (j < per) o[j] = o[j] * correction + weight * v_tile[jj][sub + 4 * j];
      m = m_new;
    }
  }
  if (!live) return;
  float inv = (kDropout ? drop.keep_scale() : 1.0f) / l;
#pragma unroll
  for (int j = 0; j < kPer; ++j)
    if (j < per) out[L.out_at(b, i, h, sub + 4 * j)] = from_f32<T>(o[j] * inv);
  if (sub == 0) lse[bh * L.T + i] = m + logf(l);
}

// dq_i += scale * sum_j p_ij (z_ij dO_i·v_j - delta_i) k_j over keys j <= i, z_ij the keep scale.
template <typename T, int kPer, bool kDropout>
__global__ void __launch_bounds__(kThreads) dq_kernel(const T* dout, const T* qkv, const float* lse,
                                                      const float* delta, T* dqkv, Layout L, float scale,
                                                      AttentionDropout drop, bool accumulate) {
  if (kDropout) drop = drop.resolved();  // the step's counter, read on the device
  __shared__ float k_tile[kRows][kStride];
  __shared__ float v_tile[kRows][kStride];
  int64_t bh = blockIdx.y, b = bh / L.NH, h = bh % L.NH;
  int64_t first = static_cast<int64_t>(blockIdx.x) * kRows;
  int row = threadIdx.x / 4, sub = threadIdx.x % 4;
  int64_t i = first + row;
  bool live = i < L.T;
  int per = L.hs / 4;
  float q[kPer], g[kPer], dq[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    bool in = j < per && live;
    q[j] = in ? to_f32(qkv[L.qkv_at(b, i, 0, h, sub + 4 * j)]) * scale : 0.0f;
    g[j] = in ? to_f32(dout[L.out_at(b, i, h, sub + 4 * j)]) : 0.0f;
    dq[j] = 0.0f;
  }
  float row_lse = live ? lse[bh * L.T + i] : 0.0f, row_delta = live ? delta[bh * L.T + i] : 0.0f;
  const uint64_t row_counter = kDropout ? drop.row_counter(bh, L.T, i) : 0;
  const float keep_scale = kDropout ? drop.keep_scale() : 1.0f;
  unsigned keep_bits = 0;
  int64_t last = min(L.T - 1, first + kRows - 1);
  for (int64_t kt = 0; kt <= last; kt += kRows) {
    __syncthreads();
    load_tile(k_tile, qkv, L, b, h, 1, kt);
    load_tile(v_tile, qkv, L, b, h, 2, kt);
    __syncthreads();
    for (int jj = 0; jj < kRows; ++jj) {
      float s = 0.0f, dp = 0.0f;
#pragma unroll
      for (int j = 0; j < kPer; ++j)
        if (j < per) {
          s += q[j] * k_tile[jj][sub + 4 * j];
          dp += g[j] * v_tile[jj][sub + 4 * j];
        }
      s = quad_sum(s);
      dp = quad_sum(dp);
      if (kDropout && jj % 4 == 0) {
        int64_t key = kt + jj + sub;
        keep_bits = quad_keep_bits(live && key <= i && drop.kept(row_counter + key));
      }
      if (!live || kt + jj > i) continue;
      if (kDropout) dp = (keep_bits >> (jj & 3)) & 1u ? dp * keep_scale : 0.0f;
      float ds = expf(s - row_lse) * (dp - row_delta);
#pragma unroll
      for (int j = 0; j < kPer; ++j)
        if (j < per) dq[j] += ds * k_tile[jj][sub + 4 * j];
    }
  }
  if (!live) return;
#pragma unroll
  for (int j = 0; j < kPer; ++j)
    if (j < per) {
      int64_t at = L.qkv_at(b, i, 0, h, sub + 4 * j);
      dqkv[at] = from_f32<T>((accumulate ? to_f32(dqkv[at]) : 0.0f) + dq[j] * scale);
    }
}

// For key row j, with z_ij the keep scale: dv_j += sum_i z_ij p_ij dO_i,
// dk_j += scale * sum_i p_ij (z_ij dO_i·v_j - delta_i) q_i, over i >= j.
template <typename T, int kPer, bool kDropout>
__global__ void __launch_bounds__(kThreads) dkv_kernel(const T* dout, const T* qkv, const float* lse,
                                                       const float* delta, T* dqkv, Layout L, float scale,
                                                       AttentionDropout drop, bool accumulate) {
  if (kDropout) drop = drop.resolved();  // the step's counter, read on the device
  __shared__ float q_tile[kRows][kStride];
  __shared__ float g_tile[kRows][kStride];
  __shared__ float lse_tile[kRows], delta_tile[kRows];
  int64_t bh = blockIdx.y, b = bh / L.NH, h = bh % L.NH;
  int64_t first = static_cast<int64_t>(blockIdx.x) * kRows;
  int row = threadIdx.x / 4, sub = threadIdx.x % 4;
  int64_t jrow = first + row;
  bool live = jrow < L.T;
  int per = L.hs / 4;
  float k[kPer], v[kPer], dk[kPer], dv[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    bool in = j < per && live;
    k[j] = in ? to_f32(qkv[L.qkv_at(b, jrow, 1, h, sub + 4 * j)]) * scale : 0.0f;
    v[j] = in ? to_f32(qkv[L.qkv_at(b, jrow, 2, h, sub + 4 * j)]) : 0.0f;
    dk[j] = 0.0f;
    dv[j] = 0.0f;
  }
  const float keep_scale = kDropout ? drop.keep_scale() : 1.0f;
  unsigned keep_bits = 0;  // queries ii & ~3 .. (ii & ~3) + 3 of this key
  for (int64_t qt = first; qt < L.T; qt += kRows) {
    __syncthreads();
    load_tile(q_tile, qkv, L, b, h, 0, qt);
    for (int e = threadIdx.x; e < kRows * L.hs; e += blockDim.x) {
      int r = e / L.hs, d = e % L.hs;
      g_tile[r][d] = qt + r < L.T ? to_f32(dout[L.out_at(b, qt + r, h, d)]) : 0.0f;
    }
    if (threadIdx.x < kRows) {
      int64_t t = qt + threadIdx.x;
      lse_tile[threadIdx.x] = t < L.T ? lse[bh * L.T + t] : 0.0f;
      delta_tile[threadIdx.x] = t < L.T ? delta[bh * L.T + t] : 0.0f;
    }
    __syncthreads();
    for (int ii = 0; ii < kRows; ++ii) {
      float s = 0.0f, dp = 0.0f;
#pragma unroll
      for (int j = 0; j < kPer; ++j)
        if (j < per) {
          s += k[j] * q_tile[ii][sub + 4 * j];
          dp += v[j] * g_tile[ii][sub + 4 * j];
        }
      s = quad_sum(s);
      dp = quad_sum(dp);
      if (kDropout && ii % 4 == 0) {
        int64_t query = qt + ii + sub;
        keep_bits = quad_keep_bits(live && query >= jrow && query < L.T &&
                                   drop.kept(drop.row_counter(bh, L.T, query) + jrow));
      }
      int64_t i = qt + ii;
      if (!live || i < jrow || i >= L.T) continue;
      float p = expf(s - lse_tile[ii]);
      float weight = p;  // of dO_i in dv_j; keep_scale is applied at the end
      if (kDropout) {
        bool keep = (keep_bits >> (ii & 3)) & 1u;
        weight = keep ? p : 0.0f;
        dp = keep ? dp * keep_scale : 0.0f;
      }
      float ds = p * (dp - delta_tile[ii]);
#pragma unroll
      for (int j = 0; j < kPer; ++j)
        if (j < per) {
          dv[j] += weight * g_tile[ii][sub + 4 * j];
          dk[j] += ds * q_tile[ii][sub + 4 * j];
        }
    }
  }
  if (!live) return;
#pragma unroll
  for (int j = 0; j < kPer; ++j)
    if (j < per) {
      int64_t ak = L.qkv_at(b, jrow, 1, h, sub + 4 * j), av = L.qkv_at(b, jrow, 2, h, sub + 4 * j);
      dqkv[ak] = from_f32<T>((accumulate ? to_f32(dqkv[ak]) : 0.0f) + dk[j] * scale);
      dqkv[av] = from_f32<T>((accumulate ? to_f32(dqkv[av]) : 0.0f) + dv[j] * keep_scale);
    }
}

Layout make_layout(int64_t T_len, int64_t C, int64_t NH) { return Layout{T_len, C, NH, static_cast<int>(C / NH)}; }

// The compile-time choices of a kernel instance: registers per thread for the head size and
// whether it draws the dropout mask (so that the no-dropout path carries no random draws).
template <int kPerValue, bool kDropoutValue>
struct Variant {
  static constexpr int kPer = kPerValue;
  static constexpr bool kDropout = kDropoutValue;
};

// Calls launch(Variant<...>{}) for head size hs and dropout on or off.
template <typename Launch>
void with_variant(int hs, bool dropout, Launch launch) {
  if (hs <= 64) {
    dropout ? launch(Variant<16, true>{}) : launch(Variant<16, false>{});
  } else {
    dropout ? launch(Variant<32, true>{}) : launch(Variant<32, false>{});
  }
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

template <typename T>
void attention_forward_simple(const T* qkv, T* out, float* lse, int64_t B, int64_t T_len, int64_t C, int64_t NH,
                              const AttentionDropout& dropout, cudaStream_t stream) {
  Layout L = make_layout(T_len, C, NH);
  float scale = 1.0f / sqrtf(static_cast<float>(L.hs));
  dim3 grid(static_cast<unsigned>(ceil_div(T_len, kRows)), static_cast<unsigned>(B * NH));
  with_variant(L.hs, dropout.active(), [&](auto v) {
    using V = decltype(v);
    forward_kernel<T, V::kPer, V::kDropout><<<grid, kThreads, 0, stream>>>(qkv, out, lse, L, scale, dropout);
  });
}

template <typename T>
void attention_backward_simple(const T* dout, const T* qkv, const float* lse, const float* delta, GradDest<T> dqkv,
                               int64_t B, int64_t T_len, int64_t C, int64_t NH, const AttentionDropout& dropout,
                               cudaStream_t stream) {
  Layout L = make_layout(T_len, C, NH);
  float scale = 1.0f / sqrtf(static_cast<float>(L.hs));
  dim3 grid(static_cast<unsigned>(ceil_div(T_len, kRows)), static_cast<unsigned>(B * NH));
  with_variant(L.hs, dropout.active(), [&](auto v) {
    using V = decltype(v);
    dq_kernel<T, V::kPer, V::kDropout>
        <<<grid, kThreads, 0, stream>>>(dout, qkv, lse, delta, dqkv.ptr, L, scale, dropout, dqkv.accumulate);
  });
  with_variant(L.hs, dropout.active(), [&](auto v) {
    using V = decltype(v);
    dkv_kernel<T, V::kPer, V::kDropout><<<grid, kThreads, 0, stream>>>(dout, qkv, lse, delta, dqkv.ptr, L, scale,
                                                                        dropout, dqkv.accumulate);
  });
}

#define ND_INSTANTIATE_ATTENTION_SIMPLE(T)                                                                     \
  template void attention_forward_simple<T>(const T*, T*, float*, int64_t, int64_t, int64_t, int64_t,          \
                                            const AttentionDropout&, cudaStream_t);                            \
  template void attention_backward_simple<T>(const T*, const T*, const float*, const float*, GradDest<T>, int64_t, \
                                             int64_t, int64_t, int64_t, const AttentionDropout&, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_ATTENTION_SIMPLE);

}  // namespace nd::cuda::detail
