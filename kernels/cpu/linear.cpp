// Linear forward/backward: three GEMMs plus a bias broadcast and a column sum.
#include "kernels/cpu/linear.h"

#include <algorithm>

#include "kernels/cpu/matmul.h"

namespace nd::cpu {

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
  if (db.ptr != nullptr) {
    if (!db.accumulate) std::fill(db.ptr, db.ptr + N, T(0));
    // Threads own disjoint column ranges and sum rows in order: deterministic.
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
}

template void linear_forward<float>(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t);
template void linear_forward<double>(const double*, const double*, const double*, double*, int64_t, int64_t, int64_t);
template void linear_backward<float>(const float*, const float*, const float*, GradDest<float>, GradDest<float>,
                                     GradDest<float>, int64_t, int64_t, int64_t);
template void linear_backward<double>(const double*, const double*, const double*, GradDest<double>, GradDest<double>,
                                      GradDest<double>, int64_t, int64_t, int64_t);

}  // namespace nd::cpu
