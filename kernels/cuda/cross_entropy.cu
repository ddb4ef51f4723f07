// Cross-entropy kernels: a block per row. The forward keeps a running (max, sum of exp) per thread
// over 16-byte packs of the row, merges them across the block, and writes the row's lse and loss;
// a one-block kernel then averages the row losses in a fixed order (deterministic). The forward
// with the gradient goes on to write the row's gradient from the same block, reading the row a
// second time right after the first (from L2), so the logits cross DRAM once.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/softmax_grad_row.cuh"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/token_errors.cuh"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

constexpr int kThreads = 512;

// Running (max m, sum s of 2^(x - m)) over values in the log2 domain; -inf stands for no value.
// Merges (m2, s2) into (m, s).
__device__ __forceinline__ void merge_max_sum(float& m, float& s, float m2, float s2) {
  float M = fmaxf(m, m2);
  if (M == -INFINITY) return;
  s = (m == -INFINITY ? 0.0f : s * exp2f(m - M)) + (m2 == -INFINITY ? 0.0f : s2 * exp2f(m2 - M));
  m = M;
}

// Folds a group of values into (m, s): one exp2 per value, plus one when the maximum moves.
template <int kCount>
__device__ __forceinline__ void fold(float& m, float& s, const float (&x)[kCount]) {
  float group_max = x[0];
#pragma unroll
  for (int k = 1; k < kCount; ++k) group_max = fmaxf(group_max, x[k]);
  if (group_max == -INFINITY) return;
  if (group_max > m) {
    s = m == -INFINITY ? 0.0f : s * exp2f(m - group_max);
    m = group_max;
  }
#pragma unroll
  for (int k = 0; k < kCount; ++k) s += exp2f(x[k] - m);
}

// Where the rows kernel writes the gradient (kWithGrad): dlogits (N, Vp), possibly the logits
// themselves, = (softmax - onehot) * dloss / count, the count of counted rows already written.
template <typename T>
struct RowGradient {
  const float* dloss;
  const float* count;
  T* dlogits;
};

// Block per row: writes row_lse (natural log) and row_loss (0 for ignored rows; NaN for bad targets,
// which are also recorded); kWithGrad: then the row's gradient, as cross_entropy_backward_kernel
// writes it into a fresh buffer. Every read of the row (the target's logit included) comes before
// the barrier after which the gradient is written, so dlogits may be the logits.
template <typename T, bool kWithGrad>
__global__ void cross_entropy_rows_kernel(const T* logits, const int32_t* targets, float* row_lse, float* row_loss,
                                          int64_t Vp, int64_t V, bool vec, TokenError* error, RowGradient<T> grad) {
  constexpr int kPack = Pack16<T>::kSize;
  __shared__ float shared_m[32], shared_s[32], shared_lse;
  int64_t r = blockIdx.x;
  const T* row = logits + r * Vp;
  float m = -INFINITY, s = 0.0f;
  if (vec) {
    for (int64_t c = static_cast<int64_t>(threadIdx.x) * kPack; c < V; c += static_cast<int64_t>(blockDim.x) * kPack) {
      Pack16<T> p = load16(row + c);
      float x[kPack];
#pragma unroll
      for (int k = 0; k < kPack; ++k) x[k] = c + k < V ? to_f32(p.v[k]) * kLog2e : -INFINITY;
      fold(m, s, x);
    }
  } else {
    for (int64_t c = threadIdx.x; c < V; c += blockDim.x) {
      float x[1] = {to_f32(row[c]) * kLog2e};
      fold(m, s, x);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
    float s2 = __shfl_xor_sync(0xffffffffu, s, offset);
    merge_max_sum(m, s, m2, s2);
  }
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    shared_m[warp] = m;
    shared_s[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    int nwarps = blockDim.x / 32;
    m = lane < nwarps ? shared_m[lane] : -INFINITY;
    s = lane < nwarps ? shared_s[lane] : 0.0f;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
      float s2 = __shfl_xor_sync(0xffffffffu, s, offset);
      merge_max_sum(m, s, m2, s2);
    }
    if (lane == 0) {
      float lse = (m + log2f(s)) * kLn2;
      int32_t t = targets[r];
      row_lse[r] = lse;
      if (t == -1) {
        row_loss[r] = 0.0f;
      } else if (t < 0 || t >= V) {
        row_loss[r] = NAN;
        record_token_error(error, kCrossEntropyTokenError, t, r, V);
      } else {
        row_loss[r] = lse - to_f32(row[t]);
      }
      shared_lse = lse;
    }
  }
  if constexpr (kWithGrad) {
    __syncthreads();
    const int32_t t = targets[r];
    const bool counted = t >= 0 && t < V;  // invalid targets already made the loss NaN
    const float scale = counted ? *grad.dloss / *grad.count : 0.0f;
    softmax_grad_row(row, grad.dlogits + r * Vp, Vp, V, t, shared_lse, scale, counted, vec, false);
  }
}

// One block: count = rows whose target is not -1, before the rows kernel that scales by it.
__global__ void cross_entropy_count_kernel(const int32_t* targets, float* count, int64_t N) {
  __shared__ float scratch[32];
  float counted = 0.0f;
  for (int64_t r = threadIdx.x; r < N; r += blockDim.x) counted += targets[r] != -1 ? 1.0f : 0.0f;
  counted = block_sum(counted, scratch);
  if (threadIdx.x == 0) *count = counted;
}

// dlogits *= dloss / announced, both f32, read from device memory.
template <typename T>
struct RescaleOp {
  const float* dloss;
  const float* announced;
  T* dlogits;
  bool vec;
  template <int kPack>
  __device__ void pack(int64_t i) const {
    const float factor = *dloss / *announced;  // announced 0: NaN, the gradient was lost
    float g[kPack];
    load_f32<kPack>(dlogits + i, g, vec);
#pragma unroll
    for (int k = 0; k < kPack; ++k) g[k] *= factor;
    store_f32<kPack>(dlogits + i, g, vec);
  }
};

// One block: loss = sum(row_loss) / count in a fixed order (kept in f32), count = rows whose
// target is not -1.
__global__ void cross_entropy_mean_kernel(const float* row_loss, const int32_t* targets, float* loss, float* count,
                                          int64_t N) {
  __shared__ float scratch[32];
  float sum = 0.0f, counted = 0.0f;
  for (int64_t r = threadIdx.x; r < N; r += blockDim.x) {
    sum += row_loss[r];
    counted += targets[r] != -1 ? 1.0f : 0.0f;
  }
  sum = block_sum(sum, scratch);
  counted = block_sum(counted, scratch);
  if (threadIdx.x == 0) {
    *loss = counted > 0.0f ? sum / counted : 0.0f;
    *count = counted;
  }
}

// Block per row: dlogits (+)= (softmax - onehot) * dloss / count over [0, V). When !accumulate the
// row is overwritten: padding columns and ignored rows get zeros.
template <typename T>
__global__ void cross_entropy_backward_kernel(const T* logits, const int32_t* targets, const float* row_lse,
                                              const float* count, const float* dloss, T* dlogits, int64_t Vp, int64_t V,
                                              bool vec, bool accumulate) {
  int64_t r = blockIdx.x;
  int32_t t = targets[r];
  bool counted = t >= 0 && t < V;  // invalid targets already made the loss NaN
  if (!counted && accumulate) return;
  float scale = counted ? *dloss / *count : 0.0f;
  softmax_grad_row(logits + r * Vp, dlogits + r * Vp, Vp, V, t, row_lse[r], scale, counted, vec, accumulate);
}

void check_dims(const char* what, int64_t N, int64_t Vp, int64_t V) {
  ND_CHECK(N >= 0 && N < (int64_t{1} << 31) && V >= 1 && V <= Vp,
           what << ": bad shape N=" << N << " Vp=" << Vp << " V=" << V);
}

}  // namespace

template <typename T>
void cross_entropy_forward(const T* logits, const int32_t* targets, StatType<T>* loss, StatType<T>* row_lse,
                           StatType<T>* count, int64_t N, int64_t Vp, int64_t V, cudaStream_t stream) {
  check_dims("cross_entropy_forward", N, Vp, V);
  ND_CHECK(loss && count && (N == 0 || (logits && targets && row_lse)), "cross_entropy_forward: null pointer");
  stream = stream_or_default(stream);
  int device = current_cuda_device();
  float* row_loss = N ? static_cast<float*>(device_alloc(N * sizeof(float), device)) : nullptr;
  bool vec = aligned16(logits) && (Vp * sizeof(T)) % 16 == 0;
  if (N) {
    cross_entropy_rows_kernel<T, false><<<static_cast<unsigned>(N), kThreads, 0, stream>>>(
        logits, targets, row_lse, row_loss, Vp, V, vec, token_error_record(), RowGradient<T>{});
    CUDA_CHECK(cudaGetLastError());
  }
  cross_entropy_mean_kernel<<<1, 1024, 0, stream>>>(row_loss, targets, loss, count, N);
  CUDA_CHECK(cudaGetLastError());
  if (row_loss) device_free(row_loss, device);  // reused only by later work on this stream
}

template <typename T>
void cross_entropy_backward(const T* logits, const int32_t* targets, const StatType<T>* row_lse,
                            const StatType<T>* count, const StatType<T>* dloss, GradDest<T> dlogits, int64_t N,
                            int64_t Vp, int64_t V, cudaStream_t stream) {
  check_dims("cross_entropy_backward", N, Vp, V);
  if (N == 0 || dlogits.ptr == nullptr) return;
  ND_CHECK(logits && targets && row_lse && count && dloss, "cross_entropy_backward: null pointer");
  bool vec = aligned16(logits) && aligned16(dlogits.ptr) && (Vp * sizeof(T)) % 16 == 0;
  cross_entropy_backward_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, stream_or_default(stream)>>>(
      logits, targets, row_lse, count, dloss, dlogits.ptr, Vp, V, vec, dlogits.accumulate);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void cross_entropy_forward_with_grad(const T* logits, const int32_t* targets, const StatType<T>* dloss,
                                     StatType<T>* loss, StatType<T>* row_lse, StatType<T>* count, T* dlogits,
                                     int64_t N, int64_t Vp, int64_t V, cudaStream_t stream) {
  check_dims("cross_entropy_forward_with_grad", N, Vp, V);
  ND_CHECK(loss && count && (N == 0 || (logits && targets && row_lse && dloss && dlogits)),
           "cross_entropy_forward_with_grad: null pointer");
  stream = stream_or_default(stream);
  int device = current_cuda_device();
  float* row_loss = N ? static_cast<float*>(device_alloc(N * sizeof(float), device)) : nullptr;
  bool vec = aligned16(logits) && aligned16(dlogits) && (Vp * sizeof(T)) % 16 == 0;
  cross_entropy_count_kernel<<<1, 1024, 0, stream>>>(targets, count, N);
  CUDA_CHECK(cudaGetLastError());
  if (N) {
    cross_entropy_rows_kernel<T, true><<<static_cast<unsigned>(N), kThreads, 0, stream>>>(
        logits, targets, row_lse, row_loss, Vp, V, vec, token_error_record(), RowGradient<T>{dloss, count, dlogits});
    CUDA_CHECK(cudaGetLastError());
  }
  cross_entropy_mean_kernel<<<1, 1024, 0, stream>>>(row_loss, targets, loss, count, N);
  CUDA_CHECK(cudaGetLastError());
  if (row_loss) device_free(row_loss, device);  // reused only by later work on this stream
}

template <typename T>
void cross_entropy_rescale_grad(const StatType<T>* dloss, const StatType<T>* announced, T* dlogits, int64_t n,
                                cudaStream_t stream) {
  ND_CHECK(n >= 0, "cross_entropy_rescale_grad: negative size " << n);
  if (n == 0) return;
  ND_CHECK(dloss && announced && dlogits, "cross_entropy_rescale_grad: null pointer");
  launch_elementwise<T>(n, RescaleOp<T>{dloss, announced, dlogits, aligned16(dlogits)}, stream_or_default(stream));
}

#define ND_INSTANTIATE_CROSS_ENTROPY(T)                                                                                \
  template void cross_entropy_forward<T>(const T*, const int32_t*, float*, float*, float*, int64_t, int64_t, int64_t,  \
                                         cudaStream_t);                                                                \
  template void cross_entropy_backward<T>(const T*, const int32_t*, const float*, const float*, const float*,          \
                                          GradDest<T>, int64_t, int64_t, int64_t, cudaStream_t);                       \
  template void cross_entropy_forward_with_grad<T>(const T*, const int32_t*, const float*, float*, float*, float*, T*, \
                                                   int64_t, int64_t, int64_t, cudaStream_t);                           \
  template void cross_entropy_rescale_grad<T>(const float*, const float*, T*, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_CROSS_ENTROPY);

}  // namespace nd::cuda
