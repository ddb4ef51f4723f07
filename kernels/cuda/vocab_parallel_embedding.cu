// Vocabulary-parallel embedding kernels. Forward: a block per position copies its row of wte or
// writes zeros. Backward of wte: each position gets its local row (ids of other ranks get the
// sentinel Vl, which sorts last); CUB radix-sorts (local row, position) pairs stably; a block per
// chunk of sorted positions (sorted_row_sum.cuh) sums each run of equal rows into an f32 partial row; a block per
// run start adds the run's partials in order into dwte. Fixed summation order: deterministic.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/sorted_row_sum.cuh"
#include "kernels/cuda/vocab_parallel_embedding.h"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void forward_kernel(const int32_t* idx, const T* wte, T* out, int C, int64_t vocab_start, int64_t Vl) {
  const int64_t pos = blockIdx.x;
  const int64_t row = static_cast<int64_t>(idx[pos]) - vocab_start;
  T* o = out + pos * C;
  if (row < 0 || row >= Vl) {
    for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = from_f32<T>(0.0f);
    return;
  }
  const T* w = wte + row * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = w[c];
}

// local[i] = this rank's row of idx[i], or Vl for an id another rank holds; positions[i] = i.
__global__ void local_rows_kernel(const int32_t* idx, int32_t* local, int32_t* positions, int64_t n,
                                  int64_t vocab_start, int64_t Vl) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t row = static_cast<int64_t>(idx[i]) - vocab_start;
  local[i] = static_cast<int32_t>(row < 0 || row >= Vl ? Vl : row);
  positions[i] = static_cast<int32_t>(i);
}

int key_bits(int64_t keys) {
  int bits = 1;
  while ((int64_t{1} << bits) < keys) ++bits;
  return bits;
}

void check_dims(const char* what, int64_t n, int64_t C, int64_t vocab_start, int64_t Vl) {
  ND_CHECK(n >= 0 && n < (int64_t{1} << 31) && C > 0 && C < (1 << 30) && vocab_start >= 0 && Vl > 0 &&
               Vl < (int64_t{1} << 30),
           what << ": bad shape n=" << n << " C=" << C << " vocab_start=" << vocab_start << " Vl=" << Vl);
}

int threads_for(int64_t C) { return static_cast<int>(std::min<int64_t>(ceil_div(C, 32) * 32, kThreads)); }

}  // namespace

template <typename T>
void vocab_parallel_embedding_forward(const int32_t* idx, const T* wte, T* out, int64_t n, int64_t C,
                                      int64_t vocab_start, int64_t Vl, cudaStream_t stream) {
  check_dims("vocab_parallel_embedding_forward", n, C, vocab_start, Vl);
  if (n == 0) return;
  ND_CHECK(idx && wte && out, "vocab_parallel_embedding_forward: null pointer");
  forward_kernel<T><<<static_cast<unsigned>(n), threads_for(C), 0, stream_or_default(stream)>>>(
      idx, wte, out, static_cast<int>(C), vocab_start, Vl);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void vocab_parallel_embedding_backward(const int32_t* idx, const T* dout, T* dwte, int64_t n, int64_t C,
                                       int64_t vocab_start, int64_t Vl, cudaStream_t stream) {
  check_dims("vocab_parallel_embedding_backward", n, C, vocab_start, Vl);
  if (n == 0 || dwte == nullptr) return;
  ND_CHECK(idx && dout, "vocab_parallel_embedding_backward: null input pointer");
  stream = stream_or_default(stream);
  const int c = static_cast<int>(C);
  const int32_t sentinel = static_cast<int32_t>(Vl);
  const int bits = key_bits(Vl + 1);
  const int device = current_cuda_device();
  // Scratch: local rows, positions, both sorted, CUB's temporary storage, partial rows.
  size_t sort_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), static_cast<int>(n), 0, bits, stream));
  const size_t ints_bytes = 4 * n * sizeof(int32_t);
  const size_t partial_offset = (ints_bytes + sort_bytes + 255) / 256 * 256;
  const size_t total = partial_offset + static_cast<size_t>(n) * C * sizeof(float);
  char* scratch = static_cast<char*>(device_alloc(total, device));
  int32_t* local = reinterpret_cast<int32_t*>(scratch);
  int32_t* positions = local + n;
  int32_t* sorted_rows = positions + n;
  int32_t* sorted_pos = sorted_rows + n;
  void* sort_temp = scratch + ints_bytes;
  float* partial = reinterpret_cast<float*>(scratch + partial_offset);

  local_rows_kernel<<<static_cast<unsigned>(ceil_div(n, kThreads)), kThreads, 0, stream>>>(idx, local, positions, n,
                                                                                         vocab_start, Vl);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_temp, sort_bytes, local, sorted_rows, positions, sorted_pos,
                                             static_cast<int>(n), 0, bits, stream));
  chunk_partial_kernel<T><<<static_cast<unsigned>(ceil_div(n, kRowSumChunk)), threads_for(C), 0, stream>>>(
      sorted_rows, sorted_pos, dout, partial, n, c, sentinel);
  CUDA_CHECK(cudaGetLastError());
  run_sum_kernel<T><<<static_cast<unsigned>(n), threads_for(C), 0, stream>>>(sorted_rows, partial, dwte, n, c,
                                                                            sentinel);
  CUDA_CHECK(cudaGetLastError());
  device_free(scratch, device);  // reused only by later work on this stream
}

#define ND_INSTANTIATE_VOCAB_PARALLEL_EMBEDDING(T)                                                                \
  template void vocab_parallel_embedding_forward<T>(const int32_t*, const T*, T*, int64_t, int64_t, int64_t,     \
                                                    int64_t, cudaStream_t);                                      \
  template void vocab_parallel_embedding_backward<T>(const int32_t*, const T*, T*, int64_t, int64_t, int64_t,    \
                                                     int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_VOCAB_PARALLEL_EMBEDDING);

}  // namespace nd::cuda
