// Vocabulary-parallel embedding kernels. Forward: a block per position copies its row of wte or
// writes zeros. Backward of wte: the deterministic scatter-add of sorted_row_sum.h over this
// rank's rows (ids other ranks hold contribute nothing).
#include <algorithm>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/sorted_row_sum.h"
#include "kernels/cuda/vocab_parallel_embedding.h"

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
  scatter_add_rows_by_id(idx, dout, dwte, n, C, vocab_start, Vl, stream);
}

#define ND_INSTANTIATE_VOCAB_PARALLEL_EMBEDDING(T)                                                                \
  template void vocab_parallel_embedding_forward<T>(const int32_t*, const T*, T*, int64_t, int64_t, int64_t,     \
                                                    int64_t, cudaStream_t);                                      \
  template void vocab_parallel_embedding_backward<T>(const int32_t*, const T*, T*, int64_t, int64_t, int64_t,    \
                                                     int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_VOCAB_PARALLEL_EMBEDDING);

}  // namespace nd::cuda
