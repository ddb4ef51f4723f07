// Row-vector broadcast add and its column-sum backward, parallel over rows (forward) and over
// column ranges (backward: each db element is summed by one thread, in row order).
#include "kernels/cpu/bias_add.h"

#include <algorithm>

#include "tensor/error.h"

namespace nd::cpu {

template <typename T>
void bias_add_forward(const T* x, const T* b, T* out, int64_t M, int64_t N) {
  ND_CHECK(M >= 0 && N >= 0, "bias_add_forward: bad shape M=" << M << " N=" << N);
#pragma omp parallel for schedule(static) if (M * N >= (1 << 16))
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) out[m * N + n] = x[m * N + n] + b[n];
}

template <typename T>
void bias_add_backward(const T* dout, T* db, int64_t M, int64_t N) {
  ND_CHECK(M >= 0 && N >= 0, "bias_add_backward: bad shape M=" << M << " N=" << N);
  if (db == nullptr) return;
  constexpr int64_t kChunk = 64;
#pragma omp parallel for schedule(static) if (M * N >= (1 << 16))
  for (int64_t n0 = 0; n0 < N; n0 += kChunk) {
    const int64_t n1 = std::min(N, n0 + kChunk);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = n0; n < n1; ++n) db[n] += dout[m * N + n];
  }
}

template void bias_add_forward<float>(const float*, const float*, float*, int64_t, int64_t);
template void bias_add_forward<double>(const double*, const double*, double*, int64_t, int64_t);
template void bias_add_backward<float>(const float*, float*, int64_t, int64_t);
template void bias_add_backward<double>(const double*, double*, int64_t, int64_t);

}  // namespace nd::cpu
