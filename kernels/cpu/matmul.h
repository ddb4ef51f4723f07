// The one CPU matrix multiply every op uses (linear, attention, ...): a thin row-major wrapper
// over CBLAS sgemm/dgemm. OpenBLAS picks its kernel for the CPU at run time, so the build stays
// portable, and it is OpenMP-parallel (single-threaded when called inside a parallel region).
#pragma once
#include <cstdint>

namespace nd::cpu {

// C (M, N) = op(A) · op(B) + beta · C, all row-major and contiguous.
// op(A) is (M, K): A is (M, K), or (K, M) read transposed when trans_a.
// op(B) is (K, N): B is (K, N), or (N, K) read transposed when trans_b.
// beta == 0 overwrites C without reading it (C may hold garbage); beta == 1 accumulates.
template <typename T>
void matmul(const T* A, const T* B, T* C, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, T beta);

}  // namespace nd::cpu
