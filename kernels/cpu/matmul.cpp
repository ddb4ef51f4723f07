// matmul on CBLAS: row-major layout, the transposes as CBLAS flags, leading dimensions from the
// stored (untransposed) shapes. The BLAS is found by CMake (pkg-config openblas).
#include "kernels/cpu/matmul.h"

#include <cblas.h>

#include <climits>

#include "tensor/error.h"

namespace nd::cpu {

namespace {

// CBLAS takes 32-bit int dimensions (LP64 OpenBLAS).
int blas_dim(int64_t n, const char* what) {
  ND_CHECK(n >= 0 && n <= INT_MAX, "matmul: " << what << " = " << n << " is outside [0, " << INT_MAX << "]");
  return static_cast<int>(n);
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, const float* A, int lda, const float* B,
          int ldb, float beta, float* C) {
  cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, N);
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K, const double* A, int lda, const double* B,
          int ldb, double beta, double* C) {
  cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, N);
}

}  // namespace

template <typename T>
void matmul(const T* A, const T* B, T* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, T beta) {
  const int m = blas_dim(M, "M"), n = blas_dim(N, "N"), k = blas_dim(K, "K");
  if (m == 0 || n == 0) return;
  if (k == 0) {  // empty sum: C = beta*C (BLAS would reject the zero leading dimension of A)
    for (int64_t i = 0; i < M * N; ++i) C[i] = beta == T(0) ? T(0) : beta * C[i];
    return;
  }
  // Row-major leading dimensions are the stored row lengths: A is (M, K) or (K, M), B (K, N) or (N, K).
  const int lda = trans_a ? m : k, ldb = trans_b ? k : n;
  gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, A, lda, B, ldb, beta, C);
}

template void matmul<float>(const float*, const float*, float*, int64_t, int64_t, int64_t, bool, bool, float);
template void matmul<double>(const double*, const double*, double*, int64_t, int64_t, int64_t, bool, bool, double);

}  // namespace nd::cpu
