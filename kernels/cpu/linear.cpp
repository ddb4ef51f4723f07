// Linear forward/backward: three GEMMs plus a bias broadcast and a column sum; the GELU variants
// add the GELU kernels after the forward product and before the input gradient's column sum.
#include "kernels/cpu/linear.h"

#include <algorithm>

#include "kernels/cpu/gelu.h"
#include "kernels/cpu/matmul.h"

namespace nd::cpu {

namespace {

// db (N) (+)= the sum over rows of dout (M, N). Threads own disjoint column ranges and sum rows in
// order: deterministic.
template <typename T>
void row_sum_into(const T* dout, GradDest<T> db, int64_t M, int64_t N) {
  if (!db.accumulate) std::fill(db.ptr, db.ptr + N, T(0));
  constexpr int64_t kChunk = 64;
#pragma omp parallel for schedule(static) if (M * N >= (1 << 16))
  for (int64_t j0 = 0; j0 < N; j0 += kChunk) {
    int64_t j1 = std::min(N, j0 + kChunk);
    for (int64_t i = 0; i < M; ++i) {
      const T* row = dout + i * N;
      for (int64_t j = j0; j < j1; ++j) db.ptr[j] += row[j];
    }
  }
}

}  // namespace

template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* out, int64_t M, int64_t N, int64_t K) {
  if (b == nullptr) {
    matmul<T>(x, w, out, M, N, K, false, true, T(0));
    return;
  }
  // Start every row from the bias, then accumulate the product into it (beta = 1).
#pragma omp parallel for schedule(static) if (M * N >= (1 << 16))
  for (int64_t i = 0; i < M; ++i) std::copy(b, b + N, out + i * N);
  matmul<T>(x, w, out, M, N, K, false, true, T(1));
}

template <typename T>
void linear_backward(const T* dout, const T* x, const T* w, GradDest<T> dx, GradDest<T> dw, GradDest<T> db, int64_t M,
                     int64_t N, int64_t K) {
  // beta 0 overwrites without reading (the first contribution), 1 accumulates.
  if (dx.ptr != nullptr) matmul<T>(dout, w, dx.ptr, M, K, N, false, false, T(dx.accumulate));  // (M,N)·(N,K)
  if (dw.ptr != nullptr) matmul<T>(dout, x, dw.ptr, N, K, M, true, false, T(dw.accumulate));   // (N,M)·(M,K)
  if (db.ptr != nullptr) row_sum_into(dout, db, M, N);
}

template <typename T>
bool linear_gelu_forward(const T* x, const T* w, const T* b, T* out, T* pre, int64_t M, int64_t N, int64_t K) {
  linear_forward(x, w, b, pre, M, N, K);
  gelu_forward(pre, out, M * N);
  return false;
}

template <typename T>
void linear_dgelu_backward(const T* dout, const T* w, const T* pre, T* dpre, GradDest<T> db, int64_t M, int64_t N,
                           int64_t K) {
  matmul<T>(dout, w, dpre, M, K, N, false, false, T(0));       // (M,N)·(N,K)
  gelu_backward(pre, dpre, GradDest<T>{dpre, false}, M * K);  // in place: each element read, then written
  if (db.ptr != nullptr) row_sum_into(static_cast<const T*>(dpre), db, M, K);
}

#define ND_INSTANTIATE_LINEAR(T)                                                                                   \
  template void linear_forward<T>(const T*, const T*, const T*, T*, int64_t, int64_t, int64_t);                    \
  template void linear_backward<T>(const T*, const T*, const T*, GradDest<T>, GradDest<T>, GradDest<T>, int64_t,   \
                                   int64_t, int64_t);                                                              \
  template bool linear_gelu_forward<T>(const T*, const T*, const T*, T*, T*, int64_t, int64_t, int64_t);           \
  template void linear_dgelu_backward<T>(const T*, const T*, const T*, T*, GradDest<T>, int64_t, int64_t, int64_t)
ND_CPU_INSTANTIATE(ND_INSTANTIATE_LINEAR);

}  // namespace nd::cpu
