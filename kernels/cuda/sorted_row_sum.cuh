// The deterministic scatter-add of an embedding backward, shared by the token embedding and the
// vocabulary-parallel one: positions sorted by key (their row) keep position order within a key;
// the sorted list is cut into chunks of kRowSumChunk positions, a block per chunk sums each run of
// equal keys into an f32 partial row, then the first position of each key adds its partials in
// order into the gradient row. One key, `skip` (ids that are not this table's), is never summed.
#pragma once
#include "kernels/cuda/common.cuh"

namespace nd::cuda {

constexpr int kRowSumChunk = 32;

// Block = one chunk of sorted positions; partial[i] (C floats) = sum of the run starting at i.
// The skipped key sorts last (it is the largest) and is not summed.
template <typename T>
__global__ void chunk_partial_kernel(const int32_t* sorted_keys, const int32_t* sorted_pos, const T* dout,
                                     float* partial, int64_t n, int C, int32_t skip) {
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kRowSumChunk;
  int64_t end = min(n, begin + kRowSumChunk);
  while (end > begin && sorted_keys[end - 1] == skip) --end;
  if (end == begin) return;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = 0.0f;
    int64_t start = begin;
    for (int64_t i = begin; i < end; ++i) {
      if (i > start && sorted_keys[i] != sorted_keys[i - 1]) {
        partial[start * C + c] = acc;
        acc = 0.0f;
        start = i;
      }
      acc += to_f32(dout[static_cast<int64_t>(sorted_pos[i]) * C + c]);
    }
    partial[start * C + c] = acc;
  }
}

// Block = one sorted position; only the first position of each key works: it adds that key's
// partials (one per chunk the key spans) in order into grad[key] (C).
template <typename T>
__global__ void run_sum_kernel(const int32_t* sorted_keys, const float* partial, T* grad, int64_t n, int C,
                               int32_t skip) {
  const int64_t i = blockIdx.x;
  const int32_t key = sorted_keys[i];
  if (key == skip || (i > 0 && key == sorted_keys[i - 1])) return;
  T* g = grad + static_cast<int64_t>(key) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = partial[i * C + c];
    for (int64_t p = (i / kRowSumChunk + 1) * kRowSumChunk; p < n && sorted_keys[p] == key; p += kRowSumChunk)
      acc += partial[p * C + c];
    g[c] = from_f32<T>(to_f32(g[c]) + acc);
  }
}

}  // namespace nd::cuda
