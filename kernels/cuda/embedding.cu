// Embedding kernels. Backward of wte: CUB radix-sorts (token id, position) pairs (stable, so equal
// ids keep position order); the sorted list is cut into chunks of positions (sorted_row_sum.cuh); a block per
// chunk sums each run of equal ids into an f32 partial row; a block per run start then adds the
// run's partials in order into dwte. Every sum has one fixed order: the result is deterministic.
// An id outside [0, V) is recorded (token_errors.h), embeds as wpe alone and gets no gradient.
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/sorted_row_sum.cuh"
#include "kernels/cuda/token_errors.cuh"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void embedding_forward_kernel(const int32_t* idx, const T* wte, const T* wpe, T* out, int64_t S, int C,
                                         int64_t V, TokenError* error) {
  int64_t pos = blockIdx.x;  // b * S + s
  int64_t s = pos % S;
  int32_t id = idx[pos];
  bool valid = id >= 0 && id < V;
  if (!valid && threadIdx.x == 0) record_token_error(error, kEmbeddingTokenError, id, pos, V);
  const T* wrow = wte + static_cast<int64_t>(valid ? id : 0) * C;
  const T* prow = wpe + s * C;
  T* orow = out + pos * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    orow[c] = from_f32<T>((valid ? to_f32(wrow[c]) : 0.0f) + to_f32(prow[c]));
}

// The sort's input: keys = the ids, with every id outside [0, V) mapped to V (sorted last, skipped),
// and positions = 0, 1, 2, ...
__global__ void sort_input_kernel(const int32_t* idx, int32_t* keys, int32_t* positions, int64_t n, int64_t V) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int32_t id = idx[i];
  keys[i] = id >= 0 && id < V ? id : static_cast<int32_t>(V);
  positions[i] = static_cast<int32_t>(i);
}

// dwpe[s] (+)= sum over b of dout[b, s], b in order, for the P rows of dwpe (rows s >= S get 0).
template <typename T>
__global__ void position_grad_kernel(const T* dout, GradDest<T> dwpe, int64_t B, int64_t S, int64_t P, int C) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // s * C + c
  if (i >= P * C || (dwpe.accumulate && i >= S * C)) return;
  float acc = 0.0f;
  if (i < S * C)
    for (int64_t b = 0; b < B; ++b) acc += to_f32(dout[b * S * C + i]);
  dwpe.ptr[i] = from_f32<T>(dwpe.accumulate ? to_f32(dwpe.ptr[i]) + acc : acc);
}

int id_bits(int64_t V) {
  int bits = 1;
  while ((int64_t{1} << bits) < V) ++bits;
  return bits;
}

}  // namespace

template <typename T>
void embedding_forward(const int32_t* idx, const T* wte, const T* wpe, T* out, int64_t B, int64_t S, int64_t C,
                       int64_t V, cudaStream_t stream) {
  ND_CHECK(B >= 0 && S >= 0 && C > 0 && C < (1 << 30) && V > 0,
           "embedding_forward: bad shape B=" << B << " S=" << S << " C=" << C << " V=" << V);
  ND_CHECK(B * S < (int64_t{1} << 31), "embedding_forward: too many positions " << B * S);
  if (B * S == 0) return;
  ND_CHECK(idx && wte && wpe && out, "embedding_forward: null pointer");
  int threads = static_cast<int>(std::min<int64_t>(ceil_div(C, 32) * 32, kThreads));
  embedding_forward_kernel<T><<<static_cast<unsigned>(B * S), threads, 0, stream_or_default(stream)>>>(
      idx, wte, wpe, out, S, static_cast<int>(C), V, token_error_record());
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void embedding_backward(const int32_t* idx, const T* dout, GradDest<T> dwte, GradDest<T> dwpe, int64_t B, int64_t S,
                        int64_t C, int64_t V, int64_t P, cudaStream_t stream) {
  ND_CHECK(B >= 0 && S >= 0 && C > 0 && C < (1 << 30) && V > 0 && V < (int64_t{1} << 31) - 1 && P >= S,
           "embedding_backward: bad shape B=" << B << " S=" << S << " C=" << C << " V=" << V << " P=" << P);
  int64_t n = B * S;
  ND_CHECK(n < (int64_t{1} << 31), "embedding_backward: too many positions " << n);
  ND_CHECK(n == 0 || (idx && dout), "embedding_backward: null input pointer");
  stream = stream_or_default(stream);
  int c = static_cast<int>(C);
  int threads = static_cast<int>(std::min<int64_t>(ceil_div(C, 32) * 32, kThreads));
  if (dwpe.ptr && P > 0) {
    int64_t rows = dwpe.accumulate ? S : P;
    position_grad_kernel<T><<<static_cast<unsigned>(std::max<int64_t>(1, ceil_div(rows * C, kThreads))), kThreads, 0,
                              stream>>>(dout, dwpe, B, S, P, c);
    CUDA_CHECK(cudaGetLastError());
  }
  if (!dwte.ptr) return;
  // A scatter leaves the rows of absent ids alone: a first contribution clears them first.
  if (!dwte.accumulate) CUDA_CHECK(cudaMemsetAsync(dwte.ptr, 0, V * C * sizeof(T), stream));
  if (n == 0) return;
  int device = current_cuda_device();
  // Scratch: keys, positions (unsorted and sorted), sorted keys, CUB's temporary storage, partial rows.
  int bits = id_bits(V + 1);
  size_t sort_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                             static_cast<int32_t*>(nullptr), static_cast<int>(n), 0, bits, stream));
  size_t ints_bytes = 4 * n * sizeof(int32_t);
  size_t partial_offset = (ints_bytes + sort_bytes + 255) / 256 * 256;
  size_t total = partial_offset + static_cast<size_t>(n) * C * sizeof(float);
  char* scratch = static_cast<char*>(device_alloc(total, device));
  int32_t* keys = reinterpret_cast<int32_t*>(scratch);
  int32_t* positions = keys + n;
  int32_t* sorted_pos = positions + n;
  int32_t* sorted_ids = sorted_pos + n;
  void* sort_temp = scratch + ints_bytes;
  float* partial = reinterpret_cast<float*>(scratch + partial_offset);

  sort_input_kernel<<<static_cast<unsigned>(ceil_div(n, kThreads)), kThreads, 0, stream>>>(idx, keys, positions, n, V);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_temp, sort_bytes, keys, sorted_ids, positions, sorted_pos,
                                             static_cast<int>(n), 0, bits, stream));
  const int32_t skip = static_cast<int32_t>(V);
  chunk_partial_kernel<T><<<static_cast<unsigned>(ceil_div(n, kRowSumChunk)), threads, 0, stream>>>(
      sorted_ids, sorted_pos, dout, partial, n, c, skip);
  CUDA_CHECK(cudaGetLastError());
  run_sum_kernel<T><<<static_cast<unsigned>(n), threads, 0, stream>>>(sorted_ids, partial, dwte.ptr, n, c, skip);
  CUDA_CHECK(cudaGetLastError());
  device_free(scratch, device);  // reused only by later work on this stream
}

#define ND_INSTANTIATE_EMBEDDING(T)                                                                           \
  template void embedding_forward<T>(const int32_t*, const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t, \
                                     cudaStream_t);                                                              \
  template void embedding_backward<T>(const int32_t*, const T*, GradDest<T>, GradDest<T>, int64_t, int64_t,      \
                                      int64_t, int64_t, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_EMBEDDING);

}  // namespace nd::cuda
