// Vocabulary-parallel cross-entropy kernels. local stats: a block per row keeps a running (max,
// sum of exp) per thread over 16-byte packs of the row's valid columns (log2 domain), merges them
// across the block and reads the target's logit; rescale: a thread per row; loss: one block sums
// the rows in a fixed order (deterministic); backward: a block per row.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/softmax_grad_row.cuh"
#include "kernels/cuda/vocab_parallel_cross_entropy.h"

namespace nd::cuda {

namespace {

constexpr int kThreads = 512;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Running (max m, sum s of 2^(x - m)); -inf stands for no value. Merges (m2, s2) into (m, s).
__device__ __forceinline__ void merge_running(float& m, float& s, float m2, float s2) {
  const float M = fmaxf(m, m2);
  if (M == -INFINITY) return;
  s = (m == -INFINITY ? 0.0f : s * exp2f(m - M)) + (m2 == -INFINITY ? 0.0f : s2 * exp2f(m2 - M));
  m = M;
}

__device__ __forceinline__ void add_value(float& m, float& s, float x) {
  if (x > m) {
    s = (m == -INFINITY ? 0.0f : s * exp2f(m - x)) + 1.0f;
    m = x;
  } else {
    s += exp2f(x - m);
  }
}

template <typename T>
__global__ void local_stats_kernel(const T* logits, const int32_t* targets, float* row_max, float* stats, int64_t N,
                                   int64_t Vl, int64_t valid, int64_t vocab_start, bool vec) {
  constexpr int kPack = Pack16<T>::kSize;
  __shared__ float shared_m[32], shared_s[32];
  const int64_t r = blockIdx.x;
  const T* row = logits + r * Vl;
  float m = -INFINITY, s = 0.0f;
  if (vec) {
    for (int64_t c = static_cast<int64_t>(threadIdx.x) * kPack; c < valid;
         c += static_cast<int64_t>(blockDim.x) * kPack) {
      Pack16<T> p = load16(row + c);
#pragma unroll
      for (int k = 0; k < kPack; ++k)
        if (c + k < valid) add_value(m, s, to_f32(p.v[k]) * kLog2e);
    }
  } else {
    for (int64_t c = threadIdx.x; c < valid; c += blockDim.x) add_value(m, s, to_f32(row[c]) * kLog2e);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    merge_running(m, s, __shfl_xor_sync(0xffffffffu, m, offset), __shfl_xor_sync(0xffffffffu, s, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    shared_m[warp] = m;
    shared_s[warp] = s;
  }
  __syncthreads();
  if (warp != 0) return;
  const int nwarps = blockDim.x / 32;
  m = lane < nwarps ? shared_m[lane] : -INFINITY;
  s = lane < nwarps ? shared_s[lane] : 0.0f;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    merge_running(m, s, __shfl_xor_sync(0xffffffffu, m, offset), __shfl_xor_sync(0xffffffffu, s, offset));
  if (lane != 0) return;
  const float max_natural = m == -INFINITY ? -INFINITY : m * kLn2;
  const int32_t t = targets[r];
  const int64_t local_target = static_cast<int64_t>(t) - vocab_start;
  const bool mine = t != -1 && local_target >= 0 && local_target < valid;
  row_max[r] = max_natural;
  row_max[N + r] = max_natural;
  stats[r] = s;
  stats[N + r] = mine ? to_f32(row[local_target]) : 0.0f;
}

__global__ void rescale_kernel(const float* row_max, float* stats, int64_t N) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= N) return;
  const float local = row_max[r], global = row_max[N + r];
  if (local == global) return;
  stats[r] = local == -INFINITY ? 0.0f : stats[r] * expf(local - global);
}

// One block: row_lse for every row, loss = sum over counted rows / count in a fixed order (f32).
__global__ void loss_kernel(const float* row_max, const float* stats, const int32_t* targets, float* loss,
                            float* row_lse, float* count, int64_t N, int64_t V) {
  __shared__ float scratch[32];
  float sum = 0.0f, counted = 0.0f;
  for (int64_t r = threadIdx.x; r < N; r += blockDim.x) {
    const float lse = row_max[N + r] + logf(stats[r]);
    row_lse[r] = lse;
    const int32_t t = targets[r];
    if (t == -1) continue;
    sum += (t < 0 || t >= V) ? NAN : lse - stats[N + r];
    counted += 1.0f;
  }
  sum = block_sum(sum, scratch);
  counted = block_sum(counted, scratch);
  if (threadIdx.x == 0) {
    *loss = counted > 0.0f ? sum / counted : 0.0f;
    *count = counted;
  }
}

template <typename T>
__global__ void backward_kernel(const T* logits, const int32_t* targets, const float* row_lse, const float* count,
                                const float* dloss, T* dlogits, int64_t Vl, int64_t valid, int64_t vocab_start,
                                bool vec, bool accumulate) {
  const int64_t r = blockIdx.x;
  const int32_t t = targets[r];
  const bool counted = t != -1 && *count > 0.0f;
  if (!counted && accumulate) return;
  const float scale = counted ? *dloss / *count : 0.0f;
  const int64_t local_target = static_cast<int64_t>(t) - vocab_start;
  softmax_grad_row(logits + r * Vl, dlogits + r * Vl, Vl, valid, local_target, row_lse[r], scale, counted, vec,
                   accumulate);
}

void check_dims(const char* what, int64_t N, int64_t Vl, int64_t valid, int64_t vocab_start) {
  ND_CHECK(N >= 0 && N < (int64_t{1} << 31) && Vl >= 1 && valid >= 0 && valid <= Vl && vocab_start >= 0,
           what << ": bad shape N=" << N << " Vl=" << Vl << " valid=" << valid << " vocab_start=" << vocab_start);
}

}  // namespace

template <typename T>
void vocab_parallel_ce_local_stats(const T* logits, const int32_t* targets, float* row_max, float* stats, int64_t N,
                                   int64_t Vl, int64_t valid, int64_t vocab_start, cudaStream_t stream) {
  check_dims("vocab_parallel_ce_local_stats", N, Vl, valid, vocab_start);
  if (N == 0) return;
  ND_CHECK(logits && targets && row_max && stats, "vocab_parallel_ce_local_stats: null pointer");
  const bool vec = aligned16(logits) && (Vl * sizeof(T)) % 16 == 0;
  local_stats_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, stream_or_default(stream)>>>(
      logits, targets, row_max, stats, N, Vl, valid, vocab_start, vec);
  CUDA_CHECK(cudaGetLastError());
}

void vocab_parallel_ce_rescale(const float* row_max, float* stats, int64_t N, cudaStream_t stream) {
  ND_CHECK(N >= 0, "vocab_parallel_ce_rescale: bad N=" << N);
  if (N == 0) return;
  ND_CHECK(row_max && stats, "vocab_parallel_ce_rescale: null pointer");
  rescale_kernel<<<static_cast<unsigned>(ceil_div(N, 256)), 256, 0, stream_or_default(stream)>>>(row_max, stats, N);
  CUDA_CHECK(cudaGetLastError());
}

void vocab_parallel_ce_loss(const float* row_max, const float* stats, const int32_t* targets, float* loss,
                            float* row_lse, float* count, int64_t N, int64_t V, cudaStream_t stream) {
  ND_CHECK(N >= 0 && N < (int64_t{1} << 31) && V >= 1, "vocab_parallel_ce_loss: bad shape N=" << N << " V=" << V);
  ND_CHECK(loss && count && (N == 0 || (row_max && stats && targets && row_lse)),
           "vocab_parallel_ce_loss: null pointer");
  loss_kernel<<<1, 1024, 0, stream_or_default(stream)>>>(row_max, stats, targets, loss, row_lse, count, N, V);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void vocab_parallel_ce_backward(const T* logits, const int32_t* targets, const float* row_lse, const float* count,
                                const float* dloss, T* dlogits, int64_t N, int64_t Vl, int64_t valid,
                                int64_t vocab_start, bool accumulate, cudaStream_t stream) {
  check_dims("vocab_parallel_ce_backward", N, Vl, valid, vocab_start);
  if (N == 0 || dlogits == nullptr) return;
  ND_CHECK(logits && targets && row_lse && count && dloss, "vocab_parallel_ce_backward: null pointer");
  const bool vec = aligned16(logits) && aligned16(dlogits) && (Vl * sizeof(T)) % 16 == 0;
  backward_kernel<T><<<static_cast<unsigned>(N), kThreads, 0, stream_or_default(stream)>>>(
      logits, targets, row_lse, count, dloss, dlogits, Vl, valid, vocab_start, vec, accumulate);
  CUDA_CHECK(cudaGetLastError());
}

#define ND_INSTANTIATE_VOCAB_PARALLEL_CE(T)                                                                          \
  template void vocab_parallel_ce_local_stats<T>(const T*, const int32_t*, float*, float*, int64_t, int64_t, int64_t, \
                                                 int64_t, cudaStream_t);                                             \
  template void vocab_parallel_ce_backward<T>(const T*, const int32_t*, const float*, const float*, const float*, T*, \
                                              int64_t, int64_t, int64_t, int64_t, bool, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_VOCAB_PARALLEL_CE);

}  // namespace nd::cuda
