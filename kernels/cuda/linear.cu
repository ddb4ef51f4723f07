// Linear forward/backward. Row-major (M, K) data is column-major (K, M), so each product below is
// written for cuBLASLt's column-major view: outᵀ = w · xᵀ, dxᵀ = wᵀ · doutᵀ, dwᵀ = xᵀ · dout.
// db is the deterministic column sum of column_sum.cuh. The GELU variants fall back to the plain
// product and the elementwise GELU kernels where cuBLASLt offers no epilogue.
#include <type_traits>

#include "kernels/cuda/column_sum.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cublaslt.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/linear.h"

namespace nd::cuda {

namespace {

void check_dims(const char* what, int64_t M, int64_t N, int64_t K) {
  ND_CHECK(M >= 0 && N > 0 && N < (int64_t{1} << 30) && K > 0,
           what << ": bad shape M=" << M << " N=" << N << " K=" << K);
}

// D (m, n) = op(A) · op(B) in cuBLASLt's column-major view (ldd = m); the caller sets beta or bias.
template <typename T>
GemmProblem gemm_problem(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* A, int64_t lda,
                         const T* B, int64_t ldb, T* D) {
  GemmProblem p;
  p.set_type(dtype_of<T>::value);
  p.trans_a = trans_a, p.trans_b = trans_b;
  p.m = m, p.n = n, p.k = k;
  p.A = A, p.lda = lda;
  p.B = B, p.ldb = ldb;
  p.D = D, p.ldd = m;
  return p;
}

// The GELU epilogues serve the 16-bit types (bf16, the benchmarked one, and f16). f32 keeps the
// separate kernels: it is the precise path, held to the CPU reference within 1e-5, and cuBLASLt does
// not say how exactly its epilogue computes tanh.
template <typename T>
constexpr bool kGeluEpilogue = std::is_same<T, bf16>::value || std::is_same<T, f16>::value;

// A gradient product: beta 0 overwrites D unread (the first contribution), 1 adds.
template <typename T>
void gemm_into(GradDest<T> D, bool trans_b, int64_t m, int64_t n, int64_t k, const T* A, int64_t lda, const T* B,
               int64_t ldb, cudaStream_t stream) {
  GemmProblem p = gemm_problem(false, trans_b, m, n, k, A, lda, B, ldb, D.ptr);
  p.beta = D.accumulate ? 1.0f : 0.0f;
  gemm(p, stream);
}

}  // namespace

template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* out, int64_t M, int64_t N, int64_t K, cudaStream_t stream) {
  check_dims("linear_forward", M, N, K);
  if (M == 0) return;
  ND_CHECK(x && w && out, "linear_forward: null pointer");
  GemmProblem p = gemm_problem(true, false, N, M, K, w, K, x, K, out);
  p.bias = b;
  gemm(p, stream);
}

template <typename T>
void linear_backward(const T* dout, const T* x, const T* w, GradDest<T> dx, GradDest<T> dw, GradDest<T> db, int64_t M,
                     int64_t N, int64_t K, cudaStream_t stream) {
  check_dims("linear_backward", M, N, K);
  ND_CHECK(M == 0 || (dout && x && w), "linear_backward: null input pointer");
  stream = stream_or_default(stream);
  if (M == 0) {
    // No rows: dw and db are zero, which a first contribution still has to write.
    if (dw.ptr && !dw.accumulate) CUDA_CHECK(cudaMemsetAsync(dw.ptr, 0, N * K * sizeof(T), stream));
    if (db.ptr && !db.accumulate) CUDA_CHECK(cudaMemsetAsync(db.ptr, 0, N * sizeof(T), stream));
    return;
  }
  if (dx.ptr) gemm_into(dx, false, K, M, N, w, K, dout, N, stream);
  if (dw.ptr) gemm_into(dw, true, K, N, M, x, K, dout, N, stream);
  if (db.ptr) row_sum_into(dout, db, M, N, stream);
}

template <typename T>
bool linear_gelu_forward(const T* x, const T* w, const T* b, T* out, T* pre, int64_t M, int64_t N, int64_t K,
                         cudaStream_t stream) {
  check_dims("linear_gelu_forward", M, N, K);
  if (M == 0) return true;
  ND_CHECK(x && w && out && pre, "linear_gelu_forward: null pointer");
  // outᵀ (N, M) = gelu(w · xᵀ + b) with preᵀ, the GELU input, beside it: both column-major with ld N.
  GemmProblem p = gemm_problem(true, false, N, M, K, w, K, x, K, out);
  p.bias = b;
  p.epilogue = GemmEpilogue::GeluAux;
  p.aux = pre;
  p.ldaux = N;
  if (kGeluEpilogue<T> && try_gemm(p, stream)) return true;
  linear_forward(x, w, b, pre, M, N, K, stream);
  gelu_forward(pre, out, M * N, stream);
  return false;
}

template <typename T>
void linear_dgelu_backward(const T* dout, const T* w, const T* pre, T* dpre, GradDest<T> db, int64_t M, int64_t N,
                           int64_t K, cudaStream_t stream) {
  check_dims("linear_dgelu_backward", M, N, K);
  stream = stream_or_default(stream);
  if (M == 0) {
    if (db.ptr && !db.accumulate) CUDA_CHECK(cudaMemsetAsync(db.ptr, 0, K * sizeof(T), stream));
    return;
  }
  ND_CHECK(dout && w && pre && dpre, "linear_dgelu_backward: null pointer");
  // dpreᵀ (K, M) = wᵀ · doutᵀ, column-major with ld K, then the GELU gradient in place.
  gemm(gemm_problem(false, false, K, M, N, w, K, dout, N, dpre), stream);
  gelu_backward(pre, dpre, GradDest<T>{dpre, false}, M * K, stream);  // in place: each element read, then written
  if (db.ptr) row_sum_into(static_cast<const T*>(dpre), db, M, K, stream);
}

#define ND_INSTANTIATE_LINEAR(T)                                                                            \
  template void linear_forward<T>(const T*, const T*, const T*, T*, int64_t, int64_t, int64_t, cudaStream_t); \
  template void linear_backward<T>(const T*, const T*, const T*, GradDest<T>, GradDest<T>, GradDest<T>, int64_t, \
                                   int64_t, int64_t, cudaStream_t);                                            \
  template bool linear_gelu_forward<T>(const T*, const T*, const T*, T*, T*, int64_t, int64_t, int64_t,          \
                                       cudaStream_t);                                                            \
  template void linear_dgelu_backward<T>(const T*, const T*, const T*, T*, GradDest<T>, int64_t, int64_t, int64_t, \
                                         cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_LINEAR);

}  // namespace nd::cuda
