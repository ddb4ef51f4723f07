// Row-vector broadcast add: a grid-stride loop over 16-byte packs when the rows allow it (N a
// multiple of the pack and aligned pointers), else over elements. The backward is the linear
// layer's deterministic column sum.
#include "kernels/cuda/bias_add.h"
#include "kernels/cuda/column_sum.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/linear.h"

#include <algorithm>

namespace nd::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void bias_add_kernel(const T* x, const T* b, T* out, int64_t M, int64_t N) {
  const int64_t total = M * N;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = from_f32<T>(to_f32(x[i]) + to_f32(b[i % N]));
}

// Pack index i covers elements [i * kPack, (i + 1) * kPack) of one row (N % kPack == 0).
template <typename T>
__global__ void bias_add_packed_kernel(const T* x, const T* b, T* out, int64_t M, int64_t N) {
  constexpr int kPack = Pack16<T>::kSize;
  const int64_t packs = M * N / kPack;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t e = i * kPack;
    Pack16<T> xv = load16(x + e), bv = load16(b + e % N), o;
#pragma unroll
    for (int k = 0; k < kPack; ++k) o.v[k] = from_f32<T>(to_f32(xv.v[k]) + to_f32(bv.v[k]));
    store16(out + e, o);
  }
}

unsigned grid_for(int64_t work) {
  return static_cast<unsigned>(std::min<int64_t>(ceil_div(work, kThreads), 65535 * 4));
}

}  // namespace

template <typename T>
void bias_add_forward(const T* x, const T* b, T* out, int64_t M, int64_t N, cudaStream_t stream) {
  ND_CHECK(M >= 0 && N >= 0, "bias_add_forward: bad shape M=" << M << " N=" << N);
  if (M * N == 0) return;
  ND_CHECK(x && b && out, "bias_add_forward: null pointer");
  stream = stream_or_default(stream);
  constexpr int kPack = Pack16<T>::kSize;
  if (N % kPack == 0 && aligned16(x) && aligned16(b) && aligned16(out)) {
    bias_add_packed_kernel<T><<<grid_for(M * N / kPack), kThreads, 0, stream>>>(x, b, out, M, N);
  } else {
    bias_add_kernel<T><<<grid_for(M * N), kThreads, 0, stream>>>(x, b, out, M, N);
  }
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void bias_add_backward(const T* dout, T* db, int64_t M, int64_t N, cudaStream_t stream) {
  ND_CHECK(M >= 0 && N >= 0, "bias_add_backward: bad shape M=" << M << " N=" << N);
  if (db == nullptr || M * N == 0) return;
  row_sum_into(dout, GradDest<T>{db, true}, M, N, stream_or_default(stream));
}

#define ND_INSTANTIATE_BIAS_ADD(T)                                                               \
  template void bias_add_forward<T>(const T*, const T*, T*, int64_t, int64_t, cudaStream_t); \
  template void bias_add_backward<T>(const T*, T*, int64_t, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_BIAS_ADD);

}  // namespace nd::cuda
