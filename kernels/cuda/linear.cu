// Linear forward/backward. Row-major (M, K) data is column-major (K, M), so each product below is
// written for cuBLASLt's column-major view: outᵀ = w · xᵀ, dxᵀ = wᵀ · doutᵀ, dwᵀ = xᵀ · dout.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cublaslt.h"
#include "kernels/cuda/linear.h"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

constexpr int kColumnsPerBlock = 32;
constexpr int kRowThreads = 8;

// partial[slab][c] = sum of dout[r, c] over the slab's rows, in a fixed order.
template <typename T>
__global__ void column_partial_kernel(const T* dout, float* partial, int64_t M, int64_t N, int64_t rows_per_slab) {
  __shared__ float sums[kRowThreads][kColumnsPerBlock];
  int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnsPerBlock + threadIdx.x;
  int64_t begin = blockIdx.y * rows_per_slab, end = min(M, begin + rows_per_slab);
  float acc = 0.0f;
  if (c < N)
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowThreads) acc += to_f32(dout[r * N + c]);
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < N) {
    float total = 0.0f;
    for (int k = 0; k < kRowThreads; ++k) total += sums[k][threadIdx.x];
    partial[blockIdx.y * N + c] = total;
  }
}

template <typename T>
__global__ void column_finish_kernel(const float* partial, T* db, int slabs, int64_t N) {
  int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= N) return;
  float total = 0.0f;
  for (int s = 0; s < slabs; ++s) total += partial[s * N + c];
  db[c] = from_f32<T>(to_f32(db[c]) + total);
}

void check_dims(const char* what, int64_t M, int64_t N, int64_t K) {
  ND_CHECK(M >= 0 && N > 0 && K > 0, what << ": bad shape M=" << M << " N=" << N << " K=" << K);
}

}  // namespace

template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* out, int64_t M, int64_t N, int64_t K, cudaStream_t stream) {
  check_dims("linear_forward", M, N, K);
  if (M == 0) return;
  ND_CHECK(x && w && out, "linear_forward: null pointer");
  GemmProblem p;
  p.dtype = dtype_of<T>::value;
  p.trans_a = true;
  p.m = N, p.n = M, p.k = K;
  p.A = w, p.lda = K;
  p.B = x, p.ldb = K;
  p.D = out, p.ldd = N;
  p.bias = b;
  gemm(p, stream);
}

template <typename T>
void column_sum_accumulate(const T* dout, T* db, int64_t M, int64_t N, cudaStream_t stream) {
  ND_CHECK(M >= 0 && N > 0, "column_sum_accumulate: bad shape M=" << M << " N=" << N);
  if (M == 0) return;
  ND_CHECK(dout && db, "column_sum_accumulate: null pointer");
  stream = stream_or_default(stream);
  int64_t slabs = std::min<int64_t>(std::min<int64_t>(ceil_div(M, 256), 128), M);
  int64_t rows_per_slab = ceil_div(M, slabs);
  slabs = ceil_div(M, rows_per_slab);
  int device = current_cuda_device();
  float* partial = static_cast<float*>(device_alloc(slabs * N * sizeof(float), device));
  dim3 grid(static_cast<unsigned>(ceil_div(N, kColumnsPerBlock)), static_cast<unsigned>(slabs));
  column_partial_kernel<T><<<grid, dim3(kColumnsPerBlock, kRowThreads), 0, stream>>>(dout, partial, M, N,
                                                                                     rows_per_slab);
  CUDA_CHECK(cudaGetLastError());
  column_finish_kernel<T><<<static_cast<unsigned>(ceil_div(N, 256)), 256, 0, stream>>>(partial, db,
                                                                                      static_cast<int>(slabs), N);
  CUDA_CHECK(cudaGetLastError());
  device_free(partial, device);  // reused only by later work on this stream
}

template <typename T>
void linear_backward(const T* dout, const T* x, const T* w, T* dx, T* dw, T* db, int64_t M, int64_t N, int64_t K,
                     cudaStream_t stream) {
  check_dims("linear_backward", M, N, K);
  if (M == 0) return;
  ND_CHECK(dout && x && w, "linear_backward: null input pointer");
  DType dtype = dtype_of<T>::value;
  if (dx) {
    GemmProblem p;
    p.dtype = dtype;
    p.m = K, p.n = M, p.k = N;
    p.A = w, p.lda = K;
    p.B = dout, p.ldb = N;
    p.D = dx, p.ldd = K;
    p.beta = 1.0f;
    gemm(p, stream);
  }
  if (dw) {
    GemmProblem p;
    p.dtype = dtype;
    p.trans_b = true;
    p.m = K, p.n = N, p.k = M;
    p.A = x, p.lda = K;
    p.B = dout, p.ldb = N;
    p.D = dw, p.ldd = K;
    p.beta = 1.0f;
    gemm(p, stream);
  }
  if (db) column_sum_accumulate(dout, db, M, N, stream);
}

#define ND_INSTANTIATE_LINEAR(T)                                                                            \
  template void linear_forward<T>(const T*, const T*, const T*, T*, int64_t, int64_t, int64_t, cudaStream_t); \
  template void linear_backward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, int64_t,      \
                                   cudaStream_t);                                                           \
  template void column_sum_accumulate<T>(const T*, T*, int64_t, int64_t, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_LINEAR);

}  // namespace nd::cuda
