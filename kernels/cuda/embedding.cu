// Embedding kernels. Backward of wte: the deterministic scatter-add of sorted_row_sum.h (positions
// sorted by id, each id's rows summed in position order, no atomics).
// An id outside [0, V) is recorded (token_errors.h), embeds as wpe alone and gets no gradient.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/sorted_row_sum.h"
#include "kernels/cuda/token_errors.cuh"

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
  if (dwpe.ptr && P > 0) {
    int64_t rows = dwpe.accumulate ? S : P;
    position_grad_kernel<T><<<static_cast<unsigned>(std::max<int64_t>(1, ceil_div(rows * C, kThreads))), kThreads, 0,
                              stream>>>(dout, dwpe, B, S, P, c);
    CUDA_CHECK(cudaGetLastError());
  }
  if (!dwte.ptr) return;
  // A scatter leaves the rows of absent ids alone: a first contribution clears them first.
  if (!dwte.accumulate) CUDA_CHECK(cudaMemsetAsync(dwte.ptr, 0, V * C * sizeof(T), stream));
  scatter_add_rows_by_id(idx, dout, dwte.ptr, n, C, /*first_id=*/0, V, stream);
}

#define ND_INSTANTIATE_EMBEDDING(T)                                                                           \
  template void embedding_forward<T>(const int32_t*, const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t, \
                                     cudaStream_t);                                                              \
  template void embedding_backward<T>(const int32_t*, const T*, GradDest<T>, GradDest<T>, int64_t, int64_t,      \
                                      int64_t, int64_t, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_EMBEDDING);

}  // namespace nd::cuda
