// Embedding kernels. Backward of wte: CUB radix-sorts (token id, position) pairs (stable, so equal
// ids keep position order); the sorted list is cut into chunks of kChunk positions; a block per
// chunk sums each run of equal ids into an f32 partial row; a block per run start then adds the
// run's partials in order into dwte. Every sum has one fixed order: the result is deterministic.
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/embedding.h"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

constexpr int kChunk = 32;
constexpr int kThreads = 256;

template <typename T>
__global__ void embedding_forward_kernel(const int32_t* idx, const T* wte, const T* wpe, T* out, int64_t S, int C) {
  int64_t pos = blockIdx.x;  // b * S + s
  int64_t s = pos % S;
  const T* wrow = wte + static_cast<int64_t>(idx[pos]) * C;
  const T* prow = wpe + s * C;
  T* orow = out + pos * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) orow[c] = from_f32<T>(to_f32(wrow[c]) + to_f32(prow[c]));
}

__global__ void iota_kernel(int32_t* out, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<int32_t>(i);
}

// Block = one chunk of sorted positions; partial[i] (C floats) = sum of the run starting at i.
template <typename T>
__global__ void chunk_partial_kernel(const int32_t* sorted_ids, const int32_t* sorted_pos, const T* dout,
                                     float* partial, int64_t n, int C) {
  int64_t begin = static_cast<int64_t>(blockIdx.x) * kChunk;
  int64_t end = min(n, begin + kChunk);
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = 0.0f;
    int64_t start = begin;
    for (int64_t i = begin; i < end; ++i) {
      if (i > start && sorted_ids[i] != sorted_ids[i - 1]) {
        partial[start * C + c] = acc;
        acc = 0.0f;
        start = i;
      }
      acc += to_f32(dout[static_cast<int64_t>(sorted_pos[i]) * C + c]);
    }
    partial[start * C + c] = acc;
  }
}

// Block = one sorted position; only the first position of each id works: it adds that id's partials
// (one per chunk the id spans) in order into dwte[id].
template <typename T>
__global__ void run_sum_kernel(const int32_t* sorted_ids, const float* partial, T* dwte, int64_t n, int C) {
  int64_t i = blockIdx.x;
  if (i > 0 && sorted_ids[i] == sorted_ids[i - 1]) return;
  int32_t id = sorted_ids[i];
  T* row = dwte + static_cast<int64_t>(id) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = partial[i * C + c];
    for (int64_t p = (i / kChunk + 1) * kChunk; p < n && sorted_ids[p] == id; p += kChunk) acc += partial[p * C + c];
    row[c] = from_f32<T>(to_f32(row[c]) + acc);
  }
}

// dwpe[s] += sum over b of dout[b, s], b in order.
template <typename T>
__global__ void position_grad_kernel(const T* dout, T* dwpe, int64_t B, int64_t S, int C) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // s * C + c
  if (i >= S * C) return;
  float acc = 0.0f;
  for (int64_t b = 0; b < B; ++b) acc += to_f32(dout[b * S * C + i]);
  dwpe[i] = from_f32<T>(to_f32(dwpe[i]) + acc);
}

__global__ void count_invalid_kernel(const int32_t* idx, int64_t n, int64_t V, unsigned long long* count) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && (idx[i] < 0 || idx[i] >= V)) atomicAdd(count, 1ull);
}

int id_bits(int64_t V) {
  int bits = 1;
  while ((int64_t{1} << bits) < V) ++bits;
  return bits;
}

}  // namespace

template <typename T>
void embedding_forward(const int32_t* idx, const T* wte, const T* wpe, T* out, int64_t B, int64_t S, int64_t C,
                       cudaStream_t stream) {
  ND_CHECK(B >= 0 && S >= 0 && C > 0 && C < (1 << 30),
           "embedding_forward: bad shape B=" << B << " S=" << S << " C=" << C);
  ND_CHECK(B * S < (int64_t{1} << 31), "embedding_forward: too many positions " << B * S);
  if (B * S == 0) return;
  ND_CHECK(idx && wte && wpe && out, "embedding_forward: null pointer");
  int threads = static_cast<int>(std::min<int64_t>(ceil_div(C, 32) * 32, kThreads));
  embedding_forward_kernel<T><<<static_cast<unsigned>(B * S), threads, 0, stream_or_default(stream)>>>(
      idx, wte, wpe, out, S, static_cast<int>(C));
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void embedding_backward(const int32_t* idx, const T* dout, T* dwte, T* dwpe, int64_t B, int64_t S, int64_t C, int64_t V,
                        cudaStream_t stream) {
  ND_CHECK(B >= 0 && S >= 0 && C > 0 && C < (1 << 30) && V > 0 && V < (int64_t{1} << 31),
           "embedding_backward: bad shape B=" << B << " S=" << S << " C=" << C << " V=" << V);
  int64_t n = B * S;
  ND_CHECK(n < (int64_t{1} << 31), "embedding_backward: too many positions " << n);
  if (n == 0) return;
  ND_CHECK(idx && dout, "embedding_backward: null input pointer");
  stream = stream_or_default(stream);
  int c = static_cast<int>(C);
  int threads = static_cast<int>(std::min<int64_t>(ceil_div(C, 32) * 32, kThreads));
  if (dwpe) {
    position_grad_kernel<T>
        <<<static_cast<unsigned>(ceil_div(S * C, kThreads)), kThreads, 0, stream>>>(dout, dwpe, B, S, c);
    CUDA_CHECK(cudaGetLastError());
  }
  if (!dwte) return;
  int device = current_cuda_device();
  // Scratch: ids, positions (unsorted and sorted), CUB's temporary storage, partial rows.
  size_t sort_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), static_cast<int>(n), 0, id_bits(V),
                                             stream));
  size_t ints_bytes = 3 * n * sizeof(int32_t);
  size_t partial_offset = (ints_bytes + sort_bytes + 255) / 256 * 256;
  size_t total = partial_offset + static_cast<size_t>(n) * C * sizeof(float);
  char* scratch = static_cast<char*>(device_alloc(total, device));
  int32_t* positions = reinterpret_cast<int32_t*>(scratch);
  int32_t* sorted_pos = positions + n;
  int32_t* sorted_ids = sorted_pos + n;
  void* sort_temp = scratch + ints_bytes;
  float* partial = reinterpret_cast<float*>(scratch + partial_offset);

  iota_kernel<<<static_cast<unsigned>(ceil_div(n, kThreads)), kThreads, 0, stream>>>(positions, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_temp, sort_bytes, idx, sorted_ids, positions, sorted_pos,
                                             static_cast<int>(n), 0, id_bits(V), stream));
  chunk_partial_kernel<T>
      <<<static_cast<unsigned>(ceil_div(n, kChunk)), threads, 0, stream>>>(sorted_ids, sorted_pos, dout, partial, n, c);
  CUDA_CHECK(cudaGetLastError());
  run_sum_kernel<T><<<static_cast<unsigned>(n), threads, 0, stream>>>(sorted_ids, partial, dwte, n, c);
  CUDA_CHECK(cudaGetLastError());
  device_free(scratch, device);  // reused only by later work on this stream
}

int64_t count_invalid_token_ids(const int32_t* idx, int64_t n, int64_t V, cudaStream_t stream) {
  ND_CHECK(n >= 0 && V > 0, "count_invalid_token_ids: bad n=" << n << " V=" << V);
  if (n == 0) return 0;
  stream = stream_or_default(stream);
  int device = current_cuda_device();
  auto* count = static_cast<unsigned long long*>(device_alloc(sizeof(unsigned long long), device));
  CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(unsigned long long), stream));
  count_invalid_kernel<<<static_cast<unsigned>(ceil_div(n, kThreads)), kThreads, 0, stream>>>(idx, n, V, count);
  CUDA_CHECK(cudaGetLastError());
  unsigned long long host = 0;
  CUDA_CHECK(cudaMemcpyAsync(&host, count, sizeof(host), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  device_free(count, device);
  return static_cast<int64_t>(host);
}

#define ND_INSTANTIATE_EMBEDDING(T)                                                                                    \
  template void embedding_forward<T>(const int32_t*, const T*, const T*, T*, int64_t, int64_t, int64_t, cudaStream_t); \
  template void embedding_backward<T>(const int32_t*, const T*, T*, T*, int64_t, int64_t, int64_t, int64_t,            \
                                      cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_EMBEDDING);

}  // namespace nd::cuda
