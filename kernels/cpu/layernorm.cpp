// LayerNorm forward and backward. Rows are independent, so both passes split rows over threads;
// dw and db are summed per thread and then combined in thread order (deterministic for a given
// thread count).
#include "kernels/cpu/layernorm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace nd::cpu {

template <typename T>
void layernorm_forward(const T* x, const T* w, const T* b, T* out, StatType<T>* mean, StatType<T>* rstd, int64_t N,
                       int64_t C, float eps) {
#pragma omp parallel for schedule(static) if (N * C >= (1 << 15))
  for (int64_t i = 0; i < N; ++i) {
    const T* xr = x + i * C;
    T sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += xr[c];
    T m = sum / C;
    T var = 0;  // two passes: no cancellation when |mean| >> std
    for (int64_t c = 0; c < C; ++c) var += (xr[c] - m) * (xr[c] - m);
    T r = T(1) / std::sqrt(var / C + static_cast<T>(eps));
    T* o = out + i * C;
    for (int64_t c = 0; c < C; ++c) o[c] = (xr[c] - m) * r * w[c] + b[c];
    mean[i] = m;
    rstd[i] = r;
  }
}

// With xhat = (x - mean) rstd and g = dout * w (per row):
//   dx = rstd (g - mean(g) - xhat mean(g xhat)),  dw += dout xhat,  db += dout.
template <typename T>
void layernorm_backward(const T* dout, const T* x, const T* w, const StatType<T>* mean, const StatType<T>* rstd,
                        GradDest<T> dx, GradDest<T> dw, GradDest<T> db, int64_t N, int64_t C) {
  bool parallel = N * C >= (1 << 15);
  int threads = parallel ? omp_get_max_threads() : 1;
  bool want_params = dw.ptr != nullptr || db.ptr != nullptr;
  std::vector<T> partial(want_params ? static_cast<size_t>(threads) * 2 * C : 0, T(0));
#pragma omp parallel num_threads(threads) if (parallel)
  {
    T* pw = want_params ? partial.data() + static_cast<size_t>(omp_get_thread_num()) * 2 * C : nullptr;
    T* pb = want_params ? pw + C : nullptr;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; ++i) {
      const T* xr = x + i * C;
      const T* dr = dout + i * C;
      T m = mean[i], r = rstd[i];
      if (want_params) {
        for (int64_t c = 0; c < C; ++c) {
          pw[c] += dr[c] * (xr[c] - m) * r;
          pb[c] += dr[c];
        }
      }
      if (dx.ptr == nullptr) continue;
      T g_mean = 0, gx_mean = 0;
      for (int64_t c = 0; c < C; ++c) {
        T g = dr[c] * w[c];
        g_mean += g;
        gx_mean += g * (xr[c] - m) * r;
      }
      g_mean /= C;
      gx_mean /= C;
      T* dxr = dx.ptr + i * C;
      for (int64_t c = 0; c < C; ++c)
        dxr[c] = (dx.accumulate ? dxr[c] : T(0)) + r * (dr[c] * w[c] - g_mean - (xr[c] - m) * r * gx_mean);
    }
  }
  for (const GradDest<T>& d : {dw, db})
    if (d.ptr != nullptr && !d.accumulate) std::fill(d.ptr, d.ptr + C, T(0));
  for (int t = 0; t < threads && want_params; ++t) {
    const T* pw = partial.data() + static_cast<size_t>(t) * 2 * C;
    for (int64_t c = 0; c < C; ++c) {
      if (dw.ptr != nullptr) dw.ptr[c] += pw[c];
      if (db.ptr != nullptr) db.ptr[c] += pw[C + c];
    }
  }
}

#define ND_INSTANTIATE_LAYERNORM(T)                                                                               \
  template void layernorm_forward<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, float);          \
  template void layernorm_backward<T>(const T*, const T*, const T*, const T*, const T*, GradDest<T>, GradDest<T>, \
                                      GradDest<T>, int64_t, int64_t)
ND_CPU_INSTANTIATE(ND_INSTANTIATE_LAYERNORM);

}  // namespace nd::cpu
