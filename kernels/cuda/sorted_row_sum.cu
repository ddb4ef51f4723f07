// The deterministic scatter-add of an embedding backward, shared by the token embedding and the
// vocabulary-parallel one. Each position's key is its row of the table (ids of other rows get the
// key `rows`, which sorts last and is never summed); CUB radix-sorts (key, position) pairs stably,
// so positions keep their order within a key; the sorted list is cut into chunks of kRowSumChunk
// positions, a block per chunk sums each run of equal keys into an f32 partial row, then the first
// position of each key adds its partials in order into the gradient row. No atomics: the same
// bits every run.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/sorted_row_sum.h"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

constexpr int kRowSumChunk = 32;
constexpr int kThreads = 256;

// keys[i] = idx[i] - first_id when that lies in [0, rows), else rows; positions[i] = i.
__global__ void sort_input_kernel(const int32_t* idx, int32_t* keys, int32_t* positions, int64_t n, int64_t first_id,
                                  int64_t rows) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t row = static_cast<int64_t>(idx[i]) - first_id;
  keys[i] = static_cast<int32_t>(row < 0 || row >= rows ? rows : row);
  positions[i] = static_cast<int32_t>(i);
}

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

// Bits of the radix sort: enough for keys 0..keys-1.
int key_bits(int64_t keys) {
  int bits = 1;
  while ((int64_t{1} << bits) < keys) ++bits;
  return bits;
}

}  // namespace

template <typename T>
void scatter_add_rows_by_id(const int32_t* idx, const T* dout, T* grad, int64_t n, int64_t C, int64_t first_id,
                            int64_t rows, cudaStream_t stream) {
  ND_CHECK(n >= 0 && n < (int64_t{1} << 31) && C > 0 && C < (1 << 30) && first_id >= 0 && rows > 0 &&
               rows < (int64_t{1} << 31) - 1,
           "scatter_add_rows_by_id: bad shape n=" << n << " C=" << C << " first_id=" << first_id << " rows=" << rows);
  if (n == 0) return;
  ND_CHECK(idx && dout && grad, "scatter_add_rows_by_id: null pointer");
  stream = stream_or_default(stream);
  const int c = static_cast<int>(C);
  const int threads = static_cast<int>(std::min<int64_t>(ceil_div(C, 32) * 32, kThreads));
  const int32_t skip = static_cast<int32_t>(rows);
  const int bits = key_bits(rows + 1);
  const int device = current_cuda_device();
  // Scratch: keys, positions (unsorted and sorted), sorted keys, CUB's temporary storage, partial rows.
  size_t sort_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), static_cast<int>(n), 0, bits, stream));
  const size_t ints_bytes = 4 * n * sizeof(int32_t);
  const size_t partial_offset = (ints_bytes + sort_bytes + 255) / 256 * 256;
  const size_t total = partial_offset + static_cast<size_t>(n) * C * sizeof(float);
  char* scratch = static_cast<char*>(device_alloc(total, device));
  int32_t* keys = reinterpret_cast<int32_t*>(scratch);
  int32_t* positions = keys + n;
  int32_t* sorted_pos = positions + n;
  int32_t* sorted_keys = sorted_pos + n;
  void* sort_temp = scratch + ints_bytes;
  float* partial = reinterpret_cast<float*>(scratch + partial_offset);

  sort_input_kernel<<<static_cast<unsigned>(ceil_div(n, kThreads)), kThreads, 0, stream>>>(idx, keys, positions, n,
                                                                                         first_id, rows);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_temp, sort_bytes, keys, sorted_keys, positions, sorted_pos,
                                             static_cast<int>(n), 0, bits, stream));
  chunk_partial_kernel<T><<<static_cast<unsigned>(ceil_div(n, kRowSumChunk)), threads, 0, stream>>>(
      sorted_keys, sorted_pos, dout, partial, n, c, skip);
  CUDA_CHECK(cudaGetLastError());
  run_sum_kernel<T><<<static_cast<unsigned>(n), threads, 0, stream>>>(sorted_keys, partial, grad, n, c, skip);
  CUDA_CHECK(cudaGetLastError());
  device_free(scratch, device);  // reused only by later work on this stream
}

#define ND_INSTANTIATE_SCATTER_ADD_ROWS(T)                                                                       \
  template void scatter_add_rows_by_id<T>(const int32_t*, const T*, T*, int64_t, int64_t, int64_t, int64_t, \
                                          cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_SCATTER_ADD_ROWS);

}  // namespace nd::cuda
